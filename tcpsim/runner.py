"""Run a scenario under a profile: the one function the CLI, benchmarks and tests share."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from tcpsim.core.constants import NS_PER_S
from tcpsim.engine.result import RunResult, progress_bar, run_eta
from tcpsim.catalog import ProfileError, get_profile
from tcpsim.scenario import Scenario, check_hz
from tcpsim.sysctl_parse import check as check_sysctls

if TYPE_CHECKING:  # pyarrow is imported only by a run that records a trace
    from tcpsim.trace.recorder import MemoryRecorder


@dataclass
class RunOptions:
    profile: str | None = None              # overrides the scenario's profile
    policies: tuple[str, ...] = ()          # patches on top (after the scenario's own)
    sysctl: dict[str, Any] | None = None    # overrides on top of the scenario's [sysctl]
    sender_sysctl: dict[str, Any] | None = None   # ... and of its [sender.sysctl]
    duration: int | None = None             # ns, overrides the scenario's
    seed: int | None = None
    hz: int | None = None                   # CONFIG_HZ to model, overrides the scenario's
    skip: bool = True                       # time skipping (False = tick by tick)
    trace: str | Path | None = None         # Parquet path, or None for no trace
    memory_trace: bool = False              # keep the trace in memory (returned)
    pcap: str | Path | None = None          # write the receiver's packets here (pcap)
    progress: bool = False
    note: Callable[[str], None] | None = None   # told once if the run will take long (pace_note)
    sysctl_origin: str = "--sysctl"         # prefix of a sysctl error ("": none, the API argument)
    sender_sysctl_origin: str = "--sender-sysctl"
    engine: str | None = None               # "python" | "native"; None: the scenario's, else default


def prepare(scenario: Scenario, opts: RunOptions) -> tuple[Scenario, Any]:
    """Apply the options to the scenario and resolve the profile (with patches)."""
    sc = scenario
    if opts.duration is not None:
        sc = sc.with_(duration=opts.duration)
    if opts.seed is not None:
        sc = sc.with_(seed=opts.seed)
    if opts.hz is not None:
        sc = sc.with_(hz=check_hz(opts.hz, "--hz"))
    if sc.source:
        _check_file_profile(sc)
    name = opts.profile or sc.profile
    policies = tuple(sc.policies) + tuple(opts.policies)
    profile = get_profile(name, policies)
    check_sysctls(sc.sysctl, profile, where=sc.source)     # the file's own, naming the file
    if opts.sysctl:
        check_sysctls(opts.sysctl, profile, where=opts.sysctl_origin)
        sc = sc.with_(sysctl={**sc.sysctl, **opts.sysctl})
    check_sysctls(sc.sender_sysctl, profile,
                  where=f"{sc.source}: sender.sysctl" if sc.source else "sender.sysctl")
    if opts.sender_sysctl:
        check_sysctls(opts.sender_sysctl, profile, where=opts.sender_sysctl_origin)
        sc = sc.with_(sender_sysctl={**sc.sender_sysctl, **opts.sender_sysctl})
    sc = sc.with_(profile=name, policies=policies)
    if opts.engine is not None:
        sc = sc.with_(engine=check_engine_name(opts.engine))
    return sc, profile


def _check_file_profile(sc: Scenario) -> None:
    """The scenario file's own profile and policies, an error naming the file and field."""
    for field, policies in (("profile", ()), ("policies", sc.policies)):
        try:
            get_profile(sc.profile, policies)
        except ProfileError as exc:
            raise ProfileError(f"{sc.source}: {field}: {exc}") from None


