"""The sender's nstat counters, on both engines: each is bumped where the kernel bumps it
(tcpsim/core/mib.py), so every counter here has a scenario where it must count and one where
it must stay 0 -- removing its increment (or bumping it elsewhere) fails a test.

The socket under test is a passive-open sender (veth), driven with scripted ACKs from the
peer; counters are read from snapshot()["mib"], which both engines fill."""

from __future__ import annotations

import pytest

from tcpsim.catalog import get_profile
from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.segment import ACK, SYN, Segment
from tcpsim.engines import make_socket, native_available

MSS = 1448
ENGINES = ["python", pytest.param("native", marks=pytest.mark.skipif(
    not native_available(), reason="tcpsim._native is not built"))]


class Sender:
    """An established passive-open sender of `engine`, and the peer's side of the talk."""

    def __init__(self, engine: str, sack: bool = True, cc: str = "reno"):
        prof = get_profile("linux-6.18")
        sysctls = prof.default_sysctls().with_overrides(
            {"net.ipv4.tcp_congestion_control": cc})
        self.sk = make_socket(engine, prof, sysctls, "veth", name="snd", nodelay=True)
        self.sk.listen()
        self.sk.on_segment(0, Segment(0, 0, SYN, 0, 65535, mss=1460, wscale=7, sack_ok=sack,
                                      tsval=1, tsecr=0))
        self.sk.take_outbox()
        self.sk.on_segment(NS_PER_MS, Segment(1, 0, ACK, 1, 502, tsval=2, tsecr=1))
        self.peer_seq = 1

    def mib(self, name: str) -> int:
        return self.sk.snapshot()["mib"][name]

    def snd(self, name: str) -> int:
        return self.sk.snapshot()["snd"][name]

    def send(self, t_ms: float, nseg: int) -> list[Segment]:
        self.sk.write(int(t_ms * NS_PER_MS), nseg * MSS)
        return self.sk.take_outbox()

    def ack(self, t_ms: float, ackno: int, *sacks: tuple[int, int], win: int = 502,
            data: int = 0) -> list[Segment]:
        """An ACK (SACK blocks as raw sequence pairs), carrying `data` bytes if asked."""
        seg = Segment(self.peer_seq, data, ACK, ackno, win, tsval=int(t_ms) + 1, tsecr=1,
                      sacks=tuple(sacks))
        self.peer_seq += data
        self.sk.on_segment(int(t_ms * NS_PER_MS), seg)
        return self.sk.take_outbox()

    def timer(self, deadline: str) -> list[Segment]:
        """Run the timer whose deadline is `deadline` (a SndState field)."""
        when = self.snd(deadline)
        assert when, f"{deadline} is not armed"
        self.sk.on_timer(when)
        return self.sk.take_outbox()

    def rto(self) -> list[Segment]:
        """Let the RTO fire: a loss probe armed before it goes first (it rearms the RTO)."""
        if self.snd("tlp_deadline"):
            self.timer("tlp_deadline")
        return self.timer("rto_deadline")


def seq(i: int) -> int:
    """The first sequence number of data segment i (data starts at 1)."""
    return 1 + i * MSS


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    return request.param


# -- Tcp MIB: InSegs, OutSegs ------------------------------------------------------------------

def test_in_segs_counts_every_segment_the_socket_is_handed(engine):
    s = Sender(engine)
    assert s.mib("TCPInSegs") == 2                       # the SYN and the handshake ACK
    s.ack(2, 1, win=0)                                   # a window update, nothing acked
    s.ack(3, 1, win=0)
    assert s.mib("TCPInSegs") == 4


def test_out_segs_counts_new_segments_not_retransmissions(engine):
    s = Sender(engine, sack=False)                       # no loss probe before the RTO
    assert s.mib("TCPOutSegs") == 1                      # the SYN-ACK
    s.send(2, 3)
    assert s.mib("TCPOutSegs") == 4
    out = s.rto()                                        # the head goes out again
    assert [x.seq for x in out] == [1] and s.mib("TCPRetransSegs") == 1
    assert s.mib("TCPOutSegs") == 4                      # __tcp_transmit_skb(): not counted


# -- data sent and delivered -------------------------------------------------------------------

def test_orig_data_sent_counts_new_data_only(engine):
    s = Sender(engine)
    assert s.mib("TCPOrigDataSent") == 0
    s.send(2, 4)
    assert s.mib("TCPOrigDataSent") == 4
    s.rto()                                              # a loss probe, then the RTO
    assert s.mib("TCPOrigDataSent") == 4


def test_delivered_counts_each_segment_once_sacked_or_acked(engine):
    s = Sender(engine)
    s.send(2, 6)
    s.ack(5, 1)                                          # a duplicate: nothing delivered
    assert s.mib("TCPDelivered") == 0
    s.ack(5.1, seq(2))
    assert s.mib("TCPDelivered") == 2
    s.ack(5.2, seq(2), (seq(3), seq(5)))                 # two SACKed
    assert s.mib("TCPDelivered") == 4
    s.ack(5.3, seq(6))                                   # the SACKed ones are not counted again
    assert s.mib("TCPDelivered") == 6


# -- tcp_ack(): fast path and slow path --------------------------------------------------------

