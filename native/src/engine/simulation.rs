//! One simulated host (tcpsim/engine/simulation.py): its connections -- each two TCP
//! endpoints, a link between them, a writer and a reader, and in a two-way scenario a second
//! writer at the receiver end and a reader at the sender end -- on one scheduler, the host's
//! sockets sharing one TCP memory pool.
//!
//! The simulation only moves things around: segments from a socket's outbox onto a link,
//! deliveries and timer expiries into sockets, wake-ups to applications. Everything TCP does
//! happens inside the socket. Every event carries its connection (`Event`); the one being
//! served is `f` (the others wait in `flows`), so the applications' code reads one
//! connection's state as it did when a run had one. A scenario is a host of one flow. The
//! run's summary is built in Python from `Stats`-like numbers (tcpsim/engine/native.py), by
//! the same code as the Python engine's.

use super::apps::{
    App, Reader, Timing, Writer, WriterKind, STREAM_READER, STREAM_REV_READER, STREAM_REV_WRITER,
    STREAM_WRITER,
};
use super::link::LinkDirection;
use super::random::LazyRandom;
use super::replay::{ReplayReader, ReplayWriter};
use super::scheduler::{Scheduler, Tagged, TIMER};
use super::trace::TraceColumns;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::devices::Device;
use crate::kernel::KernelRef;
use crate::memcg::{MemCgroup, MemcgHandle};
use crate::protmem::{ProtoHandle, ProtoMemory};
use crate::segment::Segment;
use crate::socket::{SocketParams, TcpSocket};
use crate::state::TcpState;
use crate::sysctl::Sysctls;

/// The receiver under study (index into `Simulation::socks`).
pub const RCV: usize = 0;
/// Its peer, the sender end.
pub const SND: usize = 1;
/// The largest `max_rows` of `run_some` the trace columns make room for in advance (a
/// trace group; a run without a trace passes a huge bound).
const MAX_GROUP_ROWS: usize = 1 << 22;

/// An event on the schedule (the Python engine's `_Call` targets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// The head of link direction 0 (to the receiver) or 1 (to the sender) arrives.
    Arrive(u32),
    /// A timer wake-up of a socket (simulation.py `_timer`) for the deadline the event is
    /// scheduled at (the time it runs: `d` there).
    Timer(u32),
    WriterTick(u32),
    WriterFill(u32),
    ReaderEnter(u32, u32),
    ReaderLeave(u32, u32),
    ReaderWake(u32, u32),
    /// A timed application's late wakeup (apps.py `timed_tick`, `_timed_wake`, `_timed_read`).
    WriterTimedTick(u32),
    ReaderTimedWake(u32, u32),
    ReaderTimedRead(u32),
    /// A tick of `tcpsim validate`'s (or `tcpsim replay`'s) replay writer / reader (replay.rs).
    ReplayWrite,
    ReplayRead,
    /// The flows whose start has come are built and opened (simulation.py `_open_due`).
    OpenDue,
    /// The end of a flow's lifetime (simulation.py `Connection.close`).
    Close,
}

/// A scheduled event and the connection (flow index) it belongs to: 16 bytes (a timer
/// carries no deadline, the time it is scheduled at is one; a reader's phase and wake-up
/// counters are u32), so a key of the schedule is 32 bytes where it was 40 -- on a host,
/// whose near heap and wheel hold tens of thousands, 5 % less CPU.
pub type Event = (u32, Ev);

/// An event's tag in the schedule is its connection (Simulation::prefetch_next).
impl Tagged for Event {
    #[inline]
    fn tag(&self) -> u32 {
        self.0
    }
}

/// The link of a scenario (scenario.py `Link`).
#[derive(Clone, Debug, Default)]
pub struct LinkSpec {
    pub delay_ab: i64,
    pub delay_ba: i64,
    pub rate_bps: i64,
    pub queue_limit: i64,
    pub loss: f64,
    pub jitter: i64,
    /// Token bucket (`kind = "tbf"`): burst and limit in bytes (0: the FIFO link).
    pub burst: i64,
    pub limit: i64,
}

/// How to build one socket of a flow (py_engine.rs reads it from the run's config): the
/// kernel, sysctls, device and keyword arguments of simulation.py's `TcpSocket(...)`, and
/// SO_RCVBUF. Flows of a host that share a configuration share one maker.
#[derive(Clone)]
pub struct SocketMaker {
    pub k: KernelRef,
    pub sysctl: Arc<Sysctls>,
    pub dev: Arc<Device>,
    pub params: SocketParams,
    pub so_rcvbuf: i64,
    pub tracing: bool,
}

impl SocketMaker {
    /// A new socket, as simulation.py `Connection.__init__` builds it.
    pub fn make(&self) -> Result<TcpSocket, String> {
        let mut sk = TcpSocket::new(
            self.k.clone(),
            Arc::clone(&self.sysctl),
            Some(Arc::clone(&self.dev)),
            &self.params,
        )?;
        if self.so_rcvbuf != 0 {
            sk.set_rcvbuf(self.so_rcvbuf);
        }
        sk.tracing = self.tracing;
        Ok(sk)
    }
}

/// One flow of a host (host/plan.py `Flow`, its scenario's values): the makers of its two
/// sockets, link, applications, seed, role, start and stop (0: lasts the run), class.
#[derive(Clone)]
pub struct FlowSpec {
    pub rcv: Arc<SocketMaker>,
    pub snd: Arc<SocketMaker>,
    pub link: LinkSpec,
    pub seed: i128,
    pub receiver_client: bool,
    pub writer: Arc<App>,
    pub reader: Arc<App>,
    pub rev: Option<(Arc<App>, Arc<App>)>,
    /// The `start` of the writer, reader, reverse writer and reverse reader (the apps are
    /// shared by a class's flows, which open at different times).
    pub starts: [i64; 4],
    /// The scenario's duration (the readers' phases end there, as in Python).
    pub duration: i64,
    pub start: i64,
    pub stop: i64,
    pub cls: usize,
}

