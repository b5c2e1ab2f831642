"""Trace recorders: the sink the sans-IO core reports events to.

`ParquetRecorder` keeps rows as tuples in a small buffer and writes them to a Parquet file in
row groups, so a 35-minute run never holds its trace in memory. `MemoryRecorder` keeps the
rows (tests, reports of short runs). Both implement `record()` as the core calls it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tcpsim.core.segment import SYN, Segment, flags_str
from tcpsim.trace.schema import COLUMN_NAMES, COLUMNS

_ARROW = {"int64": pa.int64(), "string": pa.string()}
SCHEMA = pa.schema([(name, _ARROW[t]) for name, t, _ in COLUMNS])


_FLAGS = [flags_str(f) for f in range(64)]


def _row(sk: Any, event: str, detail: str, seg: Segment | None, truesize: int, reason: str,
         length: int, cost: int = -1) -> tuple:
    """One trace row from the socket's state after the event (kernel field names)."""
    if seg is not None:
        f = seg.flags
        seq, ack, win = seg.seq, seg.ack, seg.win
        end_seq = seq + seg.len + (1 if f & 0x03 else 0)
        flags = _FLAGS[f & 63]
        scale = 0 if f & SYN else (sk.rcv_wscale if event == "tx" else sk.snd_wscale)
        win_scaled = win << scale
        if length < 0:
            length = seg.len
    else:
        seq = end_seq = ack = win = win_scaled = -1
        flags = ""
    return (
        sk.now, sk.name, event, detail, seq, end_seq, length, truesize, flags, ack, win,
        win_scaled, sk.sk_rmem_alloc, sk.sk_rcvbuf, sk.rcv_nxt, sk.copied_seq, sk.rcv_wup,
        sk.rcv_wnd, sk.rcv_ssthresh, sk.window_clamp, sk.ack_rcv_mss, sk.scaling_ratio,
        sk.rcvq_space, sk.rcv_rtt_us8 >> 3, sk.rcv_nxt - sk.copied_seq,
        len(sk.receive_queue), len(sk.ofo_queue), sk.snd_una, sk.snd_nxt, sk.snd_wnd,
        sk.snd_cwnd, reason, cost,
    )


class MemoryRecorder:
    """Keeps every row in memory (short runs, tests)."""

    def __init__(self, socks: tuple[str, ...] = ("rcv", "snd")) -> None:
        self.rows: list[tuple] = []
        self.socks = frozenset(socks)

    def record(self, sk: Any, event: str, detail: str, seg: Segment | None = None,
               truesize: int = -1, reason: str = "", length: int = -1, cost: int = -1) -> None:
        if sk.name in self.socks:
            self.rows.append(_row(sk, event, detail, seg, truesize, reason, length, cost))

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


class ParquetRecorder(MemoryRecorder):
    """Streams rows to a Parquet file in row groups of `group_rows` rows."""

    def __init__(self, path: str | Path, socks: tuple[str, ...] = ("rcv", "snd"),
                 group_rows: int = 65536) -> None:
        super().__init__(socks)
        self.path = Path(path)
        self.group_rows = group_rows
        self._writer: pq.ParquetWriter | None = None
        self._tmp = self.path.with_name(self.path.name + ".partial")
        self.nrows = 0

    def record(self, sk: Any, event: str, detail: str, seg: Segment | None = None,
               truesize: int = -1, reason: str = "", length: int = -1, cost: int = -1) -> None:
        if sk.name in self.socks:
            self.rows.append(_row(sk, event, detail, seg, truesize, reason, length, cost))
            if len(self.rows) >= self.group_rows:
                self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one row group."""
        if not self.rows:
            return
        table = self.table()
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self._tmp, SCHEMA, compression="zstd")
        self._writer.write_table(table)
        self.nrows += len(self.rows)
        self.rows = []

    def close(self, metadata: dict[str, Any] | None = None) -> None:
        """Finish the file and attach metadata (scenario, profile, counters, summary).

        Parquet keeps key-value metadata in the footer, so the rows are streamed to a
        '.partial' file and the footer is rewritten once with the metadata at the end."""
        self.flush()
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._tmp, SCHEMA, compression="zstd")
            self._writer.write_table(pa.Table.from_pydict(
                {n: [] for n in COLUMN_NAMES}, schema=SCHEMA))
        self._writer.close()
        meta = {k: json.dumps(v, sort_keys=True) for k, v in (metadata or {}).items()}
        pf = pq.ParquetFile(self._tmp)
        schema = pf.schema_arrow.with_metadata(meta)
        with pq.ParquetWriter(self.path, schema, compression="zstd") as out:
            for i in range(pf.num_row_groups):
                out.write_table(pf.read_row_group(i).replace_schema_metadata(meta))
        self._tmp.unlink()


def read_trace(path: str | Path) -> tuple[dict[str, list], dict[str, Any]]:
    """Read a trace file: ({column: values}, {metadata key: decoded JSON})."""
    table = pq.read_table(path)
    raw = table.schema.metadata or {}
    meta = {k.decode(): json.loads(v) for k, v in raw.items() if not k.startswith(b"ARROW")}
    return table.to_pydict(), meta
