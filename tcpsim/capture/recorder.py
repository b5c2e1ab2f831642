"""tcpdump in the receiver namespace, writing a nanosecond pcap of one port's TCP packets."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tcpsim.capture.netns import Topology


class WireRecorder:
    """Context manager: start tcpdump on the receiver's veth, stop (SIGINT) on exit."""

    def __init__(self, topo: Topology, pcap: Path, port: int, snaplen: int = 96) -> None:
        self.topo, self.pcap, self.port, self.snaplen = topo, pcap, port, snaplen
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> "WireRecorder":
        argv = ["tcpdump", "-i", "veth0", "-n", "-s", str(self.snaplen), "-U", "--immediate-mode",
                "--time-stamp-precision=nano", "-w", str(self.pcap), f"tcp port {self.port}"]
        self.proc = self.topo.spawn(self.topo.rcv, argv, stdout=subprocess.DEVNULL,
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
        if self.proc in self.topo.procs:
            self.topo.procs.remove(self.proc)
