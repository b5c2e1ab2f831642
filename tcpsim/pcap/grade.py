"""A graded score of a model run against a capture: how close, not only whether equal.

Exact window equality (validate's `ack_match`) is a cliff: five bytes a millisecond of reader
rate moves every window by a scale unit, and a model one unit off everywhere scores 0 %, the
same as one that is wrong in kind. The grade (0..1, higher is closer) combines what the wire
shows, each term in 0..1:

| term | weight | what |
|---|---|---|
| `windows` | 0.35 | kernel ACKs whose window the model matched within one window-scale unit (validate's pairing: same ack_seq, else the nearest) |
| `series` | 0.20 | 1 - the mean absolute difference of the advertised window over time (GRID samples from the first data segment to the end) over the largest window the kernel offered |
| `ack_count` | 0.15 | min / max of the two ACK counts |
| `ack_timing` | 0.10 | kernel ACKs whose paired model ACK came within ACK_TIME_NS of it (not those that placed a model read) |
| `zero_windows` | 0.10 | similarity of the counts of zero-window ACKs (a window of at most one scale unit), 1 - abs(m - k) / max(m, k) |
| `window_updates` | 0.10 | the same for window updates (same ACK, another window) |

The weights put the windows first (what the receive path decides), the events next (what a
user reads a capture for) and the timing last (the model's applications tick on a grid the
capture cannot give). The grade never scores what the wire cannot show (receiver memory).

An event count that is zero in both the capture and the model is no evidence: every model of
a receiver that never closed its window agrees with it, whether or not it matched a single
window. Such a term is left out (`terms` holds None) and the grade is the weighted mean of the
others (the weights renormalised). Scored as 1, as it was, the two terms gave 0.2 for nothing:
veth-gso-fast (tests/fixtures/pcaps) graded 0.62, "fair", with none of its 29 windows within a
unit. A term the capture has and the model has not (or the reverse) still scores 0.
"""

from __future__ import annotations

import bisect
from dataclasses import asdict, dataclass
from typing import Any

from tcpsim.validate.scores import match_acks
from tcpsim.validate.trace import Ack, TraceView

WEIGHTS = {"windows": 0.35, "series": 0.20, "ack_count": 0.15, "ack_timing": 0.10,
           "zero_windows": 0.10, "window_updates": 0.10}
ACK_TIME_NS = 1_000_000
GRID = 400


@dataclass
class Grade:
    """The terms, the counts behind them and the weighted total."""

    total: float
    terms: dict[str, float | None]    # None: no evidence either way (an event count 0 in both)
    kernel_acks: int
    model_acks: int
    within_unit: int
    exact: int
    zero_windows: tuple[int, int]        # (kernel, model)
    window_updates: tuple[int, int]
    series_distance: float | None

    @property
    def within_unit_fraction(self) -> float | None:
        return self.within_unit / self.kernel_acks if self.kernel_acks else None

    @property
    def exact_fraction(self) -> float | None:
        return self.exact / self.kernel_acks if self.kernel_acks else None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["within_unit_fraction"] = self.within_unit_fraction
        d["exact_fraction"] = self.exact_fraction
        return d


def events(acks: list[Ack], unit: int = 0) -> tuple[int, int]:
    """(zero-window ACKs, window updates) of a receiver's ACK list, by Wireshark's rules; a
    window of at most `unit` bytes counts as closed (the windows are scored within one scale
    unit: a model whose right edge ends a few bytes past the kernel's offers one unit where
    the kernel offered 0 -- tcp_select_window() never shrinks, it rounds the rest up)."""
    zero = upd = 0
    prev: Ack | None = None
    for a in acks:
        if a.win <= unit:
            zero += 1
        if prev is not None and prev.ack_seq == a.ack_seq and prev.win != a.win:
            upd += 1
        prev = a
    return zero, upd


def scale_unit(acks: list[Ack]) -> int:
    """The window-scale unit of a receiver's ACKs (win / win_raw), 0 when unknown."""
    for a in acks:
        if a.win_raw > 0 and a.win % a.win_raw == 0:
            return a.win // a.win_raw
    return 0


def similarity(k: int, m: int) -> float:
    return 1.0 if k == m else 1.0 - abs(k - m) / max(k, m)


