"""The issue's speed targets, measured as a user runs them: a whole `python3 -m tcpsim.cli`
process per run, trace written, median of N runs (wall, CPU = user + sys, peak RSS).

    PYTHONPATH=. python3 benchmarks/targets/measure.py [-n 3] [--only a,b] [--python]

(a) bulk-1gbit for 10 s; (b) b.toml (1448 B every 1 ms, fast reader, 35 min); (c) c.toml
(1 B/1 ms reader, 6.1.59 with tcp_shrink_window, 35 min); (d) seed-oscillating-reader for
12 min; (e) the 100-point sweep of `tcpsim bench` at 60 s, two workers, no traces. With
--python, also (a) for 1 s and (b) for 120 s on the Python engine, and the native/python
ratio of simulated seconds per CPU second.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = {
    "a": (["bulk-1gbit", "-d", "10s"], 10.0),
    "b": ([str(HERE / "b.toml")], 2100.0),
    "c": ([str(HERE / "c.toml")], 2100.0),
    "d": (["seed-oscillating-reader", "-d", "12min"], 720.0),
}
PYTHON = {"a": (["bulk-1gbit", "-d", "1s"], 1.0), "b": ([str(HERE / "b.toml"), "-d", "120s"], 120.0)}
SWEEP = ["sweep", "seed-unbounded-growth",
         "-x", "profile=linux-5.15,linux-6.1,linux-6.6,linux-6.17,linux-6.18",
         "-x", "reader.bytes=1,100,1000,3000", "-x", "link.rtt=2ms,10ms,20ms,50ms,100ms",
         "-d", "60s", "-j", "2", "--fresh"]


def once(args: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tcpsim.cli", *args], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, after.ru_maxrss / 1024


def median_of(n: int, args: list[str]) -> tuple[float, float, float]:
    runs = [once(args) for _ in range(n)]
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            max(r[2] for r in runs))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--only", default="a,b,c,d,e")
    ap.add_argument("--python", action="store_true")
    a = ap.parse_args()
    only = a.only.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        trace = ["--trace", os.path.join(tmp, "t.parquet")]
        rates = {}
        for key, (args, sim_s) in CASES.items():
            if key in only:
                wall, cpu, rss = median_of(a.n, [*(["run"] + args), *trace])
                rates[key] = sim_s / cpu
                print(f"({key}) native  wall {wall:7.2f} s  CPU {cpu:7.2f} s  RSS {rss:6.1f} MB",
                      flush=True)
        if "e" in only:
            wall, cpu, rss = median_of(a.n, [*SWEEP, "-r", os.path.join(tmp, "sweep")])
            print(f"(e) native  wall {wall:7.2f} s  CPU {cpu:7.2f} s (100 points, 2 workers)",
                  flush=True)
        if a.python:
            for key, (args, sim_s) in PYTHON.items():
                if key in only:
                    wall, cpu, rss = median_of(a.n, ["run", *args, *trace, "--engine", "python"])
                    ratio = rates.get(key, 0) / (sim_s / cpu)
                    print(f"({key}) python  {args[-1]:>5} simulated: wall {wall:7.2f} s  CPU "
                          f"{cpu:7.2f} s  native/python {ratio:5.1f}x (simulated s per CPU s)",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
