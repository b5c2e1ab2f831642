//! Application writers and readers, driven by the scheduler (tcpsim/engine/apps.py).
//!
//! Periodic applications act on a grid of ticks (start, start+T, ...). The tick-by-tick engine
//! runs every tick; the time-skipping engine runs only the ticks that can change something and
//! applies the others exactly, in bulk, when something else is about to happen:
//!
//! * a blocked writer's ticks are no-ops until the send buffer has room, so it sleeps until
//!   the socket is writable and resumes at the next grid tick;
//! * a periodic reader's reads that free no skb and trigger no ACK are "inert"
//!   (`TcpSocket::count_inert_reads`); they are applied lazily (`apply_inert_reads`) just
//!   before the next event reaches the socket, and the reader is woken for the first read
//!   that is not.
//!
//! The writers and readers are plain records; what they do is `impl Simulation` below, with
//! the Python methods' names, because every action goes through the simulation's sockets.

use super::random::{LazyRandom, Random};
use super::scheduler::{READER, WRITER};
use super::simulation::{Ev, Simulation};
use crate::constants::NS_PER_S;
use std::cell::OnceCell;
use std::sync::Arc;

/// Beyond any run (apps.py `_FAR`).
pub const FAR: i64 = 1 << 62;

/// A scenario's writer or reader (tcpsim/workload.py `App`: sizes in bytes, times in ns).
#[derive(Clone, Debug, Default)]
pub struct App {
    pub kind: String,
    pub bytes: i64,
    pub every: i64,
    pub bytes2: i64,
    pub every2: i64,
    pub period: i64,
    pub fast_for: i64,
    pub slow_for: i64,
    pub fraction: f64,
    pub start: i64,
    /// The measured latency table's quantiles (ns; empty: none), app_latency.json.
    pub latency_table: Arc<[i64]>,
    /// The captured lateness sequences the app replays in blocks (ns, one per capture;
    /// empty: none) and the block length in wakeups: the captures of the run's host preset
    /// (`[timing] host`, app_latency.py `HOSTS`; app_latency_blocks*.bin), chosen by
    /// name where the run's config is built (engine/native.py `_app`, as apps.py `Timing`
    /// does for the Python engine), so both engines replay the same captures.
    /// Shared (`Arc`): a host's flows of one class replay the same captures.
    pub latency_sequences: Vec<Arc<[i64]>>,
    pub latency_block: i64,
    pub latency_ns: i64,
    pub call_cost: i64,
    pub copy_rate: i64,
    /// ns each recv()/send() that moves data holds the socket (workload.py
    /// `owns_socket`; 0: never).
    pub owns_socket: i64,
}

/// apps.py `STREAMS`: the generator of each application's wakeup latencies is
/// `random.Random(8 * seed + k)` (writer 3, reader 4, receiver-end writer 5, sender-end
/// reader 6); never equal, within a run, to the link's `seed`, `2 seed + 1`, `2 seed + 2`.
/// A captured sequence draws from it once per block after the first (the first block is
/// the capture's start).
pub const STREAM_WRITER: i128 = 3;
pub const STREAM_READER: i128 = 4;
pub const STREAM_REV_WRITER: i128 = 5;
pub const STREAM_REV_READER: i128 = 6;
/// apps.py `HOST_STREAM`: `random.Random(8 * seed + 7)`'s first draw picks the capture every
/// app of the run replays (captured sequences).
pub const STREAM_HOST: i128 = 7;

const UNIT_BITS: u32 = 53;

/// app_latency.py `pick_capture`: the capture (0..n-1) a run replays, from a 53-bit draw.
pub fn pick_capture(k: u64, n: usize) -> usize {
    ((u128::from(k) * n as u128) >> UNIT_BITS) as usize
}

/// app_latency.py `BlockSequence`: a moving-block bootstrap of one captured sequence --
/// the first `block` wakeups from the capture's start (wakeup 0, no draw), then blocks of
/// `block` consecutive wakeups from starts drawn uniformly among those with a whole block
/// after them (docs/app-latency.md, "Why the memory sat at half the kernel's").
pub struct BlockSequence {
    seq: Arc<[i64]>,
    block: usize,
    pos: usize,
    left: usize,
}

