"""Plotly figures of a run's story, for one run or several side by side.

Every figure function takes a list of `Run`s. With one run, series are told apart by
colour (Cloudflare's: skmem_rb purple, skmem_r blue, Recv-Q green). With several, each run
has a colour and series are told apart by dash; charts where overlaid runs would be
unreadable (windows, sender, segment dispositions) become small multiples, one row per run
on shared axes.

Long series are downsampled (tcpsim.report.downsample); marks are never dropped.
`report_charts()` returns the charts of a report in reading order.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tcpsim.report import extract, style
from tcpsim.report.downsample import DEFAULT_MAX_POINTS, MAX_MARKS, downsample, thin_marks
from tcpsim.report.extract import Marks, Series
from tcpsim.report.runs import Run
from tcpsim.report.tables import fmt_value
from tcpsim.report.trace import Trace
from tcpsim.report.summary import mark_label

PACKET_VIEW_MAX = 3000         # ingress packets: above this a run gets no per-packet chart
MARKS_ON_CURVE = 60            # more marks of a kind than this hide the curve: a density strip
DENSITY_BINS = 200             # time bins of a density strip
TIMELINE_KINDS = ("zero window", "drop", "collapse", "retransmit", "probe")
TIMELINE_IF_PRESENT = ("prune", "RTO", "autotune")


@dataclass
class Chart:
    """A figure with what the reader should look for; `time_axis` charts zoom together."""

    key: str
    fig: go.Figure
    note: str = ""
    time_axis: bool = True


# -- building blocks -------------------------------------------------------------------------

def line(s: Series, name: str, color: str, dash: str = "solid", group: str | None = None,
         showlegend: bool = True, max_points: int = DEFAULT_MAX_POINTS, width: float = 1.8,
         end_s: float | None = None) -> go.Scatter:
    """A state series as a line, downsampled to at most ~max_points points. A step series
    is held at its last value up to `end_s` (a state lasts until the run ends)."""
    idx = downsample(s.t, s.y, max_points, s.shape)
    x, y = s.t[idx], s.y[idx]
    if end_s is not None and s.shape == "hv" and len(x) and end_s > x[-1]:
        x, y = np.r_[x, end_s], np.r_[y, y[-1]]
    return go.Scatter(x=x, y=y, name=name, mode="lines", legendgroup=group,
                      showlegend=showlegend, line=dict(color=color, dash=dash, width=width,
                                                       shape=s.shape))


def marks_scatter(m: Marks, name: str, color: str | None = None, y: np.ndarray | None = None,
                  group: str | None = None, showlegend: bool = True,
                  max_marks: int = MAX_MARKS) -> go.Scatter:
    """Every mark of one kind as a marker (see downsample.thin_marks for the one case
    where marks are merged: more than `max_marks` of them)."""
    symbol, default_color, size = style.MARK_STYLE.get(m.kind, ("circle", "#000", 8))
    color = color or default_color
    ys = m.y if y is None else np.asarray(y)
    idx, counts = thin_marks(m.t, max_marks)
    if m.counts is not None:            # already one mark per time bin (a reduced trace)
        idx, counts = np.arange(len(m.t)), m.counts
    label = f"{name} ({len(m)})"
    if len(idx) < len(m):
        label = f"{name} ({len(m)}, merged per time bin)"
        text = [f"{m.kind}: {c} events from here" for c in counts]
    else:
        text = None if m.text is None else list(m.text)
    return go.Scatter(
        x=m.t[idx], y=ys[idx], name=label, mode="markers", legendgroup=group,
        showlegend=showlegend, text=text,
        hovertemplate=("%{text}" if text is not None else m.kind)
        + "<br>t=%{x:.6f} s<extra></extra>",
        marker=dict(symbol=symbol, color=color, size=size,
                    line=dict(width=1.5, color=color)))


def binary_ticks(lo: float, hi: float, log: bool = False,
                 max_ticks: int = 8) -> tuple[list[float], list[str]]:
    """Tick values and labels for a byte axis in binary units (B, KiB, MiB, GiB), which is
    how the kernel's limits are written (tcp_rmem[2] = 256 MiB): linear ticks at 1, 2 or 5
    x 10^k of one unit; log ticks at powers of two (every second or fourth one when the
    range is wide)."""
    hi = max(float(hi), 1.0)
    if log:
        lo = max(float(lo), 1.0)
        k0, k1 = int(np.floor(np.log2(lo))), int(np.ceil(np.log2(hi)))
        every = next(e for e in (1, 2, 4, 5, 10) if (k1 - k0) / e <= max_ticks + 1)
        vals = [float(2 ** k) for k in range(k0 - k0 % every, k1 + 1, every)]
    else:
        unit = next(u for u in (2 ** 30, 2 ** 20, 2 ** 10, 1) if hi >= u or u == 1)
        span = hi / unit
        step = next(m * 10 ** e for e in range(-1, 7) for m in (1, 2, 5)
                    if span / (m * 10 ** e) <= max_ticks - 1) * unit
        if unit > 1 and step < unit and hi < 2 * unit:      # below 2 units: the smaller unit
            unit //= 1024
            step = next(m * 10 ** e for e in range(0, 7) for m in (1, 2, 5)
                        if hi / unit / (m * 10 ** e) <= max_ticks - 1) * unit
        vals = [float(v) for v in np.arange(0, hi * 1.0001 + step, step)]
    return vals, [_binary_label(v) for v in vals]


def _binary_label(v: float) -> str:
    if v == 0:
        return "0"
    for unit, name in ((2 ** 30, "GiB"), (2 ** 20, "MiB"), (2 ** 10, "KiB")):
        if v >= unit:
            return f"{v / unit:g} {name}"
    return f"{v:g} B"


def _axis_extent(fig: go.Figure, axis: str) -> tuple[float, float] | None:
    """(lowest positive, highest) y value drawn on one y axis ("yaxis", "yaxis2", ...)."""
    ref = "y" + axis[5:]
    lo, hi = np.inf, -np.inf
    for tr in fig.data:
        if (getattr(tr, "yaxis", None) or "y") != ref or getattr(tr, "y", None) is None:
            continue
        y = np.asarray(tr.y, dtype=float) if len(tr.y) else np.zeros(0)
        y = y[np.isfinite(y)]
        if len(y):
            hi = max(hi, float(y.max()))
            pos = y[y > 0]
            if len(pos):
                lo = min(lo, float(pos.min()))
    return None if hi == -np.inf else (lo if lo != np.inf else 1.0, hi)


def _byte_axes(fig: go.Figure) -> list[str]:
    """The y axes that hold bytes: every y axis of a figure whose layout() said so
    (layout.meta["bytes"]), but a density strip's and those made plain since."""
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    if not meta.get("bytes"):
        return []
    plain = set(meta.get("plain", []))
    return [k for k in fig.layout.to_plotly_json() if k.startswith("yaxis") and k not in plain]


