"""tcpsim.sweeps on Dask: the same rows as the local pool, and a worker killed mid-sweep loses
nothing. Clusters run on loopback only. Skipped when Dask is not installed (pip install
'.[test]' installs it)."""

import logging
import os
import signal

import pandas as pd
import pytest

from tcpsim.core.constants import NS_PER_MS
from tcpsim.runner import RunOptions
from tcpsim.sweeps import Results, build_points, parse_axis, run_sweep

distributed = pytest.importorskip("distributed")

AXES = ["reader.bytes=1,10,100,1000,3300", "link.rtt=2ms,5ms,10ms,20ms,40ms",
        "profile=linux-6.1,linux-6.18", "policy=none,shrink-window"]          # 100 points


def grid(ms: int):
    axes = [parse_axis(a) for a in AXES]
    return axes, build_points("seed-unbounded-growth", axes, RunOptions(duration=ms * NS_PER_MS))


def sweep_into(root, ms, **kw):
    axes, points = grid(ms)
    res = Results(root)
    res.prepare(axes, points, [])
    run_sweep(points, results=res, **kw)
    return points


def rows(root) -> pd.DataFrame:
    df = pd.read_parquet(root / "points").drop(columns=["wall_s"])
    return df.sort_values("hash").reset_index(drop=True)


@pytest.fixture(scope="module")
def local_rows(tmp_path_factory):
    """The reference: the 100 points of 200 ms on the local pool."""
    root = tmp_path_factory.mktemp("local")
    points = sweep_into(root, 200, jobs=2)
    assert len(points) == 100 and not any(p.error for p in points)
    return rows(root)


def test_a_dask_local_cluster_gives_the_rows_of_the_local_pool(tmp_path, local_rows):
    points = sweep_into(tmp_path, 200, jobs=2, executor="dask")
    assert not any(p.error for p in points)
    got = rows(tmp_path)
    assert len(got) == 100
    pd.testing.assert_frame_equal(got, local_rows)


def test_a_worker_killed_mid_sweep_loses_nothing(tmp_path, local_rows):
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       silence_logs=logging.CRITICAL)
    killed = []
    try:
        with distributed.Client(cluster) as client:
            def kill_a_busy_worker(point, done):
                if killed or done < 20:
                    return
                # one snapshot: native points are quick, and a second look may find the
                # worker already done; none busy now -> try again at the next finished point
                processing = client.processing()
                busy = [w for w, tasks in processing.items() if tasks]
                if not busy:
                    return
                pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
                killed.append((busy[0], processing[busy[0]]))
                os.kill(pid, signal.SIGKILL)

            points = sweep_into(tmp_path, 200, scheduler=cluster.scheduler_address,
                                executor="dask", on_done=kill_a_busy_worker)
    finally:
        cluster.close()
    assert killed and killed[0][1], "the killed worker was running a point"
    assert not any(p.error for p in points)
    pd.testing.assert_frame_equal(rows(tmp_path), local_rows)


def test_an_unreachable_scheduler_is_one_error_line(tmp_path):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "tcpsim.cli", "sweep", "seed-rcvbuf32k-fill",
                           "-x", "seed=1,2", "-r", str(tmp_path / "r"),
                           "--scheduler", "tcp://127.0.0.1:9"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcpsim: error: --scheduler tcp://127.0.0.1:9")


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_a_sweep_prints_nothing_but_progress_and_the_summary(tmp_path, executor):
    """No worker's traceback (an unsendable native simulation dropped on another thread),
    no warning, no log line: stderr holds progress lines and the closing summary only."""
    import subprocess
    import sys
    out = subprocess.run(
        [sys.executable, "-m", "tcpsim.cli", "sweep", "seed-unbounded-growth",
         "--vary", "profile=linux-6.1,linux-6.18", "--vary", "link.rtt=1ms,5ms", "-d", "2s",
         "--executor", executor, "-j", "2", "--traces", "--results", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=300, cwd=os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert lines and lines[-1].startswith("sweep: 4/4 points in "), out.stderr
    stray = [ln for ln in lines if not ln.startswith("sweep: ")]
    assert not stray, "stderr holds more than progress and the summary:\n" + out.stderr
    assert any(ln.split()[:2] == ["point", "profile"] for ln in out.stdout.splitlines()[:2])
