"""ns-3 beside tcpsim in `tcpsim bench` (`--ns3`): the same cases, whole processes, one run.

ns-3 is the simulator tcpsim's users would otherwise reach for; its cost for the same
simulated work is the reference the speed figures are read against. When an ns-3 build is
present -- the directory named by $TCPSIM_NS3 (holding ``include/ns3`` and ``lib`` or
``lib64`` with ``libns3.*-core.so``), else the ``ns3`` Python wheel (``pip install ns3``,
which ships headers and libraries) -- the benchmark compiles ``data/ns3_bench.cc`` once
against it (cached under ``$XDG_CACHE_HOME/tcpsim``) and runs each case's workload there:
two nodes on a point-to-point link of the case's rate, RTT and queue, one TCP connection,
the case's writer and reader, and a fixed receive buffer (ns-3 has no receive-buffer
autotuning) of the size tcpsim's socket reached in the same case (its peak ``sk_rcvbuf``),
so both simulate a window of the same order. Both simulators run as whole processes for the same simulated
duration (``NS3_DURATION``: shorter than the cases' own, for which ns-3 takes minutes) --
tcpsim as a user runs it (`tcpsim run`, default timing, no trace; its start-up included) --
and the row gives wall, CPU and peak RSS of each, simulated packets per CPU second and the
CPU ratio. The two do not
simulate the same TCP (ns-3's is not Linux's receive path), so packet counts differ: the
figure to read is the cost per simulated packet and per simulated second.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from tcpsim.core.constants import NS_PER_S

NS3_ENV = "TCPSIM_NS3"
SOURCE = Path(__file__).parent / "data" / "ns3_bench.cc"
# the ns-3 modules the program links (in link order)
MODULES = ("applications", "internet", "point-to-point", "network", "core", "traffic-control")
UNLIMITED_RATE = "100Gbps"          # tcpsim's unlimited link (rate 0) as ns-3 needs a rate
# the simulated duration per case (letter), and under --quick
NS3_DURATION = {"a": "2s", "b": "120s", "c": "60s", "d": "30s"}
QUICK_DURATION = {"a": "0.2s", "b": "5s", "c": "5s", "d": "5s"}


class Ns3Error(RuntimeError):
    """ns-3 is present but the benchmark program could not be built or run."""


def find_ns3() -> Path | None:
    """The ns-3 build to measure against: $TCPSIM_NS3, else the `ns3` wheel; None if absent."""
    env = os.environ.get(NS3_ENV)
    if env:
        root = Path(env)
        if _libdir(root) is None or not (root / "include" / "ns3").is_dir():
            raise Ns3Error(f"${NS3_ENV}={env}: not an ns-3 build (expected include/ns3 and "
                           "lib/ or lib64/ with libns3.*-core.so); unset it or point it at one")
        return root
    spec = importlib.util.find_spec("ns3")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0])
    return root if _libdir(root) is not None and (root / "include" / "ns3").is_dir() else None


def _libdir(root: Path) -> Path | None:
    for sub in ("lib64", "lib"):
        if any((root / sub).glob("libns3*-core*.so")):
            return root / sub
    return None


def ns3_version(root: Path) -> str:
    """The release in the build's library names (libns3.44-core.so -> 3.44)."""
    lib = _libdir(root)
    names = [p.name for p in lib.glob("libns3*-core*.so")] if lib else []
    m = re.search(r"libns(3\.\d+(?:\.\d+)?)", names[0]) if names else None
    return m[1] if m else "unknown"


