"""tcp_select_initial_window(), tcp_init_buffer_space() and the first advertised windows."""

from tcpsim.core.segment import ACK, SYN, Segment
from tcpsim.core.socket import TcpSocket
from tcpsim.profiles import get_profile

from harness import established


def syn_of(profile: str, **sysctl) -> tuple[TcpSocket, Segment]:
    prof = get_profile(profile)
    sk = TcpSocket(prof.policy(), prof.default_sysctls().with_overrides(sysctl))
    sk.connect(0)
    return sk, sk.take_outbox()[0]


def test_syn_window_and_wscale_for_256mib_is_13():
    sk, syn = syn_of("linux-6.1", **{"net.ipv4.tcp_rmem": [4096, 131072, 268435456]})
    assert syn.flags == SYN and syn.win == 64240 and syn.mss == 1460
    assert syn.wscale == 13


def test_wscale_8_for_8mib_and_14_for_512mib():
    assert syn_of("linux-6.1", **{"net.ipv4.tcp_rmem": [4096, 131072, 8 << 20]})[1].wscale == 8
    assert syn_of("linux-6.1", **{"net.ipv4.tcp_rmem": [4096, 131072, 512 << 20]})[1].wscale == 14


def test_wscale_follows_measured_values_on_6_18():
    # docs/kernel-measurements.md E3: 6/8/32/256 MiB -> 7/8/10/13
    for mib, ws in ((6, 7), (8, 8), (32, 10), (256, 13)):
        assert syn_of("linux-6.18", **{"net.ipv4.tcp_rmem": [4096, 131072, mib << 20]})[1].wscale == ws


def test_512mib_with_adv_win_scale_minus2_gives_128mib_max_window():
    # Cloudflare's "tcp_rmem 512 MiB and adv_win_scale -2 -> 128 MiB max window" (6.1)
    sk, _ = syn_of("linux-6.1", **{"net.ipv4.tcp_rmem": [8192, 262144, 512 << 20],
                                   "net.ipv4.tcp_adv_win_scale": -2})
    assert sk.k.win_from_space(sk, sk.sysctl.tcp_rmem[2]) == 128 << 20


def test_6_6_default_ratio_gives_the_small_syn_window():
    assert syn_of("linux-6.6")[1].win == 32120     # receive-path.md §6.4
    assert syn_of("linux-6.8")[1].win == 64240


def test_buffer_space_after_handshake_matches_kernel():
    # E3: rcv_ssthresh = window_clamp = 65536 - 1448, rcv_space = 10 * advmss, rcv_mss 536
    p = established("linux-6.18", sysctl={"net.ipv4.tcp_rmem": [4096, 131072, 6 << 20]})
    sk = p.sk
    assert sk.window_clamp == 64088 and sk.rcv_ssthresh == 64088
    assert sk.rcvq_space == 14480 and sk.ack_rcv_mss == 536 and sk.scaling_ratio == 128
    # the handshake-completing ACK rounds the SYN's 64240 up to the scale unit (E3: 64256)
    assert sk.rcv_wnd == 64256


def test_server_synack_window_is_65160():
    p = established("linux-6.18", role="server")
    syn_ack = [s for s in p.sk.sink.rows if s[8] == "SA"][0]
    assert syn_ack[10] == 65160


def test_so_rcvbuf_before_connect_locks_and_gives_wscale_0():
    prof = get_profile("linux-6.18")
    sk = TcpSocket(prof.policy(), prof.default_sysctls())
    sk.set_rcvbuf(32768)
    sk.connect(0)
    syn = sk.take_outbox()[0]
    assert sk.sk_rcvbuf == 65536 and sk.rcvbuf_locked
    assert syn.wscale == 0 and syn.win == 32120         # E2: SYN window 32120, wscale 0
