"""The reader's wakeups, read off the capture: its phases, and the late reads moved.

A pcap holds no read times, but a read that frees room sends its ACK from recvmsg itself
(tcp_cleanup_rbuf() [net/ipv4/tcp.c, 6.18]: the window update of a slow reader, or the ACK a
delayed-ACK decision left pending), microseconds after the read began. So an ACK that comes
long after the last data arrival (tcpsim.pcap.fit.READ_ACK_GAP_NS) dates a read. Two of the
fit's unknowns (tcpsim.pcap.fit, docs/pcap.md "The reader's wakeups, read off the capture")
use them one by one:

* `phases()`: a reader whose period changes (veth-oscillating: 2 ms, then 20 ms, in halves
  of a drifting Python loop), its periods and switch times segmented from the read-drawn
  ACKs; `phase_ticks()` its ticks -- the fit's `phased:BYTES` reader.
* `place()`: a reader's ticks (its grid, grid_ticks(), or its phases') with each read that a
  read-drawn ACK shows `late` or more after its tick moved to that ACK less the read-to-ACK
  lag -- the fit's "late reads placed". A program on a grid wakes late now and then (a
  Python loop on a loaded host: veth-tbf-periodic's reader drew ACKs 20--300 us after its
  grid's phase), and a model reader on the grid then reads a burst the kernel's read had
  not yet, or the reverse.

What it assumes: a read that draws no ACK is where the grid puts it (the capture says
nothing of it); a read is never before its tick and a late one delays no other (the
capture's loops sleep to their next tick, then read: scripts/record_plain_pcaps.py); the
lag from a read to its ACK is the grid's own (where the ACKs bunch after their ticks). Only
reads more than `late` off move: moving every read to its ACK (the lag varies by some 10 us
from read to read) did worse than the grid on veth-tbf-periodic (0.50--0.76 against 0.84).

The ACKs that placed a read are ones the model answers by construction (its read comes just
before them): tcpsim.pcap.grade leaves them out of the ACK-timing term (`placed`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass


@dataclass(frozen=True)
class ReadTimes:
    """A reader's ticks on the model axis, [(time, bytes asked)], and the capture's ACK times
    (trace axis) that moved a read."""

    ticks: list[tuple[int, int]]
    placed: frozenset[int]


def grid_ticks(start: int, every: int, end: int, size: int) -> list[tuple[int, int]]:
    """A periodic reader's ticks, start + j * every up to `end`, `size` bytes each: where the
    scenario's reader (tcpsim.engine.apps.Reader, exact timing) reads."""
    if every <= 0:
        return []
    return [(start + j * every, size) for j in range(max(0, (end - start) // every + 1))]


def place(ticks: list[tuple[int, int]], acks: list[int], shift: int, lag: int,
          late: int) -> ReadTimes:
    """`ticks` (model axis, sorted) with each tick whose read a read-drawn ACK (`acks`, trace
    axis: model = trace + shift) shows `late` ns or more after it moved to that ACK less
    `lag`.

    The capture's readers sleep to their next tick and read (scripts/record_plain_pcaps.py),
    so a read is never before its tick: an ACK's read (ACK - lag) belongs to the last tick at
    or before it (up to `late` early: the grid's phase is estimated), and the first ACK of a
    tick decides it -- a second one before the next tick (a segment the read's hold parked,
    answered at its release) is not a read. A read is not moved past the next tick."""
    times = [t for t, _ in ticks]
    claimed: set[int] = set()
    placed: set[int] = set()
    out = list(ticks)
    for a in acks:
        read = a + shift - lag
        j = bisect.bisect_right(times, read + late) - 1
        if j < 0 or j in claimed:
            continue
        claimed.add(j)
        nxt = times[j + 1] if j + 1 < len(times) else None
        if read - times[j] >= late and (nxt is None or read < nxt):
            out[j] = (read, ticks[j][1])
            placed.add(a)
    return ReadTimes(out, frozenset(placed))


def lag_ns(acks: list[int], start: int, every: int, shift: int) -> int:
    """The read-to-ACK lag: the median offset, from their grid tick, of the read-drawn ACKs
    within a tenth of a period after one (model axis)."""
    offs = sorted((a + shift - start) % every for a in acks if a + shift >= start)
    near = [o for o in offs if o < every // 10]
    return near[len(near) // 2] if near else 0


# -- a reader whose period changes: its phases read off the capture ------------------------

DENSE = 5            # an ACK with a neighbour within this many fine periods is the fine reader's
MIN_RUN = 3          # a run of sparse ACKs shorter than this joins its neighbours
PERIODS_MS = (1, 2, 5, 10, 20, 50, 100)


@dataclass(frozen=True)
class Phase:
    """One stretch of a reader's grid: ticks at `first` + j * `every` up to `last` (ns,
    trace axis), and the read-drawn ACKs that dated it."""

    first: int
    last: int
    every: int
    acks: int


def grid_of(times: list[int], periods_ms: tuple[int, ...] = PERIODS_MS,
            concentration: float = 0.8) -> tuple[int, int] | None:
    """(period, phase) ns of the longest of `periods_ms` whose phases `times` concentrate on
    (tcpsim.pcap.workload.read_grid's test, for a run of any length >= 2)."""
    import cmath
    import math
    if len(times) < 2:
        return None
    for ms in sorted(periods_ms, reverse=True):
        period = ms * 1_000_000
        mean = sum(cmath.exp(2j * math.pi * (t % period) / period) for t in times) / len(times)
        if abs(mean) >= concentration:
            return period, round((cmath.phase(mean) / (2 * math.pi)) % 1.0 * period) % period
    return None


def _runs(acks: list[int], fine: int) -> list[tuple[bool, list[int]]]:
    """The read-drawn ACKs cut into runs of the fine reader's (an ACK with a neighbour within
    DENSE fine periods) and of a coarser one's (MIN_RUN or more in a row without)."""
    out: list[tuple[bool, list[int]]] = []
    for i, a in enumerate(acks):
        gaps = [abs(a - acks[j]) for j in (i - 1, i + 1) if 0 <= j < len(acks)]
        dense = bool(gaps) and min(gaps) <= DENSE * fine
        if out and out[-1][0] == dense:
            out[-1][1].append(a)
        else:
            out.append((dense, [a]))
    merged: list[tuple[bool, list[int]]] = []
    for dense, run in out:
        if not dense and len(run) < MIN_RUN:
            dense = True                # too short to date a coarser reader
        if merged and merged[-1][0] == dense:
            merged[-1][1].extend(run)
        else:
            merged.append((dense, list(run)))
    return merged


def phases(acks: list[int], end: int) -> list[Phase]:
    """A reader's phases, read off its read-drawn ACKs (trace axis, sorted): runs of the
    fine reader (the period the ACKs' nearest neighbours mostly sit at) and of coarser ones,
    each on the grid its own ACKs concentrate on. Between two runs the gap in the ACKs is
    the slower reader's -- the faster one's reads would have drawn ACKs there -- and the
    switch follows the capture's loops (scripts/record_plain_pcaps.py: the tick after a
    phase's last is that last plus the next phase's period): the slower run's grid reaches
    across the gap up to where the faster one's begins. One phase (or none) where the ACKs
    show no change of period."""
    if len(acks) < 2:
        return []
    near = sorted(min(abs(a - acks[j]) for j in (i - 1, i + 1) if 0 <= j < len(acks))
                  for i, a in enumerate(acks))
    med = near[len(near) // 2]
    fine_ms = min(PERIODS_MS, key=lambda p: abs(p * 1_000_000 - med))
    fine = fine_ms * 1_000_000
    grids = []
    for dense, run in _runs(acks, fine):
        g = grid_of(run, tuple(p for p in PERIODS_MS if p <= fine_ms) if dense else
                    tuple(p for p in PERIODS_MS if p > fine_ms))
        if g is None:
            g = (fine, run[0] % fine)
        grids.append((g[0], g[1], run))
    if len(grids) == 1 or len({g[0] for g in grids}) == 1:
        every, phase, _ = grids[0]
        return [Phase(_tick_at(acks[0], every, phase), end, every, len(acks))]
    out: list[Phase] = []
    first = _tick_at(grids[0][2][0], grids[0][0], grids[0][1])
    for (ea, _, ra), (eb, pb, rb) in zip(grids, grids[1:]):
        last_a = _tick_at(ra[-1], ea, grids[len(out)][1])
        first_b = _tick_at(rb[0], eb, pb)
        # the next phase's first tick t0 is its grid's, and the last tick before it t0 - eb
        t0 = first_b
        if eb > ea:
            # slower next: from the earliest such tick after the faster one's last read
            t0 = min(first_b, last_a + eb + (pb - last_a - eb) % eb)
        out.append(Phase(first, t0 - eb, ea, len(ra)))
        first = t0
    out.append(Phase(first, end, grids[-1][0], len(grids[-1][2])))
    return out


def phase_ticks(ph: list[Phase], size: int, shift: int, lead: int,
                skip: int) -> list[tuple[int, int]]:
    """The phases' ticks on the model axis (model = trace + shift), `lead` ns before the
    grid the read-drawn ACKs date (a read's ACK follows it), `size` bytes each; the first
    phase starts `skip` of its periods before its first read-drawn ACK's tick (not before 0)."""
    out: list[tuple[int, int]] = []
    for i, p in enumerate(ph):
        t = p.first
        if i == 0:
            t = max(t - skip * p.every, t % p.every)
        while t <= p.last:
            m = t + shift - lead
            if m >= 0 and (not out or m > out[-1][0]):
                out.append((m, size))
            t += p.every
    return out


def _tick_at(t: int, every: int, phase: int) -> int:
    """The tick of the grid (every, phase) at or before t, or just after it (within a tenth
    of the period: the ACKs scatter around the grid their circular mean places)."""
    return t + every // 10 - (t + every // 10 - phase) % every
