//! One simulated run (tcpsim/engine/simulation.py): two TCP endpoints, a link between them, a
//! writer and a reader -- and, in a two-way scenario, a second writer at the receiver end and
//! a reader at the sender end.
//!
//! The simulation only moves things around: segments from a socket's outbox onto a link,
//! deliveries and timer expiries into sockets, wake-ups to applications. Everything TCP does
//! happens inside the socket. The run's summary is built in Python from `Stats`-like numbers
//! (tcpsim/engine/native.py), by the same code as the Python engine's.

use super::apps::{
    App, Reader, Timing, Writer, STREAM_READER, STREAM_REV_READER, STREAM_REV_WRITER, STREAM_WRITER,
};
use super::link::LinkDirection;
use super::random::Random;
use super::replay::{ReplayReader, ReplayWriter};
use super::scheduler::{Scheduler, TIMER};
use super::trace::TraceColumns;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::segment::Segment;
use crate::socket::TcpSocket;
use crate::state::TcpState;

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
    Arrive(usize),
    /// A timer wake-up of a socket for deadline `d` (simulation.py `_timer`).
    Timer(usize, i64),
    WriterTick(usize),
    WriterFill(usize),
    ReaderEnter(usize, u64),
    ReaderLeave(usize, u64),
    ReaderWake(usize, u64),
    /// A timed application's late wakeup (apps.py `timed_tick`, `_timed_wake`, `_timed_read`).
    WriterTimedTick(usize),
    ReaderTimedWake(usize, u64),
    ReaderTimedRead(usize),
    /// A tick of `tcpsim validate`'s (or `tcpsim replay`'s) replay writer / reader (replay.rs).
    ReplayWrite,
    ReplayRead,
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

/// What a run needs besides its two sockets: the scenario's other fields.
pub struct RunSpec {
    pub link: LinkSpec,
    pub seed: i128,
    pub duration: i64,
    pub receiver_client: bool,
    pub skip: bool,
    pub writer: App,
    pub reader: App,
    pub rev: Option<(App, App)>,
    /// Record the receiver's wire (the pcap tap).
    pub tap: bool,
}

/// Extremes of a receiving socket's state over the run (sampled after every event).
#[derive(Clone, Copy, Debug, Default)]
pub struct Peaks {
    pub rmem: i64,
    pub rcvbuf: i64,
    pub recv_q: i64,
    pub t_rmem: i64,
}

/// simulation.py `Simulation`.
pub struct Simulation {
    pub sched: Scheduler<Ev>,
    /// [receiver, sender].
    pub socks: [TcpSocket; 2],
    /// [to the receiver (ab), to the sender (ba)].
    pub links: [LinkDirection; 2],
    rng: Random,
    jitter_rng: [Random; 2],
    timer_at: [i64; 2],
    shared_skbs: bool,
    rev_shared_skbs: bool,
    /// [the writer (to the sender socket), the receiver end's writer (two-way)].
    pub writers: [Option<Writer>; 2],
    /// [the reader (of the receiver socket), the sender end's reader (two-way)].
    pub readers: [Option<Reader>; 2],
    /// [receiver's, sender's (two-way)].
    pub peaks: [Peaks; 2],
    pub established_at: i64,
    pub rcv_established_at: i64,
    pub died_at: i64,
    pub skip: bool,
    pub duration: i64,
    receiver_client: bool,
    pub trace: TraceColumns,
    /// The receiver's wire when tapped: (t_ns, sent by the receiver, segment).
    pub tap: Option<Vec<(i64, bool, Segment)>>,
    started: bool,
    pub finished: bool,
    /// Set when a user's Python patch raised (py_patch.rs): the run stops at the next event
    /// and its caller raises the exception.
    pub halt: Arc<AtomicBool>,
    /// `tcpsim validate`'s and `tcpsim replay`'s replay applications, in place of the writer /
    /// reader (replay.rs).
    pub replay_writer: Option<ReplayWriter>,
    pub replay_reader: Option<ReplayReader>,
}

