"""The numbers a person reads first: one dict per run, with labels and units.

Values come from the run's metadata summary where the simulator computed them (peaks are
sampled after every event, not only at traced rows) and from the trace otherwise, so a
trace from a capture or an importer, which has no tcpsim summary, still gets a table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from tcpsim.engine import counts
from tcpsim.report import extract
from tcpsim.report.trace import Trace


@dataclass(frozen=True)
class Field:
    """One summary line: key, label shown to people, unit (bytes, count, s, bit/s, text)."""

    key: str
    label: str
    unit: str
    hint: str = ""


SUMMARY_FIELDS: tuple[Field, ...] = (
    Field("peak_sk_rmem_alloc", "peak memory (skmem_r)", "bytes",
          "highest sk_rmem_alloc: truesize charged to the receive queues"),
    Field("peak_sk_rcvbuf", "peak limit (skmem_rb)", "bytes", "highest sk_rcvbuf"),
    Field("peak_recv_q", "peak Recv-Q", "bytes", "most bytes queued and unread"),
    Field("final_sk_rmem_alloc", "memory at the end", "bytes", "sk_rmem_alloc when the run ended"),
    Field("zero_windows_sent", "windows closed to zero", "count",
          "times the window went from open to zero: TcpExtTCPToZeroWindowAdv (else: from "
          "the trace)"),
    Field("zero_window_segments", "zero-window segments", "count",
          "segments the receiver sent with a zero window: every ACK of a closed window"),
    Field("want_zero_window", "zero window wanted, not sent", "count",
          "TcpExtTCPWantZeroWindowAdv: the never-shrink rule kept the window open"),
    Field("drops", "drops for memory or window", "count",
          "data segments dropped for want of memory or window: TcpExtTCPRcvQDrop + TCPOFODrop "
          "+ TCPZeroWindowDrop + BeyondWindow (what `tcpsim run` calls drops)"),
    Field("data_segments_dropped", "data segments dropped", "count",
          "drop rows carrying data, any reason (also duplicates: TCP_OLD_DATA)"),
    Field("segments_dropped", "segments dropped", "count",
          "every drop row, zero-length segments too (pure ACKs, probes)"),
    Field("drop_reasons", "drop reasons", "text", "kernel drop reasons of the dropped data"),
    Field("collapses", "collapses", "count", "receive-queue collapses (trace event 'collapse')"),
    Field("stalls", "stalls", "count",
          "gaps >= 200 ms with no data arriving although the sender had data"),
    Field("stalled_s", "time stalled", "s", "total length of the stalls"),
    Field("goodput_bps", "goodput", "bit/s", "bytes read by the application / duration"),
    Field("bytes_read", "delivered to the application", "bytes", "bytes read"),
    Field("retransmits", "retransmitted segments", "count",
          "TcpRetransSegs of the sender: segments sent again"),
    Field("rto_timeouts", "RTO timeouts (TcpExtTCPTimeouts)", "count",
          "TcpExtTCPTimeouts: expiries of the retransmission timer with the window open (an "
          "expiry against a zero window acts as a probe and is not counted)"),
    Field("rto_fired", "RTO timer expiries", "count",
          "every expiry of the sender's retransmission timer (trace: timer rto), zero window "
          "or not: the event strip's RTO row"),
    Field("window_probes", "zero-window probes", "count", "TcpExtTCPWinProbe"),
    Field("error", "error", "text", "socket error, if the connection died"),
    Field("died_at_s", "died at", "s", "when the connection died"),
)
# Two-way runs ([receiver.writer]): the other direction, received by the sender end.
REVERSE_FIELDS: tuple[Field, ...] = (
    Field("rev_bytes_read", "back: delivered to the sender end", "bytes",
          "bytes the sender end's reader read ([sender.reader])"),
    Field("rev_goodput_bps", "back: goodput", "bit/s", "rev_bytes_read / duration"),
    Field("rev_bytes_written", "back: written at the receiver end", "bytes",
          "bytes the receiver end's writer wrote ([receiver.writer])"),
    Field("rev_peak_sk_rmem_alloc", "back: peak memory (skmem_r)", "bytes",
          "highest sk_rmem_alloc of the sender end's socket"),
    Field("rev_zero_windows_sent", "back: zero windows sent", "count",
          "TcpExtTCPToZeroWindowAdv of the sender end's socket"),
    Field("rev_window_probes", "back: zero-window probes", "count",
          "TcpExtTCPWinProbe of the receiver end's socket"),
    Field("rev_drops", "back: data segments dropped", "count",
          "receive-queue, OFO, zero-window and beyond-window drops at the sender end"),
)
FIELDS_BY_KEY: dict[str, Field] = {f.key: f for f in SUMMARY_FIELDS + REVERSE_FIELDS}

MARK_FIELDS: dict[str, str] = {"drop": "segments_dropped", "zero window": "zero_window_segments",
                               "RTO": "rto_fired", "retransmit": "retransmits",
                               "probe": "window_probes"}
"""Chart marks that a summary field counts: the chart names them with the field's label,
so the legend's count and the table's are the same number under the same name."""


def mark_label(kind: str) -> str:
    """How charts name a kind of mark (`extract.all_marks` keys)."""
    return FIELDS_BY_KEY[MARK_FIELDS[kind]].label if kind in MARK_FIELDS else kind


def _peak(tr: Trace, column: str) -> int:
    y = tr.col(column)[tr.rows(sock="rcv")]
    return int(y.max()) if len(y) else 0


def _last(tr: Trace, column: str) -> int:
    y = tr.col(column)[tr.rows(sock="rcv")]
    return int(y[-1]) if len(y) else 0


def _zero_window_episodes(tr: Trace) -> int:
    """Transitions of the receiver's advertised window from non-zero to zero."""
    idx = tr.rows(sock="rcv", event="tx")
    w = tr.col("win_raw")[idx]
    w = w[w >= 0]
    if not len(w):
        return 0
    z = w == 0
    return int(z[0]) + int(np.count_nonzero(z[1:] & ~z[:-1]))


