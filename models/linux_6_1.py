"""Linux 6.1 LTS: the kernel of Cloudflare's 2023 reproducers (6.1.14).

Receive-path changes since 5.15 that a simulation can see:
* drop reasons on the data path (skb:kfree_skb shows PROTO_MEM, TCP_ZEROWINDOW, ...);
  tcpsim reports them for every profile, so nothing to override;
* from 6.1.59 (stable backport of b650d953cd39, Oct 2023): `net.ipv4.tcp_shrink_window`.
  Default 0 keeps 6.1.14's never-shrink behaviour; 1 lets the window retract (with window
  scaling only), which is Cloudflare's fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.models.linux_5_15 import Linux515
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class Linux61(Linux515):
    """Linux 6.1: 5.15 plus the tcp_shrink_window sysctl (6.1.59+)."""

    RELEASE = "6.1"
    SYSCTLS = Linux515.SYSCTLS | {"tcp_shrink_window"}

    def shrink_allowed(self, sk: TcpSocket) -> bool:
        """tcp_shrink_window=1 and a scaled window (merged form of b650d953cd39)."""
        return bool(sk.sysctl.tcp_shrink_window) and sk.rcv_wscale != 0


PROFILE = Profile("linux-6.1", Linux61,
                  "6.1 LTS (the seeds' kernel): adv_win_scale windows, never-shrink by default, "
                  "tcp_shrink_window from 6.1.59")
