"""One search from start to end: propose workloads, evaluate them, keep the best, minimise it.

Proposing is Optuna's (TPE, multivariate, seeded; or its seeded random sampler): a batch of
`batch` workloads is asked for, evaluated in parallel, and told back in the order asked, so
the sequence of proposals depends only on the seed and the results -- not on how many
workers ran them. Every run is stored under its content hash; a search run again with the
same file and seed proposes the same workloads and reads their runs back, which makes it
resumable (interrupt it, run it again: it continues) and deterministic.

Minimising a finding (`minimise`) is delta debugging over the fields rather than an
optimiser: it returns fields to their defaults one at a time while the finding still holds
(objective >= max(threshold, keep * its value)), trying every field of a round in one
parallel batch and keeping the change that leaves the largest objective; then rounds each
remaining number to one or two significant digits; then shortens the duration (halving,
then a finer ladder).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tcpsim.searching.evaluate import Evaluation, Evaluator
from tcpsim.searching.objective import OBJECTIVES
from tcpsim.searching.space import Dim, SearchError, SearchSpec

MIN_DURATION_NS = 100_000_000          # minimising never goes below 0.1 s of simulated time


@dataclass
class SearchResult:
    """What a search found: every evaluation in order, the best, and the minimised finding."""

    spec: SearchSpec
    evaluations: list[Evaluation] = field(default_factory=list)
    best: Evaluation | None = None
    threshold: float = 0.0
    finding: Evaluation | None = None       # the minimised best, if it is a finding
    minimise_evaluations: int = 0
    runs: int = 0                           # runs simulated (the others were read back)

    @property
    def found(self) -> bool:
        return self.finding is not None


Progress = Callable[[int, int, "Evaluation | None"], None]


def threshold_of(spec: SearchSpec) -> float:
    return spec.threshold if spec.threshold is not None else OBJECTIVES[spec.objective].threshold


def _sampler(spec: SearchSpec) -> Any:
    try:
        import optuna
    except ImportError:
        raise SearchError("tcpsim search needs Optuna: pip install 'tcpsim[search]' "
                          "(or: pip install optuna)") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if spec.optimiser == "random":
        return optuna, optuna.samplers.RandomSampler(seed=spec.seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # multivariate TPE is marked experimental
        # group: conditional fields (`when`) make the space dynamic; TPE then models each
        # set of fields that occur together (a static space is one group, as before)
        return optuna, optuna.samplers.TPESampler(
            seed=spec.seed, multivariate=True, n_startup_trials=max(10, 2 * spec.batch),
            group=any(d.when for d in spec.dims))


def _suggest(trial: Any, dim: Dim) -> Any:
    if dim.kind == "choice":
        return dim.value(trial.suggest_categorical(dim.key, list(range(len(dim.choices)))))
    if dim.kind == "integer" and not dim.log:
        return dim.value(trial.suggest_int(dim.key, int(dim.lo), int(dim.hi)))
    return dim.value(trial.suggest_float(dim.key, dim.lo, dim.hi, log=dim.log))


def _propose(trial: Any, spec: SearchSpec, ev: Evaluator) -> dict[str, Any]:
    """One workload from an Optuna trial, define-by-run: a conditional field is asked for
    only when its condition holds on the fields chosen before it."""
    values: dict[str, Any] = {}
    for d in spec.dims:
        if d.applies(values, ev.base_value):
            values[d.key] = _suggest(trial, d)
    return values


def check_space(spec: SearchSpec, ev: Evaluator) -> None:
    """Every end of every range and every choice builds a valid scenario with the other
    fields at their defaults: a space that reaches invalid points is a SearchError naming
    the field before anything runs."""
    from tcpsim.searching.evaluate import USER_ERRORS
    where = f"{spec.path}: " if spec.path is not None else ""
    try:
        ev.build({}, spec.duration)
    except USER_ERRORS as exc:
        raise SearchError(f"{where}the base scenario with [set] and the policy is not a valid "
                          f"scenario: {exc}") from None
    for dim in spec.dims:
        ends = ([dim.value(i) for i in range(len(dim.choices))] if dim.kind == "choice"
                else [dim.value(dim.lo), dim.value(dim.hi)])
        cond = {k: allowed[0] for k, allowed in dim.when}   # a conditional field in its setting
        for v in ends:
            values = {**cond, dim.key: v}
            for other in spec.dims:          # and the fields that come with that setting
                if other.when and other.key not in values and other.applies(values, ev.base_value):
                    values[other.key] = other.value(0 if other.kind == "choice" else other.lo)
            try:
                ev.build(values, spec.duration)
            except USER_ERRORS as exc:
                raise SearchError(f"{where}space.{dim.key}: {v!r} is not a valid value here "
                                  f"({exc})") from None


def run_search(spec: SearchSpec, ev: Evaluator, progress: Progress | None = None,
               minimise_finding: bool = True) -> SearchResult:
    """Search `spec.budget` workloads, then minimise the best if it is a finding."""
    if spec.optimiser == "hypothesis":
        return _run_hypothesis(spec, ev, progress, minimise_finding)
    optuna, sampler = _sampler(spec)
    check_space(spec, ev)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    result = SearchResult(spec, threshold=threshold_of(spec))
    while len(result.evaluations) < spec.budget:
        n = min(spec.batch, spec.budget - len(result.evaluations))
        trials = [study.ask() for _ in range(n)]
        batch = [(_propose(t, spec, ev), spec.duration) for t in trials]
        for trial, e in zip(trials, ev.evaluate(batch)):
            if e.objective is None or not math.isfinite(e.objective):
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, e.objective)
                if result.best is None or e.objective > (result.best.objective or 0.0):
                    result.best = e
            result.evaluations.append(e)
        if progress is not None:
            progress(len(result.evaluations), spec.budget, result.best)
    if result.best is not None and (result.best.objective or 0.0) >= result.threshold \
            and minimise_finding:
        before = len(ev.memo)
        result.finding = minimise(spec, ev, result.best, result.threshold)
        result.minimise_evaluations = len(ev.memo) - before
    result.runs = ev.runs
    return result


def _run_hypothesis(spec: SearchSpec, ev: Evaluator, progress: Progress | None,
                    minimise_finding: bool) -> SearchResult:
    """optimiser = "hypothesis": the property "objective < threshold", targeted and shrunk
    (tcpsim.searching.strategy); the shrunk counterexample's duration is then shortened."""
    from tcpsim.searching.strategy import run_hypothesis
    check_space(spec, ev)
    result = SearchResult(spec, threshold=threshold_of(spec))
    before = ev.runs
    shrunk = run_hypothesis(spec, ev, result, progress, minimise_finding)
    if shrunk is not None and minimise_finding:
        floor = max(result.threshold, spec.keep * (shrunk.objective or 0.0))
        start = len(ev.memo)
        result.finding = shortest_duration(ev, shrunk, floor)
        result.minimise_evaluations = len(ev.memo) - start
    elif shrunk is not None:
        result.best = shrunk
    result.runs = ev.runs - before
    return result


