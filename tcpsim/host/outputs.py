"""What a host run reports, in the kernel's vocabulary, built once for both engines.

    sockstat      `/proc/net/sockstat`'s TCP line over time, sampled every `sample` (100 ms):
                  inuse (the host's open TCP sockets: one per connection, its receiver end;
                  the remote peers are other machines) and mem (`sk_memory_allocated`, pages,
                  the global counter the limits see -- per-CPU reserves not flushed are not
                  in it, as in the kernel)
    nstat         the host's counters: TcpExtTCPMemoryPressures (entries into pressure),
                  TcpExtTCPMemoryPressuresChrono (ms under pressure, counted when pressure
                  is left -- as the kernel does), and the receive path's drop, prune,
                  collapse and zero-window counters summed over the host's sockets (closed
                  ones included: nstat counters are cumulative)
    pressure      time in pressure (ms, the ongoing episode included), the first sample in
                  pressure (onset, at the sampling period's resolution), peak sockstat mem
    memcg         with a `[memcg]` (tcpsim/core/memcg.py), the cgroup's socket accounting
                  under its own file names -- v1: memory.kmem.tcp.{limit_in_bytes,
                  usage_in_bytes, max_usage_in_bytes}; v2: memory.max, memory.current,
                  memory.peak, memory.stat `sock`, memory.events `max` -- the charges it
                  refused, time under its socket pressure, and its usage at every sample

and per class: connections opened, delivered bytes (read by the applications), goodput
(delivered bits over the run, Mbit/s, and per connection), read latency, drops
(tcpsim.engine.counts.drops), zero windows sent (TcpExtTCPToZeroWindowAdv), prunes, peak
sk_rmem_alloc.

Read latency is how long received data waits in the receive queue, per byte: the area
under the connection's Recv-Q (bytes x time, updated after each of its events) divided by
the bytes that entered it in order (`bytes_received`) -- by Little's law the mean time a
byte spent between its in-order arrival and the application's read, bytes still queued at
the end counting for the time they have waited so far. Reported per class as the
byte-weighted mean (`read_latency_ms`) and the worst connection's (`read_latency_ms_max`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from tcpsim.core.constants import NS_PER_MS, NS_PER_S, PAGE_SIZE
from tcpsim.core.mib import COUNTERS, nstat_name
from tcpsim.engine import counts
from tcpsim.host.plan import HostPlan, HostSample

# the receive path's counters a host sums over its sockets (nstat names)
HOST_COUNTERS = ("TcpExtTCPRcvQDrop", "TcpExtTCPOFODrop", "TcpExtTCPZeroWindowDrop",
                 "TcpExtBeyondWindow", "TcpExtPruneCalled", "TcpExtRcvPruned",
                 "TcpExtOfoPruned", "TcpExtTCPRcvCollapsed", "TcpExtTCPToZeroWindowAdv",
                 "TcpExtTCPFromZeroWindowAdv",
                 "TcpExtTCPWantZeroWindowAdv", "TcpExtTCPAbortOnClose")
POOL_COUNTERS = ("TCPMemoryPressures", "TCPMemoryPressuresChrono")


@dataclass
class FlowRecord:
    """One connection's final numbers (at its close, or at the end of the run)."""

    index: int
    cls: int
    start: int
    stop: int
    established_at: int
    written: int
    read_bytes: int
    received: int
    q_area: int
    peak_rmem: int
    counters: dict[str, int]


