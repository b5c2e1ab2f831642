"""Record the committed real-kernel fixtures (tests/fixtures/kernel/) on this machine.

Run as root (needs what `tcpsim.capture` needs: ip, ethtool, tcpdump, iptables-legacy, bpftrace):

    python scripts/capture_fixtures.py                       # all fixtures, each captured twice
    python scripts/capture_fixtures.py --only seed-default-fill --repeat 1
    python scripts/capture_fixtures.py --out /tmp/fixtures   # somewhere else
    python scripts/capture_fixtures.py --retag               # notes/timing-dependence only

Each fixture is a shipped experiment (experiments/*.toml) shortened to a few seconds, with the
sysctls it needs, captured with `tcpsim.capture.capture.capture()`. The first run becomes the
fixture; the others are only used to check that the outcome classes (bounded/unbounded
memory, zero window, drops, stall) and the key numbers agree from run to run. The result of
that check goes into `manifest.json` next to the fixtures, together with which fixtures are
timing-dependent (their outcome depends on the real system's jitter, which the model does
not have yet). The fixture files are rewritten compactly (zstd, delta-encoded integers) and
bulk captures are thinned (every Nth wire row) so the whole set stays a few MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tcpsim.capture.kconfig import kernel_hz

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kernel"
EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


@dataclass(frozen=True)
class Fixture:
    """One committed capture: which experiment, shortened how, with which sysctls."""

    name: str
    experiment: str
    duration_s: float
    sysctl: dict[str, Any] = field(default_factory=dict)
    changes: dict[str, Any] = field(default_factory=dict)   # scenario tables merged on top
    probe_every: int = 1
    thin: int = 1                        # keep every Nth data segment of the wire
    drop_app_rows: bool = False          # bulk writer / fast reader: app rows not kept
    timing_dependent: tuple[str, ...] = ()   # outcome classes / metrics that jitter decides
    note: str = ""


FIXTURES: tuple[Fixture, ...] = (
    Fixture("seed-rcvbuf32k-fill", "seed-rcvbuf32k-fill", 1.0,
            note="never reads: deterministic fill to a zero window (E2)"),
    Fixture("seed-default-fill", "seed-default-fill", 1.0,
            note="never reads: deterministic fill to a zero window (E2)"),
    Fixture("seed-never-reads-shrink0", "seed-never-reads", 20.0,
            sysctl={"net.ipv4.tcp_shrink_window": 0},
            note="4 B/ms, never reads: r and rb grow together, no zero window (E4)"),
    Fixture("seed-never-reads-shrink1", "seed-never-reads", 20.0,
            sysctl={"net.ipv4.tcp_shrink_window": 1},
            note="4 B/ms, never reads, shrink 1: bounded, window shrinks to zero (E4)"),
    Fixture("seed-unbounded-growth-shrink0", "seed-unbounded-growth", 15.0,
            sysctl={"net.ipv4.tcp_shrink_window": 0},
            timing_dependent=("stall", "zero_window", "series"),
            note="1448 B/ms, reads 1 B/ms: grows until the sender lands on the right edge at a "
                 "random moment, then a zero-window stall (E5)"),
    Fixture("seed-unbounded-growth-shrink1", "seed-unbounded-growth", 15.0,
            sysctl={"net.ipv4.tcp_shrink_window": 1},
            note="1448 B/ms, reads 1 B/ms, shrink 1: bounded, zero windows (E5)"),
    Fixture("seed-oscillating-reader", "seed-oscillating-reader", 20.0,
            sysctl={"net.ipv4.tcp_shrink_window": 0},
            changes={"reader": {"period": "5s"}},
            timing_dependent=("stall", "zero_window", "series"),
            note="reader alternates 1 B/ms and 3300 B/ms every 5 s (the seed's 240 s period "
                 "shortened); the slow phases grow r/rb like E5 and may stall at random"),
    Fixture("bulk-1gbit", "bulk-1gbit", 2.0, probe_every=10, thin=10,
            timing_dependent=("numbers",),
            note="bulk, fast reader, 1 Gbit/s tbf, 20 ms RTT; tcp_probe every 10th segment, "
                 "every 10th data segment of the wire kept (all ACKs). The 2 vCPUs are the "
                 "bottleneck: two runs moved 96 MB and 15 MB (rb 12 MB and 0.27 MB), so its "
                 "numbers are not scored"),
)


def scenario_for(fx: Fixture) -> dict[str, Any]:
    """The scenario dict of a fixture: the experiment with the fixture's changes."""
    raw = tomllib.loads((EXPERIMENTS / f"{fx.experiment}.toml").read_text())
    for table, values in fx.changes.items():
        raw[table] = {**(raw.get(table) or {}), **values}
    raw["sysctl"] = {**(raw.get("sysctl") or {}), **fx.sysctl}
    raw["name"] = fx.name
    raw["duration"] = f"{fx.duration_s:g}s"
    return raw


