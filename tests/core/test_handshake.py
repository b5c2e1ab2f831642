"""tcp_select_initial_window(), tcp_init_buffer_space() and the first advertised windows."""

import pytest

from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.segment import ACK, SYN, Segment
from tcpsim.core.socket import TcpSocket
from tcpsim.catalog import get_profile
from tcpsim.engines import make_socket, native_available

from harness import conn_field, established


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
    assert sk.rcv.window_clamp == 64088 and sk.rcv.rcv_ssthresh == 64088
    assert sk.rcv.rcvq_space == 14480 and sk.ack.ack_rcv_mss == 536 and sk.rcv.scaling_ratio == 128
    # the handshake-completing ACK rounds the SYN's 64240 up to the scale unit (E3: 64256)
    assert sk.rcv.rcv_wnd == 64256


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
    assert sk.mem.sk_rcvbuf == 65536 and sk.mem.rcvbuf_locked
    assert syn.wscale == 0 and syn.win == 32120         # E2: SYN window 32120, wscale 0


# -- the handshake's RTT sample ------------------------------------------------------------------

def test_the_active_side_times_its_syn():
    # tcp_ack() of the SYN-ACK: tcp_clean_rtx_queue() acks the SYN and samples its RTT, so
    # srtt, the RTO (srtt + the 200 ms rttvar floor) and the pacing rate (tcp_cong_control,
    # with tcp_init_sock()'s cwnd of 10) exist before any data is acknowledged
    sk, _ = syn_of("linux-6.18")
    synack = Segment(0, 0, SYN | ACK, 1, 65535, mss=1460, wscale=7, sack_ok=True, tsval=5,
                     tsecr=1)
    sk.on_segment(12_345_678, synack)
    assert sk.conn.state == "ESTABLISHED" and sk.snd.srtt_us8 == 12_345 << 3 and sk.snd.min_rtt_us == 12_345
    assert sk.snd.rto == (12_345 + 200_000) * 1000
    assert sk.snd.pacing_rate == 1448 * 80_000 * 200 * 10 // (12_345 << 3)


def test_the_passive_side_times_its_synack():
    # tcp_check_req() -> tcp_synack_rtt_meas(): from the SYN-ACK's send time (snt_synack)
    prof = get_profile("linux-6.1")
    sk = TcpSocket(prof.policy(), prof.default_sysctls(), name="snd")
    sk.listen()
    sk.on_segment(1_000_000, Segment(0, 0, SYN, 0, 65535, mss=1460, wscale=7, sack_ok=True,
                                     tsval=1, tsecr=0))
    sk.take_outbox()
    sk.on_segment(21_000_000, Segment(1, 0, ACK, 1, 502, tsval=21, tsecr=sk.conn.ts_recent))
    assert sk.conn.state == "ESTABLISHED" and sk.snd.srtt_us8 == 20_000 << 3
    assert sk.snd.rto == 220 * 1_000_000 and sk.snd.pacing_rate > 0


def test_after_a_retransmitted_syn_only_the_timestamp_echo_times_it():
    # Karn: a retransmitted SYN's ACK is ambiguous; tcp_ack_update_rtt() falls back to the
    # timestamp echo (tcp_rtt_tsopt_us, whole milliseconds)
    sk, syn = syn_of("linux-6.18")
    sk.snd.retransmits = 1
    synack = Segment(0, 0, SYN | ACK, 1, 65535, mss=1460, wscale=7, sack_ok=True, tsval=5,
                     tsecr=syn.tsval)
    sk.on_segment(3_400_000, synack)                    # TS clock: 4 - 1 = 3 ms
    assert sk.snd.srtt_us8 == 3_000 << 3


# -- an unanswered handshake ------------------------------------------------------------------------