def build(root: Path) -> Path:
    """The benchmark program compiled against `root` (once per source and build)."""
    lib = _libdir(root)
    assert lib is not None
    version = ns3_version(root)
    key = hashlib.sha256(SOURCE.read_bytes() + str(root).encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tcpsim"
    binary = cache / f"ns3-bench-{version}-{key}"
    if binary.exists():
        return binary
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        raise Ns3Error("ns-3 found but no C++ compiler (g++) to build the benchmark program")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_suffix(".tmp")
    cmd = [compiler, "-O2", "-std=c++20", f"-I{root / 'include'}", str(SOURCE), "-o", str(tmp),
           f"-L{lib}", *(f"-lns{version}-{m}" for m in MODULES), f"-Wl,-rpath,{lib}"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise Ns3Error(f"building {SOURCE.name} against ns-3 {version} failed: "
                       f"{out.stderr.strip().splitlines()[-1] if out.stderr.strip() else '?'}")
    tmp.replace(binary)
    return binary


def ns3_args(case: Any, duration_ns: int, rcvbuf: int) -> list[str]:
    """The case's scenario as the program's options (link, writer, reader), with a receive
    buffer of `rcvbuf` bytes."""
    from tcpsim.bench import _scenario
    sc, _ = _scenario(case)
    rate = f"{sc.link.rate_bps}bps" if sc.link.rate_bps else UNLIMITED_RATE
    rtt_ms = (sc.link.delay_ab + sc.link.delay_ba) / 1e6
    args = [f"--rate={rate}", f"--rtt_ms={rtt_ms:g}", f"--queue={sc.link.queue_limit}",
            f"--duration_s={duration_ns / NS_PER_S:g}", f"--rcvbuf={rcvbuf}"]
    w, r = sc.writer, sc.reader
    if w.kind == "periodic":
        args += ["--writer=periodic", f"--wbytes={w.bytes}", f"--wevery_us={w.every // 1000}"]
    elif w.kind != "bulk":
        raise Ns3Error(f"ns-3 benchmark: writer kind {w.kind!r} has no ns-3 counterpart")
    if r.kind in ("periodic", "oscillating"):
        args += [f"--reader={r.kind}", f"--rbytes={r.bytes}", f"--revery_us={r.every // 1000}"]
        if r.kind == "oscillating":
            args += [f"--rbytes2={r.bytes2}", f"--revery2_us={r.every2 // 1000}",
                     f"--period_s={r.period / NS_PER_S:g}"]
    elif r.kind != "fast":
        raise Ns3Error(f"ns-3 benchmark: reader kind {r.kind!r} has no ns-3 counterpart")
    return args


def _process(args: Sequence[str]) -> dict[str, Any]:
    """One whole process (bench.measure_process): wall, CPU, peak RSS and its JSON line."""
    from tcpsim.bench import measure_process
    try:
        text, m = measure_process(list(args))
    except RuntimeError as exc:
        raise Ns3Error(f"ns-3 benchmark: {exc}") from None
    return {**m, **json.loads(text.decode().strip().splitlines()[-1])}


def ns3_rows(quick: bool = False, repeat: int = 1,
             echo: Callable[[str], None] | None = print) -> list[dict[str, Any]]:
    """Each case under ns-3 and under tcpsim (native, whole processes, same duration)."""
    from tcpsim.bench import CASES, user_process
    from tcpsim.units import parse_duration
    root = find_ns3()
    if root is None:
        row = {"case": "ns-3", "skipped": f"no ns-3 build (set ${NS3_ENV} or pip install ns3)"}
        if echo:
            echo(f"{row['case']:<44} skipped: {row['skipped']}")
        return [row]
    binary, version = build(root), ns3_version(root)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            letter = case.name.split(":")[0]
            duration = (QUICK_DURATION if quick else NS3_DURATION)[letter]
            ts = [user_process(case, duration, "native", None, tmp)
                  for _ in range(max(1, repeat))]
            args = ns3_args(case, parse_duration(duration, "duration"), ts[0]["peak_sk_rcvbuf"])
            ns = [_process([str(binary), *args]) for _ in range(max(1, repeat))]
            rows.append(_row(case.name, duration, version, ns, ts))
            if echo:
                echo(_line(rows[-1]))
    return rows


def _row(name: str, duration: str, version: str, ns: list[dict[str, Any]],
         ts: list[dict[str, Any]]) -> dict[str, Any]:
    def side(runs: list[dict[str, Any]]) -> dict[str, Any]:
        cpu = statistics.median(r["cpu"] for r in runs)
        return {"wall_s": round(statistics.median(r["wall"] for r in runs), 3),
                "cpu_s": round(cpu, 3), "peak_rss_mb": round(max(r["rss_mb"] for r in runs), 1),
                "packets": runs[0]["packets"],
                "packets_per_cpu_s": round(runs[0]["packets"] / cpu) if cpu else None}
    n, t = side(ns), side(ts)
    t["peak_sk_rcvbuf"] = ts[0]["peak_sk_rcvbuf"]          # ns-3's fixed receive buffer
    return {"case": name, "duration": duration, "ns3_version": version, "ns3": n, "tcpsim": t,
            "ns3_cpu_over_tcpsim_cpu": round(n["cpu_s"] / t["cpu_s"], 1) if t["cpu_s"] else None}


def _line(row: dict[str, Any]) -> str:
    n, t = row["ns3"], row["tcpsim"]
    return (f"{row['case']:<44} {row['duration']:>6}  ns-{row['ns3_version']}: CPU "
            f"{n['cpu_s']:.2f} s, {n['packets']:,} pkts, RSS {n['peak_rss_mb']} MiB, rcvbuf "
            f"{t['peak_sk_rcvbuf']:,} B  |  "
            f"tcpsim: CPU {t['cpu_s']:.2f} s, {t['packets']:,} pkts, RSS {t['peak_rss_mb']} MiB"
            f"  |  ns-3/tcpsim CPU {row['ns3_cpu_over_tcpsim_cpu']}x")
