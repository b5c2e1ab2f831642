//! The host's TCP memory pool: what `struct proto` keeps for all TCP sockets of a host.
//!
//! Mirrors tcpsim/core/protmem.py `ProtoMemory` (same names, same citations): tcp_prot's
//! `memory_allocated`, `per_cpu_fw_alloc`, `memory_pressure`, `sysctl_mem` and
//! `sockets_allocated` [net/ipv4/tcp_ipv4.c, include/net/sock.h]. A socket takes pages when
//! its forward-alloc quota runs short (`__sk_mem_schedule`) and gives whole pages back when
//! it frees memory (`sk_mem_reclaim`); the global total, held against `net.ipv4.tcp_mem`,
//! decides pressure and admission (`__sk_mem_raise_allocated` [net/core/sock.c]).
//!
//! Since 6.0 a socket's pages go first to a per-CPU counter, flushed into the global one
//! once it reaches `mem_pcpu_rsv` pages either way (`sk_memory_allocated_add/sub`
//! [include/net/proto_memory.h, 6.10+; include/net/sock.h, 6.0-6.9]): the global figure --
//! sockstat's `mem`, the one the limits see -- lags by up to ncpus x mem_pcpu_rsv pages.
//! `pcpu_rsv = 0` models the kernels before 6.0, where every charge is global at once.
//!
//! Sharing: sockets hold a `ProtoHandle` (an `Arc<ProtoMemory>`); a host of thousands of
//! sockets clones one handle into each (`TcpSocket::set_proto`). The fields are relaxed
//! atomics, as the kernel's own are (atomic_long_t, per-CPU counters): the pool is `Sync`,
//! so a simulation holding it stays `Send` and runs with the GIL released
//! (py_engine.rs), needs no `RefCell` borrow that a re-entrant call could trip over, and a
//! relaxed load or store costs what a plain one does on x86. The engine is
//! single-threaded: the atomics are for sharing, not for concurrency.

use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
use std::sync::Arc;

use crate::constants::NS_PER_MS;

/// SK_MEMORY_PCPU_RESERVE [include/net/sock.h, 6.0+]: 1 MB per CPU, in 4 KiB pages; the
/// default (and minimum) of net.core.mem_pcpu_rsv (6.9+).
pub const SK_MEMORY_PCPU_RESERVE: i64 = 256;

/// percpu_counter_batch [lib/percpu_counter.c: compute_batch_value()]: max(32, 2 x online
/// CPUs), the batch of every percpu_counter added to without one of its own --
/// tcp_sockets_allocated among them (sk_sockets_allocated_inc/dec [include/net/sock.h]).
pub const PERCPU_COUNTER_BATCH_MIN: i64 = 32;

/// Models compute_batch_value() [lib/percpu_counter.c]: max(32, 2 x CPUs).
pub fn percpu_counter_batch(ncpus: usize) -> i64 {
    PERCPU_COUNTER_BATCH_MIN.max(2 * ncpus as i64)
}

/// How sockets share a pool: one `Arc` per socket, the pool itself shared.
pub type ProtoHandle = Arc<ProtoMemory>;

/// tcp_prot's memory fields: the host's TCP pool, in pages, and its pressure state (the
/// fields of Python's `ProtoMemory`, under the same names).
#[allow(non_snake_case)]
#[derive(Debug)]
pub struct ProtoMemory {
    /// net.ipv4.tcp_mem (min, pressure, max), pages.
    pub tcp_mem: [AtomicI64; 3],
    pub ncpus: usize,
    /// net.core.mem_pcpu_rsv (6.9+) / SK_MEMORY_PCPU_RESERVE (6.0-6.8); 0 before 6.0.
    pub pcpu_rsv: AtomicI64,
    /// tcp_memory_allocated, the global counter (pages; sockstat's mem).
    pub allocated: AtomicI64,
    /// tcp_memory_per_cpu_fw_alloc, one per CPU (pages not yet flushed).
    pub per_cpu_fw_alloc: Vec<PerCpu>,
    /// tcp_memory_pressure: when the host entered pressure (ns), -1 if not.
    pub memory_pressure: AtomicI64,
    /// tcp_sockets_allocated: sockets using the pool, exactly (what percpu_counter_sum()
    /// adds up: sockstat's `alloc`).
    pub sockets_allocated: AtomicI64,
    /// tcp_sockets_allocated's global part (`fbc->count`), all that percpu_counter_read()
    /// -- and so the fair-share rule -- sees.
    pub sockets_count: AtomicI64,
    /// Its per-CPU parts, each folded into `sockets_count` once it reaches the batch.
    pub per_cpu_sockets: Vec<PerCpu>,
    /// percpu_counter_batch for this host's CPUs.
    pub sockets_batch: i64,
    /// Entries into pressure.
    pub TCPMemoryPressures: AtomicI64,
    /// ms spent under pressure, counted when pressure is left.
    pub TCPMemoryPressuresChrono: AtomicI64,
    /// Per CPU: the pages its flushes moved into `allocated` since `mark_window`, and the
    /// most they reached (a window run on several threads is checked with them:
    /// src/engine/parallel.rs). Bookkeeping of the engine, not of the kernel.
    pub flushed: Vec<PerCpu>,
    pub flushed_max: Vec<PerCpu>,
}