def _mark_plain(fig: go.Figure, axis: str) -> None:
    """Axis `axis` holds no bytes (a density strip, a packet-disposition strip)."""
    meta = dict(fig.layout.meta) if isinstance(fig.layout.meta, dict) else {}
    meta["plain"] = [*meta.get("plain", []), axis]
    fig.update_layout(meta=meta)


def apply_binary_ticks(fig: go.Figure, log: bool = False) -> go.Figure:
    """Binary-unit ticks on every byte axis of a finished figure (for its data's range)."""
    extent = _bytes_extent(fig)
    if extent is not None:
        vals, text = binary_ticks(*extent, log=log)
        for axis in _byte_axes(fig):
            fig.layout[axis].update(tickvals=vals, ticktext=text, tickformat=None)
    return fig


def _bytes_extent(fig: go.Figure) -> tuple[float, float] | None:
    """The extent of the data on all byte axes together (small multiples share them)."""
    found = [e for e in (_axis_extent(fig, a) for a in _byte_axes(fig)) if e is not None]
    if not found:
        return None
    return min(e[0] for e in found), max(e[1] for e in found)


def layout(fig: go.Figure, title: str, ytitle: str = "bytes", height: int = style.FIG_HEIGHT,
           bytes_axis: bool = True, xtitle: str = "time (s)") -> go.Figure:
    """Common layout: title, axis titles, compact margins, legend on the right."""
    # the title keeps to the left; plotly's toolbar (top right, on hover) has the top margin's
    # right end to itself, and the linear/log buttons sit below the legend
    fig.update_layout(template=style.TEMPLATE,
                      title=dict(text=title, x=0.01, xanchor="left", y=0.985, yanchor="top",
                                 yref="container", font=dict(size=15)),
                      height=height, margin=dict(l=70, r=20, t=56, b=40),
                      hovermode="closest", legend=dict(font=dict(size=11)))
    fig.update_xaxes(title_text=xtitle, showgrid=True)
    fig.update_yaxes(title_text=ytitle, tickformat=style.BYTES_FORMAT if bytes_axis else None,
                     rangemode="tozero")
    fig.update_layout(meta={"bytes": bytes_axis})
    return fig