/// What a host run needs besides its flows.
#[derive(Clone)]
pub struct RunSpec {
    pub duration: i64,
    pub skip: bool,
    /// Record the (first) receiver's wire (the pcap tap).
    pub tap: bool,
    /// Sample the host every this many ns (0: never).
    pub sample_every: i64,
    /// The host's CPU count: flow i's receiver charges the pool from CPU i % ncpus.
    pub ncpus: usize,
    /// The peers are this host's sockets too (loopback): they charge its pool, from their
    /// receiver's CPU (host/plan.py `HostPlan.local_peers`).
    pub local_peers: bool,
    /// The host's pool: `net.ipv4.tcp_mem` (pages) and the per-CPU reserve.
    pub tcp_mem: (i64, i64, i64),
    pub pcpu_rsv: i64,
    /// The host's sockets' memory cgroup (src/memcg.rs): (version, limit pages, other
    /// pages, softirq charges GFP_ATOMIC), None for none.
    pub memcg: Option<(i64, i64, i64, bool)>,
}

/// Extremes of a receiving socket's state over the run (sampled after every event).
#[derive(Clone, Copy, Debug, Default)]
pub struct Peaks {
    pub rmem: i64,
    pub rcvbuf: i64,
    pub recv_q: i64,
    pub t_rmem: i64,
}

/// The host at one moment (host/plan.py `HostSample`): sockstat's inuse and mem (pages),
/// and whether TCP is under memory pressure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostSample {
    pub t: i64,
    pub inuse: i64,
    pub mem: i64,
    pub pressure: bool,
    /// The memcg's usage (pages; -1 without one).
    pub memcg: i64,
}

/// A flow's socket timers as the schedule sees them, kept beside the flows (not in them):
/// most timer wake-ups find the deadline moved (a delayed ACK sent early, an RTO or loss
/// probe pushed back by an ACK) and only re-arm, which this decides without reading the
/// flow's kilobytes (`Simulation::timer_rearm_only`).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowTimers {
    /// The deadline of the timer event pending for socket [receiver, sender] (0: none;
    /// simulation.py `Connection.timer_at`).
    pub at: [i64; 2],
    /// The socket's next deadline (`TcpSocket::next_deadline`) when the flow was last
    /// served (noted as it stops being served: its sockets change only while it is).
    pub due: [i64; 2],
    /// The flow is closed: its events are ignored.
    pub closed: bool,
}

/// One connection of the host (simulation.py `Connection`).
pub struct Flow {
    pub index: usize,
    pub cls: usize,
    pub start: i64,
    pub stop: i64,
    /// [receiver, sender].
    pub socks: [TcpSocket; 2],
    /// [to the receiver (ab), to the sender (ba)].
    pub links: [LinkDirection; 2],
    /// The link's loss and jitter draws (made at the first draw: most links draw none).
    pub rng: LazyRandom,
    pub jitter_rng: [LazyRandom; 2],
    pub shared_skbs: bool,
    pub rev_shared_skbs: bool,
    /// [the writer (to the sender socket), the receiver end's writer (two-way)].
    pub writers: [Option<Writer>; 2],
    /// [the reader (of the receiver socket), the sender end's reader (two-way)].
    pub readers: [Option<Reader>; 2],
    /// [receiver's, sender's (two-way)].
    pub peaks: [Peaks; 2],
    pub established_at: i64,
    pub rcv_established_at: i64,
    pub died_at: i64,
    pub receiver_client: bool,
    pub closed: bool,
    /// The receive queue's bytes x ns since the flow opened (Little's law; simulation.py
    /// `_note_queue`), the queue at the last look and when that was.
    pub q_area: i128,
    pub q_last: i64,
    pub q_t: i64,
}

