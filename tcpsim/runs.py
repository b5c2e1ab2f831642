"""Outcome distributions: one scenario run over N seeds (`tcpsim run --runs N`, `compare
--runs N`), each run classified the same way a kernel capture is (tcpsim/validate/outcomes.py).

A run with application timing (tcpsim/workload.py) or a lossy/jittery link is one draw of a
distribution; two captures of one workload reach the zero window tens of seconds apart
(issue 14). Seeds are `seed, seed+1, ..., seed+N-1` (the scenario's seed unless --seed).

Per run, the outcomes -- each defined once:

    zero_window   the receiver advertised a zero window at least once (a zero-window ACK
                  in the trace; outcomes.zero_window)
    stall         after a zero-window ACK, ack_seq did not advance for 500 ms or more
                  (outcomes.stall: the connection sat at a zero window)
    drops         `drops` of tcpsim/engine/counts.py (RcvQDrop + OFODrop + ZeroWindowDrop +
                  BeyondWindow) above zero
    death         the connection died (summary `died_at_s` set: an abort or a timeout)
    unbounded     memory outcome "unbounded" (the queue dragged sk_rcvbuf up)

and the figures whose spread is reported (median, min, max over the runs):

    peak_sk_rmem_alloc, final_sk_rmem_alloc (memory at the end), first_zero_window_s
    (runs that reached one), stall_at_s
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tcpsim.engine.counts import drops

OUTCOMES = ("zero_window", "stall", "drops", "death", "unbounded")
FIGURES = ("peak_sk_rmem_alloc", "final_sk_rmem_alloc", "first_zero_window_s", "stall_at_s")


@dataclass(frozen=True)
class RunOutcome:
    """One seed's run: its outcomes and figures (None: the run has no such time)."""

    seed: int
    outcomes: dict[str, bool]
    figures: dict[str, float | int | None]
    measured: dict[str, Any] = field(default_factory=dict)   # run_seeds(measure=...)'s


def classify(summary: dict[str, Any], counters: dict[str, int], trace: Path | Any,
             end_ns: int) -> tuple[dict[str, bool], dict[str, float | int | None]]:
    """The outcomes and figures of one finished run whose trace is at `trace` (or already
    read: a tcpsim.validate.trace.TraceView)."""
    from tcpsim.validate.outcomes import outcomes
    from tcpsim.validate.trace import TraceView, load, view
    v = trace if isinstance(trace, TraceView) else view(*load(trace))
    o = outcomes(v, end_ns)
    first_zw = next((a.t_ns for a in v.acks if a.win == 0), None)
    got = {"zero_window": bool(o.zero_window), "stall": bool(o.stall),
           "drops": bool(drops(counters)), "death": summary.get("died_at_s") is not None,
           "unbounded": o.memory == "unbounded"}
    figs = {"peak_sk_rmem_alloc": summary.get("peak_sk_rmem_alloc"),
            "final_sk_rmem_alloc": summary.get("final_sk_rmem_alloc"),
            "first_zero_window_s": None if first_zw is None else round(first_zw / 1e9, 3),
            "stall_at_s": None if o.stall_at_ns is None else round(o.stall_at_ns / 1e9, 3)}
    return got, figs


def run_seeds(scenario: Any, opts: Any, runs: int,
              each: Callable[[RunOutcome], None] | None = None,
              measure: Callable[[Any, Any, int], dict[str, Any]] | None = None) -> list[RunOutcome]:
    """Run `scenario` with `opts` (tcpsim.runner.RunOptions) for `runs` seeds.

    `measure(view, run, end_ns)`, if given, takes more figures from each run (its trace
    as a tcpsim.validate.trace.TraceView, the tcpsim.api.Run, the end of the run) into
    RunOutcome.measured; `tcpsim validate --plain` uses it."""
    from dataclasses import replace

    from tcpsim import interrupt
    from tcpsim.api import run_with
    from tcpsim.runner import prepare
    from tcpsim.validate.trace import load, view
    base = opts.seed if opts.seed is not None else scenario.seed
    out = []
    with tempfile.TemporaryDirectory(prefix="tcpsim-runs-") as tmp:
        for i in range(runs):
            seed = base + i
            trace = Path(tmp) / f"seed{i}.parquet"
            o = replace(opts, seed=seed, trace=trace, pcap=None, progress=False)
            result = run_with(scenario, o)
            interrupt.check()                  # a run a stop cut short is not an outcome
            sc, _ = prepare(scenario, o)
            v = view(*load(trace))
            got, figs = classify(result.summary, result.counters, v, sc.duration)
            more = measure(v, result, sc.duration) if measure is not None else {}
            trace.unlink()
            r = RunOutcome(seed, got, figs, more)
            out.append(r)
            if each is not None:
                each(r)
    return out


