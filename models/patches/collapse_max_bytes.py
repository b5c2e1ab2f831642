"""Cloudflare's tcp_collapse_max_bytes (out of tree, 2022): no collapse above a threshold.

"tcp: Add a sysctl to skip tcp collapse processing when the receive buffer is full"
(mfreemon@cloudflare.com, 2022-03-01; reconstructed in receive-path.md §11.2). Collapsing
copies the whole queue into fresh linear skbs -- a latency spike proportional to the bytes
queued (about 2 ms for 6 MiB). With the sysctl set, tcp_prune_queue() collapses only while
sk_rmem_alloc is below it; above it the incoming segment is usually dropped instead
(RcvPruned), and the tracepoint tcp:tcp_collapse_max_bytes_exceeded fires.
Cloudflare's production value: 6 MiB (the default of this patch; set 0 for stock behaviour).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.skb import Skb
from tcpsim.core.sysctl import SysctlSpec
from tcpsim.policy import Patch

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class CollapseMaxBytes(Patch):
    """Skip tcp_collapse_ofo_queue()/tcp_collapse() above net.ipv4.tcp_collapse_max_bytes."""

    name = "collapse-max-bytes"
    summary = "Cloudflare's tcp_collapse_max_bytes: drop instead of collapsing big queues (6 MiB)"
    new_sysctls = (SysctlSpec("tcp_collapse_max_bytes", default=6 << 20, lo=0, hi=2**31 - 1,
                              doc="collapse only while sk_rmem_alloc is below it; 0 = always"),)
    counters = {"TCPCollapseMaxBytesExceeded":
                "collapse skipped above tcp_collapse_max_bytes (Cloudflare patch)"}

    def collapse(self, sk: TcpSocket, skb: Skb) -> None:
        """tcp_prune_queue() with the patch: collapse only below the threshold."""
        limit = sk.sysctl.tcp_collapse_max_bytes
        if limit and sk.mem.sk_rmem_alloc > limit:
            sk.mib.TCPCollapseMaxBytesExceeded += 1
            sk.trace("collapse", "skipped: tcp_collapse_max_bytes exceeded")
            return
        super().collapse(sk, skb)


PATCH = CollapseMaxBytes
