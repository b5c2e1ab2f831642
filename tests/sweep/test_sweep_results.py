"""tcpsim.sweeps.dataset and driver: rows stored as points finish, resume by content hash,
--fresh, traces beside the rows, a dataset pandas reads, a dying pool worker retried."""

import json
import os
import signal

import pandas as pd
import pyarrow.dataset as ds
import pytest

from tcpsim.core.constants import NS_PER_S
from tcpsim.runner import RunOptions, default_engine
from tcpsim.sweeps import Results, build_points, parse_axis, point_hash, run_sweep
from tcpsim.sweeps import execute
from tcpsim.sweeps.dataset import write_results

SHORT = RunOptions(duration=NS_PER_S // 2)
AXES = ["receiver.so_rcvbuf=16384,32768", "profile=linux-6.1,linux-6.18"]


def grid(axes=AXES, base=SHORT, scenario="seed-rcvbuf32k-fill"):
    return build_points(scenario, [parse_axis(a) for a in axes], base)


def sweep(res, points, **kw):
    res.prepare([parse_axis(a) for a in AXES], points, ["peak_sk_rcvbuf"])
    return run_sweep(points, jobs=1, results=res, **kw)


@pytest.fixture
def counted(monkeypatch):
    """Count the points actually run (in this process: jobs=1)."""
    ran = []
    real = execute._run_point

    def counting(point, trace):
        ran.append(point.hash)
        return real(point, trace)

    monkeypatch.setattr(execute, "_run_point", counting)
    return ran


def strip(points):
    return [{k: v for k, v in p.summary.items() if k != "wall_s"} for p in points]


def test_a_rerun_resumes_and_fresh_recomputes(tmp_path, counted):
    res = Results(tmp_path / "r")
    first = sweep(res, grid())
    assert len(counted) == 4 and res.present() == {p.hash for p in first}
    again = sweep(res, grid())
    assert len(counted) == 4                                   # nothing run again
    assert strip(again) == strip(first) and [p.counters for p in again] == [p.counters for p in first]
    sweep(res, grid(), fresh=True)
    assert len(counted) == 8 and len(res.present()) == 4       # recomputed, still once each


def test_a_bigger_grid_runs_only_its_new_points(tmp_path, counted):
    res = Results(tmp_path / "r")
    sweep(res, grid())
    bigger = grid(["receiver.so_rcvbuf=16384,32768,65536", "profile=linux-6.1,linux-6.18"])
    run_sweep(bigger, jobs=1, results=res)
    assert len(counted) == 6 and len(res.present()) == 6


def test_the_hash_is_the_content_not_the_labels():
    base = grid(["seed=1,2"])
    assert base[0].hash != base[1].hash
    same = grid(["seed=1"])[0]
    assert same.hash == base[0].hash                           # axes are not part of it
    changed = [grid(["seed=1"], RunOptions(duration=NS_PER_S))[0],
               grid(["seed=1"], RunOptions(duration=NS_PER_S // 2, profile="linux-6.18"))[0],
               grid(["seed=1"], RunOptions(duration=NS_PER_S // 2, policies=("shrink-window",)))[0],
               grid(["seed=1", "sysctl.net.ipv4.tcp_adv_win_scale=2"])[0]]
    assert len({p.hash for p in changed} | {same.hash}) == 5
    renamed = same.scenario.with_(name="other", description="x", source="elsewhere.toml")
    assert point_hash(renamed, same.scenario.profile, same.sysctls) == same.hash


def test_pandas_reads_the_dataset_one_row_per_point(tmp_path):
    res = Results(tmp_path / "r")
    points = sweep(res, grid())
    df = pd.read_parquet(tmp_path / "r" / "points")
    assert len(df) == 4 and sorted(df["hash"]) == sorted(p.hash for p in points)
    for col in ("receiver.so_rcvbuf", "profile", "seed", "engine", "tcpsim_version",
                "peak_sk_rcvbuf", "died_at_s", "wall_s", "counter.TcpExtTCPRcvCoalesce"):
        assert col in df.columns, col
    assert df["receiver.so_rcvbuf"].dtype.kind == "i" and df["peak_sk_rcvbuf"].dtype.kind == "i"
    assert set(df["engine"]) == {default_engine()}      # the engine that computed the points
    row = df.set_index("hash").loc[points[3].hash]
    assert row["peak_sk_rcvbuf"] == points[3].summary["peak_sk_rcvbuf"]
    assert row["counter.TcpExtTCPRcvCoalesce"] == points[3].counters["TcpExtTCPRcvCoalesce"]
    assert json.loads(row["scenario"])["so_rcvbuf"] == 32768


def test_traces_are_partitioned_by_point_and_a_missing_one_is_rerun(tmp_path, counted):
    res = Results(tmp_path / "r")
    points = sweep(res, grid(), traces=True)
    parts = sorted(p.name for p in (tmp_path / "r" / "traces").iterdir())
    assert parts == sorted(f"point={p.hash}" for p in points)
    table = ds.dataset(tmp_path / "r" / "traces", format="parquet", partitioning="hive").to_table()
    assert set(table.column("point").to_pylist()) == {p.hash for p in points}
    res.trace_path(points[2]).unlink()
    sweep(res, grid(), traces=True)
    assert counted[4:] == [points[2].hash]


def test_a_failed_point_is_not_stored_and_is_tried_again(tmp_path, monkeypatch):
    real = execute._run_point
    monkeypatch.setattr(execute, "_run_point", lambda p, t: (_ for _ in ()).throw(RuntimeError("bug"))
                        if p.index == 1 else real(p, t))
    res = Results(tmp_path / "r")
    points = sweep(res, grid())
    assert points[1].error == "internal error: RuntimeError: bug" and len(res.present()) == 3
    assert write_results(points, tmp_path / "r.csv") == 4       # the export lists the failure
    monkeypatch.setattr(execute, "_run_point", real)
    again = sweep(res, grid())
    assert not any(p.error for p in again) and len(res.present()) == 4


def test_a_pool_worker_killed_mid_point_has_the_point_retried(tmp_path, monkeypatch):
    """The pool forks, so the patched function runs in the workers: the first worker to run
    point 2 kills itself (SIGKILL) mid-point; the pool is rebuilt and the point retried."""
    marker = tmp_path / "died"
    real = execute._run_point

    def dies_once(point, trace):
        if point.index == 2 and not marker.exists():
            marker.write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return real(point, trace)

    monkeypatch.setattr(execute, "_run_point", dies_once)
    res = Results(tmp_path / "r")
    pts = grid()
    res.prepare([parse_axis(a) for a in AXES], pts, [])
    killed = run_sweep(pts, jobs=2, results=res)
    assert marker.exists() and not any(p.error for p in killed)
    assert strip(killed) == strip(run_sweep(grid(), jobs=1))
    assert len(res.present()) == 4


def test_a_point_that_always_kills_its_worker_fails_alone(tmp_path, monkeypatch):
    real = execute._run_point

    def always(point, trace):
        if point.index == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(point, trace)

    monkeypatch.setattr(execute, "_run_point", always)
    points = run_sweep(grid(), jobs=2)
    assert points[0].error.startswith(f"worker died {execute.MAX_ATTEMPTS} times")
    assert all(p.summary for p in points[1:])


@pytest.mark.parametrize("reader", ["polars", "duckdb"])
def test_polars_and_duckdb_read_it_too_where_installed(tmp_path, reader):
    mod = pytest.importorskip(reader)
    res = Results(tmp_path / "r")
    points = sweep(res, grid())
    files = str(tmp_path / "r" / "points" / "*.parquet")
    if reader == "polars":
        hashes = mod.read_parquet(files)["hash"].to_list()
    else:
        hashes = [r[0] for r in mod.sql(f"select hash from '{files}'").fetchall()]
    assert sorted(hashes) == sorted(p.hash for p in points)


def test_dask_missing_is_one_user_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "distributed", None)        # import distributed fails
    with pytest.raises(execute.ExecutorError, match=r"pip install 'tcpsim\[dask\]'"):
        run_sweep(grid(), executor="dask")