def log_toggle(fig: go.Figure, log: bool = False) -> go.Figure:
    """Buttons (under the title, clear of plotly's toolbar and the legend) to switch every
    y axis between linear and log; byte axes get binary-unit ticks in both."""
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    axes = [k for k in fig.layout.to_plotly_json()
            if k.startswith("yaxis") and k not in meta.get("plain", [])] or ["yaxis"]
    byte_axes = set(_byte_axes(fig))

    def args(kind: str) -> dict:
        out: dict = {f"{a}.type": kind for a in axes}
        # log: a tick per power of ten (SI labels on minor ticks overlap); linear: automatic
        out.update({f"{a}.dtick": 1 if kind == "log" else None for a in axes})
        extent = _bytes_extent(fig)
        for a in byte_axes:
            if extent is not None:
                vals, text = binary_ticks(*extent, log=kind == "log")
                out.update({f"{a}.tickvals": vals, f"{a}.ticktext": text, f"{a}.dtick": None})
        return out
    # under the title at the left, in a top margin made for them: plotly's toolbar keeps the
    # right end of the margin, the legend the right of the plot
    fig.update_layout(margin=dict(t=max(84, fig.layout.margin.t or 0)), updatemenus=[dict(
        type="buttons", direction="right", x=0.0, xanchor="left", y=1.0, yanchor="bottom",
        showactive=True, active=1 if log else 0, pad=dict(b=6), font=dict(size=11),
        buttons=[dict(label="linear", method="relayout", args=[args("linear")]),
                 dict(label="log", method="relayout", args=[args("log")])])])
    if log:
        fig.update_yaxes(type="log", dtick=1)
    for a in byte_axes:
        fig.layout[a].update({k.split(".", 1)[1]: v for k, v in args("log" if log else "linear").items()
                              if k.startswith(a + ".") and k.split(".", 1)[1] != "type"})
    return fig


def time_range(fig: go.Figure, runs: Sequence[Run]) -> go.Figure:
    """Every time chart spans the whole run, from 0 to the end of the longest run."""
    fig.update_xaxes(range=[0, max(r.end_s for r in runs)])
    return fig


def _empty_bytes_axis(fig: go.Figure, peak: float) -> None:
    """With nothing to show, keep the byte axis at whole bytes (not 0.2 "m"illibytes)."""
    if peak <= 0:
        fig.update_yaxes(range=[0, 1024])


def _look(runs: Sequence[Run], i: int, key: str) -> tuple[str, str]:
    """(colour, dash) of series `key` of run i: by series alone, or by run then series."""
    if len(runs) == 1:
        return style.SERIES_COLORS[key], "solid"
    return style.run_color(i), style.SERIES_DASH.get(key, "solid")


def _width(runs: Sequence[Run], i: int, base: float = 1.8) -> float:
    """Earlier runs draw wider, so a later run lying on top of one leaves it visible."""
    return base if len(runs) == 1 else base + 1.6 * (len(runs) - 1 - i) / max(1, len(runs) - 1)


def _peak_note(fig: go.Figure, s: Series, text: str, color: str, end_s: float,
               nth: int = 0) -> None:
    """Label the highest point of a series (the label leans into the plot; the nth label
    of a figure sits a line lower than the one before, so labels of peaks close together
    do not print over each other)."""
    if not len(s.y):
        return
    k = int(np.argmax(s.y))
    lean = -40 if s.t[k] > end_s / 2 else 40
    fig.add_annotation(x=s.t[k], y=s.y[k], text=text, showarrow=True, arrowhead=0, ax=lean,
                       ay=-18 + 20 * nth, font=dict(size=11, color=color), arrowcolor=color,
                       xanchor="right" if lean < 0 else "left", bgcolor="rgba(255,255,255,0.8)")


def _name(runs: Sequence[Run], run: Run, series: str) -> str:
    return series if len(runs) == 1 else f"{run.label}: {series}"


def _multiples(runs: Sequence[Run], title: str, ytitle: str = "bytes",
               bytes_axis: bool = True) -> go.Figure:
    """One row per run on shared axes (a plain figure for one run)."""
    n = len(runs)
    if n == 1:
        return layout(go.Figure(), title, ytitle, bytes_axis=bytes_axis)
    fig = make_subplots(rows=n, cols=1, shared_xaxes=True, shared_yaxes=True,
                        vertical_spacing=min(0.08, 0.25 / n),
                        subplot_titles=[r.label for r in runs])
    layout(fig, title, ytitle, height=70 + style.ROW_HEIGHT * n, bytes_axis=bytes_axis)
    fig.update_xaxes(title_text=None)
    fig.update_xaxes(title_text="time (s)", row=n, col=1)
    fig.update_annotations(font=dict(size=12), x=0.0, xanchor="left")
    return fig


def _add(fig: go.Figure, trace: go.BaseTraceType, runs: Sequence[Run], i: int) -> None:
    if len(runs) == 1:
        fig.add_trace(trace)
    else:
        fig.add_trace(trace, row=i + 1, col=1)


# -- time charts --------------------------------------------------------------------------------

