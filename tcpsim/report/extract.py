"""What a report reads from a trace: state series, rates and marked events.

Everything here is a pure function of a `Trace` and returns plain arrays in seconds and
bytes; the figure code only draws. Receiver state comes from the receiver's rows
(sock 'rcv'), the sender's from sock 'snd'. -1 means "unknown" and is never plotted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from tcpsim.report.downsample import nice_width
from tcpsim.report.trace import Trace

# The marks a report knows, in the order the event timeline lists them.
MARK_KINDS: tuple[str, ...] = (
    "zero window", "drop", "collapse", "prune", "autotune", "retransmit", "RTO", "probe",
    "queued", "ofo",
)
DEFAULT_STALL_NS = 200_000_000     # TCP_RTO_MIN: a gap this long is not an idle ACK clock


@dataclass
class Series:
    """A plottable series: times (s), values and how to join the points."""

    name: str
    t: np.ndarray
    y: np.ndarray
    shape: str = "hv"          # "hv": the value holds until the next point; "linear"


@dataclass
class Marks:
    """Events to mark: times (s), a y position to draw them at, and hover text."""

    kind: str
    t: np.ndarray
    y: np.ndarray
    text: np.ndarray | None       # hover text per mark; None when there are too many
    # a reduced trace's kind of more than MAX_MARKS events: one mark per time bin, with
    # the events each stands for, and the kind's total (None: one mark per event)
    counts: np.ndarray | None = None
    total: int | None = None

    def __len__(self) -> int:
        return len(self.t) if self.total is None else self.total


@dataclass
class Stall:
    """An interval with no data arriving although the sender had data to send."""

    start_s: float
    end_s: float

    @property
    def length_s(self) -> float:
        return self.end_s - self.start_s


# -- receiver state --------------------------------------------------------------------------

def handshake_rows(tr: Trace, sock: str = "rcv") -> int:
    """How many of `sock`'s rows belong to the handshake (up to its first segment without
    SYN). Before the handshake completes, limits such as window_clamp hold placeholder
    values (hundreds of MB) that would flatten every chart."""
    idx = tr.rows(sock=sock, event=("rx", "tx"))
    if not len(idx) or not tr.has("flags"):
        return 0
    flags = tr.text("flags").take(idx[:64])
    done = np.flatnonzero(np.array(["S" not in f and f != "" for f in flags], dtype=bool))
    if not len(done):
        return 0
    return int(np.searchsorted(tr.rows(sock=sock), idx[done[0]]))


def rcv_rows(tr: Trace) -> np.ndarray:
    """The receiver's rows after the handshake."""
    return tr.rows(sock="rcv")[handshake_rows(tr):]


def rcv_series(tr: Trace, column: str, name: str | None = None) -> Series:
    """A receiver state column over time (rows after the handshake where it is known)."""
    idx = rcv_rows(tr)
    y = tr.col(column)[idx]
    keep = y >= 0
    return Series(name or column, tr.t_s[idx][keep], y[keep])


def advertised_window(tr: Trace) -> Series:
    """The window the receiver put on the wire: `win_scaled` of its transmitted segments."""
    idx = tr.rows(sock="rcv", event="tx")
    idx = idx[tr.col("win_scaled")[idx] >= 0]
    rows = rcv_rows(tr)
    if len(rows):
        idx = idx[idx >= rows[0]]
    return Series("advertised window", tr.t_s[idx], tr.col("win_scaled")[idx])


def data_base(tr: Trace) -> int:
    """Sequence number of the first data byte (copied_seq when the first data arrived)."""
    idx = tr.rows(sock="rcv", event=("rx", "drop"))
    idx = idx[tr.col("len")[idx] > 0]
    if len(idx):
        return int(min(tr.col("seq")[idx].min(), tr.col("copied_seq")[idx[0]]))
    return 1


def delivered(tr: Trace, end_s: float | None = None, end_bytes: int | None = None) -> Series:
    """Bytes handed to the application so far (copied_seq from the first data byte).

    Reads that change nothing but copied_seq are batched into one `read` row, but every
    receiver row carries copied_seq, so the curve is drawn through all of them, joined by
    straight lines (the reader's pace between rows). A run's last reads may come after its
    last row: `end_s`/`end_bytes` (the run's duration and bytes read) close the curve."""
    idx = tr.rows(sock="rcv")
    cs = tr.col("copied_seq")[idx]
    keep = cs >= 0
    base = data_base(tr)
    t, y = tr.t_s[idx][keep], np.maximum(cs[keep] - base, 0)
    if end_s is not None and end_bytes is not None and (not len(t) or end_s > t[-1]):
        t, y = np.r_[t, end_s], np.r_[y, max(end_bytes, int(y[-1]) if len(y) else 0)]
    return Series("delivered to the application", t, y, shape="linear")


