"""A host's per-connection traces, only where asked: `tcpsim run HOST --trace host.parquet
--trace-connections bad,17` writes, beside the host's own small trace, one file per selected
connection -- `host.conn-17.parquet` -- each a single-connection trace of the usual schema
(tcpsim/trace/schema.py: both sockets' rows, kernel field names) and metadata (its
scenario, profile, counters, summary), so `tcpsim report`, `tcpsim compare --trace` and any
Parquet reader take it as they take `tcpsim run SCENARIO --trace`'s.

Why a file per connection rather than one table with a connection column: every tool that
reads a trace reads one connection's (the report's windows, memory and events are a
connection's story), and a connection's file carries its own metadata -- its scenario as
drawn for it, its class, when it opened and closed, its counters. Times are the host's
(a connection opened at 2 s has its first row at 2 s), as in the host trace's sockstat rows.

Both engines feed the same sink: the Python engine gives each traced flow's sockets its
flow's recorder (`for_flow`), the native engine hands over groups of rows with each row's
flow (`record_flows`), split here in order -- the same rows in the same order either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from tcpsim.scenario import ScenarioError

if TYPE_CHECKING:
    import pyarrow as pa

    from tcpsim.host.outputs import HostResult
    from tcpsim.host.plan import HostPlan
    from tcpsim.trace.recorder import ParquetRecorder

MAX_TRACED = 1000           # files one run may write: a selection beyond is a mistake


def select_connections(selection: Sequence[str], plan: HostPlan,
                       option: str = "--trace-connections") -> frozenset[int]:
    """The connections (indices in the plan: `--connections`' numbers) a selection names:
    class names (every connection of the class over the run, churn included) and
    connection numbers. ScenarioError naming the option for a name or number that is not
    the host's, or a selection of more than MAX_TRACED connections."""
    classes = list(plan.classes)
    n = len(plan.flows)
    out: set[int] = set()
    for word in (w.strip() for item in selection for w in str(item).split(",")):
        if not word:
            continue
        if word.isdigit():
            i = int(word)
            if i >= n:
                raise ScenarioError(f"{option} {word}: {plan.name} has connections 0-{n - 1} "
                                    "over this run (tcpsim run HOST --connections lists them)")
            out.add(i)
        elif word in classes:
            ci = classes.index(word)
            out.update(i for i, f in enumerate(plan.flows) if f.cls == ci)
        else:
            raise ScenarioError(f"{option} {word}: not a class of {plan.name} (classes: "
                                f"{', '.join(classes)}) nor a connection number")
    if len(out) > MAX_TRACED:
        raise ScenarioError(f"{option} {','.join(selection)}: {len(out)} connections, a file "
                            f"each; select at most {MAX_TRACED} (connection numbers, or a "
                            "smaller class)")
    return frozenset(out)


def connection_path(base: str | Path, index: int) -> Path:
    """Connection `index`'s trace beside the host trace `base`: HOST.conn-INDEX.parquet."""
    b = Path(base)
    return b.with_name(f"{b.name.removesuffix('.parquet')}.conn-{index}.parquet")


class ConnectionTraces:
    """The trace sink of a host run that writes the selected connections' rows, one
    Parquet file each (ParquetRecorder), finished with each one's metadata by `close`."""

    def __init__(self, base: str | Path, socks: tuple[str, ...] = ("rcv", "snd"),
                 group_rows: int = 65536) -> None:
        self.base = Path(base)
        self.socks = frozenset(socks)
        self.group_rows = group_rows
        self._recorders: dict[int, ParquetRecorder] = {}
        self._held: dict[int, list[pa.Table]] = {}

    def wants(self, sock: str) -> bool:
        return sock in self.socks

    def for_flow(self, index: int) -> ParquetRecorder:
        """Flow `index`'s recorder (the Python engine gives it to the flow's sockets)."""
        rec = self._recorders.get(index)
        if rec is None:
            from tcpsim.trace.recorder import ParquetRecorder
            rec = self._recorders[index] = ParquetRecorder(
                connection_path(self.base, index), tuple(self.socks), self.group_rows)
        return rec

    def ready(self) -> None:
        """Nothing to wait for: groups are held per connection until they are full."""

    def record_table(self, table: pa.Table) -> None:
        raise TypeError("ConnectionTraces: rows need their flows (record_flows)")

    def record_flows(self, table: pa.Table, flows: Any) -> None:
        """A group of rows of several flows (the native engine's), each row's flow in
        `flows`: each flow's rows, in order, to its file, a row group at a time."""
        import numpy as np
        f = np.asarray(flows, dtype=np.int32) if isinstance(flows, (list, np.ndarray)) \
            else np.frombuffer(flows, dtype=np.int32, count=len(flows))
        if not len(f):
            return
        order = np.argsort(f, kind="stable")
        cuts = np.flatnonzero(np.diff(f[order])) + 1
        for part in np.split(order, cuts):
            i = int(f[part[0]])
            held = self._held.setdefault(i, [])
            held.append(table.take(part))
            if sum(t.num_rows for t in held) >= self.group_rows:
                self._write_held(i)

    def _write_held(self, i: int) -> None:
        import pyarrow as pa
        held = self._held.pop(i, [])
        if held:
            self.for_flow(i).record_table(pa.concat_tables(held))

    def close(self, result: HostResult, plan: HostPlan) -> list[str]:
        """Finish every selected connection's file with its metadata; the paths written, in
        connection order (a selected connection without rows gets an empty trace)."""
        by_index = {f.index: f for f in result.flows}
        written = []
        for i in sorted(plan.traced):
            self._write_held(i)
            rec = self.for_flow(i)
            rec.close(connection_metadata(result, plan, i, by_index.get(i)))
            written.append(str(rec.path))
        return written


def connection_metadata(result: HostResult, plan: HostPlan, index: int,
                        record: Any) -> dict[str, Any]:
    """A connection's trace metadata, as a single-connection trace's (source, profile,
    scenario, sysctls, counters, summary) plus where it sat in the host."""
    from tcpsim.core.constants import NS_PER_S
    flow = plan.flows[index]
    scenario = flow.scenario.as_dict()
    end = (flow.stop or plan.duration) if record is None else (record.stop or plan.duration)
    host = {"name": plan.name, "class": plan.classes[flow.cls], "connection": index,
            "start_s": flow.start / NS_PER_S, "stop_s": flow.stop / NS_PER_S if flow.stop else None}
    summary: dict[str, Any] = {"duration_s": end / NS_PER_S, "host": host}
    counters: dict[str, int] = {}
    if record is not None:
        summary.update(bytes_read=record.read_bytes, bytes_written=record.written,
                       peak_sk_rmem_alloc=record.peak_rmem)
        counters = dict(record.counters)
    return {"source": "tcpsim", "profile": result.profile, "scenario": scenario,
            "sysctls": dict(flow.scenario.sysctl), "counters": counters, "summary": summary,
            "host": host}
