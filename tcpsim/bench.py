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
CLI's default timing, timed as a whole; beside each case the load average before and
after it. Numbers, never pass/fail: the machine is noisy, compare ratios measured in one
invocation -- `--against DIR` runs the user-path cases in this checkout and another one
alternating run by run (`against`), the way to measure a change on a shared machine.

ns-3 beside tcpsim on the same cases: `--ns3` (tcpsim/bench_ns3.py), when an ns-3 build
is present.
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
# (h): an objective read from the run's trace (sender-stalls: time_stalled, each run keeps
# an in-memory trace on its worker), on the local pool: what reading the trace costs.
SEARCH_NAME = "rcvbuf-growth"
TRACE_SEARCH_NAME = "sender-stalls"
SEARCH_BUDGET, SEARCH_QUICK = 96, 24
_SEARCH_CASES = (("f", SEARCH_NAME, "local", 0), ("g", SEARCH_NAME, "dask", 2),
                 ("h", TRACE_SEARCH_NAME, "local", 0))


def search_benchmark(budget: int, executor: str = "local", jobs: int = 0,
                     name: str = SEARCH_NAME, letter: str = "f") -> dict:
    """One search of `budget` workloads from scratch; wall time, evaluations and runs per s."""
    from tcpsim import searching
    spec = searching.with_overrides(searching.load_search(name), budget=budget)
    jobs = jobs or os.cpu_count() or 1
    t = time.perf_counter()
    result = searching.run(spec, None, jobs=jobs, executor=executor, minimise=False)
    wall = time.perf_counter() - t
    evals = len(result.evaluations)
    return {"case": f"{letter}: search {name}, {executor} ({jobs} workers)",
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
                 folder: str, tree: str | None = None) -> dict:
    """One whole `tcpsim run` process of the case as a user runs it (default timing, the
    trace written or not): wall, CPU (user + sys) and peak RSS of that process (wait4).
    `tree`: the root of another tcpsim checkout to run instead of this one (`--against`)."""
    args = [sys.executable, "-m", "tcpsim.cli", "run", user_scenario(case, folder),
            "-d", duration, "--engine", engine, "--json"]
    if trace:
        args += ["--trace", trace]
    text, m = measure_process(args, tree)
    summary = json.loads(text).get("summary", {})
    return {**m, "packets": summary.get("packets", 0),
            "peak_sk_rcvbuf": summary.get("peak_sk_rcvbuf")}


# A process's ru_maxrss counts its parent's RSS at the fork (Linux keeps the old memory's
# high-water mark across exec): measured from a bench process that had read a 1 GB capture,
# every later child "peaked" at 1.2 GB. A bare launcher (python -I -S, ~9 MB) forks the
# command instead, so a command's figure is its own peak, or the launcher's size if smaller;
# it reports the command's exit status, wall time (fork to exit) and rusage.
_LAUNCHER = """
import json, os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t
with open(sys.argv[1], "w") as f:
    json.dump({"status": os.waitstatus_to_exitcode(status), "wall": wall,
               "cpu": ru.ru_utime + ru.ru_stime, "rss_kb": ru.ru_maxrss}, f)
"""