impl BlockSequence {
    pub fn new(seq: Arc<[i64]>, block: usize) -> Self {
        assert!(
            block > 0 && block <= seq.len(),
            "a block longer than its sequence"
        );
        // The first block starts at the capture's start and takes no draw.
        BlockSequence {
            seq,
            block,
            pos: 0,
            left: block,
        }
    }

    /// `needs_draw`: the next wakeup begins a block after the first (and so consumes a draw).
    pub fn needs_draw(&self) -> bool {
        self.left == 0
    }

    /// `draw(k)`: the next wakeup's lateness (ns); `k` is used only when a block after the
    /// first begins.
    pub fn draw(&mut self, k: u64) -> i64 {
        if self.left == 0 {
            let span = (self.seq.len() - self.block + 1) as u128;
            self.pos = ((u128::from(k) * span) >> UNIT_BITS) as usize;
            self.left = self.block;
        }
        self.left -= 1;
        let v = self.seq[self.pos];
        self.pos += 1;
        v
    }
}

/// apps.py `Timing`: how late a wakeup is, how long a recv() keeps a reader busy.
pub struct Timing {
    /// Behind a box: most apps replay no capture, and every flow of a host holds up to
    /// four timings, read from memory at each of their wakeups.
    blocks: Option<Box<BlockSequence>>,
    /// The app's latency table, shared by every flow of its class.
    table: Arc<[i64]>,
    fixed: i64,
    call_cost: i64,
    copy_rate: i64,
    /// `random.Random(8 * seed + stream)`, made at the first draw (a fixed lateness or a
    /// replayed capture's first block draws nothing).
    rng: LazyRandom,
}

/// app_latency.py `table_lookup` on a draw k / 2**53: integer interpolation of the quantiles.
pub fn table_lookup(table: &[i64], k: u64) -> i64 {
    let n = (table.len() - 1) as u128;
    let p = u128::from(k) * n;
    let i = (p >> 53) as usize;
    let f = p & ((1u128 << 53) - 1);
    let d = (table[i + 1] - table[i]) as i128;
    table[i] + ((d * f as i128) >> 53) as i64
}

impl Timing {
    /// apps.py `make_timing`: None for exact timing (no generator is made).
    pub fn make(app: &App, seed: i128, stream: i128) -> Option<Timing> {
        Self::make_in(app, seed, stream, &OnceCell::new())
    }

    /// `make` for one of a flow's apps: `host_k` holds the flow's host-stream draw (the
    /// same for each of its apps: drawn once, by the first that replays a capture).
    pub fn make_in(app: &App, seed: i128, stream: i128, host_k: &OnceCell<u64>) -> Option<Timing> {
        let timed = !app.latency_table.is_empty()
            || !app.latency_sequences.is_empty()
            || app.latency_ns != 0
            || app.call_cost != 0
            || app.copy_rate != 0
            || app.owns_socket != 0;
        timed.then(|| Timing {
            blocks: block_sequence(app, seed, host_k),
            table: Arc::clone(&app.latency_table),
            fixed: app.latency_ns,
            call_cost: app.call_cost,
            copy_rate: app.copy_rate,
            rng: LazyRandom::new(seed * 8 + stream),
        })
    }

    /// Timing.late(): the next wakeup of the replayed capture (a draw starts each block
    /// after the first), a fresh draw from the table, or the fixed lateness.
    pub fn late(&mut self) -> i64 {
        if let Some(b) = self.blocks.as_mut() {
            let k = if b.needs_draw() {
                self.rng.get().random_k53()
            } else {
                0
            };
            b.draw(k)
        } else if self.table.is_empty() {
            self.fixed
        } else {
            let k = self.rng.get().random_k53();
            table_lookup(&self.table, k)
        }
    }

    /// Ask the CPU for what the next `late()` reads: the generator's state and the replayed
    /// capture's next value (a hint: src/prefetch.rs).
    #[inline]
    pub fn prefetch(&self) {
        self.rng.prefetch();
        if let Some(b) = &self.blocks {
            if let Some(v) = b.seq.get(b.pos) {
                crate::prefetch::lines(v, 1);
            }
        }
    }

    /// Timing.busy(got): the cost of a recv() that copied `got` bytes.
    pub fn busy(&self, got: i64) -> i64 {
        let copy = if self.copy_rate != 0 {
            (i128::from(got) * 8 * i128::from(NS_PER_S) / i128::from(self.copy_rate)) as i64
        } else {
            0
        };
        self.call_cost + copy
    }
}

