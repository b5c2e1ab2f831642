"""Scores of a model run against a kernel trace, both on the kernel's time axis.

* outcome classes (validate_outcomes): kernel vs model, per class;
* relative error |model - kernel| / kernel of the final and peak `sk_rmem_alloc` and
  `sk_rcvbuf`, and of their time series: sampled on a grid of `GRID` points from the first
  data segment to the end, error = sum |m - k| / sum |k| (normalised mean absolute error);
* advertised windows: each kernel ACK is paired with the model ACK that acknowledged the same
  `ack_seq` (the k-th kernel ACK of a sequence number with the model's k-th), or else the
  nearest `ack_seq`, and the fraction of kernel ACKs whose window the model matched exactly;
  the first mismatch with both receivers' state;
* the receiver's counters side by side.

Fixtures may be timing-dependent (their metadata's `fixture.timing_dependent` lists outcome
classes, "series" or "numbers"): the classes listed are reported but not scored; with
"series" the numeric metrics are scored only up to the first stall, the kernel's or the
model's (what comes after depends on when jitter made the connection stall), the whole run
being reported too; with "numbers" no numeric metric is scored (the kernel's own run-to-run spread
is larger than any threshold); a metric's name (e.g. "final_rmem") leaves that metric
reported, not scored. A fixture's `known_divergence` ({class, "numbers" or metric: the
figures}) does the same for where today's model is known to differ from the kernel, and
the report says so with the figures: a divergence is never silently unscored.
"""

from __future__ import annotations

import bisect
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tcpsim.engine.result import sender_counters
from tcpsim.validate.outcomes import CLASSES, Outcomes
from tcpsim.validate.trace import Ack, TraceView

GRID = 200
STATE_SHOWN = ("sk_rmem_alloc", "sk_rcvbuf", "rcv_ssthresh", "window_clamp", "rcv_wnd", "recv_q")


@dataclass(frozen=True)
class Thresholds:
    """Pass/fail limits (all configurable from the command line)."""

    outcomes: bool = True            # every scored outcome class must match
    max_final_error: float = 0.10    # final sk_rmem_alloc / sk_rcvbuf
    max_peak_error: float = 0.10     # peak sk_rmem_alloc / sk_rcvbuf
    max_series_error: float = 0.20   # time series, normalised mean absolute error
    min_ack_match: float = 0.50      # fraction of kernel ACKs whose window matched exactly


@dataclass
class Metric:
    """One compared number."""

    name: str
    kernel: float | None
    model: float | None
    error: float | None
    limit: float | None
    scored: bool = True
    note: str = ""

    @property
    def passed(self) -> bool | None:
        if not self.scored or self.limit is None or self.error is None:
            return None
        if self.name.startswith("ack_match"):
            return self.error >= self.limit
        return self.error <= self.limit


@dataclass
class AckScore:
    """How the model's advertised windows compare with the kernel's."""

    kernel_acks: int = 0
    model_acks: int = 0
    paired: int = 0               # with a model ACK of the same ack_seq
    nearest: int = 0              # with the model ACK of the nearest ack_seq
    exact: int = 0
    within_unit: int = 0          # off by at most one window-scale unit (rounding)
    first_mismatch: dict[str, Any] | None = None

    @property
    def fraction(self) -> float | None:
        return self.exact / self.kernel_acks if self.kernel_acks else None


@dataclass
class Score:
    """The whole comparison of one trace."""

    name: str
    profile: str
    outcomes: dict[str, dict[str, Any]]
    metrics: list[Metric]
    acks: AckScore
    acks_full: AckScore | None
    counters: list[tuple[str, int, int]]
    window_ns: tuple[int, int]
    scored_end_ns: int
    timing_dependent: list[str]
    require_outcomes: bool = True
    info: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # outcome classes / "numbers" where today's model is known to differ from this capture,
    # each with the figures (fixture metadata `known_divergence`): reported, not scored
    known_divergence: dict[str, str] = field(default_factory=dict)
    # the sender's counters side by side, where the capture kept them (shown, not scored)
    sender_counters: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        out = [f"outcome {k}: kernel {o['kernel']}, model {o['model']}"
               for k, o in self.outcomes.items()
               if self.require_outcomes and o["scored"] and not o["match"]]
        for m in self.metrics:
            if m.passed is False:
                rel = "<" if m.name.startswith("ack_match") else ">"
                out.append(f"{m.name}: {m.error:.3f} {rel} limit {m.limit}")
        return out

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["metrics"] = [{**asdict(m), "passed": m.passed} for m in self.metrics]
        d["acks"]["fraction"] = self.acks.fraction
        if self.acks_full is not None:
            d["acks_full"]["fraction"] = self.acks_full.fraction
        d["counters"] = [{"name": n, "kernel": k, "model": m} for n, k, m in self.counters]
        d["sender_counters"] = [{"name": n, "kernel": k, "model": m}
                                for n, k, m in self.sender_counters]
        d["passed"] = self.passed
        d["failures"] = self.failures
        return d


