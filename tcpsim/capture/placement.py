"""Where a capture's processes run: the CPUs of the sender, the delay program and the
receiving application, and whether the endpoints run at real-time priority."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# The sender and the delay program run on one CPU: a veth packet is queued on the backlog of the
# CPU that sent it, so a sender transmitting from two CPUs (process context on one, ACK-clocked
# softirq on the other) reorders segments without any loss (capturing.md).
SENDER_CPU = 0
# SCHED_FIFO priority of the endpoints under --rt: below the delay program's (nfq_delay --rt,
# 10), whose releases are the link's delay and must not wait behind an endpoint.
ENDPOINT_RT_PRIO = 5
# the options' help, for both the argparse CLIs (add_placement_options) and `tcpsim capture`
HELP = {
    "cpu": "CPU of the sender and the delay program (and of the reader unless --reader-cpu)",
    "reader_cpu": "run the receiving application on its own CPU N (default: on --cpu)",
    "rt": f"run both endpoints at real-time priority (SCHED_FIFO {ENDPOINT_RT_PRIO}) so the "
          "machine's other work preempts them less",
}


@dataclass(frozen=True)
class Placement:
    """Where and how the capture's processes run.

    ``cpu``: the sender and the delay program (so data segments leave from one CPU and veth
    does not reorder them; the receiver's softirq runs there too, where the delay program
    releases the packets). ``reader_cpu``: the receiving application's own CPU, -1 = on
    ``cpu`` as well (the one-CPU set-up, where the reader competes with the sender, the delay
    program and the receive softirq). ``rt``: both endpoints at SCHED_FIFO ENDPOINT_RT_PRIO so
    the shared machine's other work preempts them less (the delay program always runs at
    SCHED_FIFO 10).
    """

    cpu: int = SENDER_CPU
    reader_cpu: int = -1
    rt: bool = False

    @property
    def receiver_cpu(self) -> int:
        return self.cpu if self.reader_cpu < 0 else self.reader_cpu

    def as_dict(self) -> dict[str, Any]:
        """The summary's 'placement' record."""
        return {**asdict(self), "receiver_cpu": self.receiver_cpu, "delay_cpu": self.cpu,
                "endpoint_policy": f"SCHED_FIFO {ENDPOINT_RT_PRIO}" if self.rt else "SCHED_OTHER"}


def add_placement_options(ap: Any, hide_cpus: bool = False) -> None:
    """The capture CLIs' --cpu / --reader-cpu / --rt options (one definition for all);
    ``hide_cpus``: the CPUs are chosen by the caller (scripts/capture_fixtures.py workers)."""
    import argparse

    def shown(text: str) -> str:
        return argparse.SUPPRESS if hide_cpus else text

    ap.add_argument("--cpu", type=int, default=SENDER_CPU, help=shown(HELP["cpu"]))
    ap.add_argument("--reader-cpu", type=int, default=-1, help=shown(HELP["reader_cpu"]))
    ap.add_argument("--rt", action="store_true", help=HELP["rt"])


def placement_of(args: Any) -> Placement:
    """The Placement the parsed --cpu / --reader-cpu / --rt options ask for."""
    return Placement(cpu=args.cpu, reader_cpu=args.reader_cpu, rt=args.rt)


def placement_error(where: Placement, ncpu: int) -> str:
    """What is wrong with ``where`` on a machine of ``ncpu`` CPUs, as one error line ('' if
    nothing)."""
    last = ncpu - 1
    if not 0 <= where.cpu <= last:
        return f"--cpu: this machine has CPUs 0 to {last}, got {where.cpu}"
    if where.reader_cpu >= 0 and not where.reader_cpu <= last:
        return f"--reader-cpu: this machine has CPUs 0 to {last}, got {where.reader_cpu}"
    if where.reader_cpu == where.cpu:
        return (f"--reader-cpu: CPU {where.cpu} is --cpu already; give another CPU, or leave "
                "--reader-cpu out to run the reader with the sender")
    return ""
