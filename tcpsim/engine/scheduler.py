"""The event loop: simpy schedules plain callbacks at integer-nanosecond times.

The simulation runs on a `simpy.Environment`: simpy's heap of (time, priority, id, event)
orders everything and `env.step()` runs it. The per-packet path creates no simpy Process or
Store: `at()` pushes a `_Call` -- the smallest object simpy accepts as an event -- straight
onto simpy's heap, and simpy calls it back with no generator in between.

Events at the same nanosecond run in a fixed order of kinds (simpy's priority) -- segment
deliveries, TCP timers, the writer, the reader -- and within a kind in scheduling order.
The kind order must not depend on when an event was scheduled: the time-skipping engine
schedules application ticks at other moments than the tick-by-tick one.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any, Callable

import simpy

NETWORK = 0   # segment deliveries
TIMER = 1     # TCP timers (delayed ACK, RTO, persist)
WRITER = 2    # the sending application
READER = 3    # the receiving application

INFINITY = float("inf")


class _Call:
    """A one-shot simpy event that calls fn(*args) when simpy processes it."""

    __slots__ = ("callbacks", "_ok", "_value", "fn", "args")

    def __init__(self, fn: Callable[..., Any], args: tuple) -> None:
        self.callbacks = (_Call._fire,)
        self._ok = True
        self._value = None
        self.fn = fn
        self.args = args

    @staticmethod
    def _fire(ev: "_Call") -> None:
        ev.fn(*ev.args)


class Scheduler:
    """Calls callbacks in time order on a simpy environment, integer-nanosecond time."""

    def __init__(self) -> None:
        self.env = simpy.Environment(initial_time=0)
        self._queue = self.env._queue      # simpy's heap: (time, priority, id, event)
        self._eid = self.env._eid          # simpy's tie-breaking counter
        self.steps = 0                     # events run so far

    @property
    def now(self) -> int:
        """Time of the event being run (ns)."""
        return self.env._now

    def at(self, t: int, prio: int, fn: Callable[..., Any], *args: Any) -> None:
        """Call fn(*args) at absolute time t (>= now), after the events of kind < prio.
        What env.schedule() does, without its Python-level call on the per-packet path."""
        heappush(self._queue, (t, prio, next(self._eid), _Call(fn, args)))

    def ticket(self) -> int:
        """Reserve the tie-breaking id an event scheduled now would get, for at_ticket()."""
        return next(self._eid)

    def at_ticket(self, t: int, prio: int, ticket: int, fn: Callable[..., Any], *args: Any) -> None:
        """Schedule fn(*args) as if at() had been called when `ticket` was reserved: same
        (t, prio, id) key, so same order. Lets a FIFO (the link) keep one event on the heap
        for a whole train of packets and push the next one only when its turn comes."""
        heappush(self._queue, (t, prio, ticket, _Call(fn, args)))

    def peek(self) -> int | float:
        """Time of the next event, INFINITY when none is scheduled."""
        return self._queue[0][0] if self._queue else INFINITY

    def run(self, until: int, progress: Callable[[int], None] | None = None) -> None:
        """Run events up to and including time `until` (simpy's env.step() each)."""
        queue = self._queue
        step = self.env.step
        n = 0
        while queue and queue[0][0] <= until:
            step()
            n += 1
            if progress is not None and not n & 0x3FFF:
                progress(self.env._now)
        self.steps += n
