"""One HTML page per report, with plotly.js written once beside it, no network needed.

plotly.js (~3.6 MB) is a file of its own, `plotly-VERSION.min.js` in the page's folder
(`write_page` writes it when missing), shared by every report and comparison written
there: a page is its data and its text, and opens without parsing the library again in
each file. `standalone(page)` inlines it for a single file to send around.

The page reads top to bottom: title and scenario, the summary table (the ten-second
read), the charts with a line each on what to look for, then the nstat counters. Charts
on a time axis zoom together: zooming one zooms them all.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from tcpsim.report import collapse
from tcpsim.report.figures import Chart, report_charts
from tcpsim.report.runs import Run
from tcpsim.report.summary import summarize
from tcpsim.report.tables import (Row, config_rows, counter_rows, fmt_delta, fmt_value,
                                  summary_rows, table_columns)

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": False}

# Summary keys whose non-zero value deserves a second look (highlighted).
WARN_KEYS = frozenset({"drops", "data_segments_dropped", "segments_dropped", "collapses", "stalls", "retransmits", "rto_timeouts",
                       "error", "died_at_s", "want_zero_window"})

CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 24px 32px;
       color: #222; max-width: 1500px; }
h1 { font-size: 22px; margin: 0 0 4px 0; }
h2 { font-size: 17px; margin: 28px 0 8px 0; border-bottom: 1px solid #ddd; padding-bottom: 3px; }
p.desc { margin: 2px 0 10px 0; color: #444; }
p.note { margin: -4px 0 18px 70px; color: #666; font-size: 13px; }
p.meta { color: #777; font-size: 12px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px 0; }
th, td { padding: 3px 12px; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f6f6f6; }
td.metric, th.metric { text-align: left; }
td.hint { text-align: left; color: #777; font-size: 12px; }
td.warn { background: #ffe3cc; }
td.changed { font-weight: 700; }
span.delta { display: block; font-size: 11px; color: #6b5a00; font-weight: normal; }
div.chart { margin: 0; }
.runs td { text-align: left; }
ul.glance { font-size: 15px; line-height: 1.6; margin: 10px 0 4px 0; padding-left: 20px; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px;
          margin-right: 6px; vertical-align: middle; }
"""

SYNC_JS = """
(function () {
  var ids = %s;
  var busy = false;
  function pick(ev) {
    for (var k in ev) {
      var m = k.match(/^xaxis\\d*\\.(range\\[0\\]|range|autorange)$/);
      if (!m) continue;
      var ax = k.split('.')[0];
      if (m[1] === 'autorange') return {'xaxis.autorange': true};
      if (m[1] === 'range') return {'xaxis.range': ev[k].slice()};
      return {'xaxis.range': [ev[ax + '.range[0]'], ev[ax + '.range[1]']]};
    }
    return null;
  }
  ids.forEach(function (id) {
    var el = document.getElementById(id);
    if (!el || !el.on) return;
    el.on('plotly_relayout', function (ev) {
      if (busy) return;
      var upd = pick(ev);
      if (!upd) return;
      busy = true;
      Promise.all(ids.filter(function (o) { return o !== id; }).map(function (o) {
        return Plotly.relayout(o, upd);
      })).then(function () { busy = false; }, function () { busy = false; });
    });
  });
})();
"""


def esc(text: Any) -> str:
    """HTML-escape anything."""
    return html.escape(str(text), quote=True)


def chart_div(chart: Chart, div_id: str) -> str:
    """One chart as a div (plotly.js itself is loaded once per page) and its note."""
    div = chart.fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                            config=PLOTLY_CONFIG)
    note = f'<p class="note">{esc(chart.note)}</p>' if chart.note else ""
    return f'<div class="chart">{div}</div>{note}'


