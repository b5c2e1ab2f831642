"""The controlled experiment's figures (docs/app-latency.md, "A controlled experiment"): the
seed reproducer as a plain scenario (linux-6.18, shrink 0, 120 s) under the dev-vm-duty50 and
dev-vm-spin presets, against the kernel's captures of the same condition.

    python scripts/controlled_figures.py                 # both tests, both conditions
    python scripts/controlled_figures.py --json
    python scripts/controlled_figures.py --kernel-from dev-vm-spin=DIR,DIR ...   # the kernel file

Two tests per condition:

* leave-one-out: for each capture of the preset, `--loo-seeds` runs (duty50 4, spin 3) whose
  blocks come from the preset's *other* captures (seeds 100*(i+1)+1.. for held-out capture i);
  the preset's shipped sequences with capture i dropped, nothing re-measured;
* all captures: the shipped preset itself, seeds 1..`--all-seeds`.

The kernel's outcomes (first zero window, sk_rmem_alloc at 120 s, TcpExtPruneCalled,
TcpExtTCPRcvCoalesce per capture) are in scripts/controlled_captures.json, taken by
`--kernel-from` from the captures' summary.json files (runs kept with `--keep-raw`; each
preset's document names its captures' runs in the same order). "p" is a two-sided
Mann-Whitney permutation test (5000 permutations, seeded), "P(k > m)" the share of
kernel-model pairs in which the kernel's value is larger (0.5 = no shift).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

import tcpsim.app_latency as AL  # noqa: E402

KERNEL = Path(__file__).resolve().with_name("controlled_captures.json")
CONDITIONS = {"dev-vm-duty50": 4, "dev-vm-spin": 3}   # preset: seeds per held-out capture
FIGS = ("fzw", "rmem", "prune", "coal")
NO_ZW = 1e9                # a run without a zero window ranks after every one with


def kernel_from(specs: list[str]) -> dict[str, list[dict[str, Any]]]:
    """{preset: [outcome per capture, in the preset's capture order]} from PRESET=DIR,DIR:
    the summary.json of each capture folder DIR/<name>/, matched to the preset's runs by
    '<DIR's name>/<name>'."""
    out: dict[str, list[dict[str, Any]]] = {}
    for spec in specs:
        host, _, dirs = spec.partition("=")
        found = {}
        for d in map(Path, dirs.split(",")):
            for s in sorted(d.glob("*/summary.json")):
                found[f"{d.name}/{s.parent.name}"] = json.loads(s.read_text())
        rows = []
        for cap in AL.load_blocks(host)["captures"]:
            d = found[cap["run"]]
            rows.append({"run": cap["run"], "stall": d["outcomes"]["stall"] == "stall",
                         "fzw": d["first_zero_window_s"], "rmem": d["sk_rmem_alloc_at_120s"],
                         "prune": d["counters"]["TcpExtPruneCalled"],
                         "coal": d["counters"]["TcpExtTCPRcvCoalesce"],
                         "loadavg": d.get("loadavg")})
        out[host] = rows
    return out


def _without(doc: dict[str, Any], held: int) -> dict[str, Any]:
    """A preset document without capture `held` (-1: all of it)."""
    keep = [j for j in range(len(doc["captures"])) if j != held]
    return {**doc, "captures": [doc["captures"][j] for j in keep],
            "sequences": {k: [v[j] for j in keep] for k, v in doc["sequences"].items()}}


def model_runs(host: str, held: int, seeds: range, engine: str) -> list[dict[str, Any]]:
    """The reproducer under `host`'s captures less capture `held`, one row per seed."""
    from tcpsim.runner import RunOptions
    from tcpsim.runs import run_seeds
    from tcpsim.scenario import apply_settings, read_scenario_file, scenario_from_dict, set_timing
    doc, source = read_scenario_file("seed-unbounded-growth")
    set_timing(doc, host)
    apply_settings(doc, ("profile=linux-6.18", "duration=120s"))
    doc.setdefault("sysctl", {})["net.ipv4.tcp_shrink_window"] = 0
    sc = scenario_from_dict(doc, source)
    shipped, loader = AL.load_blocks(host), AL.load_blocks
    restricted = _without(shipped, held)
    AL.load_blocks = lambda h=AL.DEFAULT_HOST: restricted if h == host else loader(h)  # type: ignore
    AL.load_sequences.cache_clear()
    try:
        def counters(_v: Any, run: Any, _end: int) -> dict[str, int]:
            return {"prune": run.counters.get("TcpExtPruneCalled", 0),
                    "coal": run.counters.get("TcpExtTCPRcvCoalesce", 0)}
        res = run_seeds(sc, RunOptions(seed=seeds[0], engine=engine), len(seeds), measure=counters)
    finally:
        AL.load_blocks = loader  # type: ignore
        AL.load_sequences.cache_clear()
    return [{"held": held, "seed": r.seed, "stall": r.outcomes["stall"],
             "fzw": r.figures["first_zero_window_s"], "rmem": r.figures["final_sk_rmem_alloc"],
             **r.measured} for r in res]


def mwu(a: list[float], b: list[float], n: int = 5000) -> tuple[float, float]:
    """P(a > b) over all pairs (ties half) and its two-sided permutation p."""
    def u(x: list[float], y: list[float]) -> float:
        return sum((xi > yi) + 0.5 * (xi == yi) for xi in x for yi in y)
    rng = random.Random(1)
    obs, mu, pool = u(a, b), len(a) * len(b) / 2, a + b
    hits = 0
    for _ in range(n):
        rng.shuffle(pool)
        hits += abs(u(pool[:len(a)], pool[len(a):]) - mu) >= abs(obs - mu) - 1e-9
    return obs / (len(a) * len(b)), hits / n


def _fmt(key: str) -> Callable[[float], str]:
    if key == "rmem":
        return lambda v: f"{v / 1e6:.2f}"
    if key == "fzw":
        return lambda v: "none" if v >= NO_ZW else f"{v:.2f}"
    return lambda v: str(int(v + 0.5))         # a median of two counts rounds half up


def compare(kernel: list[dict[str, Any]], model: list[dict[str, Any]]) -> dict[str, Any]:
    """Per figure: the kernel's values, the model's spread, how many model runs fall in the
    kernel's range (and below it), P(k > m) and p."""
    out: dict[str, Any] = {"kernel_n": len(kernel), "model_n": len(model),
                           "stall": [sum(k["stall"] for k in kernel), sum(m["stall"] for m in model)]}
    for key in FIGS:
        a = sorted(NO_ZW if k[key] is None else k[key] for k in kernel)
        b = sorted(NO_ZW if m[key] is None else m[key] for m in model)
        pk, p = mwu(a, b)
        out[key] = {"kernel": a, "kernel_median": statistics.median(a),
                    "min": b[0], "max": b[-1], "median": statistics.median(b),
                    "q1": b[len(b) // 4], "q3": b[3 * len(b) // 4],
                    "in_range": sum(a[0] <= x <= a[-1] for x in b),
                    "below": sum(x < a[0] for x in b), "above": sum(x > a[-1] for x in b),
                    "p_k_gt_m": round(pk, 2), "p": round(p, 3)}
    return out


def describe(c: dict[str, Any]) -> list[str]:
    lines = [f"  zero window + stall: kernel {c['stall'][0]}/{c['kernel_n']}, "
             f"model {c['stall'][1]}/{c['model_n']}"]
    for key in FIGS:
        f, fmt = c[key], _fmt(key)
        lines.append(f"  {key}: kernel {', '.join(map(fmt, f['kernel']))} (median "
                     f"{fmt(f['kernel_median'])}) | model {fmt(f['min'])}-{fmt(f['max'])}, median "
                     f"{fmt(f['median'])} ({fmt(f['q1'])}/{fmt(f['q3'])}); {f['in_range']} in the "
                     f"kernel's range, {f['below']} below, {f['above']} above; P(k > m) "
                     f"{f['p_k_gt_m']:.2f}, p = {f['p']:.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all-seeds", type=int, default=20)
    ap.add_argument("--loo-seeds", default="", help="seeds per held-out capture, e.g. 4,3 "
                    "(duty50, spin; default 4,3)")
    ap.add_argument("--engine", default="native")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--kernel-from", nargs="+", metavar="PRESET=DIR,DIR",
                    help=f"rewrite {KERNEL.name} from the captures' summary.json files")
    args = ap.parse_args(argv)
    if args.kernel_from:
        KERNEL.write_text(json.dumps(kernel_from(args.kernel_from), indent=1) + "\n")
        print(f"wrote {KERNEL}")
        return 0
    kernel = json.loads(KERNEL.read_text())
    loo = dict(zip(CONDITIONS, map(int, args.loo_seeds.split(",")))) if args.loo_seeds \
        else CONDITIONS
    report: dict[str, Any] = {}
    for host, k in loo.items():
        n = len(AL.load_blocks(host)["captures"])
        held_out = [row for i in range(n)
                    for row in model_runs(host, i, range(100 * (i + 1) + 1, 100 * (i + 1) + 1 + k),
                                          args.engine)]
        pooled = model_runs(host, -1, range(1, args.all_seeds + 1), args.engine)
        report[host] = {"leave_one_out": {**compare(kernel[host], held_out), "runs": held_out},
                        "all_captures": {**compare(kernel[host], pooled), "runs": pooled}}
        if not args.json:
            print(f"{host}, leave-one-out ({len(held_out)} runs):")
            print("\n".join(describe(report[host]["leave_one_out"])))
            print(f"{host}, all captures, seeds 1-{args.all_seeds}:")
            print("\n".join(describe(report[host]["all_captures"])))
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
