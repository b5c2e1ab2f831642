"""The report of a host run (docs/hosts.md): what the host's TCP memory did and what each
class of connections got, for one run or several side by side (a kernel against another, a
policy against none).

A host run here is its outputs as `HostResult.as_json()` gives them (tcpsim/host/outputs.py)
-- the same document a host trace holds (its sockstat rows, its metadata: `host_doc`), so a
report is the same whether it is written by `tcpsim run HOST --report`, from a host trace by
`tcpsim report`, or by `tcpsim compare HOST`:

    memory      sockstat `mem` over time against tcp_mem[0..2], the intervals the host spent
                under memory pressure shaded in the run's colour; with a memory cgroup
                (`[memcg]`) its usage and limit too, and its numbers in their own table
    classes     per class (a column each) and per run (a bar each): goodput, read latency
                (the class's byte-weighted mean; the worst connection's as a tick), drops,
                zero windows sent -- "what the bad ones cost the good ones"
    sweep       (several runs differing in one field, e.g. class.bad.count) the host's time
                in pressure and peak sockstat mem, and each class's goodput and drops, against
                the field: where the host tips

The page reads as the single-connection reports do (tcpsim/report/html.py): title, runs,
summary table with deltas against the first run, charts, the host's nstat; plotly.js is
written once beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tcpsim.core.constants import PAGE_SIZE
from tcpsim.report import html as h
from tcpsim.report import style
from tcpsim.report.figures import Chart, layout
from tcpsim.report.tables import Row, make_row

# (key in a class row, title, unit of the table, axis title)
CLASS_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("goodput_mbps", "goodput", "", "Mbit/s"),
    ("read_latency_ms", "read latency (mean; tick: worst connection)", "", "ms"),
    ("drops", "drops", "count", "segments"),
    ("zero_windows_sent", "zero windows sent", "count", "windows"),
)
# the per-class table rows: (key, label, unit, hint)
CLASS_ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("connections", "connections opened", "count", "over the run, churn included"),
    ("delivered_bytes", "delivered", "bytes", "bytes the applications read"),
    ("goodput_mbps", "goodput, Mbit/s", "", "delivered bits over the run"),
    ("read_latency_ms", "read latency, ms", "", "how long a byte waited in the receive "
     "queue (byte-weighted mean)"),
    ("read_latency_ms_max", "worst connection's read latency, ms", "", ""),
    ("drops", "drops", "count", "TCPRcvQDrop + TCPOFODrop + TCPZeroWindowDrop + BeyondWindow"),
    ("zero_windows_sent", "zero windows sent", "count", "TcpExtTCPToZeroWindowAdv"),
    ("prunes", "prunes", "count", "TcpExtPruneCalled"),
    ("collapsed", "skbs collapsed", "count", "TcpExtTCPRcvCollapsed"),
    ("peak_sk_rmem_alloc", "peak sk_rmem_alloc", "bytes", "of any one connection"),
)
HOST_ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("onset_s", "memory pressure onset", "s", "first sample under pressure (none: never)"),
    ("in_pressure_ms", "time in memory pressure, ms", "count", "the ongoing episode included"),
    ("peak_sockstat_mem", "peak sockstat mem, pages", "count", "sk_memory_allocated"),
    ("peak_inuse", "peak sockstat inuse", "count", "open TCP sockets of the host"),
)
MEMCG_HINTS = {
    "refused_charges": "socket charges the cgroup refused",
    "socket_pressure_entries": "times the cgroup put its sockets under pressure",
    "socket_pressure_ms": "time its sockets spent under the cgroup's pressure",
    "peak_usage_pages": "the cgroup's peak usage, pages",
}
TCP_MEM_NAMES = ("tcp_mem[0] (min)", "tcp_mem[1] (pressure)", "tcp_mem[2] (max)")
TCP_MEM_DASH = ("dot", "dash", "solid")


@dataclass
class HostRun:
    """One host run in a report: its label and its outputs (`HostResult.as_json()`)."""

    label: str
    doc: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.doc.get("host", ""))

    @property
    def classes(self) -> list[str]:
        return [c["class"] for c in self.doc.get("classes", [])]

    @property
    def tcp_mem(self) -> list[int] | None:
        return (self.doc.get("pressure") or {}).get("tcp_mem")

    @property
    def memcg(self) -> dict[str, Any] | None:
        """The memory cgroup's end-of-run numbers (outputs.memcg_result), None without one."""
        m = self.doc.get("memcg")
        return dict(m) if m else None

    @property
    def memcg_limit_pages(self) -> int | None:
        """The cgroup's limit in pages: v1's memory.kmem.tcp.limit_in_bytes, v2's memory.max
        (whose usage counts the cgroup's other memory too)."""
        m = self.memcg
        if not m:
            return None
        limit = m.get("memory.kmem.tcp.limit_in_bytes", m.get("memory.max"))
        return None if limit is None else int(limit) // PAGE_SIZE

    @property
    def base_profile(self) -> str:
        """The kernel profile without the patches ("linux-6.1")."""
        return str((self.doc.get("config") or {}).get("profile") or self.doc.get("profile", ""))

    @property
    def policies(self) -> list[str]:
        return list((self.doc.get("config") or {}).get("policies") or [])


