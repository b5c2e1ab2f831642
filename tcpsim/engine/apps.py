"""Application writers and readers, driven by the scheduler.

Periodic applications act on a grid of ticks (start, start+T, ...). The tick-by-tick engine
runs every tick; the time-skipping engine runs only the ticks that can change something and
applies the others exactly, in bulk, when something else is about to happen:

* a blocked writer's ticks are no-ops until the send buffer has room, so it sleeps until the
  socket is writable and resumes at the next grid tick;
* a periodic reader's reads that free no skb and trigger no ACK are "inert"
  (TcpSocket.count_inert_reads); they are applied lazily (apply_inert_reads) just before the
  next event reaches the socket, and the reader is woken for the first read that is not.

Both give identical results; tests/engine/test_skip.py holds them to it.

A relay reader (tcpsim.workload) is coupled to its end's writer (`couple`): it reads as a
fast reader does while the writer is not stalled in a send(), and drains the socket when
that send() returns.

Application timing (tcpsim/workload.py, issue 14): an application with a latency, call cost
or copy rate (`App.timed`) is run wakeup by wakeup in both modes -- its ticks are never
skipped or applied in bulk -- so time skipping stays exact: it only skips the untimed ones.
Its draws come from its own generator, `latency_rng(seed, role)`:

    random.Random(seed)           link loss (both directions)
    random.Random(2*seed + 1)     link delay jitter, sender -> receiver
    random.Random(2*seed + 2)     link delay jitter, receiver -> sender
    random.Random(8*seed + 3..6)  wakeup latency of the writer, reader, receiver-end writer,
                                  sender-end reader (only drawn from when timed; a
                                  captured sequence draws once per block after the first,
                                  the first being the capture's start)
    random.Random(8*seed + 7)     the host: which capture a run's captured-sequence
                                  latencies replay (its first draw; shared by every app
                                  of the run, as one host runs them all)

(8s + k never equals s, 2s + 1 or 2s + 2 for k = 3..7, so within one run the streams are
distinct; adding timing moves no loss or jitter draw.)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from tcpsim.app_latency import (
    DEFAULT_HOST, SEQUENCES, UNIT, BlockSequence, block_wakeups, load_sequences,
    load_tables, run_capture, table_lookup)
from tcpsim.core.constants import NS_PER_S
from tcpsim.engine.scheduler import READER, WRITER

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket
    from tcpsim.engine.simulation import Connection as Simulation
    from tcpsim.workload import App

_FAR = 1 << 62

STREAMS = {"writer": 3, "reader": 4, "rev_writer": 5, "rev_reader": 6}   # the host: app_latency.HOST_STREAM


def latency_rng(seed: int, role: str) -> random.Random:
    """The generator of one application's wakeup latencies (see the module doc)."""
    return random.Random(seed * 8 + STREAMS[role])


class Timing:
    """An application's timing (workload.App): how late a wakeup is, how long a recv()
    call keeps a reader busy."""

    def __init__(self, app: App, rng: random.Random, seed: int = 0) -> None:
        name = app.latency_table
        self.blocks = (_block_sequence(name, seed, app.latency_host or DEFAULT_HOST)
                       if name in SEQUENCES else None)
        self.table = load_tables()[name] if name and self.blocks is None else None
        self.fixed = app.latency_ns
        self.call_cost = app.call_cost
        self.copy_rate = app.copy_rate
        self.rng = rng

    def late(self) -> int:
        """The lateness of one wakeup (ns): the next wakeup of the replayed capture (a draw
        starts each block after the first), a fresh draw from the table, or the fixed value."""
        if self.blocks is not None:
            k = int(self.rng.random() * UNIT) if self.blocks.needs_draw else 0
            return self.blocks.draw(k)
        if self.table is not None:
            return table_lookup(self.table, self.rng.random())
        return self.fixed

    def busy(self, got: int) -> int:
        """How long a recv() that copied `got` bytes takes (ns)."""
        copy = got * 8 * NS_PER_S // self.copy_rate if self.copy_rate else 0
        return self.call_cost + copy