def run(scenario: Scenario, opts: RunOptions | None = None) -> tuple[RunResult, MemoryRecorder | None]:
    """Run one scenario; returns the result and, if asked, the in-memory trace."""
    opts = opts or RunOptions()
    sc, profile = prepare(scenario, opts)
    if opts.note is not None:
        from tcpsim.workload import idle_notes
        for line in idle_notes({"writer": sc.writer, "reader": sc.reader,
                                "receiver.writer": sc.rev_writer,
                                "sender.reader": sc.rev_reader}, sc.duration):
            opts.note(line)
    sink: MemoryRecorder | None = None
    if opts.trace:
        from tcpsim.trace.recorder import ParquetRecorder
        sink = ParquetRecorder(opts.trace)
    elif opts.memory_trace:
        from tcpsim.trace.recorder import MemoryRecorder
        sink = MemoryRecorder()
    tap = None
    if opts.pcap:
        from tcpsim.pcap.export import PcapTap
        tap = PcapTap(opts.pcap, sc.receiver_role)
    sim = make_simulation(choose_engine(opts.engine, sc), sc, profile, sink=sink,
                          skip=opts.skip, tap=tap)
    progress = progress_bar(sc.duration, opts.progress)
    if opts.note is not None and not opts.progress:
        progress = pace_note(sc.duration, opts.note, progress)
    try:
        result = sim.run(progress)
    finally:
        if tap is not None:
            tap.close()
        # free the engine's state now: a frame kept by a profiler (Dask workers keep those of
        # finished tasks) would otherwise hold the whole simulation for a while
        close = getattr(sim, "close", None)
        if close is not None:
            close()
    if opts.progress:
        import sys
        sys.stderr.write("\n")
    if sink is not None:
        sink.close(result.metadata())
    return result, (sink if opts.memory_trace else None)


_DEFAULT_ENGINE: list[str] = []      # set_default_engine(): the process's own choice


def set_default_engine(engine: str | None) -> None:
    """Make `engine` the default of every run of this process that chooses none (the
    `--engine` option of commands that run many scenarios: claims, validate, bench)."""
    _DEFAULT_ENGINE[:] = [check_engine_name(engine)] if engine else []


def check_engine_name(engine: str) -> str:
    """`engine` if it names an engine, else EngineError listing them."""
    from tcpsim.engines import ENGINES, EngineError
    if engine not in ENGINES:
        raise EngineError(f"--engine {engine}: unknown engine; choose one of: "
                          f"{', '.join(ENGINES)}")
    return engine


def default_engine() -> str:
    """"native" wherever the extension (with its engine) is built, else "python"."""
    if _DEFAULT_ENGINE:
        return _DEFAULT_ENGINE[0]
    from tcpsim.engines import native_available
    return "native" if native_available() else "python"


def choose_engine(option: str | None, sc: Scenario) -> str:
    """The engine a run uses: the option (--engine), else the scenario's `engine` field,
    else the default (the native engine where built; a Python patch, `--policy
    FILE.py:Class`, runs on it too: tcpsim/native_patch.py). An engine chosen that cannot
    run here is an EngineError naming the fix."""
    from tcpsim.engines import check_engine
    engine = option or sc.engine
    if engine:
        return check_engine(engine)
    return default_engine()


def make_simulation(engine: str, sc: Scenario, profile: Any, **kw: Any) -> Any:
    """A Simulation of `engine` (tcpsim/engine/simulation.py or tcpsim/engine/native.py)."""
    if engine == "native":
        from tcpsim.engine.native import NativeSimulation
        return NativeSimulation(sc, profile, **kw)
    from tcpsim.engine.simulation import Simulation
    return Simulation(sc, profile, **kw)


LONG_RUN_S = 60.0          # a run expected to take longer than this (wall seconds) is announced
_PACE_AFTER_S = 2.0        # measure the pace over this much wall time first


def pace_note(total_ns: int, note: Callable[[str], None],
              inner: Callable[[int], None] | None = None,
              clock: Callable[[], float] = time.perf_counter) -> Callable[[int], None]:
    """A progress callback that, once the run has gone on for a couple of seconds, estimates
    the wall time left from the pace so far and, when it is long, says so once through
    `note` (a run of `-d 100000000s` must not silently take days). Calls `inner` too."""
    start = clock()
    said = False

    def cb(now: int) -> None:
        nonlocal said
        if inner is not None:
            inner(now)
        if said or now <= 0:
            return
        wall = clock() - start
        if wall < _PACE_AFTER_S:
            return
        said = True
        left = run_eta(now, total_ns, wall) or 0.0
        if left > LONG_RUN_S:
            note(f"this run will take about {_human(left)} more at its pace so far "
                 f"({now / NS_PER_S:.10g} of {total_ns / NS_PER_S:.10g} simulated seconds in "
                 f"{wall:.0f} s); Ctrl-C stops it, --duration shortens it")
    return cb


def _human(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"