/// One CPU's counter of the pool, alone on its cache line: a host run on several threads
/// (src/engine/parallel.rs) writes each CPU's counters from that CPU's thread at nearly
/// every charge, and counters of two CPUs side by side made the threads take the line from
/// each other at each write (false sharing). Reads and writes as an `AtomicI64`.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct PerCpu(AtomicI64);

impl std::ops::Deref for PerCpu {
    type Target = AtomicI64;

    #[inline]
    fn deref(&self) -> &AtomicI64 {
        &self.0
    }
}

/// The pool's fields as plain values (Python's `ProtoMemory.snapshot()`).
#[allow(non_snake_case)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtoSnapshot {
    pub tcp_mem: (i64, i64, i64),
    pub ncpus: i64,
    pub pcpu_rsv: i64,
    pub allocated: i64,
    pub per_cpu_fw_alloc: Vec<i64>,
    pub memory_pressure: i64,
    pub sockets_allocated: i64,
    pub sockets_count: i64,
    pub per_cpu_sockets: Vec<i64>,
    pub TCPMemoryPressures: i64,
    pub TCPMemoryPressuresChrono: i64,
}

impl ProtoMemory {
    /// `ProtoMemory(tcp_mem, ncpus=1, pcpu_rsv=0)`; Err for no CPU.
    pub fn new(tcp_mem: (i64, i64, i64), ncpus: usize, pcpu_rsv: i64) -> Result<Self, String> {
        if ncpus < 1 {
            return Err(format!(
                "ProtoMemory: ncpus must be at least 1, got {ncpus}"
            ));
        }
        Ok(ProtoMemory {
            tcp_mem: [
                AtomicI64::new(tcp_mem.0),
                AtomicI64::new(tcp_mem.1),
                AtomicI64::new(tcp_mem.2),
            ],
            ncpus,
            pcpu_rsv: AtomicI64::new(pcpu_rsv),
            allocated: AtomicI64::new(0),
            per_cpu_fw_alloc: (0..ncpus).map(|_| PerCpu::default()).collect(),
            memory_pressure: AtomicI64::new(-1),
            sockets_allocated: AtomicI64::new(0),
            sockets_count: AtomicI64::new(0),
            per_cpu_sockets: (0..ncpus).map(|_| PerCpu::default()).collect(),
            sockets_batch: percpu_counter_batch(ncpus),
            TCPMemoryPressures: AtomicI64::new(0),
            TCPMemoryPressuresChrono: AtomicI64::new(0),
            flushed: (0..ncpus).map(|_| PerCpu::default()).collect(),
            flushed_max: (0..ncpus).map(|_| PerCpu::default()).collect(),
        })
    }

    /// A new pool behind a handle to share.
    pub fn handle(tcp_mem: (i64, i64, i64), ncpus: usize, pcpu_rsv: i64) -> ProtoHandle {
        Arc::new(Self::new(tcp_mem, ncpus.max(1), pcpu_rsv).expect("ncpus >= 1"))
    }

    /// tcp_mem[i], pages.
    pub fn limit(&self, i: usize) -> i64 {
        self.tcp_mem[i].load(Relaxed)
    }

    // -- the counters -------------------------------------------------------------------

    /// Models `proto_memory_allocated()` / `sk_memory_allocated()` [include/net/sock.h]:
    /// the global counter, without the per-CPU reserves (what the limits see).
    pub fn memory_allocated(&self) -> i64 {
        self.allocated.load(Relaxed)
    }

    /// Models `sk_memory_allocated_add()` [6.0+]: add to this CPU's counter; once it reaches
    /// `pcpu_rsv` pages, flush it whole into the global one (before 6.0, pcpu_rsv = 0: every
    /// add is global at once).
    pub fn memory_allocated_add(&self, cpu: usize, pages: i64) {
        let slot = &self.per_cpu_fw_alloc[cpu];
        let local = slot.load(Relaxed) + pages;
        if local >= self.pcpu_rsv.load(Relaxed) {
            self.allocated.fetch_add(local, Relaxed);
            slot.store(0, Relaxed);
            self.note_flush(cpu, local);
        } else {
            slot.store(local, Relaxed);
        }
    }