# -- compacting --------------------------------------------------------------------------------

def compact(src: Path, dst: Path, fx: Fixture, extra_meta: dict[str, Any]) -> dict[str, Any]:
    """Rewrite a capture as a small fixture file (thinned as the fixture says); return what
    was left out."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(src)
    meta = {k.decode(): json.loads(v) for k, v in (table.schema.metadata or {}).items()
            if not k.startswith(b"ARROW")}
    left_out: dict[str, Any] = {}
    if fx.drop_app_rows:
        app = pc.is_in(table["event"], pa.array(["write", "read"]))
        left_out["app_rows"] = int(pc.sum(app).as_py() or 0)
        table = table.filter(pc.invert(app))
    if fx.thin > 1:
        # every Nth data segment on the wire; the receiver's ACKs are all kept
        data = pc.and_(pc.equal(table["sock"], "snd"), pc.equal(table["event"], "tx")).to_pylist()
        keep, k = [], 0
        for is_data in data:
            keep.append(not is_data or k % fx.thin == 0)
            k += is_data
        left_out["snd_tx_rows"] = keep.count(False)
        left_out["snd_tx_every"] = fx.thin
        table = table.filter(pa.array(keep))
    # Grouped rows compress five times better than time-ordered ones (each column is then
    # monotone within a group, which delta encoding loves); a stable sort by (t_ns, sock,
    # event) gives the capture's order back (tcpsim.validate.trace.load does).
    table = table.sort_by([("sock", "ascending"), ("event", "ascending"), ("t_ns", "ascending")])
    meta["fixture"] = {**extra_meta, "left_out": left_out,
                       "row_order": "grouped by (sock, event), time-ordered within a group; "
                                    "a stable sort by (t_ns, sock, event) restores trace order"}
    table = table.replace_schema_metadata({k: json.dumps(v, sort_keys=True) for k, v in meta.items()})
    dst.parent.mkdir(parents=True, exist_ok=True)
    _write_compact(table, dst)
    return left_out


# -- run-to-run agreement ----------------------------------------------------------------------

def run_summary(path: Path, duration_s: float) -> dict[str, Any]:
    """Outcome classes and key numbers of one capture (for the run-to-run check)."""
    from tcpsim.validate.outcomes import outcomes
    from tcpsim.validate.trace import view
    from tcpsim.trace.recorder import read_trace

    cols, meta = read_trace(path)
    v = view(cols, meta)
    end = int(duration_s * 1e9)
    oc = outcomes(v, end)
    rmem, rcvbuf = v.state["sk_rmem_alloc"], v.state["sk_rcvbuf"]
    acks = [a for a in v.acks if a.t_ns <= end]
    return {
        "outcomes": {k: oc.label(k) for k in ("memory", "zero_window", "drops", "stall")},
        "stall_at_s": None if oc.stall_at_ns is None else round(oc.stall_at_ns / 1e9, 3),
        "final_sk_rmem_alloc": rmem.at(end), "final_sk_rcvbuf": rcvbuf.at(end),
        "peak_sk_rmem_alloc": max(rmem.upto(end), default=None),
        "peak_sk_rcvbuf": max(rcvbuf.upto(end), default=None),
        "bytes_received": (acks[-1].ack_seq - 1) if acks else None,
        "zero_window_acks": sum(1 for a in acks if a.win == 0),
    }


def agreement(runs: list[dict[str, Any]]) -> dict[str, bool]:
    """Per outcome class: did every run give the same answer?"""
    keys = runs[0]["outcomes"].keys() if runs else ()
    return {k: len({r["outcomes"][k] for r in runs}) == 1 for k in keys}


def retag(out: Path, chosen: list[Fixture]) -> Path:
    """Apply FIXTURES' notes and timing-dependence to recorded fixtures and the manifest."""
    import pyarrow.parquet as pq

    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entries = {e["name"]: e for e in manifest.get("fixtures", [])}
    for fx in chosen:
        path = out / f"{fx.name}.parquet"
        if not path.is_file() or fx.name not in entries:
            continue
        table = pq.read_table(path)
        meta = {k.decode(): json.loads(v) for k, v in (table.schema.metadata or {}).items()
                if not k.startswith(b"ARROW")}
        tags = {"timing_dependent": list(fx.timing_dependent), "note": fx.note}
        meta["fixture"] = {**meta.get("fixture", {}), **tags}
        entries[fx.name].update(tags)
        entries[fx.name]["fixture"] = asdict(fx)
        _write_compact(table.replace_schema_metadata(
            {k: json.dumps(v, sort_keys=True) for k, v in meta.items()}), path)
        entries[fx.name]["bytes"] = path.stat().st_size
    manifest["fixtures"] = list(entries.values())
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest_path


