"""Many connections on the real kernel sharing its TCP memory: a host capture.

    python -m tcpsim.capture.host SPEC.toml -o OUT.json [--duration 5s]      (root)

The question a host capture answers is the one issue 27's model answers: with this mix of
connections and this `net.ipv4.tcp_mem`, does the host reach TCP memory pressure, when, how
far does `/proc/net/sockstat`'s `mem` go, and what does each class of connection get
delivered. Every connection runs over loopback inside one fresh network namespace (so its
per-namespace counters and `sockstat inuse` count only these sockets), server and client
sockets on the same kernel: both ends' memory is charged to the one TCP pool, as on a
machine whose peers are local. The pool itself (`tcp_memory_allocated`, `tcp_mem`) is
global, not per namespace: the capture sets `net.ipv4.tcp_mem`, and restores it on every
exit path (normal end, an exception, SIGINT, SIGTERM) -- as it does `net.core.mem_pcpu_rsv`
when the spec sets it; a run that was SIGKILLed leaves the saved values in `SAVED_TCP_MEM`,
which the next capture restores first.

The spec file:

    [host]
    duration = "5s"
    tcp_mem = [200, 400, 600]        # pages (net.ipv4.tcp_mem), set for the run
    mem_pcpu_rsv = 256               # optional: net.core.mem_pcpu_rsv (global), for the run
    mtu = 1500                       # loopback MTU; TSO/GSO/GRO are switched off
    sample = "100ms"                 # sockstat + nstat + per-class sample period
    [host.sysctl]                    # set inside the namespace (it inherits the root's)
    "net.ipv4.tcp_rmem" = [4096, 131072, 6291456]

    [class.bad]
    count = 40
    start = "1s"                     # connections open evenly over [0, start)
    writer = { kind = "periodic", bytes = 1448, every = "10ms" }
    reader = { kind = "never" }

Writers are `periodic` or `bulk`, readers `never`, `periodic` or `fast`
(tcpsim/workload.py's kinds, parsed by its parser); the receiving side of each connection is
the accepting (server) socket. One process drives every socket from one epoll loop: a
periodic application's tick that comes late runs once, late (no catch-up burst).

The output JSON holds the spec, the kernel and host, and one sample per period: time since
the first connection opened, `sockstat` (`TCP: inuse orphan tw alloc mem`), the namespace's
counters since the start (`TcpExt*`), and per class the receivers' `tcpi_bytes_received`,
bytes read, `sk_rmem_alloc` and `sk_drops` summed. `summary()` derives what a model is held
to: pressure onset, peak `sockstat mem`, pressure entries, per-class delivered bytes.
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
import tomllib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from tcpsim.capture import nstat
from tcpsim.capture.netns import in_netns, run
from tcpsim.capture.sockinfo import meminfo, tcp_info
from tcpsim.errors import ScenarioError
from tcpsim.units import parse_duration
from tcpsim.workload import App, parse_app

TCP_MEM = Path("/proc/sys/net/ipv4/tcp_mem")
PCPU_RSV = Path("/proc/sys/net/core/mem_pcpu_rsv")
SAVED_TCP_MEM = Path("/run/tcpsim-host-capture.globals.json")
WRITERS = ("periodic", "bulk")
READERS = ("never", "periodic", "fast")
COUNTERS = ("TcpExtTCPMemoryPressures", "TcpExtTCPMemoryPressuresChrono", *nstat.RECEIVE_COUNTERS)
MAX_CONNECTIONS = 5000
PORT = 47000


@dataclass(frozen=True)
class ConnClass:
    """A class of connections: how many, when they open, what each end's application does."""

    name: str
    count: int
    start_ns: int
    writer: App
    reader: App


@dataclass(frozen=True)
class HostCaptureSpec:
    """What a host capture runs (see the module doc for the file)."""

    duration_ns: int
    tcp_mem: tuple[int, int, int]
    classes: tuple[ConnClass, ...]
    mtu: int = 1500
    sample_ns: int = 100_000_000
    sysctl: dict[str, Any] = field(default_factory=dict)
    mem_pcpu_rsv: int = 0            # net.core.mem_pcpu_rsv for the run (0: leave it)

    def as_dict(self) -> dict[str, Any]:
        """A JSON record of the spec (the fixture keeps it beside the samples)."""
        return {"duration_ns": self.duration_ns, "tcp_mem": list(self.tcp_mem), "mtu": self.mtu,
                "sample_ns": self.sample_ns, "sysctl": self.sysctl,
                "mem_pcpu_rsv": self.mem_pcpu_rsv,
                "classes": [{"name": c.name, "count": c.count, "start_ns": c.start_ns,
                             "writer": c.writer.as_dict(), "reader": c.reader.as_dict()}
                            for c in self.classes]}


