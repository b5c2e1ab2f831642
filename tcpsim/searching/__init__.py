"""`tcpsim search`: find the workload that breaks a policy.

    space      search files: [search] (objective, policies, budget, seed), [set], [space]
    objective  the objectives (higher = worse for the policy), differences of two policies
    reference  "what autotuning alone would give": the reference run of the ratio objectives
    stall      time stalled (the sender's tcpi_rwnd_limited, zero-window time) from a trace
    evaluate   candidate workloads -> validated scenarios -> runs (local pool, Dask), cached
    driver     the optimiser loop (Optuna TPE / random / Hypothesis, seeded, batched) and the
               minimiser
    strategy   the space as a Hypothesis strategy, and Hypothesis as the optimiser
    finding    the minimised finding on disk: scenario file, numbers, comparison

OUT (default searches/NAME) holds runs/<hash>.json (every run, by content hash: a search run
again reads them back, so it resumes), evaluations.parquet (one row per workload evaluated),
search.json (the best, the finding) and finding/ (see tcpsim.searching.finding).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from tcpsim.searching.driver import Progress, SearchResult, run_search
from tcpsim.searching.evaluate import Evaluation, Evaluator
from tcpsim.searching.space import PolicySpec, SearchError, SearchSpec, load_search, parse_search

__all__ = ["SearchError", "SearchResult", "SearchSpec", "load_search", "parse_search",
           "run", "with_overrides"]


def with_overrides(spec: SearchSpec, *, profile: str | None = None,
                   policy: tuple[str, ...] = (), vs_profile: str | None = None,
                   vs_policy: tuple[str, ...] = (), budget: int | None = None,
                   seed: int | None = None, batch: int | None = None,
                   duration: int | None = None, threshold: float | None = None,
                   optimiser: str | None = None, objective: str | None = None) -> SearchSpec:
    """The search with the command line's (or the API's) changes: `profile` replaces the
    searched profile, `policy` adds patches to it; `vs_profile`/`vs_policy` make (or change)
    the `vs` side; `objective` searches the same space for another objective (its own
    default threshold unless `threshold` is given too; named NAME-OBJECTIVE)."""
    out = replace(spec)
    if objective is not None:
        from tcpsim.searching.objective import OBJECTIVES
        if objective not in OBJECTIVES:
            raise SearchError(f"objective: expected one of {', '.join(OBJECTIVES)}, "
                              f"got {objective!r}")
        if objective != spec.objective:        # its own results folder (searches/NAME-OBJECTIVE)
            out.objective, out.threshold = objective, None
            out.name = f"{spec.name}-{objective}"
    if profile is not None or policy:
        out.policy = PolicySpec(profile or spec.policy.profile, (*spec.policy.policy, *policy),
                                spec.policy.sysctl)
    if vs_profile is not None or vs_policy:
        base = spec.vs or PolicySpec(None, (), {})
        out.vs = PolicySpec(vs_profile or base.profile, (*base.policy, *vs_policy), base.sysctl)
    for name, value in (("budget", budget), ("seed", seed), ("batch", batch)):
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value < (0 if name == "seed" else 1):
                raise SearchError(f"{name}: expected a positive integer, got {value!r}")
            setattr(out, name, value)
    if duration is not None:
        out.duration = duration
    if threshold is not None:
        out.threshold = threshold
    if optimiser is not None:
        from tcpsim.searching.space import OPTIMISERS
        if optimiser not in OPTIMISERS:
            raise SearchError(f"optimiser: expected one of {', '.join(OPTIMISERS)}, got {optimiser!r}")
        out.optimiser = optimiser
    if out.objective == "goodput_lost" and out.vs is None:
        raise SearchError("search.objective: goodput_lost compares two policies; add a "
                          "[search.vs] table (or --vs PROFILE)")
    return out


def run(spec: SearchSpec, out: Path | None = None, *, jobs: int = 1, executor: str = "local",
        scheduler: str | None = None, fresh: bool = False, minimise: bool = True,
        progress: Progress | None = None) -> SearchResult:
    """Run a search; with `out`, store every run there (resumable) and write the finding."""
    from tcpsim.searching.finding import write_finding
    cache = None
    if out is not None:
        cache = out / "runs"
        if fresh and cache.is_dir():
            for f in cache.glob("*.json"):
                f.unlink()
    ev = Evaluator(spec, cache, jobs, executor, scheduler)
    try:
        result = run_search(spec, ev, progress, minimise)
        record = None
        if out is not None:
            _write_evaluations(out, result)
            if result.finding is not None and result.best is not None:
                record = write_finding(out, ev, result.finding, result.best, result.threshold)
            (out / "search.json").write_text(json.dumps(summary(result, record), indent=2,
                                                        sort_keys=True, default=str) + "\n")
        return result
    finally:
        ev.close()


def summary(result: SearchResult, record: dict[str, Any] | None = None) -> dict[str, Any]:
    """The search as a JSON-friendly record (what `tcpsim search --json` prints)."""
    from tcpsim.searching.finding import pretty_duration
    spec = result.spec

    def ev(e: Evaluation | None) -> dict[str, Any] | None:
        if e is None:
            return None
        return {"objective": e.objective, "sides": e.sides, "duration_s": e.duration / 1e9,
                "fields": {k: pretty_duration(v) for k, v in e.values.items()}}
    return {"search": spec.name, "objective": spec.objective, "policy": spec.policy.label(),
            "vs": spec.vs.label() if spec.vs else None, "budget": spec.budget,
            "seed": spec.seed, "optimiser": spec.optimiser, "threshold": result.threshold,
            "evaluations": len(result.evaluations),
            "errors": sum(1 for e in result.evaluations if e.error),
            "runs_simulated": result.runs, "best": ev(result.best),
            "found": result.found, "finding": ev(result.finding),
            "minimise_evaluations": result.minimise_evaluations, "finding_files": record and {
                "scenario": "finding/scenario.toml", "compare": "finding/compare.txt"}}


def _write_evaluations(out: Path, result: SearchResult) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tcpsim.searching.finding import pretty_duration
    rows = []
    for i, e in enumerate(result.evaluations):
        row: dict[str, Any] = {"evaluation": i, "objective": e.objective, "error": e.error,
                               "duration_s": e.duration / 1e9}
        row.update({f"side.{k}": v for k, v in e.sides.items()})
        row.update({k: json.dumps(pretty_duration(v)) if not isinstance(v, (int, float, str))
                    else pretty_duration(v) for k, v in e.values.items()})
        rows.append(row)
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    table = pa.table({c: [None if r.get(c) is None else str(r[c]) if not isinstance(
        r.get(c), (int, float)) else r[c] for r in rows] for c in cols}) if rows else pa.table({})
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out / "evaluations.parquet")


def report_lines(result: SearchResult, out: Path | None = None) -> list[str]:
    """What `tcpsim search` prints at the end: the best, the finding and its files."""
    from tcpsim.searching.finding import pretty_duration
    spec = result.spec
    what = spec.objective + (f" ({spec.policy.label()} minus {spec.vs.label()})" if spec.vs
                             else f" ({spec.policy.label()})")
    errors = sum(1 for e in result.evaluations if e.error)
    lines = [f"searched {len(result.evaluations)} workloads for {what}"
             + (f"; {errors} could not run" if errors else "")
             + f"; {result.runs} runs simulated"]

    def fields(e: Evaluation) -> str:
        return ", ".join(f"{k}={pretty_duration(v)}" for k, v in e.values.items()) or "the defaults"
    best = result.best
    if best is None:
        lines.append("no workload could be evaluated")
        return lines
    sides = ", ".join(f"{k} {v:.4g}" for k, v in best.sides.items())
    lines.append(f"best: {best.objective:.4g} ({sides}) at {fields(best)}, "
                 f"{best.duration / 1e9:g} s")
    if result.finding is None:
        if (best.objective or 0.0) >= result.threshold:     # --no-minimise
            lines.append(f"the best reached the threshold {result.threshold:g}; not minimised "
                         "(--no-minimise), no finding written")
        else:
            lines.append(f"no finding: nothing reached the threshold {result.threshold:g}")
        return lines
    f = result.finding
    sides = ", ".join(f"{k} {v:.4g}" for k, v in f.sides.items())
    lines.append(f"finding, minimised in {result.minimise_evaluations} more runs: "
                 f"{f.objective:.4g} ({sides}) at {fields(f)}, {f.duration / 1e9:g} s")
    if out is not None:
        lines.append(f"scenario: {out / 'finding' / 'scenario.toml'}")
        lines.append(f"compare:  {out / 'finding' / 'compare.txt'} (and compare.html)")
    return lines
