"""The event loop: a simpy environment that calls plain callbacks at integer-nanosecond times.

The simulation runs on `Environment`, a `simpy.Environment` that owns its heap of
(time, priority, id, event) instead of reaching into simpy's. It is one because tcpsim
needs two things simpy's public API does not offer: scheduling an event at a given time
*with a priority* (simpy's `schedule()` takes both, but only for its own `Event` objects,
whose trigger state is private), and reserving an event's tie-break id before the event
exists (`ticket()`: the link keeps one event on the heap for a whole train of packets).
simpy documents subclassing the environment for such needs (its RealtimeEnvironment
overrides `step()` the same way); `schedule()`, `step()`, `peek()` and `now` keep simpy's
meaning, so simpy's own events and processes still run on it, in the same order
(tests/engine/test_scheduler.py).

The per-packet path creates no simpy Process or Store: `at()` pushes a `_Call` -- the
smallest object `step()` processes as an event -- straight onto the heap, and the
environment calls it back with no generator in between.

Events at the same nanosecond run in a fixed order of kinds (the priority) -- segment
deliveries, TCP timers, the writer, the reader -- and within a kind in scheduling order.
The kind order must not depend on when an event was scheduled: the time-skipping engine
schedules application ticks at other moments than the tick-by-tick one.
"""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count
from typing import Any, Callable

import simpy
from simpy.core import EmptySchedule, StopSimulation

NETWORK = 0   # segment deliveries
TIMER = 1     # TCP timers (delayed ACK, RTO, persist)
WRITER = 2    # the sending application
READER = 3    # the receiving application

INFINITY = float("inf")


class _Call:
    """A one-shot event that calls fn(*args) when the environment processes it."""

    __slots__ = ("callbacks", "fn", "args")
    ok = True                           # what step() asks of an event (simpy's Event.ok)
    defused = False

    def __init__(self, fn: Callable[..., Any], args: tuple) -> None:
        self.callbacks = (_Call._fire,)
        self.fn = fn
        self.args = args

    @staticmethod
    def _fire(ev: "_Call") -> None:
        ev.fn(*ev.args)


class Environment(simpy.Environment):
    """A simpy environment whose heap tcpsim owns: `heap` of (time, priority, id, event),
    `clock` the current time (ns), `ids` the tie-break counter. Same ordering as simpy's."""

    def __init__(self, initial_time: int = 0) -> None:
        super().__init__(initial_time)
        self.clock = initial_time
        self.heap: list[tuple[Any, int, int, Any]] = []     # time: int ns (float from simpy users)
        self.ids = count()

    @property
    def now(self) -> int:
        """The current simulation time (ns)."""
        return self.clock

    def schedule(self, event: Any, priority: int = 1, delay: int | float = 0) -> None:
        """Schedule `event` `delay` after now with `priority` (simpy's meaning)."""
        heappush(self.heap, (self.clock + delay, priority, next(self.ids), event))

    def peek(self) -> int | float:
        """Time of the next event, INFINITY when none is scheduled."""
        return self.heap[0][0] if self.heap else INFINITY

    def step(self) -> None:
        """Process the next event: run its callbacks; a failed event nobody defused raises
        its exception (simpy's `Environment.step()`)."""
        try:
            self.clock, _, _, event = heappop(self.heap)
        except IndexError:
            raise EmptySchedule from None
        callbacks, event.callbacks = event.callbacks, None
        try:
            for callback in callbacks:
                callback(event)
        except StopSimulation:
            # env.run(until=...) stops here; the event's other callbacks run on resuming
            event.callbacks = list(callbacks[callbacks.index(callback) + 1:])
            self.schedule(event, -1)
            raise
        if not event.ok and not event.defused:
            exc = type(event.value)(*event.value.args)
            exc.__cause__ = event.value
            raise exc


class Scheduler:
    """Calls callbacks in time order on an `Environment`, integer-nanosecond time."""

    def __init__(self) -> None:
        self.env = Environment(initial_time=0)
        self._queue = self.env.heap        # (time, priority, id, event)
        self._eid = self.env.ids           # tie-breaking counter
        self.steps = 0                     # events run so far

    @property
    def now(self) -> int:
        """Time of the event being run (ns). The per-packet path (link, writer tick,
        deliveries) reads `env.clock` itself: the same value without a property call."""
        return self.env.clock

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

    def run_ahead(self, until: int, part: int, other: tuple[int, int, int] | None,
                  progress: Callable[[int], None] | None = None) -> None:
        """Run this schedule's events due by `until` while they come before `other`, the
        (time, priority, part) of another schedule's next event, this one being part `part`
        (a host run in CPU order: tcpsim/engine/simulation.py `Simulation._run`)."""
        queue = self._queue
        env = self.env
        n = 0
        try:
            while queue and queue[0][0] <= until and (
                    other is None or (queue[0][0], queue[0][1], part) < other):
                if queue[0][3].__class__ is _Call:
                    env.clock, _, _, call = heappop(queue)
                    call.callbacks = None
                    call.fn(*call.args)
                else:
                    env.step()
                n += 1
                if progress is not None and not n & 0x3FFF:
                    progress(self.env.clock)
        finally:
            self.steps += n

    def run(self, until: int, progress: Callable[[int], None] | None = None) -> None:
        """Run events up to and including time `until`. A `_Call` (every event on the
        per-packet path) is run here, straight: what env.step() would do with it, without its
        two Python-level calls (step, _fire) per event; any other event goes through
        env.step()."""
        queue = self._queue
        env = self.env
        step = env.step
        n = 0
        try:            # `progress` may end the run (tcpsim.engine.result.stop_hook)
            while queue and queue[0][0] <= until:
                if queue[0][3].__class__ is _Call:
                    env.clock, _, _, call = heappop(queue)
                    call.callbacks = None                   # processed, as step() marks it
                    call.fn(*call.args)
                else:
                    step()
                n += 1
                if progress is not None and not n & 0x3FFF:
                    progress(self.env.clock)
        finally:
            self.steps += n
