//! A host run in CPU order, on several threads when that cannot change a thing
//! (docs/hosts.md "Both cores").
//!
//! The flows of a host touch each other only through what the host shares: the TCP memory
//! pool (src/protmem.rs), the memory cgroup, the host's samples -- and, in the one-schedule
//! engine (`Simulation`), through the schedule itself: a periodic reader skips reads up to
//! the next event *of the host* (apps.rs `reader_plan`) and same-time events run in the
//! order they were scheduled host-wide, so one flow's events depend on every other's.
//!
//! Here the host is cut into parts, one per CPU: flow i belongs to part i % ncpus, the CPU
//! it charges the pool from, so every per-CPU counter of the pool (forward-alloc reserve,
//! socket count) has its flows in one part. Each part is a `Simulation` of its own flows
//! with its own schedule, all on the host's one pool. The run's order -- *CPU order* -- is:
//! events by (time, priority, part), each part's own in its schedule's order; a reader's
//! horizon is the next event of its part (the Python engine runs the same order:
//! tcpsim/engine/simulation.py `Simulation._run`). That order is defined without threads,
//! and `HostRun` runs it either way:
//! - in order on one thread (the parts' next events merged), or
//! - a window at a time (up to each sample), the parts shared out over the threads, when
//!   every decision the pool takes in the window is known not to depend on the other parts:
//!   no memory cgroup, no pressure at the start, and the global counter below tcp_mem[0]
//!   throughout. Below tcp_mem[0] __sk_mem_raise_allocated() grants and changes nothing
//!   else, and the senders' and clamp's "allocated < tcp_mem[0]" tests hold, whatever the
//!   other CPUs did; the per-CPU reserves flush in each part's own order. Whether the
//!   counter stayed below is checked after the window from each CPU's largest net flush
//!   (`ProtoMemory::window_peak`: the counter at the start plus those maxima bounds it in
//!   any interleaving). A window that fails the check is not kept: the run starts over from
//!   time 0, that window in order, the others on threads where they may (after three
//!   restarts, every window from the last failed one in order).
//!
//! Both ways give the same bytes (tests/host/test_host_threads.py).

use super::simulation::{FlowSpec, HostSample, RunSpec, Simulation, PREFETCH_FLOWS};
use super::trace::TraceColumns;
use crate::memcg::{MemCgroup, MemcgHandle};
use crate::protmem::{ProtoHandle, ProtoMemory};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// A host run in CPU order: the parts after the first (the caller holds that one, the
/// `Simulation` whose numbers are read at the end) and what it takes to start over.
pub struct HostRun {
    specs: Vec<FlowSpec>,
    spec: RunSpec,
    rest: Vec<Simulation>,
    pool: ProtoHandle,
    memcg: Option<MemcgHandle>,
    /// Threads a window may run on (1: every window in order on this one; the same bytes
    /// for any number).
    threads: usize,
    /// Some socket is traced: every window in order, the first part's trace lent to the
    /// part that runs, so the rows come in the run's order.
    traced: bool,
    /// Windows that failed the check on threads: run in order from the restart on (and,
    /// after `MAX_RESTARTS`, every window from the last of them).
    failed: Vec<usize>,
    /// The most the global counter rose in a window run on threads (pages): a window is
    /// not tried on threads when twice that would reach tcp_mem[0] (a guess that saves
    /// starting over; the check after the window is what decides).
    rise: i64,
    done: bool,
    /// Windows run on threads and in order, and restarts.
    pub windows_threaded: u64,
    pub windows_ordered: u64,
    pub restarts: u32,
    /// Measuring (`probe`): the windows that may run on threads run their groups one after
    /// the other on this thread (the same bytes), each timed; `busy_ns` adds up the groups'
    /// times, `critical_ns` each window's slowest group's -- their ratio is what threads
    /// could gain on free cores (less whatever they lose sharing the memory).
    pub probe: bool,
    pub busy_ns: u128,
    pub critical_ns: u128,
}

/// How many times a run starts over before it keeps every window after its last failed
/// one in order (each restart runs the host again from time 0).
const MAX_RESTARTS: u32 = 3;

/// How many parts a host of `flows` flows on `ncpus` CPUs is cut into: one per CPU that
/// has a flow (flow i is on CPU i % ncpus).
pub fn parts_for(ncpus: usize, flows: usize) -> usize {
    ncpus.min(flows).max(1)
}

/// The parts of a host, on a new pool (and memcg), the first one first.
type Parts = (Vec<Simulation>, ProtoHandle, Option<MemcgHandle>);