    /// Models `sk_memory_allocated_sub()` [6.0+]: the mirror of the add; flushed once this
    /// CPU's counter falls to -pcpu_rsv pages.
    pub fn memory_allocated_sub(&self, cpu: usize, pages: i64) {
        let slot = &self.per_cpu_fw_alloc[cpu];
        let local = slot.load(Relaxed) - pages;
        if local <= -self.pcpu_rsv.load(Relaxed) {
            self.allocated.fetch_add(local, Relaxed);
            slot.store(0, Relaxed);
            self.note_flush(cpu, local);
        } else {
            slot.store(local, Relaxed);
        }
    }

    /// Count a flush of `pages` from `cpu` into the global counter (`flushed`).
    #[inline]
    fn note_flush(&self, cpu: usize, pages: i64) {
        // one writer per CPU (its thread): a load and a store, no locked add
        let f = self.flushed[cpu].load(Relaxed) + pages;
        self.flushed[cpu].store(f, Relaxed);
        if f > self.flushed_max[cpu].load(Relaxed) {
            self.flushed_max[cpu].store(f, Relaxed);
        }
    }

    /// Start a window: every CPU's `flushed` and `flushed_max` back to 0.
    pub fn mark_window(&self) {
        for c in self.flushed.iter().chain(&self.flushed_max) {
            c.store(0, Relaxed);
        }
    }

    /// The most the global counter can have been since `mark_window`, whatever the order
    /// of the CPUs' flushes: what it was then plus every CPU's largest net flush since.
    pub fn window_peak(&self, at_mark: i64) -> i64 {
        at_mark
            + self
                .flushed_max
                .iter()
                .map(|c| c.load(Relaxed))
                .sum::<i64>()
    }

    /// Pages charged by the sockets, per-CPU reserves included (the truth the global counter
    /// lags).
    pub fn total_pages(&self) -> i64 {
        self.memory_allocated()
            + self
                .per_cpu_fw_alloc
                .iter()
                .map(|c| c.load(Relaxed))
                .sum::<i64>()
    }

    // -- pressure -------------------------------------------------------------------------

    /// Models `tcp_under_memory_pressure()` without a memcg [include/net/tcp.h]: the global
    /// `tcp_memory_pressure` is set.
    pub fn under_pressure(&self) -> bool {
        self.memory_pressure.load(Relaxed) >= 0
    }

    /// Models `tcp_enter_memory_pressure()` [net/ipv4/tcp.c]: set the flag to the current
    /// time and count the entry (TCPMemoryPressures), once per entry.
    pub fn enter_pressure(&self, now: i64) {
        if self.memory_pressure.load(Relaxed) < 0 {
            self.memory_pressure.store(now, Relaxed);
            self.TCPMemoryPressures.fetch_add(1, Relaxed);
        }
    }

    /// Models `tcp_leave_memory_pressure()` [net/ipv4/tcp.c]: clear the flag and add the
    /// time spent under pressure, in ms, to TCPMemoryPressuresChrono.
    pub fn leave_pressure(&self, now: i64) {
        let since = self.memory_pressure.load(Relaxed);
        if since >= 0 {
            self.TCPMemoryPressuresChrono
                .fetch_add((now - since).div_euclid(NS_PER_MS), Relaxed);
            self.memory_pressure.store(-1, Relaxed);
        }
    }

    /// Models sk_sockets_allocated_inc()/_dec() [include/net/sock.h]:
    /// percpu_counter_add_batch() [lib/percpu_counter.c] of `n` on this CPU's part, folded
    /// whole into the global part once its magnitude reaches the batch; `sockets_allocated`
    /// keeps the exact total.
    pub fn sockets_allocated_add(&self, cpu: usize, n: i64) {
        self.sockets_allocated.fetch_add(n, Relaxed);
        let slot = &self.per_cpu_sockets[cpu];
        let local = slot.load(Relaxed) + n;
        if local.abs() >= self.sockets_batch {
            self.sockets_count.fetch_add(local, Relaxed);
            slot.store(0, Relaxed);
        } else {
            slot.store(local, Relaxed);
        }
    }

    /// Models sk_sockets_allocated_read_positive() [include/net/sock.h, 5.15-6.18]:
    /// percpu_counter_read_positive(), the global part only (never below 0) -- the socket
    /// count the fair-share rule of __sk_mem_raise_allocated() divides tcp_mem[2] by
    /// (protmem.py `sockets_allocated_read_positive`).
    pub fn sockets_allocated_read_positive(&self) -> i64 {
        self.sockets_count.load(Relaxed).max(0)
    }