# -- rates -------------------------------------------------------------------------------------

def rate_width(end_s: float) -> float:
    """The bin width (s) for rate charts of a run lasting `end_s`."""
    return nice_width(end_s)


def wire_rate(tr: Trace, width: float, end_s: float, sock: str = "snd",
              event: str = "tx") -> Series:
    """Payload bits per second per bin: sent by the sender (snd tx, retransmissions
    included) or accepted by the receiver (rcv rx)."""
    name = "sent on the wire" if sock == "snd" else "accepted by the receiver"
    if tr.reduced is not None:
        t, sums = _rebinned(tr, "wire" if sock == "snd" else "accepted", width, end_s)
        return Series(name, t, sums * 8 / width, shape="hv")
    idx = tr.rows(sock=sock, event=event)
    ln = tr.col("len")[idx]
    idx, ln = idx[ln > 0], ln[ln > 0]
    t, sums = _bin_sums_ns(tr.col("t_ns")[idx], ln.astype(float), width, end_s)
    return Series(name, t, sums * 8 / width, shape="hv")


def _bin_sums_ns(t_ns: np.ndarray, w: np.ndarray, width: float,
                 end_s: float) -> tuple[np.ndarray, np.ndarray]:
    """`bin_sums` on integer times: a row at a bin's edge falls in the bin it starts,
    whatever the float rounding of its time in seconds (and in the bin a reduced trace's
    sums put it: reduce.py)."""
    nb = max(1, int(np.ceil(end_s / width))) if end_s > 0 else 1
    wn = max(1, int(round(width * 1e9)))
    b = t_ns // wn
    ok = (b >= 0) & (t_ns <= nb * wn)
    sums = np.bincount(np.minimum(b[ok], nb - 1), weights=w[ok], minlength=nb)[:nb]
    edges = np.arange(nb + 1) * width
    return (edges[:-1] + edges[1:]) / 2, sums