def test_an_unanswered_syn_goes_again_backed_off_then_etimedout():
    # tcp_retransmit_timer() in SYN_SENT: 1 s, 2 s, 4 s ... ; tcp_syn_retries = 6
    sk, _ = syn_of("linux-6.18")
    sent = []
    while sk.conn.state == "SYN_SENT":
        sk.on_timer(sk.next_deadline())
        sent += [(sk.now, s.flags) for s in sk.take_outbox()]
    assert [t // 1_000_000_000 for t, _ in sent] == [1, 3, 7, 15, 31, 63]
    assert all(f == SYN for _, f in sent) and sk.error == "ETIMEDOUT" and sk.now == 127 * 10**9


def test_the_synack_goes_again_and_a_repeated_syn_is_answered():
    prof = get_profile("linux-6.1")
    sk = TcpSocket(prof.policy(), prof.default_sysctls(), name="snd")
    sk.listen()
    syn = Segment(0, 0, SYN, 0, 65535, mss=1460, wscale=7, sack_ok=True, tsval=1, tsecr=0)
    sk.on_segment(0, syn)
    assert [s.flags for s in sk.take_outbox()] == [SYN | ACK]
    sk.on_timer(sk.next_deadline())                     # reqsk timer: 1 s
    assert [s.flags for s in sk.take_outbox()] == [SYN | ACK] and sk.now == 10**9
    sk.on_segment(1_500_000_000, syn)                   # the client's SYN again
    (synack,) = sk.take_outbox()
    assert synack.flags == SYN | ACK
    # the ACK that finally comes: after a retransmitted SYN-ACK only its timestamp echo
    # times the handshake (20 ms, in whole milliseconds)
    sk.on_segment(1_520_400_000, Segment(1, 0, ACK, 1, 502, tsval=1502, tsecr=synack.tsval))
    assert sk.conn.state == "ESTABLISHED" and sk.snd.srtt_us8 == 20_000 << 3


def test_a_lost_syn_delays_the_connection_instead_of_preventing_it():
    from dataclasses import replace

    from tcpsim.runner import RunOptions, run
    from tcpsim.scenario import load_scenario
    sc = load_scenario("seed-default-fill")            # the sender connects: its SYN can be lost
    sc = sc.with_(link=replace(sc.link, loss=0.5))
    r, _ = run(sc, RunOptions(seed=1, duration=5 * 10**9))
    assert r.summary["established"] and r.summary["bytes_received"] > 0


# -- close() -------------------------------------------------------------------------------------

def test_close_with_unread_data_resets_the_connection():
    # tcp_close(): data left unread -> TCP_CLOSE and tcp_send_active_reset() (RST|ACK at
    # snd_nxt, acking what arrived), TCPAbortOnClose
    from tcpsim.core.segment import RST
    p = established("linux-6.18")
    p.at(2).send(1000)
    p.sk.close(p.now + 1000)
    (rst,) = p.take()
    assert rst.flags == RST | ACK and rst.seq == p.sk.snd.snd_nxt and rst.ack == 1001
    assert p.sk.conn.state == "CLOSED" and p.sk.mib.TCPAbortOnClose == 1 and not p.sk.next_deadline()


def test_close_after_reading_everything_sends_a_fin():
    from tcpsim.core.segment import FIN
    p = established("linux-6.18")
    p.at(2).send(1000)
    p.read(1000)
    p.take()
    p.sk.close(p.now + 1000)
    assert [s.flags & FIN for s in p.take()] == [FIN]
    assert p.sk.conn.state == "FIN_WAIT1" and p.sk.mib.TCPAbortOnClose == 0


def test_a_retransmitted_handshake_leaves_no_retransmission_count_behind():
    # the handshake's retransmissions decide Karn's rule for its sample, nothing after:
    # a data RTO must not see them (tcp_write_timeout would count from a stale stamp)
    sk, _ = syn_of("linux-6.18")
    sk.on_timer(sk.next_deadline())                     # the SYN again at 1 s
    (syn,) = sk.take_outbox()
    sk.on_segment(1_010_000_000, Segment(0, 0, SYN | ACK, 1, 65535, mss=1460, wscale=7,
                                         sack_ok=True, tsval=5, tsecr=syn.tsval))
    assert sk.conn.state == "ESTABLISHED" and sk.snd.retransmits == 0 and sk.snd.srtt_us8 == 10_000 << 3


# -- tcp_sync_mss(): the MSS bounded to half the peer's window --------------------------------------

ENGINES = ["python"] + (["native"] if native_available() else [])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_jumbo_mss_is_halved_by_the_peers_first_window(engine):
    # tcp_sync_mss() bounds the MSS with tcp_bound_to_half_wnd(): at a 64 KiB MTU the path
    # MSS (65536 - 40 - 12 = 65484) exceeds half the peer's window, so it is cut to half the
    # SYN-ACK's (unscaled) window on the active side and to half the handshake ACK's scaled
    # window on the passive side -- `ss -ti` on loopback shows mss:32768 at the server
    prof = get_profile("linux-6.18")
    client = make_socket(engine, prof, prof.default_sysctls(), "veth", mtu=65536)
    client.connect(0)
    client.take_outbox()
    client.on_segment(NS_PER_MS, Segment(0, 0, SYN | ACK, 1, 65483, mss=65483, wscale=7,
                                         sack_ok=True, tsval=1, tsecr=1))
    assert conn_field(client, "mss_cache") == 65483 // 2
    server = make_socket(engine, prof, prof.default_sysctls(), "veth", mtu=65536)
    server.listen()
    server.on_segment(0, Segment(0, 0, SYN, 0, 65483, mss=65483, wscale=7, sack_ok=True,
                                 tsval=1, tsecr=0))
    server.on_segment(NS_PER_MS, Segment(1, 0, ACK, 1, 512, tsval=2,
                                         tsecr=conn_field(server, "ts_recent")))
    assert conn_field(server, "mss_cache") == (512 << 7) // 2
    # at a 1500-byte MTU half the window is far above the MSS: nothing changes
    assert conn_field(established("linux-6.18").sk, "mss_cache") == 1448