def _tcp_mem(value: Any, where: str) -> tuple[int, int, int]:
    if (not isinstance(value, list) or len(value) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value)):
        raise ScenarioError(f"{where}: expected three positive page counts, e.g. [200, 400, 600]")
    lo, mid, hi = value
    if not lo <= mid <= hi:
        raise ScenarioError(f"{where}: must not decrease (min <= pressure <= max), got {value}")
    return lo, mid, hi


def _class(name: str, table: Any) -> ConnClass:
    where = f"class.{name}"
    if not isinstance(table, dict):
        raise ScenarioError(f"{where}: expected a table with count, writer and reader")
    unknown = sorted(set(table) - {"count", "start", "writer", "reader"})
    if unknown:
        raise ScenarioError(f"{where}.{unknown[0]}: unknown field; allowed: count, start, "
                            "writer, reader")
    count = table.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ScenarioError(f"{where}.count: expected a positive integer, got {count!r}")
    for side in ("writer", "reader"):
        if not isinstance(table.get(side), dict) or not table[side]:
            raise ScenarioError(f"{where}.{side}: required (a table with its kind)")
    writer = parse_app(table["writer"], "writer", App("bulk"), f"{where}.writer")
    reader = parse_app(table["reader"], "reader", App("never"), f"{where}.reader")
    if writer.kind not in WRITERS:
        raise ScenarioError(f"{where}.writer.kind: a host capture runs {', '.join(WRITERS)}")
    if reader.kind not in READERS:
        raise ScenarioError(f"{where}.reader.kind: a host capture runs {', '.join(READERS)}")
    start = parse_duration(table.get("start", 0), f"{where}.start")
    return ConnClass(name, count, start, writer, reader)


def parse(source: dict[str, Any] | str | Path) -> HostCaptureSpec:
    """A spec file (or its dict) -> HostCaptureSpec; bad fields raise ScenarioError naming
    them."""
    d = source if isinstance(source, dict) else tomllib.loads(Path(source).read_text())
    unknown = sorted(set(d) - {"host", "class"})
    if unknown:
        raise ScenarioError(f"{unknown[0]}: unknown table; a host capture has [host] and "
                            "[class.NAME]")
    host = d.get("host", {})
    bad = sorted(set(host) - {"duration", "tcp_mem", "mem_pcpu_rsv", "mtu", "sample", "sysctl"})
    if bad:
        raise ScenarioError(f"host.{bad[0]}: unknown field; allowed: duration, tcp_mem, "
                            "mem_pcpu_rsv, mtu, sample, sysctl")
    rsv = host.get("mem_pcpu_rsv", 0)
    if not isinstance(rsv, int) or isinstance(rsv, bool) or (rsv and rsv < 256):
        raise ScenarioError(f"host.mem_pcpu_rsv: expected pages, at least 256 (the kernel's "
                            f"minimum), got {rsv!r}")
    classes = d.get("class")
    if not isinstance(classes, dict) or not classes:
        raise ScenarioError("class: a host capture needs at least one [class.NAME] table")
    cls = tuple(_class(name, t) for name, t in classes.items())
    total = sum(c.count for c in cls)
    if total > MAX_CONNECTIONS:
        raise ScenarioError(f"class: {total} connections; a host capture runs at most "
                            f"{MAX_CONNECTIONS} (each is two sockets on this machine)")
    mtu = host.get("mtu", 1500)
    if not isinstance(mtu, int) or isinstance(mtu, bool) or not 576 <= mtu <= 65536:
        raise ScenarioError(f"host.mtu: expected an integer in 576..65536, got {mtu!r}")
    sysctl = host.get("sysctl", {})
    if not isinstance(sysctl, dict):
        raise ScenarioError("host.sysctl: expected a table of sysctl names and values")
    for name in ("net.ipv4.tcp_mem", "net.core.mem_pcpu_rsv"):
        if name in sysctl:
            raise ScenarioError(f"host.sysctl.{name}: give it as host.{name.split('.')[-1]} "
                                "(it is global, not per namespace, and restored after the run)")
    return HostCaptureSpec(
        duration_ns=parse_duration(host.get("duration", "5s"), "host.duration", positive=True),
        tcp_mem=_tcp_mem(host.get("tcp_mem"), "host.tcp_mem"),
        classes=cls, mtu=mtu,
        sample_ns=parse_duration(host.get("sample", "100ms"), "host.sample", positive=True),
        sysctl=dict(sysctl), mem_pcpu_rsv=rsv)


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


