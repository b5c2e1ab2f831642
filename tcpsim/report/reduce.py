"""A long trace read for a report without holding its rows: streamed, reduced as it goes.

A 35-minute run has ~10 million rows; read whole, a report of it held 2.5 GB to draw a few
thousand points per chart. `reduce_trace()` reads the report's columns one batch at a time
and keeps, in a `Trace` of the same form, only the rows a report draws or counts from:

* the first `HEAD_ROWS` rows (the handshake, and the start of every chart);
* per time bin (`STATE_BINS` over the run), per plotted state series, the first, last,
  lowest and highest row -- what `downsample.minmax_bins` keeps of the whole trace, so
  every peak and dip survives;
* every event a report marks (drops, collapses, prunes, autotuning, zero windows,
  retransmissions, RTOs, probes, queued and out-of-order segments) while a kind has at
  most `downsample.MAX_MARKS`; past that, one mark per time bin with the number of events
  it stands for (what the charts draw of such a kind anyway), and the exact total;
* the rows either side of every edge of the rate charts' finest bins (the delivered curve
  is interpolated there: goodput is exact), and of every gap of at least `GAP_NS` between
  data segments reaching the receiver (stalls), with the sender's backlog (bytes written
  and not acknowledged) kept as a column of its own (`_written`) and the rows where it
  comes to or leaves zero;
* sums per finest rate bin of the payload sent and accepted and of the received
  segments by disposition (the rate and segment charts: exact).

Short traces (at most `REDUCE_ROWS` rows) are read whole, as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tcpsim.report.downsample import DEFAULT_RATE_BINS, MAX_MARKS, nice_width

REDUCE_ROWS = 1_000_000        # longer traces are reduced as they are read
HEAD_ROWS = 5_000
STATE_BINS = 2_000
GAP_NS = 10_000_000            # stalls shorter than this are not found in a reduced trace
BATCH_ROWS = 1 << 16

# state series the charts draw: (sock, event or None, column)
SERIES: tuple[tuple[str, str | None, str], ...] = (
    ("rcv", None, "sk_rmem_alloc"), ("rcv", None, "sk_rcvbuf"), ("rcv", None, "recv_q"),
    ("rcv", None, "rcv_ssthresh"), ("rcv", None, "window_clamp"), ("rcv", None, "rcv_wnd"),
    ("rcv", None, "copied_seq"), ("rcv", "tx", "win_scaled"),
    ("snd", None, "snd_wnd"), ("snd", None, "_inflight"),
)


@dataclass
class Reduced:
    """What a reduced trace carries beside its rows (`Trace.reduced`)."""

    # kind -> (indices of its marks among the kept rows, events per mark or None, total)
    marks: dict[str, tuple[np.ndarray, np.ndarray | None, int]] = field(default_factory=dict)
    # finest rate bins: width (s) and per-bin sums (see module docstring)
    fine_s: float = 1.0
    sums: dict[str, np.ndarray] = field(default_factory=dict)
    drop_reasons: dict[str, int] = field(default_factory=dict)
    rows: int = 0                       # rows of the whole trace


def fine_width(end_s: float) -> float:
    """The finest rate bin: a power of ten at most a tenth of the report's own bin width
    (any comparison's width, 1, 2 or 5 x 10^k and never below this run's, is a multiple)."""
    w = nice_width(end_s, DEFAULT_RATE_BINS) / 10
    return 10.0 ** math.floor(math.log10(w)) if w > 0 else 1.0


def end_ns_of(pf: pq.ParquetFile, meta: dict[str, Any]) -> int:
    """When the run ended (ns): its duration, else the last row's time."""
    dur = (meta.get("summary") or {}).get("duration_s")
    last = 0
    md = pf.metadata
    if md.num_row_groups:
        i = pf.schema_arrow.get_field_index("t_ns")
        st = md.row_group(md.num_row_groups - 1).column(i).statistics
        if st is not None and st.has_min_max:
            last = int(st.max)
        else:
            last = int(pf.read_row_group(md.num_row_groups - 1, columns=["t_ns"])
                       .column(0).to_numpy()[-1])
    return max(int(float(dur) * 1e9) if dur else 0, last, 1)


