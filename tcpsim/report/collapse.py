"""Collapse latency: how long each receive-queue collapse took (a hook, waiting for data).

The collapse cost model is being added to the core: it will record, on each 'collapse'
row, the time the collapse would have taken on a real machine, in a `collapse_ns` column.
Until then no trace has that column and the report shows a placeholder saying so. When
the column appears, `collapse_latencies()` reads it and `collapse_figure()` draws a
histogram per run -- nothing else in the report needs to change.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from tcpsim.report import style
from tcpsim.report.runs import Run
from tcpsim.report.trace import Trace

COLUMN = "collapse_ns"


def collapse_latencies(tr: Trace) -> np.ndarray | None:
    """Collapse durations in microseconds, or None if the trace has no `collapse_ns`.

    Rows with event 'collapse' are used when there are any; otherwise every row with a
    known (>= 0) cost, so a model that puts the cost on another row still shows up."""
    if not tr.has(COLUMN):
        return None
    cost = tr.col(COLUMN)
    idx = tr.rows(sock="rcv", event="collapse")
    if not len(idx):
        idx = np.flatnonzero(cost >= 0)
    cost = cost[idx]
    return cost[cost >= 0] / 1e3


def collapse_figure(runs: Sequence[Run]) -> go.Figure | None:
    """Histogram of collapse latency per run, or None when no run has a collapse timed."""
    data = [(i, r, collapse_latencies(r.trace)) for i, r in enumerate(runs)]
    if all(d is None or not len(d) for _, _, d in data):
        return None
    fig = go.Figure()
    for i, run, lat in data:
        if lat is None:
            continue
        fig.add_trace(go.Histogram(x=lat, name=f"{run.label} ({len(lat)})", opacity=0.65,
                                   marker=dict(color=style.run_color(i))))
    fig.update_layout(template=style.TEMPLATE, barmode="overlay", height=style.FIG_HEIGHT,
                      title=dict(text="Collapse latency (time spent in each tcp_collapse)", x=0.01),
                      margin=dict(l=70, r=20, t=48, b=40))
    fig.update_xaxes(title_text="microseconds")
    fig.update_yaxes(title_text="collapses")
    return fig


PLACEHOLDER = ("Collapse latency: these traces have no <code>collapse_ns</code> column "
               "(recorded before the collapse cost model, or captured from a kernel, which does "
               "not time its collapses).")
NONE_HAPPENED = "Collapse latency: no run collapsed its queues."