def global_settings(spec: HostCaptureSpec) -> dict[Path, str]:
    """The global (not per-namespace) sysctls the spec sets: tcp_mem, and mem_pcpu_rsv when
    given."""
    out = {TCP_MEM: " ".join(str(p) for p in spec.tcp_mem)}
    if spec.mem_pcpu_rsv:
        out[PCPU_RSV] = str(spec.mem_pcpu_rsv)
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
    """One connection: its client (writing) and server (receiving) socket, its class."""

    cls: ConnClass
    client: socket.socket
    server: socket.socket
    left: int = 0            # bytes of the writer's current periodic write still to go
    read: int = 0


class Loop:
    """Ticks of periodic applications on a heap, bulk writers and fast readers on epoll."""

    def __init__(self, t0: int) -> None:
        self.t0 = t0
        self.heap: list[tuple[int, int, str, int]] = []     # (due, seq, what, conn index)
        self.seq = 0
        self.ep = select.epoll()
        self.conns: list[Conn] = []
        self.fd_role: dict[int, tuple[str, int]] = {}

    def at(self, t: int, what: str, i: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, what, i))

    def add(self, conn: Conn, now: int) -> None:
        i = len(self.conns)
        self.conns.append(conn)
        w, r = conn.cls.writer, conn.cls.reader
        if w.kind == "periodic":
            self.at(now, "w", i)
        else:
            self.ep.register(conn.client.fileno(), select.EPOLLOUT)
            self.fd_role[conn.client.fileno()] = ("w", i)
        if r.kind == "periodic":
            self.at(now + r.every, "r", i)
        elif r.kind == "fast":
            self.ep.register(conn.server.fileno(), select.EPOLLIN)
            self.fd_role[conn.server.fileno()] = ("r", i)

    def write(self, i: int) -> None:
        c = self.conns[i]
        w = c.cls.writer
        if c.left == 0:
            c.left = w.bytes
        try:
            c.left -= c.client.send(_PAYLOAD[:min(c.left, len(_PAYLOAD))])
        except (BlockingIOError, ConnectionError):
            pass
        if w.kind == "bulk":
            c.left = 0

    def read(self, i: int, limit: int) -> None:
        c = self.conns[i]
        try:
            while True:
                got = len(c.server.recv(limit))
                c.read += got
                if got == 0 or c.cls.reader.kind == "periodic":
                    return
        except (BlockingIOError, ConnectionError):
            return

    def run_until(self, t_end: int) -> None:
        """Run the applications until monotonic time t_end (ns)."""
        while True:
            now = time.monotonic_ns()
            if now >= t_end:
                return
            while self.heap and self.heap[0][0] <= now:
                due, _, what, i = heapq.heappop(self.heap)
                c = self.conns[i]
                if what == "w":
                    self.write(i)
                    self.at(max(due + c.cls.writer.every, now), "w", i)
                else:
                    b, every = c.cls.reader.rate_at(due - self.t0)
                    self.read(i, b)
                    self.at(max(due + every, now), "r", i)
            nxt = self.heap[0][0] if self.heap else t_end
            timeout = max(0, min(nxt, t_end) - time.monotonic_ns()) / 1e9
            for fd, _ in self.ep.poll(timeout):
                what, i = self.fd_role[fd]
                if what == "w":
                    self.write(i)
                else:
                    self.read(i, self.conns[i].cls.reader.bytes)


_PAYLOAD = b"x" * (1 << 20)


def open_pair(listener: socket.socket, rcvbuf_lock: int = 0) -> tuple[socket.socket, socket.socket]:
    """A connected (client, server) pair over loopback, both non-blocking."""
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    for s in (client, server):
        s.setblocking(False)
    return client, server


def sample(loop: Loop, t0: int, base: dict[str, int]) -> dict[str, Any]:
    """One sample: time, sockstat, counters since the start, per-class receiver sums."""
    per: dict[str, dict[str, int]] = {}
    for c in loop.conns:
        row = per.setdefault(c.cls.name, {"connections": 0, "bytes_received": 0, "read": 0,
                                           "rmem_alloc": 0, "drops": 0})
        info, mem = tcp_info(c.server), meminfo(c.server)
        row["connections"] += 1
        row["bytes_received"] += info["bytes_received"]
        row["read"] += c.read
        row["rmem_alloc"] += mem["rmem_alloc"]
        row["drops"] += mem["drops"]
    counters = _read_counters()
    return {"t_ns": time.monotonic_ns() - t0,
            "sockstat": parse_sockstat(Path("/proc/net/sockstat").read_text()),
            "counters": {k: v - base.get(k, 0) for k, v in counters.items()},
            "classes": per}


