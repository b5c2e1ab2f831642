"""One simulated host: its connections -- each two TCP endpoints, a link between them, a
writer and a reader, and in a two-way scenario a second writer at the receiver end and a
reader at the sender end -- on one scheduler, the host's sockets sharing one TCP memory pool.

The simulation only moves things around: segments from a socket's outbox onto a link,
deliveries and timer expiries into sockets, wake-ups to applications. Everything TCP does
happens inside tcpsim.core. A scenario is a host of one connection (`Simulation(scenario,
profile)`); a host scenario (tcpsim/host/) a host of many (`Simulation.of_host(plan,
profile)`): the same `Connection`s on the same loop.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Sequence

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
from tcpsim.host.outputs import FlowRecord, flow_counters
from tcpsim.host.plan import (Flow, HostPlan, HostSample, cpu_parts, host_sample, make_memcg,
                              make_pool)
from tcpsim.policy import Profile
from tcpsim.scenario import Scenario



def _noop() -> None:
    """What a closed connection's pending events become."""


class Connection:
    """One connection of a host: its receiver (the host's socket), its remote peer, both link
    directions, its applications and its peaks. Events it schedules are plain callbacks on
    the host's scheduler, in the order a run of it alone would make them."""

    def __init__(self, host: "Simulation", scenario: Scenario, index: int = 0,
                 flow: Flow | None = None, sink: Any = None, tap: Any = None) -> None:
        """`tap`: an observer of the receiver's wire (e.g. tcpsim.pcap.export.PcapTap): its
        `segment(t_ns, from_rcv, seg)` sees every segment the receiver gets or sends."""
        self.host = host
        self.index = index
        self.flow = flow or Flow(scenario)
        self.scenario = scenario
        self.tap = tap
        profile = self.profile = host.profile
        self.skip = host.skip
        self.sched = host.sched_of(index)
        sysctls = profile.default_sysctls().with_overrides(
            scenario.sysctl, known=profile.known_sysctls(), profile=profile.name)
        self.sysctls = sysctls
        mtu = scenario.link.mtu
        dev = device(scenario.device)
        sdev = device(scenario.sender_device)       # the sender end's ingress device
        self.rcv = TcpSocket(profile.policy(), sysctls, dev, name="rcv",
                             sink=sink, mtu=mtu, init_rwnd=scenario.initrwnd, hz=scenario.hz)
        self.rcv.set_proto(host.pool, index % host.ncpus)       # the host's pool
        if host.memcg is not None:                # the host's sockets' cgroup
            self.rcv.set_memcg(host.memcg)
        self.sender_sysctls = profile.default_sysctls().with_overrides(
            scenario.sender_sysctl, known=profile.known_sysctls(), profile=profile.name)
        self.snd = TcpSocket(profile.policy(), self.sender_sysctls, sdev,
                             name="snd", sink=sink, mtu=mtu, initcwnd=scenario.initcwnd,
                             nodelay=scenario.nodelay, hz=scenario.hz)
        if host.plan.local_peers:             # both ends on this host (loopback): one CPU
            self.snd.set_proto(host.pool, index % host.ncpus)
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
        # one GSO skb per transmission where the peer's device takes it whole and no rate
        # limiter would cut it (Device.gso_whole)
        whole = not (link.rate_bps or link.burst)
        self.snd.snd.gso_whole = whole and dev.gso_whole
        self.rcv.snd.gso_whole = whole and sdev.gso_whole
        self.shared_skbs = getattr(dev, "shared", False)     # veth/loopback: see LocalSender
        if self.shared_skbs:
            self.rcv.on_peer_release(0)
        self.rev_shared_skbs = scenario.two_way and sdev.shared
        if self.rev_shared_skbs:
            self.snd.on_peer_release(0)
        # the receiving end's skbs hold the writing end's pages (tcpsim/core/pagefrag.py)
        self.shared_pages = dev.strategy == "sender"
        self.snd.pfrag.reuse = dev.reuse
        self.rev_shared_pages = scenario.two_way and sdev.strategy == "sender"
        self.rcv.pfrag.reuse = sdev.reuse
        seed = scenario.seed
        self.writer: PeriodicWriter | BulkWriter = make_writer(
            self, scenario.writer, timing=make_timing(scenario.writer, seed, "writer"))
        if host.plan.local_peers and self.shared_skbs and isinstance(self.writer, BulkWriter):
            self.writer.inline = link.delay_ab + link.delay_ba      # see BulkWriter
        self.reader = Reader(self, iter(()), timing=make_timing(scenario.reader, seed, "reader"))
        self.reader.owns = scenario.reader.owns_socket
        self.reader.phases = reader_phases(scenario.reader, self.reader, scenario.duration)
        # two-way: the receiver end writes, the sender end reads (None: one-way data)
        self.rev_writer: PeriodicWriter | BulkWriter | None = None
        self.rev_reader: Reader | None = None
        if scenario.rev_writer is not None and scenario.rev_reader is not None:
            self.rev_writer = make_writer(self, scenario.rev_writer, self.rcv,
                                          make_timing(scenario.rev_writer, seed, "rev_writer"))
            self.rev_reader = Reader(self, iter(()), self.snd,
                                     make_timing(scenario.rev_reader, seed, "rev_reader"))
            self.rev_reader.owns = scenario.rev_reader.owns_socket
            self.rev_reader.phases = reader_phases(scenario.rev_reader, self.rev_reader,
                                                   scenario.duration)
            couple(self.rev_writer, self.reader, scenario.reader)       # the receiver end
            couple(self.writer, self.rev_reader, scenario.rev_reader)   # the sender end
        self.rev_peaks = Peaks()
        self.rcv_established_at = -1
        self.peaks = Peaks()
        self.established_at = -1
        self.died_at = -1
        self.closed = False
        self.final: FlowRecord | None = None
        # the receive queue's area (bytes x ns, Little's law: tcpsim/host/outputs.py
        # read_latency) since the connection opened
        self.q_area = 0
        self.q_last = 0
        self.q_t = self.flow.start

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
            if self.shared_pages:
                self.snd.on_peer_pages(sk.holds_pages(), sk.now)
            self._note_peaks(sk, self.peaks)
            self._note_queue(sk)
            if sk.readable:
                self.reader.on_readable(self.sched.env.clock)
            rw = self.rev_writer
            if rw is not None and rw.blocked and sk.can_queue():
                rw.on_writable(self.sched.now)
        else:
            if self.rev_shared_pages:
                self.rcv.on_peer_pages(sk.holds_pages(), sk.now)
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

    def _note_queue(self, rcv: TcpSocket) -> None:
        """Add the receive queue's bytes x time since the last look (after every event)."""
        now = self.sched.env.clock
        self.q_area += self.q_last * (now - self.q_t)
        self.q_t = now
        self.q_last = rcv.recv_q()

    def _arm(self, sk: TcpSocket) -> None:
        """Make sure a timer event is pending at or before the socket's next deadline."""
        d = sk.next_deadline()
        if d:
            pending = self._timer_at[sk]
            if pending == 0 or d < pending:
                self._timer_at[sk] = d
                self.sched.at(d, TIMER, self._timer, sk, d)

    def _to_rcv(self, seg: Segment) -> None:
        if self.closed:
            return
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
        if self.closed:
            return
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
        if self.closed:
            return
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

    # -- opening and closing -----------------------------------------------------------------

    def open(self) -> None:
        """Open the connection and start its applications (at the flow's start); a flow with
        a lifetime closes at its stop."""
        sc = self.scenario
        now = self.sched.now
        client, server = (self.rcv, self.snd) if sc.receiver_role == "client" else (self.snd, self.rcv)
        server.listen()
        client.connect(now)
        self.after(client)
        self.reader.begin()
        if self.rev_reader is not None:
            self.rev_reader.begin()
        if self.flow.stop:
            self.sched.at(self.flow.stop, TIMER, self.close)

    def close(self) -> None:
        """The end of the flow's lifetime: both applications close at once and the host
        forgets the connection -- its sockets are destroyed (tcp_done ->
        inet_csk_destroy_sock [net/ipv4/inet_connection_sock.c]: queues purged, memory
        back to the pool), segments still on the links are lost, its timers and
        applications stop (tcpsim/host/plan.py: churn)."""
        now = self.sched.now
        self.reader.catch_up(now)
        if self.rev_reader is not None:
            self.rev_reader.catch_up(now)
        self._note_queue(self.rcv)
        self.closed = True
        for sk in (self.rcv, self.snd):
            sk.destroy(now)
        self.host.closed(self)
        self.final = self.record()
        self.host.forget(self)

    def record(self) -> FlowRecord:
        """Its final numbers (tcpsim/host/outputs.py): as they were at its close, or now."""
        if self.final is not None:
            return self.final
        f = self.flow
        return FlowRecord(self.index, f.cls, f.start, f.stop, self.established_at,
                          self.writer.written, self.reader.read_bytes,
                          self.rcv.rcv.bytes_received, self.q_area,
                          self.peaks.rmem, flow_counters(self.rcv.mib, self.profile.counters()))

    def finish(self, end: int) -> None:
        """The run is over: readers catch up to `end` (the last moment plus one)."""
        if self.closed:
            return
        self.reader.catch_up(end)
        if self.rev_reader is not None:
            self.rev_reader.catch_up(end)
        self._note_queue(self.rcv)

    def tally(self) -> Tally:
        """What the engine counted for this connection."""
        rev = self.rev_writer is not None and self.rev_reader is not None
        return Tally(
            events=self.host.steps, packets=self.ab.sent + self.ba.sent,
            established_at=self.established_at, died_at=self.died_at,
            written=self.writer.written, read_bytes=self.reader.read_bytes, peaks=self.peaks,
            rev_written=self.rev_writer.written if rev else None,       # type: ignore[union-attr]
            rev_read_bytes=self.rev_reader.read_bytes if rev else None,  # type: ignore[union-attr]
            rev_peaks=self.rev_peaks)


