"""The native engine's runner: the same run as tcpsim/engine/simulation.py, in Rust.

`NativeSimulation` takes what `Simulation` takes and returns the same RunResult and trace:
it hands tcpsim._native.Simulation (native/src/engine/) the scenario's values -- sockets,
link, applications, seed -- runs it in slices, and between slices moves each full group of
trace rows into the recorder as Arrow arrays built from the native column buffers (no
Python object per value) and the receiver's wire into the pcap tap. The summary is built by
simulation.py's `summarize`, from the native sockets' state records: one definition for
both engines.

Everything here is imported only when the native engine runs (start-up stays small).
"""

from __future__ import annotations

import time
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, Callable, Iterator

from tcpsim import interrupt
from tcpsim.core.mib import COUNTERS, Mib
from tcpsim.engine.result import Peaks, RunResult, Tally, few_gc_passes, gc_paused, summarize
from tcpsim.engines import EngineError, base_profile_name, native_policy, native_socket_class
from tcpsim.host.plan import HostPlan, memcg_config, pool_config, with_fields
from tcpsim.policy import Profile
from tcpsim.scenario import Scenario
from tcpsim.workload import App

GROUP_ROWS = 65536          # trace rows per Parquet row group (ParquetRecorder's default)
_STEPS = 1 << 18            # events per slice at most: progress, and Ctrl-C between slices


# The largest integer a native run takes: times, sizes and rates are i64 there, and a time
# plus a delay plus a jitter must not wrap (3 * 2**61 < 2**63).
NATIVE_MAX = 2**61
# cfg's keys as the scenario names them
_CFG_NAMES = {"rcv": "receiver", "snd": "sender", "rev_writer": "receiver.writer",
              "rev_reader": "sender.reader"}


# Keys the range check skips: the seed is checked apart; the captured latency sequences are
# shipped data, bounded once when loaded (tcpsim.app_latency.load_sequences) -- walking their
# million integers took longer than a short run.
_UNCHECKED = ("seed", "latency_sequences", "latency_seq_set", "latency_quantiles")


def _beyond_int64(cfg: Any, path: str = "") -> tuple[str, int] | None:
    """(scenario field, value) of the first integer in a native run's config beyond
    +-NATIVE_MAX (the seed is checked apart), else None."""
    if isinstance(cfg, dict):
        items: Any = ((_CFG_NAMES.get(k, k), v) for k, v in cfg.items() if k not in _UNCHECKED)
    elif isinstance(cfg, (list, tuple)):
        if len(cfg) >= _BULK and _plain_ints_within(cfg):
            return None
        items = ((str(i), v) for i, v in enumerate(cfg))
    elif isinstance(cfg, int) and not isinstance(cfg, bool) and abs(cfg) > NATIVE_MAX:
        return path, cfg
    else:
        return None
    for key, value in items:
        found = _beyond_int64(value, f"{path}.{key}" if path else key)
        if found:
            return found
    return None


_BULK = 64                  # a list this long is checked as one array first


def _plain_ints_within(seq: list[Any] | tuple[Any, ...]) -> bool:
    """True when `seq` is a rectangular array of integers all within +-NATIVE_MAX (a replay's
    ticks: tens of thousands of (time, bytes) pairs, which the walk below took ~0.2 s to
    visit); False for anything else, which the walk then checks and names."""
    import numpy as np
    try:
        a = np.asarray(seq)
    except (ValueError, OverflowError, TypeError):
        return False
    return a.dtype.kind in "iub" and (a.size == 0 or (
        int(a.max()) <= NATIVE_MAX and int(a.min()) >= -NATIVE_MAX))


def native_engine_class() -> type:
    """tcpsim._native.Simulation, or EngineError naming the fix."""
    native_socket_class()                     # the extension is built (else: how to build it)
    from tcpsim import _native
    cls = getattr(_native, "Simulation", None)
    if cls is None:
        raise EngineError("engine 'native': this build of tcpsim._native has no Simulation; "
                          "rebuild it, or use --engine python")
    return cls