def twins(runs: Sequence[Run],
          columns: tuple[str, ...] = ("sk_rmem_alloc", "sk_rcvbuf")) -> dict[int, int]:
    """{i: j} for each run i whose receiver drew exactly what an earlier run j drew (the same
    `columns` at the same instants): a figure of those columns draws run j once, named for
    both, instead of hiding one under the other."""
    seen: dict[bytes, int] = {}
    out: dict[int, int] = {}
    for i, run in enumerate(runs):
        tr = run.trace
        idx = tr.rows(sock="rcv")
        h = hashlib.sha256()
        for col in ("t_ns", *columns):
            h.update(np.ascontiguousarray(tr.col(col)[idx]).tobytes())
        key = h.digest()
        if key in seen:
            out[i] = seen[key]
        else:
            seen[key] = i
    return out


def _merged_label(runs: Sequence[Run], i: int, same: dict[int, int]) -> str:
    """The label of run i, with the runs identical to it: "linux-6.1 = linux-6.18"."""
    return " = ".join([runs[i].label] + [runs[k].label for k, j in same.items() if j == i])


def _twin_note(fig: go.Figure, runs: Sequence[Run], same: dict[int, int],
               close: dict[int, int] | None = None) -> None:
    """Say in the legend (never over the plot) which runs are drawn once or lie on another."""
    notes = [f"{runs[k].label} is identical to {runs[j].label}: drawn once"
             for k, j in same.items()]
    notes += [f"{runs[k].label} lies on {runs[j].label} (within 1 %): dashed on top"
              for k, j in (close or {}).items()]
    for text in notes:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=text, hoverinfo="skip",
                                 line=dict(color="rgba(0,0,0,0)")))


def lying_on(runs: Sequence[Run], key: str = "sk_rmem_alloc", tol: float = 0.01,
             skip: Sequence[int] = ()) -> dict[int, int]:
    """{i: j} for each run i whose `key` series stays within `tol` of the figure's peak of an
    earlier run j's at every instant (on a common time grid): drawn solid, run i would hide
    run j, so it is drawn dashed on top."""
    grid = np.linspace(0, max(r.end_s for r in runs), 512)
    sampled = []
    for r in runs:
        s = extract.rcv_series(r.trace, key)
        if not len(s.t):
            sampled.append(None)
            continue
        k = np.clip(np.searchsorted(s.t, grid, side="right") - 1, 0, len(s.t) - 1)
        sampled.append(np.where(grid >= s.t[0], s.y[k], 0).astype(float))
    peak = max((float(y.max()) for y in sampled if y is not None), default=0.0) or 1.0
    out: dict[int, int] = {}
    for i, yi in enumerate(sampled):
        if yi is None or i in skip:
            continue
        for j in range(i):
            yj = sampled[j]
            if j not in skip and j not in out and yj is not None \
                    and np.max(np.abs(yi - yj)) <= tol * peak:
                out[i] = j
                break
    return out


def density_strip(fig: go.Figure, m: Marks, name: str, color: str | None, row: int,
                  end_s: float, group: str | None = None) -> None:
    """Many marks of one kind as a density strip in a band above the plot (its own axis, so
    it never covers a curve and ignores log scales): one tick per occupied time bin, darker
    where more events fell in the bin, the count in the legend and hover."""
    _, default_color, _ = style.MARK_STYLE.get(m.kind, ("circle", "#000", 8))
    color = color or default_color
    width = max(end_s, float(m.t[-1]) if len(m) else 0.0) / DENSITY_BINS or 1.0
    b = np.minimum((m.t / width).astype(np.int64), DENSITY_BINS - 1)
    bins, where = np.unique(b, return_inverse=True)
    counts = np.bincount(where, weights=m.counts).astype(np.int64) if m.counts is not None \
        else np.bincount(where)
    axis = "yaxis99"
    if axis not in fig.layout.to_plotly_json():
        fig.layout[axis] = dict(domain=[0.87, 1.0], anchor="x", range=[-0.5, 2.5], visible=False,
                                fixedrange=True)
        fig.layout["yaxis"].update(domain=[0.0, 0.84])
        _mark_plain(fig, axis)
    fig.add_trace(go.Scatter(
        x=(bins + 0.5) * width, y=np.full(len(bins), float(row % 3)), yaxis="y99",
        mode="markers", name=f"{name} ({len(m)}, density strip on top)", legendgroup=group,
        text=[f"{c} {m.kind} events in {fmt_value(width, 's')}" for c in counts],
        hovertemplate="%{text}<br>t≈%{x:.3f} s<extra></extra>",
        marker=dict(symbol="line-ns", size=7, opacity=0.25 + 0.75 * counts / counts.max(),
                    line=dict(width=2, color=color), color=color)))


