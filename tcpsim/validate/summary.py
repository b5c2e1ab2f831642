"""The run summary of one trace: outcome classes and key figures, the same for a kernel
capture and a model run.

`scripts/capture_fixtures.py` writes one per capture into the fixtures' manifest.json
(`run_summaries`: every capture of a fixture, not only the one shipped as its file);
`tcpsim validate --plain` computes the same summary of each seed's model run and compares
the two distributions (tcpsim/validate/plain.py).
"""

from __future__ import annotations

from typing import Any

from tcpsim.validate.outcomes import CLASSES, outcomes
from tcpsim.validate.trace import TraceView

# the receiver's counters each run summary lists (0 when the kernel did not count any)
KEY_COUNTERS = ("TcpExtTCPRcvCoalesce", "TcpExtPruneCalled", "TcpExtTCPRcvCollapsed",
                "TcpExtTCPRcvQDrop", "TcpExtBeyondWindow", "TcpExtTCPWantZeroWindowAdv",
                "TcpExtTCPToZeroWindowAdv", "TcpExtTCPOFOQueue", "TcpExtTCPBacklogCoalesce")
SUMMARY_OUTCOMES = CLASSES       # the outcome classes a summary labels


def run_summary(v: TraceView, meta: dict[str, Any], end_ns: int) -> dict[str, Any]:
    """Outcome classes and key numbers of one run over [0, end_ns] of its trace `v`;
    `meta` gives the receiver's `counters` and the `summary` (a capture's: the sender's
    counters under `sender`; a model run's: `retransmits`)."""
    oc = outcomes(v, end_ns)
    rmem, rcvbuf = v.state["sk_rmem_alloc"], v.state["sk_rcvbuf"]
    acks = [a for a in v.acks if a.t_ns <= end_ns]
    first_zero = next((a.t_ns for a in acks if a.win == 0), None)
    at120 = min(end_ns, 120 * 10**9)
    summary = meta.get("summary") or {}
    sender = summary.get("sender")
    counters = meta.get("counters") or {}
    retrans = ((sender.get("counters") or {}).get("TcpRetransSegs", 0) if sender
               else summary.get("retransmits"))
    return {
        "outcomes": {k: oc.label(k) for k in SUMMARY_OUTCOMES},
        "stall_at_s": None if oc.stall_at_ns is None else round(oc.stall_at_ns / 1e9, 3),
        "first_zero_window_s": None if first_zero is None else round(first_zero / 1e9, 3),
        "final_sk_rmem_alloc": rmem.at(end_ns), "final_sk_rcvbuf": rcvbuf.at(end_ns),
        "sk_rmem_alloc_at_120s": rmem.at(at120), "sk_rcvbuf_at_120s": rcvbuf.at(at120),
        "peak_sk_rmem_alloc": max(rmem.upto(end_ns), default=None),
        "peak_sk_rcvbuf": max(rcvbuf.upto(end_ns), default=None),
        "bytes_received": (acks[-1].ack_seq - 1) if acks else None,
        "zero_window_acks": sum(1 for a in acks if a.win == 0),
        "counters": {k: counters.get(k, 0) for k in KEY_COUNTERS},
        "sender_retrans_segs": retrans,
        "wakeups": {side: {k: w[k] for k in ("n", "p50_ns", "p90_ns", "p99_ns", "max_ns")
                           if k in w} for side, w in (summary.get("wakeups") or {}).items()},
    }
