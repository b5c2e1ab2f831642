"""__tcp_select_window / tcp_select_window: rounding, zero window, never-shrink vs shrink."""

from tcpsim.core.constants import align_up

from harness import established


def test_window_is_a_multiple_of_the_scale_unit_and_right_edge_never_retreats():
    p = established("linux-6.1", sysctl={"net.ipv4.tcp_rmem": [4096, 131072, 256 << 20]})
    sk = p.sk
    edge = sk.rcv.rcv_wup + sk.rcv.rcv_wnd
    for i in range(300):
        for seg in p.at(2 + i).send(4):
            right = seg.ack + (seg.win << sk.conn.rcv_wscale)
            assert right >= edge
            edge = right
        p.at(2 + i + 0.5).tick()
    assert sk.mib.TCPWantZeroWindowAdv >= 0


def test_never_shrink_rounds_the_current_window_up():
    p = established("linux-6.1", sysctl={"net.ipv4.tcp_rmem": [4096, 131072, 256 << 20]})
    sk = p.sk
    sk.mem.sk_rmem_alloc = sk.mem.sk_rcvbuf                         # no free space at all
    cur = sk.receive_window()
    win = sk.k.advertise_window(sk)
    assert sk.k.select_window(sk) == 0
    assert win << sk.conn.rcv_wscale == align_up(cur, 1 << sk.conn.rcv_wscale)
    assert sk.mib.TCPWantZeroWindowAdv == 1 and sk.mib.TCPToZeroWindowAdv == 0


def test_shrink_window_sysctl_advertises_zero():
    p = established("linux-6.1.59", sysctl={"net.ipv4.tcp_rmem": [4096, 131072, 256 << 20],
                                         "net.ipv4.tcp_shrink_window": 1})
    sk = p.sk
    sk.mem.sk_rmem_alloc = sk.mem.sk_rcvbuf
    assert sk.k.advertise_window(sk) == 0
    assert sk.mib.TCPToZeroWindowAdv == 1 and sk.mib.TCPWantZeroWindowAdv == 0


def test_shrink_needs_window_scaling():
    p = established("linux-6.1.59", sysctl={"net.ipv4.tcp_shrink_window": 1}, so_rcvbuf=32768)
    sk = p.sk
    assert sk.conn.rcv_wscale == 0 and not sk.k.shrink_allowed(sk)


def test_zero_window_threshold_is_max_mss_and_full_over_16():
    p = established("linux-6.1")
    sk = p.sk
    sk.ack.ack_rcv_mss = 1448
    allowed = sk.full_space()
    # leave exactly enough for one MSS but less than allowed/16 -> zero
    free_mem = (allowed >> 4) * 2 - 256                     # W(x) = x/2 with adv_win_scale 1
    sk.mem.sk_rmem_alloc = sk.mem.sk_rcvbuf - free_mem
    assert sk.tcp_space() < allowed >> 4
    assert sk.k.select_window(sk) == 0
    sk.mem.sk_rmem_alloc = 0
    assert sk.k.select_window(sk) > 0


def test_window_bounded_by_rcv_ssthresh_early_on():
    p = established("linux-6.1", sysctl={"net.ipv4.tcp_rmem": [4096, 1 << 21, 6 << 20]})
    sk = p.sk
    assert sk.k.select_window(sk) == align_up(sk.rcv.rcv_ssthresh, 1 << sk.conn.rcv_wscale)
    assert sk.rcv.rcv_ssthresh == 65535 or sk.rcv.rcv_ssthresh <= 65535   # 64 KiB initial cap (<= 6.9)


def test_no_initial_cap_from_6_10():
    p = established("linux-6.10", sysctl={"net.ipv4.tcp_rmem": [4096, 1 << 21, 6 << 20]})
    assert p.sk.rcv.rcv_ssthresh > 65535


def test_the_shrink_window_patch_on_6_1_equals_the_6_1_59_sysctl():
    a = established("linux-6.1", patches=("shrink-window",))
    b = established("linux-6.1.59", sysctl={"net.ipv4.tcp_shrink_window": 1})
    for p in (a, b):
        p.sk.mem.sk_rmem_alloc = p.sk.mem.sk_rcvbuf
    assert a.sk.k.advertise_window(a.sk) == b.sk.k.advertise_window(b.sk) == 0
    plain = established("linux-6.1")
    plain.sk.mem.sk_rmem_alloc = plain.sk.mem.sk_rcvbuf
    assert plain.sk.k.advertise_window(plain.sk) > 0