/// apps.py `_block_sequence`: the run's capture (the host stream's first draw, the same for
/// every app of the run, kept in `host_k`) of the app's captured sequences; None when it
/// replays none.
fn block_sequence(app: &App, seed: i128, host_k: &OnceCell<u64>) -> Option<Box<BlockSequence>> {
    if app.latency_sequences.is_empty() {
        return None;
    }
    let k = *host_k.get_or_init(|| Random::new(seed * 8 + STREAM_HOST).random_k53());
    let c = pick_capture(k, app.latency_sequences.len());
    Some(Box::new(BlockSequence::new(
        Arc::clone(&app.latency_sequences[c]),
        app.latency_block as usize,
    )))
}

impl App {
    /// workload.py `App.rate_at`: (bytes, every) in force `t` ns after the start.
    pub fn rate_at(&self, t: i64) -> (i64, i64) {
        if self.kind != "oscillating" || self.period <= 0 || (t.max(0) / self.period) % 2 == 0 {
            (self.bytes, self.every)
        } else {
            (self.bytes2, self.every2)
        }
    }
}

/// Ceiling of a / b for b > 0 (Python's `-(-a // b)`).
pub fn ceil_div(a: i64, b: i64) -> i64 {
    -((-a).div_euclid(b))
}

// -- writers ----------------------------------------------------------------------------------

/// A writer's kind: `periodic` (`n` bytes every `period`) or `bulk` (`n`-byte pieces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterKind {
    Periodic,
    Bulk,
}

/// apps.py `PeriodicWriter` and `BulkWriter`.
pub struct Writer {
    pub kind: WriterKind,
    /// The socket written to.
    pub sk: usize,
    pub n: i64,
    pub period: i64,
    pub start: i64,
    pub pending: i64,
    pub blocked: bool,
    pub written: i64,
    busy: bool,
    /// Bulk on a loopback between two sockets of the host: the round trip (ns) a send()
    /// that transmits takes before the next one (apps.py `BulkWriter.inline`); 0 = off.
    pub inline: i64,
    pub timing: Option<Timing>,
    /// Timed: the grid's first tick, and the ticks run so far.
    origin: i64,
    ticks: i64,
    /// ns a send() holds the socket (App.owns_socket).
    pub owns: i64,
}

impl Writer {
    /// apps.py `stalled`: a send() under way that the send buffer has not taken whole.
    pub fn stalled(&self) -> bool {
        match self.kind {
            WriterKind::Periodic => self.pending > 0,
            WriterKind::Bulk => self.blocked,
        }
    }

    /// A scenario's writer (apps.py `make_writer`), writing to socket `sk`, late by
    /// `timing` (periodic only).
    pub fn new(app: &App, sk: usize, timing: Option<Timing>) -> Result<Self, String> {
        let kind = match app.kind.as_str() {
            "periodic" => WriterKind::Periodic,
            "bulk" => WriterKind::Bulk,
            k => return Err(format!("unknown writer kind {k:?}")),
        };
        Ok(Writer {
            kind,
            sk,
            n: app.bytes,
            period: app.every,
            start: app.start,
            pending: 0,
            blocked: false,
            written: 0,
            busy: false,
            inline: 0,
            timing: if kind == WriterKind::Periodic {
                timing
            } else {
                None
            },
            origin: 0,
            ticks: 0,
            owns: app.owns_socket,
        })
    }
}

// -- readers ----------------------------------------------------------------------------------

/// What a reader does during a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseKind {
    Never,
    Fast,
    /// apps.py's "relay": fast, but only between the sends of its end's writer.
    Relay,
    Periodic,
}

/// One stretch of reader behaviour (apps.py `Phase`); `id` stands for Python's identity.
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    pub kind: PhaseKind,
    pub start: i64,
    pub end: i64,
    pub n: i64,
    pub period: i64,
    pub id: u32,
}

/// The phase sequence of a reader kind (apps.py `READER_PHASES`), produced lazily: the
/// `oscil` reader's slow phase depends on what the reader read before it.
pub struct PhaseGen {
    /// The reader's app, shared with the other flows of its class.
    app: Arc<App>,
    duration: i64,
    t: i64,
    stage: u8,
    done: bool,
}

