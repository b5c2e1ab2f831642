"""Benchmark (not a test): the Python and the native socket alone, µs per in-order segment.

    python3 benchmarks/native_socket.py [--segments N] [--profile P] [--device D] [--json]
    python3 benchmarks/native_socket.py --rust [--segments N] [--profile P] [--device D]

Same as `tcpsim bench --socket`; see tcpsim/bench_socket.py for what one segment costs.
Reports "native socket not built yet" while tcpsim._native has no TcpSocket. `--rust` builds
and runs native/examples/socket_bench.rs instead: the Rust-only loop with no Python in the
process at all (needs cargo), with and without trace events.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

from tcpsim.bench_socket import socket_benchmark  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=20_000)
    parser.add_argument("--profile", default="linux-6.18")
    parser.add_argument("--device", default="veth")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rust", action="store_true",
                        help="the Rust-only loop from cargo (native/examples/socket_bench.rs)")
    args = parser.parse_args()
    if args.rust:
        native = Path(__file__).resolve().parents[1] / "native"
        sys.exit(subprocess.call(["cargo", "run", "--quiet", "--release", "--example",
                                  "socket_bench", "--", str(args.segments * 10), args.profile,
                                  args.device, str(args.repeat)], cwd=native))
    row = socket_benchmark(args.segments, args.profile, args.device, args.repeat,
                           echo=None if args.json else print)
    if args.json:
        print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