def host_run(label: str, result: Any) -> HostRun:
    """A HostRun of a HostResult or of its `as_json()` document."""
    doc = result.as_json() if hasattr(result, "as_json") else dict(result)
    return HostRun(label, json.loads(json.dumps(doc)))


def run_label(doc: Mapping[str, Any]) -> str:
    """How a run is named by default: its profile and patches ("linux-6.1 + shrink-window")."""
    cfg = doc.get("config") or {}
    return " + ".join([str(cfg.get("profile") or doc.get("profile", "?")),
                       *(cfg.get("policies") or [])])


# -- the host trace ---------------------------------------------------------------------------

def is_host_trace(meta: Mapping[bytes, bytes] | None) -> bool:
    """A Parquet file's key-value metadata is a host trace's (write_host_trace)."""
    return bool(meta) and b"tcpsim" in meta and b"scenario" not in meta  # type: ignore[operator]


def host_file_kind(path: str | Path) -> str | None:
    """"trace" for a host trace, "connections" for its per-connection table
    (HOST.connections.parquet), None for anything else (a connection's trace included)."""
    import pyarrow.parquet as pq
    try:
        schema = pq.read_schema(path)
    except Exception:          # not Parquet, missing: the trace reader says why
        return None
    if is_host_trace(schema.metadata):
        return "trace"
    if {"index", "cls", "q_area", "read_bytes"} <= set(schema.names):
        return "connections"
    return None


def host_doc(path: str | Path) -> dict[str, Any]:
    """A host trace (`tcpsim run HOST --trace`) as the document `as_json()` gives: its
    metadata and its sockstat rows. ValueError: not a host trace."""
    import pyarrow.parquet as pq
    f = pq.ParquetFile(path)
    meta = f.schema_arrow.metadata or {}
    if not is_host_trace(meta):
        raise ValueError(f"{path}: not a host trace (tcpsim run HOST --trace writes one)")
    doc = json.loads(meta[b"tcpsim"])
    t = f.read(columns=["t_ns", "inuse", "mem", "pressure"]).to_pydict()
    doc["sockstat"] = [{"t_s": tn / 1e9, "inuse": i, "mem": m, "pressure": p}
                       for tn, i, m, p in zip(t["t_ns"], t["inuse"], t["mem"], t["pressure"])]
    return doc


# -- figures ----------------------------------------------------------------------------------

def pressure_intervals(doc: Mapping[str, Any]) -> list[tuple[float, float]]:
    """[(from s, to s)] the host spent under memory pressure, as sampled: an interval runs
    from its first sample under pressure to the first sample out of it (the run's end if
    none)."""
    rows = doc.get("sockstat") or []
    end = float(doc.get("duration_s") or (rows[-1]["t_s"] if rows else 0.0))
    out: list[tuple[float, float]] = []
    start = None
    for r in rows:
        if r["pressure"] and start is None:
            start = r["t_s"]
        elif not r["pressure"] and start is not None:
            out.append((start, r["t_s"]))
            start = None
    if start is not None:
        out.append((start, end))
    return out


