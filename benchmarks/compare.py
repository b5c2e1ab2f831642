"""Compare the speed of the working tree against a git revision, interleaved in one process.

    python benchmarks/compare.py --base REV [--cases a,b,c,d] [--rounds 3] [--quick] [--no-trace]

The machine is shared and noisy, so wall-clock figures from separate invocations do not
compare. This script imports both versions into one process -- the revision as a renamed
copy (`tcpsim_base`, built from `git archive REV` under /tmp) -- and runs the `tcpsim bench`
cases alternately (base, new, new, base, ...), timing each run with time.process_time().
It prints per case the median CPU seconds of each side and their ratio.
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_IMPORT = re.compile(r"\btcpsim(?=[.\s])")


def build_base(rev: str) -> Path:
    """/tmp/tcpsim-base-<sha>/tcpsim_base: the revision's package, renamed."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout.strip()
    root = Path(tempfile.gettempdir()) / f"tcpsim-base-{sha}"
    pkg = root / "tcpsim_base"
    if pkg.exists():
        return root
    tar = subprocess.run(["git", "archive", sha, "tcpsim", "models", "experiments"], cwd=REPO,
                         check=True, capture_output=True).stdout
    staging = root / "staging"
    with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
        tf.extractall(staging)
    (staging / "tcpsim").rename(pkg)
    for top in ("models", "experiments"):
        # since these moved to the top level, tcpsim/<top> is a symlink to ../<top>;
        # the real directory replaces it (the link would dangle once staging is gone)
        if (pkg / top).is_symlink():
            (pkg / top).unlink()
        (staging / top).rename(pkg / top)
    for py in pkg.rglob("*.py"):
        text = py.read_text()
        # imports and dotted module names only ("source": "tcpsim" metadata stays)
        text = re.sub(r"(from|import) tcpsim\b", r"\1 tcpsim_base", text)
        text = re.sub(r"\btcpsim\.(?=[a-z_])", "tcpsim_base.", text)
        py.write_text(text)
    staging.rmdir()
    return root


def load(name: str):
    return importlib.import_module(f"{name}.bench"), importlib.import_module(f"{name}.runner")


# What the working tree's side runs with, so that both sides do the same work: the Python
# engine (the native one is the default now; the base has only the Python engine), and the
# base's sender -- Reno, no cwnd restart after idle -- unless --model new (CUBIC, the
# default since the sender's congestion control was modelled).
SAME_MODEL = {"net.ipv4.tcp_congestion_control": "reno",
              "net.ipv4.tcp_slow_start_after_idle": 0}


def once(bench, runner, case, duration: str, trace: str | None,
         new: dict | None = None) -> tuple[float, int]:
    """CPU seconds and packets of one run of a bench case (as `tcpsim bench` runs it);
    `new`: further RunOptions for the working tree's side."""
    from tcpsim.units import parse_duration
    sc, sysctl = bench._scenario(case)
    opts = runner.RunOptions(profile=case.profile, sysctl=sysctl,
                             duration=parse_duration(duration, "duration"), trace=trace,
                             **(new or {}))
    t = time.process_time()
    result, _ = runner.run(sc, opts)
    return time.process_time() - t, result.summary["packets"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="HEAD")
    ap.add_argument("--cases", default="a,b,c,d")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="the bench's short durations")
    ap.add_argument("--duration", help="override every case's duration, e.g. 2s")
    ap.add_argument("--no-trace", action="store_true")
    ap.add_argument("--model", choices=("base", "new"), default="base",
                    help="the working tree's sender: the base's (Reno, the default: the same "
                         "work on both sides) or today's default (CUBIC)")
    a = ap.parse_args()
    new_opts = {"engine": "python",
                "sender_sysctl": dict(SAME_MODEL) if a.model == "base" else None}
    sys.path.insert(0, str(build_base(a.base)))
    sides = {"base": load("tcpsim_base"), "new": load("tcpsim")}
    import tcpsim.bench as new_bench
    letters = [c.strip() for c in a.cases.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        for case in new_bench.CASES:
            letter = case.name.split(":")[0]
            if letter not in letters:
                continue
            duration = a.duration or (case.quick if a.quick else case.duration)
            times: dict[str, list[float]] = {"base": [], "new": []}
            packets = {}
            for r in range(a.rounds):
                order = ("base", "new") if r % 2 == 0 else ("new", "base")
                for side in order:
                    bench, runner = sides[side]
                    c = next(x for x in bench.CASES if x.name.split(":")[0] == letter)
                    trace = None if a.no_trace else f"{tmp}/{side}.parquet"
                    cpu, packets[side] = once(bench, runner, c, duration, trace,
                                              new_opts if side == "new" else None)
                    times[side].append(cpu)
            b, n = statistics.median(times["base"]), statistics.median(times["new"])
            print(f"{case.name:<44} {duration:>6}  base {b:7.2f} s  new {n:7.2f} s  "
                  f"ratio {b / n:5.2f}x  ({packets['new'] / n:,.0f} pkt/CPU-s)  "
                  f"runs base {['%.2f' % x for x in times['base']]} "
                  f"new {['%.2f' % x for x in times['new']]}", flush=True)
            if packets["base"] != packets["new"]:
                print(f"  WARNING: packets differ: base {packets['base']} new {packets['new']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
