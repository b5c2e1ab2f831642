"""A controlled, stationary host load for captures: competing processes on the apps' CPU.

The captured applications' wakeup latency, and with it the outcome of the timing-dependent
reproducers (docs/app-latency.md), follows the machine's load. A capture made with a
``HostLoad`` runs ``procs`` processes pinned to the endpoints' CPU for the whole capture,
each busy (spinning on ``CLOCK_MONOTONIC``) for ``busy_us`` of every ``period_us`` on an
absolute grid, the processes' grids staggered by ``period_us / procs``, so the host's
condition is the same at the start of the capture as later. Written ``NxB/P`` with B and P
in milliseconds: ``1x5/10`` is one process busy 5 ms of every 10 ms (half a CPU), ``2x10/10``
two processes that never sleep. Each process reports the CPU time it got (``stats``), which
is the load actually applied (the scheduler decides how much of the asked-for share a
spinner gets beside the apps and the softirq work).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcpsim.capture.netns import python_env

_SPEC = re.compile(r"^(\d+)x(\d+(?:\.\d+)?)/(\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class HostLoad:
    """``procs`` competing processes, each busy ``busy_us`` of every ``period_us``."""

    procs: int
    busy_us: int
    period_us: int

    def label(self) -> str:
        """The ``NxB/P`` form (milliseconds) it was parsed from."""
        return f"{self.procs}x{self.busy_us / 1000:g}/{self.period_us / 1000:g}"

    def as_dict(self) -> dict[str, Any]:
        return {"spec": self.label(), "procs": self.procs, "busy_us": self.busy_us,
                "period_us": self.period_us}


def parse_host_load(text: str) -> HostLoad:
    """``NxB/P`` (N processes, busy B ms of every P ms) → HostLoad; ValueError naming the form."""
    m = _SPEC.match(text.strip())
    if not m:
        raise ValueError(f"host load {text!r}: write NxB/P, N processes busy B ms of every "
                         "P ms, e.g. 1x5/10")
    procs, busy_us, period_us = int(m[1]), round(float(m[2]) * 1000), round(float(m[3]) * 1000)
    if not 1 <= procs <= 16:
        raise ValueError(f"host load {text!r}: 1 to 16 processes, got {procs}")
    if not 0 < busy_us <= period_us:
        raise ValueError(f"host load {text!r}: the busy time must be more than 0 and at most "
                         f"the period ({period_us / 1000:g} ms)")
    return HostLoad(procs, busy_us, period_us)


class HostLoadRunner:
    """Start the load's processes pinned to ``cpu``; ``stop()`` ends them and returns what
    each one got (CPU seconds over wall seconds)."""

    def __init__(self, load: HostLoad, cpu: int, stats_dir: Path) -> None:
        self.load, self.cpu, self.stats_dir = load, cpu, stats_dir
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, ready_timeout_s: float = 30.0) -> "HostLoadRunner":
        """Start the processes and return once each is spinning (pinned, its SIGTERM handler
        set): on a busy host a Python process takes a while to start, and a capture begun
        before its load is applied would not be under the stated load at its start (and a
        process stopped before it set its handler would report nothing)."""
        self.stats_dir.mkdir(parents=True, exist_ok=True)
        for i in range(self.load.procs):
            phase = self.load.period_us * i // self.load.procs
            self.procs.append(subprocess.Popen(
                [sys.executable, "-m", "tcpsim.capture.hostload", str(self.cpu),
                 str(self.load.busy_us), str(self.load.period_us), str(phase),
                 str(self.stats_dir / f"load{i}.json")], env=python_env(),
                stdout=subprocess.PIPE))
        deadline = time.monotonic() + ready_timeout_s
        for p in self.procs:
            assert p.stdout is not None
            ready, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready or p.stdout.readline() != b"ready\n":
                self.kill()
                raise RuntimeError(f"host load: a load process did not start within "
                                   f"{ready_timeout_s:g} s (exit status {p.poll()})")
        return self

    def kill(self) -> None:
        """End every process without collecting what they got (an aborted start)."""
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)

    def stop(self) -> dict[str, Any]:
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            p.wait(timeout=10)
        got = [json.loads((self.stats_dir / f"load{i}.json").read_text())
               for i in range(len(self.procs))]
        return {**self.load.as_dict(), "cpu": self.cpu, "processes": got}


def spin(cpu: int, busy_us: int, period_us: int, phase_us: int, stats: Path) -> None:
    """The load process: pinned to ``cpu``, busy ``busy_us`` of every ``period_us`` on an
    absolute grid shifted by ``phase_us``, until SIGTERM; then writes its CPU share."""
    os.sched_setaffinity(0, {cpu})
    stop = False

    def on_term(_sig: int, _frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    sys.stdout.write("ready\n")                 # HostLoadRunner.start waits for this line
    sys.stdout.flush()
    wall0, cpu0 = time.monotonic_ns(), time.process_time_ns()
    due = wall0 + phase_us * 1000
    while not stop:
        now = time.monotonic_ns()
        if now < due:
            time.sleep((due - now) / 1e9)
        end = due + busy_us * 1000
        while time.monotonic_ns() < end and not stop:
            pass
        due += period_us * 1000
        now = time.monotonic_ns()
        if due + busy_us * 1000 <= now:          # fell behind a whole busy time: skip ahead
            due += (now - due) // (period_us * 1000) * period_us * 1000
    wall, used = time.monotonic_ns() - wall0, time.process_time_ns() - cpu0
    stats.write_text(json.dumps({"wall_s": round(wall / 1e9, 3), "cpu_s": round(used / 1e9, 3),
                                 "share": round(used / wall, 4) if wall else 0.0}))


if __name__ == "__main__":
    a = sys.argv[1:]
    spin(int(a[0]), int(a[1]), int(a[2]), int(a[3]), Path(a[4]))
