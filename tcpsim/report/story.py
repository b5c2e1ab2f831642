"""The run's story in one line of words: what a person should take away first.

Built from the summary (tcpsim.report.summary) and the memory curve, e.g.

    skmem_r was still growing at the end (85.6 MiB) · no zero window advertised (wanted
    29,945 times; never-shrink kept it open) · no drops · goodput 8 kbit/s
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from tcpsim.report import extract
from tcpsim.report.tables import fmt_bytes, fmt_rate, fmt_value
from tcpsim.report.trace import Trace


def memory_trend(tr: Trace, end_s: float) -> tuple[str, float]:
    """How skmem_r evolved, and when it peaked (s):

    'growing' -- rose by more than 20 % over the last quarter and ended near its peak;
    'grew'    -- took a while (over a second and 1 % of the run) to reach half its peak:
                 a climb, not a buffer filling up in a few round trips;
    'bounded' -- neither ('' when there is no data)."""
    s = extract.rcv_series(tr, "sk_rmem_alloc")
    if len(s.y) < 2 or end_s <= 0:
        return "", 0.0
    k = int(np.argmax(s.y))
    last, peak = float(s.y[-1]), float(s.y[k])
    then = float(s.y[max(np.searchsorted(s.t, 0.75 * end_s, side="right") - 1, 0)])
    if last > 1.2 * max(then, 1.0) and last >= 0.9 * peak:
        return "growing", float(s.t[k])
    t_half = float(s.t[np.argmax(s.y >= peak / 2)]) - float(s.t[0])
    if t_half >= max(1.0, 0.01 * end_s):
        return "grew", float(s.t[k])
    return "bounded", float(s.t[k])


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def headline(summary: Mapping[str, Any], trend: tuple[str, float] = ("", 0.0)) -> list[str]:
    """Short phrases, most important first; `trend` is memory_trend()'s answer."""
    s = summary
    peak, final = s.get("peak_sk_rmem_alloc") or 0, s.get("final_sk_rmem_alloc") or 0
    unknown = s.get("peak_sk_rmem_alloc") is None and s.get("final_sk_rmem_alloc") is None
    if unknown:                    # a capture: the wire shows no receiver memory
        mem = "skmem_r — (not on the wire)"
    elif trend[0] == "growing":
        mem = f"skmem_r was still growing at the end ({fmt_bytes(final)})"
    elif trend[0] == "grew":
        mem = f"skmem_r grew to {fmt_bytes(peak)} (at {fmt_value(trend[1], 's')})"
    elif trend[0] == "bounded" and final >= 0.8 * peak:
        mem = f"skmem_r stayed within {fmt_bytes(peak)}"
    else:
        mem = f"skmem_r peaked at {fmt_bytes(peak)}, {fmt_bytes(final)} at the end"
    out = [mem]
    zw, want = s.get("zero_windows_sent") or 0, s.get("want_zero_window") or 0
    if zw:
        out.append(_plural(zw, "zero window") + " advertised")
    else:
        out.append("no zero window advertised"
                   + (f" (wanted {want:,} times; never-shrink kept it open)" if want else ""))
    # the summary's names (docs glossary): "data segments dropped" counts every reason, the
    # table's "drops" only memory and window; "drops" here would contradict the table
    drops = s.get("data_segments_dropped") or 0
    out.append(f"{_plural(drops, 'data segment')} dropped ({s.get('drop_reasons')})" if drops
               else "no data segment dropped")
    if s.get("collapses"):
        out.append(_plural(s["collapses"], "collapse"))
    if s.get("stalls"):
        out.append(f"sender held up {fmt_value(s.get('stalled_s'), 's')} "
                   f"in {_plural(s['stalls'], 'stall')}")
    gp = s.get("goodput_bps")
    out.append("goodput — (reads not on the wire)" if gp is None and unknown
               else f"goodput {fmt_rate(gp or 0)}")
    if s.get("error") or s.get("died_at_s") is not None:
        when = s.get("died_at_s")
        out.append(f"connection died{f' at {when:g} s' if when is not None else ''}: "
                   f"{s.get('error') or '?'}")
    return out
