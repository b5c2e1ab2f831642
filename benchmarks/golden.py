"""Golden traces: speed work must not change a single result.

    python benchmarks/golden.py record [--dir /tmp/golden] [-j 2]
    python benchmarks/golden.py verify [--dir /tmp/golden] [-j 2] [-k FILTER] [--work DIR]
                                       [--engine python|native]
    python benchmarks/golden.py diff A.parquet B.parquet

`record` runs every case below through the CLI (`tcpsim run ... --trace X.parquet --json`)
and stores, per case, the sha256 of the Parquet file and the JSON summary (counters, ss
lines, summary without `wall_s`) in DIR/manifest.json. `verify` re-runs them and requires
identical traces -- the same bytes, or the same Arrow table with the same schema metadata
read back (`same_table`: the file's encoding may change) -- and identical JSON; it prints
the first differing trace row of a failing case and exits 1. Record once before changing
anything, verify after every change.

The cases: every built-in experiment under its own profile and under linux-6.18 (2-20 s),
plus scenarios that reach paths the experiments do not (loss, OFO queue and SACK, other
ingress devices, Nagle, server role, tcp_shrink_window, every profile, tick by tick).
The hashes depend on the pyarrow version (it writes its name into the file); record and
verify on the same installation.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

# Built-in experiments and the simulated time each runs for (2-20 s).
EXPERIMENTS = {
    "bulk-1gbit": "2s",
    "seed-default-fill": "2s",
    "seed-never-reads": "20s",
    "seed-oscil-benchmark": "2s",          # 1 Gbit/s: slow; x-oscil-short has the slow phase
    "seed-oscillating-reader": "20s",
    "seed-rcvbuf32k-fill": "2s",
    "seed-unbounded-growth": "20s",
    "seed-wscale8": "20s",
    "rpc-loopback": "2s",                  # the 6.17 admission revert's workload (6.18.0)
    "request-response": "5s",              # two-way, the host experiments' healthy session
}

# Extra scenarios (TOML bodies, written to DIR/scenarios/NAME.toml).
_PERIODIC = """
[link]
rtt = "20ms"
{link}
[receiver]
role = "{role}"
device = "{device}"
{rcv}
[sender]
nodelay = {nodelay}
[writer]
kind = "periodic"
bytes = {wbytes}
every = "1ms"
[reader]
{reader}
"""

EXTRA_SCENARIOS = {
    # bench case (b): 1448 B every 1 ms against a fast reader
    "x-periodic-fast-reader": (
        'profile = "linux-6.18"\nduration = "20s"\n[sysctl]\n'
        '"net.ipv4.tcp_rmem" = [4096, 131072, 268435456]\n"net.ipv4.tcp_adv_win_scale" = -2\n'
        + _PERIODIC.format(link="", role="client", device="veth", rcv="", nodelay="true",
                           wbytes=1448, reader='kind = "fast"')),
    # loss: retransmissions, the OFO queue, SACK blocks, D-SACKs, RTOs
    "x-bulk-loss": (
        'profile = "linux-6.1"\nduration = "3s"\nseed = 3\n'
        '[link]\nrtt = "20ms"\nrate = "100mbit"\nqueue_limit = 100\nloss = 0.01\n'
        '[writer]\nkind = "bulk"\n[reader]\nkind = "fast"\n'),
    "x-bulk-loss-tun": (
        'profile = "linux-6.18"\nduration = "3s"\nseed = 5\n'
        '[link]\nrtt = "10ms"\nrate = "200mbit"\nqueue_limit = 50\nloss = 0.02\n'
        '[receiver]\ndevice = "tun"\n[writer]\nkind = "bulk"\n'
        '[reader]\nkind = "periodic"\nbytes = 20000\nevery = "1ms"\n'),
    "x-loss-small-buffer": (
        'profile = "linux-6.6"\nduration = "5s"\nseed = 9\n'
        '[link]\nrtt = "30ms"\nloss = 0.03\n[receiver]\nso_rcvbuf = 65536\ndevice = "nic-2k"\n'
        '[writer]\nkind = "bulk"\n[reader]\nkind = "periodic"\nbytes = 3000\nevery = "2ms"\n'),
    # ingress devices, roles, Nagle
    "x-veth-direct": (
        'profile = "linux-6.18"\nduration = "10s"\n'
        + _PERIODIC.format(link="", role="server", device="veth-direct", rcv="", nodelay="false",
                           wbytes=700, reader='kind = "periodic"\nbytes = 500\nevery = "1ms"')),
    "x-tun-small-reads": (
        'profile = "linux-6.17"\nduration = "15s"\n'
        + _PERIODIC.format(link="", role="client", device="tun", rcv="", nodelay="true",
                           wbytes=300, reader='kind = "periodic"\nbytes = 100\nevery = "1ms"')),
    "x-nic4k-oscillating": (
        'profile = "linux-6.14"\nduration = "20s"\n[sysctl]\n'
        '"net.ipv4.tcp_rmem" = [4096, 131072, 268435456]\n'
        + _PERIODIC.format(link="", role="client", device="nic-4k", rcv="", nodelay="true",
                           wbytes=1448, reader='kind = "oscillating"\nbytes = 1\nevery = "1ms"\n'
                           'bytes2 = 3300\nevery2 = "1ms"\nperiod = "4s"')),
    "x-loopback-locked": (
        'profile = "linux-6.10"\nduration = "10s"\n'
        + _PERIODIC.format(link="", role="client", device="loopback", rcv="so_rcvbuf = 32768",
                           nodelay="true", wbytes=4000,
                           reader='kind = "periodic"\nbytes = 2000\nevery = "1ms"')),
    "x-oscil-short": (
        'profile = "linux-6.18"\nduration = "8s"\n[sysctl]\n'
        '"net.ipv4.tcp_rmem" = [8192, 262144, 536870912]\n'
        '[link]\nrtt = "20ms"\nrate = "200mbit"\nqueue_limit = 500\n'
        '[writer]\nkind = "bulk"\n'
        '[reader]\nkind = "oscil"\nfast_for = "2s"\nslow_for = "2s"\nfraction = 0.05\n'),
}


@dataclass(frozen=True)
class Case:
    key: str
    scenario: str                  # experiment name or path of a TOML file
    profile: str | None
    duration: str | None
    args: tuple[str, ...] = ()


def _own_profile(name: str) -> str:
    from tcpsim.scenario import load_scenario
    return load_scenario(name).profile


def cases(root: Path) -> list[Case]:
    out = []
    sdir = root / "scenarios"
    for name, dur in EXPERIMENTS.items():
        own = _own_profile(name)
        # the recorded copy of the experiment: its path is part of the trace metadata
        path = str(sdir / f"{name}.toml")
        for prof in dict.fromkeys((own, "linux-6.18")):
            out.append(Case(f"{name}@{prof}", path, prof, dur))
    shrink = ("-s", "net.ipv4.tcp_shrink_window=1")
    unbounded = str(sdir / "seed-unbounded-growth.toml")
    oscillating = str(sdir / "seed-oscillating-reader.toml")
    out.append(Case("seed-unbounded-growth@linux-6.1.59+shrink", unbounded,
                    "linux-6.1.59", "20s", shrink))
    out.append(Case("seed-unbounded-growth@linux-6.1+shrink-window", unbounded,
                    "linux-6.1", "20s", ("--policy", "shrink-window")))
    out.append(Case("seed-oscillating-reader@linux-6.1+collapse-max-bytes", oscillating,
                    "linux-6.1", "20s", ("--policy", "collapse-max-bytes")))
    out.append(Case("seed-never-reads@linux-6.18+shrink", str(sdir / "seed-never-reads.toml"),
                    "linux-6.18", "20s", shrink))
    for prof in ("linux-5.15", "linux-6.6", "linux-6.8", "linux-6.10", "linux-6.14", "linux-6.17",
                 "linux-6.18.0", "linux-6.19", "linux-7.0", "linux-7.1"):
        out.append(Case(f"seed-unbounded-growth@{prof}", unbounded, prof, "10s"))
    out.append(Case("seed-never-reads@linux-7.1+shrink", str(sdir / "seed-never-reads.toml"),
                    "linux-7.1", "20s", shrink))
    out.append(Case("seed-wscale8@linux-6.1+noskip", str(sdir / "seed-wscale8.toml"),
                    "linux-6.1", "5s", ("--no-skip",)))
    out.append(Case("seed-oscillating-reader@linux-6.6+noskip", oscillating,
                    "linux-6.6", "3s", ("--no-skip",)))
    for name in EXTRA_SCENARIOS:
        out.append(Case(name, str(sdir / f"{name}.toml"), None, None))
    return out


def write_scenarios(root: Path) -> None:
    """Copy the experiments and write the extra scenarios under DIR/scenarios (once, at
    record time: verify runs the recorded copies, so the check does not depend on where the
    checkout lives -- the scenario's path is part of the trace metadata)."""
    from tcpsim.scenario import builtin_experiment
    sdir = root / "scenarios"
    sdir.mkdir(parents=True, exist_ok=True)
    for name in EXPERIMENTS:
        (sdir / f"{name}.toml").write_text(builtin_experiment(name).read_text())
    for name, body in EXTRA_SCENARIOS.items():
        (sdir / f"{name}.toml").write_text(f'name = "{name}"\n{body}')


ENGINE_ARGS: list[str] = []         # --engine E: every case on engine E (default: tcpsim's)


def run_case(case: Case, out_dir: Path, extra: tuple[str, ...] = ()) -> dict:
    """Run one case through the CLI (`extra`: more options, e.g. a sender sysctl); returns
    its sha256, JSON (without wall_s) and wall time."""
    trace = out_dir / f"{case.key}.parquet"
    cmd = [sys.executable, "-m", "tcpsim.cli", "run", case.scenario, "--json", "--no-progress",
           "--trace", str(trace), *case.args, *ENGINE_ARGS, *extra]
    if case.profile:
        cmd += ["-p", case.profile]
    if case.duration:
        cmd += ["-d", case.duration]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-2000:], "wall": wall}
    doc = json.loads(proc.stdout)
    doc["summary"].pop("wall_s", None)
    doc.pop("trace", None)
    digest = hashlib.sha256(trace.read_bytes()).hexdigest()
    return {"sha256": digest, "json": doc, "wall": round(wall, 2)}


