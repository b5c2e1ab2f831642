"""The terminal table of a sweep: one line per point, the axes then the headline numbers."""

from __future__ import annotations

from tcpsim.sweeps.grid import Axis, Point

# summary fields shown when the study names no metrics (all of them go to the dataset)
SHOWN = ("peak_sk_rmem_alloc", "peak_sk_rcvbuf", "zero_windows_sent", "want_zero_window",
         "drops", "goodput_mbps", "died_at_s")


def table_lines(points: list[Point], axes: list[Axis], metrics: tuple[str, ...] = SHOWN) -> list[str]:
    """Column-aligned lines; a failed point shows its error at the end of its line."""
    cols = ["point"] + [k for a in axes for k in a.fields] + list(metrics)
    rows, errors = [], []
    for p in points:
        r = dict(p.row(), **{f"counter.{k}": v for k, v in p.counters.items()})
        rows.append([str(r[c]) if r.get(c) is not None else "-" for c in cols])
        errors.append(r["error"])
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    for r, err in zip(rows, errors):
        lines.append("  ".join(v.rjust(w) for v, w in zip(r, widths)) + (f"  {err}" if err else ""))
    return lines
