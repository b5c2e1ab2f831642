"""`tcpsim report` on files that are not tcpsim traces: one error line, never a traceback."""

import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tcpsim.report.trace import load_trace


def _report(path):
    return subprocess.run([sys.executable, "-m", "tcpsim.cli", "report", str(path)],
                          capture_output=True, text=True)


def test_a_foreign_parquet_file_names_the_missing_columns(tmp_path):
    f = tmp_path / "other.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), f)
    with pytest.raises(ValueError, match="no column t_ns, sock, event; it has a"):
        load_trace(f)
    proc = _report(f)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"tcpsim: error: {f}: not a readable tcpsim trace (no column")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_file_that_is_not_parquet_is_one_line(tmp_path):
    f = tmp_path / "t.parquet"
    f.write_bytes(b"PAR1 but not really")
    proc = _report(f)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
