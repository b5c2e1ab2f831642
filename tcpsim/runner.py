"""Run a scenario under a profile: the one function the CLI, benchmarks and tests share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcpsim.engine.simulation import RunResult, Simulation, progress_bar
from tcpsim.profiles import get_profile
from tcpsim.scenario import Scenario, check_hz
from tcpsim.sysctl_parse import check as check_sysctls
from tcpsim.trace.recorder import MemoryRecorder, ParquetRecorder


@dataclass
class RunOptions:
    profile: str | None = None              # overrides the scenario's profile
    policies: tuple[str, ...] = ()          # patches on top (after the scenario's own)
    sysctl: dict[str, Any] | None = None    # overrides on top of the scenario's [sysctl]
    duration: int | None = None             # ns, overrides the scenario's
    seed: int | None = None
    hz: int | None = None                   # CONFIG_HZ to model, overrides the scenario's
    skip: bool = True                       # time skipping (False = tick by tick)
    trace: str | Path | None = None         # Parquet path, or None for no trace
    memory_trace: bool = False              # keep the trace in memory (returned)
    progress: bool = False


def prepare(scenario: Scenario, opts: RunOptions) -> tuple[Scenario, Any]:
    """Apply the options to the scenario and resolve the profile (with patches)."""
    sc = scenario
    if opts.duration is not None:
        sc = sc.with_(duration=opts.duration)
    if opts.seed is not None:
        sc = sc.with_(seed=opts.seed)
    if opts.hz is not None:
        sc = sc.with_(hz=check_hz(opts.hz, "--hz"))
    name = opts.profile or sc.profile
    policies = tuple(sc.policies) + tuple(opts.policies)
    profile = get_profile(name, policies)
    check_sysctls(sc.sysctl, profile, where=sc.source)     # the file's own, naming the file
    if opts.sysctl:
        check_sysctls(opts.sysctl, profile, where="--sysctl")
        sc = sc.with_(sysctl={**sc.sysctl, **opts.sysctl})
    sc = sc.with_(profile=name, policies=policies)
    return sc, profile


def run(scenario: Scenario, opts: RunOptions | None = None) -> tuple[RunResult, MemoryRecorder | None]:
    """Run one scenario; returns the result and, if asked, the in-memory trace."""
    opts = opts or RunOptions()
    sc, profile = prepare(scenario, opts)
    sink: MemoryRecorder | None = None
    if opts.trace:
        sink = ParquetRecorder(opts.trace)
    elif opts.memory_trace:
        sink = MemoryRecorder()
    sim = Simulation(sc, profile, sink=sink, skip=opts.skip)
    result = sim.run(progress_bar(sc.duration, opts.progress))
    if opts.progress:
        import sys
        sys.stderr.write("\n")
    if sink is not None:
        sink.close({"source": "tcpsim", "profile": profile.name, "scenario": sc.as_dict(),
                    "sysctls": result.sysctls, "counters": result.counters,
                    # wall time stays out: the same seed must give the same bytes
                    "summary": {k: v for k, v in result.summary.items() if k != "wall_s"}})
    return result, (sink if opts.memory_trace else None)
