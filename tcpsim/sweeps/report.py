"""`tcpsim sweep report RESULTS`: one self-contained HTML page of a sweep (plotly.js inline,
no network): a metric against one axis with a line per combination of the other axes, a
heatmap of a metric over two axes (one per combination of the rest), and the table.

Seeds are not an axis of the charts: a point of a chart is the mean over the seeds (the
hover says over how many). Axis steps keep the grid's order, so a log-spaced range reads
as a log axis. Menus switch the metric, the heatmap's slice and the y scale.
"""

from __future__ import annotations

import html
import itertools
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from tcpsim.report.html import plotly_js_name, write_plotly_js

from tcpsim.report.html import CSS, PLOTLY_CONFIG
from tcpsim.sweeps.dataset import Results, label

MAX_HEATMAP_SLICES = 48
DASHES = ("solid", "dash", "dot", "dashdot")
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
           "#e377c2", "#7f7f7f", "#bcbd22")


class ReportError(ValueError):
    """The results directory cannot be reported on (named, with the fix)."""


class Dim:
    """A charted axis: its name, its steps in grid order, how a row names its step."""

    def __init__(self, meta: dict[str, Any]) -> None:
        self.name: str = meta["key"]
        self.fields: list[str] = meta["fields"]
        self.labels: list[str] = meta["labels"]

    def of(self, row: dict[str, Any]) -> str:
        return "/".join(label(row.get(f)) for f in self.fields)