@dataclass
class HostResult:
    """A host run's outputs (see the module docstring)."""

    name: str
    profile: str
    duration: int
    samples: list[HostSample]
    nstat: dict[str, int]
    pressure: dict[str, Any]
    classes: list[dict[str, Any]]
    events: int
    wall_s: float
    flows: list[FlowRecord] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    memcg: dict[str, Any] | None = None

    def as_json(self, per_connection: bool = False) -> dict[str, Any]:
        """`tcpsim run HOST --json`: everything but wall time (same seed, same bytes);
        per-connection rows only when asked."""
        out: dict[str, Any] = {
            "host": self.name, "profile": self.profile, "duration_s": self.duration / NS_PER_S,
            "events": self.events, "nstat": self.nstat, "pressure": self.pressure,
            "classes": self.classes,
            "sockstat": [{"t_s": s.t / NS_PER_S, "inuse": s.inuse, "mem": s.mem,
                          "pressure": s.pressure} for s in self.samples],
            "config": self.config,
        }
        if self.memcg is not None:
            out["memcg"] = self.memcg
            for row, smp in zip(out["sockstat"], self.samples):
                row["memcg_pages"] = smp.memcg
        if per_connection:
            out["connections"] = [vars(f) for f in self.flows]
        return out


def flow_counters(mib: Any, extra: tuple[str, ...] = ()) -> dict[str, int]:
    """A receiver's counters keyed as nstat prints them (a Mib, or the native engine's
    [(name, value)] list)."""
    if isinstance(mib, list):
        from tcpsim.core.mib import Mib
        m = Mib()
        for name, value in mib:
            setattr(m, name, value)
        mib = m
    c = mib.as_nstat(extra)
    return {k: int(c[k]) for k in HOST_COUNTERS if k in c}


# HOST_COUNTERS as the core's counters name them (all receive-path counters of the TcpExt MIB)
_CORE_NAMES = tuple(k.removeprefix("TcpExt") for k in HOST_COUNTERS)
assert all(k in COUNTERS and nstat_name(k) == f"TcpExt{k}" for k in _CORE_NAMES)


def native_flow_records(sim: Any) -> list[FlowRecord]:
    """A native host run's flows (tcpsim.engine.native.NativeSimulation) as FlowRecords, in
    index order: its `host_flows` rows, each flow's counters as `flow_counters` gives them
    (every HOST_COUNTERS name, a counter the flow never bumped at zero)."""
    names = HOST_COUNTERS
    return [FlowRecord(i, cls, start, stop, est, written, read, received, area, peak,
                       dict(zip(names, c)))
            for i, cls, start, stop, est, written, read, received, area, peak, *c
            in sim.host_flows(_CORE_NAMES)]


def pool_counters(pool: Any, end: int) -> dict[str, Any]:
    """The pool's counters at the end of a run (`end` ns): entries into pressure, ms in
    pressure as the kernel counts it (episodes left) and with the ongoing one."""
    if pool is None:
        return {"TCPMemoryPressures": 0, "TCPMemoryPressuresChrono": 0, "in_pressure_ms": 0,
                "under_pressure_at_end": False}
    snap = pool if isinstance(pool, Mapping) else pool.snapshot()
    ongoing = (end - snap["memory_pressure"]) // NS_PER_MS if snap["memory_pressure"] >= 0 else 0
    return {"TCPMemoryPressures": snap["TCPMemoryPressures"],
            "TCPMemoryPressuresChrono": snap["TCPMemoryPressuresChrono"],
            "in_pressure_ms": snap["TCPMemoryPressuresChrono"] + ongoing,
            "under_pressure_at_end": snap["memory_pressure"] >= 0}


def memcg_result(memcg: Any, end: int) -> dict[str, Any] | None:
    """The memory cgroup's numbers at the end of a run (`end` ns), under the cgroup files'
    names (bytes, as the files print them), or None without a memcg."""
    if memcg is None:
        return None
    m = memcg if isinstance(memcg, Mapping) else memcg.snapshot()
    page = PAGE_SIZE
    if m["version"] == 1:
        out: dict[str, Any] = {
            "cgroup": "v1",
            "memory.kmem.tcp.limit_in_bytes": m["limit"] * page,
            "memory.kmem.tcp.usage_in_bytes": m["usage"] * page,
            "memory.kmem.tcp.max_usage_in_bytes": m["watermark"] * page}
    else:
        out = {"cgroup": "v2", "memory.max": m["limit"] * page,
               "memory.current": m["usage"] * page, "memory.peak": m["watermark"] * page,
               "memory.stat.sock": m["sock"] * page, "memory.events.max": m["events_max"]}
    since = m["pressure_since"]
    out.update({
        "refused_charges": m["refused"],
        "socket_pressure_entries": m["pressure_entries"],
        "socket_pressure_ms": (m["pressure_ns"] + (end - since if since >= 0 else 0))
        // NS_PER_MS,
        "under_socket_pressure_at_end": since >= 0,
        "peak_usage_pages": m["watermark"],
    })
    return out


