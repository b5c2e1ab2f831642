"""`tcpsim bench` runs both engines in one invocation and prints their ratio (figures are
not checked: speed belongs in benchmarks/, never in a test)."""

from __future__ import annotations

import pytest

from tcpsim import bench
from tcpsim.engines import EngineError, native_available


def _tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    case = bench.Case("t: tiny", "seed-wscale8", "30ms", "30ms")
    monkeypatch.setattr(bench, "CASES", (case,))
    monkeypatch.setattr(bench, "_sweep_once", lambda duration, engine: {
        "wall": 1.0, "cpu": 1.0, "points": 1, "packets": 1, "sim_s": 1.0})
    monkeypatch.setattr(bench, "search_rows", lambda quick, echo: [])
    monkeypatch.setattr(bench, "pcap_rows", lambda quick, echo: [])


@pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")
def test_both_engines_and_their_ratio(monkeypatch: pytest.MonkeyPatch) -> None:
    _tiny(monkeypatch)
    lines: list[str] = []
    rows = bench.run_benchmarks(quick=True, echo=lines.append)
    assert [r.get("engine") for r in rows[:2]] == ["native", "python"]
    assert rows[0]["packets"] == rows[1]["packets"]          # the same run on both
    assert "native_over_python" in rows[0]
    assert any("native/python:" in line for line in lines)


def test_one_engine_and_a_bad_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _tiny(monkeypatch)
    rows = bench.run_benchmarks(quick=True, echo=None, engine="python")
    assert [r["engine"] for r in rows] == ["python", "python"]
    with pytest.raises(EngineError, match="unknown engine 'rust'"):
        bench.run_benchmarks(quick=True, echo=None, engine="rust")


def test_the_user_path_scenario_is_the_case_without_timing(tmp_path) -> None:
    """The whole-process rows run the case as a file a user writes: same document, the
    case's profile, sysctls and reader, and no [timing] (the CLI's default)."""
    import tomllib

    from tcpsim.scenario import read_scenario_file
    case = bench.CASES[1]                  # b: linux-6.18, a fast reader
    doc = tomllib.loads(open(bench.user_scenario(case, str(tmp_path))).read())
    want, _ = read_scenario_file(case.experiment)
    want.pop("timing", None)
    want["profile"], want["reader"] = case.profile, {"kind": "fast", "bytes": 1 << 20}
    assert doc == want


@pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")
def test_search_rows_report_evaluations_per_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "SEARCH_QUICK", 2)
    real = bench.search_benchmark
    monkeypatch.setattr(bench, "search_benchmark",
                        lambda budget, executor="local", jobs=0, name=bench.SEARCH_NAME,
                        letter="f": real(budget, "local", 1, name, letter))
    lines: list[str] = []
    rows = bench.search_rows(True, lines.append)
    # each workload: two runs (rcvbuf-growth: the policy and its reference; sender-stalls:
    # 6.17 and 6.14, each with its trace read)
    assert len(rows) == 3 and all(r["evaluations"] == 2 and r["runs"] == 4 for r in rows)
    assert all(r["evaluations_per_s"] > 0 for r in rows)
    assert rows[2]["case"].startswith("h: search sender-stalls")
    assert sum("evaluations/s" in line for line in lines) == 3


@pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")
def test_against_another_checkout_alternates_and_compares(monkeypatch, tmp_path) -> None:
    """`bench --against DIR`: both sides run the same case, each row has both sides'
    spreads, the load before and after, and the CPU ratio; DIR here is this checkout."""
    from pathlib import Path
    _tiny(monkeypatch)
    here = str(Path(bench.__file__).resolve().parents[1])
    lines: list[str] = []
    rows = bench.against(here, repeat=1, quick=True, cases="t", echo=lines.append)
    assert [r["kind"] for r in rows] == ["trace", "no_trace"]
    for r in rows:
        assert r["base"]["packets"] == r["this"]["packets"] > 0
        assert set(r["this"]["cpu_s"]) == {"median", "min", "max"} and len(r["load"]) == 2
        assert r["cpu_this_over_base"] > 0
    assert "trace_mb" in rows[0]["this"] and "trace_mb" not in rows[1]["this"]
    assert any("CPU this/base" in line for line in lines)
    with pytest.raises(ValueError, match="not a tcpsim checkout"):
        bench.against(str(tmp_path), repeat=1, quick=True, cases="t", echo=None)


def test_against_a_folder_that_is_not_a_checkout_is_one_error_line(tmp_path) -> None:
    from typer.testing import CliRunner
    from tcpsim.cli import app
    out = CliRunner().invoke(app, ["bench", "--against", str(tmp_path)])
    assert out.exit_code != 0
    assert "not a tcpsim checkout" in out.output and "Traceback" not in out.output


@pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")
def test_the_capture_row_times_the_users_command_and_the_stages() -> None:
    """(i) makes its capture (a simulated 1 Gbit/s transfer written as a pcap), then times
    `tcpsim replay --fit` as a process and the import and the fit in this one."""
    from tcpsim.bench_pcap import pcap_benchmark
    lines: list[str] = []
    [row] = pcap_benchmark(seconds=0.05, echo=lines.append)
    st = row["stages"]
    assert st["packets"] > 1000 and st["replays"] > 20 and row["goal_s"] == 15.0
    assert row["wall_s"] > 0 and row["cpu_s"] > 0 and st["import_cpu_s"] > 0
    assert row["fit_grade"] == pytest.approx(st["grade"])       # the same fit both ways
    assert len(lines) == 2 and "tcpsim replay --fit" in lines[0]


def test_a_measured_process_peak_is_its_own_not_the_bench_process() -> None:
    """Linux keeps a parent's RSS at the fork in the child's ru_maxrss: measured from a bench
    process holding a large capture, every child read as big as the bench. The launcher
    forks the command from a small process instead."""
    import sys
    held = bytearray(300 << 20)
    held[::4096] = b"\x01" * len(held[::4096])                 # touched: resident
    text, m = bench.measure_process([sys.executable, "-c", "print('ok')"])
    assert text == b"ok\n" and m["cpu"] > 0 and m["wall"] > 0
    assert m["rss_mb"] < 100, m
    del held
    with pytest.raises(RuntimeError, match="exit status 3"):
        bench.measure_process([sys.executable, "-c", "raise SystemExit(3)"])
