"""A group of trace rows from the native engine's columns: its hand-over to the recorders.

The native engine (native/src/engine/trace.rs) hands over a group of rows as its column
vectors themselves -- one of int64 values per integer column of tcpsim/trace/schema.py
COLUMNS, and one of int32 codes -- plus the string tuples (sock, event, detail, flags,
drop_reason) first seen since the last group, which the codes index. Wrapping the vectors
(`pa.py_buffer`, `Array.from_buffers`) copies nothing and makes no Python object per value;
the string columns become dictionary arrays whose indices are the codes (the recorders'
WRITE_SCHEMA), so no string is built per row either. Unlike `pa.array()`, this does not
import pandas (about half a second of start-up).
"""

from __future__ import annotations

from array import array
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from tcpsim.trace.recorder import INT_POS, STR_POS, WRITE_SCHEMA


class TraceGroups:
    """Tables of WRITE_SCHEMA from the native engine's groups (`take_rows()`), in order:
    keeps the string tuples handed over so far, which every later group's codes index."""

    def __init__(self) -> None:
        self.distinct: list[tuple[str, ...]] = []
        self._columns: list[tuple[pa.Array, np.ndarray]] = self._dictionaries()

    def _dictionaries(self) -> list[tuple[pa.Array, np.ndarray]]:
        """Per string column: (its distinct strings, a code's index into them). A column's
        dictionary has each string once: Parquet's writer takes an Arrow dictionary as its
        own only then (else it encodes the column string by string)."""
        out = []
        for j in range(len(STR_POS)):
            words: dict[str, int] = {}
            index = [words.setdefault(t[j], len(words)) for t in self.distinct]
            out.append((_strings(list(words)), np.array(index, dtype=np.int32)))
        return out

    def table(self, ints: Sequence[Any], codes: Any, new: Sequence[tuple[str, ...]]) -> pa.Table:
        """The table of one group: `ints` the integer columns' buffers (schema order),
        `codes` the rows' int32 codes, `new` the string tuples first seen in it."""
        if new:
            self.distinct.extend(new)
            self._columns = self._dictionaries()
        n = len(codes)
        code = np.frombuffer(codes, dtype=np.int32, count=n)
        arrays: list[pa.Array] = [None] * len(WRITE_SCHEMA)
        for buf, pos in zip(ints, INT_POS):
            arrays[pos] = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(buf)])
        for (words, index), pos in zip(self._columns, STR_POS):
            # numpy's take (pyarrow imports numpy itself): Array.take would import
            # pyarrow.compute, ~40 ms of start-up
            arrays[pos] = pa.DictionaryArray.from_arrays(_int32(index.take(code)), words, safe=False)
        return pa.Table.from_arrays(arrays, schema=WRITE_SCHEMA)


def _int32(values: np.ndarray) -> pa.Array:
    """An int32 array of `values`, wrapped from its buffer (`pa.array()` would import pandas)."""
    return pa.Array.from_buffers(pa.int32(), len(values), [None, pa.py_buffer(values)])


def _strings(words: list[str]) -> pa.Array:
    """A UTF-8 string array of `words`, from its offsets and data buffers."""
    data = [w.encode() for w in words]
    offsets = array("i", [0])
    for d in data:
        offsets.append(offsets[-1] + len(d))
    return pa.Array.from_buffers(pa.string(), len(words),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])
