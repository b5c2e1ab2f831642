"""The kernel-vs-model overlay as one self-contained HTML page (plotly, inlined)."""

from __future__ import annotations

import html
from pathlib import Path

from tcpsim.validate.scores import Score
from tcpsim.validate.trace import TraceView

MAX_POINTS = 4000
PANELS = (("sk_rmem_alloc", "sk_rmem_alloc (bytes)"), ("sk_rcvbuf", "sk_rcvbuf (bytes)"),
          ("win", "advertised window (bytes)"), ("ack_seq", "acknowledged (bytes, ack_seq)"))
COLORS = {"kernel": "#1f77b4", "model": "#d62728"}


def _thin(t: list[int], v: list[int], end: int) -> tuple[list[float], list[int]]:
    """At most MAX_POINTS points up to `end` (every k-th, last one kept), times in seconds."""
    n = next((i for i, x in enumerate(t) if x > end), len(t))
    step = max(1, n // MAX_POINTS)
    idx = list(range(0, n, step))
    if n and idx[-1] != n - 1:
        idx.append(n - 1)
    return [t[i] / 1e9 for i in idx], [v[i] for i in idx]


def figure(score: Score, k: TraceView, m: TraceView):
    """Four stacked panels, kernel and model on the same axes (kernel time axis)."""
    from plotly.subplots import make_subplots
    import plotly.graph_objects as go

    fig = make_subplots(rows=len(PANELS), cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        subplot_titles=[title for _, title in PANELS])
    end = score.window_ns[1]
    for label, v in (("kernel", k), ("model", m)):
        for row, (name, _) in enumerate(PANELS, start=1):
            if name == "win":
                t, y = [a.t_ns for a in v.acks], [a.win for a in v.acks]
            elif name == "ack_seq":
                t, y = [a.t_ns for a in v.acks], [a.ack_seq for a in v.acks]
            else:
                t, y = v.state[name].t, v.state[name].v
            x, y = _thin(t, y, end)
            fig.add_trace(go.Scattergl(x=x, y=y, name=label, legendgroup=label,
                                       showlegend=row == 1, mode="lines",
                                       line={"shape": "hv", "color": COLORS[label], "width": 1.2}),
                          row=row, col=1)
    if score.scored_end_ns != end:
        for row in range(1, len(PANELS) + 1):
            fig.add_vline(x=score.scored_end_ns / 1e9, line_dash="dot", line_color="grey",
                          row=row, col=1)
    verdict = "PASS" if score.passed else "FAIL"
    fig.update_layout(title=f"{score.name}: kernel {score.info.get('kernel', '?')} vs model "
                            f"{score.profile} — {verdict}",
                      height=220 * len(PANELS) + 80, hovermode="x unified",
                      margin={"l": 70, "r": 20, "t": 80, "b": 40})
    fig.update_xaxes(title_text="time since the capture started (s)", row=len(PANELS), col=1)
    return fig


def write_html(path: str | Path, items: list[tuple[Score, TraceView, TraceView, str]]) -> Path:
    """One page: for each trace its overlay figure and its text report."""
    import plotly.io as pio

    parts = []
    for i, (score, k, m, report) in enumerate(items):
        fig_html = pio.to_html(figure(score, k, m), include_plotlyjs=(i == 0), full_html=False)
        parts.append(f"<section><h2>{html.escape(score.name)}</h2>{fig_html}"
                     f"<pre>{html.escape(report)}</pre></section>")
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>tcpsim validate</title>"
            "<style>body{font-family:sans-serif;margin:1em 2em} pre{font-size:12px}</style>"
            "</head><body><h1>tcpsim validate: kernel traces vs the model</h1>"
            + "".join(parts) + "</body></html>")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page)
    return out