def charts_html(charts: Sequence[Chart], prefix: str = "chart") -> str:
    """All charts, plus the script that zooms the time-axis charts together."""
    parts, synced = [], []
    for i, chart in enumerate(charts):
        div_id = re.sub(r"[^A-Za-z0-9_-]+", "_", f"{prefix}-{i}-{chart.key}")
        parts.append(chart_div(chart, div_id))
        if chart.time_axis:
            synced.append(div_id)
    parts.append(f"<script>{SYNC_JS % json.dumps(synced)}</script>")
    return "\n".join(parts)


def plotly_js_name() -> str:
    """The file name a page loads plotly.js from (versioned: pages of another plotly
    version in the same folder keep theirs)."""
    import plotly
    return f"plotly-{plotly.__version__}.min.js"


def page(title: str, body: str) -> str:
    """A complete HTML document loading plotly.js from beside it (`write_page`)."""
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{CSS}</style>"
            f"<script type=\"text/javascript\" src=\"{plotly_js_name()}\"></script></head>"
            f"<body>{body}</body></html>\n")


def write_plotly_js(folder: Path) -> Path:
    """plotly.js in `folder` under `plotly_js_name()`, written unless it is there whole."""
    from plotly.offline import get_plotlyjs
    js = get_plotlyjs().encode()
    path = folder / plotly_js_name()
    if not path.is_file() or path.stat().st_size != len(js):
        tmp = path.with_name(path.name + ".partial")
        tmp.write_bytes(js)
        tmp.replace(path)
    return path