class _Strings:
    """A string column's codes over the whole trace (batches have their own dictionaries)."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self.index: dict[str, int] = {}

    def codes(self, col: pa.Array) -> np.ndarray:
        if not pa.types.is_dictionary(col.type):
            col = col.dictionary_encode()
        words = ["" if v is None else str(v) for v in col.dictionary.to_pylist()]
        remap = np.array([self.index.setdefault(w, len(self.index)) for w in words] or [0],
                         dtype=np.int32)
        if len(self.index) > len(self.values):
            self.values = list(self.index)
        idx = col.indices
        if idx.null_count:
            empty = self.index.setdefault("", len(self.index))
            self.values = list(self.index)
            raw = idx.fill_null(0).to_numpy(zero_copy_only=False)
            out = remap[raw]
            out[np.asarray(idx.is_null().to_numpy(zero_copy_only=False))] = empty
            return out
        return remap[idx.to_numpy(zero_copy_only=False)]

    def code(self, value: str) -> int:
        return self.index.get(value, -1)


def _edges_picks(b: np.ndarray) -> np.ndarray:
    """Positions of the first and last element of each run of equal values of `b`."""
    if not len(b):
        return np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(b[1:] != b[:-1])
    return np.asarray(np.unique(np.r_[0, change, change + 1, len(b) - 1]))


def _starts(b: np.ndarray) -> np.ndarray:
    """Positions of the first element of each run of equal values of `b`."""
    if not len(b):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, b[1:] != b[:-1]])


def _minmax_picks(b: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Positions of the first, last, lowest and highest element of each run of `b`."""
    if not len(b):
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    ends = np.r_[starts[1:], len(b)] - 1
    order = np.lexsort((y, b))
    return np.asarray(np.unique(np.concatenate([starts, ends, order[starts], order[ends]])))