    /// Every field as plain values (Python's `snapshot()`).
    pub fn snapshot(&self) -> ProtoSnapshot {
        ProtoSnapshot {
            tcp_mem: (self.limit(0), self.limit(1), self.limit(2)),
            ncpus: self.ncpus as i64,
            pcpu_rsv: self.pcpu_rsv.load(Relaxed),
            allocated: self.memory_allocated(),
            per_cpu_fw_alloc: self
                .per_cpu_fw_alloc
                .iter()
                .map(|c| c.load(Relaxed))
                .collect(),
            memory_pressure: self.memory_pressure.load(Relaxed),
            sockets_allocated: self.sockets_allocated.load(Relaxed),
            sockets_count: self.sockets_count.load(Relaxed),
            per_cpu_sockets: self
                .per_cpu_sockets
                .iter()
                .map(|c| c.load(Relaxed))
                .collect(),
            TCPMemoryPressures: self.TCPMemoryPressures.load(Relaxed),
            TCPMemoryPressuresChrono: self.TCPMemoryPressuresChrono.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {

    /// Each CPU's counters lie on lines of their own (threads write them: parallel.rs).
    #[test]
    fn per_cpu_counters_do_not_share_a_line() {
        let p = ProtoMemory::new((1, 2, 3), 2, 0).expect("2 CPUs");
        for v in [
            &p.per_cpu_fw_alloc,
            &p.per_cpu_sockets,
            &p.flushed,
            &p.flushed_max,
        ] {
            let (a, b) = (
                &*v[0] as *const AtomicI64 as usize,
                &*v[1] as *const AtomicI64 as usize,
            );
            assert_eq!((a / 64 == b / 64, a % 64), (false, 0));
        }
    }

    use super::*;

    #[test]
    fn sockets_allocated_is_read_without_its_cpu_parts() {
        let p = ProtoMemory::new((1, 2, 3), 2, 0).unwrap();
        assert_eq!(p.sockets_batch, 32);
        assert_eq!(
            ProtoMemory::new((1, 2, 3), 64, 0).unwrap().sockets_batch,
            128
        );
        for _ in 0..31 {
            p.sockets_allocated_add(0, 1);
        }
        assert_eq!(p.sockets_allocated_read_positive(), 0);
        p.sockets_allocated_add(0, 1);
        assert_eq!(p.sockets_allocated_read_positive(), 32);
        p.sockets_allocated_add(1, -33);
        assert_eq!(p.sockets_allocated.load(Relaxed), -1);
        assert_eq!(p.sockets_allocated_read_positive(), 0);
    }

    #[test]
    fn per_cpu_reserve_lags_the_global_counter() {
        let p = ProtoMemory::new((200, 400, 600), 2, 256).unwrap();
        p.memory_allocated_add(0, 255);
        assert_eq!(p.memory_allocated(), 0);
        assert_eq!(p.total_pages(), 255);
        p.memory_allocated_add(0, 1);
        assert_eq!(p.memory_allocated(), 256);
        p.memory_allocated_add(1, 10);
        p.memory_allocated_sub(1, 20);
        assert_eq!(p.memory_allocated(), 256);
        assert_eq!(p.snapshot().per_cpu_fw_alloc, vec![0, -10]);
        p.memory_allocated_sub(1, 246);
        assert_eq!(p.memory_allocated(), 0);
    }

    #[test]
    fn a_window_peak_bounds_the_counter_in_any_order_of_the_cpus() {
        let p = ProtoMemory::new((1000, 2000, 3000), 2, 4).unwrap();
        p.memory_allocated_add(0, 10);
        let at_mark = p.memory_allocated();
        p.mark_window();
        // CPU 0 flushes +5, then -5 (net 0, most 5); CPU 1 flushes +4 then +4 (most 8)
        p.memory_allocated_add(0, 5);
        p.memory_allocated_sub(0, 5);
        p.memory_allocated_add(1, 4);
        p.memory_allocated_add(1, 4);
        assert_eq!(p.memory_allocated(), at_mark + 8);
        assert_eq!(p.window_peak(at_mark), at_mark + 5 + 8);
        p.mark_window();
        assert_eq!(p.window_peak(7), 7);
    }

    #[test]
    fn no_reserve_before_6_0() {
        let p = ProtoMemory::new((200, 400, 600), 4, 0).unwrap();
        p.memory_allocated_add(3, 1);
        assert_eq!(p.memory_allocated(), 1);
        p.memory_allocated_sub(2, 1);
        assert_eq!(p.memory_allocated(), 0);
    }

    #[test]
    fn pressure_counts_entries_and_time() {
        let p = ProtoMemory::new((1, 2, 3), 1, 0).unwrap();
        assert!(!p.under_pressure());
        p.enter_pressure(5 * NS_PER_MS);
        p.enter_pressure(6 * NS_PER_MS);
        assert!(p.under_pressure());
        p.leave_pressure(12 * NS_PER_MS + 1);
        assert!(!p.under_pressure());
        let s = p.snapshot();
        assert_eq!((s.TCPMemoryPressures, s.TCPMemoryPressuresChrono), (1, 7));
        assert!(ProtoMemory::new((1, 2, 3), 0, 0).is_err());
    }
}
