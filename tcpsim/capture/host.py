"""Many connections on the real kernel sharing its TCP memory: a host capture.

    python -m tcpsim.capture.host HOST.toml -o OUT.json [--duration 5s]      (root)

A host capture runs a host file (docs/hosts.md) -- the same file the model runs -- over the
real kernel, and records what issue 27's model is held to: whether the host reaches TCP
memory pressure and when, how far `/proc/net/sockstat`'s `mem` goes, and what each class of
connection gets delivered. The host file's flows are expanded exactly as the engines expand
them (tcpsim.host.populations.expand: same seed, same starts, lifetimes and drawn fields);
each flow opens at its start over loopback inside one fresh network namespace (so the
namespace's counters and `sockstat inuse` count only these sockets) and closes at its stop.
Both ends of every connection are on this kernel, so both ends' memory is charged to the
one TCP pool: the model's counterpart is a host file with `peers = "local"`, the ingress
device `loopback` and a loopback-sized RTT. The link's other fields are not emulated.

The pool (`tcp_memory_allocated`, `net.ipv4.tcp_mem`, `net.core.mem_pcpu_rsv`) is global, not
per namespace: the host file's `[sysctl]` values of those two are set for the run and
restored on every exit path (normal end, an exception, SIGINT, SIGTERM); a run that was
SIGKILLed leaves the saved values in `SAVED_TCP_MEM`, which the next capture restores
first. Every other sysctl is set inside the namespace (which otherwise inherits the root
namespace's); the flows must agree on them.

Writers are `periodic` or `bulk`, readers `never`, `periodic` or `fast` (tcpsim/workload.py's
kinds), one way (no `receiver.writer`); the receiving end of each connection is its accepting
socket. One process drives every socket from one epoll loop, so its charges mostly land on
one CPU's reserve: a late periodic tick runs once, late (no catch-up burst).

The output JSON holds the host file's record, the kernel, and one sample per `sample`
period: time since the start, `sockstat` (`TCP: inuse orphan tw alloc mem`), the
namespace's counters since the start (`TcpExt*`), and per class the receivers'
`tcpi_bytes_received`, bytes read, `sk_rmem_alloc` and `sk_drops` summed (a closed
connection's as at its close). `summary()` derives what a model is scored on
(tcpsim.validate.host).
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import select
import signal
import socket
import sys
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

from tcpsim.capture import nstat
from tcpsim.capture.memcg import CaptureCgroup, check_capturable
from tcpsim.capture.netns import in_netns, run
from tcpsim.capture.sockinfo import meminfo, tcp_info
from tcpsim.core.sysctl import Sysctls
from tcpsim.errors import ScenarioError
from tcpsim.host.plan import SAMPLE_EVERY_NS, Flow, HostPlan
from tcpsim.host.populations import expand
from tcpsim.host.scenario import HostScenario, load_host
from tcpsim.units import parse_duration
from tcpsim.workload import App

TCP_MEM = Path("/proc/sys/net/ipv4/tcp_mem")
PCPU_RSV = Path("/proc/sys/net/core/mem_pcpu_rsv")
GLOBAL_SYSCTLS = {"net.ipv4.tcp_mem": TCP_MEM, "net.core.mem_pcpu_rsv": PCPU_RSV}
# Set per socket (TCP_CONGESTION), not in the namespace: a namespace inherits the root
# namespace's default (bbr on the development machine), and a non-root namespace may not
# select a restricted default (capturing.md).
CC_SYSCTL = "net.ipv4.tcp_congestion_control"
SAVED_TCP_MEM = Path("/run/tcpsim-host-capture.globals.json")
WRITERS = ("periodic", "bulk")
READERS = ("never", "periodic", "fast")
COUNTERS = ("TcpExtTCPMemoryPressures", "TcpExtTCPMemoryPressuresChrono", *nstat.RECEIVE_COUNTERS)
MAX_CONNECTIONS = 5000
PORT = 47000


def _app_ok(app: App | None, kinds: tuple[str, ...], where: str) -> None:
    if app is None or app.kind not in kinds:
        got = "none" if app is None else app.kind
        raise ScenarioError(f"{where}.kind: a host capture runs {', '.join(kinds)}, not {got}")


def load(path: str | Path, duration: str | None = None) -> tuple[HostScenario, HostPlan]:
    """A host file -> (host, its flows as the engines expand them), checked capturable:
    writer and reader kinds the capture runs, one-way flows, one set of namespace
    sysctls."""
    host = load_host(path)
    if duration:
        host = replace(host, duration=parse_duration(duration, "--duration", positive=True))
    if host.connections > MAX_CONNECTIONS:
        raise ScenarioError(f"{host.source}: {host.connections} connections; a host capture "
                            f"runs at most {MAX_CONNECTIONS} (each is two sockets here)")
    check_capturable(host.memcg, host.source)
    plan = expand(host, "exact")
    netns: dict[str, Any] | None = None
    for f in plan.flows:
        sc, where = f.scenario, f"{host.source}: class.{plan.classes[f.cls]}"
        _app_ok(sc.writer, WRITERS, f"{where}.writer")
        _app_ok(sc.reader, READERS, f"{where}.reader")
        if sc.rev_writer is not None:
            raise ScenarioError(f"{where}: a host capture runs one-way flows (no "
                                "receiver.writer)")
        own = namespace_sysctls(sc.sysctl)
        if netns is None:
            netns = own
        elif own != netns:
            raise ScenarioError(f"{where}: its sysctls differ from another class's; a host "
                                "capture's connections share one namespace")
    return host, plan


def namespace_sysctls(sysctl: dict[str, Any]) -> dict[str, Any]:
    """The per-namespace sysctls of a flow (the global ones and the congestion control,
    set per socket, removed)."""
    return {k: v for k, v in sysctl.items() if k not in GLOBAL_SYSCTLS and k != CC_SYSCTL}


def congestion_control(flow: Flow) -> str:
    """The congestion control the model's sender of `flow` runs: its `sender.sysctl`, else
    the host's `[sysctl]` (both ends are on this host), else the model's default (CUBIC,
    the kernel's own default) -- set on each socket, so the kernel runs what the model
    does whatever the machine's default is."""
    sc = flow.scenario
    return str(sc.sender_sysctl.get(CC_SYSCTL) or sc.sysctl.get(CC_SYSCTL)
               or Sysctls().tcp_congestion_control)


# -- the global sysctls (tcp_mem, mem_pcpu_rsv), always restored ------------------------------

def restore_saved_tcp_mem() -> dict[str, str] | None:
    """If a capture died (SIGKILL) with its global sysctls changed, put the saved values
    back; returns them ({path: value}; None when nothing was saved)."""
    if not SAVED_TCP_MEM.exists():
        return None
    saved: dict[str, str] = json.loads(SAVED_TCP_MEM.read_text())
    for path, value in saved.items():
        Path(path).write_text(value + "\n")
    SAVED_TCP_MEM.unlink()
    return saved


def global_settings(host: HostScenario, baseline: int = 0) -> dict[Path, str]:
    """The global (not per-namespace) sysctls the host file sets: tcp_mem, mem_pcpu_rsv.
    `baseline`: pages the machine's other sockets hold (sockstat `mem` before the run),
    added to each tcp_mem limit so the host's own flows meet the file's limits as on an
    otherwise empty host -- the model's pool starts empty."""
    out = {}
    for name, path in GLOBAL_SYSCTLS.items():
        if name in host.sysctl:
            v = host.sysctl[name]
            if name == "net.ipv4.tcp_mem":
                v = [int(x) + baseline for x in v]
            out[path] = " ".join(str(x) for x in v) if isinstance(v, (list, tuple)) else str(v)
    return out


@contextmanager
def lowered_tcp_mem(settings: dict[Path, str]) -> Iterator[dict[str, str]]:
    """Set the global sysctls for the block (net.ipv4.tcp_mem, net.core.mem_pcpu_rsv); the
    originals are written back on every exit path (SIGTERM and SIGINT are turned into
    exceptions meanwhile) and kept in SAVED_TCP_MEM while changed, for a SIGKILLed run's
    successor. Yields the originals."""
    original = {str(path): " ".join(path.read_text().split()) for path in settings}
    SAVED_TCP_MEM.write_text(json.dumps(original))

    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for path, value in settings.items():
            path.write_text(value + "\n")
        yield original
    finally:
        for path, value in original.items():
            Path(path).write_text(value + "\n")
        SAVED_TCP_MEM.unlink(missing_ok=True)
        for s, h in old.items():
            signal.signal(s, h)


# -- sampling ------------------------------------------------------------------------------

def parse_sockstat(text: str) -> dict[str, int]:
    """The TCP line of /proc/net/sockstat -> {inuse, orphan, tw, alloc, mem}."""
    for line in text.splitlines():
        if line.startswith("TCP:"):
            words = line.split()[1:]
            return {k: int(v) for k, v in zip(words[0::2], words[1::2])}
    return {}


def _read_counters() -> dict[str, int]:
    text = Path("/proc/net/netstat").read_text() + "\n" + Path("/proc/net/snmp").read_text()
    c = nstat.parse_proc_counters(text)
    return {k: c.get(k, 0) for k in COUNTERS}


# -- the applications, on one epoll loop -----------------------------------------------------

@dataclass
class Conn:
    """One connection: its flow, its client (writing) and server (receiving) socket, what its
    reader read, and its receiver's numbers as at its close."""

    flow: Flow
    client: socket.socket
    server: socket.socket
    left: int = 0            # bytes of the writer's current periodic write still to go
    read: int = 0
    closed: dict[str, int] | None = None

    def numbers(self) -> dict[str, int]:
        """The receiver's bytes received, read, sk_rmem_alloc and drops now (or at close)."""
        if self.closed is not None:
            return self.closed
        info, mem = tcp_info(self.server), meminfo(self.server)
        return {"bytes_received": info["bytes_received"], "read": self.read,
                "rmem_alloc": mem["rmem_alloc"], "drops": mem["drops"]}

    def close(self) -> None:
        self.closed = dict(self.numbers(), rmem_alloc=0)
        self.client.close()
        self.server.close()


class Loop:
    """The flows' applications: periodic ticks on a heap, bulk writers and fast readers on
    epoll; flows open and close at their times (heap events too)."""

    def __init__(self, t0: int, listener: socket.socket,
                 cg: CaptureCgroup | None = None) -> None:
        self.t0 = t0
        self.listener = listener
        self.cg = cg                    # the receiving sockets' memory cgroup, if any
        self.heap: list[tuple[int, int, str, int]] = []     # (due, seq, what, conn index)
        self.seq = 0
        self.ep = select.epoll()
        self.conns: list[Conn] = []
        self.fd_role: dict[int, tuple[str, int]] = {}

    def at(self, t_rel: int, what: str, i: int) -> None:
        """Schedule `what` for connection i at t_rel ns after the start."""
        self.seq += 1
        heapq.heappush(self.heap, (self.t0 + t_rel, self.seq, what, i))

    def plan(self, flows: tuple[Flow, ...]) -> None:
        for i, f in enumerate(flows):
            self.at(f.start, "open", i)
            if f.stop:
                self.at(f.stop, "close", i)

    def open(self, i: int, flow: Flow) -> None:
        client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                          congestion_control(flow).encode())
        client.connect(self.listener.getsockname())
        server = (self.cg.accept(self.listener) if self.cg is not None  # the cgroup's socket
                  else self.listener.accept()[0])  # the listener's congestion control
        for s in (client, server):
            s.setblocking(False)
        assert i == len(self.conns)
        self.conns.append(Conn(flow, client, server))
        w, r = flow.scenario.writer, flow.scenario.reader
        self.at(max(w.start, flow.start), "w" if w.kind == "periodic" else "wb", i)
        if r.kind == "periodic":
            self.at(max(r.start, flow.start) + r.every, "r", i)
        elif r.kind == "fast":
            self.at(max(r.start, flow.start), "rf", i)

    def close(self, i: int) -> None:
        c = self.conns[i]
        for fd in (c.client.fileno(), c.server.fileno()):
            if fd in self.fd_role:
                self.ep.unregister(fd)
                del self.fd_role[fd]
        c.close()

    def write(self, c: Conn) -> None:
        w = c.flow.scenario.writer
        if c.left == 0:
            c.left = w.bytes
        try:
            c.left -= c.client.send(_PAYLOAD[:min(c.left, len(_PAYLOAD))])
        except (BlockingIOError, ConnectionError):
            pass
        if w.kind == "bulk":
            c.left = 0

    def read(self, c: Conn, limit: int, once: bool) -> None:
        try:
            while True:
                got = len(c.server.recv(limit))
                c.read += got
                if got == 0 or once:
                    return
        except (BlockingIOError, ConnectionError):
            return

    def _due(self, due: int, what: str, i: int, now: int, flows: tuple[Flow, ...]) -> None:
        if what == "open":
            self.open(i, flows[i])
            return
        c = self.conns[i]
        if what == "close" or c.closed is not None:
            if what == "close":
                self.close(i)
            return
        if what == "w":
            self.write(c)
            self.seq += 1
            heapq.heappush(self.heap, (max(due + c.flow.scenario.writer.every, now),
                                       self.seq, "w", i))
        elif what == "r":
            r = c.flow.scenario.reader
            b, every = r.rate_at(due - self.t0 - r.start)
            self.read(c, b, once=True)
            self.seq += 1
            heapq.heappush(self.heap, (max(due + every, now), self.seq, "r", i))
        else:                               # a bulk writer or fast reader starts: epoll
            fd, ev = ((c.client.fileno(), select.EPOLLOUT) if what == "wb"
                      else (c.server.fileno(), select.EPOLLIN))
            self.ep.register(fd, ev)
            self.fd_role[fd] = ("w" if what == "wb" else "r", i)

    def run_until(self, t_end: int, flows: tuple[Flow, ...]) -> None:
        """Run the flows until monotonic time t_end (ns)."""
        while True:
            now = time.monotonic_ns()
            if now >= t_end:
                return
            while self.heap and self.heap[0][0] <= now:
                due, _, what, i = heapq.heappop(self.heap)
                self._due(due, what, i, now, flows)
            nxt = self.heap[0][0] if self.heap else t_end
            timeout = max(0, min(nxt, t_end) - time.monotonic_ns()) / 1e9
            for fd, _ in self.ep.poll(timeout):
                what, i = self.fd_role[fd]
                c = self.conns[i]
                if what == "w":
                    self.write(c)
                else:
                    self.read(c, c.flow.scenario.reader.bytes, once=False)


