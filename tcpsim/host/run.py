"""Run a host scenario on either engine and gather its outputs (tcpsim/host/outputs.py).

`tcpsim run HOST.toml` comes here (tcpsim/cli.py); so does the Python API
(`tcpsim.run_host`) and the host benchmark (benchmarks/host_scale.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from tcpsim.host.outputs import FlowRecord, HostResult, host_result
from tcpsim.host.plan import HostPlan, HostSample
from tcpsim.host.populations import expand
from tcpsim.host.scenario import HostScenario, host_from_dict
from tcpsim.scenario import ScenarioError, read_scenario_file


def load_host_with(path: str | Path, profile: str | None = None,
                   policies: tuple[str, ...] = (), sysctl: dict[str, Any] | None = None,
                   duration: int | None = None, seed: int | None = None,
                   sets: tuple[tuple[str, Any], ...] = ()) -> HostScenario:
    """A host file with a run's options applied to its document before validation
    (--profile, --policy, --sysctl, --duration, --seed; `sets`: FIELD=VALUE settings as a
    sweep axis gives them, e.g. class.bad.count)."""
    from tcpsim.scenario import set_field
    raw, source = read_scenario_file(path)
    if profile:
        raw["profile"] = profile
    if policies:
        raw["policies"] = list(raw.get("policies", [])) + [p for p in policies
                                                           if p not in raw.get("policies", [])]
    for k, v in (sysctl or {}).items():
        raw.setdefault("sysctl", {})[k] = v
    if duration is not None:
        raw["duration"] = f"{duration}ns"
    if seed is not None:
        raw["seed"] = seed
    for k, v in sets:
        set_field(raw, k, v, k)
    try:
        return host_from_dict(raw, source)
    except ScenarioError as exc:
        raise ScenarioError(f"{source}: {exc}") from None


def run_host(host: HostScenario, engine: str | None = None, skip: bool = True,
             timing: str | None = None, sink: Any = None,
             progress: Callable[[int], None] | None = None) -> HostResult:
    """Expand the host into its flows and run them on `engine` (default: the native engine
    where built)."""
    from tcpsim.catalog import get_profile
    from tcpsim.runner import choose_engine
    plan = expand(host, timing)
    profile = get_profile(host.profile, host.policies)
    eng = choose_engine(engine or host.engine or None, plan.flows[0].scenario)
    if eng == "native":
        return _run_native(host, plan, profile, skip, sink, progress)
    from tcpsim.engine.simulation import Simulation
    sim = Simulation.of_host(plan, profile, skip=skip, sink=sink)
    sim.run_loop(progress)
    flows = [c.record() for c in sim.conns]
    return host_result(plan, profile.name, sim.samples, flows, sim.pool, sim.sched.steps,
                       sim.wall, host.as_dict())


def _run_native(host: HostScenario, plan: HostPlan, profile: Any, skip: bool, sink: Any,
                progress: Callable[[int], None] | None) -> HostResult:
    from tcpsim.engine.native import NativeSimulation
    from tcpsim.host.outputs import flow_counters
    sim = NativeSimulation.of_host(plan, profile, skip=skip, sink=sink)
    sim.run_loop(progress)
    st = sim.host_stats()
    extra = profile.counters()
    flows = [FlowRecord(d["index"], d["cls"], d["start"], d["stop"], d["established_at"],
                        d["written"], d["read_bytes"], d["received"], d["q_area"],
                        d["peak_rmem"],
                        flow_counters(d["mib"], extra)) for d in st["flows"]]
    samples = [HostSample(*s) for s in st["samples"]]
    return host_result(plan, profile.name, samples, flows, st.get("pool"), st["events"],
                       sim.wall, host.as_dict())