def _fade(color: str, alpha: float) -> str:
    c = color.lstrip("#")
    r, g, b = (int(c[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def memory_figure(runs: Sequence[HostRun]) -> go.Figure:
    """sockstat mem over time against tcp_mem[0..2], pressure shaded per run."""
    fig = go.Figure()
    top = 1.0
    for r in runs:
        top = max([top, *(x["mem"] for x in r.doc.get("sockstat") or []), *(r.tcp_mem or []),
                   *(x.get("memcg_pages", 0) for x in r.doc.get("sockstat") or []),
                   r.memcg_limit_pages or 0])
    top *= 1.08
    for i, r in enumerate(runs):
        color = style.run_color(i)
        rows = r.doc.get("sockstat") or []
        xs: list[Any] = []
        ys: list[Any] = []
        spans = pressure_intervals(r.doc)
        for a, b in spans:
            xs += [a, a, b, b, None]
            ys += [0, top, top, 0, None]
        fig.add_trace(go.Scatter(
            x=xs or [None], y=ys or [None], fill="toself", mode="none", hoverinfo="skip",
            fillcolor=_fade(color, 0.13 if len(runs) > 1 else 0.18), legendgroup=r.label,
            name=f"{r.label}: under memory pressure" if spans
            else f"{r.label}: never under memory pressure"))
        fig.add_trace(go.Scatter(
            x=[x["t_s"] for x in rows], y=[x["mem"] for x in rows], mode="lines",
            line=dict(color=color, width=2, shape="hv"), legendgroup=r.label,
            name=f"{r.label}: sockstat mem" if len(runs) > 1 else "sockstat mem",
            hovertemplate="%{x:.2f} s: %{y} pages<extra></extra>"))
    end = max((float(r.doc.get("duration_s") or 0) for r in runs), default=0.0)
    _memcg_traces(fig, runs, end)
    seen: set[tuple[int, ...]] = set()
    for r in runs:
        if not r.tcp_mem or tuple(r.tcp_mem) in seen:
            continue
        seen.add(tuple(r.tcp_mem))
        tag = "" if len(seen) == 1 else f" ({r.label})"
        for name, dash, v in zip(TCP_MEM_NAMES, TCP_MEM_DASH, r.tcp_mem):
            fig.add_trace(go.Scatter(x=[0, end], y=[v, v], mode="lines", hoverinfo="skip",
                                     line=dict(color="#555", dash=dash, width=1.2),
                                     name=f"{name} = {v}{tag}"))
    layout(fig, "TCP memory of the host: sockstat mem against tcp_mem", ytitle="pages",
           bytes_axis=False)
    fig.update_yaxes(range=[0, top])
    fig.update_xaxes(range=[0, end])
    return fig


def _memcg_traces(fig: go.Figure, runs: Sequence[HostRun], end: float) -> None:
    """With a memory cgroup: its usage over time (dotted, in the run's colour) and its limit
    -- the cgroup, not tcp_mem, may be what stops the sockets (docs/hosts.md)."""
    for i, r in enumerate(runs):
        rows = [x for x in r.doc.get("sockstat") or [] if "memcg_pages" in x]
        limit = r.memcg_limit_pages
        if not rows or limit is None:
            continue
        color = style.run_color(i)
        tag = f"{r.label}: " if len(runs) > 1 else ""
        kind = (r.memcg or {}).get("cgroup", "")
        fig.add_trace(go.Scatter(
            x=[x["t_s"] for x in rows], y=[x["memcg_pages"] for x in rows], mode="lines",
            line=dict(color=color, width=1.5, dash="dot", shape="hv"), legendgroup=r.label,
            name=f"{tag}memcg ({kind}) usage",
            hovertemplate="%{x:.2f} s: %{y} pages in the cgroup<extra></extra>"))
        fig.add_trace(go.Scatter(
            x=[0, end], y=[limit, limit], mode="lines", hoverinfo="skip", legendgroup=r.label,
            line=dict(color=color, dash="dashdot", width=1.2),
            name=f"{tag}memcg limit = {limit}"))


def classes_figure(runs: Sequence[HostRun]) -> go.Figure:
    """Per class (a column each) and per run (a bar each): goodput, read latency, drops,
    zero windows sent."""
    classes: list[str] = []
    for r in runs:
        classes += [c for c in r.classes if c not in classes]
    nrow, ncol = len(CLASS_METRICS), max(1, len(classes))
    fig = make_subplots(rows=nrow, cols=ncol, shared_xaxes=True, vertical_spacing=0.07,
                        horizontal_spacing=0.08, column_titles=[f"class {c}" for c in classes])
    labels = [r.label for r in runs]
    for ci, cls in enumerate(classes):
        for mi, (key, title, _, axis) in enumerate(CLASS_METRICS):
            for i, r in enumerate(runs):
                row = next((c for c in r.doc.get("classes", []) if c["class"] == cls), None)
                v = None if row is None else row.get(key)
                worst = None if row is None else row.get("read_latency_ms_max")
                tick = key == "read_latency_ms" and worst is not None
                fig.add_trace(go.Bar(
                    x=[r.label], y=[v], marker_color=style.run_color(i), name=r.label,
                    legendgroup=r.label, showlegend=ci == 0 and mi == 0,
                    text=["—" if v is None else f"{v:g}"], textposition="outside",
                    cliponaxis=False,
                    error_y=dict(type="data", symmetric=False, array=[worst - v], arrayminus=[0],
                                 color="#333", thickness=1.2, width=6)
                    if tick and v is not None else None,
                    hovertemplate=f"{cls}: {title}: %{{y}} {axis}<extra>{r.label}</extra>"),
                    row=mi + 1, col=ci + 1)
    layout(fig, "What each class got", ytitle="", bytes_axis=False,
           height=170 * nrow + 90, xtitle="")
    fig.update_yaxes(rangemode="tozero")
    for mi, (_, title, _, axis) in enumerate(CLASS_METRICS):
        fig.update_yaxes(title_text=f"{title.split(' (')[0]}, {axis}", row=mi + 1, col=1,
                         title_font=dict(size=11))
    fig.update_xaxes(title_text="", categoryorder="array", categoryarray=labels,
                     showticklabels=len(runs) > 1)
    fig.update_xaxes(showticklabels=len(runs) > 1, row=nrow)
    fig.update_layout(bargap=0.35, showlegend=len(runs) > 1)
    return fig


def sweep_figure(points: Sequence[tuple[str, float, HostRun]], field: str) -> go.Figure:
    """Runs differing in one field (`points`: (series, value of the field, run)): the host's
    time in pressure and peak sockstat mem, and each class's goodput and drops, against the
    field -- where the host tips."""
    classes: list[str] = []
    series: list[str] = []
    for s, _, r in points:
        classes += [c for c in r.classes if c not in classes]
        series += [s] if s not in series else []
    panels = [("in_pressure_s", "time in memory pressure, s"),
              ("peak_sockstat_mem", "peak sockstat mem, pages")]
    for c in classes:
        panels += [(f"{c}.goodput_mbps", f"class {c}: goodput, Mbit/s"),
                   (f"{c}.drops", f"class {c}: drops")]
    ncol = 2
    nrow = (len(panels) + 1) // 2
    fig = make_subplots(rows=nrow, cols=ncol, subplot_titles=[p[1] for p in panels],
                        vertical_spacing=0.12, horizontal_spacing=0.1)
    for si, s in enumerate(series):
        mine = sorted(((x, r) for ss, x, r in points if ss == s), key=lambda p: p[0])
        for pi, (key, _) in enumerate(panels):
            ys = [_sweep_value(r, key) for _, r in mine]
            fig.add_trace(go.Scatter(
                x=[x for x, _ in mine], y=ys, mode="lines+markers", name=s, legendgroup=s,
                showlegend=pi == 0, line=dict(color=style.run_color(si), width=2)),
                row=pi // ncol + 1, col=pi % ncol + 1)
    tcp_mem = next((r.tcp_mem for _, _, r in points if r.tcp_mem), None)
    if tcp_mem:
        xs = [x for _, x, _ in points]
        for name, dash, v in zip(TCP_MEM_NAMES, TCP_MEM_DASH, tcp_mem):
            fig.add_trace(go.Scatter(x=[min(xs), max(xs)], y=[v, v], mode="lines",
                                     hoverinfo="skip", name=f"{name} = {v}",
                                     line=dict(color="#555", dash=dash, width=1.2)),
                          row=1, col=2)
    layout(fig, f"Where the host tips: against {field}", ytitle="", bytes_axis=False,
           height=230 * nrow + 80, xtitle=field)
    fig.update_yaxes(rangemode="tozero")
    return fig


def _sweep_value(r: HostRun, key: str) -> Any:
    p = r.doc.get("pressure") or {}
    if key == "in_pressure_s":
        return p.get("in_pressure_ms", 0) / 1000
    if key in p:
        return p[key]
    cls, _, field = key.partition(".")
    row = next((c for c in r.doc.get("classes", []) if c["class"] == cls), None)
    return None if row is None else row.get(field)


def host_charts(runs: Sequence[HostRun]) -> list[Chart]:
    """The charts of a host report, in reading order."""
    return [
        Chart("host-memory", memory_figure(runs),
              "The pool the host's sockets share: above tcp_mem[1] the host enters memory "
              "pressure (shaded) and leaves it only below tcp_mem[0]; at tcp_mem[2] every "
              "charge beyond a socket's minimum fails."),
        Chart("host-classes", classes_figure(runs),
              "Per class, what the run gave it: compare a class's bars across runs to see what "
              "pressure (or a patch) cost it.", time_axis=False),
    ]


# -- tables -----------------------------------------------------------------------------------

def host_rows(runs: Sequence[HostRun]) -> list[Row]:
    """The host's pressure figures, each class's numbers and the host's nstat, a column per
    run with deltas against the first."""
    rows: list[Row] = []
    if len({json.dumps(r.policies) for r in runs}) > 1 or len({r.base_profile for r in runs}) > 1:
        rows.append(make_row("config", "profile", "profile", "text",
                             {r.label: r.base_profile for r in runs}))
        rows.append(make_row("config", "policies", "patches", "text",
                             {r.label: ", ".join(r.policies) or "none" for r in runs}))
    for key, label, unit, hint in HOST_ROWS:
        rows.append(make_row("host", key, label, unit,
                             {r.label: (r.doc.get("pressure") or {}).get(key) for r in runs}, hint))
    rows.append(make_row("host", "TcpExtTCPMemoryPressures", "entries into pressure", "count",
                         {r.label: (r.doc.get("nstat") or {}).get("TcpExtTCPMemoryPressures", 0)
                          for r in runs}, "TcpExtTCPMemoryPressures"))
    rows += memcg_rows(runs)
    classes: list[str] = []
    for r in runs:
        classes += [c for c in r.classes if c not in classes]
    for cls in classes:
        for key, label, unit, hint in CLASS_ROWS:
            vals = {}
            for r in runs:
                row = next((c for c in r.doc.get("classes", []) if c["class"] == cls), None)
                vals[r.label] = None if row is None else row.get(key)
            rows.append(make_row(f"class {cls}", f"{cls}.{key}", label, unit, vals, hint))
    names: list[str] = []
    for r in runs:
        names += [n for n in (r.doc.get("nstat") or {}) if n not in names]
    for n in names:
        vals = {r.label: (r.doc.get("nstat") or {}).get(n, 0) for r in runs}
        if any(vals.values()):
            rows.append(make_row("host nstat", n, n, "count", vals))
    return rows


def memcg_rows(runs: Sequence[HostRun]) -> list[Row]:
    """The memory cgroup's numbers under its files' names (outputs.memcg_result), a column per
    run ("—" for a run without a cgroup); nothing when no run has one."""
    if not any(r.memcg for r in runs):
        return []
    names: list[str] = []
    for r in runs:
        names += [n for n in (r.memcg or {}) if n not in names and n != "cgroup"]
    rows = [make_row("memory cgroup", "memcg.cgroup", "cgroup", "text",
                     {r.label: (r.memcg or {}).get("cgroup") for r in runs})]
    for n in names:
        unit = "bytes" if n.startswith("memory.") and not n.startswith("memory.events") \
            else "text" if n == "under_socket_pressure_at_end" else "count"
        vals = {r.label: (r.memcg or {}).get(n) for r in runs}
        if unit == "text":
            vals = {k: None if v is None else ("yes" if v else "no") for k, v in vals.items()}
        rows.append(make_row("memory cgroup", f"memcg.{n}", n, unit, vals, MEMCG_HINTS.get(n, "")))
    return rows


# -- the page ---------------------------------------------------------------------------------

def _runs_table(runs: Sequence[HostRun]) -> str:
    out = ['<table class="runs"><tr><th>run</th><th>host</th><th>profile</th><th>patches</th>'
           '<th>conditions</th></tr>']
    for i, r in enumerate(runs):
        cfg = r.doc.get("config") or {}
        cond = [f"{r.doc.get('duration_s', 0):g} s", f"seed {cfg.get('seed', '?')}",
                f"{cfg.get('cpus', 1)} CPU(s)"]
        tcp_mem = r.tcp_mem
        if tcp_mem:
            cond.append("tcp_mem " + " ".join(map(str, tcp_mem)) + " pages")
        if r.memcg:
            cond.append(f"memcg {r.memcg.get('cgroup')} limit {r.memcg_limit_pages} pages")
        sw = f'<span class="swatch" style="background:{style.run_color(i)}"></span>'
        out.append(f"<tr><td>{sw}<b>{h.esc(r.label)}</b></td><td>{h.esc(r.name)}</td>"
                   f"<td>{h.esc(r.base_profile)}</td>"
                   f"<td>{h.esc(', '.join(r.policies) or 'none')}</td>"
                   f"<td>{h.esc(' · '.join(cond))}</td></tr>")
    out.append("</table>")
    return "".join(out)


def _glance(r: HostRun) -> str:
    p = r.doc.get("pressure") or {}
    if p.get("onset_s") is None:
        words = ["never under memory pressure", f"peak sockstat mem {p.get('peak_sockstat_mem')} pages"]
    else:
        words = [f"memory pressure from {p['onset_s']:g} s",
                 f"{p.get('in_pressure_ms', 0) / 1000:.3g} s of {r.doc.get('duration_s', 0):g} s "
                 "in it", f"peak sockstat mem {p.get('peak_sockstat_mem')} pages"]
    m = r.memcg
    if m:
        words.append(f"memcg ({m.get('cgroup')}) peak {m.get('peak_usage_pages')} of "
                     f"{r.memcg_limit_pages} pages, {m.get('refused_charges')} charges refused, "
                     f"{m.get('socket_pressure_ms', 0) / 1000:.3g} s under its pressure")
    for c in r.doc.get("classes", []):
        words.append(f"{c['class']}: {c['goodput_mbps']:g} Mbit/s, {c['drops']} drops")
    return " · ".join(words)


def host_report_html(runs: Sequence[HostRun]) -> str:
    """The report page of one host run or several side by side."""
    names = sorted({r.name for r in runs})
    title = (f"{' / '.join(names)}: " + " vs ".join(r.label for r in runs)) if len(runs) > 1 \
        else f"{runs[0].name} under {runs[0].label}"
    desc = (runs[0].doc.get("config") or {}).get("description", "")
    items = "".join(
        f'<li><span class="swatch" style="background:{style.run_color(i)}"></span>'
        f"<b>{h.esc(r.label)}</b>: {h.esc(_glance(r))}</li>" for i, r in enumerate(runs))
    rows = host_rows(runs)
    sections = list(dict.fromkeys(r["section"] for r in rows))
    body = [f"<h1>{h.esc(title)}</h1>",
            f'<p class="desc">{h.esc(desc)}</p>' if desc else "",
            _runs_table(runs), f'<ul class="glance">{items}</ul>',
            "<h2>Charts</h2>", h.charts_html(host_charts(runs), "host")]
    for s in sections:
        body += [f"<h2>{h.esc(s)}</h2>",
                 h.rows_table([r for r in rows if r["section"] == s], with_hints=s != "config")]
    return h.page(f"tcpsim: {title}", "\n".join(body))


def write_host_report(runs: Sequence[HostRun], out: str | Path) -> Path:
    """Write the host report of `runs` to `out` (plotly.js beside it); returns `out`."""
    from tcpsim.report.compare import check_labels
    check_labels([r.label for r in runs])
    return h.write_page(Path(out), host_report_html(runs))


# -- by name: what docs pages and the Python API ask for ---------------------------------------

FIGURES = ("host-memory", "host-classes", "host-sweep")


def host_figure(name: str, runs: Sequence[HostRun],
                sweep: tuple[str, Sequence[tuple[str, float, HostRun]]] | None = None) -> go.Figure:
    """A host figure by name (`FIGURES`); "host-sweep" needs `sweep`: (the field, its
    points as sweep_figure takes them)."""
    if name == "host-memory":
        return memory_figure(runs)
    if name == "host-classes":
        return classes_figure(runs)
    if name == "host-sweep":
        if sweep is None:
            raise ValueError("host-sweep: a figure of runs over one field; give sweep = "
                             "{field = \"class.bad.count\", values = [0, 5, 10, 20]}")
        return sweep_figure(sweep[1], sweep[0])
    raise ValueError(f"{name}: not a host figure; choose one of {', '.join(FIGURES)}")


def summary_field(key: str) -> tuple[str, str] | None:
    """(label, unit) of a host summary key (tcpsim/host/run.py host_summary: the host's
    pressure figures, CLASS.FIELD), None when it is not one."""
    host = {"pressure_onset_s": ("memory pressure onset", "s"),
            "in_pressure_ms": ("time in memory pressure, ms", "count"),
            "peak_sockstat_mem": ("peak sockstat mem, pages", "count"),
            "memory_pressures": ("entries into memory pressure", "count"),
            "connections": ("connections over the run", "count")}
    if key in host:
        return host[key]
    cls, dot, field = key.partition(".")
    if dot:
        for k, label, unit, _ in CLASS_ROWS:
            if k == field:
                return f"{cls}: {label}", unit
    return None
