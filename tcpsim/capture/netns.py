"""A throw-away sender/receiver topology in network namespaces, always torn down.

Layout without delay::

    [snd] veth 10.77.0.1/24  <->  10.77.0.2/24 veth [rcv]

With a one-way ``delay`` a middle ``rtr`` namespace forwards both directions and queues every
forwarded packet to NFQUEUE 0, where :mod:`tcpsim.capture.nfq_delay` (pinned to one CPU) accepts
each packet exactly ``delay`` after it was queued::

    [snd] 10.77.1.1 <-> 10.77.1.2 [rtr] 10.77.2.1 <-> 10.77.2.2 [rcv]

TSO, GSO and GRO are switched off on every veth end so the receiver sees MSS-sized segments.
Namespace names carry the creating process id, so parallel captures do not collide and
teardown deletes only what this process created. All traffic stays inside these namespaces.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def run(cmd: Sequence[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command, capture its output, raise with stderr on failure when ``check``."""
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


@dataclass
class Topology:
    """Names and addresses of one created topology, plus the processes started in it."""

    tag: str
    delay_ns: int = 0
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def snd(self) -> str:
        return f"tcs-snd-{self.tag}"

    @property
    def rcv(self) -> str:
        return f"tcs-rcv-{self.tag}"

    @property
    def rtr(self) -> str:
        return f"tcs-rtr-{self.tag}"

    @property
    def routed(self) -> bool:
        return self.delay_ns > 0

    @property
    def namespaces(self) -> list[str]:
        return [self.snd, self.rtr, self.rcv] if self.routed else [self.snd, self.rcv]

    @property
    def snd_addr(self) -> str:
        return "10.77.1.1" if self.routed else "10.77.0.1"

    @property
    def rcv_addr(self) -> str:
        return "10.77.2.2" if self.routed else "10.77.0.2"

    def exec_argv(self, ns: str, argv: Sequence[str]) -> list[str]:
        """The argv that runs ``argv`` inside namespace ``ns``."""
        return ["ip", "netns", "exec", ns, *argv]

    def sh(self, ns: str, argv: Sequence[str], check: bool = True) -> str:
        """Run a command inside ``ns`` and return its stdout."""
        return run(self.exec_argv(ns, argv), check=check).stdout

    def spawn(self, ns: str, argv: Sequence[str], **kw) -> subprocess.Popen[bytes]:
        """Start a background process in ``ns``; it is killed at teardown."""
        p = subprocess.Popen(self.exec_argv(ns, argv), start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def sysctl(self, ns: str, name: str, value: object) -> None:
        """Set a sysctl inside ``ns`` (never in the root namespace)."""
        if isinstance(value, (list, tuple)):
            value = " ".join(str(v) for v in value)
        self.sh(ns, ["sysctl", "-q", "-w", f"{name}={value}"])

    def read_sysctl(self, ns: str, name: str) -> str:
        return self.sh(ns, ["sysctl", "-n", name]).strip()


def _veth(a_ns: str, a_if: str, a_ip: str, b_ns: str, b_if: str, b_ip: str, mtu: int) -> None:
    run(["ip", "link", "add", a_if, "netns", a_ns, "type", "veth", "peer", "name", b_if,
         "netns", b_ns])
    for ns, ifname, ip in ((a_ns, a_if, a_ip), (b_ns, b_if, b_ip)):
        run(["ip", "-n", ns, "link", "set", ifname, "mtu", str(mtu)])
        run(["ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", ifname])
        run(["ip", "netns", "exec", ns, "ethtool", "-K", ifname, "tso", "off", "gso", "off",
             "gro", "off"])
        run(["ip", "-n", ns, "link", "set", ifname, "up"])


def build(topo: Topology, mtu: int = 1500) -> None:
    """Create the namespaces, links, routes and (if delayed) the NFQUEUE rules."""
    for ns in topo.namespaces:
        run(["ip", "netns", "add", ns])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
    if not topo.routed:
        _veth(topo.snd, "veth0", "10.77.0.1", topo.rcv, "veth0", "10.77.0.2", mtu)
        return
    _veth(topo.snd, "veth0", "10.77.1.1", topo.rtr, "vs", "10.77.1.2", mtu)
    _veth(topo.rtr, "vr", "10.77.2.1", topo.rcv, "veth0", "10.77.2.2", mtu)
    run(["ip", "-n", topo.snd, "route", "add", "10.77.2.0/24", "via", "10.77.1.2"])
    run(["ip", "-n", topo.rcv, "route", "add", "10.77.1.0/24", "via", "10.77.2.1"])
    topo.sysctl(topo.rtr, "net.ipv4.ip_forward", 1)
    topo.sh(topo.rtr, ["iptables-legacy", "-A", "FORWARD", "-j", "NFQUEUE", "--queue-num", "0"])


def start_delay(topo: Topology, cpu: int = 0, stats_path: Path | None = None) -> None:
    """Start the NFQUEUE delay program in the router namespace and wait until it is bound."""
    argv = [sys.executable, "-m", "tcpsim.capture.nfq_delay", "--delay-ns", str(topo.delay_ns),
            "--cpu", str(cpu)]
    if stats_path is not None:
        argv += ["--stats", str(stats_path)]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    p = topo.spawn(topo.rtr, argv, stdout=subprocess.PIPE, env=env)
    assert p.stdout is not None
    line = p.stdout.readline().decode().strip()
    if line != "bound":
        raise RuntimeError(f"nfq_delay did not start: {line!r}")


def stop_procs(procs: list[subprocess.Popen[bytes]], timeout: float = 3.0) -> None:
    """SIGTERM each process group we started, then SIGKILL what is left; reap all."""
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    procs.clear()


def teardown(topo: Topology) -> list[str]:
    """Stop our processes and delete our namespaces; return the errors (never raises)."""
    errors: list[str] = []
    try:
        stop_procs(topo.procs)
    except Exception as exc:  # noqa: BLE001 - teardown must go on
        errors.append(f"stop_procs: {exc}")
    for ns in reversed(topo.namespaces):
        proc = run(["ip", "netns", "del", ns], check=False)
        if proc.returncode != 0 and "No such file" not in proc.stderr:
            errors.append(f"ip netns del {ns}: {proc.stderr.strip()}")
    return errors


@contextlib.contextmanager
def topology(delay_ns: int = 0, mtu: int = 1500, tag: str | None = None,
             delay_cpu: int = 0, delay_stats: Path | None = None) -> Iterator[Topology]:
    """Create a topology, yield it, and tear it down on every exit path (incl. SIGTERM)."""
    topo = Topology(tag=tag or f"{os.getpid()}", delay_ns=delay_ns)
    old_term = signal.getsignal(signal.SIGTERM)

    def _on_term(signum, frame):  # turn SIGTERM into an exception so `finally` runs
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _on_term)
    try:
        build(topo, mtu)
        if topo.routed:
            start_delay(topo, cpu=delay_cpu, stats_path=delay_stats)
        yield topo
    finally:
        errors = teardown(topo)
        signal.signal(signal.SIGTERM, old_term)
        if errors:
            print("teardown errors: " + "; ".join(errors), file=sys.stderr)


@contextlib.contextmanager
def in_netns(name: str) -> Iterator[None]:
    """Run the calling thread inside namespace ``name``; sockets created here stay in it."""
    own = os.open(f"/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    try:
        if _libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {name}")
        yield
    finally:
        if _libc.setns(own, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns back")
        os.close(own)
        os.close(target)


def netns_available() -> bool:
    """True when we are root and `ip netns` works (used by root-only tests)."""
    if os.geteuid() != 0:
        return False
    try:
        return run(["ip", "netns", "list"], check=False).returncode == 0
    except FileNotFoundError:
        return False