def memory_figure(runs: Sequence[Run], max_points: int = DEFAULT_MAX_POINTS) -> go.Figure:
    """skmem_rb (sk_rcvbuf), skmem_r (sk_rmem_alloc) and, for one run, Recv-Q over time
    (several runs get Recv-Q in a chart of its own), with drops, collapses and prunes
    marked on skmem_r -- or, for a kind with more than MARKS_ON_CURVE events, counted in a
    density strip at the foot of the plot, so marks never hide the curve. Runs identical
    to an earlier one are drawn once, named for both."""
    fig = layout(go.Figure(), "Receive memory: skmem_r against its limit skmem_rb")
    series = [("sk_rcvbuf", "skmem_rb (sk_rcvbuf)"), ("sk_rmem_alloc", "skmem_r (sk_rmem_alloc)")]
    if len(runs) == 1:
        series.append(("recv_q", "Recv-Q"))
    end = max(r.end_s for r in runs)
    same = twins(runs) if len(runs) > 1 else {}
    close = lying_on(runs, skip=list(same)) if len(runs) > 1 else {}
    strips = 0
    for i, run in enumerate(runs):
        if i in same:
            continue
        tr, group, label = run.trace, run.label, _merged_label(runs, i, same)
        for key, name in series:
            color, dash = _look(runs, i, key)
            if i in close and key == "sk_rmem_alloc":
                dash = "dash"
            s = extract.rcv_series(tr, key)
            fig.add_trace(line(s, name if len(runs) == 1 else f"{label}: {name}", color, dash,
                               group, max_points=max_points, end_s=run.end_s,
                               width=_width(runs, i, 2.4 if key == "sk_rmem_alloc" else 1.4)))
            if key == "sk_rmem_alloc":
                peak = fmt_value(int(s.y.max()) if len(s.y) else 0, "bytes")
                _peak_note(fig, s, f"peak {peak}" if len(runs) == 1 else f"{label}: {peak}",
                           color, end, nth=i - len([k for k in same if k < i]))
        for m in (extract.drops(tr), extract.collapses(tr), extract.prunes(tr)):
            if not len(m):
                continue
            color = None if len(runs) == 1 else style.run_color(i)
            name = mark_label(m.kind) if len(runs) == 1 else f"{label}: {mark_label(m.kind)}"
            if len(m) > MARKS_ON_CURVE:
                density_strip(fig, m, name, color, strips, end, group)
                strips += 1
            else:
                fig.add_trace(marks_scatter(m, name, color, group=group))
    _twin_note(fig, runs, same, close)
    fig = log_toggle(fig)
    _legend_room(fig)
    return fig


def _legend_room(fig: go.Figure) -> None:
    """A figure tall enough for its legend (plotly scrolls a legend taller than the plot)."""
    entries = sum(1 for t in fig.data if t.showlegend is not False and t.name)
    groups = len({t.legendgroup for t in fig.data if t.legendgroup})
    margin = fig.layout.margin
    need = (margin.t or 84) + (margin.b or 40) + 22 * entries + 12 * groups + 30
    if need > (fig.layout.height or style.FIG_HEIGHT):
        fig.update_layout(height=need)


def recvq_figure(runs: Sequence[Run], max_points: int = DEFAULT_MAX_POINTS) -> go.Figure:
    """Recv-Q alone (bytes queued and unread), one line per run."""
    fig = layout(go.Figure(), "Recv-Q: bytes received and not yet read")
    same = twins(runs, ("recv_q",)) if len(runs) > 1 else {}
    for i, run in enumerate(runs):
        if i in same:
            continue
        fig.add_trace(line(extract.rcv_series(run.trace, "recv_q"), _merged_label(runs, i, same),
                           style.run_color(i), group=run.label, max_points=max_points,
                           end_s=run.end_s, width=_width(runs, i)))
    _twin_note(fig, runs, same)
    return log_toggle(fig)


def window_figure(runs: Sequence[Run], max_points: int = DEFAULT_MAX_POINTS) -> go.Figure:
    """The advertised window on the wire, rcv_ssthresh and window_clamp; zero windows
    marked at 0."""
    fig = _multiples(runs, "Receive window: advertised, rcv_ssthresh, window_clamp")
    for i, run in enumerate(runs):
        tr, first = run.trace, i == 0
        for s, key, label in ((extract.advertised_window(tr), "advertised", "advertised window"),
                              (extract.rcv_series(tr, "rcv_ssthresh"), "rcv_ssthresh", None),
                              (extract.rcv_series(tr, "window_clamp"), "window_clamp", None)):
            label = label or key
            dash = style.SERIES_DASH[key] if key != "advertised" else "solid"
            _add(fig, line(s, label, style.SERIES_COLORS[key], dash, key, first,
                           max_points, end_s=run.end_s), runs, i)
        zw = extract.zero_windows(tr)
        if len(zw) or len(runs) == 1:          # each run's count under its own name
            _add(fig, marks_scatter(zw, _name(runs, run, mark_label("zero window")),
                                    group=f"zero window {i}"), runs, i)
    return apply_binary_ticks(fig)


