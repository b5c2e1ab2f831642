"""A group of trace rows from column buffers: the native engine's hand-over to the recorders.

The native engine (native/src/engine/trace.rs) builds a group of rows as one little-endian
int64 buffer per integer column of tcpsim/trace/schema.py COLUMNS, plus one code per row
into the distinct (sock, event, detail, flags, drop_reason) tuples -- the same layout
ParquetRecorder packs its rows into -- so the Arrow arrays are made straight from the
buffers, with no Python object per value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tcpsim.trace.recorder import INT_POS, SCHEMA, STR_POS


def table_from_buffers(cols: list[bytes], codes: bytes,
                       distinct: list[tuple[str, ...]]) -> pa.Table:
    """The Arrow table (the trace SCHEMA) of one group: `cols` the integer columns in
    schema order, `codes` each row's index into `distinct`."""
    arrays: list[pa.Array] = [None] * len(SCHEMA)  # type: ignore[list-item]
    for buf, pos in zip(cols, INT_POS):
        arrays[pos] = pa.array(np.frombuffer(buf, dtype="<i8"))
    take = pa.array(np.frombuffer(codes, dtype="<i8"))
    for j, pos in enumerate(STR_POS):
        arrays[pos] = pa.array([s[j] for s in distinct], pa.string()).take(take)
    return pa.Table.from_arrays(arrays, schema=SCHEMA)