def _write_compact(table: Any, path: Path) -> None:
    import pyarrow.parquet as pq

    from tcpsim.trace.schema import INT_COLUMNS, STR_COLUMNS

    pq.write_table(table, path, compression="zstd", compression_level=19,
                   use_dictionary=sorted(STR_COLUMNS),
                   column_encoding={c: "DELTA_BINARY_PACKED" for c in INT_COLUMNS},
                   row_group_size=1 << 20)


# -- main --------------------------------------------------------------------------------------

def record(fx: Fixture, out: Path, repeat: int, work: Path, use_bpftrace: bool = True) -> dict[str, Any]:
    """Capture a fixture `repeat` times; write the first run as the fixture; return its
    manifest entry."""
    from tcpsim.capture.capture import capture

    scenario = scenario_for(fx)
    runs, first = [], None
    for i in range(repeat):
        d = work / f"{fx.name}.{i}"
        path = capture(scenario, d, duration_s=fx.duration_s, use_bpftrace=use_bpftrace,
                       probe_every=fx.probe_every)
        runs.append(run_summary(path, fx.duration_s))
        print(f"  run {i + 1}: {json.dumps(runs[-1])}", flush=True)
        if first is None:
            first = path
        else:
            shutil.rmtree(d, ignore_errors=True)
    assert first is not None
    agree = agreement(runs)
    info = {"name": fx.name, "experiment": fx.experiment, "duration_s": fx.duration_s,
            "timing_dependent": list(fx.timing_dependent), "note": fx.note,
            "kernel": platform.release(), "probe_every": fx.probe_every,
            "runs": len(runs), "outcomes_agree": agree}
    dst = out / f"{fx.name}.parquet"
    left_out = compact(first, dst, fx, info)
    shutil.rmtree(first.parent, ignore_errors=True)
    return {**info, "file": dst.name, "bytes": dst.stat().st_size, "left_out": left_out,
            "run_summaries": runs,
            "fixture": asdict(fx)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Record the real-kernel fixtures (as root).")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--only", default="", help="comma-separated fixture names")
    ap.add_argument("--repeat", type=int, default=2, help="captures per fixture (default 2)")
    ap.add_argument("--list", action="store_true", help="list the fixtures and exit")
    ap.add_argument("--retag", action="store_true",
                    help="rewrite notes and timing-dependence of existing fixtures (no capture, "
                         "no root)")
    args = ap.parse_args(argv)
    chosen = [f for f in FIXTURES if not args.only or f.name in args.only.split(",")]
    if args.list:
        for f in FIXTURES:
            print(f"{f.name:32} {f.experiment:26} {f.duration_s:5g} s  {f.note}")
        return 0
    unknown = set(filter(None, args.only.split(","))) - {f.name for f in FIXTURES}
    if unknown:
        print(f"fixtures: unknown fixture(s) {', '.join(sorted(unknown))}; "
              f"see --list", file=sys.stderr)
        return 2
    if args.retag:
        print(retag(args.out, chosen))
        return 0
    if os.geteuid() != 0:
        print("fixtures: needs root (network namespaces, bpftrace); run with sudo", file=sys.stderr)
        return 2
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    entries = {e["name"]: e for e in manifest.get("fixtures", [])}
    with tempfile.TemporaryDirectory(prefix="tcpsim-fixtures-") as tmp:
        for fx in chosen:
            print(f"{fx.name}: {fx.duration_s:g} s x {args.repeat}", flush=True)
            entries[fx.name] = record(fx, args.out, max(1, args.repeat), Path(tmp))
    order = [f.name for f in FIXTURES]
    hz, hz_source = kernel_hz()
    manifest = {"kernel": platform.release(),
                "hz": hz, "hz_source": f"CONFIG_HZ read from {hz_source} at capture",
                "regenerate": "sudo python scripts/capture_fixtures.py",
                "fixtures": sorted(entries.values(), key=lambda e: order.index(e["name"])
                                   if e["name"] in order else len(order))}
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    print(manifest_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
