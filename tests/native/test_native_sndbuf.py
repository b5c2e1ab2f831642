"""The sender's send buffer as tcp_sndbuf_expand() [tcp_input.c, 5.15..6.18] sizes it, in
both engines in lockstep (tests/native/test_native_socket.py's Pair): per segment, one
non-GSO skb with a power-of-two head for max(the peer's MSS option, mss_cache) +
MAX_TCP_HEADER + skb_shared_info, plus the sk_buff; times the congestion control's factor
(2: Reno, CUBIC) and max(TCP_INIT_CWND, snd_cwnd, tp->reordering + 1); at most tcp_wmem[2].
The rule is the same in every era the model has."""

from __future__ import annotations

import pytest

from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.segment import ACK, SYN, Segment

from tests.native.test_native_socket import Pair


def connect(p: Pair, peer_mss: int) -> None:
    """Open `p` as the client; the peer's SYN-ACK offers `peer_mss` (its rx_opt.mss_clamp
    here), SACK, timestamps and window scaling."""
    p.do("connect", 0)
    p.segment(NS_PER_MS, Segment(0, 0, SYN | ACK, 1, 65535, mss=peer_mss, wscale=7,
                                 sack_ok=True, tsval=1, tsecr=p.py.conn.ts_recent or 1))


@pytest.mark.parametrize("profile", ["linux-5.15", "linux-6.1", "linux-6.18"])
@pytest.mark.parametrize("cc", ["cubic", "reno"])
@pytest.mark.parametrize("mtu, peer_mss, mss, per_mss", [
    # MAX_TCP_HEADER + SKB_SHINFO = 192 + 320 = 512 on the reference kernel, measured there
    # (ss -tmi tb right after the handshake, cubic: 46080 up to mss_clamp 1536, 87040 from
    # 1537 to 3584, 168960 to 7680, 332800 from 7681)
    (1500, 1460, 1448, 2048 + 256),      # 1460 + 512 = 1972 -> 2048: tb 46080
    (1500, 1536, 1448, 2048 + 256),      # the last mss_clamp in 2048
    (1500, 1537, 1448, 4096 + 256),      # the peer's MSS option counts: 2049 -> 4096
    (1500, 3460, 1448, 4096 + 256),
    (1500, 3585, 1448, 8192 + 256),
    (11500, 11460, 11448, 16384 + 256),  # ntb-jumbo-rx's MTU: 11972 -> 16384 (16640)
])
def test_sndbuf_at_the_handshake_is_per_mss_memory_times_two_initial_windows(
        native, profile, cc, mtu, peer_mss, mss, per_mss):
    p = Pair(profile, sysctl={"net.ipv4.tcp_congestion_control": cc}, mtu=mtu)
    connect(p, peer_mss)
    assert p.py.conn.mss_cache == mss
    assert p.py.snd.snd_cwnd == 10
    assert p.py.sndbuf_per_mss() == per_mss
    assert p.py.snd.sk_sndbuf == 2 * 10 * per_mss


def test_sndbuf_stops_at_tcp_wmem_max(native):
    p = Pair("linux-6.18", sysctl={"net.ipv4.tcp_wmem": (4096, 16384, 200_000)}, mtu=11500)
    connect(p, 11460)
    assert p.py.snd.sk_sndbuf == 200_000                    # 2 * 10 * 16640 = 332800 wanted


def ack_at(p: Pair, t_ms: float, ackno: int, sacks: tuple[tuple[int, int], ...] = ()) -> None:
    p.segment(int(t_ms * NS_PER_MS), Segment(1, 0, ACK, ackno, 65535, tsval=int(t_ms) + 1,
                                             tsecr=1, sacks=sacks))


def sent_end(p: Pair) -> int:
    return p.py.snd.snd_nxt