def _reverse(s: Mapping[str, Any], duration: float) -> dict[str, Any]:
    """REVERSE_FIELDS from a two-way run's summary (rev_*); empty for one-way runs."""
    if "rev_bytes_read" not in s:
        return {}
    read = s["rev_bytes_read"]
    return {"rev_bytes_read": read, "rev_bytes_written": s["rev_bytes_written"],
            "rev_goodput_bps": round(read * 8 / duration) if duration else 0,
            "rev_peak_sk_rmem_alloc": s["rev_peak_sk_rmem_alloc"],
            "rev_zero_windows_sent": s["rev_zero_windows_sent"],
            "rev_window_probes": s["rev_window_probes"], "rev_drops": s["rev_drops"]}


def summarize(tr: Trace, meta: Mapping[str, Any] | None = None,
              min_stall_ns: int = extract.DEFAULT_STALL_NS) -> dict[str, Any]:
    """Summary values keyed as SUMMARY_FIELDS (plus duration_s and profile)."""
    meta = meta or {}
    s = dict(meta.get("summary") or {})
    c = dict(meta.get("counters") or {})
    duration = float(s.get("duration_s") or tr.end_s)
    died = s.get("died_at_s")
    stall_list = extract.stalls(tr, min_stall_ns,      # a dead connection stalls no more
                                end_s=min(duration, died) if died is not None else duration)
    drops = extract.drop_reasons(tr)
    read = s.get("bytes_read")
    if read is None and "bytes_read" not in s:       # present and None: unknown (a capture)
        d = extract.delivered(tr)
        read = int(d.y[-1]) if len(d.y) else 0
    zw = counts.zero_windows_sent(c)
    return {**_reverse(s, duration),
        "profile": meta.get("profile", ""),
        "duration_s": duration,
        "peak_sk_rmem_alloc": s.get("peak_sk_rmem_alloc", _peak(tr, "sk_rmem_alloc")),
        "peak_sk_rcvbuf": s.get("peak_sk_rcvbuf", _peak(tr, "sk_rcvbuf")),
        "peak_recv_q": s.get("peak_recv_q", _peak(tr, "recv_q")),
        "final_sk_rmem_alloc": s.get("final_sk_rmem_alloc", _last(tr, "sk_rmem_alloc")),
        "zero_windows_sent": zw if zw is not None else _zero_window_episodes(tr),
        "zero_window_segments": len(extract.zero_windows(tr)),
        "want_zero_window": c.get("TcpExtTCPWantZeroWindowAdv", s.get("want_zero_window")),
        "drops": s.get("drops", counts.drops(c)),
        "data_segments_dropped": sum(drops.values()),
        "segments_dropped": len(extract.drops(tr)),
        "drop_reasons": ", ".join(f"{r} {n}" for r, n in drops.items()),
        "collapses": len(extract.collapses(tr)),
        "stalls": len(stall_list),
        "stalled_s": round(sum(st.length_s for st in stall_list), 3),
        "goodput_bps": None if read is None else round(read * 8 / duration) if duration else 0,
        "bytes_read": read,
        "retransmits": s.get("retransmits", len(extract.retransmissions(tr))),
        "rto_timeouts": s.get("rto_timeouts", c.get("TcpExtTCPTimeouts")),
        "rto_fired": len(extract.sender_timers(tr, "rto", "RTO")),
        "window_probes": s.get("window_probes", len(extract.sender_timers(tr, "probe", "probe"))),
        "error": s.get("error") or "",
        "died_at_s": s.get("died_at_s"),
    }