# -- minimising -------------------------------------------------------------------------------------

def _holds(e: Evaluation, floor: float) -> bool:
    return e.objective is not None and e.objective >= floor


def minimise(spec: SearchSpec, ev: Evaluator, best: Evaluation, threshold: float) -> Evaluation:
    """The smallest workload that still shows the finding: fewest fields away from their
    defaults, plain values, shortest duration (see the module's doc)."""
    floor = max(threshold, spec.keep * (best.objective or 0.0))
    dims = {d.key: d for d in spec.dims}
    cur = best
    # 1. fields back to their defaults (a dim's `default`, else the base scenario's value)
    while True:
        cands = []
        for key in cur.values:
            vals = dict(cur.values)
            d = dims.get(key)
            if d is not None and d.default is not None:
                if vals[key] == d.default:
                    continue
                vals[key] = d.default
            else:
                del vals[key]
            cands.append((vals, cur.duration))
        if not cands:
            break
        passing = [e for e in ev.evaluate(cands) if _holds(e, floor)]
        if not passing:
            break
        cur = max(passing, key=lambda e: (e.objective or 0.0, -len(e.values)))
    # 2. numbers toward their defaults: a log-spaced ladder from the default to the value,
    #    keeping the one nearest the default that still holds (the smallest message, ...)
    for key in list(cur.values):
        d = dims.get(key)
        if d is None or d.kind == "choice":
            continue
        target = _number(d, d.default) if d.default is not None else _number(d, ev.base_value(key))
        here = _number(d, cur.values[key])
        if target is None or here is None or target <= 0 or here <= 0 or target == here:
            continue
        steps = [here * (target / here) ** (i / 6) for i in range(5, 0, -1)]   # nearest first
        cands = [({**cur.values, key: d.value(x)}, cur.duration) for x in steps]
        for e in ev.evaluate(cands):
            if _holds(e, floor):
                cur = e
                break
    # 3. plain numbers: one, then two significant digits
    for key in list(cur.values):
        d = dims.get(key)
        if d is None or d.kind == "choice":
            continue
        cands = []
        for digits in (1, 2):
            v = _round(d, cur.values[key], digits)
            if v is not None and v != cur.values[key]:
                cands.append(({**cur.values, key: v}, cur.duration))
        for e in ev.evaluate(cands):
            if _holds(e, floor):
                cur = e
                break
    # 4. the shortest duration
    return shortest_duration(ev, cur, floor)