impl Simulation {
    /// Wire a run: `rcv` and `snd` are the two sockets, built as the Python engine builds
    /// them (the receiver with the scenario's sysctls, SO_RCVBUF already set).
    pub fn new(rcv: TcpSocket, snd: TcpSocket, spec: RunSpec) -> Result<Self, String> {
        let l = &spec.link;
        let shared_skbs = rcv.dev.shared;
        let rev_shared_skbs = spec.rev.is_some() && snd.dev.shared;
        let seed = spec.seed;
        let writer = Writer::new(
            &spec.writer,
            SND,
            Timing::make(&spec.writer, seed, STREAM_WRITER),
        )?;
        let reader = Reader::new(
            &spec.reader,
            RCV,
            spec.duration,
            Timing::make(&spec.reader, seed, STREAM_READER),
        )?;
        let (rev_writer, rev_reader) = match &spec.rev {
            Some((w, r)) => (
                Some(Writer::new(
                    w,
                    RCV,
                    Timing::make(w, seed, STREAM_REV_WRITER),
                )?),
                Some(Reader::new(
                    r,
                    SND,
                    spec.duration,
                    Timing::make(r, seed, STREAM_REV_READER),
                )?),
            ),
            None => (None, None),
        };
        let mut sim = Simulation {
            sched: Scheduler::new(),
            socks: [rcv, snd],
            links: [
                LinkDirection::new(l.delay_ab, l.rate_bps, l.queue_limit, l.loss, l.jitter)
                    .with_tbf(l.burst, l.limit),
                LinkDirection::new(l.delay_ba, l.rate_bps, l.queue_limit, 0.0, l.jitter)
                    .with_tbf(l.burst, l.limit),
            ],
            rng: Random::new(spec.seed),
            jitter_rng: [
                Random::new(spec.seed * 2 + 1),
                Random::new(spec.seed * 2 + 2),
            ],
            timer_at: [0, 0],
            shared_skbs,
            rev_shared_skbs,
            writers: [Some(writer), rev_writer],
            readers: [Some(reader), rev_reader],
            peaks: [Peaks::default(); 2],
            established_at: -1,
            rcv_established_at: -1,
            died_at: -1,
            skip: spec.skip,
            duration: spec.duration,
            receiver_client: spec.receiver_client,
            trace: TraceColumns::new(),
            tap: if spec.tap { Some(Vec::new()) } else { None },
            started: false,
            finished: false,
            halt: Arc::default(),
            replay_writer: None,
            replay_reader: None,
        };
        sim.drain(RCV);
        sim.drain(SND);
        if sim.shared_skbs {
            sim.socks[RCV].on_peer_release(0);
            sim.drain(RCV);
        }
        if sim.rev_shared_skbs {
            sim.socks[SND].on_peer_release(0);
            sim.drain(SND);
        }
        Ok(sim)
    }

    // -- the sockets, their events drained into the trace in the order they happen ---------

    /// Move socket `i`'s trace events into the columns.
    fn drain(&mut self, i: usize) {
        if self.socks[i].events.is_empty() {
            return;
        }
        // by reference, the socket's vector kept (an event is a few hundred bytes: moving
        // each twice was the largest cost of a traced run after the Parquet writing)
        let sk = &mut self.socks[i];
        for ev in &sk.events {
            self.trace.push(i, &sk.name, ev);
        }
        sk.events.clear();
    }

    pub(crate) fn sk_write(&mut self, i: usize, now: i64, n: i64) -> i64 {
        let got = self.socks[i].write(now, n);
        self.drain(i);
        got
    }

    pub(crate) fn sk_read(&mut self, i: usize, now: i64, n: i64) -> i64 {
        let got = self.socks[i].read(now, n);
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
        let got = self.socks[i].count_inert_reads(t0, period, n, limit);
        self.drain(i);
        got
    }

    pub(crate) fn sk_apply_inert_reads(&mut self, i: usize, t0: i64, period: i64, n: i64, c: i64) {
        self.socks[i].apply_inert_reads(t0, period, n, c);
        self.drain(i);
    }

    // -- moving things around ---------------------------------------------------------------

    /// Drain what socket `i` produced: segments to the link, timers to the scheduler,
    /// wake-ups to the applications. Re-entered when a woken reader reads.
    pub fn after(&mut self, i: usize) {
        let now = self.sched.now;
        if !self.socks[i].outbox.is_empty() {
            let out = self.socks[i].take_outbox();
            let dir = if i == SND { 0 } else { 1 };
            if i == RCV {
                if let Some(tap) = self.tap.as_mut() {
                    tap.extend(out.iter().map(|s| (now, true, s.clone())));
                }
            }
            for seg in out {
                self.links[dir].send(
                    &mut self.sched,
                    seg,
                    &mut self.rng,
                    &mut self.jitter_rng[dir],
                    Ev::Arrive(dir),
                );
            }
        }
        self.arm(i);
        if i == RCV {
            self.note_peaks(RCV);
            if self.socks[RCV].readable {
                self.reader_on_readable(0, now);
            }
            if self.writers[1].as_ref().is_some_and(|w| w.blocked) && self.socks[RCV].can_queue() {
                self.writer_on_writable(1, now);
            }
        } else {
            if self.readers[1].is_some() {
                self.note_peaks(SND);
                if self.socks[SND].readable {
                    self.reader_on_readable(1, now);
                }
            }
            if self.writers[0].as_ref().is_some_and(|w| w.blocked) && self.socks[SND].can_queue() {
                self.writer_on_writable(0, now);
            }
            if self.replay_writer.as_ref().is_some_and(|w| w.blocked) && self.socks[SND].can_queue()
            {
                self.replay_on_writable();
            }
        }
        if !self.socks[i].error.is_empty() && self.died_at < 0 {
            self.died_at = self.sched.now;
        }
    }

