"""NativeTraceFile: the Parquet trace the native engine writes itself reads back as the very
table (schema metadata included) that ParquetRecorder writes from the same run's groups;
several row groups, an empty trace, and what an unfinished run leaves behind."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tcpsim.catalog import get_profile
from tcpsim.engines import native_available
from tcpsim.scenario import load_scenario
from tcpsim.trace.native_file import NativeTraceFile, available
from tcpsim.trace.recorder import SCHEMA, ParquetRecorder

pytestmark = pytest.mark.skipif(not (native_available() and available()),
                                reason="tcpsim._native is not built with its trace writer")

META = {"source": "tcpsim", "summary": {"drops": 0, "note": "é"}, "counters": {}}


def _run(sink: object, duration: str = "300ms", experiment: str = "bulk-1gbit") -> None:
    from tcpsim.engine.native import NativeSimulation
    from tcpsim.units import parse_duration
    sc = load_scenario(experiment)
    sc = sc.with_(duration=parse_duration(duration, "duration"))
    NativeSimulation(sc, get_profile(sc.profile, ()), sink=sink).run()


@pytest.mark.parametrize(("rows", "duration"), [(65536, "700ms"), (5000, "300ms")],
                         ids=["default groups", "small groups"])
def test_the_engines_file_is_the_recorders(tmp_path: Path, rows: int, duration: str) -> None:
    import tcpsim.engine.native as native
    old = native.GROUP_ROWS
    native.GROUP_ROWS = rows
    try:
        ours = NativeTraceFile(tmp_path / "n.parquet", group_rows=rows)
        _run(ours, duration)
        ours.close(META)
        theirs = ParquetRecorder(tmp_path / "p.parquet")
        _run(theirs, duration)
        theirs.close(META)
    finally:
        native.GROUP_ROWS = old
    a, b = pq.read_table(tmp_path / "n.parquet"), pq.read_table(tmp_path / "p.parquet")
    assert a.num_rows > 2 * rows
    assert a.schema.equals(SCHEMA) and a.equals(b, check_metadata=True)
    groups = [pq.ParquetFile(tmp_path / f).metadata.num_row_groups for f in ("n.parquet", "p.parquet")]
    assert groups[0] == groups[1] == -(-a.num_rows // rows)
    assert not (tmp_path / "n.parquet.partial").exists()


def test_an_empty_trace_is_the_schema_with_the_metadata(tmp_path: Path) -> None:
    ours = NativeTraceFile(tmp_path / "n.parquet", socks=())
    _run(ours, "50ms")
    ours.close(META)
    table = pq.read_table(tmp_path / "n.parquet")
    assert table.num_rows == 0 and table.schema.equals(SCHEMA)
    assert table.schema.metadata[b"summary"] == b'{"drops": 0, "note": "\\u00e9"}'


def test_an_unfinished_run_leaves_only_a_partial_file(tmp_path: Path) -> None:
    ours = NativeTraceFile(tmp_path / "n.parquet", group_rows=1000)
    _run(ours, "300ms")                      # run, never closed
    assert not (tmp_path / "n.parquet").exists()
    assert (tmp_path / "n.parquet.partial").stat().st_size > 0
    with pytest.raises(Exception):
        pq.read_table(tmp_path / "n.parquet.partial")


def test_a_file_that_cannot_be_written_is_an_oserror(tmp_path: Path) -> None:
    (tmp_path / "n.parquet.partial").mkdir()          # where the file would go
    with pytest.raises(OSError, match="n.parquet.partial"):
        _run(NativeTraceFile(tmp_path / "n.parquet"), "10ms")
