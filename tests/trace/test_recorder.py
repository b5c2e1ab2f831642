"""ParquetRecorder: the file a reader gets (SCHEMA, plain string columns, the metadata
written at the end), what an unfinished run leaves behind, and the equality of the rows
recorded one by one (Python engine) and by groups (native engine's hand-over)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tcpsim.trace.recorder import SCHEMA, WRITE_SCHEMA, MemoryRecorder, ParquetRecorder
from tcpsim.trace.schema import COLUMN_NAMES

from harness import Keep, established

META = {"source": "tcpsim", "summary": {"drops": 0}}


def _events(n_rows: int) -> list[tuple]:
    """About n_rows real trace events of a Python socket pair."""
    keep = Keep()
    p = established("linux-6.6", sink=keep)
    t_ms = 2.0
    while len(keep.events) < n_rows:
        p.at(t_ms).send(1448)
        p.read(1448)
        t_ms += 0.1
    return keep.events


def test_the_file_reads_back_as_schema_with_the_metadata_of_close(tmp_path: Path) -> None:
    events = _events(300)
    mem = MemoryRecorder()
    rec = ParquetRecorder(tmp_path / "t.parquet", group_rows=64)   # several row groups
    for ev in events:
        mem.record(ev)
        rec.record(ev)
    rec.close(META)
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.schema.equals(SCHEMA)
    assert {k.decode(): json.loads(v) for k, v in table.schema.metadata.items()} == META
    expect = mem.table().replace_schema_metadata(table.schema.metadata)
    assert table.equals(expect, check_metadata=True)
    assert pq.ParquetFile(tmp_path / "t.parquet").metadata.num_row_groups == -(-len(events) // 64)
    assert not (tmp_path / "t.parquet.partial").exists()


def test_groups_given_as_tables_equal_rows_given_one_by_one(tmp_path: Path) -> None:
    events = _events(200)
    mem = MemoryRecorder()
    for ev in events:
        mem.record(ev)
    dense = mem.table()
    rec = ParquetRecorder(tmp_path / "g.parquet")
    rec.record_table(dense.slice(0, 120))            # plain strings
    rec.record_table(dense.slice(120).cast(WRITE_SCHEMA))    # dictionary strings
    rec.close(META)
    got = pq.read_table(tmp_path / "g.parquet")
    assert got.equals(dense.replace_schema_metadata(got.schema.metadata), check_metadata=True)


def test_an_unfinished_run_leaves_no_file_that_looks_complete(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    rec = ParquetRecorder(path, group_rows=32)
    for ev in _events(100):
        rec.record(ev)
    assert rec._out is not None
    rec._out.finish()                 # the groups so far are on disk, the footer is not
    assert not path.exists()
    partial = tmp_path / "t.parquet.partial"
    assert partial.stat().st_size > 0
    with pytest.raises(pa.ArrowInvalid):
        pq.read_table(partial)


def test_an_empty_trace_is_one_empty_row_group(tmp_path: Path) -> None:
    rec = ParquetRecorder(tmp_path / "e.parquet")
    rec.close(META)
    f = pq.ParquetFile(tmp_path / "e.parquet")
    assert f.metadata.num_row_groups == 1 and f.metadata.num_rows == 0
    assert pq.read_table(tmp_path / "e.parquet").column_names == list(COLUMN_NAMES)


def test_a_failed_write_is_raised_to_the_run(tmp_path: Path) -> None:
    """The writer thread's error comes out of the next group handed over (or close)."""
    rec = ParquetRecorder(tmp_path / "x.parquet", group_rows=16)
    bad = WRITE_SCHEMA.empty_table().append_column("extra", pa.array([], pa.int64()))
    rec._write(bad)                   # not the file's schema: the writer thread fails
    with pytest.raises(ValueError):
        rec.close(META)
    assert not (tmp_path / "x.parquet").exists()