class Simulation:
    """A host: its connections on one scheduler, its TCP memory pool, its samples. Built from
    one scenario (a host of one flow) or from a host plan (`of_host`)."""

    conn_class: type[Connection] = Connection     # what a flow is built as (tests check it)

    def __init__(self, scenario: Scenario, profile: Profile, sink: Any = None,
                 skip: bool = True, tap: Any = None, plan: HostPlan | None = None) -> None:
        """`tap`: an observer of the (first) receiver's wire, see `Connection`."""
        self.scenario = scenario
        self.profile = profile
        self.skip = skip
        self.sink = sink
        self.plan = plan or HostPlan.single(scenario)
        # host order: one schedule; CPU order (threads >= 2): one per CPU with a flow, flow i
        # on CPU i % ncpus, events by (time, priority, CPU) -- the native engine runs the
        # same order on several threads (native/src/engine/parallel.rs); here on one
        self.parts = cpu_parts(self.plan)
        self.scheds = [Scheduler() for _ in range(self.parts)]
        self.sched = self.scheds[0]
        self.duration = self.plan.duration
        self.ncpus = self.plan.ncpus
        self.pool = make_pool(self.plan, profile)
        self.memcg = make_memcg(self.plan, profile)
        self.conns: list[Connection] = []
        self.live = 0                        # connections open now (sockstat's inuse)
        self.samples: list[HostSample] = []
        self.cut_at: int | None = None       # where a stop cut the run short (ns), if one did
        self._tap = tap
        # per part: the flows not yet built, latest start first
        self._pending = [sorted((i for i in range(len(self.plan.flows)) if i % self.parts == k),
                                key=lambda i: (self.plan.flows[i].start, i), reverse=True)
                         for k in range(self.parts)]
        for k in range(self.parts):
            self._build_due(k)                # the flows of time 0, opened by run()

    def sched_of(self, index: int) -> Scheduler:
        """The schedule of flow `index`'s events (its CPU's, in CPU order)."""
        return self.scheds[index % self.parts]

    @property
    def steps(self) -> int:
        """Events run, every part's."""
        return sum(s.steps for s in self.scheds)

    @classmethod
    def of_host(cls, plan: HostPlan, profile: Profile, skip: bool = True,
                sink: Any = None) -> "Simulation":
        """A host of many connections (tcpsim/host/plan.py)."""
        return cls(plan.flows[0].scenario, profile, sink=sink, skip=skip, plan=plan)

    # a host of one flow reads as that flow (the single-connection interface)
    @property
    def conn(self) -> Connection:
        return self.conns[0]

    @property
    def rcv(self) -> TcpSocket:
        return self.conns[0].rcv

    @property
    def snd(self) -> TcpSocket:
        return self.conns[0].snd

    @property
    def sysctls(self) -> Any:
        return self.conns[0].sysctls

    def _build_due(self, part: int) -> list[Connection]:
        """Build every flow of `part` whose start has come (in start, then index order)."""
        now = self.scheds[part].env.clock
        pending = self._pending[part]
        built = []
        while pending and self.plan.flows[pending[-1]].start <= now:
            i = pending.pop()
            flow = self.plan.flows[i]
            sink = self._sink_of(i) if i in self.plan.traced else None
            built.append(self.conn_class(self, flow.scenario, i, flow, sink,
                                    self._tap if i == 0 else None))
        self.conns.extend(built)
        return built

    def _sink_of(self, i: int) -> Any:
        """Flow i's trace sink: the run's, or its own where the sink keeps one per flow (a
        host's per-connection traces, tcpsim/host/traces.py)."""
        for_flow = getattr(self.sink, "for_flow", None)
        return for_flow(i) if for_flow is not None else self.sink

    def _open(self, conns: Sequence[Connection], part: int) -> None:
        """Open connections of `part` just built; its next flow to start is woken then."""
        for c in conns:
            self.live += 1
            c.open()
        pending = self._pending[part]
        if pending:
            self.scheds[part].at(self.plan.flows[pending[-1]].start, TIMER, self._open_due,
                                 part)

    def _open_due(self, part: int) -> None:
        self._open(self._build_due(part), part)

    def closed(self, conn: Connection) -> None:
        """A connection's lifetime ended (Connection.close)."""
        self.live -= 1

    def forget(self, conn: Connection) -> None:
        """A closed connection's events still on the schedule do nothing (the native engine
        drops them with the connection): each is made a no-op in place, so the schedule's
        order of everything else stays as it was."""
        owners = {id(x) for x in (conn, conn.ab, conn.ba, conn.writer, conn.reader,
                                  conn.rev_writer, conn.rev_reader) if x is not None}
        for entry in conn.sched.env.heap:
            call = entry[3]
            if id(getattr(getattr(call, "fn", None), "__self__", None)) in owners:
                call.fn, call.args = _noop, ()

    # -- running ----------------------------------------------------------------------------------

    def run(self, progress: Callable[[int], None] | None = None) -> RunResult:
        """Run for the scenario's duration; the summary of its (first) connection."""
        self.run_loop(progress)
        return self.result(self.wall)

    def run_loop(self, progress: Callable[[int], None] | None = None) -> None:
        """Run for the host's duration (`wall`: the seconds it took): open the flows of time
        0, run the events, sample the host every `plan.sample_every`. A stop asked for
        (tcpsim/interrupt.py) ends the run at that event: `cut_at` says when."""
        for k in range(self.parts):
            self._open([c for c in self.conns if c.index % self.parts == k], k)
        wall = time.perf_counter()
        every = self.plan.sample_every
        hook = stop_hook(progress)
        end = self.duration
        with few_gc_passes():
            try:
                if every:
                    t = 0
                    while t <= self.duration:
                        self._run(t, hook)
                        self.samples.append(self.sample(t))
                        t += every
                self._run(self.duration, hook)
            except StopRun:
                end = self.cut_at = max(s.now for s in self.scheds)
        # the run ends at the host's last event: a flow's queue area is counted up to it
        last = max(s.env.clock for s in self.scheds)
        for s in self.scheds:
            s.env.clock = last
        for c in self.conns:
            c.finish(end + 1)
        self.wall = time.perf_counter() - wall

    def _run(self, until: int, hook: Any) -> None:
        """Run the events due by `until`: in CPU order, by (time, priority, part), a part
        running on while its next event comes first."""
        if self.parts == 1:
            self.sched.run(until, hook)
            return
        scheds = self.scheds
        while True:
            heads = sorted((q[0][0], q[0][1], k) for k, s in enumerate(scheds)
                           if (q := s._queue) and q[0][0] <= until)
            if not heads:
                return
            scheds[heads[0][2]].run_ahead(until, heads[0][2],
                                          heads[1] if len(heads) > 1 else None, hook)

    def sample(self, t: int) -> HostSample:
        """The host at time `t` (after its events): sockstat's TCP line and the pool."""
        return host_sample(t, self.live * (2 if self.plan.local_peers else 1), self.pool,
                           self.memcg)

    def result(self, wall: float) -> RunResult:
        """Summary numbers a person can read in ten seconds (of the first connection: a
        host's own are tcpsim/host/outputs.py's)."""
        c = self.conns[0]
        return summarize(c.scenario, self.profile, c.sysctls.as_dict(), c.rcv, c.snd,
                         c.tally(), wall, self.cut_at)


__all__ = ["Connection", "Peaks", "RunResult", "Simulation", "Tally", "progress_bar", "summarize"]