def _app(app: App, seed: int) -> dict[str, Any]:
    """An application's config. A captured-sequence timing hands over only the capture the
    run replays (app_latency.py `run_capture`: the host stream's first draw, the draw apps.rs
    `block_sequence` makes, which picks the one capture it is given): a run replays one, and
    decoding a preset's every capture cost more than a short run (tcpsim.latency_file)."""
    from tcpsim.app_latency import (
        DEFAULT_HOST, SEQUENCES, block_wakeups, load_sequences, load_tables, run_capture)
    name = app.latency_table
    if name in SEQUENCES:
        host = app.latency_host or DEFAULT_HOST
        captures = load_sequences(SEQUENCES[name], host)
        return {**app.as_dict(), "latency_quantiles": [],
                "latency_sequences": [captures[run_capture(seed, len(captures))]],
                "latency_block": block_wakeups(host)}
    quantiles = load_tables()[name] if name else []
    return {**app.as_dict(), "latency_quantiles": quantiles, "latency_sequences": [],
            "latency_block": 0}


def _captures(app: App) -> Any:
    """Every captured sequence an app's timing may replay (empty: it replays none)."""
    from tcpsim.app_latency import DEFAULT_HOST, SEQUENCES, load_sequences
    if app.latency_table not in SEQUENCES:
        return ()
    return load_sequences(SEQUENCES[app.latency_table], app.latency_host or DEFAULT_HOST)


def _side(sc: Scenario, sysctls: dict[str, Any], rcv: bool, trace: bool) -> dict[str, Any]:
    """One socket's config: what simulation.py's `TcpSocket(...)` of that end takes."""
    if rcv:
        return {"name": "rcv", "sysctl": sysctls, "device": sc.device, "initcwnd": 10,
                "nodelay": True, "init_rwnd": sc.initrwnd, "so_rcvbuf": sc.so_rcvbuf,
                "trace": trace, "mtu": sc.link.mtu, "hz": sc.hz}
    return {"name": "snd", "sysctl": sysctls, "device": sc.sender_device,
            "initcwnd": sc.initcwnd, "nodelay": sc.nodelay, "init_rwnd": 0, "so_rcvbuf": 0,
            "trace": trace, "mtu": sc.link.mtu, "hz": sc.hz}


_LINK_KEYS = ("delay_ab", "delay_ba", "rate_bps", "queue_limit", "loss", "jitter", "burst", "limit")
_LINK_AT = {k: i for i, k in enumerate(_LINK_KEYS)}
_ROLES = ("writer", "reader", "rev_writer", "rev_reader")
# the native engine's flows, a column each (py_engine.rs `flow_specs`): the receiver's and
# sender's sockets and the apps (indices; None: no such app), the link's fields, the apps'
# start times, seed, whether the receiver is the client, duration, start, stop, class
FLOW_COLUMNS = ("rcv", "snd", *(f"link.{k}" for k in _LINK_KEYS), *_ROLES,
                *(f"start.{r}" for r in _ROLES), "seed", "receiver_client", "duration",
                "start", "stop", "cls")


