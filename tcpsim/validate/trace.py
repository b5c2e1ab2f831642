"""A trace (kernel capture, import or simulated run) seen as the series validation compares.

`TraceView` pulls out of the shared schema (tcpsim/trace/schema.py) the few things that are
compared: the receiver's ACKs (time, ack_seq, window), observations of its memory state
(`sk_rmem_alloc`, `sk_rcvbuf`, ...), the application's writes and reads, drops. Times stay on
the trace's own axis; `shifted()` moves a view onto another axis.

Where a row's state is taken matters: a capture's `rx` rows come from `tcp:tcp_probe` and show
the state *before* the segment; a simulated run's rows show the state *after* the event. Both
are point observations of the socket at (almost) that instant, so a step function "the latest
observation at or before t" serves both; the kernel's is at most one segment stale.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcpsim.trace.unreadable import missing_file, reason

# Fields of an observation of the receiver's state, in the order kept in `Obs.values`.
STATE_FIELDS = ("sk_rmem_alloc", "sk_rcvbuf", "rcv_ssthresh", "window_clamp", "rcv_wnd",
                "recv_q", "rcvq_len")


@dataclass(frozen=True, slots=True)
class Ack:
    """One segment the receiver sent (not a SYN or RST): what it acknowledged and offered."""

    t_ns: int
    ack_seq: int
    win: int          # scaled window, bytes
    win_raw: int


@dataclass
class Series:
    """Observations of one state field: sorted times and values (unknown values left out)."""

    t: list[int] = field(default_factory=list)
    v: list[int] = field(default_factory=list)

    def at(self, t_ns: int) -> int | None:
        """The latest observation at or before t_ns (None before the first)."""
        i = bisect.bisect_right(self.t, t_ns)
        return self.v[i - 1] if i else None

    def next_at(self, t_ns: int) -> int | None:
        """The first observation at or after t_ns (None after the last)."""
        i = bisect.bisect_left(self.t, t_ns)
        return self.v[i] if i < len(self.v) else None

    def upto(self, t_ns: int) -> list[int]:
        return self.v[:bisect.bisect_right(self.t, t_ns)]

    def first(self) -> int | None:
        return self.v[0] if self.v else None


@dataclass
class TraceView:
    """The parts of one trace that validation compares (times in the trace's own ns)."""

    source: str
    rx_state: str                     # "before" (tcp_probe) or "after" (simulator)
    acks: list[Ack]
    state: dict[str, Series]          # STATE_FIELDS -> observations of the receiver
    data_t: list[int]                 # arrival times of data segments at the receiver
    writes: list[tuple[int, int, bool]]   # (t, bytes accepted, blocked tick)
    reads: list[tuple[int, int]]          # (t, bytes read)
    drops: list[tuple[int, str]]          # (t, reason)
    syn_t: int | None                 # first SYN seen on the receiver's wire
    counters: dict[str, int]
    meta: dict[str, Any]
    rows: int = 0

    @property
    def end_ns(self) -> int:
        ends = [s.t[-1] for s in self.state.values() if s.t]
        ends += [a.t_ns for a in self.acks[-1:]] + self.data_t[-1:]
        return max(ends, default=0)

    def shifted(self, delta: int) -> "TraceView":
        """The same view with every time moved by delta ns."""
        return TraceView(
            self.source, self.rx_state,
            [Ack(a.t_ns + delta, a.ack_seq, a.win, a.win_raw) for a in self.acks],
            {k: Series([t + delta for t in s.t], list(s.v)) for k, s in self.state.items()},
            [t + delta for t in self.data_t],
            [(t + delta, n, b) for t, n, b in self.writes],
            [(t + delta, n) for t, n in self.reads],
            [(t + delta, r) for t, r in self.drops],
            None if self.syn_t is None else self.syn_t + delta,
            self.counters, self.meta, self.rows)


def load(path: str | Path) -> tuple[dict[str, list], dict[str, Any]]:
    """Read a trace file in time order: ({column: values}, metadata).

    Compact fixtures store rows grouped by (sock, event); a stable sort by (t_ns, sock,
    event) restores the order the capture wrote. Raises TraceFileError (one line) on a file
    that is not a readable trace."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tcpsim.trace.schema import COLUMN_NAMES, OPTIONAL_COLUMNS

    p = Path(path)
    if not p.is_file():
        raise TraceFileError(f"{p}: {missing_file(p)}")
    try:
        table = pq.read_table(p)
    except (pa.ArrowException, OSError) as exc:
        raise TraceFileError(f"{p}: not a readable Parquet trace ({reason(p, exc)}); "
                             "give a file written by tcpsim run --trace, tcpsim.capture or an "
                             "importer") from None
    for col in OPTIONAL_COLUMNS - set(table.column_names):
        table = table.append_column(col, pa.array([-1] * table.num_rows, type=pa.int64()))
    missing = [c for c in COLUMN_NAMES if c not in table.column_names]
    if missing:
        raise TraceFileError(f"{p}: column {missing[0]!r} missing: not a tcpsim trace "
                             "(schema: tcpsim/trace/schema.py)")
    meta = _decode_meta(p, table.schema.metadata)
    table = table.sort_by([("t_ns", "ascending"), ("sock", "ascending"), ("event", "ascending")])
    return table.to_pydict(), meta


def load_meta(path: str | Path) -> dict[str, Any]:
    """Only a trace file's metadata (its footer; no rows read), with load()'s errors."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = Path(path)
    if not p.is_file():
        raise TraceFileError(f"{p}: {missing_file(p)}")
    try:
        schema = pq.read_schema(p)
    except (pa.ArrowException, OSError) as exc:
        raise TraceFileError(f"{p}: not a readable Parquet trace ({reason(p, exc)}); "
                             "give a file written by tcpsim run --trace, tcpsim.capture or an "
                             "importer") from None
    return _decode_meta(p, schema.metadata)


def _decode_meta(p: Path, raw: dict[bytes, bytes] | None) -> dict[str, Any]:
    try:
        return {k.decode(): json.loads(v) for k, v in (raw or {}).items()
                if not k.startswith(b"ARROW")}
    except ValueError as exc:
        raise TraceFileError(f"{p}: metadata is not JSON ({exc})") from None


class TraceFileError(ValueError):
    """A trace file that cannot be read, with what to do about it."""


def view(columns: dict[str, list], meta: dict[str, Any]) -> TraceView:
    """Build a TraceView from trace columns ({name: values}) and metadata."""
    source = str(meta.get("source", ""))
    rx_state = str(meta.get("rx_state") or ("before" if source == "capture" else "after"))
    col = columns
    n = len(col.get("t_ns", []))
    t_ns, sock, event = col["t_ns"], col["sock"], col["event"]
    detail, flags, length = col["detail"], col["flags"], col["len"]
    acks: list[Ack] = []
    state_rows: list[int] = []
    data_wire: list[int] = []
    data_rx: list[int] = []
    writes: list[tuple[int, int, bool]] = []
    reads: list[tuple[int, int]] = []
    drops: list[tuple[int, str]] = []
    syn_t = None
    simulated = source == "tcpsim"
    for i in range(n):
        s, e = sock[i], event[i]
        if e == "tx":
            f = flags[i]
            if "S" in f and syn_t is None:
                syn_t = t_ns[i]
            if s == "rcv":
                if "S" not in f and "R" not in f and col["ack_seq"][i] >= 0:
                    acks.append(Ack(t_ns[i], col["ack_seq"][i], col["win_scaled"][i],
                                    col["win_raw"][i]))
                if simulated:
                    state_rows.append(i)
            elif length[i] > 0 and not simulated:
                data_wire.append(t_ns[i])
        elif s == "rcv":
            if e == "rx":
                state_rows.append(i)
                if length[i] > 0 and detail[i] not in ("old", "ack"):
                    data_rx.append(t_ns[i])
            elif e == "state":
                if detail[i] in ("sample", "ss", "rcvbuf_grow") or simulated:
                    state_rows.append(i)
            elif e == "read":
                reads.append((t_ns[i], length[i]))
                if simulated:
                    state_rows.append(i)
            elif e == "drop":
                drops.append((t_ns[i], col["drop_reason"][i]))
                if simulated:
                    state_rows.append(i)
        elif s == "snd" and e == "write":
            writes.append((t_ns[i], length[i], detail[i] == "blocked"))
    state: dict[str, Series] = {}
    for name in STATE_FIELDS:
        values = col.get(name)
        ser = Series()
        if values is not None:
            for i in state_rows:
                v = values[i]
                if v is not None and v >= 0:
                    ser.t.append(t_ns[i])
                    ser.v.append(v)
        state[name] = _sorted(ser)
    acks.sort(key=lambda a: a.t_ns)
    data_t = sorted(data_wire or data_rx)
    return TraceView(source, rx_state, acks, state, data_t, sorted(writes), sorted(reads),
                     sorted(drops), syn_t, dict(meta.get("counters") or {}), meta, n)


def _sorted(ser: Series) -> Series:
    if all(a <= b for a, b in zip(ser.t, ser.t[1:])):
        return ser
    pairs = sorted(zip(ser.t, ser.v), key=lambda p: p[0])
    return Series([p[0] for p in pairs], [p[1] for p in pairs])