def _rebinned(tr: Trace, key: str, width: float, end_s: float) -> tuple[np.ndarray, np.ndarray]:
    """A reduced trace's sums per finest bin (reduce.py) added up into bins of `width`
    over [0, end_s], as `bin_sums` would give them from every row."""
    assert tr.reduced is not None
    fine, f = tr.reduced.sums[key], tr.reduced.fine_s
    k = max(1, int(round(width / f)))
    nb = max(1, int(np.ceil(end_s / width))) if end_s > 0 else 1
    out = np.zeros(nb)
    m = min(len(fine), nb * k)
    np.add.at(out, np.minimum(np.arange(m) // k, nb - 1), fine[:m])
    if len(fine) > m:                       # rows at end_s itself fall in the last bin
        out[-1] += fine[m:].sum()
    edges = np.arange(nb + 1) * width
    return (edges[:-1] + edges[1:]) / 2, out


def goodput(d: Series, width: float, end_s: float) -> Series:
    """Bits per second handed to the application, per bin, from the delivered curve `d`."""
    nb = max(1, int(np.ceil(end_s / width)))
    edges = np.arange(nb + 1) * width
    if len(d.t) == 0:
        return Series("goodput", (edges[:-1] + edges[1:]) / 2, np.zeros(nb))
    at = np.interp(edges, d.t, d.y.astype(float), left=0.0)
    return Series("goodput", (edges[:-1] + edges[1:]) / 2, np.diff(at) * 8 / width)


def sender_inflight(tr: Trace) -> Series:
    """Bytes in flight at the sender (snd_nxt - snd_una)."""
    idx = tr.rows(sock="snd")
    una, nxt = tr.col("snd_una")[idx], tr.col("snd_nxt")[idx]
    keep = (una >= 0) & (nxt >= 0)
    return Series("in flight (snd_nxt - snd_una)", tr.t_s[idx][keep], (nxt - una)[keep])


def sender_window(tr: Trace) -> Series:
    """The receiver's window as the sender holds it (snd_wnd)."""
    idx = tr.rows(sock="snd")
    y = tr.col("snd_wnd")[idx]
    keep = y >= 0
    return Series("snd_wnd (sender's view)", tr.t_s[idx][keep], y[keep])


# -- marks -------------------------------------------------------------------------------------

MAX_TEXT = 5000     # marks of one kind beyond this get no per-mark hover text (HTML size)


def _marks(tr: Trace, kind: str, idx: np.ndarray, y: np.ndarray | Callable[[np.ndarray], np.ndarray],
           describe: Callable[[np.ndarray], Iterable[str]]) -> Marks:
    """Marks at rows `idx`; `y` their heights (or a function of the rows giving them);
    `describe(idx)` writes their hover text (skipped when there are more than MAX_TEXT of
    them). A reduced trace's marks are the rows it kept for the kind (reduce.py)."""
    counts = total = None
    if tr.reduced is not None and kind in tr.reduced.marks:
        idx, counts, total = tr.reduced.marks[kind]
        if counts is None:
            total = None
    elif tr.reduced is not None:
        idx = idx[:0]
    ys = y(idx) if callable(y) else y
    text = np.asarray(list(describe(idx)), dtype=object) \
        if len(idx) <= MAX_TEXT and counts is None else None
    return Marks(kind, tr.t_s[idx], np.asarray(ys), text, counts, total)


def _segments(tr: Trace, prefix: str) -> Callable[[np.ndarray], Iterable[str]]:
    def describe(idx: np.ndarray) -> Iterable[str]:
        seq, ln = tr.col("seq")[idx], tr.col("len")[idx]
        return (f"{prefix} seq {s} len {n}" for s, n in zip(seq, ln))
    return describe


def _not_syn(tr: Trace, idx: np.ndarray) -> np.ndarray:
    """The rows of `idx` whose segment has no SYN flag."""
    return idx[~tr.text("flags").contains("S")[idx]]


def zero_windows(tr: Trace) -> Marks:
    """Segments the receiver sent with a zero window (SYNs excluded)."""
    idx = tr.rows(sock="rcv", event="tx")
    idx = _not_syn(tr, idx[tr.col("win_raw")[idx] == 0])
    rmem = tr.col("sk_rmem_alloc")
    return _marks(tr, "zero window", idx, lambda ix: np.zeros(len(ix)),
                  lambda ix: (f"zero window, skmem_r {r}" for r in rmem[ix]))


def drops(tr: Trace, data_only: bool = False) -> Marks:
    """Segments the receiver dropped, with the kernel drop reason."""
    idx = tr.rows(sock="rcv", event="drop")
    if data_only:
        idx = idx[tr.col("len")[idx] != 0]

    def describe(ix: np.ndarray) -> Iterable[str]:
        reasons, details = tr.text("drop_reason").take(ix), tr.text("detail").take(ix)
        return (f"{b}: {r or '?'} ({d})"
                for b, r, d in zip(_segments(tr, "drop")(ix), reasons, details))
    return _marks(tr, "drop", idx, lambda ix: tr.col("sk_rmem_alloc")[ix], describe)


def drop_reasons(tr: Trace, data_only: bool = True) -> dict[str, int]:
    """Dropped segments per drop reason. By default only segments that carried data (or
    whose length is unknown, e.g. skbs pruned from the out-of-order queue): a zero-window
    probe is 'dropped' as an old sequence by design."""
    if tr.reduced is not None and data_only:
        return dict(tr.reduced.drop_reasons)
    idx = tr.rows(sock="rcv", event="drop")
    if data_only:
        idx = idx[tr.col("len")[idx] != 0]
    reasons = tr.text("drop_reason").take(idx)
    out: dict[str, int] = {}
    for r in reasons:
        out[r or "?"] = out.get(r or "?", 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def collapses(tr: Trace) -> Marks:
    """Receive-queue collapses (event 'collapse'), with their cost if the trace has it."""
    idx = tr.rows(sock="rcv", event="collapse")

    def describe(ix: np.ndarray) -> Iterable[str]:
        cost, queued = tr.col("collapse_ns")[ix], tr.col("len")[ix]
        return (f"collapse ({d}), {q} bytes queued" + (f", {c / 1e3:.1f} us" if c >= 0 else "")
                for d, q, c in zip(tr.text("detail").take(ix), queued, cost))
    return _marks(tr, "collapse", idx, lambda ix: tr.col("sk_rmem_alloc")[ix], describe)


def autotunes(tr: Trace) -> Marks:
    """Receive-buffer autotuning steps (event 'autotune', e.g. rcvbuf_grow)."""
    idx = tr.rows(sock="rcv", event="autotune")
    rb = tr.col("sk_rcvbuf")
    return _marks(tr, "autotune", idx, lambda ix: rb[ix],
                  lambda ix: (f"autotune {d}: skmem_rb {b}"
                              for d, b in zip(tr.text("detail").take(ix), rb[ix])))


def prunes(tr: Trace) -> Marks:
    """tcp_prune_queue() calls, if the trace records them (event 'prune')."""
    idx = tr.rows(sock="rcv", event="prune")
    return _marks(tr, "prune", idx, lambda ix: tr.col("sk_rmem_alloc")[ix],
                  lambda ix: (f"prune ({d})" for d in tr.text("detail").take(ix)))


def retransmissions(tr: Trace) -> Marks:
    """Sender segments carrying data below the highest sequence already sent."""
    idx = tr.rows(sock="snd", event="tx")
    idx = idx[tr.col("len")[idx] > 0]
    end = tr.col("end_seq")[idx]
    prev_max = np.maximum.accumulate(np.r_[-1, end[:-1]]) if len(end) else end
    idx = idx[tr.col("seq")[idx] < prev_max]
    return _marks(tr, "retransmit", idx, lambda ix: tr.col("snd_nxt")[ix] - tr.col("snd_una")[ix],
                  _segments(tr, "retransmit"))


def sender_timers(tr: Trace, detail: str, kind: str) -> Marks:
    """Sender timer expiries of one kind: 'probe' (persist timer) or 'rto'."""
    idx = tr.rows(sock="snd", event="timer", detail=detail)
    wnd = tr.col("snd_wnd")
    return _marks(tr, kind, idx, lambda ix: wnd[ix],
                  lambda ix: (f"{kind}, snd_wnd {w}" for w in wnd[ix]))


def segment_marks(tr: Trace, detail: str | tuple[str, ...], kind: str) -> Marks:
    """Received segments of one disposition: coalesced, queued (a new skb), ofo."""
    idx = tr.rows(sock="rcv", event="rx", detail=detail)
    idx = idx[tr.col("len")[idx] > 0]
    return _marks(tr, kind, idx, lambda ix: tr.col("sk_rmem_alloc")[ix], _segments(tr, kind))


def all_marks(tr: Trace) -> dict[str, Marks]:
    """Every mark kind the report draws, keyed by kind."""
    return {
        "zero window": zero_windows(tr),
        "drop": drops(tr),
        "collapse": collapses(tr),
        "prune": prunes(tr),
        "autotune": autotunes(tr),
        "retransmit": retransmissions(tr),
        "RTO": sender_timers(tr, "rto", "RTO"),
        "probe": sender_timers(tr, "probe", "probe"),
        "queued": segment_marks(tr, "queued", "queued"),
        "ofo": segment_marks(tr, ("ofo", "ofo coalesced"), "ofo"),
    }


def segment_counts(tr: Trace, width: float, end_s: float) -> dict[str, Series]:
    """Received data segments per bin by disposition: coalesced, queued, ofo."""
    out = {}
    for kind, detail in (("coalesced", ("coalesced",)), ("queued", ("queued",)),
                         ("ofo", ("ofo", "ofo coalesced"))):
        if tr.reduced is not None:
            out[kind] = Series(kind, *_rebinned(tr, kind, width, end_s), shape="hv")
            continue
        idx = tr.rows(sock="rcv", event="rx", detail=detail)
        idx = idx[tr.col("len")[idx] > 0]
        t, sums = _bin_sums_ns(tr.col("t_ns")[idx], np.ones(len(idx)), width, end_s)
        out[kind] = Series(kind, t, sums, shape="hv")
    return out


# -- stalls --------------------------------------------------------------------------------------

def sender_backlog(tr: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(times s, bytes written by the sending application and not yet acknowledged)."""
    idx = tr.rows(sock="snd")
    if tr.has("_written"):                  # a reduced trace: counted over every row
        written = tr.col("_written")[idx]
    else:
        is_write = tr.text("event").equals("write")[idx]
        written = np.cumsum(np.where(is_write, np.maximum(tr.col("len")[idx], 0), 0))
    acked = np.maximum(tr.col("snd_una")[idx] - 1, 0)
    return tr.t_s[idx], np.maximum(written - acked, 0)


def stalls(tr: Trace, min_gap_ns: int = DEFAULT_STALL_NS,
           end_s: float | None = None) -> list[Stall]:
    """Gaps of at least `min_gap_ns` between data segments reaching the receiver during
    which the sender never ran out of unacknowledged or unsent data (a gap while the
    writer idles is not a stall: its backlog drains to zero). The gap after the last
    segment counts up to `end_s` (default: the last row)."""
    idx = tr.rows(sock="rcv", event=("rx", "drop"))
    idx = idx[tr.col("len")[idx] > 0]
    if not len(idx):
        return []
    end_s = tr.end_s if end_s is None else end_s
    arrivals = np.r_[tr.t_s[idx], end_s]
    gaps = np.flatnonzero(np.diff(arrivals) >= min_gap_ns / 1e9)
    bt, backlog = sender_backlog(tr)
    out = []
    for g in gaps:
        start, stop = float(arrivals[g]), float(arrivals[g + 1])
        lo = np.searchsorted(bt, start, side="right") - 1
        hi = np.searchsorted(bt, stop, side="left")
        if lo >= 0 and backlog[lo:max(hi, lo + 1)].min() > 0:
            out.append(Stall(start, stop))
    return out