def _flows_cfg(plan: HostPlan, profile: Profile, wants: Callable[[str], bool]) -> dict[str, Any]:
    """The plan's flows as the native engine takes them: {"sockets": [socket configs],
    "apps": [app configs], "flows": {column: [a value per flow]} (FLOW_COLUMNS: indices
    into both and each flow's own values)}. Flows that share a
    socket configuration or an application share its entry (a host of thousands of flows of
    a few classes holds a few of each, and the captured latency sequences once)."""
    sockets: list[dict[str, Any]] = []
    socket_ids: dict[Any, int] = {}
    apps: list[dict[str, Any]] = []
    app_ids: dict[App, int] = {}
    # by the table object: a class's flows share their scenario's tables (kept alive here)
    sysctl_memo: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}

    def sysctls_of(table: dict[str, Any]) -> dict[str, Any]:
        if id(table) not in sysctl_memo:
            sysctl_memo[id(table)] = (table, profile.default_sysctls().with_overrides(
                table, known=profile.known_sysctls(), profile=profile.name).as_dict())
        return sysctl_memo[id(table)][1]

    def socket_id(side: dict[str, Any]) -> int:
        key = tuple((k, id(v) if isinstance(v, dict) else v) for k, v in side.items())
        if key not in socket_ids:
            socket_ids[key] = len(sockets)
            sockets.append(side)
        return socket_ids[key]

    seq_sets: list[Any] = []
    seq_ids: dict[int, int] = {}

    def app_id(app: App | None) -> int | None:
        """The app's entry without its start (flows of a class differ only in start times:
        each flow gives its apps' starts)."""
        if app is None:
            return None
        base = with_fields(app, start=0)
        if base not in app_ids:
            app_ids[base] = len(apps)
            d = _app(base, 0)
            # a class's flows have their own seeds, hence their own captures: every capture
            # of the preset goes over once, and each flow's draw picks its own (apps.rs
            # `block_sequence`, as app_latency.py `run_capture` does for the Python engine)
            seqs = _captures(base)
            d["latency_sequences"], d["latency_seq_set"] = [], -1
            if seqs:          # the captures, handed over once however many apps replay them
                if id(seqs) not in seq_ids:
                    seq_ids[id(seqs)] = len(seq_sets)
                    seq_sets.append(seqs)
                d["latency_seq_set"] = seq_ids[id(seqs)]
            apps.append(d)
        return app_ids[base]

    # what flows of one class share, made once: by (its scenario's identity, traced ends,
    # a drawn mtu) -> (receiver socket, sender socket, the base's link fields, receiver's
    # role, duration); applications by identity (flows that drew the same values share them)
    shared: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    # by the identity of a flow's apps (a class's flows that drew the same values share
    # them): (the apps, kept alive; their entries; their own starts, None for none)
    apps_of: dict[int, tuple[Any, tuple[int | None, ...], tuple[int | None, ...]]] = {}

    rows = []
    traced_set = plan.traced
    for i, f in enumerate(plan.flows):
        p = f.parts
        sc = p.base
        trace_rcv = trace_snd = False
        if i in traced_set:
            trace_rcv, trace_snd = wants("rcv"), wants("snd")
        key = (id(sc), trace_rcv, trace_snd, p.link.get("mtu") if p.link else None)
        got = shared.get(key)
        if got is None:
            link_sc = with_fields(sc, link=with_fields(sc.link, **p.link)) if p.link else sc
            got = shared[key] = (
                socket_id(_side(link_sc, sysctls_of(sc.sysctl), True, trace_rcv)),
                socket_id(_side(link_sc, sysctls_of(sc.sender_sysctl), False, trace_snd)),
                tuple(getattr(sc.link, k) for k in _LINK_KEYS),
                sc.receiver_role == "client", sc.duration, sc)
        rcv, snd, link, client, duration, _ = got
        if p.link:
            fields = list(link)
            for k, v in p.link.items():
                fields[_LINK_AT[k]] = v
            link = tuple(fields)
        a = apps_of.get(id(p.apps))
        if a is None:
            w, r, rw, rr = p.apps
            if rw is None or rr is None:          # two-way only with both reverse apps
                rw = rr = None
            roles = (w, r, rw, rr)
            a = apps_of[id(p.apps)] = (p.apps, tuple(app_id(x) for x in roles),
                                       tuple(None if x is None else x.start for x in roles))
        _, ids, (s0, s1, s2, s3) = a
        shift = p.shift
        rows.append((rcv, snd, *link, *ids,
                     0 if s0 is None else s0 + shift, 0 if s1 is None else s1 + shift,
                     0 if s2 is None else s2 + shift, 0 if s3 is None else s3 + shift,
                     p.seed, client, duration, f.start, f.stop, f.cls))
    flows = {k: list(col) for k, col in zip(FLOW_COLUMNS, zip(*rows))}
    return {"sockets": sockets, "apps": apps, "flows": flows, "latency_sequences": seq_sets}


