"""Interactive HTML reports of runs, and side-by-side comparisons.

    build_report("run.parquet", "run.html")
    rows = build_comparison([("6.1", "a.parquet"), ("6.1 + shrink", "b.parquet")], "cmp.html")
    print(format_table(rows))

Pages are self-contained (plotly.js inline) and open without network access. Long traces
are downsampled for plotting (extremes and every marked event kept); see docs/reports.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from tcpsim.report.compare import compare_runs
from tcpsim.report.html import report_html
from tcpsim.report.runs import Run, simulate
from tcpsim.report.tables import Row, format_table, table_json
from tcpsim.report.trace import Trace, load_trace

__all__ = ["build_report", "build_comparison", "compare_runs", "format_table", "table_json",
           "load_trace", "simulate", "Trace", "Run", "Row"]


def build_report(trace_path: str | Path, out_html: str | Path) -> Path:
    """Write the HTML report of one trace file; returns the output path."""
    tr, meta = load_trace(trace_path)
    label = str(meta.get("profile") or Path(trace_path).stem)
    from tcpsim.report.html import write_page
    return write_page(Path(out_html), report_html(Run(label, tr, meta)))


def build_comparison(trace_paths_with_labels: Sequence[tuple[str, str | Path]],
                     out_html: str | Path) -> list[Row]:
    """Write the comparison page of several trace files given as (label, path) pairs;
    returns the table rows (print them with format_table, or table_json)."""
    runs = []
    for label, path in trace_paths_with_labels:
        tr, meta = load_trace(path)
        runs.append((label, tr, meta))
    page, rows = compare_runs(runs)
    from tcpsim.report.html import write_page
    write_page(Path(out_html), page)
    return rows
