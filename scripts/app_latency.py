"""Build tcpsim/data/app_latency.json from kept captures (docs/app-latency.md).

    python scripts/app_latency.py /tmp/raw-runs [more folders] [-o tcpsim/data/app_latency.json]

Each folder holds runs kept by `scripts/capture_fixtures.py --keep-raw`: one sub-folder per
run with `<name>.raw/` (the endpoints' event logs, the bpftrace probe CSV, meta.json). The
tables (tcpsim.app_latency) pool every run of a kind:

    periodic_writer   timer lateness of the periodic writers (t_call - t_due of each send())
    periodic_reader   timer lateness of the periodic readers (each recv())
    blocking_reader   a blocking recv()'s return minus the arrival (tcp:tcp_probe) of the
                      first in-order data segment after it began waiting

Measured by tcpsim.capture.wakeups; quantiles at k/N (N = --quantiles, default 10 000).
A model draws between neighbouring quantiles linearly, so N decides how the tail is drawn:
with N = 100 the last segment ran from p99 to the maximum, and 1 % of draws fell evenly
between 4 and 63 ms where 0.1 % of the measured wakeups were later than 6-8 ms: the model's
apps missed ticks by tens of milliseconds about fifty times as often as the real ones
(issue 14). N = 10 000 leaves the top 0.01 % between p99.99 and the maximum.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

from tcpsim.capture import wakeups  # noqa: E402
from tcpsim.capture.capture import RCV_PORT  # noqa: E402
from tcpsim.capture.probe_csv import parse_lines  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tcpsim" / "data" / "app_latency.json"
DEFAULT_QUANTILES = 10_000


def run_samples(raw: Path) -> dict[str, list[int]]:
    """{table name: latencies in ns} of one kept run."""
    out: dict[str, list[int]] = {}
    meta = json.loads((raw / "meta.json").read_text())
    sc = meta.get("scenario") or {}
    for side, table in (("sender", "writer"), ("receiver", "reader")):
        app = sc.get(table) or {}
        events = wakeups.read_events(raw / f"{side}_events.csv")
        if app.get("kind") == "periodic":
            out[f"periodic_{table}"] = wakeups.timer_lateness(events)
        elif app.get("kind") == "blocking" and (raw / "probe.csv").exists():
            with open(raw / "probe.csv") as f:
                probes = parse_lines(f)["probe"]
            arrivals = wakeups.data_arrivals(p for p in probes if p["sport"] == RCV_PORT)
            out["blocking_reader"] = wakeups.blocking_latency(events, arrivals)
    return out


def build(folders: list[Path], n: int) -> dict[str, Any]:
    pooled: dict[str, list[int]] = {}
    runs: dict[str, list[dict[str, Any]]] = {}
    kernels = set()
    for folder in folders:
        for raw in sorted(folder.glob("*/*.raw")):
            meta = json.loads((raw / "meta.json").read_text())
            kernels.add(meta.get("profile", ""))
            for name, values in run_samples(raw).items():
                pooled.setdefault(name, []).extend(values)
                runs.setdefault(name, []).append({"run": raw.parent.name,
                                                  **wakeups.describe(values)})
    tables = {}
    for name in sorted(pooled):
        values = pooled[name]
        tables[name] = {"n_samples": len(values), **wakeups.describe(values),
                        "runs": runs[name], "quantiles_ns": wakeups.quantiles(values, n)}
    return {
        "about": "Application wakeup latency on the development machine (issue 14); "
                 "draw with tcpsim.app_latency.table_lookup(table, rng.random())",
        "machine": {"kernel": sorted(kernels), "release": platform.release(),
                    "cpus": os.cpu_count(), "cpu": _cpu_model()},
        "made": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "method": "tcpsim capture (scripts/capture_fixtures.py) in network namespaces; "
                  "endpoints are Python processes (tcpsim.capture.apps) pinned to one CPU; "
                  "timer tables: CLOCK_MONOTONIC just before send()/recv() minus the tick's "
                  "due time on an absolute 1 ms grid (time.sleep in <= 50 ms steps); "
                  "blocking_reader: recv() return minus the tcp:tcp_probe time of the first "
                  "in-order data segment after the reader began waiting (bpftrace)",
        "quantiles": f"nearest-rank at k/{n}, k = 0..{n}",
        "tables": tables,
    }


def dump(doc: dict[str, Any]) -> str:
    """The document as indented JSON with each quantile list on one line (10 001 values
    one per line would make the file five times longer to read through)."""
    lists = {}
    for name, t in doc["tables"].items():
        key = f"@@{name}@@"
        lists[key] = json.dumps(t["quantiles_ns"], separators=(",", ":"))
        t["quantiles_ns"] = key
    text = json.dumps(doc, indent=1) + "\n"
    for key, value in lists.items():
        text = text.replace(f'"{key}"', value)
    for name, t in doc["tables"].items():
        t["quantiles_ns"] = json.loads(lists[f"@@{name}@@"])
    return text


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build the app-latency quantile tables.")
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--quantiles", type=int, default=DEFAULT_QUANTILES)
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"app_latency: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    doc = build(args.folders, args.quantiles)
    if not doc["tables"]:
        print("app_latency: no runs with periodic or blocking apps in those folders",
              file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dump(doc))
    for name, t in doc["tables"].items():
        print(f"{name}: n={t['n']} p50={t['p50_ns']} p90={t['p90_ns']} p99={t['p99_ns']} "
              f"max={t['max_ns']} ns")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
