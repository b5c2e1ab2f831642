"""Linux 6.1.59: the 6.1 stable series gains net.ipv4.tcp_shrink_window.

Stable backport (9cddad8c0d47, review 2023-10-16) of b650d953cd39 "tcp: enforce receive
buffer memory limits by allowing the tcp window to shrink" -- Cloudflare's patch, in
models/patches/shrink_window.py. Default 0 keeps 6.1.14's behaviour; 1 lets a scaled window
retract to what memory allows.
"""

from __future__ import annotations

from tcpsim.models.linux_6_1 import Linux61
from tcpsim.models.patches.shrink_window import ShrinkWindowSysctl
from tcpsim.policy import Profile


class Linux6159(ShrinkWindowSysctl, Linux61):
    """Linux 6.1.59: 6.1 plus the tcp_shrink_window sysctl."""

    RELEASE = "6.1.59"
    SYSCTLS = Linux61.SYSCTLS | {"tcp_shrink_window"}


PROFILE = Profile("linux-6.1.59", Linux6159,
                  "6.1.59: 6.1 with the tcp_shrink_window sysctl backported (default 0)")
