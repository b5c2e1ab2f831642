"""The host benchmark: hosts of the seed mix at several sizes on the native engine, beside the
single-connection cases (tcpsim/bench_host.py; `tcpsim bench --hosts` runs the same).

    python benchmarks/host_scale.py [--quick] [--sizes 1000,10000] [--against TREE]
                                    [--no-single] [--threads 1,2] [--probe] [--json]

`--threads 1,2` runs each host case once per value, back to back (>= 2: the host in CPU order
on that many threads, src/engine/parallel.rs) and prints the wall and CPU ratios.
`--against TREE` runs each host case, on each number of threads, on another source tree (a
checkout with its native engine built, e.g. `git worktree add /tmp/base HEAD~3`) just before
this one and prints the CPU ratio.

Numbers, never pass/fail: the machine is shared and noisy; compare figures of one run.
"""

from __future__ import annotations

import argparse
import json

from tcpsim.bench_host import host_benchmarks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="200 and 1 000 connections for 10 s")
    ap.add_argument("--sizes", help="connection counts, e.g. 1000,10000")
    ap.add_argument("--against", metavar="TREE",
                    help="another source tree (native built) to run each host case on first")
    ap.add_argument("--no-single", action="store_true",
                    help="only the host cases (not the single-connection ones)")
    ap.add_argument("--threads", default="1",
                    help="threads of each host case, e.g. 1,2 (each measured back to back)")
    ap.add_argument("--probe", action="store_true",
                    help="also time what each of 2 threads runs, one after the other (what "
                         "threads gain on free cores, whatever the machine's load)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    sizes = tuple(int(x) for x in a.sizes.split(",")) if a.sizes else None
    out = host_benchmarks(quick=a.quick, echo=None if a.json else print, sizes=sizes,
                          against=a.against, single=not a.no_single,
                          threads=tuple(int(x) for x in a.threads.split(",")), probe=a.probe)
    if a.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
