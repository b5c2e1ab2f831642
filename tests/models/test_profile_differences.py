"""Each profile against its predecessor: the behaviour that tells them apart.

linux-6.1 (6.1.14) has 5.15's receive path (only drop reasons differ, and tcpsim reports
them for every profile), so its row checks that it is indeed the same.
"""

import pytest

from tcpsim.core.segment import SYN
from tcpsim.core.socket import TcpSocket
from tcpsim.catalog import get_profile

from harness import established


def syn_window(profile: str, role: str = "client", **sysctl) -> int:
    prof = get_profile(profile)
    sk = TcpSocket(prof.policy(), prof.default_sysctls().with_overrides(sysctl))
    if role == "client":
        sk.connect(0)
        return sk.take_outbox()[0].win
    p = established(profile, role="server")
    return [r for r in p.sk.sink.rows if r[8] == "SA"][0][10]


def full_squeeze(profile: str, **kw) -> tuple:
    """Fill a 32 KiB buffer past its window: (socket, peak rmem, zero window on the wire)."""
    p = established(profile, so_rcvbuf=16384, **kw)
    sk = p.sk
    sk.rcv.rcv_wnd = 10 ** 6
    sk.rcv.pred_ok = False
    peak = 0
    for i in range(40):
        p.at(2 + i * 0.01).send(1448)
        peak = max(peak, sk.mem.sk_rmem_alloc)
    return sk, peak, any(a.win == 0 for a in p.acks)


def test_6_1_is_5_15():
    assert syn_window("linux-6.1") == syn_window("linux-5.15") == 64240
    assert full_squeeze("linux-6.1")[1:] == full_squeeze("linux-5.15")[1:]


def test_6_1_59_adds_tcp_shrink_window():
    assert "tcp_shrink_window" in get_profile("linux-6.1.59").known_sysctls()
    assert "tcp_shrink_window" not in get_profile("linux-6.1").known_sysctls()


def test_6_6_scaling_ratio_25_percent_and_nomem_zero_window():
    assert syn_window("linux-6.6") == 32120 and syn_window("linux-6.1.59") == 64240
    sk, _, zero = full_squeeze("linux-6.6")
    assert sk.mib.TCPRcvQDrop and zero                       # the NOMEM ACK says window 0
    sk61, _, zero61 = full_squeeze("linux-6.1.59")
    assert sk61.mib.TCPRcvQDrop and not zero61               # a silent drop


def test_6_8_default_ratio_50_percent():
    assert syn_window("linux-6.8") == 64240 and syn_window("linux-6.6") == 32120


def test_6_10_no_64k_cap_on_the_initial_window():
    big = {"net.ipv4.tcp_rmem": [4096, 1 << 21, 6 << 20]}
    assert established("linux-6.10", sysctl=big).sk.rcv.rcv_ssthresh > 65535
    assert established("linux-6.8", sysctl=big).sk.rcv.rcv_ssthresh <= 65535


def test_6_14_stores_the_nomem_zero_window():
    assert full_squeeze("linux-6.14")[0].rcv.rcv_wnd == 0
    assert full_squeeze("linux-6.10")[0].rcv.rcv_wnd != 0


def test_6_17_admits_with_truesize_and_6_18_gave_it_up():
    _, peak617, _ = full_squeeze("linux-6.17")
    _, peak618, _ = full_squeeze("linux-6.18")
    assert peak617 <= 32768 < peak618
    assert get_profile("linux-6.17").default_sysctls().tcp_rmem[2] == 32 << 20
    assert get_profile("linux-6.14").default_sysctls().tcp_rmem[2] == 6 << 20


@pytest.mark.parametrize("profile,grows", [("linux-6.17", False), ("linux-6.18", True)])
def test_6_18_grows_rcvbuf_from_out_of_order_data(profile, grows):
    p = established(profile)
    sk = p.sk
    before = sk.mem.sk_rcvbuf
    for i in range(40):
        p.at(2 + i * 0.01).send(1448, seq=1 + 1448 * (i + 2))        # a hole at the start
    assert (sk.mem.sk_rcvbuf > before) == grows
