"""What an engine runs: a host plan -- the flows (one connection each: its scenario, start,
stop and class) and what the host shares (its sysctls, hence `tcp_mem`, and its CPUs).

A scenario is the plan of one flow (`HostPlan.single`); a host scenario expands into many
(tcpsim/host/populations.py). Both engines take the same plan (tcpsim/engine/simulation.py,
tcpsim/engine/native.py), so the flows, their seeds and their times are decided once, here
and in populations.py, never inside an engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from tcpsim.policy import Profile
    from tcpsim.scenario import Scenario
    from tcpsim.workload import App

SAMPLE_EVERY_NS = 100_000_000      # sockstat/nstat sampling period of a host run (100 ms)


APP_ROLES = ("writer", "reader", "rev_writer", "rev_reader")


class FlowParts(NamedTuple):
    """What a flow's scenario is made of, as a host builds thousands of them without making
    each: its class's scenario (`base`, shared), the link fields drawn for it (`link`, None:
    the base's link), its applications before its start shift (`apps`, in APP_ROLES order;
    flows that drew the same values share them), its seed, and `shift`: ns added to every
    application's start (the flow's opening time; 0 when the apps already count from it).
    The native engine reads these directly (tcpsim/engine/native.py `_flows_cfg`)."""

    base: Scenario
    link: dict[str, int] | None
    apps: tuple[App | None, App | None, App | None, App | None]
    seed: int
    shift: int = 0

    def scenario(self) -> Scenario:
        """The flow's scenario: the base with its drawn link, its shifted apps and its seed
        (equal to building it field by field, tcpsim/host/populations.py)."""
        base = self.base
        changes: dict[str, Any] = {}
        if self.link:
            changes["link"] = with_fields(base.link, **self.link)
        for role, app in zip(APP_ROLES, self.apps):
            if app is not None and self.shift:
                app = with_fields(app, start=app.start + self.shift)
            if app is not getattr(base, role):
                changes[role] = app
        changes["seed"] = self.seed
        out: Scenario = with_fields(base, **changes)
        return out


class Flow:
    """One connection of a host: its scenario (with its own seed), when it opens (`start`,
    ns: the receiver end's connect() or listen()) and when both ends close (`stop`, ns; 0:
    it lasts the run), and the index of its class in the plan (0 for a plain scenario).

    A host's flows are given as `parts` (FlowParts) and make their scenario the first time
    it is asked for: the native engine never asks (it reads the parts), the Python engine
    asks as it opens each connection. Immutable, equal by (scenario, start, stop, cls)."""

    __slots__ = ("start", "stop", "cls", "_parts", "_scenario")

    def __init__(self, scenario: Scenario | None = None, start: int = 0, stop: int = 0,
                 cls: int = 0, parts: FlowParts | None = None) -> None:
        if (scenario is None) == (parts is None):
            raise TypeError("Flow: give its scenario or its parts")
        self.start = start
        self.stop = stop
        self.cls = cls
        self._parts = parts
        self._scenario = scenario

    @property
    def scenario(self) -> Scenario:
        sc = self._scenario
        if sc is None:
            assert self._parts is not None
            sc = self._scenario = self._parts.scenario()
        return sc

    @property
    def parts(self) -> FlowParts:
        """The flow's parts (a flow given its scenario: that scenario, nothing drawn)."""
        if self._parts is not None:
            return self._parts
        sc = self.scenario
        return FlowParts(sc, None, (sc.writer, sc.reader, sc.rev_writer, sc.rev_reader),
                         sc.seed)

    def _key(self) -> tuple[Any, ...]:
        return (self.scenario, self.start, self.stop, self.cls)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Flow) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Flow(scenario={self.scenario!r}, start={self.start!r}, stop={self.stop!r}, "
                f"cls={self.cls!r})")


