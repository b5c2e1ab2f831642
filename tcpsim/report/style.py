"""Colours, symbols and sizes shared by every report figure.

Series colours follow Cloudflare's receive-buffer charts (skmem_rb purple, skmem_r blue,
Recv-Q green) so a reader of those posts recognises the lines. In a comparison each run
gets a colour of its own and series are told apart by dash instead.
"""

from __future__ import annotations

SERIES_COLORS: dict[str, str] = {
    "sk_rcvbuf": "#7b3294",          # skmem_rb
    "sk_rmem_alloc": "#1f77b4",      # skmem_r
    "recv_q": "#2ca02c",
    "advertised": "#ff7f0e",
    "rcv_ssthresh": "#8c564b",
    "window_clamp": "#7f7f7f",
    "delivered": "#2ca02c",
    "goodput": "#2ca02c",
    "wire": "#7f7f7f",
    "accepted": "#1f77b4",
    "snd_wnd": "#ff7f0e",
    "inflight": "#1f77b4",
    "coalesced": "#e377c2",
    "queued": "#17becf",
    "ofo": "#bcbd22",
}

SERIES_DASH: dict[str, str] = {
    "sk_rmem_alloc": "solid",
    "sk_rcvbuf": "dot",
    "recv_q": "dash",
    "advertised": "solid",
    "rcv_ssthresh": "dash",
    "window_clamp": "dot",
    "goodput": "solid",
    "wire": "dot",
    "snd_wnd": "dot",
    "inflight": "solid",
}

# kind -> (symbol, colour in a single-run report, size)
MARK_STYLE: dict[str, tuple[str, str, int]] = {
    "zero window": ("triangle-down", "#000000", 9),
    "drop": ("x", "#d62728", 9),
    "collapse": ("circle-open", "#d62728", 11),
    "prune": ("diamond-open", "#ff7f0e", 9),
    "retransmit": ("x-thin-open", "#d62728", 9),
    "RTO": ("star", "#000000", 10),
    "probe": ("triangle-up-open", "#9467bd", 9),
    "queued": ("line-ns-open", "#17becf", 8),
    "ofo": ("square-open", "#bcbd22", 7),
    "coalesced": ("line-ns-open", "#e377c2", 8),
    "autotune": ("triangle-right-open", "#7b3294", 8),
}

RUN_COLORS: tuple[str, ...] = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
)

FIG_HEIGHT = 360
ROW_HEIGHT = 210            # per run in small multiples
TEMPLATE = "plotly_white"
BYTES_FORMAT = "~s"         # 30M, 128k: SI prefixes on byte axes


def run_color(i: int) -> str:
    """Colour of the i-th run in a comparison."""
    return RUN_COLORS[i % len(RUN_COLORS)]
