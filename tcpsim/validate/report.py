"""Validation results as text (terminal), as a Markdown table (docs/validation.md) and JSON."""

from __future__ import annotations

from typing import Any

from tcpsim.validate.scores import Metric, Score


def _num(x: float | int | None) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        if x == float("inf"):
            return "inf"
        return f"{x:.3f}"
    return str(x)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def _state(d: dict[str, Any] | None) -> str:
    if not d:
        return "-"
    short = {"sk_rmem_alloc": "r", "sk_rcvbuf": "rb", "rcv_ssthresh": "rcv_ssthresh",
             "window_clamp": "clamp", "rcv_wnd": "rcv_wnd", "recv_q": "recv_q"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in d.items() if v is not None)


def mismatch_line(fm: dict[str, Any] | None) -> str:
    """One paragraph on the first ACK whose window differed."""
    if fm is None:
        return "every paired ACK matched"
    model = (f"model {fm['model_win']} (its ACK of {fm['model_ack_seq']} at {fm['model_t_s']:.6f} s; "
             f"model state after it: {_state(fm.get('model_state'))})"
             if fm.get("model_win") is not None else fm.get("model", "no model ACK"))
    return (f"first mismatch at {fm['t_s']:.6f} s, ACK of {fm['ack_seq']} "
            f"(#{fm['occurrence']} of that ack_seq): kernel {fm['kernel_win']}, {model}; "
            f"kernel state ({fm['kernel_state_is']}): {_state(fm['kernel_state'])}")


def text(s: Score) -> str:
    """A terminal report of one score."""
    verdict = "PASS" if s.passed else "FAIL"
    info = s.info
    lines = [f"{s.name}: {verdict}  (model {s.profile} vs kernel {info.get('kernel', '?')}, "
             f"{s.window_ns[1] / 1e9:.3f} s compared)"]
    if s.timing_dependent:
        lines.append(f"  timing-dependent: {', '.join(s.timing_dependent)} (reported, not scored)")
    if s.known_divergence:
        lines.append(f"  known divergence: {', '.join(s.known_divergence)} (reported, not scored; "
                     "see the notes)")
    link = info.get("link") or {}
    if link:
        lines.append(f"  link replayed: {link.get('delay_ab_ns', 0) / 1e6:.3f} ms / "
                     f"{link.get('delay_ba_ns', 0) / 1e6:.3f} ms one way (configured "
                     f"{link.get('configured_ab_ns', 0) / 1e6:g} / {link.get('configured_ba_ns', 0) / 1e6:g} "
                     "+ median delay-program lateness)")
    hz = info.get("hz") or {}
    if hz.get("hz"):
        lines.append(f"  kernel tick replayed: HZ = {hz['hz']} (from {hz.get('source') or '?'})")
    lines.append(f"  {'outcome':12} {'kernel':18} {'model':18}")
    for c, o in s.outcomes.items():
        mark = "ok" if o["match"] else ("DIFFERS" if o["scored"] else "differs (timing-dependent)")
        if o["kernel"] == "unknown":
            mark = "(not on the wire: not scored)"
        extra = ""
        if c == "stall" and (o.get("kernel_at_s") is not None or o.get("model_at_s") is not None):
            extra = f"  at {_num(o.get('kernel_at_s'))} s / {_num(o.get('model_at_s'))} s"
        lines.append(f"  {c:12} {o['kernel']:18} {o['model']:18} {mark}{extra}")
    lines.append(f"  {'metric':28} {'kernel':>12} {'model':>12} {'error':>8} {'limit':>6}")
    for m in s.metrics:
        lines.append(_metric_line(m))
    a = s.acks
    lines.append(f"  ACK windows: {a.kernel_acks} kernel ACKs ({a.paired} paired with a model ACK "
                 f"of the same ack_seq, {a.nearest} with the nearest), {a.exact} windows exact "
                 f"({_pct(a.fraction)}), {a.within_unit} within one scale unit; model sent "
                 f"{a.model_acks} ACKs")
    lines.append("  " + mismatch_line(a.first_mismatch))
    if s.counters:
        lines.append(f"  {'counter':34} {'kernel':>10} {'model':>10}")
        for name, k, m in s.counters:
            lines.append(f"  {name:34} {k:>10} {m:>10}")
    if s.sender_counters:
        lines.append(f"  {'sender counter (shown)':34} {'kernel':>10} {'model':>10}")
        for name, k, m in s.sender_counters:
            lines.append(f"  {name:34} {k:>10} {m:>10}")
    rp = info.get("replay") or {}
    if rp:
        lines.append(f"  replay: {rp.get('write_ticks', 0)} writer ticks from the trace "
                     f"({rp.get('write_size_mismatch', 0)} where the model accepted other bytes), "
                     f"{rp.get('read_ticks', 0)} reader ticks ({rp.get('read_size_mismatch', 0)} "
                     "where the model read other bytes)")
    for n in s.notes + info.get("notes", []):
        lines.append(f"  note: {n}")
    for f in s.failures:
        lines.append(f"  FAILED {f}")
    return "\n".join(lines)


def _metric_line(m: Metric) -> str:
    verdict = {True: "ok", False: "FAIL", None: "(not scored)" if not m.scored else ""}[m.passed]
    if m.note:
        verdict = f"{verdict} {m.note}".strip()
    err = _pct(m.error) if m.name.startswith("ack_match") else _num(m.error)
    return (f"  {m.name:28} {_num(m.kernel):>12} {_num(m.model):>12} {err:>8} "
            f"{_num(m.limit):>6} {verdict}")


def metric(s: Score, name: str) -> Metric | None:
    return next((m for m in s.metrics if m.name == name), None)


def markdown_table(scores: list[Score]) -> str:
    """The docs/validation.md table: one row per fixture."""
    head = ("| fixture | outcomes kernel → model (memory, zero window, drops, stall) | numbers over "
            "| final r | peak r | final rb | peak rb | series r | series rb | ACK windows exact "
            "| result |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    rows = []
    for s in scores:
        oc = []
        for c, o in s.outcomes.items():
            cell = o["kernel"] if o["match"] else f"{o['kernel']} → **{o['model']}**"
            if not o["scored"] and not o["match"]:
                cell += " (k-d)" if o.get("known_divergence") else " (t-d)"
            oc.append(cell)
        cells = [_err(metric(s, n)) for n in ("final_rmem", "peak_rmem", "final_rcvbuf",
                                               "peak_rcvbuf", "series_rmem", "series_rcvbuf")]
        name = s.name + (" (t-d)" if s.timing_dependent else "")
        verdict = "pass" if s.passed else "**fail**"
        rows.append(f"| {name} | {'; '.join(oc)} | {_window(s)} | {' | '.join(cells)} | "
                    f"{_pct(s.acks.fraction)} ({s.acks.exact}/{s.acks.kernel_acks}) | {verdict} |")
    return head + "\n".join(rows) + "\n"


def _window(s: Score) -> str:
    """The stretch of the run the numbers were scored over."""
    if "numbers" in s.timing_dependent or "numbers" in s.known_divergence:
        return f"0–{s.window_ns[1] / 1e9:g} s, not scored"
    if s.scored_end_ns != s.window_ns[1]:
        return f"0–{s.scored_end_ns / 1e9:.2f} s (to the first stall)"
    return f"0–{s.window_ns[1] / 1e9:g} s"


def _err(m: Metric | None) -> str:
    if m is None or m.error is None:
        return "-"
    if m.error == float("inf"):
        return "inf"
    return f"{100 * m.error:.1f} %"