def rel_error(kernel: float | None, model: float | None) -> float | None:
    """|model - kernel| / |kernel| (0 when both are 0; None when either is unknown)."""
    if kernel is None or model is None:
        return None
    if kernel == 0:
        return 0.0 if model == 0 else float("inf")
    return abs(model - kernel) / abs(kernel)


def series_error(k: TraceView, m: TraceView, name: str, t0: int, t1: int, n: int = GRID) -> float | None:
    """Normalised mean absolute error of one state field on an n-point grid over [t0, t1]."""
    ks, ms = k.state[name], m.state[name]
    if t1 <= t0 or not ks.t or not ms.t:
        return None
    num = den = 0
    for i in range(n):
        t = t0 + (t1 - t0) * i // (n - 1)
        kv, mv = ks.at(t), ms.at(t)
        if kv is None or mv is None:
            continue
        num += abs(mv - kv)
        den += abs(kv)
    if den == 0:
        return None if num == 0 else float("inf")
    return num / den


def peak(v: TraceView, name: str, t1: int) -> int | None:
    vals = v.state[name].upto(t1)
    return max(vals) if vals else None


def match_acks(k: TraceView, m: TraceView, t1: int) -> AckScore:
    """Pair every kernel ACK up to t1 with a model ACK and count exact window matches.

    A kernel ACK is paired with the model ACK of the same ack_seq (its k-th occurrence with
    the model's k-th, or the model's last one of that ack_seq); when the model never
    acknowledged exactly that sequence number (delayed ACKs of small segments fall on other
    ones), with the model ACK of the nearest ack_seq: the window the model offered when it
    had acknowledged (almost) the same data."""
    kacks = [a for a in k.acks if a.t_ns <= t1]
    by_seq: dict[int, list[Ack]] = {}
    for a in m.acks:
        by_seq.setdefault(a.ack_seq, []).append(a)
    seqs = sorted(by_seq)
    score = AckScore(kernel_acks=len(kacks), model_acks=sum(1 for a in m.acks if a.t_ns <= t1))
    seen: dict[int, int] = {}
    for a in kacks:
        i = seen.get(a.ack_seq, 0)
        seen[a.ack_seq] = i + 1
        same = by_seq.get(a.ack_seq)
        if same:
            b = same[min(i, len(same) - 1)]
            score.paired += 1
        else:
            b = _nearest(by_seq, seqs, a.ack_seq)
            if b is not None:
                score.nearest += 1
        if b is not None and abs(b.win - a.win) <= _unit(a):
            score.within_unit += 1
        if b is not None and b.win == a.win:
            score.exact += 1
        elif score.first_mismatch is None:
            score.first_mismatch = mismatch_detail(k, m, a, b, i)
    return score


def _unit(a: Ack) -> int:
    """The window-scale unit of a kernel ACK (win / win_raw; 1 when unknown)."""
    return a.win // a.win_raw if a.win_raw > 0 and a.win % a.win_raw == 0 else 1


def _nearest(by_seq: dict[int, list[Ack]], seqs: list[int], seq: int) -> Ack | None:
    """The model ACK whose ack_seq is nearest to seq (lower: its last; higher: its first)."""
    j = bisect.bisect_left(seqs, seq)
    lo = seqs[j - 1] if j > 0 else None
    hi = seqs[j] if j < len(seqs) else None
    if lo is None and hi is None:
        return None
    if hi is None or (lo is not None and seq - lo <= hi - seq):
        return by_seq[lo][-1]
    return by_seq[hi][0]


def mismatch_detail(k: TraceView, m: TraceView, a: Ack, b: Ack | None, occurrence: int) -> dict[str, Any]:
    """The first window mismatch: both windows and both receivers' state around it."""
    kstate = {f: k.state[f].next_at(a.t_ns) for f in STATE_SHOWN}
    detail: dict[str, Any] = {
        "t_s": round(a.t_ns / 1e9, 6), "ack_seq": a.ack_seq, "occurrence": occurrence + 1,
        "kernel_win": a.win, "model_win": None if b is None else b.win,
        "kernel_state": kstate,
        "kernel_state_is": ("tcp_probe before the next segment" if k.rx_state == "before"
                            else "next observation"),
    }
    if b is None:
        detail["model"] = "the model sent no ACK at all"
    else:
        detail["model_ack_seq"] = b.ack_seq
        detail["model_t_s"] = round(b.t_ns / 1e9, 6)
        detail["model_state"] = {f: m.state[f].at(b.t_ns) for f in STATE_SHOWN}
    return detail


