"""A run as the report sees it: a label, its trace and its metadata.

`simulate()` runs a scenario in memory and returns the same (columns, metadata) pair a
trace file holds, for callers that compare runs without writing Parquet files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from tcpsim.report.trace import Trace


@dataclass
class Run:
    """One run in a report: label, trace, metadata (scenario, profile, counters, ...)."""

    label: str
    trace: Trace
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def description(self) -> str:
        return str((self.meta.get("scenario") or {}).get("description", ""))

    @property
    def end_s(self) -> float:
        """When the run ended: its duration if known, else its last trace row."""
        dur = (self.meta.get("summary") or {}).get("duration_s")
        return float(dur) if dur else self.trace.end_s

    @property
    def bytes_read(self) -> int | None:
        """Bytes the application read over the whole run, if the metadata says."""
        return (self.meta.get("summary") or {}).get("bytes_read")

    @property
    def scenario_name(self) -> str:
        return str((self.meta.get("scenario") or {}).get("name", ""))


def make_run(label: str, columns: Mapping[str, Sequence[Any]] | Trace,
             meta: Mapping[str, Any] | None = None) -> Run:
    """A Run from a columns dict (read_trace / MemoryRecorder.columns()) or a Trace."""
    return Run(label, Trace.from_columns(columns), dict(meta or {}))


def simulate(scenario: Any, opts: Any = None) -> tuple[dict[str, list], dict[str, Any]]:
    """Run a scenario with an in-memory trace: (columns, metadata) as a trace file has them."""
    from dataclasses import replace

    from tcpsim.runner import RunOptions, run

    result, rec = run(scenario, replace(opts or RunOptions(), trace=None, memory_trace=True))
    assert rec is not None
    return rec.columns(), result.metadata()
