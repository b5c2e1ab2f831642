"""Benchmark: import plus a fitted replay of a 5-second 1 Gbit/s capture (goal: <= 15 s).

    PYTHONPATH=. python3 benchmarks/pcap_fit.py [CAPTURE.pcap] [--seconds 5]

Without a capture it makes one: a simulated bulk transfer through a 1 Gbit/s link (1 ms RTT,
a reader taking 64 KiB every 0.5 ms, linux-6.18) written with `tcpsim run --pcap`, which is a
capture on the receiver's interface as tcpdump would write it. Prints the wall time of each
stage, measured in one run (the machine is shared: compare ratios, not absolutes).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIO = """
name = "bulk-1gbit"
description = "bulk sender through a 1 Gbit/s link, a reader taking 64 KiB every 0.5 ms"
profile = "linux-6.18"
duration = "{seconds}s"
[link]
rtt = "1ms"
rate = "1Gbit"
[writer]
kind = "bulk"
bytes = 65536
[reader]
kind = "periodic"
bytes = 65536
every = "500us"
"""
GOAL_S = 15.0


def make_capture(out: Path, seconds: float) -> Path:
    sc = out.with_suffix(".toml")
    sc.write_text(SCENARIO.format(seconds=seconds))
    subprocess.run([sys.executable, "-m", "tcpsim.cli", "run", str(sc), "--pcap", str(out),
                    "--no-progress"], check=True, capture_output=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", nargs="?")
    ap.add_argument("--seconds", type=float, default=5.0)
    args = ap.parse_args()
    from tcpsim.pcap.fit import Capture, fit
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.capture) if args.capture else make_capture(Path(tmp) / "bulk.pcap",
                                                                    args.seconds)
        t0 = time.perf_counter()
        cap = Capture(path)
        t1 = time.perf_counter()
        f = fit(cap, "linux-6.18")
        t2 = time.perf_counter()
    packets = cap.imp.meta["summary"]["packets"]
    print(f"capture: {packets} packets, {cap.imp.meta['summary']['duration_s']:.2f} s")
    print(f"import:                 {t1 - t0:7.1f} s")
    print(f"fit ({f.replays} replays of the first window) + the best over the whole capture: "
          f"{t2 - t1:7.1f} s")
    print(f"total:                  {t2 - t0:7.1f} s (goal {GOAL_S:g} s) grade {f.grade.total:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
