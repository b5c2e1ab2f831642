"""Outcome classes of a run: what a person asks first about a receive-path trace.

* memory    -- "unbounded" when `sk_rcvbuf` was raised past its initial value while
               `sk_rmem_alloc` >= `sk_rcvbuf` (the queue drags the buffer up, as
               `tcp_prune_queue()` -> `tcp_clamp_window()` does), else "bounded" (r stays below
               rb, or rb grows only by autotuning ahead of r);
* zero_window -- the receiver advertised a zero window at least once;
* drops     -- data was dropped: TcpExtTCPRcvQDrop + TCPOFODrop + TCPZeroWindowDrop +
               BeyondWindow > 0 (zero-window probes, counted only in sk_drops, are not drops);
* stall     -- after a zero-window ACK, `ack_seq` did not advance for `stall_gap` or more
               (the connection sat at a zero window); `stall_at` is that ACK's time.

Each class is computed the same way from a kernel trace and from a simulated one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tcpsim.validate.trace import TraceView

CLASSES = ("memory", "zero_window", "drops", "stall")
DROP_COUNTERS = ("TcpExtTCPRcvQDrop", "TcpExtTCPOFODrop", "TcpExtTCPZeroWindowDrop",
                 "TcpExtBeyondWindow")
DEFAULT_STALL_GAP_NS = 500_000_000
# the words of the yes/no classes (what a run has, what it has not); memory is named by value
LABELS = {"zero_window": ("zero window", "no zero window"), "drops": ("drops", "no drops"),
          "stall": ("stall", "no stall")}


@dataclass(frozen=True)
class Outcomes:
    """The outcome classes of one trace (None: the trace cannot tell)."""

    memory: str | None
    zero_window: bool | None
    drops: bool | None
    stall: bool | None
    stall_at_ns: int | None = None
    init_rcvbuf: int | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    def label(self, name: str) -> str:
        """One word for a class, e.g. 'unbounded', 'zero-window', 'no drops'."""
        v = getattr(self, name)
        if v is None:
            return "unknown"
        if name == "memory":
            return str(v)
        words = LABELS[name]
        return words[0] if v else words[1]


def outcomes(v: TraceView, end_ns: int, stall_gap_ns: int = DEFAULT_STALL_GAP_NS,
             counters_known: bool = True) -> Outcomes:
    """The outcome classes of a trace over [.., end_ns] (times on the view's own axis)."""
    rmem, rcvbuf = v.state["sk_rmem_alloc"], v.state["sk_rcvbuf"]
    init_rb = rcvbuf.first()
    memory: str | None = None
    if rmem.t and init_rb is not None:
        memory = "bounded"
        for t, r in zip(rmem.t, rmem.v):
            if t > end_ns:
                break
            rb = rcvbuf.at(t)
            if rb is not None and rb > init_rb and r >= rb:
                memory = "unbounded"
                break
    acks = [a for a in v.acks if a.t_ns <= end_ns]
    zero = any(a.win == 0 for a in acks) if acks else None
    drops = None
    if counters_known:
        drops = sum(int(v.counters.get(k, 0)) for k in DROP_COUNTERS) > 0
    stall_at = stall_start(acks, end_ns, stall_gap_ns) if acks else None
    return Outcomes(memory, zero, drops, None if not acks else stall_at is not None, stall_at,
                    init_rb)


def stall_start(acks: list, end_ns: int, gap_ns: int) -> int | None:
    """Time of the first zero-window ACK after which ack_seq stays put for gap_ns or more."""
    # next_adv[i]: when ack_seq first moves past acks[i].ack_seq (ACKs of one socket are
    # in sequence order, so one backward pass finds it)
    next_adv = [end_ns] * len(acks)
    for i in range(len(acks) - 2, -1, -1):
        nxt = acks[i + 1]
        next_adv[i] = nxt.t_ns if nxt.ack_seq > acks[i].ack_seq else next_adv[i + 1]
    for a, nxt in zip(acks, next_adv):
        if a.win == 0 and min(nxt, end_ns) - a.t_ns >= gap_ns:
            return a.t_ns
    return None