impl Flow {
    /// Build flow `index` from its spec (simulation.py `Connection.__init__`): its
    /// receiver charges the host's `pool` from CPU index % ncpus, and its `memcg` if any.
    pub fn new(
        index: usize,
        spec: &FlowSpec,
        pool: &ProtoHandle,
        memcg: Option<&MemcgHandle>,
        ncpus: usize,
        local_peers: bool,
    ) -> Result<Self, String> {
        let l = &spec.link;
        let mut rcv = spec.rcv.make()?;
        rcv.set_proto(Arc::clone(pool), index % ncpus)?;
        if let Some(m) = memcg {
            rcv.set_memcg(Arc::clone(m)); // the host's sockets' cgroup
        }
        let mut snd = spec.snd.make()?;
        if local_peers {
            snd.set_proto(Arc::clone(pool), index % ncpus)?;
        }
        let shared_skbs = rcv.dev.shared;
        let rev_shared_skbs = spec.rev.is_some() && snd.dev.shared;
        // one GSO skb per transmission where the peer's device takes it whole and no rate
        // limiter would cut it (Device::gso_whole; simulation.py)
        let whole = l.rate_bps == 0 && l.burst == 0;
        snd.snd.gso_whole = whole && rcv.dev.gso_whole();
        rcv.snd.gso_whole = whole && snd.dev.gso_whole();
        let seed = spec.seed;
        let host_k = std::cell::OnceCell::new();
        let st = &spec.starts;
        let writer_app = started(&spec.writer, st[0]);
        let mut writer = Writer::new(
            &writer_app,
            SND,
            Timing::make_in(&writer_app, seed, STREAM_WRITER, &host_k),
        )?;
        if local_peers && shared_skbs && writer.kind == WriterKind::Bulk {
            writer.inline = l.delay_ab + l.delay_ba; // apps.py BulkWriter.inline
        }
        let reader_app = started(&spec.reader, st[1]);
        let reader = Reader::new(
            &reader_app,
            RCV,
            spec.duration,
            Timing::make_in(&reader_app, seed, STREAM_READER, &host_k),
        )?;
        let (rev_writer, rev_reader) = match &spec.rev {
            Some((w, r)) => {
                let (w, r) = (started(w, st[2]), started(r, st[3]));
                (
                    Some(Writer::new(
                        &w,
                        RCV,
                        Timing::make_in(&w, seed, STREAM_REV_WRITER, &host_k),
                    )?),
                    Some(Reader::new(
                        &r,
                        SND,
                        spec.duration,
                        Timing::make_in(&r, seed, STREAM_REV_READER, &host_k),
                    )?),
                )
            }
            None => (None, None),
        };
        Ok(Flow {
            index,
            cls: spec.cls,
            start: spec.start,
            stop: spec.stop,
            socks: [rcv, snd],
            links: [
                LinkDirection::new(l.delay_ab, l.rate_bps, l.queue_limit, l.loss, l.jitter)
                    .with_tbf(l.burst, l.limit),
                LinkDirection::new(l.delay_ba, l.rate_bps, l.queue_limit, 0.0, l.jitter)
                    .with_tbf(l.burst, l.limit),
            ],
            rng: LazyRandom::new(seed),
            jitter_rng: [LazyRandom::new(seed * 2 + 1), LazyRandom::new(seed * 2 + 2)],
            shared_skbs,
            rev_shared_skbs,
            writers: [Some(writer), rev_writer],
            readers: [Some(reader), rev_reader],
            peaks: [Peaks::default(); 2],
            established_at: -1,
            rcv_established_at: -1,
            died_at: -1,
            receiver_client: spec.receiver_client,
            closed: false,
            q_area: 0,
            q_last: 0,
            q_t: spec.start,
        })
    }
}

impl Flow {
    /// Ask the CPU for the queues socket `i` is about to work on -- the ends of its receive,
    /// retransmit and write queues, its outbox, and where the link it sends on queues the
    /// next segment -- and its counters (`mib`) as its event starts: each is a heap block of
    /// its own that, on a host of thousands of connections, is in memory, not in a cache,
    /// and the socket's own work on the event hides the wait. A hint: nothing computed
    /// changes.
    #[inline]
    pub fn prefetch_queues(&self, i: usize) {
        let sk = &self.socks[i];
        crate::prefetch::read::<crate::mib::Mib>(&sk.mib);
        crate::prefetch::deque_ends(&sk.mem.receive_queue);
        crate::prefetch::deque_ends(&sk.snd.rtx_queue);
        crate::prefetch::deque_ends(&sk.snd.write_queue);
        crate::prefetch::vec_tail(&sk.outbox);
        self.links[if i == SND { 0 } else { 1 }].prefetch_tail();
    }
}

/// `app` starting at `start` (a copy only when it differs).
fn started(app: &Arc<App>, start: i64) -> Arc<App> {
    if app.start == start {
        Arc::clone(app)
    } else {
        Arc::new(App {
            start,
            ..(**app).clone()
        })
    }
}

/// simulation.py `Simulation`: a host.
pub struct Simulation {
    pub sched: Scheduler<Event>,
    /// The flow being served (events of others switch it: `switch`).
    pub f: Box<Flow>,
    /// Its index.
    pub cur: usize,
    /// Every flow by index: None while being served (it is `f`), not yet built, or closed
    /// and dropped (its final numbers in `ended`).
    pub flows: Vec<Option<Box<Flow>>>,
    pub specs: Vec<FlowSpec>,
    /// Flows not yet built, latest start first.
    pending: Vec<usize>,
    /// Connections open now (sockstat's inuse).
    pub live: i64,
    pub samples: Vec<HostSample>,
    pub sample_every: i64,
    next_sample: i64,
    pub ncpus: usize,
    /// The peers share the host's pool too (RunSpec `local_peers`).
    pub local_peers: bool,
    /// The host's TCP memory pool, shared by its sockets (remote peers keep their own).
    pub pool: ProtoHandle,
    /// The host's sockets' memory cgroup, if any.
    pub memcg: Option<MemcgHandle>,
    /// The final numbers of closed flows (their sockets and apps dropped).
    pub ended: Vec<Option<FlowEnd>>,
    /// Every flow's timers, by index.
    pub timers: Vec<FlowTimers>,
    pub skip: bool,
    pub duration: i64,
    pub trace: TraceColumns,
    /// The receiver's wire when tapped: (t_ns, sent by the receiver, segment).
    pub tap: Option<Vec<(i64, bool, Segment)>>,
    started: bool,
    pub finished: bool,
    /// The first flow of this simulation (0 for a whole host; a part's first to start when
    /// it holds one CPU's flows: parallel.rs): built with it, the one served first.
    first: usize,
    /// Set when a user's Python patch raised (py_patch.rs): the run stops at the next event
    /// and its caller raises the exception.
    pub halt: Arc<AtomicBool>,
    /// `tcpsim validate`'s and `tcpsim replay`'s replay applications, in place of the writer /
    /// reader (replay.rs).
    pub replay_writer: Option<ReplayWriter>,
    pub replay_reader: Option<ReplayReader>,
    /// The outboxes the served flow's sockets write into (`swap_outboxes`); empty here.
    outboxes: [Vec<Segment>; 2],
    /// Ask the CPU for an event's heap blocks as it starts (`dispatch`): only on a host of
    /// enough flows that they leave the caches (PREFETCH_FLOWS); a hint either way.
    prefetch: bool,
}

