"""tcpdump on an endpoint's veth (the receiver's unless told), writing a nanosecond pcap of one
port's TCP packets."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tcpsim.capture.netns import Topology


BUFFER_KIB = 32768


def dropped_by_kernel(stderr: str) -> int:
    """tcpdump's closing "N packets dropped by kernel" count; -1 if it did not say."""
    for line in stderr.splitlines():
        if line.endswith("packets dropped by kernel"):
            return int(line.split()[0])
    return -1


class WireRecorder:
    """Context manager: start tcpdump on the veth of namespace ``ns`` (default: the
    receiver's) for filter ``expr`` (default: ``tcp port <port>``), stop (SIGINT) on exit."""

    def __init__(self, topo: Topology, pcap: Path, port: int, snaplen: int = 96,
                 ns: str = "", expr: str = "") -> None:
        self.topo, self.pcap, self.port, self.snaplen = topo, pcap, port, snaplen
        self.ns, self.expr = ns or topo.rcv, expr or f"tcp port {port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.dropped = -1     # packets the kernel dropped from tcpdump's buffer (-1: unknown)

    def __enter__(self) -> "WireRecorder":
        # a large buffer (KiB): with real-time endpoints tcpdump may wait for its CPU
        argv = ["tcpdump", "-i", "veth0", "-n", "-s", str(self.snaplen), "-B", str(BUFFER_KIB),
                "-U", "--immediate-mode",
                "--time-stamp-precision=nano", "-w", str(self.pcap), self.expr]
        self.proc = self.topo.spawn(self.ns, argv, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 10
        line = self.proc.stderr.readline()  # "listening on veth0 ..."
        if b"listening" not in line and time.monotonic() > deadline:
            raise RuntimeError(f"tcpdump: {line!r}")
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            time.sleep(0.2)
            self.proc.send_signal(2)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if self.proc.stderr is not None:
                self.dropped = dropped_by_kernel(self.proc.stderr.read().decode(errors="replace"))
        if self.proc in self.topo.procs:
            self.topo.procs.remove(self.proc)
