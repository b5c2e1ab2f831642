"""Admission per era: tcp_try_rmem_schedule, tcp_prune_queue, tcp_clamp_window, NOMEM."""

from tcpsim.core.segment import ACK

from harness import established


def fill(p, n, size=1448, start_ms=2.0):
    for i in range(n):
        p.at(start_ms + i * 0.01).send(size)


def test_clamp_window_ratchets_rcvbuf_up_to_rmem_on_6_1():
    # Cloudflare 2023: rmem > rcvbuf -> tcp_prune_queue -> tcp_clamp_window raises rcvbuf
    p = established("linux-6.1", sysctl={"net.ipv4.tcp_rmem": [4096, 131072, 8 << 20]})
    sk = p.sk
    sk.mem.sk_rcvbuf = 20000                                    # as if autotuned small
    fill(p, 40)
    assert sk.mib.PruneCalled > 0
    assert sk.mem.sk_rcvbuf > 20000 and sk.mib.TCPRcvQDrop == 0
    # rcvbuf trails rmem by what the fast path (no admission check) took since the last clamp
    assert 0 <= sk.mem.sk_rmem_alloc - sk.mem.sk_rcvbuf < 4 * 2280


def test_locked_rcvbuf_is_not_raised_and_drops_in_order_data():
    p = established("linux-6.1", so_rcvbuf=16384)
    sk = p.sk
    sk.rcv.rcv_wnd = 10 ** 6                                    # let the segments in
    fill(p, 40)
    assert sk.mem.sk_rcvbuf == 32768
    assert sk.mib.TCPRcvQDrop > 0 and sk.mib.RcvPruned > 0


def test_6_6_memory_drop_advertises_zero_window_at_once():
    p = established("linux-6.6", so_rcvbuf=16384)
    sk = p.sk
    sk.rcv.rcv_wnd = 10 ** 6
    out = []
    for i in range(40):
        out += p.at(2 + i * 0.01).send(1448)
        if sk.mib.TCPRcvQDrop:
            break
    assert sk.mib.TCPRcvQDrop == 1
    assert out[-1].flags == ACK and out[-1].win == 0
    assert sk.rcv.rcv_wnd != 0                                  # 6.6-6.13: not stored


def test_6_14_stores_the_memory_squeeze_zero_window():
    p = established("linux-6.14", so_rcvbuf=16384)
    sk = p.sk
    sk.rcv.rcv_wnd = 10 ** 6
    for i in range(40):
        p.at(2 + i * 0.01).send(1448)
        if sk.mib.TCPRcvQDrop:
            break
    assert sk.rcv.rcv_wnd == 0 and sk.rcv.rcv_wup == sk.rcv.rcv_nxt


def test_6_17_admission_counts_the_incoming_truesize():
    # 6.17: rmem + truesize <= rcvbuf, checked before queueing -> no overshoot at all
    for profile, overshoot in (("linux-6.1", True), ("linux-6.17", False)):
        p = established(profile, so_rcvbuf=16384)
        sk = p.sk
        sk.rcv.rcv_wnd = 10 ** 6
        sk.rcv.pred_ok = False
        peak = 0
        for i in range(40):
            p.at(2 + i * 0.01).send(1448)
            peak = max(peak, sk.mem.sk_rmem_alloc)
        assert (peak > sk.mem.sk_rcvbuf) == overshoot, profile


def test_empty_queue_always_accepts_before_6_6():
    p = established("linux-6.1", so_rcvbuf=2304)             # rcvbuf 4608
    sk = p.sk
    sk.rcv.rcv_wnd = 10 ** 6
    p.at(2).send(8000)                                       # truesize > rcvbuf
    assert sk.rcv.rcv_nxt == 8001 and sk.mib.TCPRcvQDrop == 0