def delivery_figure(runs: Sequence[Run], max_points: int = DEFAULT_MAX_POINTS) -> go.Figure:
    """Bytes handed to the application so far."""
    fig = layout(go.Figure(), "Delivered to the application (cumulative bytes read)")
    peak = 0
    same = twins(runs, ("copied_seq",)) if len(runs) > 1 else {}
    for i, run in enumerate(runs):
        if i in same:
            continue
        color, _ = _look(runs, i, "delivered")
        d = extract.delivered(run.trace, run.end_s, run.bytes_read)
        peak = max(peak, int(d.y.max()) if len(d.y) else 0)
        name = "delivered" if len(runs) == 1 else f"{_merged_label(runs, i, same)}: delivered"
        fig.add_trace(line(d, name, color,
                           group=run.label, max_points=max_points, width=_width(runs, i)))
    _twin_note(fig, runs, same)
    _empty_bytes_axis(fig, peak)
    return log_toggle(fig)


def rate_figure(runs: Sequence[Run]) -> go.Figure:
    """Throughput on the wire (payload sent, retransmissions included) and goodput (bytes
    read by the application), per time bin. Log scale by default: a 1-byte reader next to a
    megabit sender."""
    width = extract.rate_width(max(r.end_s for r in runs))
    fig = layout(go.Figure(), f"Throughput on the wire and goodput (per {fmt_value(width, 's')})",
                 "bit/s", bytes_axis=False)
    fig.update_yaxes(tickformat="~s", rangemode="normal")
    for i, run in enumerate(runs):
        d = extract.delivered(run.trace, run.end_s, run.bytes_read)
        for s, key, label in ((extract.wire_rate(run.trace, width, run.end_s), "wire",
                               "sent on the wire"),
                              (extract.goodput(d, width, run.end_s), "goodput", "goodput")):
            color, dash = _look(runs, i, key)
            if len(runs) == 1 and key == "wire":
                dash = "solid"
            y = np.where(s.y > 0, s.y, np.nan)       # log scale: an empty bin is a gap
            fig.add_trace(go.Scatter(x=s.t, y=y, name=_name(runs, run, label),
                                     mode="lines+markers", legendgroup=run.label,
                                     connectgaps=False, marker=dict(size=3, color=color),
                                     line=dict(color=color, dash=dash, width=_width(runs, i, 1.6),
                                               shape="hvh")))
    return log_toggle(fig, log=True)


def sender_figure(runs: Sequence[Run], max_points: int = DEFAULT_MAX_POINTS) -> go.Figure:
    """The sender's side: the window it was given (snd_wnd), bytes in flight, and its
    retransmissions, RTOs and zero-window probes."""
    fig = _multiples(runs, "Sender: its window (snd_wnd), bytes in flight, "
                           "retransmissions, probes")
    for i, run in enumerate(runs):
        tr, first = run.trace, i == 0
        _add(fig, line(extract.sender_window(tr), "snd_wnd", style.SERIES_COLORS["snd_wnd"],
                       "solid", "snd_wnd", first, max_points, end_s=run.end_s), runs, i)
        _add(fig, line(extract.sender_inflight(tr), "in flight", style.SERIES_COLORS["inflight"],
                       "solid", "inflight", first, max_points, end_s=run.end_s), runs, i)
        for m in (extract.retransmissions(tr), extract.sender_timers(tr, "rto", "RTO"),
                  extract.sender_timers(tr, "probe", "probe")):
            if len(m):
                _add(fig, marks_scatter(m, _name(runs, run, mark_label(m.kind)),
                                        group=f"{m.kind} {i}"), runs, i)
    return apply_binary_ticks(fig)


def segments_figure(runs: Sequence[Run]) -> go.Figure:
    """Received data segments per bin: coalesced into the previous skb, queued as a new
    skb (each new skb costs a struct sk_buff of truesize), or out of order."""
    width = extract.rate_width(max(r.end_s for r in runs))
    fig = _multiples(runs, f"Received segments per {fmt_value(width, 's')}: coalesced vs "
                           "queued as a new skb", "segments", bytes_axis=False)
    fig.update_layout(barmode="stack", bargap=0)
    for i, run in enumerate(runs):
        for kind, s in extract.segment_counts(run.trace, width, run.end_s).items():
            if kind == "ofo" and not s.y.any():
                continue
            _add(fig, go.Bar(x=s.t, y=s.y, name=kind, legendgroup=kind, showlegend=i == 0,
                             marker=dict(color=style.SERIES_COLORS[kind], line=dict(width=0)),
                             width=width), runs, i)
    return fig


