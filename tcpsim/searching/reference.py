"""The reference a ratio objective divides by: what receive autotuning alone would give.

`rcvbuf_ratio` and `rmem_ratio` ask how far sk_rcvbuf (or sk_rmem_alloc) went past the
buffer that autotuning would have sized for the same workload. "Autotuning alone" is defined
by a run, not a formula: the same workload, kernel, patches and sysctls once more, with
`AutotuneOnly` on top. It removes the one path besides autotuning that raises sk_rcvbuf
without the application asking -- tcp_clamp_window()'s raise of sk_rcvbuf to the memory in
use (tcp_input.c:tcp_clamp_window [5.15, 6.1]; called from tcp_prune_queue), the ratchet of
Cloudflare's 2023 write-up -- and keeps everything else, so sk_rcvbuf there is set only by
tcp_rmem[1] at the start, by tcp_rcv_space_adjust()/tcp_rcvbuf_grow() (DRS, which sizes it
from what the application read per RTT) and by the out-of-order growth of 6.18.

Why a run and not the DRS formula: the formula's inputs (bytes copied per receiver RTT, the
receiver's RTT estimate, the scaling ratio, each era's growth term) come from the run
itself, and each era computes it differently (6.1's 2x-plus-cushion against 6.17's
tcp_rcvbuf_grow); running the era's own code without the clamp raise gives exactly that
era's number and needs no second model. The reference run's peak sk_rcvbuf is then the
largest buffer autotuning sized (tcp_rmem[1] when the reader never read enough to grow it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.policy import Patch

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class AutotuneOnly(Patch):
    """tcp_clamp_window() without its raise of sk_rcvbuf: the quick-ack exit and the cut of
    rcv_ssthresh to 2 * advmss when memory is still over are kept."""

    name = "autotune-only"
    summary = "reference for search ratios: tcp_clamp_window does not raise sk_rcvbuf"

    def clamp_window(self, sk: TcpSocket) -> None:
        before = sk.mem.sk_rcvbuf
        super().clamp_window(sk)  # type: ignore[safe-super]  # an era's, below this patch
        if sk.mem.sk_rcvbuf != before:
            sk.mem.sk_rcvbuf = before
            if sk.mem.sk_rmem_alloc > before:
                sk.rcv.rcv_ssthresh = min(sk.rcv.window_clamp, 2 * sk.conn.advmss)


def reference_spec() -> str:
    """The `--policy` spec of AutotuneOnly (this file, FILE.py:Class)."""
    return f"{__file__}:AutotuneOnly"
