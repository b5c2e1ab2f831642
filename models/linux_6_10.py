"""Linux 6.10: no 64 KiB cap on the initial rcv_wnd.

Jason Xing, "tcp: remove 64 KByte limit for initial tp->rcv_wnd value" (May 2024): with a
large tcp_rmem[1] the initial rcv_wnd -- and so rcv_ssthresh -- starts at the full initial
space rounded to the MSS, although the SYN still says at most 65535.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.models.linux_6_8 import Linux68
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class Linux610(Linux68):
    """Linux 6.10: initial rcv_wnd no longer capped at 65535."""

    RELEASE = "6.10"

    def initial_rcv_wnd(self, sk: TcpSocket, space: int) -> int:
        """tcp_select_initial_window() [6.10+]: rcv_wnd = space."""
        return space


PROFILE = Profile("linux-6.10", Linux610, "6.10: no 64 KiB cap on the initial receive window")