impl PhaseGen {
    pub fn new(app: &Arc<App>, duration: i64) -> Result<Self, String> {
        if ![
            "never",
            "fast",
            "blocking",
            "relay",
            "periodic",
            "oscillating",
            "oscil",
        ]
        .contains(&app.kind.as_str())
        {
            return Err(format!("unknown reader kind {:?}", app.kind));
        }
        Ok(PhaseGen {
            app: Arc::clone(app),
            duration,
            t: app.start,
            stage: 0,
            done: false,
        })
    }

    /// The next phase (kind, start, end, n, period), None when the sequence has ended;
    /// `best` is the reader's best one-second amount so far (`oscil`).
    fn next(&mut self, best: i64) -> Option<(PhaseKind, i64, i64, i64, i64)> {
        if self.done {
            return None;
        }
        let a = &self.app;
        match a.kind.as_str() {
            "never" | "fast" | "blocking" | "relay" | "periodic" => {
                self.done = true;
                Some(match a.kind.as_str() {
                    "never" => (PhaseKind::Never, a.start, FAR, 0, 0),
                    // a blocking reader reads when a fast one would while the model has no
                    // application wakeup latency (apps.py READER_PHASES)
                    "fast" | "blocking" => (PhaseKind::Fast, a.start, FAR, a.bytes, 0),
                    "relay" => (PhaseKind::Relay, a.start, FAR, a.bytes, 0),
                    _ => (PhaseKind::Periodic, a.start, FAR, a.bytes, a.every),
                })
            }
            "oscillating" => {
                if self.t >= self.duration {
                    self.done = true;
                    return None;
                }
                let t = self.t;
                let (n, per) = a.rate_at(t - a.start);
                self.t += a.period;
                Some((PhaseKind::Periodic, t, t + a.period, n, per))
            }
            _ => {
                let t = self.t;
                if self.stage == 0 {
                    if t >= self.duration {
                        self.done = true;
                        return None;
                    }
                    self.stage = 1;
                    self.t += a.fast_for;
                    Some((PhaseKind::Fast, t, t + a.fast_for, 0, 0))
                } else {
                    self.stage = 0;
                    let n = ((best as f64 * a.fraction) as i64).max(1);
                    self.t += a.slow_for;
                    Some((PhaseKind::Periodic, t, t + a.slow_for, n, NS_PER_S))
                }
            }
        }
    }
}

/// apps.py `Reader`: reads from socket `sk` following a sequence of phases.
pub struct Reader {
    pub sk: usize,
    phases: PhaseGen,
    pub phase: Phase,
    ids: u32,
    /// Time of the first read not yet applied (periodic).
    pub next_read: i64,
    /// Invalidates stale wake-ups.
    pub gen: u32,
    pub read_bytes: i64,
    pub second_start: i64,
    pub second_bytes: i64,
    pub best_second: i64,
    busy: bool,
    pub timing: Option<Timing>,
    /// Timed fast/blocking reader: asleep in recv(), waking (late), or busy in a call.
    state: u8,
    /// ns a recv() holds the socket (App.owns_socket).
    pub owns: i64,
}

const ASLEEP: u8 = 0;
const WAKING: u8 = 1;
const BUSY: u8 = 2;

impl Reader {
    pub fn new(
        app: &Arc<App>,
        sk: usize,
        duration: i64,
        timing: Option<Timing>,
    ) -> Result<Self, String> {
        Ok(Reader {
            timing,
            state: ASLEEP,
            sk,
            phases: PhaseGen::new(app, duration)?,
            phase: Phase {
                kind: PhaseKind::Never,
                start: 0,
                end: 0,
                n: 0,
                period: 0,
                id: 0,
            },
            ids: 0,
            next_read: FAR,
            gen: 0,
            read_bytes: 0,
            second_start: 0,
            second_bytes: 0,
            best_second: 0,
            busy: false,
            owns: app.owns_socket,
        })
    }

    /// Reads of the current phase scheduled strictly before t, not yet applied.
    fn reads_before(&self, t: i64) -> i64 {
        let p = &self.phase;
        if p.kind != PhaseKind::Periodic || self.next_read >= t || self.timing.is_some() {
            return 0;
        }
        let last = t.min(p.end);
        ceil_div(last - self.next_read, p.period).max(0)
    }