def event_term(k: int, m: int) -> float | None:
    """An event count's term: the counts' similarity, None (left out of the grade) when both
    are zero -- agreeing that nothing happened says nothing of the windows."""
    return None if k == m == 0 else similarity(k, m)


def weighted(terms: dict[str, float | None]) -> float:
    """The weighted mean of the terms that carry evidence (None ones left out)."""
    have = {n: v for n, v in terms.items() if v is not None}
    w = sum(WEIGHTS[n] for n in have)
    return sum(WEIGHTS[n] * v for n, v in have.items()) / w if w else 0.0


def window_distance(k: list[Ack], m: list[Ack], t0: int, t1: int, n: int = GRID) -> float | None:
    """Mean absolute difference of the advertised window (a step function of the ACKs) on an
    n-point grid over [t0, t1], over the largest window the kernel offered: 0 = the same
    series, 1 = a whole window apart on average. (Normalised by the range, not by the
    kernel's mean: a receiver that sits at a zero window most of the time has a mean near 0,
    and one scale unit of difference would read as "100 % off".) None when the kernel never
    opened its window."""
    if t1 <= t0 or not k or not m:
        return None
    top = max(a.win for a in k)
    if top <= 0:
        return None
    kt, mt = [a.t_ns for a in k], [a.t_ns for a in m]
    num = cnt = 0
    for i in range(n):
        t = t0 + (t1 - t0) * i // (n - 1)
        ki, mi = bisect.bisect_right(kt, t) - 1, bisect.bisect_right(mt, t) - 1
        if ki < 0 or mi < 0:
            continue
        num += abs(m[mi].win - k[ki].win)
        cnt += 1
    if cnt == 0:
        return None
    return num / (cnt * top)


def ack_timing(k: list[Ack], m: list[Ack], placed: frozenset[int] = frozenset()) -> float:
    """Kernel ACKs with a model ACK of the same ack_seq (the same occurrence) within
    ACK_TIME_NS, as a fraction of the kernel's ACKs -- of those not in `placed` (times of
    the capture's ACKs that placed a model read, tcpsim.pcap.readtimes: the model's ACK
    follows such a read by construction, so its timing is no evidence)."""
    if not k:
        return 1.0
    by_seq: dict[int, list[int]] = {}
    for a in m:
        by_seq.setdefault(a.ack_seq, []).append(a.t_ns)
    seen: dict[int, int] = {}
    close = 0
    for a in k:
        i = seen.get(a.ack_seq, 0)
        seen[a.ack_seq] = i + 1
        if a.t_ns in placed:
            continue
        ts = by_seq.get(a.ack_seq)
        if ts and abs(ts[min(i, len(ts) - 1)] - a.t_ns) <= ACK_TIME_NS:
            close += 1
    scored = len(k) - sum(1 for a in k if a.t_ns in placed)
    return close / scored if scored else 1.0


def grade(k: TraceView, m: TraceView, end_ns: int, placed: frozenset[int] = frozenset()) -> Grade:
    """The graded score of model view `m` (on the capture's time axis) against capture `k`;
    `placed`: the capture's ACKs (times) that placed a model read, left out of ACK timing."""
    kacks = [a for a in k.acks if a.t_ns <= end_ns]
    macks = [a for a in m.acks if a.t_ns <= end_ns]
    s = match_acks(k, m, end_ns)
    unit = scale_unit(kacks)
    kz, ku = events(kacks, unit)
    mz, mu = events(macks, unit)
    t0 = k.data_t[0] if k.data_t else 0
    dist = window_distance(kacks, macks, t0, end_ns)
    terms: dict[str, float | None] = {
        "windows": s.within_unit / s.kernel_acks if s.kernel_acks else 0.0,
        "series": 0.0 if dist is None else max(0.0, 1.0 - dist),
        "ack_count": similarity(len(kacks), len(macks)),
        "ack_timing": ack_timing(kacks, macks, placed),
        "zero_windows": event_term(kz, mz),
        "window_updates": event_term(ku, mu),
    }
    total = weighted(terms)
    return Grade(round(total, 6), {n: None if v is None else round(v, 6)
                                   for n, v in terms.items()}, len(kacks),
                 len(macks), s.within_unit, s.exact, (kz, mz), (ku, mu), dist)