def spread(results: list[RunOutcome]) -> dict[str, Any]:
    """How often each outcome happened and the median/min/max of each figure."""
    n = len(results)
    counts = {k: sum(r.outcomes[k] for r in results) for k in OUTCOMES}
    figs: dict[str, Any] = {}
    for k in FIGURES:
        vals = [r.figures[k] for r in results if r.figures[k] is not None]
        figs[k] = None if not vals else {"n": len(vals), "median": statistics.median(vals),
                                         "min": min(vals), "max": max(vals)}
    return {"runs": n, "seeds": [r.seed for r in results], "outcomes": counts,
            "figures": figs, "per_run": [{"seed": r.seed, **r.outcomes, **r.figures}
                                         for r in results]}


def capture_starts(scenario: dict[str, Any], seeds: list[int]) -> dict[str, dict[str, Any]]:
    """Per application that replays captured sequences (`latency = "..._blocks"`,
    tcpsim.app_latency): how many of its host preset's captures the `seeds` drew. Each app's
    first block is its capture's start, so seeds on one capture share their first seconds:
    N runs are that many distinct starts, not N. {label: {"host", "captures", "distinct"}}
    from a scenario record (`Scenario.as_dict()`); {} when no app's timing is capture-based."""
    from tcpsim.app_latency import DEFAULT_HOST, SEQUENCES, load_sequences
    from tcpsim.engine.apps import run_capture
    from tcpsim.workload import APP_ROLES
    out = {}
    for key, label in APP_ROLES:
        app = scenario.get(key) or {}
        name = app.get("latency_table", "")
        if name not in SEQUENCES:
            continue
        host = app.get("latency_host") or DEFAULT_HOST
        n = len(load_sequences(SEQUENCES[name], host))
        out[label] = {"host": host, "captures": n,
                      "distinct": len({run_capture(seed, n) for seed in seeds})}
    return out


def format_capture_starts(starts: dict[str, dict[str, Any]], runs: int) -> str:
    """capture_starts() in one line ("" if none), e.g. `capture starts: writer 4, reader 4
    distinct of 6 (dev-vm-loaded) in 10 seeds; ...`."""
    if not starts:
        return ""
    sets = {(c["captures"], c["host"]) for c in starts.values()}
    if len(sets) == 1:
        (n, host), = sets
        apps = ", ".join(f"{label} {c['distinct']}" for label, c in starts.items())
        drawn = f"{apps} distinct of {n} ({host})"
    else:
        drawn = ", ".join(f"{label} {c['distinct']} of {c['captures']} ({c['host']})"
                          for label, c in starts.items())
    return (f"capture starts: {drawn} in {runs} seed{'s' if runs != 1 else ''}; "
            "seeds on one capture share its first block")


def format_spread(name: str, s: dict[str, Any]) -> list[str]:
    """Human-readable lines of a spread."""
    n = s["runs"]
    lines = [f"{name}: {n} runs, seeds {s['seeds'][0]}..{s['seeds'][-1]}",
             "  outcomes: " + ", ".join(f"{k} {v}/{n}" for k, v in s["outcomes"].items())]
    for k, f in s["figures"].items():
        if f is None:
            lines.append(f"  {k:<22} none")
        else:
            lines.append(f"  {k:<22} median {f['median']:g}  range {f['min']:g} .. {f['max']:g}"
                         + (f"  ({f['n']} runs)" if f["n"] != n else ""))
    return lines
