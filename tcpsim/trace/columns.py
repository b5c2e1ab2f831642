"""A group of trace rows from Arrow buffers: the native engine's hand-over to the recorders.

The native engine (native/src/engine/trace.rs) hands over a group of rows as Arrow buffers:
one of little-endian int64 values per integer column of tcpsim/trace/schema.py COLUMNS, and
(int32 offsets, UTF-8 data) per string column. Wrapping them (`Array.from_buffers`) makes
no Python object per value -- and, unlike `pa.array()`, does not import pandas (about half
a second of start-up).
"""

from __future__ import annotations

import pyarrow as pa

from tcpsim.trace.recorder import INT_POS, SCHEMA, STR_POS


def table_from_buffers(n: int, ints: list[bytes], strs: list[tuple[bytes, bytes]]) -> pa.Table:
    """The Arrow table (the trace SCHEMA) of `n` rows: `ints` the integer columns' values,
    `strs` the string columns' (offsets, data), each in schema order."""
    arrays: list[pa.Array] = [None] * len(SCHEMA)
    for buf, pos in zip(ints, INT_POS):
        arrays[pos] = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(buf)])
    for (offsets, data), pos in zip(strs, STR_POS):
        arrays[pos] = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                              pa.py_buffer(data)])
    return pa.Table.from_arrays(arrays, schema=SCHEMA)
