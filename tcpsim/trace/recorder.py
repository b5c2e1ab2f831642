"""Trace recorders: the sink the sans-IO core reports events to.

`ParquetRecorder` keeps rows in a small columnar buffer and writes them to a Parquet file in
row groups, so a 35-minute run never holds its trace in memory. `MemoryRecorder` keeps the
rows (tests, reports of short runs). Both implement the core's TraceSink: `record()` takes
one event (a flat tuple, EVENT_FIELDS of tcpsim/trace/schema.py) and never sees the socket.
"""

from __future__ import annotations

import json
from operator import itemgetter
from struct import Struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc  # noqa: F401  (pa.ipc)
import pyarrow.parquet as pq

from tcpsim.core.segment import SYN, flags_str
from tcpsim.trace.schema import COLUMN_NAMES, COLUMNS, EV_STATE, STATE_COLUMNS, TraceEvent

_ARROW = {"int64": pa.int64(), "string": pa.string()}
SCHEMA = pa.schema([(name, _ARROW[t]) for name, t, _ in COLUMNS])


_FLAGS = [flags_str(f) for f in range(64)]

# Positions of the integer and the string columns in the schema: a row is built as two
# tuples, one per kind, so the Parquet recorder can store the integers in a flat int64
# buffer while they are hot (converting millions of Python ints later is the slow part).
INT_POS = tuple(i for i, (_, t, _) in enumerate(COLUMNS) if t == "int64")
STR_POS = tuple(i for i, (_, t, _) in enumerate(COLUMNS) if t == "string")
_PACK_ROW = Struct(f"={len(INT_POS) + 1}q").pack     # a row's integers and its string code
# The temporary stream is compressed with lz4: uncompressed it takes ~250 bytes a row (2 GB
# for case b of `tcpsim bench`), lz4 ~50 at no measurable CPU cost (zstd: ~18, 10 % slower).
_STREAM_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


# The integer columns of a row: the event's time, what the segment says, the socket's state
# (the event's STATE_COLUMNS, in order), the collapse cost.
_SEG_INTS = ("t_ns", "seq", "end_seq", "len", "truesize", "ack_seq", "win_raw", "win_scaled")
assert tuple(COLUMNS[i][0] for i in INT_POS) == _SEG_INTS + STATE_COLUMNS + ("collapse_ns",)
assert tuple(COLUMNS[i][0] for i in STR_POS) == ("sock", "event", "detail", "flags", "drop_reason")
# ParquetRecorder.record() unpacks an event's state into these 19 locals, in this order
assert STATE_COLUMNS == (
    "sk_rmem_alloc", "sk_rcvbuf", "rcv_nxt", "copied_seq", "rcv_wup", "rcv_wnd", "rcv_ssthresh",
    "window_clamp", "rcv_mss", "scaling_ratio", "rcvq_space", "rcv_rtt_us", "recv_q",
    "rcvq_len", "ofoq_len", "snd_una", "snd_nxt", "snd_wnd", "snd_cwnd")


def _row_parts(ev: TraceEvent) -> tuple[tuple, tuple]:
    """One trace row from one event of the core (EVENT_FIELDS), as (integer columns, string
    columns), each in schema order."""
    t_ns, sock, event, detail, seg, truesize, reason, length, cost, scale = ev[:EV_STATE]
    if seg is not None:
        f = seg.flags
        seq, ack, win = seg.seq, seg.ack, seg.win
        end_seq = seq + seg.len + (1 if f & 0x03 else 0)
        flags = _FLAGS[f & 63]
        win_scaled = win if f & SYN else win << scale
        if length < 0:
            length = seg.len
    else:
        seq = end_seq = ack = win = win_scaled = -1
        flags = ""
    return ((t_ns, seq, end_seq, length, truesize, ack, win, win_scaled, *ev[EV_STATE:], cost),
            (sock, event, detail, flags, reason))