@dataclass(frozen=True)
class HostPlan:
    """A host run: its flows, its classes' names, its own sysctls (what the shared pool reads:
    `net.ipv4.tcp_mem`, `net.core.mem_pcpu_rsv`), CPUs, duration, sampling period and which
    flows' sockets are traced (indices)."""

    flows: tuple[Flow, ...]
    duration: int
    classes: tuple[str, ...] = ("",)
    sysctl: dict[str, Any] = field(default_factory=dict)
    ncpus: int = 1
    sample_every: int = 0
    traced: frozenset[int] = frozenset({0})
    local_peers: bool = False        # the peers' sockets share the host's pool too
    # the host's sockets' memory cgroup (tcpsim/core/memcg.py): (version, limit pages,
    # other pages), None for none
    memcg: tuple[int, int, int] | None = None
    name: str = ""
    seed: int = 1
    # threads >= 2: the host runs in CPU order (cpu_parts; native: src/engine/parallel.rs),
    # its windows on that many threads where nothing shared can tell. How the native engine
    # runs it (the same bytes every way): "threads"; "ordered" on one thread; "probe" on one
    # thread, timing what each thread would have run (benchmarks/host_scale.py)
    threads: int = 1
    run_mode: str = "threads"

    @classmethod
    def single(cls, scenario: Scenario) -> "HostPlan":
        """A scenario as a host of one flow (its sockets traced when the run has a trace)."""
        return cls(flows=(Flow(scenario),), duration=scenario.duration,
                   sysctl=dict(scenario.sysctl), name=scenario.name, seed=scenario.seed)


class HostSample(NamedTuple):
    """The host at one moment: `/proc/net/sockstat`'s TCP line (inuse: the host's open TCP
    sockets; mem: `sk_memory_allocated` in pages), whether TCP is under memory pressure
    (`tcp_memory_pressure`) and, with a memory cgroup, its usage in pages (v1
    memory.kmem.tcp.usage_in_bytes, v2 memory.current; -1 without one)."""

    t: int
    inuse: int
    mem: int
    pressure: bool
    memcg: int = -1


def with_fields(obj: Any, **changes: Any) -> Any:
    """dataclasses.replace for the frozen records of a scenario (Scenario, Link, App: no
    __post_init__, no derived fields) without re-running __init__: a host builds tens of
    thousands of them."""
    new = object.__new__(type(obj))
    d = new.__dict__
    d.update(obj.__dict__)
    d.update(changes)
    return new


def cpu_parts(plan: HostPlan) -> int:
    """How many schedules a host runs on: 1 in host order (threads = 1), else one per CPU
    that has a flow (flow i on CPU i % ncpus; native/src/engine/parallel.rs `parts_for`)."""
    if plan.threads <= 1:
        return 1
    return max(1, min(plan.ncpus, len(plan.flows)))


def host_sysctls(plan: HostPlan, profile: Profile) -> Any:
    """The host's own sysctls: the profile's defaults with the plan's overrides."""
    return profile.default_sysctls().with_overrides(
        plan.sysctl, known=profile.known_sysctls(), profile=profile.name)


def make_pool(plan: HostPlan, profile: Profile) -> Any:
    """The host's TCP memory pool (tcpsim.core.protmem.ProtoMemory: `tcp_mem` in pages, the
    per-CPU reserve `mem_pcpu_rsv`, the CPU count), shared by the host's sockets."""
    from tcpsim.core.protmem import ProtoMemory
    s = host_sysctls(plan, profile)
    return ProtoMemory(tuple(s.tcp_mem), plan.ncpus, s.mem_pcpu_rsv)


def pool_config(plan: HostPlan, profile: Profile) -> dict[str, Any]:
    """The pool's parameters as the native engine takes them."""
    s = host_sysctls(plan, profile)
    return {"tcp_mem": tuple(s.tcp_mem), "pcpu_rsv": s.mem_pcpu_rsv}


def pool_state(pool: Any) -> tuple[int, bool]:
    """(pages allocated: sockstat's mem, under pressure) of a pool."""
    return int(pool.memory_allocated()), bool(pool.under_pressure())


def memcg_config(plan: HostPlan, profile: Profile) -> tuple[int, int, int, bool] | None:
    """The memory cgroup's parameters as both engines take them: the plan's (version, limit
    pages, other pages) and whether the profile's softirq charges are GFP_ATOMIC
    (MEMCG_SOFTIRQ_ATOMIC, models/linux_6_1.py); None without a memcg."""
    if plan.memcg is None:
        return None
    atomic = profile.policy_class().MEMCG_SOFTIRQ_ATOMIC
    return (*plan.memcg, atomic)


def make_memcg(plan: HostPlan, profile: Profile) -> Any:
    """The host's sockets' memory cgroup (tcpsim.core.memcg.MemCgroup), None without one."""
    cfg = memcg_config(plan, profile)
    if cfg is None:
        return None
    from tcpsim.core.memcg import MemCgroup
    return MemCgroup(*cfg)


def host_sample(t: int, inuse: int, pool: Any, memcg: Any = None) -> HostSample:
    """The host's sample at `t`."""
    mem, pressure = pool_state(pool)
    return HostSample(t, inuse, mem, pressure, -1 if memcg is None else memcg.usage)