    /// Bytes read per one-second bucket, for the oscil reader's high-water mark.
    fn account_second(&mut self, now: i64, got: i64) {
        if now - self.second_start >= NS_PER_S {
            self.best_second = self.best_second.max(self.second_bytes);
            self.second_start = now - (now - self.second_start).rem_euclid(NS_PER_S);
            self.second_bytes = 0;
        }
        self.second_bytes += got;
    }
}

// -- what they do -----------------------------------------------------------------------------

impl Simulation {
    fn writer(&mut self, w: usize) -> &mut Writer {
        self.f.writers[w].as_mut().expect("a writer")
    }

    fn reader(&mut self, r: usize) -> &mut Reader {
        self.f.readers[r].as_mut().expect("a reader")
    }

    /// `begin()` of writer `w`: its first tick (periodic) or fill (bulk).
    pub fn writer_begin(&mut self, w: usize) {
        let now = self.sched.now;
        let wr = self.writer(w);
        let (kind, start) = (wr.kind, wr.start);
        let t = start.max(now);
        if let Some(tm) = wr.timing.as_mut() {
            let late = tm.late();
            wr.origin = t;
            self.at(t + late, WRITER, Ev::WriterTimedTick(w as u32));
            return;
        }
        let ev = match kind {
            WriterKind::Periodic => Ev::WriterTick(w as u32),
            WriterKind::Bulk => Ev::WriterFill(w as u32),
        };
        self.at(t, WRITER, ev);
    }

    /// PeriodicWriter.tick: write (the rest of) `n` bytes; block when the buffer is full.
    pub fn writer_tick(&mut self, w: usize) {
        let sk = self.writer(w).sk;
        if !self.f.socks[sk].error.is_empty() {
            return;
        }
        let now = self.sched.now;
        let was_stalled = self.writer(w).pending > 0;
        let pending = self.writer_send(w, sk, now);
        self.writer_sent(w, sk, now, was_stalled);
        if pending != 0 && self.skip && !self.f.socks[sk].can_queue() {
            self.writer(w).blocked = true;
            return;
        }
        let period = self.writer(w).period;
        self.at(now + period, WRITER, Ev::WriterTick(w as u32));
    }

    /// PeriodicWriter.timed_tick: a late wakeup runs every tick that fell due, back to
    /// back, then sleeps until the next due tick plus a fresh draw.
    pub fn writer_timed_tick(&mut self, w: usize) {
        let sk = self.writer(w).sk;
        if !self.f.socks[sk].error.is_empty() {
            return;
        }
        let now = self.sched.now;
        let wr = self.writer(w);
        let due = (now - wr.origin).div_euclid(wr.period) + 1 - wr.ticks;
        wr.ticks += due;
        let was_stalled = wr.pending > 0;
        for _ in 0..due {
            if self.writer_send(w, sk, now) != 0 {
                break; // blocked: the later ticks write nothing
            }
        }
        self.writer_sent(w, sk, now, was_stalled);
        let wr = self.writer(w);
        let next = wr.origin + wr.ticks * wr.period;
        let late = wr.timing.as_mut().map_or(0, Timing::late);
        self.at(next + late, WRITER, Ev::WriterTimedTick(w as u32));
    }

    /// PeriodicWriter._send: one send() of the rest of the pending write, or of a fresh
    /// `n` bytes; the bytes still pending.
    fn writer_send(&mut self, w: usize, sk: usize, now: i64) -> i64 {
        let wr = self.writer(w);
        if wr.pending == 0 {
            wr.pending = wr.n;
        }
        let pending = wr.pending;
        let got = self.sk_write(sk, now, pending);
        let owns = self.writer(w).owns;
        if got != 0 && owns != 0 {
            self.sk_hold(sk, now, owns);
        }
        let wr = self.writer(w);
        wr.pending -= got;
        wr.written += got;
        wr.pending
    }

    /// PeriodicWriter._sent: after the send()s of a wakeup, the socket's actions; a send()
    /// that had stalled and is now done returns, and the end's relay reader reads.
    fn writer_sent(&mut self, w: usize, sk: usize, now: i64, was_stalled: bool) {
        self.after(sk);
        if was_stalled && self.writer(w).pending == 0 {
            self.reader_after_write(1 - w, now);
        }
    }

