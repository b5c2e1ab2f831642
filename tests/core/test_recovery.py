"""The sender's SACK loss recovery (tcpsim/core/recovery.py): the scoreboard, RACK with its
dupthresh fallback, PRR, an RTO that keeps SACKed segments, D-SACK recognition; NewReno
stays the path of a connection without SACK."""

from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.recovery import TCPCB_SACKED_ACKED
from tcpsim.core.segment import ACK, Segment

from tests.core.test_sender import sender

MSS = 1448


def seg_start(i: int) -> int:
    """Sequence number of the i-th data segment (the ISN is 0, data starts at 1)."""
    return 1 + i * MSS


def sack_ack(sk, t_ms, ackno, *blocks):
    """An ACK from the peer carrying SACK blocks given as (first, last + 1) segment indexes
    or, for a D-SACK, raw sequence pairs marked with a leading 'seq'."""
    sacks = tuple(b[1:] if b[0] == "seq" else (seg_start(b[0]), seg_start(b[1]))
                  for b in blocks)
    sk.on_segment(int(t_ms * NS_PER_MS), Segment(1, 0, ACK, ackno, 502, tsval=int(t_ms) + 1,
                                                 tsecr=1, sacks=sacks))
    return sk.take_outbox()


def flight(cc="reno", n=20, sack=True):
    """A sender with n full segments in flight (cwnd n), sent at 2 ms."""
    sk = sender(cc=cc, sack=sack)
    sk.snd.snd_cwnd = n
    sk.write(2 * NS_PER_MS, n * MSS)
    assert len(sk.take_outbox()) == n
    return sk


