"""What a Python patch costs on the native engine (issue #13: "a Python patch overriding one
decision point costs at most 2x the built-in equivalent on (b)").

    PYTHONPATH=. python3 benchmarks/py_patch_cost.py [-d 120s] [-n 3] [--no-trace]

Runs target (b) (benchmarks/targets/b.toml: 1448 B every 1 ms, fast reader, linux-6.18)
on the native engine with the built-in `shrink-window` patch and with its Python twin
(benchmarks/patches/py_patches.py `ShrinkWindowTwin`, one decision point: shrink_allowed,
which select_window() asks at every ACK), each as a whole `python3 -m tcpsim.cli run`
process with the trace written, interleaved (built-in, twin, built-in, ...: the machine is
shared, so only ratios within one run mean much). First checks that the two runs give the
same trace rows (the metadata differs: the profile name, and the built-in sets
tcp_shrink_window=1 where the twin ignores the sysctl) and how often the twin was called.
Prints the median CPU (user + sys) of each and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "targets"))
from measure import once  # noqa: E402  (benchmarks/targets/measure.py)

B = str(HERE / "targets" / "b.toml")
TWIN = f"{HERE / 'patches' / 'py_patches.py'}:ShrinkWindowTwin"
SIDES = {"built-in": ["--policy", "shrink-window"], "python": ["--policy", TWIN]}


def same_rows(duration: str, tmp: str) -> tuple[bool, int]:
    """(the two sides' trace rows are equal, rows) for a short run of each."""
    import pyarrow.parquet as pq
    tables = {}
    for side, pol in SIDES.items():
        path = os.path.join(tmp, f"check-{side}.parquet")
        subprocess.run([sys.executable, "-m", "tcpsim.cli", "run", B, "-d", duration,
                        "--no-progress", "--trace", path, *pol], check=True,
                        stdout=subprocess.DEVNULL)
        tables[side] = pq.read_table(path).replace_schema_metadata(None)
    a, b = tables.values()
    return a.equals(b), a.num_rows


def calls(duration: str) -> int:
    """How many times the twin's shrink_allowed runs in (b) for `duration` (in process)."""
    from tcpsim.catalog import load_policy_file
    from tcpsim.runner import RunOptions, run
    from tcpsim.scenario import load_scenario
    from tcpsim.units import parse_duration
    cls = load_policy_file(TWIN)
    n = 0
    orig = cls.shrink_allowed

    def counted(self, sk):  # type: ignore[no-untyped-def]
        nonlocal n
        n += 1
        return orig(self, sk)
    cls.shrink_allowed = counted
    try:
        run(load_scenario(B), RunOptions(policies=(TWIN,), engine="native",
                                         duration=parse_duration(duration, "d")))
    finally:
        cls.shrink_allowed = orig
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-d", "--duration", default="120s", help="simulated time of (b) per run")
    ap.add_argument("-n", type=int, default=3, help="runs per side (median)")
    ap.add_argument("--no-trace", action="store_true", help="time the runs without a trace")
    a = ap.parse_args()
    print(f"load: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} CPUs", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        ok, rows = same_rows("10s", tmp)
        print(f"same trace rows as the built-in (10 s, {rows} rows): {ok}", flush=True)
        if not ok:
            return 1
        print(f"shrink_allowed calls in {a.duration}: {calls(a.duration)}", flush=True)
        trace = [] if a.no_trace else ["--trace", os.path.join(tmp, "t.parquet")]
        cpu: dict[str, list[float]] = {side: [] for side in SIDES}
        for _ in range(a.n):
            for side, pol in SIDES.items():
                _, c, _ = once(["run", B, "-d", a.duration, "--no-progress", *trace, *pol])
                cpu[side].append(c)
        med = {side: statistics.median(v) for side, v in cpu.items()}
        for side, v in cpu.items():
            print(f"{side:9s} CPU median {med[side]:6.2f} s  ({', '.join(f'{x:.2f}' for x in v)})")
        ratio = med["python"] / med["built-in"]
        print(f"python / built-in: {ratio:.2f}x (target <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