    /// BulkWriter.fill: write `n`-byte pieces while the send buffer takes them whole.
    pub fn writer_fill(&mut self, w: usize) {
        let sk = self.writer(w).sk;
        if self.writer(w).busy || !self.f.socks[sk].error.is_empty() {
            return;
        }
        self.writer(w).busy = true;
        let now = self.sched.now;
        let chunk = self.writer(w).n;
        loop {
            let got = self.sk_write(sk, now, chunk);
            let owns = self.writer(w).owns;
            if got != 0 && owns != 0 {
                self.sk_hold(sk, now, owns);
            }
            self.writer(w).written += got;
            if got < chunk {
                break;
            }
            let inline = self.writer(w).inline;
            if inline > 0 && !self.f.socks[sk].outbox.is_empty() {
                // loopback: the round trip is in the send() (apps.py BulkWriter)
                self.writer(w).busy = false;
                self.at(now + inline, WRITER, Ev::WriterFill(w as u32));
                self.after(sk);
                return;
            }
        }
        let wr = self.writer(w);
        wr.blocked = true;
        wr.busy = false;
        self.after(sk);
    }

    /// `on_writable(now)`: the send buffer has room again.
    pub fn writer_on_writable(&mut self, w: usize, now: i64) {
        let wr = self.writer(w);
        match wr.kind {
            WriterKind::Periodic => {
                if !wr.blocked || wr.timing.is_some() {
                    return;
                }
                wr.blocked = false;
                let k = ceil_div(now - wr.start, wr.period);
                let t = wr.start + k * wr.period;
                self.at(t, WRITER, Ev::WriterTick(w as u32));
            }
            WriterKind::Bulk => {
                if wr.blocked && !wr.busy {
                    wr.blocked = false;
                    self.reader_after_write(1 - w, now); // the send() returned: a relay reads
                    self.writer_fill(w);
                }
            }
        }
    }

    /// Reader.begin / _next_phase: take the next phase and schedule entering it.
    pub fn reader_next_phase(&mut self, r: usize) {
        let now = self.sched.now;
        let rd = self.reader(r);
        let best = rd.best_second.max(rd.second_bytes);
        let (kind, start, end, n, period) =
            rd.phases
                .next(best)
                .unwrap_or((PhaseKind::Never, now, FAR, 0, 0));
        rd.ids += 1;
        rd.phase = Phase {
            kind,
            start,
            end,
            n,
            period,
            id: rd.ids,
        };
        let id = rd.ids;
        self.at(start.max(now), READER, Ev::ReaderEnter(r as u32, id));
    }

    /// Reader._enter(phase).
    pub fn reader_enter(&mut self, r: usize, id: u32) {
        if self.reader(r).phase.id != id {
            return;
        }
        let now = self.sched.now;
        self.reader_catch_up(r, now);
        let rd = self.reader(r);
        rd.next_read = FAR;
        rd.gen += 1;
        let p = rd.phase;
        if p.end < FAR {
            self.at(p.end, READER, Ev::ReaderLeave(r as u32, id));
        }
        match p.kind {
            PhaseKind::Fast | PhaseKind::Relay => self.reader_on_readable(r, now),
            PhaseKind::Periodic => {
                self.reader(r).next_read = p.start;
                self.reader_plan(r, now);
            }
            PhaseKind::Never => {}
        }
    }

    /// Reader._leave(phase).
    pub fn reader_leave(&mut self, r: usize, id: u32) {
        if self.reader(r).phase.id == id {
            let now = self.sched.now;
            self.reader_catch_up(r, now);
            self.reader_next_phase(r);
        }
    }

    /// Reader._wake(gen): a periodic read that may matter is due.
    pub fn reader_wake(&mut self, r: usize, gen: u32) {
        let rd = self.reader(r);
        if gen != rd.gen || rd.phase.kind != PhaseKind::Periodic {
            return;
        }
        let now = self.sched.now;
        self.reader_catch_up(r, now);
        let rd = self.reader(r);
        if rd.next_read != now {
            return;
        }
        let (sk, p) = (rd.sk, rd.phase);
        if self.skip && self.sk_count_inert_reads(sk, now, p.period, p.n, 1) != 0 {
            self.reader_plan(r, now);
            return;
        }
        self.reader_read(r, now, p.n);
        self.reader(r).next_read = now + p.period;
        self.reader_plan(r, now);
    }