def host_result(plan: HostPlan, profile: str, samples: Sequence[HostSample],
                flows: Iterable[FlowRecord], pool: Any, events: int, wall: float,
                config: dict[str, Any] | None = None, memcg: Any = None) -> HostResult:
    """The outputs of a run of `plan`."""
    flows = sorted(flows, key=lambda f: f.index)
    pc = pool_counters(pool, plan.duration)
    nstat = {f"TcpExt{k}": pc[k] for k in POOL_COUNTERS}
    for k in HOST_COUNTERS:
        nstat[k] = sum(f.counters.get(k, 0) for f in flows)
    in_pressure = [s for s in samples if s.pressure]
    pressure = {
        "in_pressure_ms": pc["in_pressure_ms"],
        "under_pressure_at_end": pc["under_pressure_at_end"],
        "onset_s": in_pressure[0].t / NS_PER_S if in_pressure else None,
        "peak_sockstat_mem": max((s.mem for s in samples), default=0),
        "peak_inuse": max((s.inuse for s in samples), default=0),
        "tcp_mem": None if pool is None else list(
            pool["tcp_mem"] if isinstance(pool, Mapping) else pool.tcp_mem),
    }
    return HostResult(plan.name, profile, plan.duration, list(samples), nstat, pressure,
                      class_table(plan, flows), events, wall, flows, config or {},
                      memcg_result(memcg, plan.duration))


def class_table(plan: HostPlan, flows: Sequence[FlowRecord]) -> list[dict[str, Any]]:
    """Per class: what its connections got (see the module docstring)."""
    dur_s = plan.duration / NS_PER_S
    rows = []
    for ci, name in enumerate(plan.classes):
        fs = [f for f in flows if f.cls == ci]
        delivered = sum(f.read_bytes for f in fs)
        received = sum(f.received for f in fs)
        area = sum(f.q_area for f in fs)
        c = {k: sum(f.counters.get(k, 0) for f in fs) for k in HOST_COUNTERS}
        lat = [f.q_area / f.received / NS_PER_MS for f in fs if f.received]
        goodput = delivered * 8 / dur_s / 1e6 if dur_s else 0.0
        rows.append({
            "class": name,
            "connections": len(fs),
            "delivered_bytes": delivered,
            "goodput_mbps": round(goodput, 3),
            "goodput_mbps_per_conn": round(goodput / len(fs), 4) if fs else 0.0,
            "read_latency_ms": round(area / received / NS_PER_MS, 3) if received else None,
            "read_latency_ms_max": round(max(lat), 3) if lat else None,
            "drops": counts.drops(c) or 0,
            "zero_windows_sent": c["TcpExtTCPToZeroWindowAdv"],
            "prunes": c["TcpExtPruneCalled"],
            "collapsed": c["TcpExtTCPRcvCollapsed"],
            "peak_sk_rmem_alloc": max((f.peak_rmem for f in fs), default=0),
        })
    return rows