def shortest_duration(ev: Evaluator, cur: Evaluation, floor: float) -> Evaluation:
    """The shortest duration at which the finding still holds: halvings, then a finer
    ladder below the last that held (never below MIN_DURATION_NS)."""
    ladder = []
    half = cur.duration // 2
    while half >= MIN_DURATION_NS:
        ladder.append(_nice_ns(half))
        half //= 2
    shortest = cur
    for e in ev.evaluate([(cur.values, x) for x in ladder]):
        if not _holds(e, floor):
            break
        shortest = e
    fine = sorted({_nice_ns(int(shortest.duration * f)) for f in (0.9, 0.8, 0.7, 0.6)
                   if shortest.duration * f >= MIN_DURATION_NS}, reverse=True)
    for e in ev.evaluate([(cur.values, x) for x in fine if x < shortest.duration]):
        if not _holds(e, floor):
            break
        shortest = e
    return shortest


def _number(d: Dim, value: Any) -> float | None:
    """A dim's value as the optimiser's number (bytes, ns, the number), or None."""
    from tcpsim.units import parse_duration, parse_rate, parse_size
    if value is None or isinstance(value, bool):
        return None
    try:
        if d.kind == "duration":
            return float(parse_duration(value, d.key))
        if d.kind == "size":
            return float(parse_size(value, d.key))
        if d.kind == "rate":
            return float(parse_rate(value, d.key))
        return float(value)
    except (ValueError, TypeError):
        return None


def _sig(x: float, digits: int) -> float:
    if x == 0:
        return 0.0
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def _round(d: Dim, value: Any, digits: int) -> Any:
    """`value` of dim `d` to `digits` significant digits, within its range; None if not a number."""
    if d.kind == "size" and isinstance(value, int):
        return max(int(d.lo), min(int(d.hi), int(_sig(value, digits))))
    if d.kind == "duration" and isinstance(value, str) and value.endswith("ns"):
        ns = int(_sig(int(value[:-2]), digits))
        return f"{max(int(d.lo), min(int(d.hi), ns))}ns"
    if d.kind == "rate" and isinstance(value, str) and value.endswith("bit"):
        bits = int(_sig(int(value[:-3]), digits))
        return f"{max(int(d.lo), min(int(d.hi), bits))}bit"
    if d.kind == "integer" and isinstance(value, int):
        return int(_sig(value, digits))
    if d.kind == "number" and isinstance(value, (int, float)):
        return _sig(float(value), digits)
    return None


def _nice_ns(ns: int) -> int:
    """A duration rounded to two significant digits (a scenario file reads "1.2s", not
    "1234567890ns")."""
    return int(_sig(ns, 2))
