"""Delayed and quick ACKs, the delayed-ACK timer, window updates after reads."""

from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.segment import ACK

from harness import established


def test_first_segments_are_quick_acked_then_every_second_full_segment():
    # with a fixed clamp rcv_ssthresh cannot grow, so tcp_grow_window() adds no quick ACKs
    p = established("linux-6.1", sysctl={"net.ipv4.tcp_moderate_rcvbuf": 0})
    acks = []
    for i in range(60):
        n = len(p.at(2 + i * 0.1).send(1448))
        p.read(1 << 20)                                       # the reader keeps up
        acks.append(n + len(p.take()))
    assert all(acks[:8])                                     # quick-ack mode at the start
    assert p.sk.ack.ack_quick == 0
    assert sum(acks[-10:]) == 5                              # one ACK per two full segments


def test_a_reader_that_does_not_read_gets_delayed_acks():
    # the window computed now is below rcv_wnd, so "two full segments" no longer forces an ACK
    p = established("linux-6.1")
    acks = [len(p.at(2 + i * 0.1).send(1448)) for i in range(40)]   # stays inside the window
    assert sum(acks[-10:]) == 0 and p.sk.ack.delack_deadline


def test_lone_small_segment_gets_a_delayed_ack_at_ato():
    p = established("linux-6.1")
    for i in range(60):
        p.at(2 + i * 0.1).send(1448)
        p.read(1 << 20)
    sk = p.sk
    p.take()
    p.at(100).send(10)
    assert sk.ack.delack_deadline > p.now
    wait_ms = (sk.ack.delack_deadline - p.now) / NS_PER_MS
    assert 30 <= wait_ms <= 200
    p.at(sk.ack.delack_deadline / NS_PER_MS)
    out = p.tick()
    assert len(out) == 1 and out[0].ack == sk.rcv.rcv_nxt and sk.mib.DelayedACKs == 1


def test_out_of_order_segment_is_acked_at_once_with_sack():
    p = established("linux-6.1")
    p.at(2).send(1000)
    out = p.at(3).send(1000, seq=5001)
    assert out and out[-1].sacks == ((5001, 6001),)
    assert out[-1].ack == 1001 and p.sk.mib.TCPOFOQueue == 1


def test_filling_the_hole_sends_an_ack_now_and_clears_sack():
    p = established("linux-6.1")
    p.at(2).send(1000)
    p.at(3).send(1000, seq=2001)
    p.seq = 1001
    out = p.at(4).send(1000)
    assert out[-1].ack == 3001 and not out[-1].sacks
    assert not p.sk.mem.ofo_queue


def test_read_after_zero_window_sends_window_update():
    p = established("linux-6.1", so_rcvbuf=16384)           # rcvbuf 32768, window 16 KiB
    sk = p.sk
    i = 0
    while sk.receive_window() > 0 and i < 100:
        p.at(2 + i * 0.1).send(min(1448, sk.receive_window()))
        i += 1
    p.at(50).tick()
    p.take()
    got = p.read(1 << 20)
    out = p.take()
    assert got > 0 and out and out[-1].win > 0


def test_old_duplicate_gets_dsack_and_quickack():
    p = established("linux-6.1")
    p.at(2).send(1000)
    out = p.at(3).send(1000, seq=1)
    assert out and out[-1].sacks[0] == (1, 1001)
    assert p.sk.mib.DelayedACKLost == 1


def test_zero_length_out_of_window_probe_replies_are_rate_limited():
    p = established("linux-6.1")
    p.at(2).send(1000)
    a = p.at(3).send(0, seq=0, flags=ACK)                   # a zero-window probe: old seq
    b = p.at(3.2).send(0, seq=0, flags=ACK)
    c = p.at(600).send(0, seq=0, flags=ACK)
    assert len(a) == 1 and len(b) == 0 and len(c) == 1
    assert p.sk.mib.TCPACKSkippedSeq == 1
