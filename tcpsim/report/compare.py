"""Several runs side by side: one page, the same charts with one trace per run.

`compare_runs()` takes (label, columns, metadata) triples -- columns as `read_trace()` or
`MemoryRecorder.columns()` return them, or a `Trace` -- and returns the HTML page and the
table rows (config differences, summary, counters; deltas against the first run), which
`format_table()` prints for a terminal and `table_json()` serializes.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from tcpsim.report import html as h
from tcpsim.report.downsample import DEFAULT_MAX_POINTS
from tcpsim.report.figures import report_charts
from tcpsim.report.runs import Run, make_run
from tcpsim.report.summary import summarize
from tcpsim.report.tables import Row, config_rows, counter_rows, summary_rows

RunInput = tuple[str, Any, Mapping[str, Any]]


def check_labels(labels: Sequence[str]) -> None:
    """Labels name table columns: they must be present and distinct."""
    if not labels:
        raise ValueError("compare_runs: no runs to compare")
    for lab in labels:
        if not isinstance(lab, str) or not lab.strip():
            raise ValueError(f"compare_runs: run label {lab!r} must be a non-empty string")
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise ValueError(f"compare_runs: duplicate run labels {', '.join(dup)}; give each run "
                         "its own label")


def comparison_rows(runs: Sequence[Run],
                    summaries: Mapping[str, Mapping[str, Any]] | None = None) -> list[Row]:
    """Config differences, summary and counters, each with deltas against runs[0]."""
    metas = {r.label: r.meta for r in runs}
    summaries = summaries or {r.label: summarize(r.trace, r.meta) for r in runs}
    counters = {r.label: r.meta.get("counters") or {} for r in runs}
    return config_rows(metas) + summary_rows(summaries) + counter_rows(counters)


def runs_legend(runs: Sequence[Run]) -> str:
    """A table naming each run: colour, label, scenario, profile, conditions (timing,
    duration, seed), description."""
    from tcpsim.report.style import run_color
    out = ['<table class="runs"><tr><th>run</th><th>scenario</th><th>profile</th>'
           '<th>conditions</th><th>description</th></tr>']
    for i, r in enumerate(runs):
        sw = f'<span class="swatch" style="background:{run_color(i)}"></span>'
        out.append(f"<tr><td>{sw}<b>{h.esc(r.label)}</b></td><td>{h.esc(r.scenario_name)}</td>"
                   f"<td>{h.esc(r.meta.get('profile', ''))}</td>"
                   f"<td>{h.esc(h.conditions(r))}</td>"
                   f"<td>{h.esc(r.description)}</td></tr>")
    out.append("</table>")
    return "".join(out)


def comparison_html(runs: Sequence[Run], rows: Sequence[Row],
                    summaries: Mapping[str, Mapping[str, Any]],
                    max_points: int = DEFAULT_MAX_POINTS) -> str:
    """The comparison page."""
    names = sorted({r.scenario_name for r in runs if r.scenario_name})
    title = f"{' / '.join(names) or 'runs'}: " + " vs ".join(r.label for r in runs)
    by_section = {s: [r for r in rows if r["section"] == s]
                  for s in ("config", "summary", "counters")}
    body = [f"<h1>{h.esc(title)}</h1>", runs_legend(runs), h.glance(runs, summaries)]
    if len(by_section["config"]) > 1:          # more than the profile row
        body += ["<h2>What differs</h2>", h.rows_table(by_section["config"], with_hints=False)]
    body += ["<h2>Summary</h2>", h.rows_table(by_section["summary"]),
             "<h2>Charts</h2>", h.charts_html(report_charts(runs, max_points)),
             h.collapse_section(runs),
             "<h2>Counters (nstat, non-zero in some run; deltas against the first run)</h2>",
             h.rows_table(by_section["counters"])]
    return h.page(f"tcpsim compare: {title}", "\n".join(body))


def compare_runs(runs: Sequence[RunInput],
                 max_points: int = DEFAULT_MAX_POINTS) -> tuple[str, list[Row]]:
    """Compare runs given as (label, columns, metadata): (HTML page, table rows)."""
    check_labels([r[0] for r in runs])
    prepared = [make_run(label, cols, meta) for label, cols, meta in runs]
    summaries = {r.label: summarize(r.trace, r.meta) for r in prepared}
    rows = comparison_rows(prepared, summaries)
    return comparison_html(prepared, rows, summaries, max_points), rows
