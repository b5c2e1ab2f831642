"""Run a host scenario on either engine and gather its outputs (tcpsim/host/outputs.py).

`tcpsim run HOST.toml` comes here (tcpsim/cli.py); so does the Python API
(`tcpsim.run_host`) and the host benchmark (benchmarks/host_scale.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from tcpsim.host.outputs import HostResult, host_result
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
    raw, source = read_scenario_file(path)
    return host_with(raw, source, profile, policies, sysctl, duration, seed, sets)


def host_with(raw: dict[str, Any], source: str, profile: str | None = None,
              policies: tuple[str, ...] = (), sysctl: dict[str, Any] | None = None,
              duration: int | None = None, seed: int | None = None,
              sets: tuple[tuple[str, Any], ...] = ()) -> HostScenario:
    """`load_host_with` on a parsed host document (a copy is changed)."""
    import copy
    from tcpsim.scenario import set_field
    raw = copy.deepcopy(raw)
    if profile:
        raw["profile"] = profile
    if policies:
        have = list(raw.get("policies", []))
        raw["policies"] = have + [p for p in policies if p not in have]
    for k, v in (sysctl or {}).items():
        raw.setdefault("sysctl", {})[k] = v
    if duration is not None:
        raw["duration"] = f"{duration}ns"
    if seed is not None:
        raw["seed"] = seed
    for k, v in sets:
        if k == "policy":
            raw["policies"] = [x for x in str(v).split("+") if x.strip() and x != "none"]
        else:
            set_field(raw, k, v, k)
    try:
        return host_from_dict(raw, source)
    except ScenarioError as exc:
        raise ScenarioError(f"{source}: {exc}") from None


def host_summary(r: HostResult) -> dict[str, Any]:
    """A host run's numbers as one flat row (a sweep point's summary): the host's pressure
    figures, then CLASS.FIELD for every class's, then memcg.NAME for a memory cgroup's."""
    p = r.pressure
    out: dict[str, Any] = {
        "duration_s": r.duration / 1e9, "events": r.events, "connections": len(r.flows),
        "pressure_onset_s": p["onset_s"], "in_pressure_ms": p["in_pressure_ms"],
        "peak_sockstat_mem": p["peak_sockstat_mem"],
        "memory_pressures": r.nstat.get("TcpExtTCPMemoryPressures", 0),
    }
    for row in r.classes:
        for k, v in row.items():
            if k != "class":
                out[f"{row['class']}.{k}"] = v
    if r.memcg is not None:             # the memory cgroup's numbers, as memcg.FILE
        out.update({f"memcg.{k}": v for k, v in r.memcg.items() if k != "cgroup"})
    return out


def host_metrics(host: HostScenario) -> list[str]:
    """The columns `tcpsim sweep HOST` shows by default."""
    cols = ["pressure_onset_s", "in_pressure_ms", "peak_sockstat_mem", "memory_pressures"]
    if host.memcg is not None:
        cols += ["memcg.peak_usage_pages", "memcg.refused_charges", "memcg.socket_pressure_ms"]
    for c in host.classes:
        cols += [f"{c.name}.goodput_mbps", f"{c.name}.read_latency_ms", f"{c.name}.drops"]
    return cols


def run_host(host: HostScenario, engine: str | None = None, skip: bool = True,
             timing: str | None = None, sink: Any = None,
             progress: Callable[[int], None] | None = None,
             traced: Sequence[str] | None = None,
             plan_ready: Callable[[HostPlan], None] | None = None) -> HostResult:
    """Expand the host into its flows and run them on `engine` (default: the native engine
    where built). `traced`: the connections whose sockets' rows go to `sink`, as class
    names and connection numbers (tcpsim/host/traces.py `select_connections`; default: the
    host file's `trace_connections`); `plan_ready` sees the plan before the run."""
    from tcpsim.catalog import get_profile
    from tcpsim.runner import choose_engine
    plan = expand(host, timing)
    if traced is not None:
        import dataclasses

        from tcpsim.host.traces import select_connections
        plan = dataclasses.replace(plan, traced=select_connections(traced, plan))
    if plan_ready is not None:
        plan_ready(plan)
    if not plan.traced:
        sink = None           # no rows for it: the native engine runs in one go
    profile = get_profile(host.profile, host.policies)
    eng = choose_engine(engine or host.engine or None, plan.flows[0].scenario)
    if eng == "native":
        return _run_native(host, plan, profile, skip, sink, progress)
    from tcpsim.engine.simulation import Simulation
    sim = Simulation.of_host(plan, profile, skip=skip, sink=sink)
    sim.run_loop(progress)
    flows = [c.record() for c in sim.conns]
    return host_result(plan, profile.name, sim.samples, flows, sim.pool, sim.steps,
                       sim.wall, host.as_dict(), sim.memcg)


def _run_native(host: HostScenario, plan: HostPlan, profile: Any, skip: bool, sink: Any,
                progress: Callable[[int], None] | None) -> HostResult:
    from tcpsim.engine.native import NativeSimulation
    sim = NativeSimulation.of_host(plan, profile, skip=skip, sink=sink)
    sim.run_loop(progress)
    return native_result(host, plan, profile, sim)


def native_result(host: HostScenario, plan: HostPlan, profile: Any, sim: Any) -> HostResult:
    """The outputs of a native host run that has run (`sim`: its NativeSimulation): the
    flows' records from its rows (tcpsim/host/outputs.py `native_flow_records`)."""
    from tcpsim.engine.result import gc_paused
    from tcpsim.host.outputs import native_flow_records
    st = sim.host_stats(flows=False)
    with gc_paused():
        flows = native_flow_records(sim)
        samples = [HostSample(*s) for s in st["samples"]]
        return host_result(plan, profile.name, samples, flows, st.get("pool"), st["events"],
                           sim.wall, host.as_dict(), st.get("memcg"))
