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
    (1500, 1460, 1448, 4096 + 256),      # 1460 + 320 + 320 = 2100 -> 4096
    (1500, 3460, 1448, 8192 + 256),      # the peer's MSS option counts: 4100 -> 8192
    (11500, 11460, 11448, 16384 + 256),  # ntb-jumbo-rx's MTU: 12100 -> 16384 (16640)
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
