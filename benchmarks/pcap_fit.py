"""Benchmark: import plus a fitted replay of a 5-second 1 Gbit/s capture (goal: <= 15 s).

    PYTHONPATH=. python3 benchmarks/pcap_fit.py [CAPTURE.pcap] [--seconds 5] [--json]

The same as `tcpsim bench --pcap` (tcpsim/bench_pcap.py: why the capture is simulated, what
is measured), with a capture of your own when given one.
"""

from __future__ import annotations

import argparse
import json


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", nargs="?")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from tcpsim.bench_pcap import pcap_benchmark
    rows = pcap_benchmark(args.capture, args.seconds, echo=None if args.json else print)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
