"""The terminal table of a sweep: one line per point, the axes then the headline numbers."""

from __future__ import annotations

import shutil

from tcpsim.sweeps.grid import Axis, Point

# summary fields shown when the study names no metrics (all of them go to the dataset)
SHOWN = ("peak_sk_rmem_alloc", "peak_sk_rcvbuf", "zero_windows_sent", "want_zero_window",
         "drops", "goodput_mbps", "died_at_s")


def table_lines(points: list[Point], axes: list[Axis], metrics: tuple[str, ...] = SHOWN,
                width: int | None = None) -> list[str]:
    """Column-aligned lines; a failed point shows its error at the end of its line. When the
    lines would be wider than `width` (the terminal's, else 160 columns), a header longer
    than its column's values is broken in two at an `_` or `.` (the names stay whole, as
    `--json` and the dataset spell them)."""
    cols = ["point"] + [k for a in axes for k in a.fields] + list(metrics)
    rows, errors = [], []
    for p in points:
        r = dict(p.row(), **{f"counter.{k}": v for k, v in p.counters.items()})
        rows.append([str(r[c]) if r.get(c) is not None else "-" for c in cols])
        errors.append(r["error"])
    heads = [[c] for c in cols]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    limit = width or shutil.get_terminal_size((160, 24)).columns
    if sum(widths) + 2 * (len(cols) - 1) > limit:
        heads = [_two_lines(c, max((len(r[i]) for r in rows), default=0))
                 for i, c in enumerate(cols)]
        widths = [max(max(len(h) for h in hs), *(len(r[i]) for r in rows))
                  for i, hs in enumerate(heads)]
    depth = max(len(h) for h in heads)
    heads = [[""] * (depth - len(hs)) + hs for hs in heads]      # short names on the last line
    lines = ["  ".join(hs[k].rjust(w) for hs, w in zip(heads, widths)).rstrip()
             for k in range(depth)]
    for r, err in zip(rows, errors):
        lines.append("  ".join(v.rjust(w) for v, w in zip(r, widths)) + (f"  {err}" if err else ""))
    return lines


def _two_lines(name: str, room: int) -> list[str]:
    """`name` as one line if it fits in `room` characters (its column's widest value), else
    two lines broken after the `_` or `.` nearest its middle."""
    if len(name) <= room:
        return [name]
    cuts = [i + 1 for i, ch in enumerate(name[:-1]) if ch in "_."]
    if not cuts:
        return [name]
    cut = min(cuts, key=lambda i: max(i, len(name) - i))
    return [name[:cut], name[cut:]]
