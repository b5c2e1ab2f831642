"""Time stalled, in the kernel's terms, from a run's trace.

**`rwnd_limited_s`** is what `ss -i` prints as `rwnd_limited` and tcp_info as
`tcpi_rwnd_limited`: the time the sending socket's chronograph spent in
TCP_CHRONO_RWND_LIMITED -- "stalled by insufficient receive window". tcp_write_xmit()
[net/ipv4/tcp_output.c] starts it when its loop stopped because the next segment failed
tcp_snd_wnd_test() (`snd_nxt + min(mss, unsent) > snd_una + snd_wnd`: the data was written,
the receiver's window did not admit it) and stops it at the next transmit attempt that was
not stopped by the window; tcp_chrono_stop() ends every chronograph once the write and
retransmit queues are empty; tcp_get_info_chrono_stats() [net/ipv4/tcp.c] reports it. A
zero window is the extreme case (the sender probes), a window smaller than one segment the
everyday one.

From the trace: the condition is evaluated on the sending socket's state after each of its
rows (every write() and every transmitted segment carries snd_una, snd_nxt and snd_wnd) and
holds until its next row, or to the end of the run (or the connection's death). Between two
rows the sender's state changes only when an ACK arrives, and an ACK that opens the window
makes it transmit (a row) -- except when the congestion window or TSO deferral holds the
segment back anyway: there the kernel stops the chronograph at the ACK and this count at the
sender's next row. The MSS is the sender's mss_cache as `ss` shows it at the end of the run.

**`zero_window_s`** is the receiver's side: the time its last advertised window was zero
(from the segment that advertised zero -- TcpExtTCPToZeroWindowAdv -- to the next that
advertised a window again -- TcpExtTCPFromZeroWindowAdv), exact from its transmitted rows.

Neither needs the engines' help: both are read from the trace the engines already write,
so a search whose objective needs them runs each workload with an in-memory trace
(`attempt`, run on the workers) and keeps only these numbers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tcpsim.report.trace import Trace

STALL_FIELDS = ("rwnd_limited_s", "zero_window_s")
_MSS = re.compile(r"\bmss:(\d+)")


def _trace_sink() -> Any:
    """An in-memory trace that keeps the native engine's Arrow groups as they come (no
    row-by-row copy) and the Python engine's rows as MemoryRecorder keeps them; `.trace()`
    gives them as a report Trace. (pyarrow is imported here, not when a search starts.)"""
    import pyarrow as pa
    from tcpsim.report.trace import Trace
    from tcpsim.trace.recorder import MemoryRecorder

    class TraceSink(MemoryRecorder):
        def __init__(self) -> None:
            super().__init__()
            self.tables: list[pa.Table] = []

        def record_table(self, table: pa.Table) -> None:
            self.tables.append(table)

        def trace(self) -> Trace:
            tables = [*self.tables, *([self.table()] if self.rows else [])]
            if not tables:
                return Trace.from_columns({"t_ns": []})
            return Trace.from_arrow(pa.concat_tables(tables))
    return TraceSink()


def rwnd_limited_ns(tr: Trace, mss: int, end_ns: int) -> int:
    """Nanoseconds the sending socket was limited by the receive window (module doc)."""
    idx = tr.rows(sock="snd")
    if not len(idx):
        return 0
    ev = tr.text("event").equals("write")[idx]
    written = np.cumsum(np.where(ev, np.maximum(tr.col("len")[idx], 0), 0))
    t = tr.col("t_ns")[idx]
    una, nxt, wnd = tr.col("snd_una")[idx], tr.col("snd_nxt")[idx], tr.col("snd_wnd")[idx]
    unsent = np.maximum(written + 1 - nxt, 0)           # data starts at sequence 1 (ISN 0)
    limited = (unsent > 0) & (nxt + np.minimum(unsent, max(mss, 1)) > una + wnd)
    until = np.minimum(np.r_[t[1:], end_ns], end_ns)
    return int(np.sum(np.where(limited, np.maximum(until - t, 0), 0)))


def zero_window_ns(tr: Trace, end_ns: int) -> int:
    """Nanoseconds the receiver's last advertised window was zero."""
    idx = tr.rows(sock="rcv", event="tx")
    if not len(idx):
        return 0
    t = tr.col("t_ns")[idx]
    closed = tr.col("win_raw")[idx] == 0
    closed[0] = False                                   # the SYN's window is not a stall
    until = np.minimum(np.r_[t[1:], end_ns], end_ns)
    return int(np.sum(np.where(closed, np.maximum(until - t, 0), 0)))


def stall_fields(tr: Trace, summary: dict[str, Any], snd_ss: str) -> dict[str, float]:
    """STALL_FIELDS of one run, in seconds, from its trace, summary and the sender's ss line."""
    dur_ns = int(round(float(summary.get("duration_s") or 0) * 1e9))
    died = summary.get("died_at_s")
    end_ns = min(dur_ns, int(round(died * 1e9))) if died is not None else dur_ns
    m = _MSS.search(snd_ss or "")
    mss = int(m.group(1)) if m else 536                 # TCP_MSS_DEFAULT
    return {"rwnd_limited_s": round(rwnd_limited_ns(tr, mss, end_ns) / 1e9, 6),
            "zero_window_s": round(zero_window_ns(tr, end_ns) / 1e9, 6)}


def attempt(point: Any, trace: str | None = None) -> tuple[dict[str, Any] | None,
                                                          dict[str, int], str]:
    """tcpsim.sweeps.execute.attempt for a search whose objective needs the stall times:
    the run keeps its trace in memory and its summary gains STALL_FIELDS."""
    from tcpsim.sweeps.execute import guarded
    return guarded(_run_with_stalls, point, trace)


def _run_with_stalls(point: Any, trace: str | None) -> tuple[dict[str, Any], dict[str, int]]:
    from tcpsim.runner import RunOptions, choose_engine, make_simulation, prepare
    sc, profile = prepare(point.scenario, RunOptions(skip=point.skip))
    sink = _trace_sink()
    sim = make_simulation(choose_engine(None, sc), sc, profile, sink=sink, skip=point.skip)
    try:
        result = sim.run(None)
    finally:
        close = getattr(sim, "close", None)
        if close is not None:
            close()
    summary = dict(result.summary)
    summary.update(stall_fields(sink.trace(), summary, result.ss.get("snd", "")))
    return summary, dict(result.counters)
