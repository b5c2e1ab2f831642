"""The fit and the kernel ranking as text and JSON (`tcpsim replay --fit`, `--profiles`).

Unknown values print as "—" (null in JSON), never as 0: the capture's side of anything the
wire does not show (receiver memory) is unknown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tcpsim.pcap.fit import CONSISTENT, DETERMINED, FITS, RULED_OUT, UNKNOWN_NAMES, FitResult, Ranking
from tcpsim.pcap.grade import WEIGHTS, Grade

UNKNOWN = "—"


def pct(x: float | None) -> str:
    return UNKNOWN if x is None else f"{100 * x:.1f} %"


def grade_line(g: Grade) -> str:
    return (f"grade {g.total:.3f}: windows within a scale unit {pct(g.within_unit_fraction)} "
            f"(exact {pct(g.exact_fraction)}), window series "
            f"{UNKNOWN if g.series_distance is None else f'{100 * g.series_distance:.0f} % of the largest window off'}, "
            f"ACKs {g.kernel_acks} captured / {g.model_acks} model, zero windows "
            f"{g.zero_windows[0]} / {g.zero_windows[1]}, window updates {g.window_updates[0]} / "
            f"{g.window_updates[1]}")


def agreement(total: float) -> str:
    """A word for a grade (docs/pcap.md, "The graded score")."""
    return "close" if total >= 0.8 else "fair" if total >= 0.6 else "poor"


def fitted_table(f: FitResult) -> list[str]:
    lines = [f"  {'unknown':20} {'fitted':24} {'determined':11} within {DETERMINED} of the best"]
    for x in f.fitted:
        others = ", ".join(v for v in x.near if v != x.value)[:70] or UNKNOWN
        lines.append(f"  {UNKNOWN_NAMES.get(x.name, x.name):20} {x.value:24} {x.determined:11} {others}")
    return lines


def phases_line(f: FitResult) -> str:
    """A phased reader's phases, as read off the capture's read-drawn ACKs."""
    ph = ", ".join(f"every {p.every / 1e6:g} ms from {p.first / 1e6:.3f} ms ({p.acks} ACKs)"
                   for p in f.reader_phases[:8])
    more = f", ... ({len(f.reader_phases)} phases)" if len(f.reader_phases) > 8 else ""
    return f"  reader phases (read off the read-drawn ACKs): {ph}{more}"


def fit_text(capture: Path, f: FitResult, g: Grade, v: Any) -> str:
    """`replay --fit`: what was fitted, how well, then the replay under the target."""
    from tcpsim.validate.report import text
    target = " + ".join((v.replay.plan.profile, *v.replay.plan.policies))
    lines = [f"{capture.name}: fitted under {f.label} ({f.replays} replays, {f.wall_s:.1f} s)"]
    lines += fitted_table(f)
    if f.reader_phases:
        lines.append(phases_line(f))
    lines.append(f"  fit: {grade_line(f.grade)} -- {agreement(f.grade.total)}")
    s = v.score.info
    zw = v.score.outcomes.get("zero_window", {})
    st = v.score.outcomes.get("stall", {})
    lines.append("")
    lines.append(f"{target} with this traffic and the fitted unknowns:")
    lines.append(f"  zero window: {zw.get('model', UNKNOWN)} (capture: {zw.get('kernel', UNKNOWN)}); "
                 f"stall: {st.get('model', UNKNOWN)} (capture: {st.get('kernel', UNKNOWN)}); bytes "
                 f"received {_n(s.get('model_bytes_received'))} (capture "
                 f"{_n(s.get('kernel_bytes_received'))})")
    peak = next((m for m in v.score.metrics if m.name == "peak_rmem"), None)
    peak_rb = next((m for m in v.score.metrics if m.name == "peak_rcvbuf"), None)
    lines.append(f"  peak sk_rmem_alloc {_n(peak.model if peak else None)} B, peak sk_rcvbuf "
                 f"{_n(peak_rb.model if peak_rb else None)} B (the capture's: {UNKNOWN}, not on "
                 "the wire)")
    lines.append(f"  against the capture: {grade_line(g)} -- {agreement(g.total)}")
    lines.append("")
    lines.append("details (tcpsim validate's report; its exact-window threshold is for "
                 "captures with application logs):")
    lines += ["  " + line for line in text(v.score).splitlines()]
    return "\n".join(lines)


def _n(x: Any) -> str:
    return UNKNOWN if x is None else str(int(x)) if isinstance(x, (int, float)) else str(x)


def fit_json(f: FitResult, g: Grade, v: Any) -> dict[str, Any]:
    return {"fit": f.as_dict(), "target": {"profile": v.replay.plan.profile,
                                           "policies": list(v.replay.plan.policies),
                                           "grade": g.as_dict()},
            "score": v.score.as_dict(), "weights": WEIGHTS}


def rank_text(capture: Path, r: Ranking, fitted: bool) -> str:
    how = "best fit" if fitted else "replay with the inferred/pinned unknowns"
    lines = [f"{capture.name}: kernels ranked by their {how} (grade 1 = the capture exactly; "
             "docs/pcap.md)",
             f"  {'#':>2} {'kernel':28} {'grade':>6} {'win ±1':>8} {'exact':>8} {'ACKs c/m':>11} "
             f"{'zero win c/m':>13} {'updates c/m':>12}  verdict"]
    for i, f in enumerate(r.fits, start=1):
        g = f.grade
        lines.append(f"  {i:>2} {f.label:28} {g.total:6.3f} {pct(g.within_unit_fraction):>8} "
                     f"{pct(g.exact_fraction):>8} {g.kernel_acks:>5}/{g.model_acks:<5} "
                     f"{g.zero_windows[0]:>6}/{g.zero_windows[1]:<6} "
                     f"{g.window_updates[0]:>5}/{g.window_updates[1]:<6} {r.verdicts[f.label]}")
    ok = [f.label for f in r.fits if r.verdicts[f.label] == "consistent"]
    out = [f.label for f in r.fits if r.verdicts[f.label] == "ruled out"]
    if not r.fits_well:
        lines.append(f"  no kernel fits this capture well (best grade {r.fits[0].grade.total:.3f} < "
                     f"{FITS}): the order above is not evidence for or against any kernel; see "
                     "the best fit's unknowns and docs/pcap.md (\"When nothing fits\")")
    elif not r.tells_apart:
        lines.append(f"  the capture does not tell these kernels apart: every grade is within "
                     f"{CONSISTENT} of the best")
    else:
        lines.append(f"  consistent with: {', '.join(ok)}")
        lines.append(f"  rules out (more than {RULED_OUT} below the best): {', '.join(out) or UNKNOWN}")
    best = r.fits[0]
    if best.fitted:
        lines.append(f"  best fit ({best.label}): " + ", ".join(
            f"{UNKNOWN_NAMES.get(x.name, x.name)} {x.value} ({x.determined})" for x in best.fitted))
    lines.append(f"  agreement of the best: {agreement(best.grade.total)}")
    return "\n".join(lines)
