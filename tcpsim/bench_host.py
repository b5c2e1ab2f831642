"""The host benchmark (`tcpsim bench --hosts`, benchmarks/host_scale.py): a host of the seed's
mix -- 5 % reproducer sessions (seed-unbounded-growth) among request/response sessions with
churn (experiments/host-seed-mix.toml's classes) -- of 1 000 and 10 000 connections for
60 simulated seconds on the native engine, each case in a child process: wall time of
building the population (Python), of building the engine, of the run and of its results as
`tcpsim run` makes them (tcpsim/host/run.py `native_result`) -- `total_s`, what a user waits
for but the interpreter's start and exit --, the child's whole life as its parent saw it
(`process_s`: start-up, imports, the case, the results' digest and the exit that frees the
host), CPU seconds, events, and the child's peak RSS. Beside them, single-connection cases of `tcpsim bench` for the same
build (no regression). Numbers, never pass/fail: the machine is shared and noisy.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

# the goals of issue 27 (wall seconds, RSS bytes), printed beside the figures
GOALS = {1000: (10.0, None), 10000: (60.0, 4 << 30)}


def host_text(n: int, duration: str = "60s", tcp_mem_pages: int = 0) -> str:
    """The seed mix as a host file of `n` connections (5 % bad). `tcp_mem_pages`: the
    pressure threshold (default: ~40 pages per connection, so the bad ones tip it)."""
    bad = max(1, n // 20)
    p = tcp_mem_pages or max(300, 40 * n)
    return f"""