def measure_process(args: list[str], tree: str | None = None) -> tuple[bytes, dict]:
    """Run one process to its end (`tree`: with another tcpsim checkout's code, from its
    root): (its stdout, {wall, cpu (user + sys), rss_mb}) of that process alone (wait4, in
    the launcher above); a RuntimeError with its exit status and the end of its stderr when
    it fails."""
    env = None
    if tree is not None:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(tree)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".json") as rec:
        subprocess.run([sys.executable, "-I", "-S", "-c", _LAUNCHER, rec.name, *args],
                       stdout=out, stderr=err, cwd=tree, env=env, check=True)
        got = json.loads(rec.read())
        out.seek(0)
        err.seek(0)
        text, problem = out.read(), err.read().decode(errors="replace")
    if got["status"]:
        raise RuntimeError(f"bench: {' '.join(args[2:])}: exit status {got['status']}"
                           f"{': ' + problem.strip()[-300:] if problem.strip() else ''}")
    return text, {"wall": got["wall"], "cpu": got["cpu"], "rss_mb": got["rss_kb"] / 1024}


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
                load0 = os.getloadavg()[0]
                row = _case_row(i, case, duration, repeat, eng, os.path.join(tmp, "t.parquet"))
                if eng == engines[0]:
                    row.update(_user_path(case, duration, repeat, eng, tmp))
                row["load"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
                rows.append(row)
                rates[eng] = row["sim_s"] / row["wall_s"] if row["wall_s"] else 0.0
                if echo:
                    echo(f"{row['case']:<44} {eng:<6} {duration:>6}  wall {row['wall_s']:8.2f} s  "
                         f"CPU {row['cpu_s']:8.2f} s  "
                         f"{row['packets_per_s']:>9,} pkt/s  {row['sim_s_per_wall_s']:>8} sim-s/s  "
                         f"tick/skip {row['tick_over_skip']}  RSS {row['peak_rss_mb']} MB  "
                         f"load {row['load'][0]}->{row['load'][1]}")
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
    if engines[0] == "native":          # a fit replays its candidates on the native engine
        rows += pcap_rows(quick, echo)
    return rows


def pcap_rows(quick: bool, echo: Callable[[str], None] | None = print) -> list[dict]:
    """(i): import plus a fitted replay of a 5-second 1 Gbit/s capture (tcpsim.bench_pcap)."""
    from tcpsim.bench_pcap import pcap_benchmark
    return pcap_benchmark(seconds=1.0 if quick else 5.0, echo=echo)


def search_rows(quick: bool, echo: Callable[[str], None] | None = print) -> list[dict]:
    """(f) the search on a local pool and (g) on a 2-worker Dask cluster (when Dask and
    Optuna are installed; else the row says why it is missing); (h) a search whose objective
    reads each run's trace, on the local pool."""
    rows = []
    budget = SEARCH_QUICK if quick else SEARCH_BUDGET
    for letter, name, executor, jobs in _SEARCH_CASES:
        try:
            row = search_benchmark(budget, executor, jobs, name, letter)
        except Exception as exc:  # noqa: BLE001 -- a missing optional dependency: say so, go on
            row = {"case": f"{letter}: search {name} on {executor}",
                   "skipped": f"{type(exc).__name__}: {exc}"}
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


def _spread(values: list[float], digits: int = 3) -> dict[str, float]:
    """Median, min and max of `values`."""
    return {"median": round(statistics.median(values), digits),
            "min": round(min(values), digits), "max": round(max(values), digits)}


def against(tree: str, repeat: int = 3, quick: bool = False, engine: str = "native",
            cases: str = "abcd", echo: Callable[[str], None] | None = print) -> list[dict]:
    """The user-path cases as whole `tcpsim run` processes (default timing, trace written
    and not), this checkout and `tree` (another tcpsim checkout: the base of a change)
    alternating run by run, so both see the same machine load. Per case and side: wall and
    CPU (user + sys) median [min-max], peak RSS, CPU and wall per simulated packet, the
    trace file's size; per case, this checkout's CPU over the other's (medians). The load
    average before and after each case is printed beside it: on a shared machine, read CPU
    and the ratios, not wall."""
    import glob
    if not glob.glob(os.path.join(tree, "tcpsim", "cli.py")):
        raise ValueError(f"--against {tree}: not a tcpsim checkout (no tcpsim/cli.py)")
    sides = (("base", os.path.abspath(tree)), ("this", None))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if case.name[0] not in cases:
                continue
            duration = case.quick if quick else case.duration
            for kind in ("trace", "no_trace"):
                load0 = os.getloadavg()[0]
                runs: dict[str, list[dict]] = {name: [] for name, _ in sides}
                size: dict[str, int] = {}
                for _ in range(max(1, repeat)):
                    for name, root in sides:
                        path = os.path.join(tmp, f"{name}.parquet") if kind == "trace" else None
                        try:
                            got = user_process(case, duration, engine, path, tmp, root)
                        except RuntimeError:      # killed by the shared machine: once more
                            got = user_process(case, duration, engine, path, tmp, root)
                        runs[name].append(got)
                        if path:
                            size[name] = os.path.getsize(path)
                load1 = os.getloadavg()[0]
                row: dict[str, Any] = {"case": case.name, "duration": duration, "kind": kind,
                                       "load": [round(load0, 2), round(load1, 2)]}
                for name, _ in sides:
                    rs = runs[name]
                    pk = rs[0]["packets"] or 1
                    row[name] = {"wall_s": _spread([r["wall"] for r in rs]),
                                 "cpu_s": _spread([r["cpu"] for r in rs]),
                                 "peak_rss_mb": round(max(r["rss_mb"] for r in rs), 1),
                                 "packets": rs[0]["packets"],
                                 "cpu_us_per_packet": round(
                                     statistics.median(r["cpu"] for r in rs) / pk * 1e6, 3),
                                 "wall_us_per_packet": round(
                                     statistics.median(r["wall"] for r in rs) / pk * 1e6, 3)}
                    if name in size:
                        row[name]["trace_mb"] = round(size[name] / 1e6, 1)
                base_cpu = row["base"]["cpu_s"]["median"]
                row["cpu_this_over_base"] = round(row["this"]["cpu_s"]["median"] / base_cpu, 3) \
                    if base_cpu else None
                rows.append(row)
                if echo:
                    echo(f"{case.name:<44} {duration:>6} {kind:<8} load {load0:.1f}->{load1:.1f}  "
                         f"CPU this/base {row['cpu_this_over_base']}")
                    for name, _ in sides:
                        r = row[name]
                        w, c = r["wall_s"], r["cpu_s"]
                        echo(f"{'':<10}{name:<5} wall {w['median']:.2f} s [{w['min']:.2f}-{w['max']:.2f}]"
                             f"  CPU {c['median']:.2f} s [{c['min']:.2f}-{c['max']:.2f}]"
                             f"  RSS {r['peak_rss_mb']} MiB  {r['cpu_us_per_packet']} us CPU/packet"
                             f"  {r['wall_us_per_packet']} us wall/packet"
                             + (f"  trace {r['trace_mb']} MB" if "trace_mb" in r else ""))
    return rows
