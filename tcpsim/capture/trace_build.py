"""Turn the raw capture outputs into rows of the shared trace schema (tcpsim/trace/schema.py).

Sources and the rows they give:

* tcp_probe records  -> sock 'rcv', event 'rx' (state *before* the segment, see capturing.md)
* kfree_skb records  -> sock 'rcv', event 'drop' with drop_reason
* rcvbuf_grow/adjust -> sock 'rcv', event 'state', detail 'rcvbuf_grow' / 'rcv_space_adjust'
* the wire (pcap)    -> event 'tx': sock 'rcv' = the receiver's ACKs/windows, 'snd' = data
* socket samples     -> event 'state', detail 'sample' (SO_MEMINFO/TCP_INFO), both sockets
* app logs           -> 'snd' 'write' and 'rcv' 'read'

All times are CLOCK_MONOTONIC nanoseconds minus ``t0_ns``; pcap times (CLOCK_REALTIME) are
shifted by ``realtime_offset_ns`` (= realtime - monotonic, measured at capture start).
"""

from __future__ import annotations

from typing import Any, Iterable

from tcpsim.trace.schema import COLUMN_NAMES, INT_COLUMNS

Row = dict[str, Any]
U32 = 1 << 32


def blank(**kw: Any) -> Row:
    """A row with every column unknown (-1 / ''), then ``kw`` applied."""
    row: Row = {c: (-1 if c in INT_COLUMNS else "") for c in COLUMN_NAMES}
    row.update(kw)
    return row


class SeqMap:
    """Raw 32-bit sequence numbers -> unwrapped offsets from an ISN (first data byte = 1).

    Each value is placed in the 2**32 period closest to the previous result, so the mapping
    survives wrap-around as long as consecutive values are less than 2 GiB apart.
    """

    def __init__(self, isn: int) -> None:
        self.isn, self.last = isn, 0

    def __call__(self, raw: int) -> int:
        r = (raw - self.isn) % U32
        base = self.last - self.last % U32
        cand = min((base + r + k * U32 for k in (-1, 0, 1) if base + r + k * U32 >= 0),
                   key=lambda c: abs(c - self.last))
        self.last = cand
        return cand


def rx_detail(cur: dict[str, int], nxt: dict[str, int] | None) -> str:
    """What became of a segment, judged from the state before it and before the next one."""
    length = cur["data_len"]
    if length == 0:
        return "ack"
    if cur["seq"] != cur["rcv_nxt"]:
        delta = (cur["seq"] - cur["rcv_nxt"]) % U32
        return "ofo" if delta < (U32 >> 1) else "old"
    if nxt is None:
        return ""
    if nxt["rcvq_len"] == cur["rcvq_len"] + 1:
        return "queued"
    if nxt["rcvq_len"] == cur["rcvq_len"] and nxt["sk_rmem_alloc"] - cur["sk_rmem_alloc"] == length:
        return "coalesced"
    return ""


def probe_rows(probes: list[dict[str, int]], peer_isn: int, own_isn: int | None,
               t0_ns: int, consecutive: bool = True) -> list[Row]:
    """'rx' rows from tcp_probe records (one socket, time-ordered). ``consecutive`` says the
    records are every segment, so queued/coalesced can be judged from the next record."""
    rel = SeqMap(peer_isn)
    own = SeqMap(own_isn) if own_isn is not None else None
    out: list[Row] = []
    for i, p in enumerate(probes):
        nxt = probes[i + 1] if consecutive and i + 1 < len(probes) else None
        seq = rel(p["seq"])
        rcv_nxt = rel(p["rcv_nxt"])
        copied = rel(p["copied_seq"])
        out.append(blank(
            t_ns=p["t_ns"] - t0_ns, sock="rcv", event="rx", detail=rx_detail(p, nxt),
            seq=seq, end_seq=seq + ((p["end_seq"] - p["seq"]) % U32), len=p["data_len"],
            truesize=p["truesize"] if p["data_len"] > 0 else -1,
            sk_rmem_alloc=p["sk_rmem_alloc"], sk_rcvbuf=p["sk_rcvbuf"], rcv_nxt=rcv_nxt,
            copied_seq=copied, rcv_wup=rel(p["rcv_wup"]), rcv_wnd=p["rcv_wnd"],
            rcv_ssthresh=p["rcv_ssthresh"], window_clamp=p["window_clamp"], rcv_mss=p["rcv_mss"],
            scaling_ratio=p["scaling_ratio"], rcvq_space=p["rcvq_space"],
            rcv_rtt_us=p["rcv_rtt_us8"] >> 3, recv_q=rcv_nxt - copied, rcvq_len=p["rcvq_len"],
            snd_una=own(p["snd_una"]) if own else -1, snd_nxt=own(p["snd_nxt"]) if own else -1,
            snd_wnd=p["snd_wnd"],
        ))
    return out