def _block_sequence(name: str, seed: int, host: str) -> BlockSequence:
    """The captured sequence a run's app replays: the run's capture of the host preset (the
    host stream's first draw, the same for every app of the run) of the app's kind."""
    captures = load_sequences(SEQUENCES[name], host)
    return BlockSequence(captures[run_capture(seed, len(captures))], block_wakeups(host))


def make_timing(app: App, seed: int, role: str) -> Timing | None:
    """An application's Timing, None for exact timing (no generator is made)."""
    return Timing(app, latency_rng(seed, role), seed) if app.timed else None


# -- writers ------------------------------------------------------------------------------------

class PeriodicWriter:
    """Writes `n` bytes every `period`; a write that does not fit blocks, and is retried at
    the following ticks before a new one starts (a blocking send() followed by a sleep)."""

    def __init__(self, sim: Simulation, n: int, period: int, start: int,
                 sk: TcpSocket | None = None, timing: Timing | None = None) -> None:
        self.sim, self.n, self.period, self.start = sim, n, period, start
        self.sk = sk or sim.snd                 # the socket written to (the sender end's)
        self.pending = 0
        self.blocked = False
        self.written = 0
        self.relay: Reader | None = None        # this end's relay reader (see Reader)
        self.timing = timing
        self.origin = 0                         # timed: the grid's first tick
        self.ticks = 0                          # timed: ticks run so far
        self.owns = 0                           # ns a send() holds the socket (App.owns_socket)

    @property
    def stalled(self) -> bool:
        """A write is under way that the send buffer has not taken whole (in send())."""
        return self.pending > 0

    def begin(self) -> None:
        t = max(self.start, self.sim.sched.now)
        if self.timing is None:
            self.sim.sched.at(t, WRITER, self.tick)
            return
        self.origin = t
        self.sim.sched.at(t + self.timing.late(), WRITER, self.timed_tick)

    def timed_tick(self) -> None:
        """A late wakeup: run every tick that fell due (back to back, as a real loop on an
        absolute grid does), then sleep until the next due tick plus a fresh draw."""
        sim, sk = self.sim, self.sk
        if sk.error or self.timing is None:
            return
        now = sim.sched.now
        due = (now - self.origin) // self.period + 1 - self.ticks
        self.ticks += due
        was_stalled = self.pending > 0
        for _ in range(due):
            if self._send(now):
                break                           # blocked: the later ticks write nothing
        self._sent(now, was_stalled)
        nxt = self.origin + self.ticks * self.period
        sim.sched.at(nxt + self.timing.late(), WRITER, self.timed_tick)

    def tick(self) -> None:
        sim = self.sim
        sk = self.sk
        if sk.error:
            return
        now = sim.sched.env.clock                   # sched.now, without its property call
        was_stalled = self.pending > 0
        self._send(now)
        self._sent(now, was_stalled)
        if self.pending and sim.skip and not sk.can_queue():
            self.blocked = True                 # sleep until writable
            return
        sim.sched.at(now + self.period, WRITER, self.tick)

    def _send(self, now: int) -> int:
        """One send() of the rest of the pending write, or of a fresh `n` bytes; the bytes
        still pending."""
        if self.pending == 0:
            self.pending = self.n
        w = self.sk.write(now, self.pending)
        if w and self.owns:
            self.sk.hold(now, self.owns)
        self.pending -= w
        self.written += w
        return self.pending

    def _sent(self, now: int, was_stalled: bool) -> None:
        """After the send()s of a wakeup: the socket's actions; a send() that had stalled and
        is now done returns, and the end's relay reader reads."""
        self.sim.after(self.sk)
        if was_stalled and not self.pending and self.relay is not None:
            self.relay.after_write(now)

    def on_writable(self, now: int) -> None:
        """The send buffer has room again: resume at the next grid tick."""
        if not self.blocked or self.timing is not None:
            return
        self.blocked = False
        k = -(-(now - self.start) // self.period)
        self.sim.sched.at(self.start + k * self.period, WRITER, self.tick)


class BulkWriter:
    """Writes `chunk`-byte pieces whenever the send buffer has room.

    `inline` (ns, 0 = off): the connection is a loopback between two sockets of one host
    (`peers = "local"`, a device whose receiver gets the sender's own skb). There a send()
    delivers what it transmits before it returns: loopback_xmit() hands the skb to the
    backlog, the softirq run at local_bh_enable() [net/core/dev.c] gives it to the
    receiving socket, whose ACK waits in the sending socket's backlog until release_sock()
    at the end of tcp_sendmsg() [net/core/sock.c, net/ipv4/tcp.c, 6.18] processes it. So
    the writer's next send() finds its previous segments received and acknowledged: the
    model lets a write that put segments on the wire be followed by the next one a round
    trip (`inline` = the link's RTT) later, instead of at the same instant."""

    def __init__(self, sim: Simulation, chunk: int, start: int,
                 sk: TcpSocket | None = None) -> None:
        self.sim, self.chunk, self.start = sim, chunk, start
        self.sk = sk or sim.snd                 # the socket written to (the sender end's)
        self.blocked = False
        self.written = 0
        self._busy = False
        self.inline = 0
        self.relay: Reader | None = None        # this end's relay reader (see Reader)
        self.owns = 0                           # ns a send() holds the socket (App.owns_socket)

    @property
    def stalled(self) -> bool:
        """Waiting in send() for room in the send buffer (a bulk writer always has more)."""
        return self.blocked

    def begin(self) -> None:
        self.sim.sched.at(max(self.start, self.sim.sched.now), WRITER, self.fill)

    def fill(self) -> None:
        sim = self.sim
        sk = self.sk
        if self._busy or sk.error:
            return
        self._busy = True
        now = sim.sched.now
        while True:
            w = sk.write(now, self.chunk)
            if w and self.owns:
                sk.hold(now, self.owns)
            self.written += w
            if w < self.chunk:
                break
            if self.inline and sk.outbox:       # loopback: the round trip is in the send()
                self._busy = False
                sim.sched.at(now + self.inline, WRITER, self.fill)
                sim.after(sk)
                return
        self.blocked = True
        self._busy = False
        sim.after(sk)

    def on_writable(self, now: int) -> None:
        if self.blocked and not self._busy:
            self.blocked = False
            if self.relay is not None:
                self.relay.after_write(now)     # the send() returned: the loop reads
            self.fill()


# -- readers ------------------------------------------------------------------------------------

_ASLEEP, _WAKING, _BUSY = 0, 1, 2


@dataclass
class Phase:
    """One stretch of reader behaviour: 'never', 'fast', or 'periodic' (n bytes every T)."""

    kind: str
    start: int
    end: int
    n: int = 0
    period: int = 0


class Reader:
    """Reads from the receiving socket following a sequence of phases."""

    def __init__(self, sim: Simulation, phases: Iterator[Phase],
                 sk: TcpSocket | None = None, timing: Timing | None = None) -> None:
        self.sim = sim
        self.timing = timing
        self.state = _ASLEEP         # timed fast/blocking reader: asleep, waking or busy
        self.sk = sk or sim.rcv                 # the socket read from (the receiver end's)
        self.phases = phases
        self.phase = Phase("never", 0, 0)
        self.next_read = _FAR        # time of the first read not yet applied (periodic)
        self.gen = 0                 # invalidates stale wake-ups
        self.read_bytes = 0
        self.second_start = 0
        self.second_bytes = 0
        self.best_second = 0
        self._busy = False
        self.writer: PeriodicWriter | BulkWriter | None = None   # this end's writer (relay)
        self.owns = 0                # ns a recv() holds the socket (App.owns_socket)

    def begin(self) -> None:
        self._next_phase()

    # -- phases --

    def _next_phase(self) -> None:
        self.phase = next(self.phases, Phase("never", self.sim.sched.now, _FAR))
        self.sim.sched.at(max(self.phase.start, self.sim.sched.now), READER, self._enter, self.phase)

    def _enter(self, phase: Phase) -> None:
        if phase is not self.phase:
            return
        now = self.sim.sched.now
        self.catch_up(now)
        self.next_read = _FAR
        self.gen += 1
        if phase.end < _FAR:
            self.sim.sched.at(phase.end, READER, self._leave, phase)
        if phase.kind in ("fast", "relay"):
            self.on_readable(now)
        elif phase.kind == "periodic":
            self.next_read = phase.start
            self._plan(now)

    def _leave(self, phase: Phase) -> None:
        if phase is self.phase:
            self.catch_up(self.sim.sched.now)
            self._next_phase()

    # -- periodic reads --

    def _wake(self, gen: int) -> None:
        if gen != self.gen or self.phase.kind != "periodic":
            return
        now = self.sim.sched.now
        self.catch_up(now)
        if self.next_read != now:
            return
        p = self.phase
        if self.sim.skip and self.sk.count_inert_reads(now, p.period, p.n, 1):
            self._plan(now)             # still inert: look further ahead, read nothing yet
            return
        self._read(now, p.n)
        self.next_read = now + p.period
        self._plan(now)

    def _reads_before(self, t: int) -> int:
        """Reads of the current phase scheduled strictly before t, not yet applied."""
        p = self.phase
        if p.kind != "periodic" or self.next_read >= t or self.timing is not None:
            return 0
        last = min(t, p.end)
        return max(0, -(-(last - self.next_read) // p.period))

    def catch_up(self, t: int) -> None:
        """Apply the (inert) reads scheduled before t. Called before any event reaches the
        receiving socket, so the socket is exactly as the tick-by-tick engine leaves it."""
        count = self._reads_before(t)
        if count:
            p = self.phase
            self.sk.apply_inert_reads(self.next_read, p.period, p.n, count)
            self.read_bytes += count * p.n
            self.next_read += count * p.period

    def replan(self) -> None:
        """Something changed the socket: recompute the next read that matters."""
        if self.phase.kind == "periodic" and self.sim.skip and self.timing is None:
            self._plan(self.sim.sched.now)

    def _plan(self, now: int) -> None:
        p = self.phase
        if self.next_read >= p.end or self.sk.error:
            return
        self.gen += 1
        t = self.next_read
        if self.timing is not None:
            t = max(now, t + self.timing.late())
            self.sim.sched.at(t, READER, self._timed_wake, self.gen)
            return
        if self.sim.skip:
            # Look ahead only up to the next pending event: whatever happens there will
            # re-plan if it touches the socket, and a wake at the horizon re-plans if not.
            horizon = min(self.sim.sched.peek(), p.end)
            limit = max(1, -(-(horizon - t) // p.period) + 1)
            limit = min(limit, -(-(p.end - t) // p.period))
            t += self.sk.count_inert_reads(t, p.period, p.n, limit) * p.period
            if t >= p.end:
                return
        self.sim.sched.at(t, READER, self._wake, self.gen)

    def _timed_wake(self, gen: int) -> None:
        """A late periodic wakeup: read once per tick that fell due, each recv() keeping
        the reader busy for its cost; then sleep until the next due tick plus a draw."""
        if gen != self.gen or self.phase.kind != "periodic" or self.timing is None:
            return
        now = self.sim.sched.now
        p = self.phase
        while self.next_read <= now:
            busy = self.timing.busy(self._read(now, p.n))
            self.next_read += p.period
            if busy:
                if self.next_read <= now + busy:        # still behind: call again when done
                    self.gen += 1
                    self.sim.sched.at(now + busy, READER, self._timed_wake, self.gen)
                    return
                break
        self._plan(now)

    # -- reading --

    def on_readable(self, now: int) -> None:
        """The socket woke the reader: a fast reader drains what is queued; a relay reader
        too, unless its end's writer is stalled in send()."""
        kind = self.phase.kind
        if kind == "relay" and self.writer is not None and self.writer.stalled:
            return
        if kind not in ("fast", "relay"):
            return
        self._drain(now)

    def after_write(self, now: int) -> None:
        """The end's writer got out of send(): a relay reader drains what queued meanwhile."""
        if self.phase.kind == "relay":
            self._drain(now)

    def _drain(self, now: int) -> None:
        if self._busy:
            return
        if self.timing is not None:
            if self.state == _ASLEEP:               # blocked in recv(): woken late
                self.state = _WAKING
                self.sim.sched.at(now + self.timing.late(), READER, self._timed_read)
            return
        self._busy = True
        cap = self.phase.n or (1 << 20)
        # A read that takes less than asked has emptied the queue or reached the FIN; the
        # recv() after it would find nothing (the socket's read() returns 0 straight away)
        # and is not made.
        while self._read(now, cap) == cap:
            pass
        self._busy = False

    def _timed_read(self) -> None:
        """A timed fast/blocking reader's recv() returns: it takes up to its buffer; while
        data stays queued it calls again once the call's cost has passed (no wakeup), and
        sleeps when a call finds nothing."""
        if self.phase.kind != "fast" or self.timing is None:
            return
        now = self.sim.sched.now
        cap = self.phase.n or (1 << 20)
        self.state = _BUSY                          # on_readable ignores what _read wakes
        while True:
            got = self._read(now, cap)
            if not got:
                self.state = _ASLEEP
                return
            busy = self.timing.busy(got)
            if busy:
                self.sim.sched.at(now + busy, READER, self._timed_read)
                return

    def _read(self, now: int, n: int) -> int:
        sk = self.sk
        got = sk.read(now, n)
        if got:
            if self.owns:
                sk.hold(now, self.owns)
            self.read_bytes += got
            self._account_second(now, got)
            self.sim.after(sk)
        return got

    def _account_second(self, now: int, got: int) -> None:
        """Bytes read per one-second bucket, for the oscil reader's high-water mark."""
        if now - self.second_start >= NS_PER_S:
            self.best_second = max(self.best_second, self.second_bytes)
            self.second_start = now - (now - self.second_start) % NS_PER_S
            self.second_bytes = 0
        self.second_bytes += got


def make_writer(sim: Simulation, app: App, sk: TcpSocket | None = None,
                timing: Timing | None = None) -> PeriodicWriter | BulkWriter:
    """A scenario's writer (tcpsim.workload.WRITER_KINDS) on the simulator, writing to `sk`
    (default: the sender end's socket), late by `timing` (periodic only)."""
    w = WRITERS[app.kind](sim, app, sk, timing)
    w.owns = app.owns_socket
    return w


WRITERS = {
    "periodic": lambda sim, app, sk, tm: PeriodicWriter(sim, app.bytes, app.every, app.start,
                                                        sk, tm),
    "bulk": lambda sim, app, sk, tm: BulkWriter(sim, app.bytes, app.start, sk),
}


def couple(writer: PeriodicWriter | BulkWriter | None, reader: Reader | None, app: App) -> None:
    """One end's writer and reader: a relay reader (`app`) reads only between the writer's
    send()s (tcpsim.workload: one thread relaying both ways)."""
    if writer is not None and reader is not None and app.kind == "relay":
        reader.writer, writer.relay = writer, reader


def reader_phases(app: App, reader: Reader, duration: int) -> Iterator[Phase]:
    """The phase sequence of a scenario's reader (tcpsim.workload.READER_KINDS)."""
    return READER_PHASES[app.kind](app, reader, duration)


def _never(app: App, reader: Reader, duration: int) -> Iterator[Phase]:
    yield Phase("never", app.start, _FAR)


def _fast(app: App, reader: Reader, duration: int) -> Iterator[Phase]:
    yield Phase("fast", app.start, _FAR, n=app.bytes)


def _relay(app: App, reader: Reader, duration: int) -> Iterator[Phase]:
    yield Phase("relay", app.start, _FAR, n=app.bytes)


def _periodic(app: App, reader: Reader, duration: int) -> Iterator[Phase]:
    yield Phase("periodic", app.start, _FAR, n=app.bytes, period=app.every)


def _oscillating(app: App, reader: Reader, duration: int) -> Iterator[Phase]:
    t = app.start
    while t < duration:
        n, per = app.rate_at(t - app.start)
        yield Phase("periodic", t, t + app.period, n=n, period=per)
        t += app.period


def _oscil(app: App, reader: Reader, duration: int) -> Iterator[Phase]:
    t = app.start
    while t < duration:
        yield Phase("fast", t, t + app.fast_for)
        t += app.fast_for
        best = max(reader.best_second, reader.second_bytes)
        n = max(1, int(best * app.fraction))
        yield Phase("periodic", t, t + app.slow_for, n=n, period=NS_PER_S)
        t += app.slow_for


# A blocking reader (woken in recv() when data is queued) reads when a fast reader would as
# long as the model has no application wakeup latency: it runs the fast phase.
READER_PHASES = {"never": _never, "fast": _fast, "blocking": _fast, "relay": _relay,
                 "periodic": _periodic,
                 "oscillating": _oscillating, "oscil": _oscil}