def timeline_figure(runs: Sequence[Run]) -> go.Figure:
    """Every rare event on one strip per kind (and run): when zero windows, drops,
    collapses, retransmissions and probes happened. An empty row says 'never'."""
    per_run = [extract.all_marks(r.trace) for r in runs]
    kinds = list(TIMELINE_KINDS) + [k for k in TIMELINE_IF_PRESENT
                                    if any(len(m[k]) for m in per_run)]
    cats: list[str] = []
    fig = go.Figure()
    for kind in kinds:
        if len(runs) > 1 and not any(len(marks[kind]) for marks in per_run):
            cats.append(f"{mark_label(kind)}: none in any run")
            continue
        for i, (run, marks) in enumerate(zip(runs, per_run)):
            m = marks[kind]
            name = mark_label(kind)
            cat = f"{name} ({len(m)})" if len(runs) == 1 else f"{run.label} · {name} ({len(m)})"
            cats.append(cat)
            color = None if len(runs) == 1 else style.run_color(i)
            row = -float(len(cats) - 1)          # numeric rows: compact, first on top
            if len(m) > MARKS_ON_CURVE:          # a density row: one tick per time bin
                fig.add_trace(_density_row(m, cat, color, row, max(r.end_s for r in runs)))
            else:
                fig.add_trace(marks_scatter(m, cat, color, y=np.full(len(m), row),
                                            showlegend=False))
    height = 90 + 22 * len(cats)
    layout(fig, "Events: zero windows, drops, collapses (receiver); retransmissions, "
                "probes (sender)", "", height=height, bytes_axis=False)
    fig.update_yaxes(tickvals=[-float(k) for k in range(len(cats))], ticktext=cats,
                     range=[-len(cats) + 0.5, 0.5], rangemode=None, showgrid=True,
                     zeroline=False, tickfont=dict(size=11), fixedrange=True)
    return fig


def _density_row(m: Marks, name: str, color: str | None, row: float,
                 end_s: float) -> go.Scatter:
    """A row of the event strip for a kind too frequent to mark one by one: one tick per
    occupied time bin, darker where the bin holds more events, the count in the hover."""
    _, default_color, _ = style.MARK_STYLE.get(m.kind, ("circle", "#000", 8))
    color = color or default_color
    width = max(end_s, float(m.t[-1])) / DENSITY_BINS or 1.0
    b = np.minimum((m.t / width).astype(np.int64), DENSITY_BINS - 1)
    bins, where = np.unique(b, return_inverse=True)
    counts = np.bincount(where, weights=m.counts).astype(np.int64) if m.counts is not None \
        else np.bincount(where)
    return go.Scatter(x=(bins + 0.5) * width, y=np.full(len(bins), row), mode="markers",
                      name=name, showlegend=False,
                      text=[f"{c} {m.kind} events in {fmt_value(width, 's')}" for c in counts],
                      hovertemplate="%{text}<br>t≈%{x:.3f} s<extra></extra>",
                      marker=dict(symbol="line-ns", size=14, color=color,
                                  opacity=0.25 + 0.75 * counts / counts.max(),
                                  line=dict(width=2, color=color)))


# -- per-packet chart (short fills) -------------------------------------------------------------

def packet_figure(run: Run, max_packets: int = PACKET_VIEW_MAX) -> go.Figure | None:
    """Receiver state per ingress packet (Cloudflare's fill charts), with dispositions
    below: coalesced, queued as a new skb, out of order, dropped. None for runs of more
    than `max_packets` ingress packets."""
    tr = run.trace
    if tr.reduced is not None:          # millions of rows: far more packets than drawn here
        return None
    ing = tr.rows(sock="rcv", event=("rx", "drop"))
    if not 0 < len(ing) <= max_packets:
        return None
    x = np.arange(1, len(ing) + 1)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.78, 0.22],
                        vertical_spacing=0.04)
    for key, label in (("sk_rcvbuf", "skmem_rb"), ("sk_rmem_alloc", "skmem_r"),
                       ("recv_q", "Recv-Q"), ("rcv_wnd", "rcv_wnd (advertised)"),
                       ("rcv_ssthresh", "rcv_ssthresh"), ("window_clamp", "window_clamp")):
        color = style.SERIES_COLORS.get(key, style.SERIES_COLORS["advertised"])
        dash = "solid" if key in ("sk_rcvbuf", "sk_rmem_alloc", "recv_q", "rcv_wnd") \
            else style.SERIES_DASH[key]
        fig.add_trace(go.Scatter(x=x, y=tr.col(key)[ing], name=label, mode="lines",
                                 line=dict(color=color, dash=dash, shape="hv")), row=1, col=1)
    _packet_marks(fig, tr, ing, x)
    layout(fig, f"Per ingress packet: {run.label}", height=520, xtitle="")
    fig.update_xaxes(title_text="ingress packet number", row=2, col=1)
    fig.update_yaxes(title_text=None, tickformat=None, rangemode=None, row=2, col=1)
    _mark_plain(fig, "yaxis2")
    return apply_binary_ticks(fig)


