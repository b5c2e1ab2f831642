"""Parity of the two engines: the same run on the Python engine (the reference) and the
native one gives the same trace table and the same `--json` summary.

    PYTHONPATH=. python3 benchmarks/parity.py [--full] [-k FILTER] [-j 2]

Cases: every golden case (benchmarks/golden.py) plus loss with jitter, every ingress
device preset, hz = 250, each built-in patch, a two-way run, negative and large seeds,
the pcap tap and `tcpsim replay` of the tap's pcap. By default each runs for a short time
(what tests/engine/test_parity.py runs in the default suite); `--full` runs the golden
cases for their recorded durations. "Same" is Arrow `Table.equals` with the schema
metadata (scenario, sysctls, counters, summary -- wall time is not in it), the summary
without `wall_s`, counters and `ss` lines, for the tap the pcap file's bytes, and for the
replay its report (text and JSON) and the model's trace.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import golden  # noqa: E402  (benchmarks/golden.py: the golden cases)

SHORT = "300ms"                       # default duration of a case
SHORT_FAST = "60ms"                   # 1 Gbit/s cases (the Python engine is slow there)
FAST_CASES = ("bulk-1gbit", "seed-oscil-benchmark", "seed-default-fill", "x-oscil-short")

# Pinned to exact application timing (the run-wide opt-out): these cases are about other
# things (devices, hz, skipping, two-way, relay) and keep today's exact-timing paths covered;
# the p-default-* cases run the same scenarios with the default (calibrated) timing.
_EXACT = '[timing]\nhost = "exact"\n'
_LOSSY = ('[link]\nrtt = "20ms"\nrate = "100mbit"\nqueue_limit = 60\nloss = 0.02\n'
          'jitter = "300us"\n[writer]\nkind = "bulk"\n[reader]\nkind = "fast"\n')
_PERIODIC = ('[link]\nrtt = "10ms"\n[receiver]\ndevice = "{device}"\n'
             '[writer]\nkind = "periodic"\nbytes = 1448\nevery = "1ms"\n'
             '[reader]\nkind = "periodic"\nbytes = 700\nevery = "1ms"\n')
_PERIODIC_EXACT = _PERIODIC + _EXACT
_TWO_WAY = ('[link]\nrtt = "10ms"\n[receiver]\ndevice = "loopback"\n'
            '[receiver.writer]\nkind = "periodic"\nbytes = 500\nevery = "2ms"\n'
            '[sender]\ndevice = "tun"\n[sender.reader]\nkind = "periodic"\nbytes = 300\n'
            'every = "1ms"\n[writer]\nkind = "bulk"\n[reader]\nkind = "periodic"\n'
            'bytes = 2000\nevery = "1ms"\n')
_TWO_WAY_EXACT = _TWO_WAY + _EXACT
_RELAY = ('[link]\nrtt = "1ms"\n[writer]\nkind = "bulk"\n[reader]\nkind = "periodic"\n'
          'bytes = "4M"\nevery = "1ms"\nstart = "150ms"\n[receiver.writer]\nkind = "periodic"\n'
          'bytes = 48\nevery = "10ms"\n[sender.reader]\nkind = "relay"\n')
_RELAY_EXACT = _RELAY + _EXACT
_BLOCKING_EXACT = ('[link]\nrtt = "2ms"\nrate = "100mbit"\nqueue_limit = 100\n[writer]\n'
                   'kind = "bulk"\n[reader]\nkind = "blocking"\n' + _EXACT)

_TIMED = ('[sysctl]\n"net.ipv4.tcp_rmem" = [4096, 131072, 268435456]\n'
          '"net.ipv4.tcp_adv_win_scale" = -2\n[link]\nrtt = "20ms"\n[receiver]\nrole = "client"\n'
          '[writer]\nkind = "periodic"\nbytes = 1448\nevery = "1ms"\nlatency = "periodic_writer"\n'
          '[reader]\nkind = "periodic"\nbytes = 1\nevery = "1ms"\nlatency = "periodic_reader"\n'
          'call_cost = "30us"\n')
_BLOCKING = ('[link]\nrtt = "2ms"\nrate = "100mbit"\nqueue_limit = 100\n'
             '[writer]\nkind = "bulk"\n[reader]\nkind = "blocking"\nbytes = "64KiB"\n'
             'latency = "blocking_reader"\ncall_cost = "5us"\ncopy_rate = "4gbit"\n')
_FIXED = ('[link]\nrtt = "10ms"\n[writer]\nkind = "periodic"\nbytes = 3000\nevery = "1ms"\n'
          'latency = "1500us"\n[reader]\nkind = "fast"\nlatency = "300us"\n')
_TWO_WAY_TIMED = _TWO_WAY_EXACT.replace('every = "2ms"\n', 'every = "2ms"\nlatency = "periodic_writer"\n'
                                  ).replace('bytes = 300\n', 'bytes = 300\nlatency = "3ms"\n')
_TBF = ('[link]\nrtt = "4ms"\nkind = "tbf"\nrate = "200mbit"\nburst = "32kb"\n'
        'limit = "{limit}"\njitter = "{jitter}"\nloss = {loss}\n'
        '[writer]\nkind = "bulk"\n[reader]\n{reader}\n')

# name -> (scenario body, extra CLI-style arguments)
EXTRA: dict[str, tuple[str, tuple[str, ...]]] = {
    "p-loss-jitter": (_LOSSY, ()),
    "p-loss-jitter-seed-negative": (_LOSSY, ("--seed", "-7")),
    "p-loss-jitter-seed-large": (_LOSSY, ("--seed", str(2**70 + 3))),
    "p-hz250": (_PERIODIC_EXACT.format(device="veth"), ("--hz", "250")),
    "p-hz100-noskip": (_PERIODIC_EXACT.format(device="veth"), ("--hz", "100", "--no-skip")),
    "p-two-way": (_TWO_WAY_EXACT, ()),
    "p-tap": (_LOSSY, ("--pcap",)),
    "p-tap-replay": (_PERIODIC_EXACT.format(device="veth"), ("--pcap", "--replay")),
    "p-relay": (_RELAY_EXACT, ()),
    "p-relay-noskip": (_RELAY_EXACT, ("--no-skip",)),
    "p-relay-timed-writer": (_RELAY_EXACT.replace('every = "10ms"\n',
                                            'every = "10ms"\nlatency = "periodic_writer"\n'), ()),
    "p-blocking": (_BLOCKING_EXACT, ()),
    "p-reno": (_LOSSY, ("-S", "net.ipv4.tcp_congestion_control=reno")),
    # without SACK the sender recovers as NewReno (the lossy cases above recover with SACK)
    "p-loss-jitter-nosack": (_LOSSY, ("-s", "net.ipv4.tcp_sack=0")),
    "p-reno-nosack": (_LOSSY, ("-s", "net.ipv4.tcp_sack=0",
                               "-S", "net.ipv4.tcp_congestion_control=reno")),
    "p-no-ssai": (_LOSSY, ("-S", "net.ipv4.tcp_slow_start_after_idle=0")),
    "p-timed-periodic": (_TIMED, ()),
    "p-timed-periodic-noskip": (_TIMED, ("--no-skip", "--seed", "11")),
    "p-timed-blocking": (_BLOCKING, ("--seed", "5")),
    "p-timed-fixed": (_FIXED, ()),
    "p-timed-two-way": (_TWO_WAY_TIMED, ()),
    "p-timed-blocks": (_TIMED.replace('"periodic_writer"', '"periodic_writer_blocks"')
                       .replace('"periodic_reader"', '"periodic_reader_blocks"'), ("--seed", "2")),
    "p-timed-blocks-noskip": (_TIMED.replace('"periodic_reader"', '"periodic_reader_blocks"'),
                              ("--no-skip", "--seed", "4")),
    "p-timed-blocks-host": (_TIMED.replace('"periodic_writer"', '"periodic_writer_blocks"')
                            .replace('"periodic_reader"', '"periodic_reader_blocks"')
                            + '[timing]\nhost = "dev-vm-quiet"\n', ("--seed", "3")),
    # the default application timing (no latency given, no [timing]): dev-vm-loaded's
    # calibrated defaults, resolved once for both engines (tcpsim.app_latency.DEFAULT_TIMING)
    "p-default-timing": (_PERIODIC.format(device="veth"), ("--seed", "6")),
    "p-default-timing-noskip": (_PERIODIC.format(device="veth"), ("--no-skip", "--seed", "8")),
    "p-default-timing-blocking": (_BLOCKING_EXACT.replace(_EXACT, ""), ("--seed", "2")),
    "p-default-timing-two-way": (_TWO_WAY, ("--seed", "9")),
    "p-default-timing-quiet": (_PERIODIC.format(device="veth"), ("--timing", "dev-vm-quiet")),
    "p-tbf-drops": (_TBF.format(limit="100kb", jitter="0us", loss=0, reader='kind = "fast"'), ()),
    "p-tbf-drops-nosack": (_TBF.format(limit="100kb", jitter="0us", loss=0, reader='kind = "fast"'),
                           ("-s", "net.ipv4.tcp_sack=0")),
    "p-tbf-loss-jitter": (_TBF.format(limit="3mb", jitter="200us", loss=0.01,
                                      reader='kind = "blocking"\nlatency = "blocking_reader"'), ()),
}
DEVICES = ("veth", "veth-direct", "loopback", "tun", "nic-2k", "nic-4k")
ROOT = Path(__file__).resolve().parents[1]
PY_PATCHES = Path(__file__).resolve().parent / "patches" / "py_patches.py"
PATCHES = ("collapse-max-bytes", "initrwnd", "rfc7323-retraction", "shrink-window")


@dataclass(frozen=True)
class Case:
    key: str
    scenario: str
    profile: str | None
    duration: str | None
    args: tuple[str, ...] = ()


def cases(root: Path, full: bool = False) -> list[Case]:
    """Every parity case, scenarios written under root/scenarios."""
    golden.write_scenarios(root)
    sdir = root / "scenarios"
    out = []
    for c in golden.cases(root):
        dur = c.duration if full else (SHORT_FAST if c.key.startswith(FAST_CASES) else SHORT)
        out.append(Case(c.key, c.scenario, c.profile, dur, c.args))
    extra = dict(EXTRA)
    for dev in DEVICES:
        extra[f"p-device-{dev}"] = (_PERIODIC_EXACT.format(device=dev), ())
    for patch in PATCHES:
        extra[f"p-patch-{patch}"] = (_PERIODIC_EXACT.format(device="veth"), ("--policy", patch))
    # the ntb experiment as shipped (two relaying ends, 64 KiB MTU, jumbo kmalloc buffers)
    ntb = (Path(__file__).resolve().parents[1] / "experiments" / "ntb-jumbo-rx.toml").read_text()
    extra["p-ntb-jumbo-rx"] = ("\n".join(line for line in ntb.splitlines()
                                         if not line.startswith(("name =", "profile ="))), ())
    for name, (body, args) in extra.items():
        path = sdir / f"{name}.toml"
        path.write_text(f'name = "{name}"\nprofile = "linux-6.18"\n{body}')
        out.append(Case(name, str(path), None, "2s" if full else SHORT, args))
    return out + era_cases(sdir, full) + python_patch_cases(root, sdir, full)


# The eras after 6.18 (golden.py records only the older ones): each on the scenario its
# change shows in, and with one case reaching its other paths.
NEW_ERAS = ("linux-6.18.0", "linux-6.19", "linux-7.0", "linux-7.1")


def era_cases(sdir: Path, full: bool) -> list[Case]:
    """The new eras on both engines: unbounded growth (DRS, admission), the RPC-over-loopback
    workload of the admission revert, a lossy link (SACK compression, tcp_comp_sack_rtt_percent),
    never-reads with tcp_shrink_window=1 (7.1's retraction) and 6.19's own sysctls set."""
    dur = "2s" if full else SHORT
    unbounded = str(sdir / "seed-unbounded-growth.toml")
    never = str(sdir / "seed-never-reads.toml")
    lossy = str(sdir / "p-loss-jitter.toml")
    rpc = str(ROOT / "tcpsim" / "experiments" / "rpc-loopback.toml")
    shrink = ("-s", "net.ipv4.tcp_shrink_window=1")
    out = []
    for prof in NEW_ERAS:
        out.append(Case(f"p-era-unbounded@{prof}", unbounded, prof, dur))
        out.append(Case(f"p-era-rpc-loopback@{prof}", rpc, prof, dur))
        out.append(Case(f"p-era-lossy@{prof}", lossy, prof, dur))
        out.append(Case(f"p-era-never-reads-shrink@{prof}", never, prof, dur, shrink))
    out.append(Case("p-era-lossy-sysctls@linux-6.19", lossy, "linux-6.19", dur,
                    ("-s", "net.ipv4.tcp_comp_sack_rtt_percent=100",
                     "-s", "net.ipv4.tcp_rcvbuf_low_rtt=50000", "-s", "net.core.bypass_prot_mem=1")))
    return out


def python_patch_cases(root: Path, sdir: Path, full: bool) -> list[Case]:
    """A user's Python patch (`--policy FILE.py:Class`) on both engines: the README's
    example as written, the docs' example file, a patch using every kind of point (before
    and after a built-in patch)."""
    import re
    block = re.search(r"```python\n(# my_patch.py.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README: the patch example moved"
    readme = root / "my_patch.py"
    readme.write_text(block[1])
    unbounded = str(sdir / "seed-unbounded-growth.toml")
    periodic = sdir / "p-device-veth.toml"
    every = f"{PY_PATCHES}:Everything"
    dur = "10s" if full else "1s"
    return [
        Case("p-pypatch-readme", unbounded, "linux-6.1", dur,
             ("--policy", f"{readme}:AlwaysShrink")),
        Case("p-pypatch-docs-example", str(periodic), "linux-6.6", "2s" if full else SHORT,
             ("--policy", str(ROOT / "docs" / "examples" / "always_shrink.py") + ":AlwaysShrink")),
        Case("p-pypatch-everything", unbounded, "linux-6.1", dur,
             ("--policy", "initrwnd", "--policy", every, "-s", "net.ipv4.tcp_everything_half_grow=1")),
        Case("p-pypatch-everything-then-builtin", str(periodic), "linux-6.1",
             "2s" if full else SHORT, ("--policy", every, "--policy", "shrink-window")),
    ]


def _options(case: Case, engine: str, trace: Path, pcap: Path | None) -> Any:
    from tcpsim.runner import RunOptions
    from tcpsim.units import parse_duration
    opts = RunOptions(profile=case.profile, trace=trace, engine=engine, pcap=pcap,
                      duration=parse_duration(case.duration, "d") if case.duration else None)
    args = list(case.args)
    while args:
        flag = args.pop(0)
        if flag == "-s":
            name, value = args.pop(0).split("=", 1)
            opts.sysctl = {**(opts.sysctl or {}), name: int(value)}
        elif flag == "-S":
            name, value = args.pop(0).split("=", 1)
            opts.sender_sysctl = {**(opts.sender_sysctl or {}),
                                  name: int(value) if value.isdigit() else value}
        elif flag == "--policy":
            opts.policies += (args.pop(0),)
        elif flag == "--no-skip":
            opts.skip = False
        elif flag == "--seed":
            opts.seed = int(args.pop(0))
        elif flag == "--hz":
            opts.hz = int(args.pop(0))
        elif flag in ("--pcap", "--replay"):
            pass                                   # the tap, its replay: run_both's
        elif flag == "--timing":
            args.pop(0)                            # read with the scenario: run_both's
        else:
            raise ValueError(f"parity case {case.key}: unknown argument {flag}")
    return opts


def run_both(case: Case, work: Path) -> list[str]:
    """Run `case` on both engines; the differences found (empty: identical)."""
    import pyarrow.parquet as pq
    from tcpsim.runner import run
    from tcpsim.scenario import load_scenario
    out = {}
    for engine in ("python", "native"):
        trace = work / f"{case.key}.{engine}.parquet"
        pcap = work / f"{case.key}.{engine}.pcap" if "--pcap" in case.args else None
        timing = case.args[case.args.index("--timing") + 1] if "--timing" in case.args else None
        result, _ = run(load_scenario(case.scenario, timing), _options(case, engine, trace, pcap))
        out[engine] = (result, pq.read_table(trace), pcap)
    (ra, ta, pa_), (rb, tb, pb) = out["python"], out["native"]
    diffs = []
    if not ta.equals(tb, check_metadata=True):
        diffs.append(f"trace: {_first_diff(ta, tb)}")
    sa = {k: v for k, v in ra.summary.items() if k != "wall_s"}
    sb = {k: v for k, v in rb.summary.items() if k != "wall_s"}
    for what, a, b in (("summary", sa, sb), ("counters", ra.counters, rb.counters),
                       ("ss", ra.ss, rb.ss), ("metadata", ra.metadata(), rb.metadata())):
        if a != b or list(a) != list(b):
            keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
            diffs.append(f"{what}: {keys[:5] or 'key order'}")
    if pa_ is not None and pa_.read_bytes() != pb.read_bytes():
        diffs.append("pcap: the files differ")
    if "--replay" in case.args:
        diffs += replay_diffs(pa_)
    return diffs


# `tcpsim replay` options of the replay cases: as captured, and with a small SO_RCVBUF that
# makes the model's sender refuse bytes and write them when it has room (ScheduleWriter)
REPLAY_OPTIONS: tuple[dict[str, Any], ...] = ({}, {"rcvbuf": 8192})


def replay_diffs(pcap: Path) -> list[str]:
    """`tcpsim replay` of a capture on both engines, with each of REPLAY_OPTIONS: the
    differences in its report (text, JSON) and the model's trace (empty: identical)."""
    import json
    from tcpsim.pcap.replay import replay_capture
    from tcpsim.validate.report import text
    diffs = []
    for opts in REPLAY_OPTIONS:
        out = {}
        for engine in ("python", "native"):
            v = replay_capture(pcap, engine=engine, **opts)
            out[engine] = {"report": text(v.score),
                           "json": json.dumps(v.score.as_dict(), indent=1, default=str),
                           "model trace": v.replay.columns}
        diffs += [f"replay {opts or ''} {what}: differs".replace("  ", " ")
                  for what in out["python"] if out["python"][what] != out["native"][what]]
    return diffs


