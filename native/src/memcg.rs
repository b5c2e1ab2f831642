//! A memory cgroup's socket accounting: the container case of the host's TCP memory.
//!
//! Mirrors tcpsim/core/memcg.py `MemCgroup` (same names, same citations; its docstring has
//! the whole story). A socket of a memory cgroup (`sk->sk_memcg`, mem_cgroup_sk_alloc()
//! [mm/memcontrol.c]) charges every page it takes from the pool to the cgroup too:
//! `__sk_mem_raise_allocated()` [net/core/sock.c, 6.1-6.18] adds to the pool, then charges
//! (mem_cgroup_charge_skmem() / mem_cgroup_sk_charge()); a refusal skips every tcp_mem rule.
//! `sk_forced_mem_schedule()` charges with __GFP_NOFAIL; `__sk_mem_reduce_allocated()`
//! uncharges; `tcp_under_memory_pressure()` [include/net/tcp.h] reads the memcg's socket
//! pressure first.
//!
//! * v1: the `tcpmem` counter alone (memory.kmem.tcp.*); a failed charge sets
//!   `tcpmem_pressure`, a successful one clears it (memcg1_charge_skmem()
//!   [mm/memcontrol-v1.c, 6.12+]); __GFP_NOFAIL sets it and charges anyway.
//! * v2: the cgroup's `memory` counter (memory.current, with `other`), memory.max; softirq
//!   charges are GFP_ATOMIC since 6.1 (gfp_memcg_charge() [include/net/sock.h]): forced past
//!   memory.max with a `max` event (`atomic`); 5.15's GFP_NOWAIT fails without reclaim and
//!   without an event; a __GFP_NOFAIL charge counts one `max` event (try_charge_memcg()
//!   [mm/memcontrol.c]). vmpressure-driven socket pressure, reclaim, the per-CPU charge
//!   stock and memory.high are not modelled.
//!
//! Shared like the pool (src/protmem.rs): sockets hold a `MemcgHandle` (an `Arc`), the
//! fields relaxed atomics (single-threaded engine; the atomics are for sharing).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::sync::Arc;

/// How sockets share a memcg.
pub type MemcgHandle = Arc<MemCgroup>;

/// One memory cgroup's socket accounting, in pages (memcg.py `MemCgroup`).
#[derive(Debug)]
pub struct MemCgroup {
    /// 1 (memory.kmem.tcp.*) or 2 (memory.max / memory.current).
    pub version: i64,
    /// v1: memory.kmem.tcp.limit_in_bytes; v2: memory.max (pages).
    pub limit: i64,
    /// v2: the cgroup's memory other than sockets (pages, constant); 0 in v1.
    pub other: i64,
    /// v2: softirq charges are GFP_ATOMIC (forced past memory.max; 6.1+), else GFP_NOWAIT.
    pub atomic: bool,
    /// v1: memory.kmem.tcp.usage_in_bytes; v2: memory.current (pages).
    pub usage: AtomicI64,
    /// The socket pages charged (v2: memory.stat `sock`).
    pub sock: AtomicI64,
    /// The peak of `usage`.
    pub watermark: AtomicI64,
    /// v1's flag: the last charge failed.
    pub tcpmem_pressure: AtomicBool,
    /// Charges that found the limit in the way (forced ones included).
    pub refused: AtomicI64,
    /// v2: memory.events `max`.
    pub events_max: AtomicI64,
    /// When socket pressure began (ns), -1 if none.
    pub pressure_since: AtomicI64,
    pub pressure_entries: AtomicI64,
    /// Time under socket pressure in ended spells (ns).
    pub pressure_ns: AtomicI64,
}

/// The memcg's fields as plain values (memcg.py `MemCgroup.snapshot()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemcgSnapshot {
    pub version: i64,
    pub limit: i64,
    pub other: i64,
    pub atomic: bool,
    pub usage: i64,
    pub sock: i64,
    pub watermark: i64,
    pub tcpmem_pressure: bool,
    pub refused: i64,
    pub events_max: i64,
    pub pressure_since: i64,
    pub pressure_entries: i64,
    pub pressure_ns: i64,
}

impl MemCgroup {
    /// `MemCgroup(version, limit, other=0, atomic=True)`; Err for a version other than 1 or
    /// 2, a negative size, or `other` in v1.
    pub fn new(version: i64, limit: i64, other: i64, atomic: bool) -> Result<Self, String> {
        if version != 1 && version != 2 {
            return Err(format!("MemCgroup: version must be 1 or 2, got {version}"));
        }
        if limit < 0 || other < 0 || (version == 1 && other != 0) {
            return Err("MemCgroup: limit and other must be >= 0 (other: v2 only)".into());
        }
        Ok(MemCgroup {
            version,
            limit,
            other,
            atomic,
            usage: AtomicI64::new(other),
            sock: AtomicI64::new(0),
            watermark: AtomicI64::new(other),
            tcpmem_pressure: AtomicBool::new(false),
            refused: AtomicI64::new(0),
            events_max: AtomicI64::new(0),
            pressure_since: AtomicI64::new(-1),
            pressure_entries: AtomicI64::new(0),
            pressure_ns: AtomicI64::new(0),
        })
    }