def test_hp_acks_on_the_fast_path_pure_acks_on_the_slow_path(engine):
    s = Sender(engine)
    s.ack(1.5, 1, data=100)           # in-order data turns header prediction on (the fast path)
    assert s.mib("TCPHPAcks") == 0 and s.mib("TCPPureAcks") == 1    # the handshake ACK
    s.send(2, 2)
    s.ack(4, seq(1))                  # same window, advances snd_una: the fast path
    assert s.mib("TCPHPAcks") == 1 and s.mib("TCPPureAcks") == 1
    s.ack(5, seq(2), win=600)         # a new window: the slow path
    assert s.mib("TCPHPAcks") == 1 and s.mib("TCPPureAcks") == 2
    s.ack(6, seq(2), win=600, data=100)                  # data: neither
    assert s.mib("TCPHPAcks") == 1 and s.mib("TCPPureAcks") == 2


# -- recovery ----------------------------------------------------------------------------------

def test_sack_recovery_and_fast_retransmits(engine):
    s = Sender(engine)
    s.send(2, 10)
    out = s.ack(5, 1, (seq(1), seq(4)))                  # three SACKed past the hole
    assert [x.seq for x in out if x.len][:1] == [1]
    assert s.mib("TCPSackRecovery") == 1 and s.mib("TCPFastRetrans") == 1
    assert s.mib("TCPRenoRecovery") == 0 and s.mib("TCPSlowStartRetrans") == 0


def test_reno_recovery_and_the_partial_ack_retransmission(engine):
    s = Sender(engine, sack=False)
    s.send(2, 10)
    for i in range(3):
        s.ack(5 + i / 10, 1)
    assert s.mib("TCPRenoRecovery") == 1 and s.mib("TCPFastRetrans") == 1
    assert s.mib("TCPSackRecovery") == 0
    out = s.ack(6, seq(8))            # NewReno partial ACK: the next hole goes out again,
    assert [x.seq for x in out if x.len][:1] == [seq(8)]  # from tcp_xmit_retransmit_queue()
    assert s.mib("TCPFastRetrans") == 2 and s.mib("TCPSlowStartRetrans") == 0


@pytest.mark.parametrize("sack", [True, False])
def test_slow_start_retrans_after_an_rto(engine, sack):
    s = Sender(engine, sack=sack)
    s.send(2, 10)
    s.rto()                                              # Loss; the timer resends the head
    assert s.mib("TCPTimeouts") == 1 and s.mib("TCPSlowStartRetrans") == 0
    out = s.ack(700, seq(1))                             # cwnd grows: the next lost ones go
    assert [x.seq for x in out if x.len][:2] == [seq(1), seq(2)]
    assert s.mib("TCPSlowStartRetrans") == 2 and s.mib("TCPFastRetrans") == 0


def test_timeouts_not_counted_by_a_zero_window_rto(engine):
    s = Sender(engine, sack=False)
    s.send(2, 2)
    s.ack(3, 1, win=0)                # the window shrinks to zero with data in flight
    s.rto()
    assert s.mib("TCPRetransSegs") == 1 and s.mib("TCPTimeouts") == 0
    s2 = Sender(engine, sack=False)
    s2.send(2, 2)
    s2.rto()
    assert s2.mib("TCPRetransSegs") == 1 and s2.mib("TCPTimeouts") == 1


@pytest.mark.parametrize("sack", [True, False])
def test_lost_retransmit_when_a_retransmission_is_marked_lost_again(engine, sack):
    s = Sender(engine, sack=sack)
    s.send(2, 4)
    s.rto()                                              # the head: lost, resent
    assert s.mib("TCPLostRetransmit") == 0
    s.rto()                                              # lost again
    assert s.mib("TCPLostRetransmit") == 1


def test_loss_probe(engine):
    s = Sender(engine)
    s.send(2, 4)
    s.ack(3, seq(1))
    assert s.mib("TCPLossProbes") == 0
    out = s.timer("tlp_deadline")
    assert [x.seq for x in out] == [seq(3)] and s.mib("TCPLossProbes") == 1


# -- what the SACK blocks say ------------------------------------------------------------------

def test_dsack_recv_and_ofo_recv(engine):
    s = Sender(engine)
    s.send(2, 6)
    s.ack(5, seq(2))
    s.ack(5.1, seq(2), (seq(3), seq(4)))                 # a plain SACK
    assert s.mib("TCPDSACKRecv") == 0 and s.mib("TCPDSACKOfoRecv") == 0
    s.ack(5.2, seq(2), (seq(0), seq(1)), (seq(3), seq(4)))   # first block below the ACK
    assert s.mib("TCPDSACKRecv") == 1 and s.mib("TCPDSACKOfoRecv") == 0
    s.ack(5.3, seq(2), (seq(3), seq(4)), (seq(3), seq(5)))   # within the second block
    assert s.mib("TCPDSACKRecv") == 1 and s.mib("TCPDSACKOfoRecv") == 1


def test_sack_reorder_once_per_ack(engine):
    s = Sender(engine)
    s.send(2, 8)
    s.ack(5, 1, (seq(1), seq(2)))
    s.ack(5.1, 1, (seq(1), seq(3)))                      # in order: no reordering
    assert s.mib("TCPSACKReorder") == 0
    s2 = Sender(engine)
    s2.send(2, 8)
    s2.ack(5, 1, (seq(5), seq(6)))
    s2.ack(5.1, 1, (seq(2), seq(4)), (seq(5), seq(6)))   # two below the highest SACKed
    assert s2.mib("TCPSACKReorder") == 1
