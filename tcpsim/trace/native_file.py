"""The Parquet trace of a native run, written by the engine itself (native/src/engine/
trace_file.rs): the sink `tcpsim.runner` gives a native run with `--trace`.

The file is the one `ParquetRecorder` writes from the same rows -- the same Arrow schema,
row groups of GROUP_ROWS rows, encodings and footer metadata (`pq.read_table` gives the same
table and metadata) -- but no group passes through Python: the engine encodes each on a
thread of its own while it simulates the next, and pyarrow is not imported (~0.15 s of
start-up). The file is '<trace>.partial' until close() writes the footer and renames it,
as ParquetRecorder does: a killed run never leaves a file at the trace's path.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tcpsim.trace.schema import COLUMNS, STATE_COLUMNS

# The engine's integer columns, in its order (trace.rs INT_COLUMNS), are the schema's in
# schema order; its string columns likewise (take_distinct's tuple order).
_INTS = tuple(name for name, t, _ in COLUMNS if t == "int64")
_STRS = tuple(name for name, t, _ in COLUMNS if t == "string")
assert _INTS == ("t_ns", "seq", "end_seq", "len", "truesize", "ack_seq", "win_raw",
                 "win_scaled") + STATE_COLUMNS + ("collapse_ns",)
assert _STRS == ("sock", "event", "detail", "flags", "drop_reason")


def available() -> bool:
    """The built extension writes traces itself (else the run uses ParquetRecorder)."""
    try:
        from tcpsim import _native
    except ImportError:
        return False
    return hasattr(getattr(_native, "Simulation", None), "write_trace")


class NativeTraceFile:
    """The sink of a native run whose engine writes the trace file (`attach`)."""

    native_file = True

    def __init__(self, path: str | Path, socks: tuple[str, ...] = ("rcv", "snd"),
                 group_rows: int = 65536) -> None:
        self.socks = frozenset(socks)
        self.path = Path(path)
        self.group_rows = group_rows
        self._tmp = self.path.with_name(self.path.name + ".partial")
        self._sim: Any = None

    def wants(self, sock: str) -> bool:
        return sock in self.socks

    def attach(self, sim: Any) -> None:
        """Have the native simulation `sim` write its trace to the file from now on."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        sim.write_trace(str(self._tmp), [(name, t == "string") for name, t, _ in COLUMNS],
                        self.group_rows)
        self._sim = sim

    def ready(self) -> None:
        """Nothing to wait for here: the engine waits for its writer itself."""

    def close(self, metadata: dict[str, Any] | None = None) -> None:
        """The last rows, the metadata in the footer (JSON values, as ParquetRecorder), and
        the file renamed from '.partial' to its name."""
        if self._sim is None:
            raise RuntimeError("NativeTraceFile.close: no native run wrote to it")
        meta = [(k, json.dumps(v, sort_keys=True)) for k, v in (metadata or {}).items()]
        self._sim.close_trace(meta)
        self._sim = None
        os.replace(self._tmp, self.path)
