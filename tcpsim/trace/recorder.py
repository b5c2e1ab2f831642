"""Trace recorders: the sink the sans-IO core reports events to.

`ParquetRecorder` keeps rows in a small columnar buffer and writes them to a Parquet file in
row groups as they fill (on a thread of its own, so compressing overlaps the simulation),
so a 35-minute run never holds its trace in memory. `MemoryRecorder` keeps the
rows (tests, reports of short runs). Both implement the core's TraceSink: `record()` takes
one event (a flat tuple, EVENT_FIELDS of tcpsim/trace/schema.py) and never sees the socket.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from operator import itemgetter
from struct import Struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tcpsim.core.segment import SYN, flags_str
from tcpsim.trace.schema import COLUMN_NAMES, COLUMNS, EV_STATE, STATE_COLUMNS, TraceEvent

_ARROW = {"int64": pa.int64(), "string": pa.string()}
SCHEMA = pa.schema([(name, _ARROW[t]) for name, t, _ in COLUMNS])
# What the Parquet writer is given: the string columns dictionary-encoded (a row group's
# few distinct strings and an index per row: the index arrays are the recorders' string
# codes, no string is built per row). The file's Arrow schema is SCHEMA all the same
# (ParquetRecorder.close), so a reader gets plain string columns.
_STRING = pa.dictionary(pa.int32(), pa.string())
WRITE_SCHEMA = pa.schema([(name, _STRING if t == "string" else _ARROW[t])
                          for name, t, _ in COLUMNS])


_FLAGS = [flags_str(f) for f in range(64)]

# Positions of the integer and the string columns in the schema: a row is built as two
# tuples, one per kind, so the Parquet recorder can store the integers in a flat int64
# buffer while they are hot (converting millions of Python ints later is the slow part).
INT_POS = tuple(i for i, (_, t, _) in enumerate(COLUMNS) if t == "int64")
STR_POS = tuple(i for i, (_, t, _) in enumerate(COLUMNS) if t == "string")
_PACK_ROW = Struct(f"={len(INT_POS) + 1}q").pack     # a row's integers and its string code


# Integer columns with few distinct values in a row group (sizes, limits, windows, counts):
# written as Parquet dictionaries -- each value once, then small indices -- which is cheaper
# than BYTE_STREAM_SPLIT on them and makes the file a quarter smaller. A row group where
# one of them has many values (over the writer's 1 MiB dictionary page) falls back to
# PLAIN for the rest of that column chunk: slower, never wrong.
DICT_INT_COLUMNS: tuple[str, ...] = (
    "len", "truesize", "win_raw", "win_scaled", "sk_rcvbuf", "rcv_wnd", "rcv_ssthresh",
    "window_clamp", "rcv_mss", "scaling_ratio", "rcvq_space", "rcv_rtt_us", "snd_wnd",
    "snd_cwnd")


def _parquet_options() -> dict[str, Any]:
    """How the trace is encoded (the table read back is the same whatever the encoding):

    * LZ4 (Parquet's LZ4_RAW): the Parquet writer is a traced run's longest thread, and
      zstd was 60 % of it. Measured on 786 432 rows of each of bench cases (a), (b), (d),
      CPU per row and file bytes per row (docs/performance.md): zstd 166/360/363 ns,
      3.5/19.6/21.1 B; LZ4 with the dictionaries below 147/260/270 ns, 5.0/25.4/28.5 B --
      a quarter less CPU for a file a third larger;
    * the string columns and DICT_INT_COLUMNS as dictionaries (the strings given as
      dictionary arrays: WRITE_SCHEMA);
    * the other integer columns BYTE_STREAM_SPLIT (pyarrow 17+ writes and reads it for
      integers): a column's high bytes, nearly constant, sit together and compress away;
    * data pages v2 (levels apart from the values, uncompressed) and a row group encoded
      as one batch: a quarter less CPU than v1 pages;
    * min/max statistics for t_ns only (a reader filters on time; those of the other 32
      columns cost ~15 % of the writing)."""
    return {"compression": "lz4", "write_statistics": ["t_ns"],
            "use_dictionary": [COLUMNS[i][0] for i in STR_POS] + list(DICT_INT_COLUMNS),
            "column_encoding": {COLUMNS[i][0]: "BYTE_STREAM_SPLIT" for i in INT_POS
                                if COLUMNS[i][0] not in DICT_INT_COLUMNS},
            "data_page_version": "2.0", "write_batch_size": 1 << 16}


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

    def ready(self) -> None:
        """Nothing to wait for (ParquetRecorder.ready)."""

    def record_table(self, table: pa.Table) -> None:
        """Rows given as a table of SCHEMA (the native engine's groups), in order."""
        self.rows.extend(zip(*(pylist(c) for c in table.columns)))

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


class _GroupWriter:
    """A Parquet file written one row group per table, on a thread of its own: the
    encoding and compression (pyarrow, without the GIL) run while the simulation makes the
    next group. One group is written at a time and handing over the next waits for it:
    the groups in memory are the one being written and the one being made (peak RSS)."""

    def __init__(self, path: Path) -> None:
        self.writer = pq.ParquetWriter(path, WRITE_SCHEMA, **_parquet_options())
        self.groups = 0
        self._next: pa.Table | None = None
        self._busy = False                       # a group handed over and not written yet
        self._done = False
        self._error: BaseException | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._write, name="tcpsim-trace", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._next is not None or self._done)
                table, self._next = self._next, None
            if table is None:
                return
            if self._error is None:
                try:
                    self.writer.write_table(table)
                except BaseException as exc:     # handed to the run at its next group
                    self._error = exc
            del table                            # its buffers go before the next waits
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _idle(self) -> bool:
        return not self._busy

    def wait(self) -> None:
        """Until the group handed over last is written."""
        with self._cond:
            self._cond.wait_for(self._idle)

    def put(self, table: pa.Table) -> None:
        """Hand a group over, once the one before it is written."""
        with self._cond:
            self._cond.wait_for(self._idle)
            self._raise()
            self._next, self._busy = table, True
            self._cond.notify_all()
        self.groups += 1

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def finish(self) -> pq.ParquetWriter:
        """Wait for the groups handed over to be written; the writer, still open."""
        with self._cond:
            self._cond.wait_for(self._idle)
            self._done = True
            self._cond.notify_all()
        self._thread.join()
        self._raise()
        return self.writer


def _as_written(table: pa.Table) -> pa.Table:
    """A table of SCHEMA or WRITE_SCHEMA as WRITE_SCHEMA (string columns as dictionaries)."""
    if table.schema.equals(WRITE_SCHEMA):
        return table
    cols = [c.dictionary_encode() if f.type == _STRING and c.type != _STRING else c
            for f, c in zip(WRITE_SCHEMA, table.columns)]
    return pa.Table.from_arrays(cols, schema=WRITE_SCHEMA)


class ParquetRecorder:
    """Streams rows to a Parquet file in row groups of `group_rows` rows.

    A row's five strings become one small code (an index into the distinct string tuples
    of the row group), and its integers plus that code are packed into a flat int64 buffer
    (struct.pack: several times cheaper than array.extend), so a full row group turns into
    Arrow arrays without touching a Python object per value.

    Each full row group goes straight to the Parquet file (written on a thread of its own,
    `_GroupWriter`), named '<path>.partial' until close() adds the key-value metadata
    (scenario, counters, summary: known only at the end) to the footer, with the Arrow
    schema that carries it, and renames it to `path`. A run killed before has written no
    footer: it leaves a '.partial' file no Parquet reader opens, never a file at `path`
    that looks complete.
    """

    def __init__(self, path: str | Path, socks: tuple[str, ...] = ("rcv", "snd"),
                 group_rows: int = 65536) -> None:
        self.socks = frozenset(socks)
        self.path = Path(path)
        self.group_rows = group_rows
        self._tmp = self.path.with_name(self.path.name + ".partial")
        self._out: _GroupWriter | None = None
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

    def _group(self) -> pa.Table:
        """The buffered rows as a table of WRITE_SCHEMA (the codes index the dictionaries)."""
        import numpy as np                  # here: a native run never needs it (start-up)
        ints = np.frombuffer(self._buf, dtype=np.int64).reshape(self._rows, len(INT_POS) + 1)
        codes = pa.array(ints[:, -1].astype(np.int32))
        distinct = list(self._strings)
        arrays: list[pa.Array] = [None] * len(COLUMNS)  # type: ignore[list-item]
        for j, pos in enumerate(INT_POS):
            arrays[pos] = pa.array(np.ascontiguousarray(ints[:, j]))
        for j, pos in enumerate(STR_POS):
            # each string once in a column's dictionary (see columns.py `_dictionaries`)
            words: dict[str, int] = {}
            index = pa.array([words.setdefault(t[j], len(words)) for t in distinct], pa.int32())
            arrays[pos] = pa.DictionaryArray.from_arrays(index.take(codes), list(words))
        return pa.Table.from_arrays(arrays, schema=WRITE_SCHEMA)

    def table(self) -> pa.Table:
        """The buffered rows as an Arrow table (columnar, typed)."""
        return self._group().cast(SCHEMA)

    def ready(self) -> None:
        """Wait until the file can take another group: a caller about to make one (the
        native engine's hand-over) then holds it only while it is written, not also
        while the group before it is -- one group less in memory (~15 MB)."""
        if self._out is not None:
            self._out.wait()

    def record_table(self, table: pa.Table) -> None:
        """Rows given as a table of SCHEMA or WRITE_SCHEMA (the native engine's groups,
        each a row group), after the rows recorded one by one so far."""
        self.flush()
        self._write(_as_written(table))

    def _write(self, table: pa.Table) -> None:
        if self._out is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._out = _GroupWriter(self._tmp)
        self._out.put(table)
        self.nrows += table.num_rows

    def flush(self) -> None:
        """Hand the buffered rows to the file as one row group."""
        if not self._rows:
            return
        self._write(self._group())
        self._buf = bytearray()
        self._rows = 0
        self._strings = {}

    def close(self, metadata: dict[str, Any] | None = None) -> None:
        """Finish the Parquet file: the last row group (an empty trace is one empty row
        group), the metadata (scenario, profile, counters, summary) in the footer, and
        the file renamed from '.partial' to its name."""
        self.flush()
        if self._out is None or not self._out.groups:
            self._write(WRITE_SCHEMA.empty_table())
        assert self._out is not None
        writer = self._out.finish()
        meta = {k: json.dumps(v, sort_keys=True) for k, v in (metadata or {}).items()}
        # The footer's Arrow schema is what readers take the column types and the schema
        # metadata from: SCHEMA (plain strings) with the metadata, replacing WRITE_SCHEMA's.
        arrow_schema = base64.b64encode(SCHEMA.with_metadata(meta).serialize().to_pybytes())
        writer.add_key_value_metadata({**meta, "ARROW:schema": arrow_schema.decode()})
        writer.close()
        self._out = None
        os.replace(self._tmp, self.path)


def read_trace(path: str | Path) -> tuple[dict[str, list], dict[str, Any]]:
    """Read a trace file: ({column: values}, {metadata key: decoded JSON})."""
    table = pq.read_table(path)
    raw = table.schema.metadata or {}
    meta = {k.decode(): json.loads(v) for k, v in raw.items() if not k.startswith(b"ARROW")}
    return table.to_pydict(), meta


def pylist(col: Any) -> list[Any]:
    """An Arrow column as a Python list; a dictionary-encoded one (the trace's strings)
    decoded through its dictionary -- pyarrow's to_pylist() of those makes each value on its
    own, 2.5 s per column of a whole 1 Gbit/s capture's replay."""
    import numpy as np
    if not pa.types.is_dictionary(col.type) or col.null_count:
        return list(col.to_pylist())
    out: list[Any] = []
    for chunk in col.chunks:
        words = np.asarray(chunk.dictionary.to_pylist(), dtype=object)
        out += words[chunk.indices.to_numpy()].tolist()
    return out