_PAYLOAD = b"x" * (1 << 20)


def sample(loop: Loop, classes: tuple[str, ...], base: dict[str, int]) -> dict[str, Any]:
    """One sample: time, sockstat, counters since the start, per-class receiver sums."""
    per = {name: {"connections": 0, "bytes_received": 0, "read": 0, "rmem_alloc": 0,
                  "drops": 0} for name in classes}
    for c in loop.conns:
        row = per[classes[c.flow.cls]]
        row["connections"] += 1
        for k, v in c.numbers().items():
            row[k] += v
    counters = _read_counters()
    out = {"t_ns": time.monotonic_ns() - loop.t0,
           "sockstat": parse_sockstat(Path("/proc/net/sockstat").read_text()),
           "counters": {k: v - base.get(k, 0) for k, v in counters.items()
                        if v != base.get(k, 0)},
           "classes": per}
    if loop.cg is not None:
        out["memcg"] = loop.cg.read()
    return out


def drive(plan: HostPlan, cg: CaptureCgroup | None = None) -> list[dict[str, Any]]:
    """Run the plan's flows in the current namespace (their receiving sockets in the memory
    cgroup `cg`, if given); the samples."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                        congestion_control(plan.flows[0]).encode())
    listener.bind(("127.0.0.1", PORT))
    listener.listen(4096)
    base = _read_counters()
    loop = Loop(time.monotonic_ns(), listener, cg)
    loop.plan(plan.flows)
    every = plan.sample_every or SAMPLE_EVERY_NS
    samples: list[dict[str, Any]] = []
    try:
        for k in range(plan.duration // every + 1):
            loop.run_until(loop.t0 + k * every, plan.flows)
            samples.append(sample(loop, plan.classes, base))
    finally:
        for i, c in enumerate(loop.conns):
            if c.closed is None:
                loop.close(i)
        listener.close()
    return samples


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """What a model is scored on: pressure onset (first sample with an entry, s; None if
    never), peak sockstat mem (pages) above the baseline, pressure entries and their class
    (0, 1, many), time in pressure (ms, the kernel's chrono), per-class delivered bytes at
    the end.

    sockstat's `mem` is the machine's whole TCP pool: the first sample, taken before any
    flow opens, shows what the machine's other sockets held (0 to ~500 pages on the shared
    development machine, varying from run to run). That `baseline_sockstat_mem` is taken
    off the peak, so the peak is what the host's own flows added -- what a model, whose
    pool starts empty, shows. (The baseline still counts against tcp_mem on the kernel.)"""
    onset = next((s["t_ns"] / 1e9 for s in samples
                  if s["counters"].get("TcpExtTCPMemoryPressures", 0) > 0), None)
    last = samples[-1] if samples else {"counters": {}, "classes": {}}
    entries = last["counters"].get("TcpExtTCPMemoryPressures", 0)
    base = samples[0]["sockstat"].get("mem", 0) if samples else 0
    return {
        "pressure_onset_s": onset,
        "peak_sockstat_mem": max((s["sockstat"].get("mem", 0) for s in samples),
                                 default=0) - base,
        "baseline_sockstat_mem": base,
        "pressures": entries,
        "pressure_class": "0" if entries == 0 else "1" if entries == 1 else "many",
        "pressure_chrono_ms": last["counters"].get("TcpExtTCPMemoryPressuresChrono", 0),
        "delivered": {name: row["bytes_received"] for name, row in last["classes"].items()},
        "counters": {k: v for k, v in last["counters"].items() if v},
        **memcg_summary(samples),
    }


def memcg_summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """With a memory cgroup: its peak usage (pages; memory.kmem.tcp.max_usage_in_bytes at
    the end), the first sample at 90 % of that peak (s), and failcnt; {} without one."""
    rows = [s["memcg"] for s in samples if "memcg" in s]
    if not rows:
        return {}
    peak = rows[-1]["max_usage_pages"]
    reach = next((s["t_ns"] / 1e9 for s in samples
                  if "memcg" in s and s["memcg"]["usage_pages"] >= 0.9 * peak), None)
    return {"memcg_peak_pages": peak, "memcg_reach_s": reach,
            "memcg_failcnt": rows[-1]["failcnt"]}


# -- one capture, in a namespace ---------------------------------------------------------------

def capture(host: HostScenario, plan: HostPlan, runs: int = 1) -> dict[str, Any]:
    """Run the host's flows `runs` times, each in a fresh namespace under its tcp_mem; the
    fixture record: every run's samples and summary, and their median summary."""
    if os.geteuid() != 0:
        raise PermissionError("a host capture needs root (namespaces, the global tcp_mem)")
    restored = restore_saved_tcp_mem()
    if restored:
        print(f"host capture: restored {restored} left changed by a killed capture",
              file=sys.stderr)
    records = [capture_once(host, plan) for _ in range(runs)]
    return {"kind": "tcpsim-host-capture", "version": 2, "host": host.as_dict(),
            "kernel": platform.release(), "cpus": os.cpu_count(),
            "globals_before": records[0][0], "runs": [r[1] for r in records],
            "summary": median_summary([r[1]["summary"] for r in records])}