def load(root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The sweep's metadata and its stored rows (grid order)."""
    res = Results(root)
    meta = res.meta()
    if not meta:
        raise ReportError(f"{root}: not a sweep results directory (no sweep.json); give the "
                          "directory a sweep wrote (--results, default sweeps/NAME)")
    rows = res.read_rows(meta.get("points", []))
    ordered = [rows[h] for h in meta["points"] if h in rows]
    if not ordered:
        raise ReportError(f"{root}: no finished point stored yet; run the sweep first")
    return meta, ordered


def write_report(root: Path, out: Path | None = None, metrics: list[str] | None = None,
                 x: str | None = None) -> Path:
    """Write the page; returns its path."""
    meta, rows = load(Path(root))
    dims = [Dim(a) for a in meta["axes"] if len(a["labels"]) > 1 and a["key"] != "seed"]
    chosen = list(metrics or meta.get("metrics") or [])
    numeric = [k for k, v in rows[0].items() if _is_number(v)]
    for m in chosen:
        if m not in rows[0]:
            raise ReportError(f"--metric {m}: not a column of {root}; use a summary field or "
                              "counter.NAME, e.g. peak_sk_rmem_alloc")
    chosen = chosen or ["peak_sk_rmem_alloc"]
    names = [d.name for d in dims]
    xname = x or meta.get("x") or (names[0] if names else "")
    xname = next((d.name for d in dims if xname in (d.name, *d.fields)), xname)
    if dims and xname not in names:
        raise ReportError(f"--x {x}: not a varied axis of this sweep; use one of {', '.join(names)}")
    out = Path(out) if out is not None else Path(root) / "report.html"
    parts = [_header(meta, rows, root)]
    if dims:
        xdim = next(d for d in dims if d.name == xname)
        others = [d for d in dims if d is not xdim]
        parts.append(_section("Each metric against " + xdim.name,
                              "A line per combination of " + (", ".join(d.name for d in others) or
                                                              "nothing else") + "; pick the metric above the chart.",
                              _lines(rows, chosen, xdim, others)))
        if others:
            parts.append(_section(f"Heatmap over {xdim.name} and {others[0].name}",
                                  "One heatmap per metric" + (" and combination of " + ", ".join(
                                      d.name for d in others[1:]) if others[1:] else "")
                                  + "; pick it above the chart.",
                                  _heatmaps(rows, chosen, xdim, others[0], others[1:])))
    parts.append(_table(rows, meta, chosen, numeric))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_plotly_js(out.parent)
    out.write_text(_page(meta.get("name") or Path(root).name, "\n".join(parts)))
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _mean(rows: list[dict[str, Any]], metric: str) -> tuple[float | None, int]:
    vals = [r[metric] for r in rows if _is_number(r.get(metric))]
    return (sum(vals) / len(vals), len(vals)) if vals else (None, 0)


def _combos(dims: list[Dim]) -> list[tuple[str, ...]]:
    return list(itertools.product(*(d.labels for d in dims)))


def _select(rows: list[dict[str, Any]], dims: list[Dim], combo: tuple[str, ...]) -> list[dict[str, Any]]:
    return [r for r in rows if all(d.of(r) == c for d, c in zip(dims, combo))]


def _lines(rows: list[dict[str, Any]], metrics: list[str], xdim: Dim, others: list[Dim]) -> go.Figure:
    fig = go.Figure()
    combos = _combos(others)
    # the last axis (e.g. policy: vanilla vs patched) by dash, the others by colour
    dashed = others[-1] if others and len(others[-1].labels) <= len(DASHES) else None
    colours: dict[tuple[str, ...], str] = {}
    for mi, metric in enumerate(metrics):
        for combo in combos:
            sub = _select(rows, others, combo)
            ys, ns = zip(*(_mean([r for r in sub if xdim.of(r) == xl], metric) for xl in xdim.labels))
            name = ", ".join(f"{d.name}={c}" for d, c in zip(others, combo)) or metric
            key = combo[:-1] if dashed else combo
            colour = colours.setdefault(key, PALETTE[len(colours) % len(PALETTE)])
            dash = DASHES[dashed.labels.index(combo[-1])] if dashed else "solid"
            fig.add_trace(go.Scatter(
                x=xdim.labels, y=list(ys), mode="lines+markers", name=name, visible=mi == 0,
                line=dict(color=colour, dash=dash),
                customdata=list(ns), legendgroup=name,
                hovertemplate=f"{xdim.name}=%{{x}}<br>{metric}=%{{y:,}}<br>{html.escape(name)}"
                              "<br>seeds: %{customdata}<extra></extra>"))
    per = len(combos)
    axes = {m: metric_axis(m, [r.get(m) for r in rows]) for m in metrics}
    buttons = [dict(label=m, method="update",
                    args=[{"visible": [i // per == mi for i in range(per * len(metrics))]},
                          {f"yaxis.{k}": v for k, v in _flat(axes[m]).items()}])
               for mi, m in enumerate(metrics)]
    if len(combos) > 1:
        fig.update_layout(legend_title_text=(f"solid/dashed: {dashed.name}" if dashed else "lines"))
    fig.update_layout(
        height=520, margin=dict(t=70, l=80, r=20, b=60), yaxis=axes[metrics[0]],
        xaxis_title=xdim.name, xaxis_type="category",
        updatemenus=[dict(buttons=buttons, x=0, y=1.16, xanchor="left", direction="down"),
                     _scale_menu()])
    return fig


def metric_unit(metric: str) -> str:
    """The unit of a sweep metric: a summary field's (bytes, count, s, bit/s), Mbit/s for
    goodput_mbps, a count for a counter."""
    from tcpsim.report.summary import FIELDS_BY_KEY
    f = FIELDS_BY_KEY.get(metric)
    if f is not None:
        return f.unit
    if metric.endswith("_mbps"):
        return "Mbit/s"
    if metric.endswith("_s"):
        return "s"
    if metric.endswith("_ms") or metric.endswith("_ms_max") or metric.endswith("_ms_total"):
        return "ms"
    if metric.startswith(("peak_", "final_")) or metric.startswith("bytes_"):
        return "bytes"
    return "count"


def metric_axis(metric: str, values: list[Any]) -> dict[str, Any]:
    """A y axis for `metric`: its name with its unit, and binary-unit ticks (KiB, MiB) for
    bytes."""
    unit = metric_unit(metric)
    out: dict[str, Any] = {"title": {"text": f"{metric} ({unit})"}}
    nums = [float(v) for v in values if _is_number(v)]
    if unit == "bytes" and nums:
        from tcpsim.report.figures import binary_ticks
        vals, text = binary_ticks(min(nums), max(nums))
        out.update(tickvals=vals, ticktext=text)
    else:
        out.update(tickvals=None, ticktext=None)
    return out


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _scale_menu() -> dict[str, Any]:
    return dict(type="buttons", direction="right", x=1, y=1.16, xanchor="right",
                buttons=[dict(label="linear y", method="relayout", args=[{"yaxis.type": "linear"}]),
                         dict(label="log y", method="relayout", args=[{"yaxis.type": "log"}])])


def _heatmaps(rows: list[dict[str, Any]], metrics: list[str], xdim: Dim, ydim: Dim,
              rest: list[Dim]) -> go.Figure:
    fig = go.Figure()
    slices = [(m, c) for m in metrics for c in _combos(rest)][:MAX_HEATMAP_SLICES]
    for i, (metric, combo) in enumerate(slices):
        sub = _select(rows, rest, combo)
        z = [[_mean([r for r in sub if xdim.of(r) == xl and ydim.of(r) == yl], metric)[0]
              for xl in xdim.labels] for yl in ydim.labels]
        fig.add_trace(go.Heatmap(
            x=xdim.labels, y=ydim.labels, z=z, visible=i == 0, colorscale="Viridis",
            texttemplate="%{z:.3s}", colorbar=dict(title=dict(text=f"{metric} ({metric_unit(metric)})", side="right")),
            hovertemplate=f"{xdim.name}=%{{x}}<br>{ydim.name}=%{{y}}<br>{metric}=%{{z:,}}<extra></extra>"))
    buttons = [dict(label=" ".join([m, *(f"{d.name}={c}" for d, c in zip(rest, combo))]),
                    method="update",
                    args=[{"visible": [j == i for j in range(len(slices))]}])
               for i, (m, combo) in enumerate(slices)]
    fig.update_layout(height=460, margin=dict(t=70, l=110, r=20, b=60), xaxis_title=xdim.name,
                      yaxis_title=ydim.name, xaxis_type="category", yaxis_type="category",
                      updatemenus=[dict(buttons=buttons, x=0, y=1.18, xanchor="left", direction="down")])
    return fig


def _header(meta: dict[str, Any], rows: list[dict[str, Any]], root: Path) -> str:
    title = html.escape(meta.get("name") or Path(root).name)
    desc = html.escape(meta.get("description") or "")
    axes = "; ".join(f"{html.escape(a['key'])}: {html.escape(', '.join(a['labels']))}"
                     for a in meta["axes"])
    total = len(meta.get("points", []))
    return (f"<h1>Sweep: {title}</h1>" + (f"<p class='desc'>{desc}</p>" if desc else "")
            + f"<p class='meta'>{len(rows)} of {total} points stored in {html.escape(str(root))}; "
              f"tcpsim {html.escape(str(meta.get('tcpsim', '')))}, engine "
              f"{html.escape(str(meta.get('engine', '')))}</p><p class='meta'>axes: {axes}</p>")


def _section(title: str, note: str, fig: go.Figure) -> str:
    body = fig.to_html(full_html=False, include_plotlyjs=False, config=PLOTLY_CONFIG)
    return f"<h2>{html.escape(title)}</h2><p class='desc'>{html.escape(note)}</p>{body}"


def _table(rows: list[dict[str, Any]], meta: dict[str, Any], metrics: list[str],
           numeric: list[str]) -> str:
    axis_cols = [f for a in meta["axes"] for f in a["fields"]]
    cols = axis_cols + [m for m in metrics if m not in axis_cols] + ["error"]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = []
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c)
            text = f"{v:,}" if c in numeric and _is_number(v) else ("" if v is None else str(v))
            cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<h2>Every point</h2><p class='desc'>{len(rows)} rows; all columns are in the "
            "Parquet files (points/*.parquet).</p><table><thead><tr>" + head + "</tr></thead><tbody>"
            + "\n".join(body) + "</tbody></table>")


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>tcpsim sweep: {html.escape(title)}</title><style>{CSS}</style>"
            f"<script type='text/javascript' src='{plotly_js_name()}'></script></head><body>"
            f"{body}</body></html>\n")


