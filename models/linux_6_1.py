"""Linux 6.1 LTS as the seeds ran it (6.1.14, Cloudflare's 2023 reproducers).

Receive-path changes since 5.15 that a simulation can see: drop reasons on the data path
(skb:kfree_skb shows PROTO_MEM, TCP_ZEROWINDOW, ...), which tcpsim reports for every
profile; nothing else. The window never shrinks: there is no tcp_shrink_window yet (see
linux_6_1_59.py, or apply `--policy shrink-window`).
"""

from __future__ import annotations

from tcpsim.models.linux_5_15 import Linux515
from tcpsim.policy import Profile


class Linux61(Linux515):
    """Linux 6.1.14: 5.15's receive path."""

    RELEASE = "6.1"


PROFILE = Profile("linux-6.1", Linux61,
                  "6.1.14 (the seeds' kernel): adv_win_scale windows, never-shrink windows")