    /// Track a receiving socket's extremes.
    fn note_peaks(&mut self, i: usize) {
        let sk = &self.socks[i];
        let p = &mut self.peaks[i];
        if sk.mem.sk_rmem_alloc > p.rmem {
            p.rmem = sk.mem.sk_rmem_alloc;
            p.t_rmem = self.sched.now;
        }
        if sk.mem.sk_rcvbuf > p.rcvbuf {
            p.rcvbuf = sk.mem.sk_rcvbuf;
        }
        let q = sk.recv_q();
        if q > p.recv_q {
            p.recv_q = q;
        }
    }

    /// Make sure a timer event is pending at or before the socket's next deadline.
    fn arm(&mut self, i: usize) {
        let d = self.socks[i].next_deadline();
        if d != 0 {
            let pending = self.timer_at[i];
            if pending == 0 || d < pending {
                self.timer_at[i] = d;
                self.sched.at(d, TIMER, Ev::Timer(i, d));
            }
        }
    }

    fn established(&self, i: usize) -> bool {
        self.socks[i].conn.state == TcpState::Established
    }

    /// simulation.py `_to_rcv`.
    fn deliver_rcv(&mut self, seg: Segment) {
        let now = self.sched.now;
        if let Some(tap) = self.tap.as_mut() {
            tap.push((now, false, seg.clone()));
        }
        self.reader_catch_up(0, now);
        let was_open = self.established(RCV);
        self.socks[RCV].on_segment(now, &seg);
        self.drain(RCV);
        if self.rev_shared_skbs {
            let una = self.socks[RCV].snd.snd_una;
            self.socks[SND].on_peer_release(una);
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
        let now = self.sched.now;
        let rr = self.readers[1].is_some();
        if rr {
            self.reader_catch_up(1, now);
        }
        let was_open = self.established(SND);
        self.socks[SND].on_segment(now, &seg);
        self.drain(SND);
        if self.shared_skbs {
            let una = self.socks[SND].snd.snd_una;
            self.socks[RCV].on_peer_release(una);
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
        if self.timer_at[i] == d {
            self.timer_at[i] = 0;
        }
        let due = self.socks[i].next_deadline();
        let now = self.sched.now;
        if due == 0 || due > now {
            self.arm(i);
            return;
        }
        let r = if i == RCV { 0 } else { 1 };
        let has_reader = self.readers[r].is_some();
        if has_reader {
            self.reader_catch_up(r, now);
        }
        let was_open = self.established(i);
        self.socks[i].on_timer(now);
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
        if self.established_at < 0 {
            self.established_at = self.sched.now;
            if self.replay_writer.is_some() {
                self.replay_write_next();
            } else {
                self.writer_begin(0);
            }
        }
    }

    /// The receiver end is open: its writer (two-way scenarios) may start.
    fn rcv_established(&mut self) {
        if self.rcv_established_at < 0 {
            self.rcv_established_at = self.sched.now;
            if self.writers[1].is_some() {
                self.writer_begin(1);
            }
        }
    }

    // -- running ------------------------------------------------------------------------------

    /// Open the connection and start the applications (the head of simulation.py `run`).
    fn start(&mut self) {
        let (client, server) = if self.receiver_client {
            (RCV, SND)
        } else {
            (SND, RCV)
        };
        self.socks[server].listen();
        self.drain(server);
        self.socks[client].connect(0);
        self.drain(client);
        self.after(client);
        if self.replay_reader.is_some() {
            self.replay_read_next();
        } else {
            self.reader_next_phase(0);
        }
        if self.readers[1].is_some() {
            self.reader_next_phase(1);
        }
        self.started = true;
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
            let Some(ev) = self.sched.pop_until(until) else {
                self.finish();
                return;
            };
            n += 1;
            self.dispatch(ev);
        }
    }

    fn finish(&mut self) {
        if self.finished {
            return;
        }
        let end = self.duration + 1;
        self.reader_catch_up(0, end);
        if self.readers[1].is_some() {
            self.reader_catch_up(1, end);
        }
        self.finished = true;
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::Arrive(dir) => {
                let seg = self.links[dir].arrive(&mut self.sched, Ev::Arrive(dir));
                if dir == 0 {
                    self.deliver_rcv(seg)
                } else {
                    self.deliver_snd(seg)
                }
            }
            Ev::Timer(i, d) => self.timer(i, d),
            Ev::WriterTick(w) => self.writer_tick(w),
            Ev::WriterFill(w) => self.writer_fill(w),
            Ev::ReaderEnter(r, id) => self.reader_enter(r, id),
            Ev::ReaderLeave(r, id) => self.reader_leave(r, id),
            Ev::ReaderWake(r, g) => self.reader_wake(r, g),
            Ev::WriterTimedTick(w) => self.writer_timed_tick(w),
            Ev::ReaderTimedWake(r, g) => self.reader_timed_wake(r, g),
            Ev::ReaderTimedRead(r) => self.reader_timed_read(r),
            Ev::ReplayWrite => self.replay_write(),
            Ev::ReplayRead => self.replay_read(),
        }
    }
}
