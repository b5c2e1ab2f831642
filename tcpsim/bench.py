"""Benchmarks (`tcpsim bench`): fixed scenarios with the full model and tracing on.

Runs both engines (native and python) in one invocation, or one with `engine`, and prints
their ratio per case: simulated seconds per wall second of the native engine over the
Python engine's. Without --quick the Python engine runs each case for its quick duration
(its full durations take many minutes) -- the ratio compares rates, and says so.

Prints, per case and engine, the median wall time of `repeat` runs (and their median CPU time: on a
shared machine, time.process_time() is the steadier figure), simulated packets per wall-second,
simulated seconds per wall-second, the tick-by-tick engine's time for the same case (ratio)
and the peak RSS of a child process running it; for the first engine, the same case as users
run it: whole `tcpsim run` processes with the default timing, trace written and not (wall,
CPU and peak RSS of that process); then (e), a 100-point `tcpsim sweep` grid with the
CLI's default timing, timed as a whole. Numbers, never pass/fail: the machine is
noisy, compare ratios measured in one invocation.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

from tcpsim.core.constants import NS_PER_S
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import load_scenario


@dataclass(frozen=True)
class Case:
    name: str
    experiment: str
    duration: str
    quick: str
    sysctl: tuple[tuple[str, Any], ...] = ()
    profile: str | None = None


CASES = (
    Case("a: 1 Gbit/s bulk, 20 ms RTT, fast reader", "bulk-1gbit", "10s", "1s"),
    Case("b: 1448 B every 1 ms, fast reader", "seed-unbounded-growth", "35min", "20s",
         profile="linux-6.18", sysctl=(("reader", "fast"),)),
    Case("c: 1 B/1 ms reader, mostly zero window", "seed-unbounded-growth", "35min", "60s",
         profile="linux-6.1.59", sysctl=(("net.ipv4.tcp_shrink_window", 1),)),
    Case("d: oscillating reader", "seed-oscillating-reader", "12min", "30s"),
)


# (e): a 100-point grid of the unbounded-growth reproducer, whole-sweep wall time
SWEEP_NAME = "e: 100-point grid (5 profiles x 4 read rates x 5 RTTs)"
SWEEP_EXPERIMENT = "seed-unbounded-growth"
SWEEP_AXES = ("profile=linux-5.15,linux-6.1,linux-6.6,linux-6.17,linux-6.18",
              "reader.bytes=1,100,1000,3000", "link.rtt=2ms,10ms,20ms,50ms,100ms")
SWEEP_DURATION, SWEEP_QUICK = "60s", "5s"


def _sweep_once(duration: str, engine: str) -> dict:
    """Run the grid in worker processes (one per CPU), trace off; wall and CPU of the whole."""
    from tcpsim.units import parse_duration
    from tcpsim.sweeps import build_points, parse_axis, run_sweep
    points = build_points(SWEEP_EXPERIMENT, [parse_axis(a) for a in SWEEP_AXES],
                          RunOptions(duration=parse_duration(duration, "duration"),
                                     engine=engine), timing=SWEEP_TIMING)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    cpu = time.process_time()
    run_sweep(points)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (time.process_time() - cpu + after.ru_utime - before.ru_utime
           + after.ru_stime - before.ru_stime)
    bad = [p.error for p in points if p.error]
    if bad:
        raise RuntimeError(f"sweep benchmark: {len(bad)} points failed: {bad[0]}")
    return {"wall": wall, "cpu": cpu, "points": len(points),
            "packets": sum(p.summary["packets"] for p in points),
            "sim_s": sum(p.summary["duration_s"] for p in points)}


# (f), (g): `tcpsim search` throughput -- the shipped rcvbuf-growth search (generic periodic
# workloads, linux-6.1, a reference run per workload), no minimising, on a local pool of one
# worker per CPU and on a 2-worker Dask LocalCluster; evaluations (workloads) per wall second.
SEARCH_NAME = "rcvbuf-growth"
SEARCH_BUDGET, SEARCH_QUICK = 96, 24


def search_benchmark(budget: int, executor: str = "local", jobs: int = 0) -> dict:
    """One search of `budget` workloads from scratch; wall time, evaluations and runs per s."""
    from tcpsim import searching
    spec = searching.with_overrides(searching.load_search(SEARCH_NAME), budget=budget)
    jobs = jobs or os.cpu_count() or 1
    t = time.perf_counter()
    result = searching.run(spec, None, jobs=jobs, executor=executor, minimise=False)
    wall = time.perf_counter() - t
    evals = len(result.evaluations)
    return {"case": f"{'f' if executor == 'local' else 'g'}: search {SEARCH_NAME}, {executor} "
                    f"({jobs} workers)",
            "engine": "native", "duration": f"{evals} x {spec.duration / 1e9:g}s",
            "wall_s": round(wall, 3), "evaluations": evals, "runs": result.runs,
            "evaluations_per_s": round(evals / wall, 1), "runs_per_s": round(result.runs / wall, 1),
            "workers": jobs, "executor": executor}


# The cases (a)-(d) run on exact application timing: they measure the model's cost on the
# workloads the speed targets were set on (time skipping between exact ticks), comparable
# over time; the default timing's cost is measured apart (docs/performance.md).
TIMING = "exact"
# (e) runs the grid as `tcpsim sweep` runs it: the scenario's own timing, else the default
# host preset (what users get; exact timing made it 3x cheaper than what they run).
SWEEP_TIMING = None


def _scenario(case: Case):
    sc = load_scenario(case.experiment, timing=TIMING)
    sysctl = {k: v for k, v in case.sysctl if k != "reader"}
    if dict(case.sysctl).get("reader") == "fast":
        sc = sc.with_(reader=sc.reader.__class__("fast", bytes=1 << 20))
    return sc, sysctl


def _once(case: Case, duration: str, skip: bool, trace: str | None,
          engine: str | None = None) -> dict:
    from tcpsim.units import parse_duration
    sc, sysctl = _scenario(case)
    t = time.perf_counter()
    cpu = time.process_time()
    result, _ = run(sc, RunOptions(profile=case.profile, sysctl=sysctl,
                                   duration=parse_duration(duration, "duration"), skip=skip,
                                   trace=trace, engine=engine))
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - t
    return {"wall": wall, "cpu": cpu, "packets": result.summary["packets"],
            "sim_s": result.summary["duration_s"], "events": result.summary["events"]}


def _child_rss(case_index: int, duration: str, engine: str) -> int:
    """Peak RSS (kB) of a fresh process running one case with the full trace written: its
    own VmHWM, the high-water mark of the program's memory. (Its ru_maxrss would include
    the bench process's RSS at the fork, which Linux keeps across exec: the column read
    ~190 MB where the same run as a whole process peaks at 85-125 MiB.)"""
    code = ("import sys,tempfile;from tcpsim.bench import CASES,_once;"
            f"c=CASES[{case_index}];d=tempfile.mkdtemp();"
            f"_once(c,{duration!r},True,d+'/t.parquet',{engine!r});"
            "print(next(l.split()[1] for l in open('/proc/self/status') "
            "if l.startswith('VmHWM:')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def _toml(doc: dict[str, Any], head: str = "") -> str:
    """A scenario document as TOML (scalars, lists of scalars and tables: what scenario
    files hold; JSON's string and number forms are TOML's)."""
    def key(k: str) -> str:
        return k if k.replace("_", "").replace("-", "").isalnum() else json.dumps(k)

    def val(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return json.dumps(v)

    lines = [f"{key(k)} = {val(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            name = f"{head}.{key(k)}" if head else key(k)
            lines += ["", f"[{name}]", _toml(v, name)]
    return "\n".join(lines)


def user_scenario(case: Case, folder: str) -> str:
    """The case as a scenario file a user would run: the experiment with the case's profile,
    sysctls and reader, and no [timing] of its own -- the CLI's default timing."""
    from tcpsim.scenario import read_scenario_file
    doc, _ = read_scenario_file(case.experiment)
    doc.pop("timing", None)
    if case.profile:
        doc["profile"] = case.profile
    doc.setdefault("sysctl", {}).update({k: v for k, v in case.sysctl if k != "reader"})
    if dict(case.sysctl).get("reader") == "fast":
        doc["reader"] = {"kind": "fast", "bytes": 1 << 20}
    path = os.path.join(folder, f"{doc.get('name', 'case')}-{CASES.index(case)}.toml")
    with open(path, "w") as f:
        f.write(_toml(doc) + "\n")
    return path