def test_sacktag_takes_sacked_segments_out_of_the_flight():
    # tcp_sacktag_write_queue(): segments 1..2 SACKed; packets_in_flight() leaves them out
    sk = flight(n=10)
    sack_ack(sk, 5, 1, (1, 3))
    flags = [e[6] & TCPCB_SACKED_ACKED for e in sk.snd.rtx_queue]
    assert flags == [0, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    assert sk.snd.sacked_out == 2 and sk.packets_in_flight() == 8
    assert sk.snd.highest_sack == seg_start(3)
    # the cumulative ACK of a SACKed segment takes it out of sacked_out
    sack_ack(sk, 6, seg_start(2), (2, 3))
    assert sk.snd.sacked_out == 1 and len(sk.snd.rtx_queue) == 8


def test_rack_waits_out_the_reordering_window_until_three_are_sacked():
    # tcp_rack_reo_wnd(): one SACKed segment past a hole sent at the same time leaves a
    # quarter of min_rtt to wait (reordering); three SACKed (tp->reordering) make the
    # window zero: the hole is lost at once and Recovery starts with its fast retransmit
    sk = flight(n=10)
    sack_ack(sk, 5, 1, (1, 2))
    assert sk.snd.lost_out == 0 and not sk.snd.in_recovery
    assert sk.rack_reo_wnd() == sk.snd.min_rtt_us >> 2 > 0
    out = sack_ack(sk, 5.1, 1, (1, 4))
    assert sk.snd.in_recovery and not sk.snd.in_loss
    assert [s.seq for s in out if s.len] == [1]                  # the fast retransmit
    assert sk.mib.TCPFastRetrans == 1 and sk.snd.rtx_queue[0][3] == 1


def test_the_reordering_timer_marks_the_hole_once_the_window_has_passed():
    # tcp_rack_mark_lost() arms ICSK_TIME_REO_TIMEOUT for the wait left (taking the xmit
    # timer from the loss probe); tcp_rack_reo_timeout() then marks the hole lost and
    # enters Recovery with its fast retransmit, with no further ACK
    sk = flight(n=10)
    sack_ack(sk, 5, 1, (1, 2))
    d = sk.snd.reo_deadline
    assert d > 5 * NS_PER_MS and not sk.snd.tlp_deadline and not sk.snd.in_recovery
    sk.on_timer(d)
    assert sk.snd.in_recovery and sk.snd.rtx_queue[0][3] == 1
    assert [s.seq for s in sk.take_outbox() if s.len] == [1]
    assert sk.mib.TCPFastRetrans == 1


def test_rack_marks_a_lost_retransmission_lost_again():
    # RACK works on send times, so a retransmission delivered behind later data is found
    # lost by a SACK of a segment sent after it, once its RACK RTT has passed
    sk = flight(n=10)
    sack_ack(sk, 5, 1, (1, 4))                                   # head retransmitted at 5 ms
    assert sk.snd.rtx_queue[0][3] == 1
    sk.write(6 * NS_PER_MS, MSS)                                 # new data sent at 6 ms
    sk.take_outbox()
    new = len(sk.snd.rtx_queue) - 1
    out = sack_ack(sk, 30, 1, (1, new + 1))                      # it arrived; the head did not
    assert [s.seq for s in out if s.len][:1] == [1]
    assert sk.snd.rtx_queue[0][3] == 1 and sk.snd.rtx_queue[0][2] == 30 * NS_PER_MS


def test_prr_brings_cwnd_down_in_proportion_to_what_is_delivered():
    # tcp_cwnd_reduction(): Reno, cwnd 20 -> ssthresh 10. Three SACKed past the lost head:
    # 16 in flight, sndcnt = ceil(10 * 3 / 20) = 2 -> cwnd 18 and the head goes out; one
    # more SACKed: ceil(10 * 4 / 20) - 1 sent = 1 -> cwnd = 16 in flight + 1. The NewReno
    # model cut cwnd to ssthresh at once, and then could send nothing for half an RTT.
    sk = flight(cc="reno", n=20)
    sk.write(3 * NS_PER_MS, 10 * MSS)                            # more data waiting
    out = sack_ack(sk, 5, 1, (1, 4))
    snd = sk.snd
    assert snd.snd_ssthresh == 10 and snd.prior_cwnd == 20 and snd.snd_cwnd == 18
    assert [s.seq for s in out if s.len] == [1, seg_start(20)]   # the head, one new segment
    assert snd.prr_out == 2 and snd.prr_delivered == 3
    out = sack_ack(sk, 5.1, 1, (1, 5))
    assert snd.prr_delivered == 4 and snd.snd_cwnd == sk.packets_in_flight() + 0
    assert [s.seq for s in out if s.len] == []                   # ceil(40 / 20) - 2 = 0
    out = sack_ack(sk, 5.2, 1, (1, 7))
    assert [s.seq for s in out if s.len] == [seg_start(21)]      # ceil(60 / 20) - 2 = 1
    # the head's retransmission arrives: everything up to high_seq acked ends Recovery
    hs = snd.high_seq
    sack_ack(sk, 30, hs)
    assert not snd.in_recovery and snd.snd_cwnd >= snd.snd_ssthresh == 10


def test_an_rto_keeps_sacked_segments_and_never_resends_them():
    # tcp_timeout_mark_lost(): two segments SACKed (too few for RACK to mark the hole), the
    # RTO fires: the eight others are lost, the SACKed two are not; slow start then resends
    # only the holes. The NewReno path marked everything lost and resent all ten.
    sk = flight(cc="cubic", n=10)
    sack_ack(sk, 5, 1, (1, 3))
    d = sk.next_deadline()
    while not sk.mib.TCPTimeouts:
        sk.on_timer(d)
        d = sk.next_deadline()
    snd = sk.snd
    assert snd.in_loss and snd.sacked_out == 2
    assert [e[4] for e in snd.rtx_queue] == [1, 0, 0, 1, 1, 1, 1, 1, 1, 1]
    resent = {s.seq for s in sk.take_outbox() if s.len}
    t = sk.now / NS_PER_MS
    for _ in range(12):
        t += 1
        una = snd.snd_una
        nxt = next((e[1] for e in snd.rtx_queue if e[3]), una)  # the retransmitted ones arrive
        resent |= {s.seq for s in sack_ack(sk, t, max(una, nxt), (1, 3)) if s.len}
        if not snd.rtx_queue:
            break
    assert seg_start(1) not in resent and seg_start(2) not in resent
    assert {seg_start(i) for i in (0, 3, 4, 5, 6, 7, 8, 9)} <= resent


def test_without_sack_an_rto_resends_everything_newreno():
    sk = flight(cc="cubic", n=10, sack=False)
    while not sk.mib.TCPTimeouts:
        sk.on_timer(sk.next_deadline())
    assert sk.snd.lost_out == 9 and sk.snd.sacked_out == 0       # all lost; the head resent


def test_dsack_is_recognised_and_tags_nothing_new():
    # tcp_check_dsack(): a first block below the ACK, or inside the second block
    assert sender().check_dsack(((10, 20),), 30)
    assert sender().check_dsack(((40, 50), (30, 60)), 30)
    assert not sender().check_dsack(((40, 50), (60, 70)), 30)
    assert not sender().check_dsack(((40, 50),), 30)
    sk = flight(n=10)
    sack_ack(sk, 5, seg_start(2))                                 # two acked
    sack_ack(sk, 6, seg_start(2), ("seq", seg_start(0), seg_start(1)))   # an old duplicate
    assert sk.snd.sacked_out == 0 and not sk.snd.in_recovery and not sk.snd.rack_advanced
    # a D-SACK inside the second block repeats it: counted once
    sack_ack(sk, 7, seg_start(2), ("seq", seg_start(4), seg_start(5)), (3, 6))
    assert sk.snd.sacked_out == 3


def test_a_retransmission_updates_lsndtime():
    # tcp_event_data_sent() runs for every data segment sent, new or retransmitted
    sk = flight(n=4)
    sk.on_timer(sk.next_deadline())
    assert sk.mib.TCPTimeouts + sk.mib.TCPLossProbes >= 1
    assert sk.ack.lsndtime == sk.now


def test_without_sack_duplicate_acks_stay_newreno_and_with_sack_they_wait_for_sacks():
    # with SACK, duplicate ACKs that carry no SACK information are not counted (RACK needs
    # a delivery); without SACK the third one is the fast retransmit
    for sack, want in ((False, 1), (True, 0)):
        sk = flight(n=10, sack=sack)
        for i in range(3):
            sack_ack(sk, 5 + i, 1)
        assert sk.mib.TCPFastRetrans == want, sack