    /// Models mem_cgroup_charge_skmem() / mem_cgroup_sk_charge() [mm/memcontrol.c, 6.1 /
    /// 6.18] (memcg.py `charge_skmem`): charge `pages` if the counter stays within the
    /// limit (v1 clears tcpmem_pressure); else v1 sets tcpmem_pressure, v2 counts a `max`
    /// event for a charge that could have blocked, and a __GFP_NOFAIL charge -- or in v2 a
    /// softirq GFP_ATOMIC one (`atomic`) -- goes past the limit (v2: with its `max` event).
    /// Returns whether the pages were charged.
    pub fn charge_skmem(&self, pages: i64, now: i64, nofail: bool, blocking: bool) -> bool {
        if self.usage.load(Relaxed) + pages <= self.limit {
            self.add(pages);
            if self.version == 1 {
                self.set_pressure(false, now);
            }
            return true;
        }
        self.refused.fetch_add(1, Relaxed);
        if self.version == 1 {
            self.set_pressure(true, now);
        } else if blocking {
            self.events_max.fetch_add(1, Relaxed);
        }
        if !(nofail || (self.version == 2 && self.atomic && !blocking)) {
            return false;
        }
        if self.version == 2 && !blocking {
            self.events_max.fetch_add(1, Relaxed);
        }
        self.add(pages);
        true
    }

    /// Models mem_cgroup_uncharge_skmem() / mem_cgroup_sk_uncharge() (memcg.py
    /// `uncharge_skmem`): give `pages` back; v1's flag stays as the last charge left it.
    pub fn uncharge_skmem(&self, pages: i64) {
        self.usage.fetch_sub(pages, Relaxed);
        self.sock.fetch_sub(pages, Relaxed);
    }

    /// Models mem_cgroup_under_socket_pressure() [include/linux/memcontrol.h]: v1's
    /// tcpmem_pressure (v2's vmpressure-set socket_pressure is not modelled).
    pub fn under_socket_pressure(&self) -> bool {
        self.tcpmem_pressure.load(Relaxed)
    }

    fn add(&self, pages: i64) {
        let usage = self.usage.fetch_add(pages, Relaxed) + pages;
        self.sock.fetch_add(pages, Relaxed);
        self.watermark.fetch_max(usage, Relaxed);
    }

    fn set_pressure(&self, on: bool, now: i64) {
        let was = self.tcpmem_pressure.load(Relaxed);
        if on && !was {
            self.pressure_since.store(now, Relaxed);
            self.pressure_entries.fetch_add(1, Relaxed);
        } else if !on && was {
            let since = self.pressure_since.swap(-1, Relaxed);
            self.pressure_ns.fetch_add(now - since, Relaxed);
        }
        self.tcpmem_pressure.store(on, Relaxed);
    }

    /// Every field as plain values.
    pub fn snapshot(&self) -> MemcgSnapshot {
        MemcgSnapshot {
            version: self.version,
            limit: self.limit,
            other: self.other,
            atomic: self.atomic,
            usage: self.usage.load(Relaxed),
            sock: self.sock.load(Relaxed),
            watermark: self.watermark.load(Relaxed),
            tcpmem_pressure: self.tcpmem_pressure.load(Relaxed),
            refused: self.refused.load(Relaxed),
            events_max: self.events_max.load(Relaxed),
            pressure_since: self.pressure_since.load(Relaxed),
            pressure_entries: self.pressure_entries.load(Relaxed),
            pressure_ns: self.pressure_ns.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_refusal_sets_pressure_and_a_success_clears_it() {
        let m = MemCgroup::new(1, 10, 0, true).unwrap();
        assert!(m.charge_skmem(8, 0, false, false));
        assert!(!m.charge_skmem(3, 5, false, false));
        assert!(m.under_socket_pressure());
        assert_eq!(m.usage.load(Relaxed), 8);
        assert!(m.charge_skmem(3, 7, true, false)); // forced past the limit
        assert_eq!(m.usage.load(Relaxed), 11);
        m.uncharge_skmem(5);
        assert!(m.under_socket_pressure()); // an uncharge leaves the flag
        assert!(m.charge_skmem(1, 15, false, false));
        assert!(!m.under_socket_pressure());
        let s = m.snapshot();
        assert_eq!(
            (s.pressure_entries, s.pressure_ns, s.watermark, s.refused),
            (1, 10, 11, 2)
        );
    }

    #[test]
    fn v2_counts_other_memory_and_max_events() {
        let m = MemCgroup::new(2, 10, 6, false).unwrap();
        assert!(m.charge_skmem(4, 0, false, false));
        assert!(!m.charge_skmem(1, 0, false, false)); // softirq: no event
        assert_eq!(m.events_max.load(Relaxed), 0);
        assert!(!m.charge_skmem(1, 0, false, true)); // could block: one event
        assert!(m.charge_skmem(1, 0, true, false)); // forced: one more
        let s = m.snapshot();
        assert_eq!((s.usage, s.sock, s.events_max), (11, 5, 2));
        assert!(!m.under_socket_pressure());
        assert!(MemCgroup::new(1, 10, 1, true).is_err());
        let a = MemCgroup::new(2, 10, 6, true).unwrap(); // 6.1+: softirq GFP_ATOMIC
        assert!(a.charge_skmem(4, 0, false, false));
        assert!(a.charge_skmem(2, 0, false, false)); // forced past memory.max
        assert!(!a.charge_skmem(1, 0, false, true)); // a send that could block: refused
        assert_eq!((a.usage.load(Relaxed), a.events_max.load(Relaxed)), (12, 2));
        assert!(MemCgroup::new(3, 10, 0, true).is_err());
    }
}
