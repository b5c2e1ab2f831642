"""Linux 6.10: no 64 KiB cap on the initial rcv_wnd; the sender grows a short head skb.

Jason Xing, "tcp: remove 64 KByte limit for initial tp->rcv_wnd value" (May 2024): with a
large tcp_rmem[1] the initial rcv_wnd -- and so rcv_ssthresh -- starts at the full initial
space rounded to the MSS, although the SYN still says at most 65535.

Eric Dumazet, 8ee602c63520 "tcp: try to send bigger TSO packets" (April 2024, 6.10):
tcp_write_xmit() first moves bytes from the second write-queue skb into a head skb that is
shorter than what cwnd and tcp_tso_segs() would let it send (tcp_grow_skb), so the rest of
an skb split at the window edge goes out whole with the next skb's bytes.

Adam Li, "net: make SK_MEMORY_PCPU_RESERV tunable" (posted Feb 2024, 6.9): the per-CPU
reserve of the TCP pool becomes net.core.mem_pcpu_rsv (default and minimum 256 pages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.models.linux_6_8 import Linux68
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from collections import deque

    from tcpsim.core.socket import TcpSocket


class Linux610(Linux68):
    """Linux 6.10: initial rcv_wnd no longer capped at 65535."""

    RELEASE = "6.10"
    SYSCTLS = Linux68.SYSCTLS | {"mem_pcpu_rsv"}

    def initial_rcv_wnd(self, sk: TcpSocket, space: int) -> int:
        """tcp_select_initial_window() [6.10+]: rcv_wnd = space."""
        return space

    def grow_skb(self, sk: TcpSocket, q: deque[int], missing: int) -> None:
        """tcp_grow_skb() [tcp_output.c, 6.10+]: the head skb (q[0]) takes up to `missing`
        bytes -- what it lacks of min(cwnd quota, tcp_tso_segs()) MSS -- from the front of
        the next one (q[1]); an emptied next skb is unlinked. Only called with len(q) > 1."""
        take = min(missing, q[1])
        q[0] += take
        if take == q[1]:
            del q[1]
        else:
            q[1] -= take


PROFILE = Profile("linux-6.10", Linux610, "6.10: no 64 KiB cap on the initial receive window")