def format_host(r: HostResult) -> list[str]:
    """`tcpsim run HOST`: the host summary and the per-class table."""
    p = r.pressure
    tcp_mem = f" (tcp_mem {' '.join(map(str, p['tcp_mem']))} pages)" if p.get("tcp_mem") else ""
    onset = f"{p['onset_s']:g} s" if p["onset_s"] is not None else "never"
    lines = [
        f"{r.name} under {r.profile}: {r.duration / NS_PER_S:g} s simulated in {r.wall_s:.2f} s "
        f"({r.events} events, {len(r.flows)} connections)",
        f"  memory pressure{tcp_mem}: onset {onset}, {p['in_pressure_ms']} ms in pressure, "
        f"peak sockstat mem {p['peak_sockstat_mem']} pages, peak inuse {p['peak_inuse']}",
        "host nstat (non-zero):",
    ]
    lines += [f"  {k:<32} {v}" for k, v in r.nstat.items() if v]
    if r.memcg is not None:
        lines.append(f"memory cgroup ({r.memcg['cgroup']}):")
        lines += [f"  {k:<40} {v}" for k, v in r.memcg.items() if k != "cgroup"]
    cols = ("class", "connections", "delivered_bytes", "goodput_mbps", "read_latency_ms",
            "read_latency_ms_max", "drops", "zero_windows_sent", "prunes", "peak_sk_rmem_alloc")
    heads = ("class", "conns", "delivered", "Mbit/s", "read lat ms", "worst ms", "drops",
             "zero win", "prunes", "peak rmem")
    cells = [[("-" if row[c] is None else str(row[c])) for c in cols] for row in r.classes]
    widths = [max(len(h), *(len(x[i]) for x in cells)) for i, h in enumerate(heads)]
    lines.append("per class:")
    lines.append("  " + "  ".join(h.rjust(w) if i else h.ljust(w)
                                  for i, (h, w) in enumerate(zip(heads, widths))))
    for row in cells:
        lines.append("  " + "  ".join(x.rjust(w) if i else x.ljust(w)
                                      for i, (x, w) in enumerate(zip(row, widths))))
    mems = [s.mem for s in r.samples]
    if mems:
        step = max(1, len(mems) // 10)
        lines.append("sockstat (TCP mem pages over time): " + " ".join(
            f"{r.samples[i].t / NS_PER_S:g}s:{mems[i]}{'*' if r.samples[i].pressure else ''}"
            for i in range(0, len(mems), step)) + "   (* under pressure)")
    return lines


def write_host_trace(r: HostResult, path: Any, per_connection: bool = False) -> list[str]:
    """A host's trace, small whatever its size: one row per sample (t_ns, inuse, mem,
    pressure: sockstat's TCP line; memcg_pages with a memory cgroup) in `path` (Parquet),
    the run's outputs (nstat, pressure, per class, the host file) as its metadata under
    b"tcpsim"; with `per_connection`, one row per connection in PATH's sibling
    NAME.connections.parquet. Returns the files written."""
    import json
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq
    out = Path(path)
    meta = {k: v for k, v in r.as_json().items() if k != "sockstat"}
    table = pa.table({"t_ns": [x.t for x in r.samples], "inuse": [x.inuse for x in r.samples],
                      "mem": [x.mem for x in r.samples],
                      "pressure": [x.pressure for x in r.samples]})
    if r.memcg is not None:                  # the memory cgroup's usage, pages
        table = table.append_column("memcg_pages", pa.array([x.memcg for x in r.samples]))
    table = table.replace_schema_metadata({b"tcpsim": json.dumps(meta, sort_keys=True).encode()})
    pq.write_table(table, out)
    written = [str(out)]
    if per_connection:
        rows = [vars(f) for f in r.flows]
        names = ("index", "cls", "start", "stop", "established_at", "written", "read_bytes",
                 "received", "q_area", "peak_rmem")
        cols: dict[str, Any] = {n: [row[n] for row in rows] for n in names}
        cols["class"] = [r.classes[row["cls"]]["class"] for row in rows]
        cols["q_area"] = [float(x) for x in cols["q_area"]]        # bytes x ns overflows int64
        for k in HOST_COUNTERS:
            cols[k] = [row["counters"].get(k, 0) for row in rows]
        conn = out.with_name(out.name.removesuffix(".parquet") + ".connections.parquet")
        pq.write_table(pa.table(cols), conn)
        written.append(str(conn))
    return written