def drop_rows(drops: list[dict[str, int]], reasons: dict[int, str], t0_ns: int) -> list[Row]:
    return [blank(t_ns=d["t_ns"] - t0_ns, sock="rcv", event="drop", detail="kfree_skb",
                  len=d["len"], drop_reason=reasons.get(d["reason"], str(d["reason"])))
            for d in drops]


def state_rows(grows: list[dict[str, int]], adjusts: list[dict[str, int]], t0_ns: int) -> list[Row]:
    rows = [blank(t_ns=g["t_ns"] - t0_ns, sock="rcv", event="state", detail="rcvbuf_grow",
                  sk_rcvbuf=g["rcvbuf"], rcv_ssthresh=g["rcv_ssthresh"],
                  window_clamp=g["window_clamp"], rcv_wnd=g["rcv_wnd"],
                  scaling_ratio=g["scaling_ratio"], rcvq_space=g["space"], rcv_rtt_us=g["rtt_us"],
                  recv_q=g["inq"], len=g["copied"]) for g in grows]
    rows += [blank(t_ns=a["t_ns"] - t0_ns, sock="rcv", event="state", detail="rcv_space_adjust",
                   rcvq_space=a["rcvq_space"], sk_rcvbuf=a["sk_rcvbuf"],
                   window_clamp=a["window_clamp"]) for a in adjusts]
    return rows


def wire_rows(rows: Iterable[dict[str, Any]], shift_ns: int) -> list[Row]:
    """Rows from tcpsim.capture.wire.rows() (times already relative to the pcap's own zero)."""
    return [blank(**{**r, "t_ns": int(r["t_ns"]) + shift_ns}) for r in rows]


def sample_rows(samples: list[dict[str, int]], sock: str, t0_ns: int) -> list[Row]:
    out = []
    for s in samples:
        out.append(blank(
            t_ns=s["t_ns"] - t0_ns, sock=sock, event="state", detail="sample",
            sk_rmem_alloc=s["sk_rmem_alloc"], sk_rcvbuf=s["sk_rcvbuf"],
            rcv_wnd=s["tcpi_rcv_wnd"], rcv_ssthresh=s["tcpi_rcv_ssthresh"],
            window_clamp=s["window_clamp"], rcv_mss=s["tcpi_rcv_mss"],
            rcvq_space=s["tcpi_rcv_space"],
            rcv_rtt_us=s["tcpi_rcv_rtt"] if s["tcpi_rcv_rtt"] >= 0 else -1,
            recv_q=s["inq"], snd_wnd=s["tcpi_snd_wnd"],
            snd_cwnd=s["tcpi_snd_cwnd"] if sock == "snd" else -1,
            rcv_nxt=s["tcpi_bytes_received"] + 1 if s["tcpi_bytes_received"] >= 0 else -1,
            snd_una=s["tcpi_bytes_acked"] + 1 if sock == "snd" and s["tcpi_bytes_acked"] >= 0 else -1,
        ))
    return out


def app_rows(events: list[tuple[int, str, int]], sock: str, t0_ns: int) -> list[Row]:
    """'write'/'read' rows from an endpoint's event log (blocked ticks kept as detail)."""
    out = []
    for t, kind, n in events:
        if kind in ("write", "read"):
            out.append(blank(t_ns=t - t0_ns, sock=sock, event=kind, detail="", len=n))
        elif kind == "write_blocked":
            out.append(blank(t_ns=t - t0_ns, sock=sock, event="write", detail="blocked", len=0))
    return out


def sort_rows(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r["t_ns"], r["sock"], r["event"]))
