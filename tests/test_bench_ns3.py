"""`tcpsim bench --ns3`: the cases as ns-3 options, the build found or refused in one line, and
(slow, where an ns-3 build is present) the rows measured beside tcpsim's. Speeds are not
checked: they belong in benchmarks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tcpsim import bench, bench_ns3
from tcpsim.core.constants import NS_PER_S


def _options(args: list[str]) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) for a in args)


def test_each_case_maps_to_its_scenario() -> None:
    """The options come from the case's own scenario (link, writer, reader)."""
    a, b, c, d = (_options(bench_ns3.ns3_args(case, 2 * NS_PER_S, 131072))
                  for case in bench.CASES)
    assert a == {"rate": "1000000000bps", "rtt_ms": "20", "queue": "2000", "duration_s": "2",
                 "rcvbuf": "131072"}
    assert b["writer"] == "periodic" and b["wbytes"] == "1448" and b["wevery_us"] == "1000"
    assert "reader" not in b                                   # the case's fast reader
    assert b["rate"] == bench_ns3.UNLIMITED_RATE
    assert (c["reader"], c["rbytes"], c["revery_us"]) == ("periodic", "1", "1000")
    assert (d["reader"], d["rbytes"], d["rbytes2"], d["revery2_us"], d["period_s"]) == \
        ("oscillating", "1", "3300", "1000", "240")


def test_a_kind_without_an_ns3_counterpart_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    case = bench.Case("z: never reads", "seed-never-reads", "1s", "1s")
    with pytest.raises(bench_ns3.Ns3Error, match="reader kind 'never'"):
        bench_ns3.ns3_args(case, NS_PER_S, 131072)


def test_a_bad_ns3_directory_is_one_error_line(tmp_path) -> None:
    out = subprocess.run([sys.executable, "-m", "tcpsim.cli", "bench", "--ns3", "--quick"],
                         capture_output=True, text=True,
                         env={**__import__("os").environ, bench_ns3.NS3_ENV: str(tmp_path)})
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcpsim: error:"), out.stderr
    assert bench_ns3.NS3_ENV in lines[0] and "include/ns3" in lines[0]


def test_the_version_is_read_from_the_library_names(tmp_path) -> None:
    (tmp_path / "include" / "ns3").mkdir(parents=True)
    (tmp_path / "lib64").mkdir()
    (tmp_path / "lib64" / "libns3.44-core.so").write_bytes(b"")
    assert bench_ns3.ns3_version(tmp_path) == "3.44"


@pytest.mark.slow
@pytest.mark.skipif(bench_ns3.find_ns3() is None, reason="no ns-3 build ($TCPSIM_NS3 or the "
                    "ns3 wheel)")
def test_rows_beside_tcpsims() -> None:
    lines: list[str] = []
    rows = bench_ns3.ns3_rows(quick=True, echo=lines.append)
    assert [r["case"] for r in rows] == [c.name for c in bench.CASES]
    for row in rows:
        assert row["ns3"]["packets"] > 0 and row["tcpsim"]["packets"] > 0
        assert row["ns3"]["cpu_s"] > 0 and row["ns3_cpu_over_tcpsim_cpu"] is not None
        assert row["tcpsim"]["peak_sk_rcvbuf"] > 0
    assert all("ns-3" in line and "tcpsim:" in line for line in lines)
