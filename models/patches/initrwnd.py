"""Marek Majkowski's initrwnd patch (2022, not merged): open rcv_ssthresh on the first RTT.

"RTAX_INITRWND should be able to bring the rcv_ssthresh above 64KiB" (net-next, 2022-07-21):
rcv_ssthresh normally starts at the initial rcv_wnd (at most 64 KiB before 6.10) and grows
by two segments per good packet, so a large receive window opens over many RTTs. With the
patch, a route's initrwnd (in segments; scenario `[receiver] initrwnd = 1000`) raises the
initial rcv_ssthresh to initrwnd * mss, so the first scaled ACK can advertise it all.
Upstream, initrwnd can only *lower* the initial window (applied as a min).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.constants import TCP_HEADER_TS
from tcpsim.policy import Patch

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class InitRwnd(Patch):
    """tcp_connect_init() / tcp_openreq_init_rwin(): rcv_ssthresh = max(rcv_wnd, initrwnd * mss)."""

    name = "initrwnd"
    summary = "Majkowski's initrwnd: a route's initrwnd raises the initial rcv_ssthresh"

    def init_rcv_ssthresh(self, sk: TcpSocket) -> None:
        mss = sk.conn.advmss - (TCP_HEADER_TS if sk.conn.ts_ok else 0)
        sk.rcv.rcv_ssthresh = max(sk.rcv.rcv_wnd, sk.conn.init_rwnd * mss)


PATCH = InitRwnd