fn build(specs: &[FlowSpec], spec: &RunSpec) -> Result<Parts, String> {
    let ncpus = spec.ncpus.max(1);
    let parts = parts_for(ncpus, specs.len());
    let pool = ProtoMemory::new(spec.tcp_mem, ncpus, spec.pcpu_rsv).map(Arc::new)?;
    let memcg = match spec.memcg {
        Some((v, limit, other, atomic)) => Some(Arc::new(MemCgroup::new(v, limit, other, atomic)?)),
        None => None,
    };
    // the parts sample nothing: the run does, between windows; flow 0, the one tapped, is
    // the first part's
    let part_spec = RunSpec {
        sample_every: 0,
        ..spec.clone()
    };
    // one trace, lent to the part that runs (traced runs are in order): the first part's
    let mut trace = TraceColumns::new();
    let mut sims = Vec::with_capacity(parts);
    for k in 0..parts {
        let spec = RunSpec {
            tap: k == 0 && spec.tap,
            ..part_spec.clone()
        };
        let mut sim = Simulation::new_part(
            specs.to_vec(),
            spec,
            Arc::clone(&pool),
            memcg.clone(),
            |i| i % ncpus == k,
            trace,
        )?;
        trace = std::mem::take(&mut sim.trace);
        sims.push(sim);
    }
    sims[0].trace = trace;
    Ok((sims, pool, memcg))
}

/// Run `sim`'s events due at or before `end`.
fn run_until(sim: &mut Simulation, end: i64) {
    while sim.step(end) {}
}

/// Run `f` on part `p` with the first part's trace lent to it (when `traced`).
fn lent<R>(
    traced: bool,
    first: &mut Simulation,
    p: &mut Simulation,
    f: impl FnOnce(&mut Simulation) -> R,
) -> R {
    if traced {
        std::mem::swap(&mut first.trace, &mut p.trace);
    }
    let r = f(p);
    if traced {
        std::mem::swap(&mut first.trace, &mut p.trace);
    }
    r
}

impl HostRun {
    /// A host of `specs` cut into one part per CPU (`parts_for`), run on up to `threads`
    /// threads: the first part, which ends holding every flow's numbers, and the run.
    pub fn new(
        specs: Vec<FlowSpec>,
        spec: RunSpec,
        threads: usize,
    ) -> Result<(Simulation, HostRun), String> {
        let traced = specs.iter().any(|f| f.rcv.tracing || f.snd.tracing);
        let (mut sims, pool, memcg) = build(&specs, &spec)?;
        let first = sims.remove(0);
        Ok((
            first,
            HostRun {
                specs,
                spec,
                rest: sims,
                pool,
                memcg,
                threads,
                traced,
                failed: Vec::new(),
                rise: 0,
                done: false,
                windows_threaded: 0,
                windows_ordered: 0,
                restarts: 0,
                probe: false,
                busy_ns: 0,
                critical_ns: 0,
            },
        ))
    }

    /// Run the host to its end; `first` (the part `new` gave) then holds every flow, the
    /// events of all parts and the host's samples.
    pub fn run(&mut self, first: &mut Simulation) {
        if self.done {
            return;
        }
        loop {
            match self.attempt(first) {
                Ok(samples) => {
                    self.merge(first, samples);
                    self.done = true;
                    return;
                }
                Err(w) => {
                    // start over: window `w` in order, the others on threads where they may
                    self.failed.push(w);
                    self.restarts += 1;
                    self.rise = 0;
                    let (mut sims, pool, memcg) = build(&self.specs, &self.spec)
                        .expect("the parts were built once from the same specs");
                    *first = sims.remove(0);
                    self.rest = sims;
                    self.pool = pool;
                    self.memcg = memcg;
                }
            }
        }
    }

    /// The whole run, a window (up to a sample) at a time; Err(window) when a window run on
    /// threads failed the check.
    fn attempt(&mut self, first: &mut Simulation) -> Result<Vec<HostSample>, usize> {
        let (every, duration) = (self.spec.sample_every, self.spec.duration);
        first.begin();
        for p in &mut self.rest {
            lent(self.traced, first, p, Simulation::begin);
        }
        let mut samples = Vec::new();
        let mut next_sample = 0;
        let mut w = 0;
        loop {
            let sampling = every != 0 && next_sample <= duration;
            let end = if sampling { next_sample } else { duration };
            self.window(first, w, end)?;
            if !sampling {
                break;
            }
            samples.push(self.sample(first, next_sample));
            next_sample += every;
            w += 1;
        }
        // the run ends at the host's last event: a flow's queue area is counted up to it
        // (simulation.rs `finish`), whichever part ran it
        let last = self
            .rest
            .iter()
            .fold(first.sched.now, |t, p| t.max(p.sched.now));
        first.sched.now = last;
        first.finish();
        for p in &mut self.rest {
            p.sched.now = last;
            lent(self.traced, first, p, Simulation::finish);
        }
        Ok(samples)
    }