def flow_rows(flows: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    """The flows' columns (`_flows_cfg`) as one record per flow: {"link": {field: value},
    "starts": (the apps' starts), and the other columns by name}."""
    n = len(flows["rcv"])
    for i in range(n):
        row = {k: col[i] for k, col in flows.items()}
        row["link"] = {k: row.pop(f"link.{k}") for k in _LINK_KEYS}
        row["starts"] = tuple(row.pop(f"start.{r}") for r in _ROLES)
        yield row


def _too_large(cfg: dict[str, Any]) -> tuple[str, int] | None:
    """(scenario field, value) of the first integer of a native run's config beyond
    +-NATIVE_MAX, named as the scenario names it (the flows' sockets and apps by role; each
    socket and app checked once however many flows share it)."""
    found = _beyond_int64({k: v for k, v in cfg.items()
                           if k not in ("sockets", "apps", "flows", "latency_sequences")})
    if found is None and not _may_be_too_large(cfg):
        return None
    seen: set[tuple[str, int]] = set()
    for flow in flow_rows(cfg["flows"]):
        found = found or _beyond_int64(flow["link"], "link") or _beyond_int64(
            {k: flow[k] for k in ("start", "stop", "duration")})
        for role, t in zip(_ROLES, flow["starts"]):
            if abs(t) > NATIVE_MAX:
                return f"{_CFG_NAMES.get(role, role)}.start", t
        for key, table in (("rcv", "sockets"), ("snd", "sockets"), ("writer", "apps"),
                           ("reader", "apps"), ("rev_writer", "apps"), ("rev_reader", "apps")):
            i = flow[key]
            if i is None or (table, i) in seen:
                continue
            seen.add((table, i))
            found = found or _beyond_int64(cfg[table][i], _CFG_NAMES.get(key, key))
        if found:
            return found
    return found


# the flows' columns of numbers `_may_be_too_large` bounds (the others are indices, flags
# and the seed, checked apart)
_NUMBER_COLUMNS = tuple(k for k in FLOW_COLUMNS if k.startswith(("link.", "start."))) + (
    "start", "stop", "duration")


def _may_be_too_large(cfg: dict[str, Any]) -> bool:
    """A quick look before `_too_large`'s walk, which names the field: False when no number
    of the flows (links, start, stop, duration, their apps' starts), their sockets or their
    apps is beyond +-NATIVE_MAX (a column at a time: a host of 66 000 flows took over a
    second to walk)."""
    flows = cfg["flows"]
    try:
        for k in _NUMBER_COLUMNS:
            col = flows[k]
            if col and max(max(col), -min(col)) > NATIVE_MAX:
                return True
    except TypeError:           # something not a number: the walk decides
        return True
    return any(_beyond_int64(d) is not None for table in ("sockets", "apps") for d in cfg[table])


class _SockView:
    """A native socket's final state with the Python socket's attribute names (what
    `summarize` reads): records conn/rcv/mem/snd, mib, error, ss_line()."""

    def __init__(self, d: dict[str, Any]) -> None:
        for rec in ("conn", "rcv", "mem", "snd"):
            setattr(self, rec, SimpleNamespace(**d[rec]))
        self.mib = Mib()
        core = set(COUNTERS)
        for name, value in d["mib"]:
            if name in core or value:
                setattr(self.mib, name, value)
        self.error = d["error"]
        self._ss = d["ss"]

    def ss_line(self) -> str:
        return self._ss


class NativeSimulation:
    """A host run by the native engine (simulation.py `Simulation`'s interface): one scenario
    (a host of one flow) or a host plan (`of_host`)."""

    def __init__(self, scenario: Scenario, profile: Profile, sink: Any = None,
                 skip: bool = True, tap: Any = None, replay: dict[str, Any] | None = None,
                 plan: HostPlan | None = None) -> None:
        """`replay`: `tcpsim validate`'s (and `tcpsim replay`'s) applications in place of the
        scenario's writer and reader ({"writer": {"ticks", "n", "bulk", "schedule"} or None,
        "reader": {"ticks"} or None}; tcpsim/validate/replay.py, native/src/engine/replay.rs)."""
        self.scenario = scenario
        self.profile = profile
        self.sink = sink
        self.tap = tap
        self.plan = plan = plan or HostPlan.single(scenario)
        self._groups: Any = None              # TraceGroups, once the first group is taken
        self.cut_at: int | None = None        # where a stop cut the run short (ns), if one did
        sysctls = profile.default_sysctls().with_overrides(
            scenario.sysctl, known=profile.known_sysctls(), profile=profile.name)
        self.sysctls = sysctls
        patches, py_policy = native_policy(profile)
        if py_policy is not None and len(plan.flows) > 1:
            raise EngineError("engine 'native': a host of many connections cannot run a Python "
                              "patch (--policy FILE.py:Class); use --engine python")
        cls = native_engine_class()
        wants = sink.wants if sink is not None else (lambda name: False)
        cfg = {
            "profile": base_profile_name(profile), "patches": patches, "py_policy": py_policy,
            "duration": plan.duration, "skip": skip, "tap": tap is not None,
            "sample_every": plan.sample_every, "ncpus": plan.ncpus,
            "local_peers": plan.local_peers,
            "threads": plan.threads, "parallel": plan.run_mode != "ordered",
            "probe": plan.run_mode == "probe",
            "pool": pool_config(plan, profile),
            "memcg": memcg_config(plan, profile),
            "replay_writer": (replay or {}).get("writer"),
            "replay_reader": (replay or {}).get("reader"),
        }
        with gc_paused():
            cfg.update(_flows_cfg(plan, profile, wants))
        for seed in cfg["flows"]["seed"]:
            if not -(2**125) <= seed < 2**125:
                raise EngineError(f"seed {seed}: the native engine takes seeds within "
                                  "+-2**125; use a smaller seed or --engine python")
        too_large = _too_large(cfg)
        if too_large:
            field, value = too_large
            where = f"{scenario.source}: " if scenario.source else ""
            raise EngineError(f"{where}{field} = {value}: too large for the native engine's 64-bit "
                              f"integers (at most {NATIVE_MAX:_} ns or bytes, about 73 years); "
                              "use a smaller value or --engine python")
        try:
            self.sim = cls(cfg)
        except ValueError as exc:
            raise EngineError(f"engine 'native': {exc}; use --engine python") from None

    @classmethod
    def of_host(cls, plan: HostPlan, profile: Profile, skip: bool = True,
                sink: Any = None) -> "NativeSimulation":
        """A host of many connections (tcpsim/host/plan.py)."""
        return cls(plan.flows[0].scenario, profile, sink=sink, skip=skip, plan=plan)

    def run(self, progress: Callable[[int], None] | None = None) -> RunResult:
        """Run for the scenario's duration; the trace goes to the sink group by group."""
        self.run_loop(progress)
        return self.result(self.wall)

    def run_loop(self, progress: Callable[[int], None] | None = None) -> None:
        """Run for the host's duration (`wall`: the seconds it took); a host's numbers are
        then `host_stats()`."""
        sim = self.sim
        sink = self.sink
        rows = GROUP_ROWS if sink is not None else 1 << 62
        stop = interrupt.requested if interrupt.active() else None
        wall = time.perf_counter()
        with few_gc_passes():
            while not sim.finished:
                sim.run_some(rows, _STEPS)
                if self.tap is not None:
                    self._feed_tap()
                while sink is not None and sim.rows() >= GROUP_ROWS:
                    self._feed_sink(GROUP_ROWS)
                if progress is not None:
                    progress(sim.now)
                if stop is not None and stop() is not None and not sim.finished:
                    self.cut_at = sim.now          # a stop asked for: end at this slice
                    break
            if sink is not None and sim.rows():
                self._feed_sink(sim.rows())
        self.wall = time.perf_counter() - wall

    def host_stats(self, flows: bool = True) -> dict[str, Any]:
        """The host's samples and per-flow records (tcpsim/host/outputs.py); `flows` False:
        without the per-flow records (`host_flows` gives them as rows)."""
        return dict(self.sim.host_stats(flows))

    def host_flows(self, counters: tuple[str, ...]) -> list[tuple[int, ...]]:
        """The flows' final numbers as `host_stats` has them, a tuple per flow: (index,
        cls, start, stop, established_at, written, read_bytes, received, q_area,
        peak_rmem, then the core counters named in `counters`, 0 where a flow has none)."""
        return list(self.sim.host_flows(list(counters)))

    def close(self) -> None:
        """Free the native simulation now (its memory), not when the last frame referring to
        this object goes. The result already returned by `run` stays valid; the simulation
        cannot run again."""
        self.sim = None

    def _feed_tap(self) -> None:
        segment = self.tap.segment
        for t, from_rcv, seg in self.sim.take_tap():
            segment(t, from_rcv, seg)

    def _feed_sink(self, n: int) -> None:
        if self._groups is None:
            from tcpsim.trace.columns import TraceGroups
            self._groups = TraceGroups()
        self.sink.ready()         # the group before written: this one is held alone
        ints, codes, distinct, flows = self.sim.take_rows(n)
        table = self._groups.table(ints, codes, distinct)
        by_flow = getattr(self.sink, "record_flows", None)
        if by_flow is not None:   # a host's per-connection traces (tcpsim/host/traces.py)
            by_flow(table, flows)
        else:
            self.sink.record_table(table)

    def result(self, wall: float) -> RunResult:
        """The RunResult, built by simulation.py's `summarize`."""
        st = self.sim.stats()
        self.replay_size_mismatch: tuple[int, int] = st["replay_size_mismatch"]
        rcv, snd = _SockView(st["rcv"]), _SockView(st["snd"])
        rev = st["rev_written"] is not None
        tally = Tally(events=st["events"], packets=st["packets"],
                      established_at=st["established_at"], died_at=st["died_at"],
                      written=st["written"], read_bytes=st["read_bytes"],
                      peaks=Peaks(*st["rcv"]["peaks"]),
                      rev_written=st["rev_written"] if rev else None,
                      rev_read_bytes=st["rev_read_bytes"] if rev else None,
                      rev_peaks=Peaks(*st["snd"]["peaks"]))
        return summarize(self.scenario, self.profile, self.sysctls.as_dict(), rcv, snd, tally,
                         wall, self.cut_at)
