"""Run rcv_probe.bt (bpftrace) for one receiver port; collect its CSV lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from tcpsim.capture.probe_csv import parse_lines

SCRIPT = Path(__file__).with_name("rcv_probe.bt")
TRACEFS = Path("/sys/kernel/tracing")


def ensure_tracefs() -> None:
    """Mount tracefs if it is not mounted (bpftrace's tracepoint probes need it)."""
    if not (TRACEFS / "events").exists():
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=False)


def available() -> bool:
    return shutil.which("bpftrace") is not None


class BpfProbe:
    """bpftrace on tcp:tcp_probe (+grow/adjust/kfree_skb) filtered on the receiver's port.

    Tracepoints are global, so bpftrace runs in the root namespace; the port range and (if
    ``netns`` is given, e.g. the receiver namespace's name) the namespace inode select our
    socket even when other captures use the same port.
    """

    def __init__(self, port: int, last_port: int | None = None, out_path: Path | None = None,
                 settle_s: float = 2.0, every: int = 1, netns: str | None = None) -> None:
        self.port, self.out_path, self.settle_s = port, out_path, settle_s
        self.last_port = last_port if last_port is not None else port
        self.every = max(1, every)
        self.netns = netns
        self.lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._ready = threading.Event()

    def start(self) -> "BpfProbe":
        """Start bpftrace, wait until it has attached (plus ``settle_s``)."""
        ensure_tracefs()
        inum = os.stat(f"/run/netns/{self.netns}").st_ino if self.netns else 0
        self.proc = subprocess.Popen(["bpftrace", "-B", "line", str(SCRIPT), str(self.port),
                                      str(self.last_port), str(self.every),
                                      str(inum)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._pump, daemon=True)
        self._reader.start()
        if not self._ready.wait(30):
            self.stop()
            raise RuntimeError("bpftrace did not attach within 30 s")
        time.sleep(self.settle_s)
        return self

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("READY"):
                self._ready.set()
            self.lines.append(line)

    def stop(self) -> dict[str, list[dict[str, int]]]:
        """Stop bpftrace (SIGINT so END runs), write the raw lines, return parsed records."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)
        if self.out_path is not None:
            self.out_path.write_text("".join(self.lines))
        return parse_lines(self.lines)

    def __enter__(self) -> "BpfProbe":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
