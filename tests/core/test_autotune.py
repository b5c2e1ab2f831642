"""Receive autotuning (DRS) per era and the receiver RTT estimators."""

from harness import established


def stream(p, ms, per_ms=16, read=True, start=2.0):
    """per_ms full segments each millisecond for `ms` ms, reader draining each time."""
    for t in range(ms):
        for k in range(per_ms):
            p.at(start + t + k * 0.1).send(1448)
        if read:
            p.read(1 << 22)
            p.take()


def test_drs_grows_rcvbuf_for_a_fast_reader():
    for prof in ("linux-6.1", "linux-6.6", "linux-6.18"):
        p = established(prof)
        stream(p, 120)
        assert p.sk.mem.sk_rcvbuf > 131072, prof
        assert p.sk.rcv.window_clamp > 64088, prof


def test_drs_does_nothing_with_so_rcvbuf():
    p = established("linux-6.1", so_rcvbuf=65536)
    stream(p, 60)
    assert p.sk.mem.sk_rcvbuf == 131072


def test_drs_off_with_moderate_rcvbuf_0():
    p = established("linux-6.18", sysctl={"net.ipv4.tcp_moderate_rcvbuf": 0})
    stream(p, 60)
    assert p.sk.mem.sk_rcvbuf == 131072


def test_6_16_drs_is_smaller_than_legacy_for_the_same_reader():
    a, b = established("linux-6.1"), established("linux-6.17")
    stream(a, 150)
    stream(b, 150)
    assert b.sk.mem.sk_rcvbuf < a.sk.mem.sk_rcvbuf


def test_rcv_rtt_from_timestamps_ewma_vs_min_seeking():
    # samples of 20 ms, then one of 50 ms with data queued
    for prof, expect_up in (("linux-6.1", True), ("linux-6.17", False)):
        p = established(prof)
        sk = p.sk
        for t in range(5):
            p.at(30 + t * 20)
            sk.conn.ts_recent = 0
            sk.conn.rcv_tsecr = -1
            p.send(1448)
        sk.k.rcv_rtt_update(sk, 20000, False)
        before = sk.rcv.rcv_rtt_us8
        sk.k.rcv_rtt_update(sk, 50000, False)
        assert (sk.rcv.rcv_rtt_us8 > before) == expect_up, prof


def test_scaling_ratio_sampled_from_first_full_segment_6_6():
    p = established("linux-6.18")
    p.at(2).send(1448)
    assert p.sk.rcv.scaling_ratio == 1448 * 256 // 2280 == 162   # E6
    assert p.sk.rcv.window_clamp == 131072 * 162 >> 8            # 82944: clamp follows (6.11+)
    assert p.sk.rcv.rcv_ssthresh >= 64512                         # raised with the clamp (E6: 67408 after growth)