def _run_all(selected: list[Case], out_dir: Path, jobs: int,
             extra: tuple[str, ...] = ()) -> dict[str, dict]:
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = {pool.submit(run_case, c, out_dir, extra): c for c in selected}
        for fut, c in futs.items():
            results[c.key] = fut.result()
            r = results[c.key]
            print(f"  {c.key:<48} {r.get('wall', 0):7.2f} s  "
                  f"{r.get('sha256', 'ERROR ' + r.get('error', ''))[:16]}", flush=True)
    return results


def record(root: Path, jobs: int) -> int:
    write_scenarios(root)
    results = _run_all(cases(root), root / "traces", jobs)
    bad = [k for k, r in results.items() if "error" in r]
    for k in bad:
        print(f"{k}: {results[k]['error']}")
    manifest = {k: {"sha256": r["sha256"], "json": r["json"]}
                for k, r in results.items() if "error" not in r}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    print(f"recorded {len(manifest)} cases in {root / 'manifest.json'}")
    return 1 if bad else 0


def _json_diff(a: dict, b: dict, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _json_diff(a.get(k), b.get(k), f"{path}.{k}")
        return out
    return [] if a == b else [f"{path}: golden {a!r} now {b!r}"]


def verify(root: Path, jobs: int, filt: str | None, work: Path | None = None,
           extra: tuple[str, ...] = (), rows_only: bool = False) -> int:
    """Run the recorded cases again and compare. `extra`: options added to every run (e.g.
    `-S net.ipv4.tcp_congestion_control=reno`); `rows_only`: a case whose trace rows and
    JSON are equal passes even when the trace metadata differs (new sysctls listed, the
    options of `extra` in the scenario record) or the JSON lists sysctls the recording
    did not have."""
    manifest = json.loads((root / "manifest.json").read_text())
    selected = [c for c in cases(root) if c.key in manifest and (not filt or c.key.startswith(filt))]
    t = time.perf_counter()
    work = work or root / "verify"
    results = _run_all(selected, work, jobs, extra)
    failed = 0
    for c in selected:
        r, g = results[c.key], manifest[c.key]
        if "error" in r:
            failed += 1
            print(f"FAIL {c.key}: {r['error']}")
            continue
        problems = _json_diff(g["json"], r["json"])
        if rows_only:                   # sysctls added since the recording: listed, not run
            problems = [p for p in problems if not (p.startswith(".sysctls.")
                                                    and ": golden None now " in p)]
        if r["sha256"] != g["sha256"] and not same_table(root / "traces" / f"{c.key}.parquet",
                                                         work / f"{c.key}.parquet"):
            where = first_difference(root / "traces" / f"{c.key}.parquet",
                                     work / f"{c.key}.parquet")
            if rows_only and where.startswith(("metadata: ", "rows and metadata equal")):
                print(f"rows identical {c.key} ({where[:160]})")
            else:
                problems.append("trace bytes differ: " + where)
        if problems:
            failed += 1
            print(f"FAIL {c.key}")
            for p in problems[:10]:
                print(f"    {p}")
    print(f"{len(selected) - failed}/{len(selected)} identical "
          f"({time.perf_counter() - t:.0f} s)")
    return 1 if failed else 0


def same_table(a: Path, b: Path) -> bool:
    """Whether two traces read back as the same Arrow table, schema metadata included:
    what a user gets, whatever the file's encoding (a change of the Parquet encoding
    alters the bytes, not the trace)."""
    import pyarrow.parquet as pq
    return a.exists() and pq.read_table(a).equals(pq.read_table(b), check_metadata=True)


def first_difference(a: Path, b: Path) -> str:
    """The first trace row where two Parquet traces differ (or the metadata)."""
    from tcpsim.trace.recorder import read_trace
    if not a.exists():
        return f"{a} missing (trace not recorded?)"
    ca, ma = read_trace(a)
    cb, mb = read_trace(b)
    na, nb = len(ca["t_ns"]), len(cb["t_ns"])
    for i in range(min(na, nb)):
        ra = {k: v[i] for k, v in ca.items()}
        rb = {k: v[i] for k, v in cb.items()}
        if ra != rb:
            diff = {k: (ra[k], rb[k]) for k in ra if ra[k] != rb.get(k)}
            return f"row {i} (t_ns {ra['t_ns']}, {ra['event']} {ra['detail']}): {diff}"
    if na != nb:
        return f"row counts {na} vs {nb}"
    if ma != mb:
        return "metadata: " + "; ".join(_json_diff(ma, mb))[:500]
    return "rows and metadata equal (encoding differs)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("record", "verify", "diff", "list"))
    ap.add_argument("files", nargs="*", help="diff: two Parquet traces")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/golden"))
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--engine", choices=("python", "native"),
                    help="run every case on this engine (default: tcpsim's default engine)")
    ap.add_argument("-k", dest="filter", help="verify: only cases whose key starts with this")
    ap.add_argument("--sender-sysctl", "-S", action="append", default=[], metavar="NAME=VALUE",
                    help="verify: a sender sysctl on every case (tcpsim run -S)")
    ap.add_argument("--timing", metavar="PRESET|exact",
                    help="verify: every case with this application timing (tcpsim run --timing; "
                         "with exact, traces recorded before the default timing compare with "
                         "--rows-only: the scenario record names the timing)")
    ap.add_argument("--rows-only", action="store_true",
                    help="verify: equal trace rows and JSON pass, whatever the metadata says")
    ap.add_argument("--work", type=Path, help="verify: where the new traces go (default DIR/verify; "
                    "give each concurrent verify its own)")
    a = ap.parse_args()
    if a.mode == "record":
        return record(a.dir, a.jobs)
    if a.mode == "verify":
        if a.engine:
            ENGINE_ARGS[:] = ["--engine", a.engine]
        extra = tuple(x for v in a.sender_sysctl for x in ("-S", v))
        extra += ("--timing", a.timing) if a.timing else ()
        return verify(a.dir, a.jobs, a.filter, a.work, extra, a.rows_only)
    if a.mode == "list":
        for c in cases(a.dir):
            print(c.key)
        return 0
    print(first_difference(Path(a.files[0]), Path(a.files[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
