"""A periodic reader's wakeups, read off the capture: its grid, each tick the capture dates moved.

A pcap holds no read times, but a read that frees room sends its ACK from recvmsg itself
(tcp_cleanup_rbuf() [net/ipv4/tcp.c, 6.18]: the window update of a slow reader, or the ACK a
delayed-ACK decision left pending), microseconds after the read began. So an ACK that comes
long after the last data arrival (tcpsim.pcap.fit.READ_ACK_GAP_NS) dates a read. A program
that reads on a grid wakes late now and then, or sleeps past a tick (a Python loop on a
loaded host: veth-tbf-periodic's reader drew ACKs 20--300 us after its grid's phase), and a
model reader exactly on the grid then reads a burst the kernel's read had not yet, or the
reverse.

`read_ticks()` makes the reader that the `reads` unknown of tcpsim.pcap.fit calls "acks":
the fitted grid (period, phase, skipped ticks), where each tick near which the capture shows
a read-drawn ACK *off* the grid's phase is moved to that ACK less the read-to-ACK lag; every
other tick stays on the grid. What it assumes, and what it cannot see:

* A read that draws no ACK is where the grid puts it (the capture says nothing of it).
* A read-drawn ACK belongs to the last grid tick at or before it (less the lag), no more
  than MAX_LATE of a period after it: a reader late by more than that is taken as having
  slept past a tick -- the ticks between read nothing (SKIPPED).
* The lag from a read to its ACK is the grid's own: the bunch of read-drawn ACKs sits that
  far after the grid's phase. Only an ACK more than `late_us` off its tick's time plus that
  lag moves the tick: moving every read to its ACK (the lag varies by some 10 us from read to
  read) did worse than the grid on veth-tbf-periodic (0.50--0.76 against 0.84).

The ACKs used to place reads are the ones whose timing the model then reproduces by
construction: tcpsim.pcap.grade leaves them out of the ACK-timing term for a candidate that
places reads (`placed` below), so the timing it scores is the other ACKs'.
"""

from __future__ import annotations

from dataclasses import dataclass



@dataclass(frozen=True)
class ReadTimes:
    """A reader's ticks on the model axis, [(time, bytes asked)], and the capture's ACK times
    (trace axis) that moved a read."""

    ticks: list[tuple[int, int]]
    placed: frozenset[int]


def read_ticks(start: int, every: int, end: int, size: int, acks: list[int], shift: int,
               lag: int, late: int) -> ReadTimes:
    """The grid start + j * every (model axis, up to `end`), `size` bytes a tick, with each
    tick whose read a read-drawn ACK (`acks`, trace axis: model = trace + shift) shows
    `late` ns or more after its time moved to that ACK less `lag`.

    The capture's readers sleep to their next tick and read (scripts/record_plain_pcaps.py),
    so a read is never before its tick and a late one delays no other: an ACK's read
    (ACK - lag) belongs to the last tick at or before it (up to `late` early: the grid's
    phase is estimated), and the first ACK of a tick decides it -- a second one in the same
    period (a segment the read's hold parked, answered at its release) is not a read."""
    if every <= 0:
        return ReadTimes([], frozenset())
    n = max(0, (end - start) // every + 1)
    times = [start + j * every for j in range(n)]
    claimed: set[int] = set()
    placed: set[int] = set()
    for a in acks:
        read = a + shift - lag
        j = (read - start + late) // every
        if j < 0 or j >= n or j in claimed:
            continue
        claimed.add(j)
        if read - times[j] >= late:
            times[j] = read
            placed.add(a)
    return ReadTimes([(t, size) for t in times], frozenset(placed))


def lag_ns(acks: list[int], start: int, every: int, shift: int) -> int:
    """The read-to-ACK lag: the median offset, from their grid tick, of the read-drawn ACKs
    within a tenth of a period after one (model axis)."""
    offs = sorted((a + shift - start) % every for a in acks if a + shift >= start)
    near = [o for o in offs if o < every // 10]
    return near[len(near) // 2] if near else 0
