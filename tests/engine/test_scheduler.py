"""The engine's event loop (tcpsim/engine/scheduler.py): a simpy Environment that owns its
heap. Ordering is simpy's -- (time, priority, scheduling order) -- and simpy's own events and
processes run on it unchanged, interleaved with tcpsim's plain callbacks."""

import pytest
import simpy

from tcpsim.engine.scheduler import (
    INFINITY, NETWORK, READER, TIMER, WRITER, Environment, Scheduler,
)


def test_is_a_simpy_environment_with_public_time():
    s = Scheduler()
    assert isinstance(s.env, simpy.Environment)
    assert s.now == s.env.now == 0 and s.peek() == s.env.peek() == INFINITY


def test_order_is_time_then_kind_then_scheduling_order():
    s = Scheduler()
    got = []
    s.at(5, READER, got.append, "r5")
    s.at(5, NETWORK, got.append, "n5a")
    s.at(3, WRITER, got.append, "w3")
    s.at(5, TIMER, got.append, "t5")
    s.at(5, NETWORK, got.append, "n5b")
    s.run(10)
    assert got == ["w3", "n5a", "n5b", "t5", "r5"] and s.now == 5 and s.steps == 5


def test_run_stops_at_until_inclusive():
    s = Scheduler()
    got = []
    for t in (1, 2, 3):
        s.at(t, NETWORK, got.append, t)
    s.run(2)
    assert got == [1, 2] and s.peek() == 3
    s.run(3)
    assert got == [1, 2, 3] and s.peek() == INFINITY


def test_ticket_keeps_the_order_of_when_it_was_reserved():
    s = Scheduler()
    got = []
    first = s.ticket()                   # reserved before b is scheduled
    s.at(7, NETWORK, got.append, "b")
    s.at_ticket(7, NETWORK, first, got.append, "a")
    s.run(7)
    assert got == ["a", "b"]


def test_callbacks_see_their_own_time_and_can_schedule():
    s = Scheduler()
    got = []

    def tick(n):
        got.append((s.now, n))
        if n < 3:
            s.at(s.now + 10, WRITER, tick, n + 1)
    s.at(0, WRITER, tick, 0)
    s.run(100)
    assert got == [(0, 0), (10, 1), (20, 2), (30, 3)]


def test_simpy_processes_and_timeouts_run_in_simpy_order():
    s = Scheduler()
    env = s.env
    got = []

    def proc(name, delay):
        for _ in range(2):
            yield env.timeout(delay)
            got.append((env.now, name))

    env.process(proc("p", 4))
    s.at(4, NETWORK, lambda: got.append((s.now, "call")))   # NETWORK=0 runs before NORMAL=1
    env.process(proc("q", 2))
    env.run(until=9)
    assert got == [(2, "q"), (4, "call"), (4, "p"), (4, "q"), (8, "p")]
    assert env.now == 9


def test_a_failed_simpy_event_raises_unless_defused():
    env = Environment()
    ev = env.event()
    ev.fail(KeyError("boom"))
    with pytest.raises(KeyError, match="boom"):
        env.step()
    ev2 = env.event()
    ev2.callbacks.append(lambda e: setattr(e, "defused", True))
    ev2.fail(KeyError("quiet"))
    env.step()                          # defused: no exception
    with pytest.raises(simpy.core.EmptySchedule):
        env.step()


def test_same_order_as_simpy_itself():
    """The same schedule on simpy's Environment and on ours: the same processing order."""
    def drive(env):
        got = []
        for i, (t, prio) in enumerate([(3, 1), (1, 2), (3, 0), (1, 2), (0, 5), (3, 1)]):
            ev = simpy.events.Event(env)
            ev.callbacks.append(lambda e, i=i: got.append((env.now, i)))
            ev._ok, ev._value = True, None          # the test may touch simpy's internals
            env.schedule(ev, prio, t)
        env.run()
        return got
    assert drive(Environment()) == drive(simpy.Environment())
