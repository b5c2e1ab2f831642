"""tcpsim.sweeps.grid (axes, grid building and validation, content hash), parallel runs,
exports, and the sweep command."""

import csv
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tcpsim.sweeps import execute
from tcpsim.cli import app
from tcpsim.core.constants import NS_PER_MS, NS_PER_S
from tcpsim.runner import RunOptions
from tcpsim.scenario import ScenarioError
from tcpsim.sweeps import Axis, build_points, parse_axis, run_sweep, write_results

SHORT = RunOptions(duration=NS_PER_S // 2)


@pytest.mark.parametrize("spec,key,values", [
    ("link.rtt=1ms,20ms", "link.rtt", ("1ms", "20ms")),
    ("sysctl.net.ipv4.tcp_adv_win_scale=-2,0,1", "sysctl.net.ipv4.tcp_adv_win_scale", (-2, 0, 1)),
    ("sysctl.net.ipv4.tcp_rmem=[4096, 131072, 8388608],[4096,65536,262144]",
     "sysctl.net.ipv4.tcp_rmem", ([4096, 131072, 8388608], [4096, 65536, 262144])),
    ("sender.nodelay=true,false", "sender.nodelay", (True, False)),
    ('writer.every="1ms","2ms"', "writer.every", ("1ms", "2ms")),
    ("policy=none,shrink-window+initrwnd", "policy", ("none", "shrink-window+initrwnd")),
])
def test_parse_axis_values(spec, key, values):
    assert parse_axis(spec) == Axis(key, values)


@pytest.mark.parametrize("spec,needle", [
    ("link.rtt", "expected KEY=VALUE"),
    ("bogus=1", "not a scenario field"),
    ("link=1", "not a scenario field"),
    ("link.rtt=1ms,,2ms", "empty value"),
])
def test_parse_axis_errors(spec, needle):
    with pytest.raises(ScenarioError, match=needle):
        parse_axis(spec)


def test_grid_is_the_product_and_each_point_gets_its_values():
    axes = [parse_axis("link.rtt=2ms,40ms"), parse_axis("reader.bytes=1,100,1000"),
            parse_axis("sysctl.net.ipv4.tcp_adv_win_scale=-2,1")]
    points = build_points("seed-unbounded-growth", axes, SHORT)
    assert len(points) == 12 and [p.index for p in points] == list(range(12))
    last = points[-1]
    assert last.values == {"link.rtt": "40ms", "reader.bytes": 1000,
                           "sysctl.net.ipv4.tcp_adv_win_scale": 1}
    sc = last.scenario
    assert sc.link.delay_ab + sc.link.delay_ba == 40 * NS_PER_MS
    assert sc.reader.bytes == 1000 and sc.sysctl["net.ipv4.tcp_adv_win_scale"] == 1
    assert sc.duration == NS_PER_S // 2                     # --duration applies to every point
    assert points[0].scenario.link.delay_ab == NS_PER_MS


def test_profile_and_policy_axes_resolve_like_run():
    points = build_points("seed-unbounded-growth",
                          [parse_axis("profile=linux-6.1,linux-6.18"),
                           parse_axis("policy=none,shrink-window")], SHORT)
    assert [(p.scenario.profile, p.scenario.policies) for p in points] == [
        ("linux-6.1", ()), ("linux-6.1", ("shrink-window",)),
        ("linux-6.18", ()), ("linux-6.18", ("shrink-window",))]


@pytest.mark.parametrize("spec,needle", [
    ("link.rtt=1ms,soon", "sweep point 1 (link.rtt=soon): link.rtt"),
    ("reader.bogus=1", "reader.bogus: unknown field"),
    ("profile=linux-6.1,linux-9.9", "sweep point 1 (profile=linux-9.9): unknown profile"),
    ("sysctl.net.ipv4.tcp_shrink_window=1", "does not exist on linux-6.1"),
])
def test_a_bad_point_stops_the_sweep_before_anything_runs(spec, needle):
    with pytest.raises(ValueError) as exc:
        build_points("seed-unbounded-growth", [parse_axis(spec)], SHORT)
    assert needle in str(exc.value)


def test_results_do_not_depend_on_the_number_of_workers():
    axes = [parse_axis("reader.bytes=1,3000"), parse_axis("profile=linux-6.1,linux-6.18")]
    serial = run_sweep(build_points("seed-unbounded-growth", axes, SHORT), jobs=1)
    parallel = run_sweep(build_points("seed-unbounded-growth", axes, SHORT), jobs=2)
    strip = [{k: v for k, v in p.summary.items() if k != "wall_s"} for p in serial]
    assert strip == [{k: v for k, v in p.summary.items() if k != "wall_s"} for p in parallel]
    assert len({s["peak_sk_rcvbuf"] for s in strip}) > 1      # the axes changed something


def test_a_point_that_fails_keeps_the_others(monkeypatch, tmp_path):
    real = execute._run_point

    def flaky(point, trace):
        if point.index == 1:
            raise RuntimeError("model bug")
        return real(point, trace)

    monkeypatch.setattr(execute, "_run_point", flaky)
    points = run_sweep(build_points("seed-rcvbuf32k-fill", [parse_axis("seed=1,2,3")], SHORT),
                       jobs=1)
    assert [bool(p.summary) for p in points] == [True, False, True]
    assert points[1].error == "internal error: RuntimeError: model bug"
    assert write_results(points, tmp_path / "r.csv") == 3


def test_results_files(tmp_path):
    points = run_sweep(build_points("seed-rcvbuf32k-fill",
                                    [parse_axis("receiver.so_rcvbuf=16384,32768")], SHORT),
                       jobs=1, trace_dir=tmp_path / "traces")
    write_results(points, tmp_path / "r.csv")
    write_results(points, tmp_path / "r.json")
    rows = list(csv.DictReader((tmp_path / "r.csv").open()))
    assert [r["receiver.so_rcvbuf"] for r in rows] == ["16384", "32768"]
    assert rows[1]["final_sk_rcvbuf"] == "65536" and "counter.TcpExtTCPRcvCoalesce" in rows[0]
    assert json.loads((tmp_path / "r.json").read_text())[0]["final_sk_rcvbuf"] == 32768
    assert sorted(p.name for p in (tmp_path / "traces").iterdir()) == [
        "point-0000.parquet", "point-0001.parquet"]


def test_cli_sweep_table_and_json(tmp_path):
    r = CliRunner().invoke(app, ["sweep", "seed-rcvbuf32k-fill", "-d", "0.5s", "-j", "1",
                                 "-r", str(tmp_path / "res"),
                                 "-x", "receiver.so_rcvbuf=16384,32768", "--json"])
    assert r.exit_code == 0, r.output
    assert [row["receiver.so_rcvbuf"] for row in json.loads(r.output)] == [16384, 32768]
    r = CliRunner().invoke(app, ["sweep", "seed-rcvbuf32k-fill", "-d", "0.5s", "-j", "1",
                                 "-r", str(tmp_path / "res"),
                                 "-x", "receiver.so_rcvbuf=16384,32768", "--table", str(tmp_path / "r.csv")])
    assert r.exit_code == 0, r.output
    assert "2/2 points in" in r.output and "0 run, 2 already done" in r.output
    assert (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("args,needle", [
    (["-x", "link.rtt=1ms,soon"], "sweep point 1"),
    (["-x", "link.rtt=1ms", "-o", "out.txt"], "use a .csv or .json"),
    (["-x", "link.rtt=1ms", "--table", "out.txt"], "--table out.txt: use a .csv or .json"),
    (["-x", "nonsense"], "expected KEY=VALUE"),
    ([], "a scenario needs --vary"),
    (["-x", "seed=1", "--executor", "spark"], "--executor spark: use local or dask"),
    (["-x", "seed=1", "--scheduler", "10.0.0.5:8786"], "give the scheduler's address"),
])
def test_cli_sweep_errors_are_one_line(args, needle):
    proc = subprocess.run([sys.executable, "-m", "tcpsim.cli", "sweep", "seed-rcvbuf32k-fill", *args],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_the_benchmark_grid_is_valid_and_has_100_points():
    from tcpsim.bench import SWEEP_AXES, SWEEP_EXPERIMENT
    points = build_points(SWEEP_EXPERIMENT, [parse_axis(a) for a in SWEEP_AXES], SHORT)
    assert len(points) == 100
    assert len({(p.scenario.profile, p.scenario.reader.bytes, p.scenario.link.delay_ab)
                for p in points}) == 100


def test_the_sweep_table_fits_a_terminal_by_breaking_long_headers():
    from tcpsim.runner import RunOptions
    from tcpsim.sweeps import build_points, parse_axis, run_sweep, table_lines
    axes = [parse_axis("sysctl.net.ipv4.tcp_adv_win_scale=-2,1"),
            parse_axis("profile=linux-6.1,linux-6.18"), parse_axis("link.rtt=1ms,20ms")]
    pts = build_points("seed-unbounded-growth", axes, RunOptions(duration=10**7))
    run_sweep(pts, jobs=1)
    wide = table_lines(pts, axes, width=400)
    assert len(wide) == 1 + len(pts) and max(map(len, wide)) > 160
    narrow = table_lines(pts, axes, width=160)
    assert max(map(len, narrow)) <= 160 and len(narrow) == 2 + len(pts)
    assert narrow[0].split() == ["sysctl.net.ipv4.", "link.", "peak_sk_", "peak_sk_", "zero_",
                                 "want_zero_", "goodput_", "died_"]
    assert narrow[1].split()[:3] == ["point", "tcp_adv_win_scale", "profile"]
    assert [r.split()[:2] for r in narrow[2:]] == [r.split()[:2] for r in wide[1:]]
