"""What a search maximises: one number per workload, higher = the policy does worse.

Each objective reads one run's summary and counters (the numbers `tcpsim run` prints), and
the ratio objectives also the reference run of the same workload (tcpsim.searching.reference:
the same kernel with tcp_clamp_window's raise of sk_rcvbuf removed, i.e. what receive
autotuning alone gives). With `[search.vs]` a search maximises the DIFFERENCE: the objective
under `[search]` minus the objective under `[search.vs]`, each side with its own reference.

Host pressure (tcp_mem shared by many sockets) joins as one more Objective reading a host's
summary once tcpsim simulates hosts; the search driver needs no other change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

Outcome = tuple[Mapping[str, Any], Mapping[str, int]]       # summary, counters


@dataclass(frozen=True)
class Objective:
    """One objective: how to read it, whether it needs the reference run, when it is a
    finding by default (`threshold`, as a value or a difference)."""

    name: str
    description: str
    value: Callable[[Outcome, "Outcome | None"], float]
    threshold: float
    reference: bool = False
    needs_vs: bool = False
    trace: bool = False           # reads what only the run's trace tells (searching/stall.py)


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 0.0


def _ratio(num_key: str) -> Callable[[Outcome, "Outcome | None"], float]:
    def value(run: Outcome, ref: "Outcome | None") -> float:
        assert ref is not None
        den = _num(ref[0].get("peak_sk_rcvbuf")) or 1.0
        return _num(run[0].get(num_key)) / den
    return value


def _inwindow_drops(run: Outcome, ref: "Outcome | None") -> float:
    """Data that passed tcp_sequence() (in the window) and was dropped for want of memory:
    TcpExtTCPRcvQDrop (in order) + TcpExtTCPOFODrop (out of order). Segments beyond the
    window (BeyondWindow) or at a zero window (TCPZeroWindowDrop) are not in-window."""
    c = run[1]
    return float(c.get("TcpExtTCPRcvQDrop", 0) + c.get("TcpExtTCPOFODrop", 0))


def _death(run: Outcome, ref: "Outcome | None") -> float:
    """0 if the connection lived; else 1 + the share of the run it was dead (earlier = more)."""
    s = run[0]
    died, dur = s.get("died_at_s"), _num(s.get("duration_s")) or 1.0
    return 0.0 if died is None else 1.0 + max(0.0, dur - _num(died)) / dur


def _goodput(run: Outcome, ref: "Outcome | None") -> float:
    """Minus the goodput (Mbit/s): the difference of two policies is the goodput lost."""
    return -_num(run[0].get("goodput_mbps"))


OBJECTIVES: dict[str, Objective] = {o.name: o for o in (
    Objective("rcvbuf_ratio", "peak sk_rcvbuf / peak sk_rcvbuf of autotuning alone",
              _ratio("peak_sk_rcvbuf"), 4.0, reference=True),
    Objective("rmem_ratio", "peak sk_rmem_alloc / peak sk_rcvbuf of autotuning alone",
              _ratio("peak_sk_rmem_alloc"), 4.0, reference=True),
    Objective("inwindow_drops", "in-window data segments dropped (TCPRcvQDrop + TCPOFODrop)",
              _inwindow_drops, 1.0),
    Objective("drops", "data segments dropped (the summary's drops: RcvQDrop + OFODrop + "
              "ZeroWindowDrop + BeyondWindow)", lambda r, _: _num(r[0].get("drops")), 1.0),
    Objective("zero_windows", "times the window closed to zero (TcpExtTCPToZeroWindowAdv): "
              "stalls", lambda r, _: _num(r[0].get("zero_windows_sent")), 1.0),
    Objective("window_probes", "zero-window probes the sender sent: time stalled, in probes",
              lambda r, _: _num(r[0].get("window_probes")), 1.0),
    Objective("time_stalled", "seconds the sender was held up by the receiver's window: "
              "tcpi_rwnd_limited (TCP_CHRONO_RWND_LIMITED), zero windows included",
              lambda r, _: _num(r[0].get("rwnd_limited_s")), 0.1, trace=True),
    Objective("zero_window_time", "seconds the receiver's advertised window was zero",
              lambda r, _: _num(r[0].get("zero_window_s")), 0.1, trace=True),
    Objective("death", "the connection died (1 + the share of the run it was dead)", _death, 1.0),
    Objective("goodput_lost", "goodput lost against [search.vs] (Mbit/s)", _goodput, 0.1,
              needs_vs=True),
)}


def evaluate(objective: Objective, run: Outcome, ref: "Outcome | None") -> float:
    """The objective of one side (its run, and its reference run when the objective needs one)."""
    return float(objective.value(run, ref))
