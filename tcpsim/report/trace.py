"""A trace held as numpy arrays, with cheap row selection by socket, event and detail.

Reports read traces of any length: a 35-minute run has millions of rows. Python lists of
that size cost gigabytes, so `Trace` keeps integer columns as int64 arrays and the four
string columns dictionary-encoded (small integer codes plus a list of the distinct strings).
`load_trace()` reads a Parquet file straight into that form, reading only the columns a
report uses; `Trace.from_columns()` accepts the `{column: values}` dict that
`read_trace()` and `MemoryRecorder.columns()` return.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from tcpsim.report.reduce import Reduced

# Columns the report reads (a trace without some of them still renders what it can).
REPORT_COLUMNS: tuple[str, ...] = (
    "t_ns", "sock", "event", "detail", "seq", "end_seq", "len", "flags", "win_raw",
    "win_scaled", "sk_rmem_alloc", "sk_rcvbuf", "rcv_nxt", "copied_seq", "rcv_wnd",
    "rcv_ssthresh", "window_clamp", "recv_q", "snd_una", "snd_nxt", "snd_wnd", "snd_cwnd",
    "drop_reason", "truesize",
    "collapse_ns",      # not in the schema yet: the collapse cost model adds it
)
STRING_COLUMNS: frozenset[str] = frozenset({"sock", "event", "detail", "drop_reason", "flags"})
# What every tcpsim trace has (runs, captures and imports alike): without them it is some other file.
REQUIRED_COLUMNS: tuple[str, ...] = ("t_ns", "sock", "event")


@dataclass
class Categorical:
    """A string column as integer codes into a list of distinct values."""

    codes: np.ndarray
    values: list[str]

    def equals(self, value: str) -> np.ndarray:
        """Boolean mask of the rows holding `value`."""
        if value not in self.values:
            return np.zeros(len(self.codes), dtype=bool)
        return self.codes == self.values.index(value)

    def isin(self, values: Sequence[str]) -> np.ndarray:
        """Boolean mask of the rows holding any of `values`."""
        wanted = [i for i, v in enumerate(self.values) if v in values]
        return np.isin(self.codes, wanted)

    def contains(self, part: str) -> np.ndarray:
        """Boolean mask of the rows whose string contains `part`."""
        return self.isin([v for v in self.values if part in v])

    def take(self, idx: np.ndarray) -> np.ndarray:
        """The strings at `idx` (an object array)."""
        return np.array(self.values, dtype=object)[self.codes[idx]]

    @classmethod
    def from_strings(cls, values: Sequence[str]) -> "Categorical":
        uniq, codes = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
        return cls(codes.astype(np.int32), [str(u) for u in uniq])

    @classmethod
    def from_arrow(cls, column: pa.ChunkedArray) -> "Categorical":
        if not pa.types.is_dictionary(column.type):
            column = pc.dictionary_encode(column)
        enc = column.combine_chunks()        # the table's dictionaries are unified first
        values = ["" if v is None else str(v) for v in enc.dictionary.to_pylist()]
        codes = enc.indices.fill_null(len(values)).to_numpy(zero_copy_only=False).astype(np.int32)
        if enc.null_count:
            values.append("")
        return cls(codes, values)


@dataclass
class Trace:
    """Trace columns as arrays: `ints[name]` (int64) and `strs[name]` (Categorical)."""

    ints: dict[str, np.ndarray]
    strs: dict[str, Categorical]
    # a long trace read reduced (tcpsim/report/reduce.py): its rows are a selection, and
    # this says what else the report needs (marks, rate sums, counts); None: every row
    reduced: "Reduced | None" = None
    n: int = field(init=False)
    _cache: dict[Any, np.ndarray] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.n = len(self.ints["t_ns"]) if "t_ns" in self.ints else 0

    # -- construction -----------------------------------------------------------------------

    @classmethod
    def from_columns(cls, columns: Mapping[str, Sequence[Any]] | "Trace") -> "Trace":
        """From `{column: values}` (lists or arrays), as read_trace() returns them."""
        if isinstance(columns, Trace):
            return columns
        ints: dict[str, np.ndarray] = {}
        strs: dict[str, Categorical] = {}
        for name, values in columns.items():
            if name in STRING_COLUMNS:
                strs[name] = values if isinstance(values, Categorical) \
                    else Categorical.from_strings(list(values))
            else:
                ints[name] = np.asarray(values, dtype=np.int64)
        if "t_ns" not in ints:
            raise ValueError("trace has no t_ns column")
        return cls(ints, strs)

    @classmethod
    def from_arrow(cls, table: pa.Table) -> "Trace":
        """From a pyarrow table (only the report's columns are kept)."""
        ints: dict[str, np.ndarray] = {}
        strs: dict[str, Categorical] = {}
        table = table.unify_dictionaries()
        for name in table.column_names:
            col = table.column(name)
            if name in STRING_COLUMNS:
                strs[name] = Categorical.from_arrow(col)
            elif name in REPORT_COLUMNS:
                col = col.fill_null(-1) if col.null_count else col
                ints[name] = col.to_numpy().astype(np.int64, copy=False)
        return cls(ints, strs)

    # -- access -------------------------------------------------------------------------------

    def has(self, name: str) -> bool:
        """Whether the trace carries column `name`."""
        return name in self.ints or name in self.strs

    def col(self, name: str) -> np.ndarray:
        """An integer column; a missing one reads as all -1 ("unknown")."""
        if name in self.ints:
            return self.ints[name]
        return np.full(self.n, -1, dtype=np.int64)

    def text(self, name: str) -> Categorical:
        """A string column; a missing one reads as all ''."""
        if name in self.strs:
            return self.strs[name]
        return Categorical(np.zeros(self.n, dtype=np.int32), [""])

    def rows(self, sock: str | None = None, event: str | Sequence[str] | None = None,
             detail: str | Sequence[str] | None = None) -> np.ndarray:
        """Indices of the rows matching all the given fields (a list matches any of it)."""
        key = ("rows", sock, event if isinstance(event, (str, type(None))) else tuple(event),
               detail if isinstance(detail, (str, type(None))) else tuple(detail))
        if key not in self._cache:
            self._cache[key] = self._select(sock, event, detail)
        return self._cache[key]

    def _select(self, sock: str | None, event: str | Sequence[str] | None,
                detail: str | Sequence[str] | None) -> np.ndarray:
        mask = np.ones(self.n, dtype=bool)
        for name, want in (("sock", sock), ("event", event), ("detail", detail)):
            if want is None:
                continue
            cat = self.text(name)
            mask &= cat.equals(want) if isinstance(want, str) else cat.isin(want)
        return np.flatnonzero(mask)

    @property
    def t_s(self) -> np.ndarray:
        """Time of every row in seconds (float)."""
        if "t_s" not in self._cache:
            self._cache["t_s"] = self.ints["t_ns"] / 1e9
        return self._cache["t_s"]

    @property
    def end_s(self) -> float:
        """Time of the last row, seconds."""
        return float(self.ints["t_ns"][-1]) / 1e9 if self.n else 0.0


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The trace file's metadata (scenario, profile, sysctls, counters, summary), decoded."""
    raw = pq.read_schema(path).metadata or {}
    return {k.decode(): json.loads(v) for k, v in raw.items() if not k.startswith(b"ARROW")}


def load_trace(path: str | Path) -> tuple[Trace, dict[str, Any]]:
    """Read a Parquet trace into a `Trace` (report columns only) and its metadata."""
    present = set(pq.read_schema(path).names)
    missing = [c for c in REQUIRED_COLUMNS if c not in present]
    if missing:
        raise ValueError(f"no column {', '.join(missing)}; it has "
                         f"{', '.join(sorted(present)[:8]) or 'no columns'}; write a trace with "
                         "`tcpsim run --trace`, `tcpsim capture` or `tcpsim import`")
    pf = pq.ParquetFile(path, read_dictionary=[c for c in STRING_COLUMNS if c in present])
    names = [c for c in REPORT_COLUMNS if c in present]
    meta = read_metadata(path)
    from tcpsim.report.reduce import REDUCE_ROWS
    if pf.metadata.num_rows > REDUCE_ROWS:
        return load_reduced(path, names, meta), meta
    ints: dict[str, np.ndarray] = {}
    strs: dict[str, Categorical] = {}
    for k in range(0, len(names), 6):
        # a few columns at a time: each Arrow copy is freed before the next is read
        part = Trace.from_arrow(pf.read(columns=names[k:k + 6]))
        ints.update(part.ints)
        strs.update(part.strs)
    return Trace(ints, strs), meta


def load_reduced(path: str | Path, names: Sequence[str] | None = None,
                 meta: dict[str, Any] | None = None) -> Trace:
    """A long trace as the report needs it, streamed in batches: the rows it draws and
    counts from, and its rate sums and mark counts (tcpsim/report/reduce.py)."""
    from tcpsim.report.reduce import reduce_trace
    present = set(pq.read_schema(path).names)
    names = [c for c in (names or REPORT_COLUMNS) if c in present]
    ints, strs, extra = reduce_trace(path, names, [c for c in names if c in STRING_COLUMNS],
                                     meta if meta is not None else read_metadata(path))
    return Trace(ints, {k: Categorical(c, v) for k, (c, v) in strs.items()}, extra)
