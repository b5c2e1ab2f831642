"""Issue 14's done-means figures: each new fixture's captures beside today's model run as a
plain scenario (the capture's scenario and sysctls, the model's own app clock; no replay).

    python scripts/issue14_figures.py [--json]

Per fixture, from tests/fixtures/kernel/manifest.json (every capture's run summary) and one
model run of the fixture's scenario: zero window (first at), stall, sk_rmem_alloc at the end
(120 s for the reproducer), sender retransmissions, beyond-window drops, TCPRcvCoalesce.
The model has no wakeup latency yet (every seed gives the same run), so one run is shown.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

from tcpsim.runner import RunOptions, run  # noqa: E402
from tcpsim.scenario import scenario_from_dict  # noqa: E402
from tcpsim.trace.recorder import read_trace  # noqa: E402
from tcpsim.validate.trace import view  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kernel"
NEW = ("seed-unbounded-growth-shrink0-120s", "seed-unbounded-growth-shrink1-120s",
       "bulk-200mbit-tbf-cubic", "bulk-200mbit-tbf-bdp-cubic", "bulk-200mbit-tbf-cubic-rxcpu",
       "bulk-200mbit-tbf-bdp-cubic-rxcpu", "bulk-blocking-reader")
# the captured receiver sysctls a plain run takes over (read back in the receiver namespace)
TAKEN = ("net.ipv4.tcp_rmem", "net.core.rmem_max", "net.ipv4.tcp_shrink_window",
         "net.ipv4.tcp_adv_win_scale")


def model_run(path: Path) -> dict[str, Any]:
    """Today's model on the fixture's scenario, as a plain run."""
    _, meta = read_trace(path)
    raw = dict(meta["scenario"])
    sysctl = dict(raw.get("sysctl") or {})
    for k in TAKEN:
        v = (meta.get("sysctls") or {}).get(k)
        if v:
            sysctl[k] = [int(x) for x in v.split()] if " " in v else int(v)
    raw["sysctl"] = sysctl
    qdisc = (meta.get("summary") or {}).get("link_qdisc") or {}
    if qdisc.get("kind") == "tbf":          # the captured token bucket, not a FIFO
        link = {k: v for k, v in raw["link"].items() if k != "queue_limit"}
        raw["link"] = {**link, "kind": "tbf", "burst": qdisc["burst"], "limit": qdisc["limit"]}
    if raw.get("reader", {}).get("kind") == "fast":   # no application timing, whatever the default
        raw["reader"] = {**raw["reader"], "latency": "none"}
    sc = scenario_from_dict(raw)
    result, mem = run(sc, RunOptions(profile="linux-6.18", memory_trace=True))
    cols, tmeta = mem.columns(), result.metadata()
    v = view(cols, tmeta)
    acks = v.acks
    zero = next((a.t_ns for a in acks if a.win == 0), None)
    s, c = result.summary, result.counters
    end = sc.duration
    return {"first_zero_window_s": None if zero is None else round(zero / 1e9, 3),
            "zero_window_acks": sum(1 for a in acks if a.win == 0),
            "sk_rmem_alloc_at_end": v.state["sk_rmem_alloc"].at(end),
            "sk_rcvbuf_at_end": v.state["sk_rcvbuf"].at(end),
            "retransmissions": s.get("retransmits"),
            "TcpExtBeyondWindow": c.get("TcpExtBeyondWindow", 0),
            "TcpExtTCPRcvCoalesce": c.get("TcpExtTCPRcvCoalesce", 0)}


def kernel_runs(name: str) -> list[dict[str, Any]]:
    manifest = json.loads((FIXTURES / "manifest.json").read_text())
    entry = next(e for e in manifest["fixtures"] if e["name"] == name)
    return [{"first_zero_window_s": r.get("first_zero_window_s"),
             "stall_at_s": r.get("stall_at_s"),
             "sk_rmem_alloc_at_end": r.get("sk_rmem_alloc_at_120s"),
             "retransmissions": r.get("sender_retrans_segs"),
             "TcpExtBeyondWindow": r["counters"].get("TcpExtBeyondWindow"),
             "TcpExtTCPRcvCoalesce": r["counters"].get("TcpExtTCPRcvCoalesce")}
            for r in entry["run_summaries"]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args(argv)
    out = {}
    for name in NEW:
        if args.only and name not in args.only.split(","):
            continue
        out[name] = {"kernel": kernel_runs(name), "model": model_run(FIXTURES / f"{name}.parquet")}
        if not args.json:
            print(name)
            for i, k in enumerate(out[name]["kernel"]):
                print(f"  capture {i + 1}: {k}")
            print(f"  model    : {out[name]['model']}", flush=True)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
