"""Cloudflare's window-shrinking patch (Mike Freemon, 2023): upstream as tcp_shrink_window.

"tcp: enforce receive buffer memory limits by allowing the tcp window to shrink" (v3,
2023-06-09), merged as b650d953cd39 for 6.5 and backported to 6.1.59. Without it the
offered window never retracts: tcp_select_window() rounds the current right edge *up* to the
window-scale unit, so a sender of small segments keeps getting window while memory runs
past sk_rcvbuf, and tcp_clamp_window() then raises sk_rcvbuf toward tcp_rmem[2]. With it
(and window scaling) the window follows free memory down to zero.

`ShrinkWindowSysctl` is the upstream form (the sysctl, default 0), used by linux-6.1.59 and
6.5+. `ShrinkWindow` is the patch for kernels without it (`--policy shrink-window`): the
same code with the sysctl defaulting to 1.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tcpsim.core.sysctl import Sysctls
from tcpsim.policy import Patch

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class ShrinkWindowSysctl:
    """net.ipv4.tcp_shrink_window: may the window retract? (merged form of b650d953cd39)."""

    def shrink_allowed(self, sk: TcpSocket) -> bool:
        """Retract when the sysctl is set and the window is scaled (without scaling the old
        behaviour is already exact to the byte)."""
        return bool(sk.sysctl.tcp_shrink_window) and sk.conn.rcv_wscale != 0


class ShrinkWindow(ShrinkWindowSysctl, Patch):
    """Cloudflare's patch on a kernel that lacks the sysctl: shrink by default."""

    name = "shrink-window"
    summary = "Cloudflare's tcp_shrink_window=1 behaviour for kernels without the sysctl"
    sysctls = frozenset({"tcp_shrink_window"})

    def default_sysctls(self) -> Sysctls:
        return replace(super().default_sysctls(), tcp_shrink_window=1)


PATCH = ShrinkWindow