    /// Reader.catch_up(t): apply the (inert) reads scheduled before t.
    pub fn reader_catch_up(&mut self, r: usize, t: i64) {
        let rd = self.reader(r);
        let count = rd.reads_before(t);
        if count != 0 {
            let (sk, p, next) = (rd.sk, rd.phase, rd.next_read);
            self.sk_apply_inert_reads(sk, next, p.period, p.n, count);
            let rd = self.reader(r);
            rd.read_bytes += count * p.n;
            rd.next_read += count * p.period;
        }
    }

    /// Reader.replan(): something changed the socket; recompute the next read that matters.
    pub fn reader_replan(&mut self, r: usize) {
        let skip = self.skip;
        let rd = self.reader(r);
        if rd.phase.kind == PhaseKind::Periodic && skip && rd.timing.is_none() {
            let now = self.sched.now;
            self.reader_plan(r, now);
        }
    }

    /// Reader._plan(now).
    fn reader_plan(&mut self, r: usize, now: i64) {
        let rd = self.reader(r);
        let (sk, p) = (rd.sk, rd.phase);
        if rd.next_read >= p.end || !self.f.socks[sk].error.is_empty() {
            return;
        }
        let rd = self.reader(r);
        rd.gen += 1;
        let gen = rd.gen;
        let mut t = rd.next_read;
        if let Some(tm) = rd.timing.as_mut() {
            let t = now.max(t + tm.late());
            self.at(t, READER, Ev::ReaderTimedWake(r as u32, gen));
            return;
        }
        if self.skip {
            let horizon = self.sched.peek().map_or(p.end, |h| h.min(p.end));
            let mut limit = (ceil_div(horizon - t, p.period) + 1).max(1);
            limit = limit.min(ceil_div(p.end - t, p.period));
            t += self.sk_count_inert_reads(sk, t, p.period, p.n, limit) * p.period;
            if t >= p.end {
                return;
            }
        }
        self.at(t, READER, Ev::ReaderWake(r as u32, gen));
    }

    /// Reader._timed_wake(gen): a late periodic wakeup reads once per tick that fell due,
    /// each recv() keeping the reader busy for its cost; then it sleeps until the next due
    /// tick plus a draw.
    pub fn reader_timed_wake(&mut self, r: usize, gen: u32) {
        let now = self.sched.now;
        let rd = self.reader(r);
        if gen != rd.gen || rd.phase.kind != PhaseKind::Periodic || rd.timing.is_none() {
            return;
        }
        let p = rd.phase;
        while self.reader(r).next_read <= now {
            let got = self.reader_read(r, now, p.n);
            let rd = self.reader(r);
            let busy = rd.timing.as_ref().map_or(0, |tm| tm.busy(got));
            rd.next_read += p.period;
            if busy != 0 {
                if rd.next_read <= now + busy {
                    rd.gen += 1;
                    let gen = rd.gen;
                    self.at(now + busy, READER, Ev::ReaderTimedWake(r as u32, gen));
                    return;
                }
                break;
            }
        }
        self.reader_plan(r, now);
    }

    /// Reader._timed_read(): a timed fast/blocking reader's recv() returns with up to its
    /// buffer; while data stays queued it calls again once the call's cost has passed (no
    /// wakeup), and sleeps when a call finds nothing.
    pub fn reader_timed_read(&mut self, r: usize) {
        let now = self.sched.now;
        let rd = self.reader(r);
        if rd.phase.kind != PhaseKind::Fast || rd.timing.is_none() {
            return;
        }
        let cap = if rd.phase.n != 0 { rd.phase.n } else { 1 << 20 };
        rd.state = BUSY;
        loop {
            let got = self.reader_read(r, now, cap);
            let rd = self.reader(r);
            if got == 0 {
                rd.state = ASLEEP;
                return;
            }
            let busy = rd.timing.as_ref().map_or(0, |tm| tm.busy(got));
            if busy != 0 {
                self.at(now + busy, READER, Ev::ReaderTimedRead(r as u32));
                return;
            }
        }
    }