def _packet_marks(fig: go.Figure, tr: Trace, ing: np.ndarray, x: np.ndarray) -> None:
    """Dispositions in the lower strip, drops/collapses/zero windows on the upper plot."""
    detail = tr.text("detail").take(ing)
    event = tr.text("event").take(ing)
    kinds = {"coalesced": (event == "rx") & (detail == "coalesced"),
             "queued": (event == "rx") & (detail == "queued"),
             "ofo": (event == "rx") & np.isin(detail, ["ofo", "ofo coalesced"]),
             "drop": event == "drop"}
    for kind, sel in kinds.items():
        if not sel.any():
            continue
        symbol, color, size = style.MARK_STYLE[kind]
        fig.add_trace(go.Scatter(x=x[sel], y=[kind] * int(sel.sum()), mode="markers",
                                 name=kind, showlegend=kind in ("coalesced", "queued"),
                                 marker=dict(symbol=symbol, color=color, size=size,
                                             line=dict(width=2, color=color))), row=2, col=1)
    rmem = tr.col("sk_rmem_alloc")[ing]
    drop = event == "drop"
    if drop.any():
        fig.add_trace(go.Scatter(x=x[drop], y=rmem[drop], mode="markers", name="drop",
                                 text=list(tr.text("drop_reason").take(ing[drop])),
                                 marker=dict(symbol="x", color="#d62728", size=10)), row=1, col=1)
    # collapses and zero windows are not ingress rows: place them after the packet before
    for kind, rows in (("collapse", tr.rows(sock="rcv", event="collapse")),
                       ("zero window", _zero_window_rows(tr))):
        if len(rows):
            pos = np.searchsorted(ing, rows)          # ingress packets before the event
            y = rmem[np.maximum(pos - 1, 0)] if kind == "collapse" else np.zeros(len(rows))
            symbol, color, size = style.MARK_STYLE[kind]
            fig.add_trace(go.Scatter(x=np.maximum(pos, 1), y=y, mode="markers", name=kind,
                                     marker=dict(symbol=symbol, color=color, size=size + 2,
                                                 line=dict(width=2, color=color))), row=1, col=1)


def _zero_window_rows(tr: Trace) -> np.ndarray:
    idx = tr.rows(sock="rcv", event="tx")
    idx = idx[tr.col("win_raw")[idx] == 0]
    return idx[~tr.text("flags").contains("S")[idx]]


# -- the report's charts -----------------------------------------------------------------------

def report_charts(runs: Sequence[Run], max_points: int = DEFAULT_MAX_POINTS) -> list[Chart]:
    """All charts of a report (one run) or a comparison (several), in reading order."""
    packets = []
    for run in runs:
        fig = packet_figure(run)
        if fig is not None:
            packets.append(Chart(f"packets-{run.label}", fig,
                                 "Receiver state after each ingress packet, as in Cloudflare's "
                                 "fill charts; the strip below shows how each was stored.",
                                 time_axis=False))
    charts = [
        Chart("memory", memory_figure(runs, max_points),
              "skmem_r (solid) is what the socket holds; skmem_rb (dotted) is the limit. "
              "When skmem_rb follows skmem_r up, the limit is not limiting. Buttons switch to "
              "a log scale."),
        Chart("events", timeline_figure(runs),
              "One strip per kind of event; the count is in brackets. An empty strip means "
              "it never happened."),
        *packets,                  # short fills: the per-packet story comes early
        *([Chart("recvq", recvq_figure(runs, max_points),
                 "Bytes received and not yet read, per run.")] if len(runs) > 1 else []),
        Chart("window", window_figure(runs, max_points),
              "The window the receiver put on the wire, with the soft (rcv_ssthresh) and hard "
              "(window_clamp) limits; triangles at 0 are zero-window advertisements."),
        Chart("delivery", delivery_figure(runs, max_points),
              "Bytes the application has read (copied_seq)."),
        Chart("rates", rate_figure(runs),
              "Payload sent by the sender per bin (retransmissions included) and bytes read "
              "by the application per bin; log scale by default."),
        Chart("sender", sender_figure(runs, max_points),
              "What the sender saw: the window it may fill and what it has in flight."),
        Chart("segments", segments_figure(runs),
              "How each data segment was stored: appended to the previous skb (coalesced, "
              "cheap) or queued as a new skb (a new struct sk_buff)."),
    ]
    for chart in charts:
        if chart.time_axis:
            time_range(chart.fig, runs)
    return charts