name = "bench-seed-mix-{n}"
profile = "linux-6.1"
duration = "{duration}"
seed = 1
cpus = 2
connections = {n}
[sysctl]
"net.ipv4.tcp_mem" = [{p * 3 // 4}, {p}, {p * 5 // 4}]
[class.bad]
base = "seed-unbounded-growth"
count = {bad}
start = {{uniform = ["0s", "2s"]}}
[class.bad.set]
"link.rtt" = {{uniform = ["10ms", "40ms"]}}
[class.good]
base = "request-response"
count = {n - bad}
start = {{uniform = ["0s", "1s"]}}
lifetime = {{exponential = "10s"}}
[class.good.set]
"link.rtt" = {{loguniform = ["2ms", "80ms"]}}
"writer.every" = {{choice = ["20ms", "50ms", "100ms"]}}
"""


def child(n: int, duration: str, engine: str, threads: int = 1,
          mode: str = "threads") -> dict[str, Any]:
    """One case, in this process: the timings, events and peak RSS. `threads` >= 2: the
    host in CPU order on that many threads (src/engine/parallel.rs); `digest` identifies
    the run's numbers (the same for any `threads` whenever CPU order and host order agree,
    as they do on this mix). `mode` "probe": the threads' windows run one after the other,
    timed (`balance`: their total and critical-path seconds)."""
    import dataclasses
    import hashlib
    from tcpsim.catalog import get_profile
    from tcpsim.host.outputs import host_result
    from tcpsim.host.populations import expand
    from tcpsim.host.scenario import read_host_text
    t0 = time.perf_counter()
    cpu00 = time.process_time()
    text = host_text(n, duration)
    if "tcp_mem" not in get_profile("linux-6.1").known_sysctls():     # a model without a pool
        text = "\n".join(ln for ln in text.splitlines() if "tcp_mem" not in ln and "[sysctl]" != ln)
    host = read_host_text(text)
    plan = dataclasses.replace(expand(host), threads=threads, run_mode=mode)
    t1 = time.perf_counter()
    load = os.getloadavg()[0]
    windows = balance = None
    profile = get_profile(host.profile)
    cpu0 = time.process_time()
    if engine == "native":
        from tcpsim.engine.native import NativeSimulation
        from tcpsim.host.run import native_result
        sim: Any = NativeSimulation.of_host(plan, profile)
        t2 = time.perf_counter()
        sim.run_loop()
        t3 = time.perf_counter()
        r = native_result(host, plan, profile, sim)     # what tcpsim run makes of it
        t4 = time.perf_counter()
        cpu = time.process_time()
        events = r.events
        windows = sim.sim.host_windows
        balance = sim.sim.host_balance
        # the run's numbers, all of them (not timed: no user waits for this)
        st = sim.host_stats()
        digest = hashlib.sha256(json.dumps(st, sort_keys=True).encode()).hexdigest()[:12]
    else:
        from tcpsim.engine.simulation import Simulation
        sim = Simulation.of_host(plan, profile)
        t2 = time.perf_counter()
        sim.run_loop()
        t3 = time.perf_counter()
        r = host_result(plan, profile.name, sim.samples, [c.record() for c in sim.conns],
                        sim.pool, sim.steps, t3 - t2, host.as_dict(), sim.memcg)
        t4 = time.perf_counter()
        cpu = time.process_time()
        events = sim.steps
        digest = ""
    return {"connections": n, "flows": len(plan.flows), "duration": duration, "engine": engine,
            "threads": threads, "mode": mode, "windows": windows, "digest": digest,
            "balance_s": [round(x / 1e9, 3) for x in balance] if balance else None,
            "load": [round(load, 2), round(os.getloadavg()[0], 2)],
            "population_s": round(t1 - t0, 3), "build_s": round(t2 - t1, 3),
            "run_s": round(t3 - t2, 3), "results_s": round(t4 - t3, 3),
            "total_s": round(t4 - t0, 3), "events": events,
            "build_run_cpu_s": round(cpu - cpu0, 3), "cpu_s": round(cpu - cpu00, 3),
            "us_per_event": round((t3 - t2) / max(1, events) * 1e6, 3),
            "peak_sockstat_mem": r.pressure["peak_sockstat_mem"],
            "onset_s": r.pressure["onset_s"],
            "rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def run_case(n: int, duration: str = "60s", engine: str = "native",
             tree: str | None = None, threads: int = 1,
             mode: str = "threads") -> dict[str, Any]:
    """One case in a child process (its own peak RSS); `tree`: the source tree (a checkout
    with its native engine built) whose tcpsim runs it, default this one."""
    env = None
    if tree is not None:
        env = {**os.environ, "PYTHONPATH": tree}
    args = [str(n), duration, engine] + ([str(threads), mode] if threads != 1 else [])
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "tcpsim.bench_host", *args],
                         capture_output=True, text=True, check=True, cwd=tree, env=env)
    process = time.perf_counter() - t0
    row = dict(json.loads(out.stdout.strip().splitlines()[-1]))
    # the child's whole life: start-up and imports, the case, the results' digest (not a
    # user's wait) and its exit (freeing the host)
    row["process_s"] = round(process, 3)
    if tree is not None:
        row["tree"] = tree
    return row


def format_case(row: dict[str, Any]) -> str:
    goal = GOALS.get(row["connections"])
    g = ""
    tree = f" [{row['tree']}]" if "tree" in row else ""
    threads = row.get("threads", 1)
    if threads > 1:
        tw, ow, restarts = row.get("windows") or (0, 0, 0)
        how = "probed on one thread" if row.get("mode") == "probe" else f"on {threads} threads"
        tree += (f" {how} (CPU order: {tw} windows threaded, {ow} in order, "
                 f"{restarts} restarts)")
        if row.get("balance_s"):
            busy, critical = row["balance_s"]
            tree += (f" [threads' windows {busy:.2f} s one after the other, slowest "
                     f"thread's {critical:.2f} s: {busy / max(1e-9, critical):.2f}x on free cores]")
    if goal is not None:
        wall, rss = goal
        g = f"   goal <= {wall:g} s" + (f", RSS <= {rss >> 30} GB" if rss else "")
    # a tree before results_s timed its run with the flows' records and the digest in it
    res = row.get("results_s")
    results = (f", results {res:.2f} s" if res is not None
               else "; the run with host_stats and the digest")
    cpu = f", all CPU {row['cpu_s']:.2f} s" if "cpu_s" in row else ""
    process = f"; process {row['process_s']:.2f} s" if "process_s" in row else ""
    return (f"  {row['connections']:>6} connections ({row['flows']} with churn), "
            f"{row['duration']} on {row['engine']}{tree}: run {row['run_s']:.2f} s "
            f"(+ population {row['population_s']:.2f} s, build {row['build_s']:.2f} s"
            f"{results}; total {row['total_s']:.2f} s{process}; build + run"
            f"{' + results' if res is not None else ''} CPU {row['build_run_cpu_s']:.2f} s"
            f"{cpu}), "
            f"{row['events']} events, {row['us_per_event']} us/event, "
            f"peak RSS {row['rss_bytes'] / 2**20:.0f} MiB, load "
            f"{'-'.join(str(x) for x in row.get('load') or ())}, "
            f"results {row.get('digest') or '-'}{g}")


def host_benchmarks(quick: bool = False, echo: Any = print,
                    sizes: tuple[int, ...] | None = None, against: str | None = None,
                    single: bool = True, threads: tuple[int, ...] = (1,),
                    probe: bool = False) -> dict[str, Any]:
    """`tcpsim bench --hosts`: the host cases (1 000 and 10 000 connections, 60 s; --quick:
    200 and 1 000 for 10 s), then the single-connection cases of `tcpsim bench` on the
    native engine (--quick durations), measured in one invocation. `against`: another
    source tree (e.g. a checkout of the commit before a change, its native engine built)
    runs each host case, on each number of threads, just before this one, and the CPU ratio
    is printed: the two measured side by side on a shared machine. `threads`: each case once per value, back
    to back (2: CPU order on two threads), with the wall and CPU ratio to the first; `probe`:
    then CPU order on 2 threads probed (each window's threads timed one after the other: what
    threads gain on free cores, whatever the load)."""
    from tcpsim.bench import run_benchmarks
    duration = "10s" if quick else "60s"
    sizes = sizes or ((200, 1000) if quick else (1000, 10000))
    if echo:
        echo(f"hosts of the seed mix (5 % reproducer sessions among request/response sessions "
             f"with churn), {duration} simulated, native engine, each in a child process:")
    hosts = []
    for n in sizes:
        first = None
        for th in threads:
            base = None
            if against is not None:
                base = run_case(n, duration, "native", tree=against, threads=th)
                hosts.append(base)
                if echo:
                    echo(format_case(base))
            row = run_case(n, duration, "native", threads=th)
            hosts.append(row)
            if echo:
                echo(format_case(row))
                if base is not None:
                    echo(f"         this tree / {against}, both on {th} thread"
                         f"{'s' if th > 1 else ''}: CPU "
                         f"{row['build_run_cpu_s'] / max(1e-9, base['build_run_cpu_s']):.2f}x, "
                         f"wall {row['total_s'] / max(1e-9, base['total_s']):.2f}x, "
                         f"process wall "
                         f"{row['process_s'] / max(1e-9, base['process_s']):.2f}x, "
                         f"peak RSS {row['rss_bytes'] / max(1, base['rss_bytes']):.2f}x, results "
                         f"{'the same' if row['digest'] == base['digest'] else 'DIFFER'}")
                if first is not None:
                    echo(f"         {th} threads / {first['threads']}: wall "
                         f"{row['total_s'] / max(1e-9, first['total_s']):.2f}x, CPU "
                         f"{row['build_run_cpu_s'] / max(1e-9, first['build_run_cpu_s']):.2f}x"
                         f", results {'the same' if row['digest'] == first['digest'] else 'DIFFER'}")
            first = first or row
        if probe:
            row = run_case(n, duration, "native", threads=2, mode="probe")
            hosts.append(row)
            if echo:
                echo(format_case(row))
    if not single:
        return {"hosts": hosts, "single": []}
    if echo:
        echo("single connections, the same build (tcpsim bench --quick --engine native):")
    rows = run_benchmarks(quick=True, repeat=1, echo=echo, engine="native")
    return {"hosts": hosts, "single": rows}


if __name__ == "__main__":
    print(json.dumps(child(int(sys.argv[1]), sys.argv[2], sys.argv[3],
                           int(sys.argv[4]) if len(sys.argv) > 4 else 1,
                           sys.argv[5] if len(sys.argv) > 5 else "threads")))
