"""Build tcpsim/data/app_latency_blocks.bin from kept captures (docs/app-latency.md).

    python scripts/app_latency_blocks.py /tmp/raw-runs [more folders] [-o FILE] [--block N]
        [--unit-us U] [--about TEXT]

The default output is the default host preset's file (dev-vm-loaded); a host preset of
tcpsim.app_latency.HOSTS is written with `-o tcpsim/data/<its file>`. A `.bin` output is the
compact format tcpsim reads (tcpsim.latency_file: each capture decoded only when a run
replays it); `-o NAME.json.gz` writes the same document as gzipped JSON (readable by any
tool, and by tcpsim, which then decodes the whole of it in every process). `--unit-us 10` stores
the lateness in 10 us steps (about half the size; the outcome depends on ms-scale lateness:
the ticks are 1 ms apart and the median lateness ~70 us).

Each folder holds runs kept by `scripts/capture_fixtures.py --keep-raw` (one sub-folder per
run with `<name>.raw/`). For every run whose writer or reader is periodic, the file keeps
that application's timer lateness in wakeup order (tcpsim.capture.wakeups.timer_lateness:
the ticks it slept into), rounded to the microsecond, one sequence per run, with each
sequence's burstiness (tcpsim.capture.wakeups.burstiness) as its provenance.

The model (tcpsim.app_latency.BlockSequence, latency = "periodic_writer_blocks" or
"periodic_reader_blocks") picks one run per simulated run and replays blocks of `--block`
consecutive wakeups of it from random starting points (a moving-block bootstrap): each
block is a real stretch of the host's timing, with its bursts, and a run keeps the level
of the host condition it drew.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

from tcpsim import latency_file  # noqa: E402
from tcpsim.app_latency import SEQUENCE_UNIT_NS  # noqa: E402
from tcpsim.capture import wakeups  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tcpsim" / "data" / "app_latency_blocks.bin"
DEFAULT_BLOCK = 5000
SIDES = (("sender", "writer"), ("receiver", "reader"))


def run_sequences(raw: Path) -> dict[str, list[int]]:
    """{"periodic_writer"/"periodic_reader": lateness in ns, in wakeup order} of one run."""
    meta = json.loads((raw / "meta.json").read_text())
    sc = meta.get("scenario") or {}
    out = {}
    for side, role in SIDES:
        if (sc.get(role) or {}).get("kind") == "periodic":
            out[f"periodic_{role}"] = wakeups.timer_lateness(
                wakeups.read_events(raw / f"{side}_events.csv"))
    return out


def build(folders: list[Path], block: int, unit_ns: int = SEQUENCE_UNIT_NS,
          about: str = "") -> dict[str, Any]:
    captures: list[dict[str, Any]] = []
    sequences: dict[str, list[list[int]]] = {}
    for folder in folders:
        for raw in sorted(folder.glob("*/*.raw")):
            seqs = run_sequences(raw)
            if set(seqs) != {"periodic_writer", "periodic_reader"}:
                continue                    # the model draws a writer and a reader together
            meta = json.loads((raw / "meta.json").read_text())
            summary = meta.get("summary") or {}
            captures.append({
                "run": f"{folder.name}/{raw.parent.name}", "profile": meta.get("profile", ""),
                "sysctl": (meta.get("scenario") or {}).get("sysctl", {}),
                "cpu": summary.get("cpu"), "loadavg": summary.get("loadavg"),
                **({"host_load": summary["host_load"]} if "host_load" in summary else {}),
                **{name: wakeups.burstiness(v) for name, v in sorted(seqs.items())}})
            for name, v in seqs.items():
                sequences.setdefault(name, []).append(
                    [(x + unit_ns // 2) // unit_ns for x in v])
    return {
        "about": "Captured application wakeup lateness in wakeup order (issue 14), one "
                 "sequence per capture; drawn by tcpsim.app_latency.BlockSequence"
                 + (f". Host condition: {about}" if about else ""),
        "machine": {"release": platform.release(), "cpus": os.cpu_count()},
        "made": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "method": "tcpsim capture (scripts/capture_fixtures.py --keep-raw) of the reproducer "
                  "seed-unbounded-growth, 120 s; endpoints are Python processes pinned to one "
                  "CPU; lateness = CLOCK_MONOTONIC before send()/recv() minus the tick's due "
                  "time on an absolute 1 ms grid, ticks the process slept into only",
        "unit_ns": unit_ns,
        "block_wakeups": block,
        "captures": captures,
        "sequences": sequences,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build the captured wakeup-lateness sequences.")
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--block", type=int, default=DEFAULT_BLOCK,
                    help=f"wakeups per replayed block (default {DEFAULT_BLOCK})")
    ap.add_argument("--unit-us", type=int, default=SEQUENCE_UNIT_NS // 1000,
                    help="stored resolution in microseconds (default 1)")
    ap.add_argument("--about", default="", help="the host condition, for the provenance")
    args = ap.parse_args(argv)
    if args.unit_us < 1:
        print("app_latency_blocks: --unit-us must be at least 1", file=sys.stderr)
        return 2
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"app_latency_blocks: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    doc = build(args.folders, args.block, args.unit_us * 1000, args.about)
    if not doc["captures"]:
        print("app_latency_blocks: no runs with a periodic writer and reader in those folders",
              file=sys.stderr)
        return 2
    short = min(len(s) for v in doc["sequences"].values() for s in v)
    if short < args.block:
        print(f"app_latency_blocks: --block {args.block} is longer than the shortest "
              f"sequence ({short} wakeups)", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.name.endswith(".json.gz"):
        text = json.dumps(doc, separators=(",", ":")).encode()
        args.out.write_bytes(gzip.compress(text, 9, mtime=0))
    else:
        latency_file.write(doc, args.out)
    for c in doc["captures"]:
        print(c["run"], {k: round(v["late_4ms_per_1000"], 1) for k, v in c.items()
                         if k.startswith("periodic_")})
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
