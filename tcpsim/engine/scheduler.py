"""A thin layer over simpy.Environment: schedule a plain callback at an integer-ns time.

simpy's loop pops (time, priority, id, event) and calls the event's callbacks; a `_Call` is
the smallest object it accepts as an event, so the per-packet path allocates one object and
runs no generator. Events at the same nanosecond run in a fixed order of kinds -- segment
deliveries, TCP timers, the writer, the reader -- and within a kind in scheduling order. The
kind order must not depend on when an event was scheduled: the time-skipping engine
schedules application ticks at other moments than the tick-by-tick one.
"""

from __future__ import annotations

from typing import Any, Callable

from heapq import heappush
from itertools import count

import simpy

NETWORK = 0   # segment deliveries
TIMER = 1     # TCP timers (delayed ACK, RTO, persist)
WRITER = 2    # the sending application
READER = 3    # the receiving application


class _Call:
    """A one-shot simpy event that calls fn(*args)."""

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
    """Schedules callbacks on a simpy environment with integer-nanosecond time."""

    def __init__(self) -> None:
        self.env = simpy.Environment(initial_time=0)
        self._queue = self.env._queue           # simpy's heap of (time, priority, id, event)
        self._eid = self.env._eid               # and its tie-breaking counter
        self.steps = 0

    @property
    def now(self) -> int:
        return self.env.now

    def at(self, t: int, prio: int, fn: Callable[..., Any], *args: Any) -> None:
        """Call fn(*args) at absolute time t (>= now). Same as env.schedule(), without its
        Python-level call on the per-packet path."""
        heappush(self._queue, (t, prio, next(self._eid), _Call(fn, args)))

    def run(self, until: int, progress: Callable[[int], None] | None = None) -> None:
        """Run events up to and including time `until`."""
        env = self.env
        step = env.step
        peek = env.peek
        n = 0
        while peek() <= until:
            step()
            n += 1
            if progress is not None and not n & 0x3FFF:
                progress(env.now)
        self.steps += n
