"""A throw-away sender/receiver topology in network namespaces, always torn down.

Layout without delay::

    [snd] veth 10.77.0.1/24  <->  10.77.0.2/24 veth [rcv]

With a delay, rate limit or loss a middle ``rtr`` namespace forwards both directions. Delayed
directions are queued to NFQUEUE 0 (sender -> receiver) and 1 (receiver -> sender), where
:mod:`tcpsim.capture.nfq_delay` (pinned to one CPU) accepts each packet exactly ``delay`` after
it was queued; loss is an iptables `statistic` DROP on the data direction; a rate is a `tbf`
qdisc on both router egresses (after the delay). The endpoints carry no qdisc tricks::

    [snd] 10.77.1.1 <-> 10.77.1.2 [rtr] 10.77.2.1 <-> 10.77.2.2 [rcv]

TSO, GSO and GRO are switched off on every veth end so the receiver sees MSS-sized segments.
Namespace names carry the creating process id, so parallel captures do not collide and
teardown deletes only what this process created. All traffic stays inside these namespaces.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
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
    delay_ns: int = 0            # one-way delay, both directions (unless delay_ba_ns is set)
    delay_ba_ns: int = -1        # receiver -> sender delay; -1 = same as delay_ns
    rate_bps: int = 0            # tbf on both router egresses; 0 = unlimited
    queue_limit: int = 1000      # tbf queue, packets
    tbf_burst: int = 0           # tbf bucket, bytes; 0 = rate / 250 Hz (at least 2 MTU + 100)
    tbf_limit: int = 0           # tbf queue, bytes; 0 = queue_limit full frames
    loss: float = 0.0            # random drop probability, data direction (snd -> rcv)
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
    def delay_ab(self) -> int:
        return self.delay_ns

    @property
    def delay_ba(self) -> int:
        return self.delay_ns if self.delay_ba_ns < 0 else self.delay_ba_ns

    @property
    def routed(self) -> bool:
        return self.delay_ab > 0 or self.delay_ba > 0 or self.rate_bps > 0 or self.loss > 0

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
        """A sysctl's value in ``ns``, "" if it is not visible there (e.g. global-only ones)."""
        return " ".join(self.sh(ns, ["sysctl", "-n", name], check=False).split())


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
    ipt = ["iptables-legacy", "-A", "FORWARD"]
    if topo.loss > 0:
        topo.sh(topo.rtr, ipt + ["-i", "vs", "-m", "statistic", "--mode", "random",
                                 "--probability", f"{topo.loss:.6f}", "-j", "DROP"])
    # queue 0: sender -> receiver (arrives on vs); queue 1: receiver -> sender (arrives on vr)
    for queue, ifname, delay in ((0, "vs", topo.delay_ab), (1, "vr", topo.delay_ba)):
        if delay > 0:
            topo.sh(topo.rtr, ipt + ["-i", ifname, "-j", "NFQUEUE", "--queue-num", str(queue)])
    if topo.rate_bps > 0:
        burst, limit = tbf_params(topo, mtu)
        for ifname in ("vr", "vs"):
            topo.sh(topo.rtr, ["tc", "qdisc", "add", "dev", ifname, "root", "tbf", "rate",
                               f"{topo.rate_bps}bit", "burst", str(burst), "limit", str(limit)])


def tbf_params(topo: Topology, mtu: int) -> tuple[int, int]:
    """(burst, limit) in bytes of the `tc tbf` bottleneck: the topology's, or the defaults
    (one 250 Hz tick of the rate, at least two frames; `queue_limit` full frames)."""
    burst = topo.tbf_burst or max(2 * mtu + 100, topo.rate_bps // 8 // 250)
    limit = topo.tbf_limit or topo.queue_limit * (mtu + 14)
    return burst, limit


def python_env() -> dict[str, str]:
    """Environment for our own `python -m tcpsim...` children (finds this checkout)."""
    root = str(Path(__file__).resolve().parents[2])
    old = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=root + (os.pathsep + old if old else ""))