def drive(spec: HostCaptureSpec) -> list[dict[str, Any]]:
    """Run the spec's connections in the current namespace; the samples."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", PORT))
    listener.listen(4096)
    opens: list[tuple[int, ConnClass]] = []
    for c in spec.classes:
        for k in range(c.count):
            opens.append((c.start_ns * k // c.count, c))
    opens.sort(key=lambda o: o[0])
    base = _read_counters()
    t0 = time.monotonic_ns()
    loop = Loop(t0)
    samples: list[dict[str, Any]] = []
    next_sample = t0
    end = t0 + spec.duration_ns
    k = 0
    try:
        while True:
            now = time.monotonic_ns()
            while k < len(opens) and t0 + opens[k][0] <= now:
                client, server = open_pair(listener)
                loop.add(Conn(opens[k][1], client, server), now)
                k += 1
            if now >= next_sample:
                samples.append(sample(loop, t0, base))
                next_sample += spec.sample_ns
            if now >= end:
                break
            horizon = min(next_sample, end, t0 + opens[k][0] if k < len(opens) else end)
            loop.run_until(horizon)
    finally:
        for c in loop.conns:
            c.client.close()
            c.server.close()
        listener.close()
    return samples


def summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """What a model is scored on: pressure onset (first sample with an entry, s; None if
    never), peak sockstat mem (pages), pressure entries and their class (0, 1, many), time
    in pressure (ms, the kernel's chrono), per-class delivered bytes at the end."""
    onset = next((s["t_ns"] / 1e9 for s in samples
                  if s["counters"].get("TcpExtTCPMemoryPressures", 0) > 0), None)
    last = samples[-1] if samples else {"counters": {}, "classes": {}}
    entries = last["counters"].get("TcpExtTCPMemoryPressures", 0)
    return {
        "pressure_onset_s": onset,
        "peak_sockstat_mem": max((s["sockstat"].get("mem", 0) for s in samples), default=0),
        "pressures": entries,
        "pressure_class": "0" if entries == 0 else "1" if entries == 1 else "many",
        "pressure_chrono_ms": last["counters"].get("TcpExtTCPMemoryPressuresChrono", 0),
        "delivered": {name: row["bytes_received"] for name, row in last["classes"].items()},
        "counters": {k: v for k, v in last["counters"].items() if v},
    }


# -- one capture, in a namespace ---------------------------------------------------------------

def capture(spec: HostCaptureSpec) -> dict[str, Any]:
    """Run the spec in a fresh namespace with the spec's tcp_mem; the fixture record."""
    if os.geteuid() != 0:
        raise PermissionError("a host capture needs root (namespaces, the global tcp_mem)")
    restored = restore_saved_tcp_mem()
    if restored:
        print(f"host capture: restored {restored} left changed by a killed capture",
              file=sys.stderr)
    ns = f"tcs-host-{os.getpid()}"
    run(["ip", "netns", "add", ns])
    try:
        return _in_namespace(ns, spec)
    finally:
        run(["ip", "netns", "del", ns], check=False)


def _in_namespace(ns: str, spec: HostCaptureSpec) -> dict[str, Any]:
    run(["ip", "-n", ns, "link", "set", "lo", "mtu", str(spec.mtu), "up"])
    run(["ip", "netns", "exec", ns, "ethtool", "-K", "lo", "tso", "off", "gso", "off", "gro",
         "off"], check=False)
    for name, value in spec.sysctl.items():
        v = " ".join(str(x) for x in value) if isinstance(value, list) else str(value)
        run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"{name}={v}"])
    with lowered_tcp_mem(global_settings(spec)) as original, in_netns(ns):
        samples = drive(spec)
        time.sleep(0.2)     # the closed sockets' memory drains before tcp_mem goes back up
    return {"kind": "tcpsim-host-capture", "version": 1, "spec": spec.as_dict(),
            "kernel": platform.release(), "cpus": os.cpu_count(), "globals_before": original,
            "samples": samples, "summary": summary(samples)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m tcpsim.capture.host", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", type=Path)
    p.add_argument("-o", "--out", type=Path, required=True)
    p.add_argument("--duration", help="override [host] duration")
    a = p.parse_args(argv)
    try:
        d = tomllib.loads(a.spec.read_text())
        if a.duration:
            d.setdefault("host", {})["duration"] = a.duration
        spec = parse(d)
    except (OSError, tomllib.TOMLDecodeError, ScenarioError) as e:
        sys.exit(f"tcpsim: error: {a.spec}: {e}")
    rec = capture(spec)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    s = rec["summary"]
    print(f"host capture: {len(rec['samples'])} samples -> {a.out}; pressure onset "
          f"{s['pressure_onset_s']} s, peak sockstat mem {s['peak_sockstat_mem']} pages, "
          f"{s['pressures']} pressure entries")


if __name__ == "__main__":
    main()
