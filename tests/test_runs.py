"""`tcpsim run --runs N`: N seeds, how often each outcome happened, the spread
(tcpsim/runs.py)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tcpsim.cli import app
from tcpsim.runs import OUTCOMES, RunOutcome, spread

runner = CliRunner()

_TIMED = """name = "timed"
profile = "linux-6.18"
[sysctl]
"net.ipv4.tcp_rmem" = [4096, 131072, 268435456]
"net.ipv4.tcp_adv_win_scale" = -2
[link]
rtt = "20ms"
[receiver]
role = "client"
[writer]
kind = "periodic"
bytes = 1448
every = "1ms"
latency = "periodic_writer"
[reader]
kind = "periodic"
bytes = 1
every = "1ms"
latency = "periodic_reader"
"""


def test_spread_counts_outcomes_and_takes_median_and_range() -> None:
    rs = [RunOutcome(s, {k: (k == "stall" and s < 3) for k in OUTCOMES},
                     {"peak_sk_rmem_alloc": 100 * s, "final_sk_rmem_alloc": 1,
                      "first_zero_window_s": None if s == 4 else float(s), "stall_at_s": None})
          for s in range(1, 5)]
    s = spread(rs)
    assert s["outcomes"]["stall"] == 2 and s["outcomes"]["drops"] == 0
    assert s["figures"]["peak_sk_rmem_alloc"] == {"n": 4, "median": 250, "min": 100, "max": 400}
    assert s["figures"]["first_zero_window_s"]["n"] == 3
    assert s["figures"]["stall_at_s"] is None


def test_runs_json_runs_consecutive_seeds_that_differ(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(_TIMED)
    r = runner.invoke(app, ["run", str(f), "-d", "2s", "--runs", "3", "--seed", "10",
                            "--json", "--no-progress", "--engine", "python"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)["spread"]
    assert s["seeds"] == [10, 11, 12] and s["runs"] == 3
    assert s["outcomes"]["zero_window"] == 3              # late reader ticks close the window
    times = {run["first_zero_window_s"] for run in s["per_run"]}
    assert len(times) > 1                                 # each seed draws its own latencies
    r = runner.invoke(app, ["run", str(f), "-d", "2s", "--runs", "2", "--no-progress",
                            "--engine", "python"])
    assert r.exit_code == 0 and "zero_window 2/2" in r.output


def test_runs_say_how_many_capture_starts_the_seeds_drew(tmp_path: Path) -> None:
    """Captured-sequence timing: seeds on one capture share its start, so --runs N names how
    many distinct captures its N seeds drew (one line; JSON `capture_starts`); table timing
    (an independent draw per wakeup) has no such line."""
    from tcpsim.engine.apps import run_capture
    f = tmp_path / "t.toml"
    f.write_text(_TIMED.replace('"periodic_writer"', '"periodic_writer_blocks"')
                 .replace('"periodic_reader"', '"periodic_reader_blocks"'))
    args = ["run", str(f), "-d", "300ms", "--runs", "4", "--no-progress", "--engine", "python"]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    distinct = len({run_capture(s, 6) for s in range(1, 5)})
    want = {"host": "dev-vm-loaded", "captures": 6, "distinct": distinct}
    assert json.loads(r.output)["capture_starts"] == {"writer": want, "reader": want}
    r = runner.invoke(app, args)
    lines = [ln for ln in r.output.splitlines() if "capture starts" in ln]
    assert lines == [f"  capture starts: writer {distinct}, reader {distinct} distinct of 6 "
                     "(dev-vm-loaded) in 4 seeds; seeds on one capture share its first block"]
    f.write_text(_TIMED)
    r = runner.invoke(app, ["run", str(f), "-d", "300ms", "--runs", "2", "--json",
                            "--no-progress", "--engine", "python"])
    assert r.exit_code == 0 and json.loads(r.output)["capture_starts"] == {}


def test_runs_rejects_zero_and_a_trace(tmp_path: Path) -> None:
    r = runner.invoke(app, ["run", "seed-rcvbuf32k-fill", "--runs", "0"])
    assert r.exit_code != 0 and "tcpsim: error: --runs 0" in r.output
    r = runner.invoke(app, ["run", "seed-rcvbuf32k-fill", "--runs", "2", "--trace",
                            str(tmp_path / "x.parquet")])
    assert r.exit_code != 0 and "--runs: --trace" in r.output


def test_compare_runs_gives_a_spread_per_side(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text(_TIMED)
    r = runner.invoke(app, ["compare", str(f), "-d", "1s", "--profile", "linux-6.18",
                            "--vs", "linux-6.18", "-s", "net.ipv4.tcp_shrink_window=1",
                            "--runs", "2", "--json", "--engine", "python",
                            "--html", str(tmp_path / "c.html")])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert len(d["spread"]) == 2 and all(s["runs"] == 2 for s in d["spread"].values())
    assert d["table"]