class _Reducer:
    """The streaming state (what carries from one batch to the next)."""

    def __init__(self, end_ns: int, names: list[str], string_names: list[str]) -> None:
        self.end_ns = end_ns
        self.fine_ns = max(1, int(round(fine_width(end_ns / 1e9) * 1e9)))
        self.nfine = end_ns // self.fine_ns + 2
        self.names = names
        self.strings = {n: _Strings() for n in string_names}
        self.kept_ints: dict[str, list[np.ndarray]] = {n: [] for n in names}
        self.kept_ints["_written"] = []
        self.kept_strs: dict[str, list[np.ndarray]] = {n: [] for n in string_names}
        self.nkept = 0
        self.offset = 0
        self.sums = {k: np.zeros(self.nfine) for k in
                     ("wire", "accepted", "coalesced", "queued", "ofo")}
        self.mark_all: dict[str, list[np.ndarray]] = {}
        self.mark_total: dict[str, int] = {}
        self.mark_bin_row: dict[str, np.ndarray] = {}
        self.mark_bin_count: dict[str, np.ndarray] = {}
        self.drop_reasons: dict[str, int] = {}
        self.written = 0             # bytes the sender's application wrote so far
        self.max_end = -1            # highest end_seq the sender sent data up to
        self.last_arrival = -1       # t_ns of the last data segment at the receiver
        self.backlog_state = -1      # the sender's backlog was > 0 at its last row (1/0)
        self.zero_state = -1         # the receiver's last window on the wire was zero (1/0)
        self._global: list[np.ndarray] = []   # each batch's kept rows, numbered in the trace

    # -- one batch -------------------------------------------------------------------------

    def add(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        cols = {name: batch.column(i) for i, name in enumerate(batch.schema.names)}
        ints = {k: np.asarray(v.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
                for k, v in cols.items() if k not in self.strings}
        strs = {k: self.strings[k].codes(v) for k, v in cols.items() if k in self.strings}
        t = ints["t_ns"]
        keep = np.zeros(n, dtype=bool)
        if self.offset < HEAD_ROWS:
            keep[:HEAD_ROWS - self.offset] = True
        keep[[0, n - 1]] = True

        def is_(name: str, value: str) -> np.ndarray:
            c = self.strings[name].code(value) if name in self.strings else -1
            return np.asarray(strs[name] == c) if c >= 0 else np.zeros(n, dtype=bool)

        def col(name: str) -> np.ndarray:
            return ints.get(name, np.full(n, -1, dtype=np.int64))

        rcv, snd = is_("sock", "rcv"), is_("sock", "snd")
        ev = {e: is_("event", e) for e in ("rx", "tx", "drop", "write", "timer", "collapse",
                                          "prune", "autotune")}
        ln = col("len")
        sbin = np.clip(t * STATE_BINS // self.end_ns, 0, STATE_BINS - 1)
        fbin = np.clip(t // self.fine_ns, 0, self.nfine - 1)   # (a capture's times may
        # start below 0 or run past the duration)

        # the sender's backlog, its own column (the stall test reads it)
        written_col = np.full(n, -1, dtype=np.int64)
        s_idx = np.flatnonzero(snd)
        if len(s_idx):
            w = np.where(ev["write"][s_idx], np.maximum(ln[s_idx], 0), 0)
            cum = self.written + np.cumsum(w)
            self.written = int(cum[-1])
            written_col[s_idx] = cum
            una = col("snd_una")[s_idx]
            state = (cum - np.maximum(una - 1, 0) > 0).astype(np.int8)
            prev = np.r_[self.backlog_state, state[:-1]]
            keep[s_idx[state != prev]] = True
            self.backlog_state = int(state[-1])
        ints["_written"] = written_col
        nxt, una_all = col("snd_nxt"), col("snd_una")
        ints["_inflight"] = np.where(snd & (nxt >= 0) & (una_all >= 0), nxt - una_all, -1)

        # state series: per bin, first/last/lowest/highest
        for sock, event, name in SERIES:
            sel = (rcv if sock == "rcv" else snd)
            if event is not None:
                sel = sel & ev[event]
            y = ints.get(name)
            if y is None:
                continue
            idx = np.flatnonzero(sel & (y >= 0))
            keep[idx[_minmax_picks(sbin[idx], y[idx])]] = True
        # rows either side of each finest rate-bin edge (delivered curve, goodput)
        idx = np.flatnonzero(rcv & (col("copied_seq") >= 0))
        keep[idx[_edges_picks(fbin[idx])]] = True

        # data reaching the receiver: gaps (stalls), the lowest sequence (data_base)
        arr = np.flatnonzero(rcv & (ev["rx"] | ev["drop"]) & (ln > 0))
        if len(arr):
            at = t[arr]
            gaps = np.flatnonzero(np.diff(np.r_[self.last_arrival, at]) >= GAP_NS)
            keep[arr[gaps]] = True
            keep[arr[np.maximum(gaps - 1, 0)]] = True
            keep[arr[[0, -1, int(np.argmin(col("seq")[arr]))]]] = True
            self.last_arrival = int(at[-1])

        # window on the wire: the rows where it turns zero or non-zero (zero-window episodes)
        tx = np.flatnonzero(rcv & ev["tx"] & (col("win_raw") >= 0))
        if len(tx):
            z = (col("win_raw")[tx] == 0).astype(np.int8)
            keep[tx[z != np.r_[self.zero_state, z[:-1]]]] = True
            self.zero_state = int(z[-1])

        # rate sums per finest bin
        data = ln > 0
        for key, sel in (("wire", snd & ev["tx"] & data), ("accepted", rcv & ev["rx"] & data),
                         ("coalesced", rcv & ev["rx"] & data & is_("detail", "coalesced")),
                         ("queued", rcv & ev["rx"] & data & is_("detail", "queued")),
                         ("ofo", rcv & ev["rx"] & data & (is_("detail", "ofo")
                                                          | is_("detail", "ofo coalesced")))):
            i = np.flatnonzero(sel)
            if len(i):
                w = ln[i].astype(float) if key in ("wire", "accepted") else np.ones(len(i))
                self.sums[key] += np.bincount(fbin[i], weights=w, minlength=self.nfine)

        # marks
        marks = self._marks(n, rcv, snd, ev, is_, col, strs)
        drop_rows = np.flatnonzero(rcv & ev["drop"] & (ln != 0))
        if len(drop_rows) and "drop_reason" in strs:
            vals = self.strings["drop_reason"].values
            for c, k in zip(*np.unique(strs["drop_reason"][drop_rows], return_counts=True)):
                r = vals[c] or "?"
                self.drop_reasons[r] = self.drop_reasons.get(r, 0) + int(k)
        mark_bins = np.clip((t / self.end_ns * MAX_MARKS).astype(np.int64), 0, MAX_MARKS - 1)
        for kind, idx in marks.items():
            total = self.mark_total.get(kind, 0)
            room = max(0, MAX_MARKS + 1 - total)
            keep[idx[:room]] = True
            self.mark_total[kind] = total + len(idx)
            if kind not in self.mark_bin_row:
                self.mark_bin_row[kind] = np.full(MAX_MARKS, -1, dtype=np.int64)
                self.mark_bin_count[kind] = np.zeros(MAX_MARKS, dtype=np.int64)
            b = mark_bins[idx]
            self.mark_bin_count[kind] += np.bincount(b, minlength=MAX_MARKS)
            first = idx[_starts(b)]
            fb = mark_bins[first]
            new = self.mark_bin_row[kind][fb] < 0
            keep[first[new]] = True
            # kept-row ids are known once `keep` is final: store global row numbers now
            self.mark_bin_row[kind][fb[new]] = self.offset + first[new]
            self.mark_all.setdefault(kind, []).append(self.offset + idx[:room])

        kept = np.flatnonzero(keep)
        for k in self.kept_ints:
            if k in ints:
                self.kept_ints[k].append(ints[k][kept])
        for k in self.kept_strs:
            self.kept_strs[k].append(strs[k][kept])
        self._global.append(self.offset + kept)
        self.nkept += len(kept)
        self.offset += n

    def _marks(self, n: int, rcv: np.ndarray, snd: np.ndarray, ev: dict[str, np.ndarray],
               is_: Callable[[str, str], np.ndarray], col: Callable[[str], np.ndarray],
               strs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Rows of each mark kind in this batch (extract.all_marks's selections)."""
        ln = col("len")
        syn = np.zeros(n, dtype=bool)
        if "flags" in strs:
            vals = self.strings["flags"].values
            with_s = [i for i, v in enumerate(vals) if "S" in v]
            syn = np.isin(strs["flags"], with_s)
        out = {
            "zero window": np.flatnonzero(rcv & ev["tx"] & (col("win_raw") == 0) & ~syn),
            "drop": np.flatnonzero(rcv & ev["drop"]),
            "collapse": np.flatnonzero(rcv & ev["collapse"]),
            "prune": np.flatnonzero(rcv & ev["prune"]),
            "autotune": np.flatnonzero(rcv & ev["autotune"]),
            "RTO": np.flatnonzero(snd & ev["timer"] & is_("detail", "rto")),
            "probe": np.flatnonzero(snd & ev["timer"] & is_("detail", "probe")),
            "queued": np.flatnonzero(rcv & ev["rx"] & (ln > 0) & is_("detail", "queued")),
            "ofo": np.flatnonzero(rcv & ev["rx"] & (ln > 0) & (is_("detail", "ofo")
                                                            | is_("detail", "ofo coalesced"))),
        }
        tx = np.flatnonzero(snd & ev["tx"] & (ln > 0))
        if len(tx):
            end = col("end_seq")[tx]
            prev = np.maximum.accumulate(np.r_[self.max_end, end[:-1]])
            out["retransmit"] = tx[col("seq")[tx] < prev]
            self.max_end = max(self.max_end, int(end.max()))
        else:
            out["retransmit"] = tx
        return out

    # -- the result ----------------------------------------------------------------------------

    def finish(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], Reduced]:
        glob = np.concatenate(self._global) if self._global else np.zeros(0, dtype=np.int64)
        ints = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64)
                for k, v in self.kept_ints.items() if v}
        strs = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int32)
                for k, v in self.kept_strs.items()}
        red = Reduced(fine_s=self.fine_ns / 1e9, sums=self.sums,
                      drop_reasons=dict(sorted(self.drop_reasons.items(), key=lambda kv: -kv[1])),
                      rows=self.offset)
        for kind, total in self.mark_total.items():
            if total <= MAX_MARKS:
                rows = np.concatenate(self.mark_all[kind]) if self.mark_all[kind] \
                    else np.zeros(0, dtype=np.int64)
                red.marks[kind] = (np.searchsorted(glob, rows), None, total)
            else:
                b = np.flatnonzero(self.mark_bin_row[kind] >= 0)
                red.marks[kind] = (np.searchsorted(glob, self.mark_bin_row[kind][b]),
                                   self.mark_bin_count[kind][b], total)
        return ints, strs, red


def reduce_trace(path: Any, names: list[str], string_names: list[str],
                 meta: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any], Reduced]:
    """Stream the columns `names` of the trace at `path` through the reduction: (integer
    columns, {string column: (codes, values)}, what else the report needs)."""
    pf = pq.ParquetFile(path, read_dictionary=string_names)
    red = _Reducer(end_ns_of(pf, meta), [n for n in names if n not in string_names],
                   string_names)
    # a row group at a time (iter_batches kept what it had read: +270 MB over 9.4 M rows)
    for i in range(pf.num_row_groups):
        for batch in pf.read_row_group(i, columns=names).to_batches(max_chunksize=BATCH_ROWS):
            red.add(batch)
    ints, codes, extra = red.finish()
    strs = {k: (codes[k], red.strings[k].values) for k in string_names}
    return ints, strs, extra