@pytest.mark.parametrize("profile", ["linux-5.15", "linux-6.18"])
def test_a_writer_that_never_fills_the_buffer_does_not_grow_it(native, profile):
    # tcp_new_space() runs only with SOCK_NOSPACE set: a write found the buffer full. On the
    # reference kernel (loopback, cubic, MSS 1436) 32 KB every 5 ms grew cwnd to 33 and tb
    # stayed 46080; the model used to grow it on every ACK.
    p = Pair(profile)
    connect(p, 1460)
    t = 2.0
    for _ in range(6):
        p.do("write", int(t * NS_PER_MS), 14480)
        ack_at(p, t + 1, sent_end(p))
        t += 2
    assert p.py.snd.snd_cwnd > 10 and not p.py.snd.sock_nospace
    assert p.py.snd.sk_sndbuf == 2 * 10 * 2304


@pytest.mark.parametrize("profile, grown", [("linux-5.15", False), ("linux-6.1", True),
                                             ("linux-6.18", True)])
def test_a_full_buffer_grows_while_the_flight_is_below_cwnd(native, profile, grown):
    # The writer fills the buffer (SOCK_NOSPACE); the ACK of the first flight doubles cwnd to
    # 20. 5.15 checks the space only after the push that follows (tcp_data_snd_check()),
    # when 20 segments are out again: tcp_should_expand_sndbuf() says no. 6.1+
    # (4bfe744ff164, 5.18) checks after every skb sent (tcp_event_new_data_sent()), the
    # first while the flight is still below cwnd: 2 x 20 segments.
    p = Pair(profile)
    connect(p, 1460)
    got = p.do("write", 2 * NS_PER_MS, 1 << 20)
    assert got < 1 << 20 and p.py.snd.sock_nospace
    ack_at(p, 3, sent_end(p))
    assert p.py.snd.snd_cwnd == 20 and p.py.packets_in_flight() == 20
    assert p.py.snd.sk_sndbuf == 2 * (20 if grown else 10) * 2304
    ack_at(p, 4, 1 + 12 * 1448)                              # flight 18 < cwnd 22 after it
    assert p.py.snd.sk_sndbuf == 2 * (20 if grown else 22) * 2304


@pytest.mark.parametrize("profile", ["linux-6.1", "linux-6.18"])
def test_reordering_seen_keeps_reordering_plus_one_segments_after_an_rto(native, profile):
    # tcp_check_sack_reordering(): the first flight's segment 10 is SACKed alone, then the
    # cumulative ACK delivers 1..9, never retransmitted, below it: tp->reordering becomes
    # the distance in segments, 10. After an RTO (Reno: ssthresh half the flight, 10) a
    # full buffer grows for max(TCP_INIT_CWND, cwnd, reordering + 1) = 11 segments.
    p = Pair(profile, sysctl={"net.ipv4.tcp_congestion_control": "reno"})
    connect(p, 1460)
    s = p.py.snd
    p.do("write", 2 * NS_PER_MS, 14480)
    end = sent_end(p)
    ack_at(p, 3, 1, sacks=((end - 1448, end),))
    assert s.reordering == 3 and not s.reord_seen           # within RACK's reo_wnd: no loss
    ack_at(p, 3.5, end)
    assert s.reordering == 10 and s.reord_seen and s.snd_cwnd == 20
    assert s.sk_sndbuf == 2 * 10 * 2304 and not s.sock_nospace    # not full: not grown
    p.do("write", 4 * NS_PER_MS, 28960)
    while not s.in_loss:                                    # the loss probe, then the RTO
        t = min(x for x in (s.tlp_deadline, s.rto_deadline) if x)
        p.do("on_timer", t)
    assert s.snd_cwnd == 1 and s.reordering == 10
    p.do("write", t + NS_PER_MS, 1 << 20)
    assert s.sock_nospace and s.sk_sndbuf == 2 * 10 * 2304
    ack_at(p, t / NS_PER_MS + 2, sent_end(p))
    assert s.snd_cwnd == 10
    assert s.sk_sndbuf == 2 * 11 * 2304