def write_page(out: Path, text: str) -> Path:
    """Write an HTML page (`page`) to `out`, plotly.js beside it; returns `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    write_plotly_js(out.parent)
    out.write_text(text, encoding="utf-8")
    return out


def standalone(text: str) -> str:
    """A page with plotly.js inlined instead of loaded from beside it: one file, ~3.6 MB
    more."""
    from plotly.offline import get_plotlyjs
    tag = f'<script type="text/javascript" src="{plotly_js_name()}"></script>'
    inline = f'<script type="text/javascript">{get_plotlyjs()}</script>'
    return text.replace(tag, inline, 1)


# -- tables -------------------------------------------------------------------------------------

def rows_table(rows: Sequence[Row], with_hints: bool = True) -> str:
    """Rows (tcpsim.report.tables) as an HTML table: a value column per run, the delta
    against the first run under each later value, changed cells highlighted."""
    labels = table_columns(rows)
    if not labels:
        return "<p>(nothing to show)</p>"
    head = "".join(f"<th>{esc(lab)}</th>" for lab in labels)
    hint_head = '<th class="metric">meaning</th>' if with_hints else ""
    out = [f'<table><tr><th class="metric">metric</th>{head}{hint_head}</tr>']
    for r in rows:
        out.append(_row_html(r, labels, with_hints))
    out.append("</table>")
    return "".join(out)


def _row_html(r: Row, labels: list[str], with_hints: bool) -> str:
    unit, vals = r["unit"], r["values"]
    base = vals.get(labels[0])
    cells = []
    for i, lab in enumerate(labels):
        v = vals.get(lab)
        text = esc(fmt_value(v, unit))
        cls = ["v"]
        if r["key"] in WARN_KEYS and v not in (None, "", 0):
            cls.append("warn")
        if i and v != base and not (v in (None, "") and base in (None, "")):
            cls.append("changed")
            d = fmt_delta(r["deltas"].get(lab), unit, v, base)
            if d:
                text += f'<span class="delta">{esc(d)}</span>'
        cells.append(f'<td class="{" ".join(cls)}">{text}</td>')
    hint = f'<td class="hint">{esc(r.get("hint", ""))}</td>' if with_hints else ""
    return (f'<tr><td class="metric" title="{esc(r["key"])}">{esc(r["metric"])}</td>'
            f'{"".join(cells)}{hint}</tr>')


def _simulated(run: Run) -> bool:
    """A tcpsim run (a capture's or an importer's trace has the real applications' timing)."""
    return str(run.meta.get("source") or "tcpsim") == "tcpsim"


def _timing_host(sc: Mapping[str, Any]) -> str:
    """The applications' timing: the host preset, or "exact" (applications on time)."""
    return str(sc.get("timing") or "exact")


def conditions(run: Run) -> str:
    """A run's conditions in one line: timing, duration, seed (what a reader needs beside
    the profile to reproduce it)."""
    sc = run.meta.get("scenario") or {}
    if not sc or not _simulated(run):
        return ""
    dur = (run.meta.get("summary") or {}).get("duration_s")
    parts = [f"timing {_timing_host(sc)}"]
    if dur:
        parts.append(f"{dur:g} s")
    if "seed" in sc:
        parts.append(f"seed {sc['seed']}")
    return " · ".join(parts)


def scenario_block(run: Run) -> str:
    """Scenario name, description and the knobs that define it."""
    sc = run.meta.get("scenario") or {}
    bits = [f"profile <b>{esc(run.meta.get('profile', sc.get('profile', '?')))}</b>"]
    if sc.get("policies"):
        bits.append("patches " + esc(", ".join(sc["policies"])))
    for k, v in (sc.get("sysctl") or {}).items():
        bits.append(f"{esc(k)} = {esc(v)}")
    dur = sc.get("duration")
    if isinstance(dur, str):          # a capture's or an import's scenario, as written ("2s")
        bits.append(f"duration {esc(dur)}")
    elif dur:
        bits.append(f"duration {dur / 1e9:g} s")
    if "seed" in sc:
        bits.append(f"seed {esc(sc['seed'])}")
    if sc and _simulated(run):
        bits.append(f"timing {esc(_timing_host(sc))}")
    desc = f'<p class="desc">{esc(run.description)}</p>' if run.description else ""
    return f'{desc}<p class="meta">{" · ".join(bits)}</p>'


def glance(runs: Sequence[Run], summaries: Mapping[str, Mapping[str, Any]]) -> str:
    """One line of words per run: the story before the numbers."""
    from tcpsim.report.style import run_color
    from tcpsim.report.story import headline, memory_trend
    items = []
    for i, run in enumerate(runs):
        phrases = headline(summaries[run.label], memory_trend(run.trace, run.end_s))
        who = ""
        if len(runs) > 1:
            who = (f'<span class="swatch" style="background:{run_color(i)}"></span>'
                   f"<b>{esc(run.label)}</b>: ")
        items.append(f"<li>{who}{' · '.join(esc(p) for p in phrases)}</li>")
    return f'<ul class="glance">{"".join(items)}</ul>'


# -- single-run report --------------------------------------------------------------------------

def report_html(run: Run, max_points: int | None = None) -> str:
    """The report of one run as a complete HTML page."""
    from tcpsim.report.downsample import DEFAULT_MAX_POINTS
    summ = summarize(run.trace, run.meta)
    title = f"{run.scenario_name or run.label} under {summ['profile'] or '?'}"
    charts = report_charts([run], max_points or DEFAULT_MAX_POINTS)
    body = [f"<h1>{esc(title)}</h1>", scenario_block(run), glance([run], {run.label: summ}),
            "<h2>Summary</h2>", rows_table(summary_rows({run.label: summ})),
            "<h2>Charts</h2>", charts_html(charts), collapse_section([run]),
            "<h2>Counters (nstat, non-zero)</h2>",
            rows_table(counter_rows({run.label: run.meta.get("counters") or {}}))]
    return page(f"tcpsim: {title}", "\n".join(body))


def collapse_section(runs: Sequence[Run]) -> str:
    """The collapse-latency histogram, or a placeholder while traces lack collapse_ns."""
    fig = collapse.collapse_figure(runs)
    if fig is None:
        timed = any(r.trace.has(collapse.COLUMN) for r in runs)
        text = collapse.NONE_HAPPENED if timed else collapse.PLACEHOLDER
        return f'<p class="note" style="margin-left:0">{text}</p>'
    return chart_div(Chart("collapse", fig, time_axis=False), "chart-collapse")


def config_table(metas: Mapping[str, Mapping[str, Any]]) -> str:
    """What differs between runs (profile, patches, sysctls)."""
    return rows_table(config_rows(metas), with_hints=False)