# schema column i is element _MERGE_ORDER[i] of (integer columns + string columns)
_MERGE_ORDER = tuple(sorted(range(len(COLUMNS)), key=(INT_POS + STR_POS).__getitem__))
_merge_getter = itemgetter(*_MERGE_ORDER)


def _merge(ints: tuple, strs: tuple) -> tuple:
    """The two halves of a row back in schema order (t_ns, sock, event, detail, seq, ...)."""
    return _merge_getter(ints + strs)


class MemoryRecorder:
    """Keeps every row in memory as a tuple (short runs, tests)."""

    def __init__(self, socks: tuple[str, ...] = ("rcv", "snd")) -> None:
        self.rows: list[tuple] = []
        self.socks = frozenset(socks)

    def wants(self, sock: str) -> bool:
        return sock in self.socks

    def record(self, ev: TraceEvent) -> None:
        self.rows.append(_merge(*_row_parts(ev)))

    def record_table(self, table: pa.Table) -> None:
        """Rows given as a table of SCHEMA (the native engine's groups), in order."""
        self.rows.extend(zip(*(c.to_pylist() for c in table.columns)))

    def columns(self) -> dict[str, list]:
        """The trace as {column: values}."""
        cols = list(zip(*self.rows)) if self.rows else [() for _ in COLUMN_NAMES]
        return {name: list(c) for name, c in zip(COLUMN_NAMES, cols)}

    def table(self) -> pa.Table:
        """The buffered rows as an Arrow table (columnar, typed)."""
        cols = zip(*self.rows) if self.rows else [() for _ in COLUMN_NAMES]
        arrays = [pa.array(c, type=SCHEMA.field(i).type) for i, c in enumerate(cols)]
        return pa.Table.from_arrays(arrays, schema=SCHEMA)

    def close(self, metadata: dict[str, Any] | None = None) -> None:
        return None