def capture_once(host: HostScenario, plan: HostPlan) -> tuple[dict[str, str], dict[str, Any]]:
    """One run in a fresh namespace: (the global sysctls as found, {samples, summary})."""
    ns = f"tcs-host-{os.getpid()}"
    run(["ip", "netns", "add", ns])
    try:
        run(["ip", "-n", ns, "link", "set", "lo", "mtu", str(plan.flows[0].scenario.link.mtu),
             "up"])
        run(["ip", "netns", "exec", ns, "ethtool", "-K", "lo", "tso", "off", "gso", "off",
             "gro", "off"], check=False)
        for name, value in namespace_sysctls(plan.flows[0].scenario.sysctl).items():
            v = " ".join(str(x) for x in value) if isinstance(value, list) else str(value)
            run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"{name}={v}"])
        baseline = parse_sockstat(Path("/proc/net/sockstat").read_text()).get("mem", 0)
        settings = global_settings(host, baseline)
        with (lowered_tcp_mem(settings) as original, in_netns(ns),
              CaptureCgroup(plan.memcg[1]) if plan.memcg else nullcontext() as cg):
            samples = drive(plan, cg)
            time.sleep(0.2)     # the closed sockets' memory drains before tcp_mem goes back up
    finally:
        run(["ip", "netns", "del", ns], check=False)
    return original, {"samples": samples, "summary": summary(samples),
                      "globals_set": {str(k): v for k, v in settings.items()}}


