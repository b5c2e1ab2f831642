"""The event loop: schedule a plain callback at an integer-ns time.

A heap of (time, kind, sequence number, fn, args) tuples; run() pops the earliest and calls
fn(*args). (It replaces a loop over simpy's environment that did the same with one event
object and two more Python calls per event; the order of events is unchanged.) Events at the
same nanosecond run in a fixed order of kinds -- segment deliveries, TCP timers, the writer,
the reader -- and within a kind in scheduling order. The kind order must not depend on when
an event was scheduled: the time-skipping engine schedules application ticks at other
moments than the tick-by-tick one.
"""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count
from typing import Any, Callable

NETWORK = 0   # segment deliveries
TIMER = 1     # TCP timers (delayed ACK, RTO, persist)
WRITER = 2    # the sending application
READER = 3    # the receiving application

INFINITY = float("inf")


class Scheduler:
    """Calls callbacks in time order, with integer-nanosecond time."""

    def __init__(self) -> None:
        self.now = 0                     # time of the event being run (ns)
        self._queue: list[tuple] = []    # heap of (time, kind, sequence number, fn, args)
        self._seq = count()              # tie-break within (time, kind): scheduling order
        self.steps = 0                   # events run so far

    def at(self, t: int, prio: int, fn: Callable[..., Any], *args: Any) -> None:
        """Call fn(*args) at absolute time t (>= now), after the events of kind < prio."""
        heappush(self._queue, (t, prio, next(self._seq), fn, args))

    def peek(self) -> int | float:
        """Time of the next event, INFINITY when none is scheduled."""
        return self._queue[0][0] if self._queue else INFINITY

    def run(self, until: int, progress: Callable[[int], None] | None = None) -> None:
        """Run events up to and including time `until`."""
        queue = self._queue
        n = 0
        while queue and queue[0][0] <= until:
            t, _, _, fn, args = heappop(queue)
            self.now = t
            fn(*args)
            n += 1
            if progress is not None and not n & 0x3FFF:
                progress(t)
        self.steps += n
