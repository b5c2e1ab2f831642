"""A sweep killed with SIGKILL halfway, then run again, ends with every point stored
exactly once: the finished ones are kept (not recomputed), the others are run."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
N = 24


def command(results: Path) -> list[str]:
    return [sys.executable, "-m", "tcpsim.cli", "sweep", "seed-unbounded-growth", "-d", "2s",
            "-j", "2", "-x", "reader.bytes=1,10,100,1000", "-x", "link.rtt=5ms,20ms,80ms",
            "-x", "policy=none,shrink-window", "-r", str(results)]


def stored(results: Path) -> dict[str, int]:
    """{file name: inode} of the stored rows."""
    d = results / "points"
    return {p.name: p.stat().st_ino for p in d.glob("*.parquet")} if d.is_dir() else {}


def test_sigkill_halfway_then_rerun_stores_every_point_exactly_once(tmp_path):
    results = tmp_path / "r"
    proc = subprocess.Popen(command(results), cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(stored(results)) < N // 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)        # the sweep and its workers, at once
        proc.wait()
    before = stored(results)
    assert N // 3 <= len(before) < N, "killed halfway"

    again = subprocess.run(command(results), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    summary = again.stderr.strip().splitlines()[-1]
    m = re.search(r"(\d+)/(\d+) points in .*: (\d+) run, (\d+) already done, 0 failed", summary)
    assert m, summary
    assert (int(m[2]), int(m[3]), int(m[4])) == (N, N - len(before), len(before))
    after = stored(results)
    hashes = json.loads((results / "sweep.json").read_text())["points"]
    assert sorted(after) == sorted(f"{h}.parquet" for h in hashes) and len(set(hashes)) == N
    assert {k: after[k] for k in before} == before       # the finished rows were not rewritten
    assert not [p for p in (results / "points").iterdir() if p.name.startswith(".")]