def start_delay(topo: Topology, cpu: int = 0, stats_path: Path | None = None) -> None:
    """Start one NFQUEUE delay program per delayed direction (router namespace); wait for bind.

    Stats go to ``stats_path`` (queue 0, data direction) and ``<stem>.ba<suffix>`` (queue 1).
    """
    for queue, delay in ((0, topo.delay_ab), (1, topo.delay_ba)):
        if delay <= 0:
            continue
        argv = [sys.executable, "-m", "tcpsim.capture.nfq_delay", "--queue", str(queue),
                "--delay-ns", str(delay), "--cpu", str(cpu)]
        if stats_path is not None:
            path = stats_path if queue == 0 else stats_path.with_name(
                stats_path.stem + ".ba" + stats_path.suffix)
            argv += ["--stats", str(path)]
        p = topo.spawn(topo.rtr, argv, stdout=subprocess.PIPE, env=python_env())
        assert p.stdout is not None
        line = p.stdout.readline().decode().strip()
        if line != "bound":
            raise RuntimeError(f"nfq_delay (queue {queue}) did not start: {line!r}")


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
             delay_cpu: int = 0, delay_stats: Path | None = None, delay_ba_ns: int = -1,
             rate_bps: int = 0, queue_limit: int = 1000, loss: float = 0.0,
             tbf_burst: int = 0, tbf_limit: int = 0) -> Iterator[Topology]:
    """Create a topology, yield it, and tear it down on every exit path (incl. SIGTERM)."""
    topo = Topology(tag=tag or f"{os.getpid()}", delay_ns=delay_ns, delay_ba_ns=delay_ba_ns,
                    rate_bps=rate_bps, queue_limit=queue_limit, loss=loss,
                    tbf_burst=tbf_burst, tbf_limit=tbf_limit)
    old_term = signal.getsignal(signal.SIGTERM)

    def _on_term(signum, frame):  # turn SIGTERM into an exception so `finally` runs
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _on_term)
    try:
        build(topo, mtu)
        if topo.delay_ab > 0 or topo.delay_ba > 0:
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
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
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


# what a capture runs (bpftrace is optional; iptables-legacy only for a lossy link)
CAPTURE_TOOLS = ("ip", "tc", "ethtool", "tcpdump", "sysctl")


def missing_tools(tools: Sequence[str] = CAPTURE_TOOLS) -> list[str]:
    """The programs of `tools` that are not on PATH (a capture needs all of CAPTURE_TOOLS)."""
    return [t for t in tools if shutil.which(t) is None]


def netns_available() -> bool:
    """True when we are root and `ip netns` works (used by root-only tests)."""
    if os.geteuid() != 0:
        return False
    try:
        return run(["ip", "netns", "list"], check=False).returncode == 0
    except FileNotFoundError:
        return False


SND_PORT = 5000       # the sender's listening port in connect_pair()


def connect_pair(topo: Topology, rcv_port: int, role: str = "client", rcvbuf: int | None = None,
                 nodelay: bool = True, cc: str = "cubic") -> tuple[socket.socket, socket.socket]:
    """A connected (sender, receiver) pair; the receiver's local port is ``rcv_port``."""
    if role == "client":
        with in_netns(topo.snd):
            ls = socket.socket()
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((topo.snd_addr, SND_PORT))
            ls.listen(8)
        with in_netns(topo.rcv):
            r = socket.socket()
            if rcvbuf:
                r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            r.bind((topo.rcv_addr, rcv_port))
        r.connect((topo.snd_addr, SND_PORT))
        s, _ = ls.accept()
    else:
        with in_netns(topo.rcv):
            ls = socket.socket()
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if rcvbuf:
                ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            ls.bind((topo.rcv_addr, rcv_port))
            ls.listen(8)
        with in_netns(topo.snd):
            s = socket.socket()
        s.connect((topo.rcv_addr, rcv_port))
        r, _ = ls.accept()
    ls.close()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    if nodelay:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s, r