def compare_outcomes(ko: Outcomes, mo: Outcomes, timing: list[str],
                     known: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    out = {}
    for c in CLASSES:
        kl, ml = ko.label(c), mo.label(c)
        scored = c not in timing and c not in (known or {}) and getattr(ko, c) is not None
        out[c] = {"kernel": kl, "model": ml, "match": kl == ml, "scored": scored}
        if known and c in known:
            out[c]["known_divergence"] = True
        if c == "stall":
            out[c]["kernel_at_s"] = None if ko.stall_at_ns is None else round(ko.stall_at_ns / 1e9, 3)
            out[c]["model_at_s"] = None if mo.stall_at_ns is None else round(mo.stall_at_ns / 1e9, 3)
    return out


def numeric_metrics(k: TraceView, m: TraceView, t0: int, t1: int, th: Thresholds,
                    scored: bool, suffix: str = "") -> list[Metric]:
    """Final, peak and series errors of sk_rmem_alloc and sk_rcvbuf over [t0, t1]."""
    out = []
    for f, short in (("sk_rmem_alloc", "rmem"), ("sk_rcvbuf", "rcvbuf")):
        kf, mf = k.state[f].at(t1), m.state[f].at(t1)
        out.append(Metric(f"final_{short}{suffix}", kf, mf, rel_error(kf, mf), th.max_final_error, scored))
        kp, mp = peak(k, f, t1), peak(m, f, t1)
        out.append(Metric(f"peak_{short}{suffix}", kp, mp, rel_error(kp, mp), th.max_peak_error, scored))
        out.append(Metric(f"series_{short}{suffix}", None, None, series_error(k, m, f, t0, t1),
                          th.max_series_error, scored))
    return out


def counter_rows(kernel: dict[str, Any], model: dict[str, int]) -> list[tuple[str, int, int]]:
    """(name, kernel, model) for every counter either side counted. A counter of a MIB the
    capture did not record (nstat's Tcp group beside TcpExt) is left out: its kernel value
    is unknown, not 0."""
    kc = {n: int(v) for n, v in kernel.items()}
    groups = {_mib_group(n) for n in kc}
    names = sorted(n for n in set(kc) | set(model)
                   if (kc.get(n, 0) or model.get(n, 0)) and (n in kc or _mib_group(n) in groups))
    return [(n, kc.get(n, 0), int(model.get(n, 0))) for n in names]


def _mib_group(name: str) -> str:
    """The nstat group of a counter: TcpExt, or the Tcp MIB (TcpInSegs, TcpRetransSegs)."""
    return "TcpExt" if name.startswith("TcpExt") else "Tcp"


def score(name: str, profile: str, k: TraceView, m: TraceView, ko: Outcomes, mo: Outcomes,
          end_ns: int, th: Thresholds, timing: list[str], model_counters: dict[str, int],
          known: dict[str, str] | None = None,
          model_sender: dict[str, int] | None = None) -> Score:
    """Compare a model view (already on the kernel's axis) with the kernel view. ``known``:
    the fixture's known divergences (class or "numbers" -> figures), reported, not scored.
    ``model_sender``: the model's sender counters, shown beside the capture's sender's when
    it kept them (summary.sender.counters)."""
    known = dict(known or {})
    t0 = k.data_t[0] if k.data_t else 0
    scored_end = end_ns
    notes = [f"known divergence, not scored: {name}: {why}" for name, why in known.items()]
    numbers_scored = "numbers" not in timing and "numbers" not in known
    if "numbers" in timing:
        notes.append("timing-dependent: the kernel's own numbers differ from run to run more than "
                     "any threshold (see the fixtures manifest); numbers reported, not scored")
    elif "series" in timing:
        # a stall at a moment set by jitter, on either side, ends what can be compared
        stalls = [t for t in (ko.stall_at_ns, mo.stall_at_ns) if t is not None and t > t0]
        if stalls:
            scored_end = min(stalls)
            who = "kernel's" if scored_end == ko.stall_at_ns else "model's"
            notes.append(f"timing-dependent: numbers scored up to the {who} stall at "
                         f"{scored_end / 1e9:.3f} s (the first of the two); the whole run is "
                         "reported, not scored")
    metrics = numeric_metrics(k, m, t0, scored_end, th, numbers_scored)
    acks = match_acks(k, m, scored_end)
    acks_full = None
    if scored_end != end_ns:
        metrics += numeric_metrics(k, m, t0, end_ns, th, False, suffix="_whole_run")
        acks_full = match_acks(k, m, end_ns)
    metrics.append(Metric("ack_match", None, None, acks.fraction, th.min_ack_match, numbers_scored))
    if acks_full is not None:
        metrics.append(Metric("ack_match_whole_run", None, None, acks_full.fraction,
                              th.min_ack_match, False))
    # a metric named in the timing-dependent list or the known divergences: reported only
    metrics = [replace(m, scored=False) if m.name in timing or m.name in known else m
               for m in metrics]
    counters = counter_rows(k.counters, model_counters)
    ks = sender_counters(k.meta or {})
    sender = counter_rows(ks, model_sender or {}) if ks else []
    return Score(name, profile, compare_outcomes(ko, mo, timing, known), metrics, acks,
                 acks_full, counters, (t0, end_ns), scored_end, list(timing), th.outcomes,
                 notes=notes, known_divergence=known, sender_counters=sender)