def user_process(case: Case, duration: str, engine: str, trace: str | None,
                 folder: str) -> dict:
    """One whole `tcpsim run` process of the case as a user runs it (default timing, the
    trace written or not): wall, CPU (user + sys) and peak RSS of that process (wait4)."""
    args = [sys.executable, "-m", "tcpsim.cli", "run", user_scenario(case, folder),
            "-d", duration, "--engine", engine, "--json"]
    if trace:
        args += ["--trace", trace]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)       # this process's own rusage
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, problem = out.read(), err.read().decode(errors="replace")
    if proc.returncode:
        raise RuntimeError(f"bench: {' '.join(args[2:])}: {problem.strip()[-300:]}")
    summary = json.loads(text).get("summary", {})
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024,
            "packets": summary.get("packets", 0), "peak_sk_rcvbuf": summary.get("peak_sk_rcvbuf")}


def bench_engines(engine: str | None) -> tuple[str, ...]:
    """The engines to run: `engine` alone, else both (native first) where native is built."""
    from tcpsim.engines import check_engine, native_available
    if engine is not None:
        return (check_engine(engine),)
    return ("native", "python") if native_available() else ("python",)


def run_benchmarks(quick: bool = False, repeat: int = 1,
                   echo: Callable[[str], None] | None = print,
                   engine: str | None = None) -> list[dict]:
    """Run every case on each engine; returns one row per case and engine (and prints them,
    with the engines' ratio, when echo is given)."""
    rows = []
    engines = bench_engines(engine)
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(CASES):
            rates = {}
            for eng in engines:
                duration = case.quick if quick or (eng == "python" and len(engines) > 1) \
                    else case.duration
                row = _case_row(i, case, duration, repeat, eng, os.path.join(tmp, "t.parquet"))
                if eng == engines[0]:
                    row.update(_user_path(case, duration, repeat, eng, tmp))
                rows.append(row)
                rates[eng] = row["sim_s"] / row["wall_s"] if row["wall_s"] else 0.0
                if echo:
                    echo(f"{row['case']:<44} {eng:<6} {duration:>6}  wall {row['wall_s']:8.2f} s  "
                         f"CPU {row['cpu_s']:8.2f} s  "
                         f"{row['packets_per_s']:>9,} pkt/s  {row['sim_s_per_wall_s']:>8} sim-s/s  "
                         f"tick/skip {row['tick_over_skip']}  RSS {row['peak_rss_mb']} MB")
                    for kind in ("trace", "no_trace") if eng == engines[0] else ():
                        u = row[f"user_{kind}"]
                        echo(f"{'':<44} {eng:<6} {duration:>6}  as `tcpsim run`, default timing, "
                             f"{kind.replace('_', ' ')}: wall {u['wall_s']:.2f} s "
                             f"[{u['wall_min_s']:.2f}-{u['wall_max_s']:.2f}]  CPU {u['cpu_s']:.2f} s  "
                             f"RSS {u['peak_rss_mb']} MiB")
            if len(rates) == 2 and rates["python"]:
                ratio = round(rates["native"] / rates["python"], 1)
                rows[-2]["native_over_python"] = ratio
                if echo:
                    echo(f"{'':<44} native/python: {ratio}x (simulated seconds per wall second)")
    duration = SWEEP_QUICK if quick else SWEEP_DURATION
    runs = [_sweep_once(duration, engines[0]) for _ in range(max(1, repeat))]
    wall = statistics.median(r["wall"] for r in runs)
    row = {"case": SWEEP_NAME, "engine": engines[0], "duration": f"{runs[0]['points']} x {duration}",
           "wall_s": round(wall, 3), "cpu_s": round(statistics.median(r["cpu"] for r in runs), 3),
           "packets": runs[0]["packets"], "packets_per_s": round(runs[0]["packets"] / wall),
           "sim_s_per_wall_s": round(runs[0]["sim_s"] / wall, 1), "workers": os.cpu_count()}
    rows.append(row)
    if echo:
        echo(f"{row['case']:<44} {row['duration']:>6}  wall {row['wall_s']:8.2f} s  "
             f"CPU {row['cpu_s']:8.2f} s  {row['packets_per_s']:>9,} pkt/s  "
             f"{row['sim_s_per_wall_s']:>8} sim-s/s  ({row['workers']} workers, whole sweep)")
    rows += search_rows(quick, echo)
    return rows


