"""The burstiness table of docs/app-latency.md ("Bursts: the captured sequences, replayed in
blocks"): the captured wakeup-lateness sequences of a host preset against what the model
draws from them -- `_blocks` (the preset's captures replayed in blocks, tcpsim.app_latency.
BlockSequence) and the pooled quantile tables (independent draws) -- over seeds 1..N.

    python scripts/blocks_burstiness.py [--host dev-vm-loaded] [--seeds 10] [--wakeups 100000]

Per sequence (tcpsim.capture.wakeups.burstiness): wakeups later than 5 ms per 1000, the lag-1
correlation of "later than 2 ms", the dispersion index of the count later than 4 ms per 1000
wakeups; and "reads more than 5 ms apart" per 1000 reads: a periodic 1 ms reader's calls on
the model's grid (tcpsim.engine.apps: a late wakeup runs the overdue ticks back to back),
over the whole sequence and over its first 2000 wakeups. A captures' row uses each capture's
whole sequence; a model row each seed's first `--wakeups` draws of a writer and a reader.
Prints the table's markdown rows.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

from tcpsim.app_latency import DEFAULT_HOST, HOSTS, load_sequences  # noqa: E402
from tcpsim.capture.wakeups import burstiness  # noqa: E402
from tcpsim.engine.apps import make_timing  # noqa: E402
from tcpsim.workload import App  # noqa: E402

MS = 1_000_000
COLUMNS = (("w5", "writer >5 ms /1000"), ("r5", "reader >5 ms /1000"),
           ("wa", "writer lag-1 corr."), ("ra", "reader lag-1 corr."),
           ("wd", "writer dispersion"), ("rd", "reader dispersion"),
           ("g", "reads >5 ms apart /1000"), ("g2", "same, first 2000 wakeups"))


def reader_calls(lateness: list[int]) -> list[int]:
    """The times (ns) a periodic 1 ms reader calls recv() when its wakeups are `lateness`
    late: woken at tick*1ms + lateness, it runs every tick due by then back to back."""
    it = iter(lateness)
    out: list[int] = []
    ticks, now = 0, next(it)
    for late in it:
        due = now // MS + 1 - ticks
        ticks += due
        out += [now] * due
        now = ticks * MS + late
    return out


def gaps_per_1000(calls: list[int]) -> float:
    """Calls more than 5 ms after the one before, per 1000."""
    return 1000 * sum(b - a > 5 * MS for a, b in zip(calls, calls[1:])) / (len(calls) - 1)


def stats(writer: list[int], reader: list[int]) -> dict[str, float]:
    bw, br = burstiness(writer), burstiness(reader)
    return {"w5": bw["late_5ms_per_1000"], "r5": br["late_5ms_per_1000"],
            "wa": bw["acf1_late_2ms"], "ra": br["acf1_late_2ms"],
            "wd": bw["dispersion_late_4ms"], "rd": br["dispersion_late_4ms"],
            "g": gaps_per_1000(reader_calls(reader)),
            "g2": gaps_per_1000(reader_calls(reader[:2000]))}


def model(latency: str, host: str, seed: int, n: int) -> dict[str, float]:
    """One seed's writer and reader draws of `latency` ("periodic_writer_blocks"'s kind
    without the side) under `host`."""
    def draws(side: str) -> list[int]:
        app = App("periodic", bytes=1, every=MS, latency_table=f"periodic_{side}{latency}",
                  latency_host=host)
        t = make_timing(app, seed, side)
        assert t is not None
        return [t.late() for _ in range(n)]
    return stats(draws("writer"), draws("reader"))


def rows(host: str, seeds: int, n: int) -> dict[str, list[dict[str, float]]]:
    caps = zip(load_sequences("periodic_writer", host), load_sequences("periodic_reader", host))
    out = {f"captures ({len(load_sequences('periodic_writer', host))})":
           [stats(list(w), list(r)) for w, r in caps]}
    for label, latency in ((f"`_blocks`, seeds 1–{seeds}", "_blocks"),
                           (f"tables, seeds 1–{seeds}", "")):
        out[label] = [model(latency, host, s, n) for s in range(1, seeds + 1)]
    return out


def markdown(table: dict[str, list[dict[str, float]]]) -> list[str]:
    def num(v: float) -> str:
        return f"{v:.2f}".replace("-0.00", "0.00").replace("-", "−")

    def cell(vals: list[float]) -> str:
        return f"{num(min(vals))}–{num(max(vals))} ({num(statistics.median(vals))})"
    lines = ["| | " + " | ".join(c for _, c in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for label, per in table.items():
        lines.append(f"| {label} | " + " | ".join(cell([p[k] for p in per]) for k, _ in COLUMNS)
                     + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default=DEFAULT_HOST, choices=sorted(HOSTS))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--wakeups", type=int, default=100_000)
    args = ap.parse_args(argv)
    table: dict[str, Any] = rows(args.host, args.seeds, args.wakeups)
    print("\n".join(markdown(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