def _first_diff(a: Any, b: Any) -> str:
    if a.num_rows != b.num_rows:
        return f"{a.num_rows} rows (python) vs {b.num_rows} (native)"
    if a.schema.metadata != b.schema.metadata:
        return "schema metadata"
    for name in a.column_names:
        ca, cb = a.column(name).to_pylist(), b.column(name).to_pylist()
        for i, (x, y) in enumerate(zip(ca, cb)):
            if x != y:
                return f"row {i} column {name}: python {x!r}, native {y!r}"
    return "types or chunking"


# Hosts (tcpsim/host): both engines give the same host outputs, per-connection rows included.
HOST_CASES = {
    "host-seed-mix": ("host-seed-mix", "2s"),
    "host-seed-mix-shrink": ("host-seed-mix", "2s", "shrink-window"),
}


def host_diffs(name: str) -> list[str]:
    """A host case on both engines: [] when their JSON (per connection too) and the
    per-connection traces of the reproducers (`--trace-connections bad`,
    tcpsim/host/traces.py) are the same."""
    import json as _json

    import pyarrow.parquet as pq

    from tcpsim.host.run import load_host_with, run_host
    from tcpsim.host.traces import ConnectionTraces
    from tcpsim.units import parse_duration
    spec = HOST_CASES[name]
    host = load_host_with(spec[0], duration=parse_duration(spec[1], "duration"),
                          policies=tuple(spec[2:]))
    out, traces = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for e in ("python", "native"):
            sink, plans = ConnectionTraces(Path(tmp) / e / "h.parquet"), []
            r = run_host(host, engine=e, sink=sink, traced=["bad"], plan_ready=plans.append)
            out.append(_json.dumps(r.as_json(True), sort_keys=True, default=str))
            traces.append([pq.read_table(p) for p in sink.close(r, plans[0])])
    for i, (a, b) in enumerate(zip(*traces)):
        if not a.equals(b, check_metadata=True):
            return [f"connection trace {i} differs: {_first_diff(a, b)}"]
    if out[0] == out[1]:
        return []
    i = next(i for i, (x, y) in enumerate(zip(out[0] + " ", out[1] + "  ")) if x != y)
    return [f"host outputs differ at {i}: python {out[0][i - 40:i + 40]!r}, "
            f"native {out[1][i - 40:i + 40]!r}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="the golden cases' full durations")
    ap.add_argument("-k", dest="filter", help="only cases whose key starts with this")
    ap.add_argument("-j", dest="jobs", type=int, default=1)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        selected = [c for c in cases(root, a.full) if not a.filter or c.key.startswith(a.filter)]
        t = time.perf_counter()
        bad = 0
        with ThreadPoolExecutor(max_workers=a.jobs) as pool:
            for case, diffs in zip(selected, pool.map(lambda c: run_both(c, root), selected)):
                bad += bool(diffs)
                print(f"  {case.key:<52} {'identical' if not diffs else '; '.join(diffs)}",
                      flush=True)
        hosts = [h for h in HOST_CASES if not a.filter or h.startswith(a.filter)]
        for h in hosts:
            diffs = host_diffs(h)
            bad += bool(diffs)
            print(f"  {h:<52} {'identical' if not diffs else '; '.join(diffs)}", flush=True)
        selected = selected + hosts      # type: ignore[operator]
        print(f"{len(selected) - bad}/{len(selected)} identical "
              f"({time.perf_counter() - t:.0f} s{', full durations' if a.full else ''})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