    /// Run every event due at or before `end`: on threads if window `w` may be, else in
    /// order.
    fn window(&mut self, first: &mut Simulation, w: usize, end: i64) -> Result<(), usize> {
        let pool = &self.pool;
        let at_mark = pool.memory_allocated();
        let threaded = self.threads > 1
            && !self.traced
            && !self.rest.is_empty()
            && !self.failed.contains(&w)
            && (self.restarts < MAX_RESTARTS || self.failed.iter().all(|&f| w < f))
            && self.memcg.is_none()
            && !pool.under_pressure()
            && pool.limit(1) >= pool.limit(0)
            && at_mark + 2 * self.rise < pool.limit(0);
        if !threaded {
            self.in_order(first, end);
            self.windows_ordered += 1;
            return Ok(());
        }
        pool.mark_window();
        // parts 0, T, 2T, ... on this thread, parts j, j + T, ... on thread j
        let t = self.threads.min(self.rest.len() + 1);
        let mut groups: Vec<Vec<&mut Simulation>> = (0..t).map(|_| Vec::new()).collect();
        groups[0].push(first);
        for (k, p) in self.rest.iter_mut().enumerate() {
            groups[(k + 1) % t].push(p);
        }
        if self.probe {
            let mut slowest = 0;
            for g in groups {
                let t0 = std::time::Instant::now();
                for p in g {
                    run_until(p, end);
                }
                let ns = t0.elapsed().as_nanos();
                self.busy_ns += ns;
                slowest = slowest.max(ns);
            }
            self.critical_ns += slowest;
            return self.checked(w, at_mark);
        }
        let mut groups = groups.into_iter();
        let mine = groups.next().expect("one group at least");
        std::thread::scope(|s| {
            let others: Vec<_> = groups
                .map(|g| {
                    s.spawn(move || {
                        for p in g {
                            run_until(p, end);
                        }
                    })
                })
                .collect();
            for p in mine {
                run_until(p, end);
            }
            for h in others {
                if let Err(e) = h.join() {
                    std::panic::resume_unwind(e);
                }
            }
        });
        if self.specs.len() >= PREFETCH_FLOWS {
            // what the threads' parts grew into, in malloc's arenas of those threads
            crate::hugepages::advise_arenas();
        }
        self.checked(w, at_mark)
    }

    /// The check after window `w` run on threads (the counter was `at_mark` at its start):
    /// Err(w) if the pool's counter may have reached tcp_mem[0] or pressure began.
    fn checked(&mut self, w: usize, at_mark: i64) -> Result<(), usize> {
        let pool = &self.pool;
        let peak = pool.window_peak(at_mark);
        if pool.under_pressure() || peak >= pool.limit(0) {
            return Err(w);
        }
        self.rise = self.rise.max(peak - at_mark);
        self.windows_threaded += 1;
        Ok(())
    }

    /// Run the events due at or before `end` in CPU order on this thread: by (time,
    /// priority, part); a part runs on while its next event comes first.
    fn in_order(&mut self, first: &mut Simulation, end: i64) {
        let due = |p: &Simulation| p.next_key().filter(|&(t, _)| t <= end);
        loop {
            // the part with the first event, and the first event of the others
            let mut best: Option<((i64, u8), usize)> = None;
            let mut second: Option<((i64, u8), usize)> = None;
            let heads = std::iter::once(due(first)).chain(self.rest.iter().map(&due));
            for (k, head) in heads.enumerate() {
                if let Some(key) = head {
                    if best.is_none_or(|b| (key, k) < b) {
                        second = best;
                        best = Some((key, k));
                    } else if second.is_none_or(|b| (key, k) < b) {
                        second = Some((key, k));
                    }
                }
            }
            let Some((_, k)) = best else {
                return;
            };
            // a part's events schedule only its own: the others' heads stay put
            let run = |p: &mut Simulation| loop {
                p.step(end);
                match (due(p), second) {
                    (None, _) => break,
                    (Some(key), Some(b)) if (key, k) > b => break,
                    _ => {}
                }
            };
            if k == 0 {
                run(first);
            } else {
                lent(self.traced, first, &mut self.rest[k - 1], run);
            }
        }
    }

    /// The host at time `t` (simulation.rs `sample`), every part counted.
    fn sample(&self, first: &Simulation, t: i64) -> HostSample {
        let live = first.live + self.rest.iter().map(|p| p.live).sum::<i64>();
        HostSample {
            t,
            inuse: if self.spec.local_peers {
                2 * live
            } else {
                live
            },
            mem: self.pool.memory_allocated(),
            pressure: self.pool.under_pressure(),
            memcg: self.memcg.as_ref().map_or(-1, |m| m.usage.load(Relaxed)),
        }
    }

    /// Move every other part's flows, closed flows' numbers and event count into `first`,
    /// with the host's samples.
    fn merge(&mut self, first: &mut Simulation, samples: Vec<HostSample>) {
        for p in self.rest.drain(..) {
            first.sched.steps += p.sched.steps;
            first.live += p.live;
            let Simulation {
                f,
                cur,
                flows,
                ended,
                ..
            } = p;
            if !f.closed {
                first.flows[cur] = Some(f);
            }
            for (c, fl) in flows.into_iter().enumerate() {
                if fl.is_some() {
                    first.flows[c] = fl;
                }
            }
            for (c, e) in ended.into_iter().enumerate() {
                if e.is_some() {
                    first.ended[c] = e;
                }
            }
        }
        first.samples = samples;
    }
}