/// The flows from which a host's sockets' queues are prefetched as each event starts: each
/// flow holds ~5 KB and its queues, so a few dozen fill a core's own caches; below that the
/// prefetches are only instructions (the single-connection cases of `tcpsim bench`).
pub(crate) const PREFETCH_FLOWS: usize = 64;

/// What is kept of a flow once it closed (tcpsim/host/outputs.py reads the same of a closed
/// Python connection).
pub struct FlowEnd {
    pub cls: usize,
    pub mib: Box<[(&'static str, i64)]>,
    pub written: i64,
    pub read_bytes: i64,
    pub received: i64,
    pub q_area: i128,
    pub peaks: Peaks,
    pub established_at: i64,
    pub start: i64,
    pub stop: i64,
}

/// A closed flow's counters as kept until the run's end: the core's that are not zero (a
/// missing one reads as zero: tcpsim/host/outputs.py `flow_counters`) and every patch
/// counter (shown even at zero). A host of 10 000 connections with churn closes tens of
/// thousands, most of their ~50 counters zero.
fn kept_counters(all: Vec<(&'static str, i64)>) -> Box<[(&'static str, i64)]> {
    let core = crate::mib::COUNTERS.len();
    all.into_iter()
        .enumerate()
        .filter(|&(i, (_, v))| v != 0 || i >= core)
        .map(|(_, c)| c)
        .collect()
}

impl FlowEnd {
    /// A flow's numbers now.
    pub fn of(f: &Flow) -> Self {
        FlowEnd {
            cls: f.cls,
            mib: kept_counters(f.socks[RCV].mib.values()),
            written: f.writers[0].as_ref().map_or(0, |w| w.written),
            read_bytes: f.readers[0].as_ref().map_or(0, |r| r.read_bytes),
            received: f.socks[RCV].rcv.bytes_received,
            q_area: f.q_area,
            peaks: f.peaks[RCV],
            established_at: f.established_at,
            start: f.start,
            stop: f.stop,
        }
    }
}

impl Simulation {
    /// A host of `specs` (at least one): the flows of time 0 (and flow 0 in any case) built
    /// now, opened by the first `run_some`.
    pub fn new(specs: Vec<FlowSpec>, spec: RunSpec) -> Result<Self, String> {
        let ncpus = spec.ncpus.max(1);
        let pool = ProtoMemory::new(spec.tcp_mem, ncpus, spec.pcpu_rsv).map(Arc::new)?;
        let memcg = match spec.memcg {
            Some((v, limit, other, atomic)) => {
                Some(Arc::new(MemCgroup::new(v, limit, other, atomic)?))
            }
            None => None,
        };
        Self::new_part(specs, spec, pool, memcg, |_| true, TraceColumns::new())
    }

    /// A simulation of the flows of `specs` that `owned` picks, on `pool` and `memcg`, its
    /// rows going to `trace`: a whole host (`new`), or one part of a host run in CPU order
    /// (parallel.rs), whose flows keep their host-wide indices.
    pub fn new_part(
        specs: Vec<FlowSpec>,
        spec: RunSpec,
        pool: ProtoHandle,
        memcg: Option<MemcgHandle>,
        owned: impl Fn(usize) -> bool,
        trace: TraceColumns,
    ) -> Result<Self, String> {
        if specs.is_empty() {
            return Err("a host needs at least one flow".into());
        }
        if specs.iter().any(|f| f.start < specs[0].start) {
            return Err("flow 0 must be the first to start".into());
        }
        let mut pending: Vec<usize> = (0..specs.len()).filter(|&i| owned(i)).collect();
        pending.sort_by_key(|&i| std::cmp::Reverse((specs[i].start, i)));
        let Some(&first) = pending.last() else {
            return Err("a part of a host needs at least one flow".into());
        };
        if specs[first].start <= 0 {
            pending.pop();
        }
        // the first flow is built now in any case (the one served before any event); a
        // flow is opened at its start
        let ncpus = spec.ncpus.max(1);
        let built = Box::new(Flow::new(
            first,
            &specs[first],
            &pool,
            memcg.as_ref(),
            ncpus,
            spec.local_peers,
        )?);
        let n = specs.len();
        let mut sim = Simulation {
            sched: Scheduler::new(),
            f: built,
            cur: first,
            flows: (0..n).map(|_| None).collect(),
            specs,
            pending,
            live: 0,
            samples: Vec::new(),
            sample_every: spec.sample_every,
            next_sample: 0,
            ncpus,
            local_peers: spec.local_peers,
            pool,
            memcg,
            ended: (0..n).map(|_| None).collect(),
            timers: vec![FlowTimers::default(); n],
            skip: spec.skip,
            duration: spec.duration,
            trace,
            tap: if spec.tap { Some(Vec::new()) } else { None },
            started: false,
            finished: false,
            first,
            halt: Arc::default(),
            replay_writer: None,
            replay_reader: None,
            outboxes: Default::default(),
            prefetch: n >= PREFETCH_FLOWS,
        };
        sim.prepare();
        while sim
            .pending
            .last()
            .is_some_and(|&i| i != first && sim.specs[i].start <= 0)
        {
            let i = sim.pending.pop().expect("a pending flow");
            sim.build(i)?;
        }
        sim.switch(first);
        sim.advise_memory();
        Ok(sim)
    }

    /// Build flow `i` and make it the one served (simulation.py `_build_due`, one flow).
    fn build(&mut self, i: usize) -> Result<(), String> {
        let f = Box::new(Flow::new(
            i,
            &self.specs[i],
            &self.pool,
            self.memcg.as_ref(),
            self.ncpus,
            self.local_peers,
        )?);
        self.note_deadlines();
        self.swap_outboxes();
        let prev = std::mem::replace(&mut self.f, f);
        self.swap_outboxes();
        self.flows[self.cur] = Some(prev);
        self.cur = i;
        self.prepare();
        self.advise_memory();
        Ok(())
    }

    /// On a host of enough flows that they leave the caches (as `prefetch`), have the heap
    /// it grew into held in huge pages (src/hugepages.rs): called as flows are built, when
    /// the heap grows. A hint: nothing computed changes.
    #[inline]
    fn advise_memory(&self) {
        if self.prefetch {
            crate::hugepages::advise_heap();
        }
    }

    /// The current flow's first moves after it is built (its trace rows, the shared-skb
    /// release of veth and loopback).
    fn prepare(&mut self) {
        self.drain(RCV);
        self.drain(SND);
        if self.f.shared_skbs {
            self.f.socks[RCV].on_peer_release(0);
            self.drain(RCV);
        }
        if self.f.rev_shared_skbs {
            self.f.socks[SND].on_peer_release(0);
            self.drain(SND);
        }
    }

    /// Serve flow `c` (it becomes `f`). False when it is gone (closed and dropped).
    #[inline]
    pub fn switch(&mut self, c: usize) -> bool {
        c == self.cur || self.switch_to(c)
    }

    #[cold]
    fn switch_to(&mut self, c: usize) -> bool {
        let Some(next) = self.flows[c].take() else {
            return false;
        };
        self.note_deadlines();
        self.swap_outboxes();
        let prev = std::mem::replace(&mut self.f, next);
        self.swap_outboxes();
        if !prev.closed {
            self.flows[self.cur] = Some(prev);
        }
        self.cur = c;
        true
    }

    /// Exchange the served flow's sockets' outboxes with the host's (`outboxes`) where they
    /// are empty: called as a flow stops being served (the host's come back) and as the next
    /// one starts (it gets them). A socket's segments go from its outbox to the link at the
    /// end of each of its events (`after`), so the served flow writes into the two outboxes
    /// the host has just drained, in the caches, where each socket's own, last written
    /// thousands of events before on a host of thousands of connections, made every segment
    /// sent a write to memory. (Segments left in an outbox stay with their socket.)
    #[inline]
    fn swap_outboxes(&mut self) {
        for (sk, hot) in self.f.socks.iter_mut().zip(&mut self.outboxes) {
            if sk.outbox.is_empty() {
                std::mem::swap(&mut sk.outbox, hot);
            }
        }
    }

    /// Keep the current flow's sockets' next deadlines in `timers` as it stops being served
    /// (its sockets change only while it is served).
    #[inline]
    fn note_deadlines(&mut self) {
        let [r, s] = &self.f.socks;
        self.timers[self.cur].due = [r.next_deadline(), s.next_deadline()];
    }

    /// Schedule `ev` of the current flow.
    pub(crate) fn at(&mut self, t: i64, prio: u8, ev: Ev) {
        self.sched.at(t, prio, (self.cur as u32, ev));
    }

    // -- the sockets, their events drained into the trace in the order they happen ---------

    /// Move socket `i`'s trace events into the columns.
    fn drain(&mut self, i: usize) {
        if self.f.socks[i].events.is_empty() {
            return;
        }
        // by reference, the socket's vector kept (an event is a few hundred bytes: moving
        // each twice was the largest cost of a traced run after the Parquet writing)
        let sk = &mut self.f.socks[i];
        let flow = self.cur as i32;
        for ev in &sk.events {
            self.trace.push(flow, i, &sk.name, ev);
        }
        sk.events.clear();
    }

    pub(crate) fn sk_write(&mut self, i: usize, now: i64, n: i64) -> i64 {
        let got = self.f.socks[i].write(now, n);
        self.drain(i);
        got
    }

    /// apps.py: the call just made holds the socket `ns` more (App.owns_socket).
    pub(crate) fn sk_hold(&mut self, i: usize, now: i64, ns: i64) {
        self.f.socks[i].hold(now, ns);
        self.drain(i);
    }

    pub(crate) fn sk_read(&mut self, i: usize, now: i64, n: i64) -> i64 {
        let got = self.f.socks[i].read(now, n);
        self.drain(i);
        got
    }

    pub(crate) fn sk_count_inert_reads(
        &mut self,
        i: usize,
        t0: i64,
        period: i64,
        n: i64,
        limit: i64,
    ) -> i64 {
        let got = self.f.socks[i].count_inert_reads(t0, period, n, limit);
        self.drain(i);
        got
    }

    pub(crate) fn sk_apply_inert_reads(&mut self, i: usize, t0: i64, period: i64, n: i64, c: i64) {
        self.f.socks[i].apply_inert_reads(t0, period, n, c);
        self.drain(i);
    }

    // -- moving things around ---------------------------------------------------------------

    /// Drain what socket `i` produced: segments to the link, timers to the scheduler,
    /// wake-ups to the applications. Re-entered when a woken reader reads.
    pub fn after(&mut self, i: usize) {
        let now = self.sched.now;
        if !self.f.socks[i].outbox.is_empty() {
            let dir = if i == SND { 0 } else { 1 };
            if i == RCV && self.cur == 0 {
                if let Some(tap) = self.tap.as_mut() {
                    let out = &self.f.socks[i].outbox;
                    tap.extend(out.iter().map(|s| (now, true, s.clone())));
                }
            }
            // drained in place: the socket keeps its outbox's allocation (taking the vector
            // made a new one for every event that sent something)
            let f = &mut *self.f;
            let ev = (self.cur as u32, Ev::Arrive(dir as u32));
            for seg in f.socks[i].outbox.drain(..) {
                f.links[dir].send(&mut self.sched, seg, &mut f.rng, &mut f.jitter_rng[dir], ev);
            }
        }
        self.arm(i);
        if i == RCV {
            self.note_peaks(RCV);
            self.note_queue();
            if self.f.socks[RCV].readable {
                self.reader_on_readable(0, now);
            }
            if self.f.writers[1].as_ref().is_some_and(|w| w.blocked)
                && self.f.socks[RCV].can_queue()
            {
                self.writer_on_writable(1, now);
            }
        } else {
            if self.f.readers[1].is_some() {
                self.note_peaks(SND);
                if self.f.socks[SND].readable {
                    self.reader_on_readable(1, now);
                }
            }
            if self.f.writers[0].as_ref().is_some_and(|w| w.blocked)
                && self.f.socks[SND].can_queue()
            {
                self.writer_on_writable(0, now);
            }
            if self.replay_writer.as_ref().is_some_and(|w| w.blocked)
                && self.f.socks[SND].can_queue()
            {
                self.replay_on_writable();
            }
        }
        if !self.f.socks[i].error.is_empty() && self.f.died_at < 0 {
            self.f.died_at = self.sched.now;
        }
    }

    /// Track a receiving socket's extremes.
    fn note_peaks(&mut self, i: usize) {
        let now = self.sched.now;
        let f = &mut *self.f;
        let sk = &f.socks[i];
        let p = &mut f.peaks[i];
        if sk.mem.sk_rmem_alloc > p.rmem {
            p.rmem = sk.mem.sk_rmem_alloc;
            p.t_rmem = now;
        }
        if sk.mem.sk_rcvbuf > p.rcvbuf {
            p.rcvbuf = sk.mem.sk_rcvbuf;
        }
        let q = sk.recv_q();
        if q > p.recv_q {
            p.recv_q = q;
        }
    }

    /// simulation.py `_note_queue`: the receive queue's bytes x time since the last look.
    fn note_queue(&mut self) {
        let now = self.sched.now;
        let f = &mut *self.f;
        f.q_area += i128::from(f.q_last) * i128::from(now - f.q_t);
        f.q_t = now;
        f.q_last = f.socks[RCV].recv_q();
    }

    /// Make sure a timer event is pending at or before the socket's next deadline.
    fn arm(&mut self, i: usize) {
        let d = self.f.socks[i].next_deadline();
        self.arm_at(self.cur, i, d);
    }

    /// `arm` of flow `c`'s socket `i` whose next deadline is `d`.
    #[inline]
    fn arm_at(&mut self, c: usize, i: usize, d: i64) {
        if d != 0 {
            let ts = &mut self.timers[c];
            let pending = ts.at[i];
            if pending == 0 || d < pending {
                ts.at[i] = d;
                self.sched.at(d, TIMER, (c as u32, Ev::Timer(i as u32)));
            }
        }
    }

    /// A timer wake-up of flow `c`'s socket `i` for deadline `d` that finds the flow closed
    /// or the socket's deadline not come only re-arms (the head of `timer`): done here
    /// from `timers`, without serving the flow. False when the timer is due (`timer`
    /// runs it).
    #[inline]
    fn timer_rearm_only(&mut self, c: usize, i: usize, d: i64) -> bool {
        let ts = &mut self.timers[c];
        if ts.closed {
            return true;
        }
        let due = if c == self.cur {
            self.f.socks[i].next_deadline()
        } else {
            ts.due[i]
        };
        if due != 0 && due <= self.sched.now {
            return false;
        }
        if ts.at[i] == d {
            ts.at[i] = 0;
        }
        #[cfg(debug_assertions)]
        if let Some(f) = self.flow(c) {
            assert_eq!(f.socks[i].next_deadline(), due, "flow {c}: deadline");
        }
        self.arm_at(c, i, due);
        true
    }

    fn established(&self, i: usize) -> bool {
        self.f.socks[i].conn.state == TcpState::Established
    }

    /// simulation.py `_to_rcv`.
    fn deliver_rcv(&mut self, seg: Segment) {
        if self.f.closed {
            return;
        }
        let now = self.sched.now;
        if self.cur == 0 {
            if let Some(tap) = self.tap.as_mut() {
                tap.push((now, false, seg.clone()));
            }
        }
        self.reader_catch_up(0, now);
        let was_open = self.established(RCV);
        self.f.socks[RCV].on_segment(now, &seg);
        self.drain(RCV);
        if self.f.rev_shared_skbs {
            let una = self.f.socks[RCV].snd.snd_una;
            self.f.socks[SND].on_peer_release(una);
            self.drain(SND);
        }
        self.after(RCV);
        self.reader_replan(0);
        if !was_open && self.established(RCV) {
            self.rcv_established();
        }
    }

    /// simulation.py `_to_snd`.
    fn deliver_snd(&mut self, seg: Segment) {
        if self.f.closed {
            return;
        }
        let now = self.sched.now;
        let rr = self.f.readers[1].is_some();
        if rr {
            self.reader_catch_up(1, now);
        }
        let was_open = self.established(SND);
        self.f.socks[SND].on_segment(now, &seg);
        self.drain(SND);
        if self.f.shared_skbs {
            let una = self.f.socks[SND].snd.snd_una;
            self.f.socks[RCV].on_peer_release(una);
            self.drain(RCV);
        }
        self.after(SND);
        if rr {
            self.reader_replan(1);
        }
        if !was_open && self.established(SND) {
            self.established_now();
        }
    }

    /// simulation.py `_timer`.
    fn timer(&mut self, i: usize, d: i64) {
        if self.timers[self.cur].at[i] == d {
            self.timers[self.cur].at[i] = 0;
        }
        if self.f.closed {
            return;
        }
        let due = self.f.socks[i].next_deadline();
        let now = self.sched.now;
        if due == 0 || due > now {
            self.arm(i);
            return;
        }
        let r = if i == RCV { 0 } else { 1 };
        let has_reader = self.f.readers[r].is_some();
        if has_reader {
            self.reader_catch_up(r, now);
        }
        let was_open = self.established(i);
        self.f.socks[i].on_timer(now);
        self.drain(i);
        self.after(i);
        if has_reader {
            self.reader_replan(r);
        }
        if !was_open && self.established(i) {
            if i == RCV {
                self.rcv_established();
            } else {
                self.established_now();
            }
        }
    }

    /// simulation.py `_established`: the sender end is open, its writer starts.
    fn established_now(&mut self) {
        if self.f.established_at < 0 {
            self.f.established_at = self.sched.now;
            if self.replay_writer.is_some() {
                self.replay_write_next();
            } else {
                self.writer_begin(0);
            }
        }
    }

    /// The receiver end is open: its writer (two-way scenarios) may start.
    fn rcv_established(&mut self) {
        if self.f.rcv_established_at < 0 {
            self.f.rcv_established_at = self.sched.now;
            if self.f.writers[1].is_some() {
                self.writer_begin(1);
            }
        }
    }

    // -- opening and closing ----------------------------------------------------------------

    /// simulation.py `Connection.open`: the current flow connects, its apps start.
    fn open(&mut self) {
        self.live += 1;
        let (client, server) = if self.f.receiver_client {
            (RCV, SND)
        } else {
            (SND, RCV)
        };
        let now = self.sched.now;
        self.f.socks[server].listen();
        self.drain(server);
        self.f.socks[client].connect(now);
        self.drain(client);
        self.after(client);
        if self.replay_reader.is_some() {
            self.replay_read_next();
        } else {
            self.reader_next_phase(0);
        }
        if self.f.readers[1].is_some() {
            self.reader_next_phase(1);
        }
        if self.f.stop != 0 {
            let stop = self.f.stop;
            self.at(stop, TIMER, Ev::Close);
        }
    }

    /// simulation.py `_open`: after opening flows, the next start is woken.
    fn wake_next_start(&mut self) {
        if let Some(&i) = self.pending.last() {
            let t = self.specs[i].start;
            self.sched.at(t, TIMER, (i as u32, Ev::OpenDue));
        }
    }

    /// simulation.py `_open_due`: build and open every flow whose start has come.
    fn open_due(&mut self) {
        let now = self.sched.now;
        let mut built = Vec::new();
        while self
            .pending
            .last()
            .is_some_and(|&i| self.specs[i].start <= now)
        {
            let i = self.pending.pop().expect("a pending flow");
            if i == self.first {
                built.push(i); // built with the host
                continue;
            }
            if let Err(e) = self.build(i) {
                // the specs were built by the same code as flow 0's: cannot fail here
                panic!("flow {i}: {e}");
            }
            built.push(i);
        }
        for i in built {
            self.switch(i);
            self.open();
        }
        self.wake_next_start();
    }

    /// simulation.py `Connection.close`.
    fn close(&mut self) {
        let now = self.sched.now;
        self.reader_catch_up(0, now);
        if self.f.readers[1].is_some() {
            self.reader_catch_up(1, now);
        }
        self.note_queue();
        self.f.closed = true;
        self.timers[self.cur].closed = true;
        for i in [RCV, SND] {
            self.f.socks[i].destroy(now);
            self.drain(i);
        }
        self.live -= 1;
        self.ended[self.cur] = Some(FlowEnd::of(&self.f));
    }

    // -- running ------------------------------------------------------------------------------

    /// Open the flows built at time 0 (the head of simulation.py `run`).
    fn start(&mut self) {
        let first: Vec<usize> = (0..self.flows.len())
            .filter(|&i| (i == self.cur || self.flows[i].is_some()) && self.specs[i].start <= 0)
            .collect();
        for i in first {
            self.switch(i);
            self.open();
        }
        self.wake_next_start();
        self.started = true;
    }

    /// The host at time `t` (simulation.py `sample`).
    fn sample(&self, t: i64) -> HostSample {
        HostSample {
            t,
            inuse: if self.local_peers {
                2 * self.live
            } else {
                self.live
            },
            mem: self.pool.memory_allocated(),
            pressure: self.pool.under_pressure(),
            memcg: self
                .memcg
                .as_ref()
                .map_or(-1, |m| m.usage.load(std::sync::atomic::Ordering::Relaxed)),
        }
    }

    /// Take the samples due before an event at `t` (the host's state is the same until it).
    fn sample_until(&mut self, t: i64) {
        while self.sample_every != 0 && self.next_sample < t && self.next_sample <= self.duration {
            let s = self.sample(self.next_sample);
            self.samples.push(s);
            self.next_sample += self.sample_every;
        }
    }

    /// Run events until the trace holds at least `max_rows` rows or `max_steps` events have
    /// run, or the run is over (then the final catch-up is applied, `finished` is set).
    pub fn run_some(&mut self, max_rows: usize, max_steps: u64) {
        if !self.started {
            self.start();
        }
        let until = self.duration;
        let mut n = 0u64;
        if max_rows <= MAX_GROUP_ROWS {
            self.trace.reserve(max_rows);
        }
        while self.trace.rows() < max_rows && n < max_steps {
            if self.halt.load(Ordering::Relaxed) {
                return;
            }
            if self.sample_every != 0 {
                let t = self.sched.peek().unwrap_or(i64::MAX);
                self.sample_until(t);
            }
            if !self.step(until) {
                self.finish();
                return;
            }
            n += 1;
        }
    }

    /// Run the next event if it is due at or before `until`; false if none is.
    #[inline]
    pub fn step(&mut self, until: i64) -> bool {
        let Some((c, ev)) = self.sched.pop_until(until) else {
            return false;
        };
        self.prefetch_next();
        if let Ev::Timer(i) = ev {
            if self.timer_rearm_only(c as usize, i as usize, self.sched.now) {
                return true;
            }
        }
        if matches!(ev, Ev::OpenDue) {
            self.open_due();
        } else if self.switch(c as usize) && !self.f.closed {
            self.dispatch(ev);
        }
        true
    }

    /// Open the flows of time 0 if not yet done (the head of `run_some`).
    pub fn begin(&mut self) {
        if !self.started {
            self.start();
        }
    }

    /// The (time, priority) of the next event, if one is due by the end of the run.
    #[inline]
    pub fn next_key(&self) -> Option<(i64, u8)> {
        self.sched.peek_key().filter(|&(t, _)| t <= self.duration)
    }

    /// Ask the CPU for the next event and its connection while this one is served (a
    /// hint: nothing computed changes). On a host of thousands of connections, each
    /// event's connection is otherwise read from memory when its event starts.
    #[inline]
    fn prefetch_next(&self) {
        if let Some(c) = self.sched.peek_tag() {
            if let Some(Some(f)) = self.flows.get(c as usize) {
                crate::prefetch::read::<Flow>(f);
            }
        }
    }

    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.sample_until(i64::MAX);
        let end = self.duration + 1;
        for c in 0..self.flows.len() {
            if (c == self.cur || self.flows[c].is_some()) && self.switch(c) && !self.f.closed {
                self.reader_catch_up(0, end);
                if self.f.readers[1].is_some() {
                    self.reader_catch_up(1, end);
                }
                self.note_queue();
            }
        }
        self.switch(0);
        self.finished = true;
    }

    /// Flow `c`, built and not dropped (the current one included).
    pub fn flow(&self, c: usize) -> Option<&Flow> {
        if c == self.cur {
            Some(&self.f)
        } else {
            self.flows[c].as_deref()
        }
    }

    /// Ask the CPU for what event `ev` of the current flow is about to read and write beyond
    /// the flow itself (prefetched one event ahead): its entry of `timers`, its socket's
    /// queues (`Flow::prefetch_queues`), an application's next lateness (`Timing::prefetch`).
    /// A hint: nothing computed changes.
    #[inline]
    fn prefetch_for(&self, ev: Ev) {
        crate::prefetch::lines(&self.timers[self.cur], 1);
        match ev {
            Ev::Arrive(d) => self.f.prefetch_queues(if d == 0 { RCV } else { SND }),
            Ev::WriterTimedTick(w) | Ev::WriterTick(w) => {
                self.f.prefetch_queues(1 - w as usize);
                if let Some(tm) = self.f.writers[w as usize]
                    .as_ref()
                    .and_then(|w| w.timing.as_ref())
                {
                    tm.prefetch();
                }
            }
            Ev::ReaderTimedWake(r, _) | Ev::ReaderTimedRead(r) | Ev::ReaderWake(r, _) => {
                self.f.prefetch_queues(r as usize);
                if let Some(tm) = self.f.readers[r as usize]
                    .as_ref()
                    .and_then(|r| r.timing.as_ref())
                {
                    tm.prefetch();
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, ev: Ev) {
        if self.prefetch {
            self.prefetch_for(ev);
        }
        match ev {
            Ev::Arrive(d) => {
                let ev = (self.cur as u32, Ev::Arrive(d));
                let dir = d as usize;
                let seg = self.f.links[dir].arrive(&mut self.sched, ev);
                if dir == 0 {
                    self.deliver_rcv(seg)
                } else {
                    self.deliver_snd(seg)
                }
            }
            Ev::Timer(i) => self.timer(i as usize, self.sched.now),
            Ev::WriterTick(w) => self.writer_tick(w as usize),
            Ev::WriterFill(w) => self.writer_fill(w as usize),
            Ev::ReaderEnter(r, id) => self.reader_enter(r as usize, id),
            Ev::ReaderLeave(r, id) => self.reader_leave(r as usize, id),
            Ev::ReaderWake(r, g) => self.reader_wake(r as usize, g),
            Ev::WriterTimedTick(w) => self.writer_timed_tick(w as usize),
            Ev::ReaderTimedWake(r, g) => self.reader_timed_wake(r as usize, g),
            Ev::ReaderTimedRead(r) => self.reader_timed_read(r as usize),
            Ev::ReplayWrite => self.replay_write(),
            Ev::ReplayRead => self.replay_read(),
            Ev::OpenDue => self.open_due(),
            Ev::Close => self.close(),
        }
    }
}

#[cfg(test)]
mod tests {
    /// An event and its flow fit 16 bytes, so a key of the schedule is 32 (scheduler.rs):
    /// two to a cache line, a 4-ary heap node's children in two.
    #[test]
    fn an_event_is_16_bytes() {
        assert_eq!(std::mem::size_of::<super::Event>(), 16);
    }
}