class ParquetRecorder:
    """Streams rows to a Parquet file in row groups of `group_rows` rows.

    A row's five strings become one small code (an index into the distinct string tuples
    of the row group), and its integers plus that code are packed into a flat int64 buffer
    (struct.pack: several times cheaper than array.extend), so a full row group turns into
    Arrow arrays without touching a Python object per value.

    Parquet keeps key-value metadata (scenario, counters, summary) in the footer, known only
    at the end, and the footer's schema must carry it. So full row groups go to an Arrow IPC
    stream ('.partial', lz4-compressed, cheap to write and read back), and close() writes
    the Parquet file in one pass, one row group per buffered group, with the metadata.
    """

    def __init__(self, path: str | Path, socks: tuple[str, ...] = ("rcv", "snd"),
                 group_rows: int = 65536) -> None:
        self.socks = frozenset(socks)
        self.path = Path(path)
        self.group_rows = group_rows
        self._tmp = self.path.with_name(self.path.name + ".partial")
        self._stream: pa.ipc.RecordBatchStreamWriter | None = None
        self._buf = bytearray()            # per row: its INT_POS columns, then its string code
        self._rows = 0
        self._strings: dict[tuple, int] = {}   # distinct string tuples -> code
        self.nrows = 0

    def wants(self, sock: str) -> bool:
        return sock in self.socks

    def record(self, ev: TraceEvent) -> None:
        # _row_parts() inlined: this runs once per event, and packing the row straight from
        # the event saves building the integer tuple and a call (~5 % of a traced run).
        # The event is unpacked whole, its state into one local per STATE_COLUMNS entry
        # (in that order: the assert at the top of the module checks it), and passed to pack() by position:
        # slicing it (ev[:EV_STATE], *ev[EV_STATE:]) built two tuples and an argument list
        # per row.
        (t_ns, sock, event, detail, seg, truesize, reason, length, cost, scale,
         rmem, rcvbuf, rcv_nxt, copied, wup, wnd, ssthresh, clamp, rcv_mss, ratio, space,
         rtt, recv_q, rcvq_len, ofoq_len, snd_una, snd_nxt, snd_wnd, snd_cwnd) = ev
        if seg is not None:
            f = seg.flags
            seq, ack, win = seg.seq, seg.ack, seg.win
            end_seq = seq + seg.len + (1 if f & 0x03 else 0)
            strs = (sock, event, detail, _FLAGS[f & 63], reason)
            win_scaled = win if f & SYN else win << scale
            if length < 0:
                length = seg.len
        else:
            seq = end_seq = ack = win = win_scaled = -1
            strs = (sock, event, detail, "", reason)
        code = self._strings.get(strs)
        if code is None:
            code = self._strings[strs] = len(self._strings)
        self._buf += _PACK_ROW(t_ns, seq, end_seq, length, truesize, ack, win, win_scaled,
                               rmem, rcvbuf, rcv_nxt, copied, wup, wnd, ssthresh, clamp,
                               rcv_mss, ratio, space, rtt, recv_q, rcvq_len, ofoq_len, snd_una,
                               snd_nxt, snd_wnd, snd_cwnd, cost, code)
        self._rows += 1
        if self._rows >= self.group_rows:
            self.flush()

    def table(self) -> pa.Table:
        """The buffered rows as an Arrow table (columnar, typed)."""
        import numpy as np                  # here: a native run never needs it (start-up)
        ints = np.frombuffer(self._buf, dtype=np.int64).reshape(self._rows, len(INT_POS) + 1)
        codes = pa.array(np.ascontiguousarray(ints[:, -1]))
        distinct = list(self._strings)
        arrays: list[pa.Array] = [None] * len(COLUMNS)  # type: ignore[list-item]
        for j, pos in enumerate(INT_POS):
            arrays[pos] = pa.array(np.ascontiguousarray(ints[:, j]))
        for j, pos in enumerate(STR_POS):
            arrays[pos] = pa.array([s[j] for s in distinct], pa.string()).take(codes)
        return pa.Table.from_arrays(arrays, schema=SCHEMA)

    def record_table(self, table: pa.Table) -> None:
        """Rows given as a table of SCHEMA (the native engine's groups, each a row group),
        after the rows recorded one by one so far."""
        self.flush()
        if self._stream is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._stream = pa.ipc.new_stream(str(self._tmp), SCHEMA, options=_STREAM_OPTIONS)
        self._stream.write_table(table)
        self.nrows += table.num_rows

    def flush(self) -> None:
        """Move the buffered rows to the temporary stream as one group."""
        if not self._rows:
            return
        table = self.table()
        if self._stream is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._stream = pa.ipc.new_stream(str(self._tmp), SCHEMA, options=_STREAM_OPTIONS)
        self._stream.write_table(table)
        self.nrows += self._rows
        self._buf = bytearray()
        self._rows = 0
        self._strings = {}

    def close(self, metadata: dict[str, Any] | None = None) -> None:
        """Write the Parquet file: every group as a row group, with metadata (scenario,
        profile, counters, summary) in the footer. An empty trace is one empty row group."""
        self.flush()
        meta = {k: json.dumps(v, sort_keys=True) for k, v in (metadata or {}).items()}
        schema = SCHEMA.with_metadata(meta)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(self.path, schema, compression="zstd") as out:
            if self._stream is None:
                out.write_table(pa.Table.from_pydict({n: [] for n in COLUMN_NAMES}, schema=schema))
                return
            self._stream.close()
            # read through a plain file: a memory-mapped one keeps every page in RSS
            with pa.OSFile(str(self._tmp), "rb") as f, pa.ipc.open_stream(f) as groups:
                for batch in groups:
                    out.write_table(pa.Table.from_batches([batch]).replace_schema_metadata(meta))
        self._tmp.unlink()


def read_trace(path: str | Path) -> tuple[dict[str, list], dict[str, Any]]:
    """Read a trace file: ({column: values}, {metadata key: decoded JSON})."""
    table = pq.read_table(path)
    raw = table.schema.metadata or {}
    meta = {k.decode(): json.loads(v) for k, v in raw.items() if not k.startswith(b"ARROW")}
    return table.to_pydict(), meta