def median_summary(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs' summaries as one: the median of each number (onset: of the runs that
    entered pressure, None if fewer than half did), the majority pressure class, and each
    number's range over the runs (`spread`)."""
    from statistics import median

    def med(vals: list[Any]) -> Any:
        vals = [v for v in vals if v is not None]
        return median(vals) if vals and 2 * len(vals) >= len(summaries) else None

    classes = [s["pressure_class"] for s in summaries]
    names = sorted({k for s in summaries for k in s["delivered"]})
    out = {
        "runs": len(summaries),
        "pressure_onset_s": med([s["pressure_onset_s"] for s in summaries]),
        "peak_sockstat_mem": med([s["peak_sockstat_mem"] for s in summaries]),
        "pressures": med([s["pressures"] for s in summaries]),
        "pressure_class": max(set(classes), key=classes.count),
        "delivered": {n: med([s["delivered"].get(n, 0) for s in summaries]) for n in names},
    }
    if all("memcg_peak_pages" in s for s in summaries):
        out["memcg_peak_pages"] = med([s["memcg_peak_pages"] for s in summaries])
        out["memcg_reach_s"] = med([s["memcg_reach_s"] for s in summaries])
    out["spread"] = {
        "peak_sockstat_mem": [min(s["peak_sockstat_mem"] for s in summaries),
                              max(s["peak_sockstat_mem"] for s in summaries)],
        "delivered": {n: [min(s["delivered"].get(n, 0) for s in summaries),
                          max(s["delivered"].get(n, 0) for s in summaries)] for n in names},
    }
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m tcpsim.capture.host", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("host", help="a host file (docs/hosts.md)")
    p.add_argument("-o", "--out", type=Path, required=True)
    p.add_argument("--duration", help="override the host's duration")
    p.add_argument("--runs", type=int, default=1, help="capture the host N times (median)")
    a = p.parse_args(argv)
    try:
        host, plan = load(a.host, a.duration)
    except (OSError, ScenarioError) as e:
        sys.exit(f"tcpsim: error: {e}")
    if a.runs < 1:
        sys.exit("tcpsim: error: --runs: give at least 1")
    rec = capture(host, plan, a.runs)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rec, separators=(",", ":")) + "\n")     # compact: fixtures
    s = rec["summary"]
    print(f"host capture: {a.runs} run(s) -> {a.out}; median pressure onset "
          f"{s['pressure_onset_s']} s, peak sockstat mem {s['peak_sockstat_mem']} pages, "
          f"{s['pressures']} pressure entries")


if __name__ == "__main__":
    main()