def search_rows(quick: bool, echo: Callable[[str], None] | None = print) -> list[dict]:
    """(f) the search on a local pool and (g) on a 2-worker Dask cluster (when Dask and
    Optuna are installed; else the row says why it is missing)."""
    rows = []
    budget = SEARCH_QUICK if quick else SEARCH_BUDGET
    for executor, jobs in (("local", 0), ("dask", 2)):
        try:
            row = search_benchmark(budget, executor, jobs)
        except Exception as exc:  # noqa: BLE001 -- a missing optional dependency: say so, go on
            row = {"case": f"search on {executor}", "skipped": f"{type(exc).__name__}: {exc}"}
            if echo:
                echo(f"{row['case']:<44} skipped: {row['skipped']}")
            rows.append(row)
            continue
        rows.append(row)
        if echo:
            echo(f"{row['case']:<44} {row['duration']:>6}  wall {row['wall_s']:8.2f} s  "
                 f"{row['evaluations_per_s']:>7} evaluations/s  {row['runs_per_s']:>7} runs/s")
    return rows


def _user_path(case: Case, duration: str, repeat: int, engine: str, tmp: str) -> dict:
    """The case as users run it, whole `tcpsim run` processes with the default timing,
    trace written and not: median wall [min-max], median CPU, peak RSS of the process."""
    out = {}
    for kind, trace in (("trace", os.path.join(tmp, "user.parquet")), ("no_trace", None)):
        runs = [user_process(case, duration, engine, trace, tmp) for _ in range(max(1, repeat))]
        walls = [r["wall"] for r in runs]
        out[f"user_{kind}"] = {
            "wall_s": round(statistics.median(walls), 3), "wall_min_s": round(min(walls), 3),
            "wall_max_s": round(max(walls), 3),
            "cpu_s": round(statistics.median(r["cpu"] for r in runs), 3),
            "peak_rss_mb": round(max(r["rss_mb"] for r in runs), 1)}
    return out


def _case_row(i: int, case: Case, duration: str, repeat: int, engine: str, trace: str) -> dict:
    """One case on one engine: the median of `repeat` traced runs, tick/skip, peak RSS."""
    runs = [_once(case, duration, True, trace, engine) for _ in range(max(1, repeat))]
    wall = statistics.median(r["wall"] for r in runs)
    cpu = statistics.median(r["cpu"] for r in runs)
    tick = _once(case, case.quick, False, None, engine)
    fast = _once(case, case.quick, True, None, engine)
    return {
        "case": case.name, "engine": engine, "duration": duration, "sim_s": runs[0]["sim_s"],
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "packets": runs[0]["packets"],
        "packets_per_s": round(runs[0]["packets"] / wall),
        "sim_s_per_wall_s": round(runs[0]["sim_s"] / wall, 1),
        "tick_over_skip": round(tick["wall"] / fast["wall"], 2) if fast["wall"] else None,
        "peak_rss_mb": round(_child_rss(i, duration, engine) / 1024, 1),
    }


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    print(json.dumps(run_benchmarks(quick=quick), indent=2))
