"""One simulated run: two TCP endpoints, a link between them, a writer and a reader -- and,
in a two-way scenario, a second writer at the receiver end and a reader at the sender end.

The simulation only moves things around: segments from a socket's outbox onto a link,
deliveries and timer expiries into sockets, wake-ups to applications. Everything TCP does
happens inside tcpsim.core.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable

from tcpsim.core.constants import NS_PER_S
from tcpsim.core.devices import device
from tcpsim.core.segment import Segment
from tcpsim.core.socket import TcpSocket
from tcpsim.core.state import ESTABLISHED
from tcpsim.engine.apps import (
    BulkWriter, PeriodicWriter, Reader, couple, make_timing, make_writer, reader_phases,
)
from tcpsim.engine.link import LinkDirection
from tcpsim.engine.result import (Peaks, RunResult, StopRun, Tally, few_gc_passes, progress_bar,
                                  stop_hook, summarize)
from tcpsim.engine.scheduler import TIMER, Scheduler
from tcpsim.policy import Profile
from tcpsim.scenario import Scenario



class Simulation:
    """Wires a scenario to sockets, links and applications and runs it."""

    def __init__(self, scenario: Scenario, profile: Profile, sink: Any = None,
                 skip: bool = True, tap: Any = None) -> None:
        """`tap`: an observer of the receiver's wire (e.g. tcpsim.pcap.export.PcapTap): its
        `segment(t_ns, from_rcv, seg)` sees every segment the receiver gets or sends."""
        self.scenario = scenario
        self.tap = tap
        self.profile = profile
        self.skip = skip
        self.cut_at: int | None = None       # where a stop cut the run short (ns), if one did
        self.sched = Scheduler()
        sysctls = profile.default_sysctls().with_overrides(
            scenario.sysctl, known=profile.known_sysctls(), profile=profile.name)
        self.sysctls = sysctls
        mtu = scenario.link.mtu
        dev = device(scenario.device)
        sdev = device(scenario.sender_device)       # the sender end's ingress device
        self.rcv = TcpSocket(profile.policy(), sysctls, dev, name="rcv",
                             sink=sink, mtu=mtu, init_rwnd=scenario.initrwnd, hz=scenario.hz)
        self.sender_sysctls = profile.default_sysctls().with_overrides(
            scenario.sender_sysctl, known=profile.known_sysctls(), profile=profile.name)
        self.snd = TcpSocket(profile.policy(), self.sender_sysctls, sdev,
                             name="snd", sink=sink, mtu=mtu, initcwnd=scenario.initcwnd,
                             nodelay=scenario.nodelay, hz=scenario.hz)
        if scenario.so_rcvbuf:
            self.rcv.set_rcvbuf(scenario.so_rcvbuf)
        rng = random.Random(scenario.seed)
        link = scenario.link
        self.ab = LinkDirection(self.sched, self._to_rcv, link.delay_ab, link.rate_bps,
                                link.queue_limit, link.loss, rng, link.jitter,
                                random.Random(scenario.seed * 2 + 1), link.burst, link.limit)
        self.ba = LinkDirection(self.sched, self._to_snd, link.delay_ba, link.rate_bps,
                                link.queue_limit, 0.0, rng, link.jitter,
                                random.Random(scenario.seed * 2 + 2), link.burst, link.limit)
        self._timer_at = {self.rcv: 0, self.snd: 0}     # earliest timer event pending (ns)
        self.shared_skbs = getattr(dev, "shared", False)     # veth/loopback: see LocalSender
        if self.shared_skbs:
            self.rcv.on_peer_release(0)
        self.rev_shared_skbs = scenario.two_way and sdev.shared
        if self.rev_shared_skbs:
            self.snd.on_peer_release(0)
        seed = scenario.seed
        self.writer: PeriodicWriter | BulkWriter = make_writer(
            self, scenario.writer, timing=make_timing(scenario.writer, seed, "writer"))
        self.reader = Reader(self, iter(()), timing=make_timing(scenario.reader, seed, "reader"))
        self.reader.phases = reader_phases(scenario.reader, self.reader, scenario.duration)
        # two-way: the receiver end writes, the sender end reads (None: one-way data)
        self.rev_writer: PeriodicWriter | BulkWriter | None = None
        self.rev_reader: Reader | None = None
        if scenario.rev_writer is not None and scenario.rev_reader is not None:
            self.rev_writer = make_writer(self, scenario.rev_writer, self.rcv,
                                          make_timing(scenario.rev_writer, seed, "rev_writer"))
            self.rev_reader = Reader(self, iter(()), self.snd,
                                     make_timing(scenario.rev_reader, seed, "rev_reader"))
            self.rev_reader.phases = reader_phases(scenario.rev_reader, self.rev_reader,
                                                   scenario.duration)
            couple(self.rev_writer, self.reader, scenario.reader)       # the receiver end
            couple(self.writer, self.rev_reader, scenario.rev_reader)   # the sender end
        self.rev_peaks = Peaks()
        self.rcv_established_at = -1
        self.peaks = Peaks()
        self.established_at = -1
        self.died_at = -1

    # -- moving things around -------------------------------------------------------------------

    def after(self, sk: TcpSocket) -> None:
        """Drain what a socket produced: segments to the link, timers to the scheduler,
        wake-ups to the applications. Re-entered when a woken reader reads (its reads
        produce window updates of their own)."""
        if sk.outbox:                        # most events send nothing: no list to swap
            send = self.ab.send if sk is self.snd else self.ba.send
            out = sk.take_outbox()
            if self.tap is not None and sk is self.rcv:
                for seg in out:
                    self.tap.segment(self.sched.now, True, seg)
            for seg in out:
                send(seg)
        self._arm(sk)
        if sk is self.rcv:
            self._note_peaks(sk, self.peaks)
            if sk.readable:
                self.reader.on_readable(self.sched.env.clock)
            rw = self.rev_writer
            if rw is not None and rw.blocked and sk.can_queue():
                rw.on_writable(self.sched.now)
        else:
            if self.rev_reader is not None:
                self._note_peaks(sk, self.rev_peaks)
                if sk.readable:
                    self.rev_reader.on_readable(self.sched.now)
            if self.writer.blocked and sk.can_queue():
                self.writer.on_writable(self.sched.now)
        if sk.error and self.died_at < 0:
            self.died_at = self.sched.now

    def _note_peaks(self, rcv: TcpSocket, peaks: Peaks) -> None:
        """Track a receiving socket's extremes (sampled after every event)."""
        if rcv.mem.sk_rmem_alloc > peaks.rmem:
            peaks.rmem = rcv.mem.sk_rmem_alloc
            peaks.t_rmem = self.sched.now
        if rcv.mem.sk_rcvbuf > peaks.rcvbuf:
            peaks.rcvbuf = rcv.mem.sk_rcvbuf
        q = rcv.recv_q()
        if q > peaks.recv_q:
            peaks.recv_q = q

    def _arm(self, sk: TcpSocket) -> None:
        """Make sure a timer event is pending at or before the socket's next deadline."""
        d = sk.next_deadline()
        if d:
            pending = self._timer_at[sk]
            if pending == 0 or d < pending:
                self._timer_at[sk] = d
                self.sched.at(d, TIMER, self._timer, sk, d)

    def _to_rcv(self, seg: Segment) -> None:
        rcv = self.rcv
        now = self.sched.env.clock           # sched.now, without its property call
        if self.tap is not None:
            self.tap.segment(now, False, seg)
        self.reader.catch_up(now)
        was_open = rcv.conn.state is ESTABLISHED
        rcv.on_segment(now, seg)
        if self.rev_shared_skbs:
            self.snd.on_peer_release(rcv.snd.snd_una)
        self.after(rcv)
        self.reader.replan()
        if not was_open and rcv.conn.state is ESTABLISHED:
            self._rcv_established()

    def _to_snd(self, seg: Segment) -> None:
        snd = self.snd
        now = self.sched.env.clock           # sched.now, without its property call
        rr = self.rev_reader
        if rr is not None:
            rr.catch_up(now)
        was_open = snd.conn.state is ESTABLISHED
        snd.on_segment(now, seg)
        if self.shared_skbs:
            self.rcv.on_peer_release(snd.snd.snd_una)
        self.after(snd)
        if rr is not None:
            rr.replan()
        if not was_open and snd.conn.state is ESTABLISHED:
            self._established()

    def _timer(self, sk: TcpSocket, d: int) -> None:
        if self._timer_at[sk] == d:
            self._timer_at[sk] = 0
        due = sk.next_deadline()
        now = self.sched.now
        if not due or due > now:
            self._arm(sk)                    # a stale wake-up: the deadline moved
            return
        reader = self.reader if sk is self.rcv else self.rev_reader
        if reader is not None:
            reader.catch_up(now)
        was_open = sk.conn.state
        sk.on_timer(now)
        self.after(sk)
        if reader is not None:
            reader.replan()
        if sk is self.rcv:
            if was_open is not ESTABLISHED and sk.conn.state is ESTABLISHED:
                self._rcv_established()
        elif was_open is not ESTABLISHED and sk.conn.state is ESTABLISHED:
            self._established()

    def _established(self) -> None:
        if self.established_at < 0:
            self.established_at = self.sched.now
            self.writer.begin()

    def _rcv_established(self) -> None:
        """The receiver end is open: its writer (two-way scenarios) may start."""
        if self.rcv_established_at < 0:
            self.rcv_established_at = self.sched.now
            if self.rev_writer is not None:
                self.rev_writer.begin()

    # -- running ----------------------------------------------------------------------------------

    def run(self, progress: Callable[[int], None] | None = None) -> RunResult:
        """Open the connection, start the applications, run for the scenario's duration."""
        sc = self.scenario
        client, server = (self.rcv, self.snd) if sc.receiver_role == "client" else (self.snd, self.rcv)
        server.listen()
        client.connect(0)
        self.after(client)
        self.reader.begin()
        if self.rev_reader is not None:
            self.rev_reader.begin()
        wall = time.perf_counter()
        end = sc.duration
        with few_gc_passes():
            try:
                self.sched.run(sc.duration, stop_hook(progress))
            except StopRun:                  # a stop asked for (tcpsim/interrupt.py)
                end = self.cut_at = self.sched.now
        self.reader.catch_up(end + 1)
        if self.rev_reader is not None:
            self.rev_reader.catch_up(end + 1)
        wall = time.perf_counter() - wall
        return self.result(wall)

    def result(self, wall: float) -> RunResult:
        """Summary numbers a person can read in ten seconds."""
        rev = self.rev_writer is not None and self.rev_reader is not None
        tally = Tally(
            events=self.sched.steps, packets=self.ab.sent + self.ba.sent,
            established_at=self.established_at, died_at=self.died_at,
            written=self.writer.written, read_bytes=self.reader.read_bytes, peaks=self.peaks,
            rev_written=self.rev_writer.written if rev else None,       # type: ignore[union-attr]
            rev_read_bytes=self.rev_reader.read_bytes if rev else None,  # type: ignore[union-attr]
            rev_peaks=self.rev_peaks)
        return summarize(self.scenario, self.profile, self.sysctls.as_dict(), self.rcv,
                         self.snd, tally, wall, self.cut_at)


__all__ = ["Peaks", "RunResult", "Simulation", "Tally", "progress_bar", "summarize"]