    /// Reader.on_readable(now): a fast reader drains what is queued; a relay reader too,
    /// unless its end's writer (writer 1 - r: reader 0 is the receiver end's) is stalled.
    pub fn reader_on_readable(&mut self, r: usize, now: i64) {
        let kind = self.reader(r).phase.kind;
        let stalled = self.f.writers[1 - r].as_ref().is_some_and(|w| w.stalled());
        if kind == PhaseKind::Fast || (kind == PhaseKind::Relay && !stalled) {
            self.reader_drain(r, now);
        }
    }

    /// Reader.after_write(now): the end's writer got out of send(); a relay drains.
    fn reader_after_write(&mut self, r: usize, now: i64) {
        if self.f.readers[r]
            .as_ref()
            .is_some_and(|rd| rd.phase.kind == PhaseKind::Relay)
        {
            self.reader_drain(r, now);
        }
    }

    /// Reader._drain(now).
    fn reader_drain(&mut self, r: usize, now: i64) {
        let rd = self.reader(r);
        if rd.busy {
            return;
        }
        if let Some(tm) = rd.timing.as_mut() {
            if rd.state == ASLEEP {
                rd.state = WAKING;
                let late = tm.late();
                self.at(now + late, READER, Ev::ReaderTimedRead(r as u32));
            }
            return;
        }
        rd.busy = true;
        let cap = if rd.phase.n != 0 { rd.phase.n } else { 1 << 20 };
        // A read that takes less than asked has emptied the queue or reached the FIN; the
        // recv() after it would find nothing and is not made (as tcpsim/engine/apps.py).
        while self.reader_read(r, now, cap) == cap {}
        self.reader(r).busy = false;
    }

    /// Reader._read(now, n).
    fn reader_read(&mut self, r: usize, now: i64, n: i64) -> i64 {
        let sk = self.reader(r).sk;
        let got = self.sk_read(sk, now, n);
        if got != 0 {
            let owns = self.reader(r).owns;
            if owns != 0 {
                self.sk_hold(sk, now, owns);
            }
            let rd = self.reader(r);
            rd.read_bytes += got;
            rd.account_second(now, got);
            self.after(sk);
        }
        got
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The draws of apps.py: `table_lookup([0, 1000, 5000, 1000000], u)` for five
    /// `random.Random(8 * 7 + 3).random()`, as CPython gives them.
    #[test]
    fn latency_draws_match_python() {
        let app = App {
            latency_table: vec![0, 1000, 5000, 1_000_000].into(),
            ..App::default()
        };
        let mut tm = Timing::make(&app, 7, STREAM_WRITER).expect("timed");
        let got: Vec<i64> = (0..5).map(|_| tm.late()).collect();
        assert_eq!(got, vec![672, 798_931, 838_044, 68, 543_047]);
    }

    /// The block draws of apps.py on two small captures: seed 1 replays the second
    /// (`random.Random(8 + 7)`), blocks of 3 from starts drawn by `random.Random(8 + 3)`,
    /// as CPython gives them (tests/engine/test_app_timing.py holds the Python side).
    #[test]
    fn block_draws_match_python() {
        let app = App {
            latency_sequences: vec![
                (0..20).map(|i| i * 10).collect::<Vec<i64>>().into(),
                (0..20).map(|i| 1000 + i * 10).collect::<Vec<i64>>().into(),
            ],
            latency_block: 3,
            ..App::default()
        };
        let mut tm = Timing::make(&app, 1, STREAM_WRITER).expect("timed");
        let got: Vec<i64> = (0..9).map(|_| tm.late()).collect();
        // the first block is the run's capture (1) from its start; then starts 8, 10, 10, ...
        assert_eq!(
            got,
            vec![1000, 1010, 1020, 1080, 1090, 1100, 1100, 1110, 1120]
        );
    }

    #[test]
    fn exact_timing_makes_no_generator_and_a_cost_adds_the_copy() {
        assert!(Timing::make(&App::default(), 1, STREAM_READER).is_none());
        let app = App {
            call_cost: 5_000,
            copy_rate: 8_000_000_000,
            ..App::default()
        };
        let mut tm = Timing::make(&app, 1, STREAM_READER).expect("timed");
        assert_eq!(tm.busy(1_000), 5_000 + 1_000);
        assert_eq!(tm.late(), 0);
    }
}
