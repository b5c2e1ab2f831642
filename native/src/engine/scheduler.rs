//! The event loop (tcpsim/engine/scheduler.py): events at integer-nanosecond times, run in
//! the order of simpy's heap -- (time, priority, id) -- where `id` is one counter shared by
//! `at()` and `ticket()`, so the order is the Python engine's event for event.
//!
//! Events at the same nanosecond run in a fixed order of kinds (the priority) -- segment
//! deliveries, TCP timers, the writer, the reader -- and within a kind in scheduling order.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Segment deliveries.
pub const NETWORK: u8 = 0;
/// TCP timers (delayed ACK, RTO, persist).
pub const TIMER: u8 = 1;
/// The sending application.
pub const WRITER: u8 = 2;
/// The receiving application.
pub const READER: u8 = 3;

/// One scheduled event: its key (time, priority, id) and what to do.
struct Entry<E> {
    t: i64,
    prio: u8,
    id: u64,
    ev: E,
}

impl<E> Entry<E> {
    fn key(&self) -> (i64, u8, u64) {
        (self.t, self.prio, self.id)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// Calls events in time order, integer-nanosecond time (scheduler.py `Scheduler`).
pub struct Scheduler<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    ids: u64,
    /// Time of the event being run (ns).
    pub now: i64,
    /// Events run so far.
    pub steps: u64,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Scheduler<E> {
    /// An empty schedule at time 0.
    pub fn new() -> Self {
        Scheduler {
            heap: BinaryHeap::new(),
            ids: 0,
            now: 0,
            steps: 0,
        }
    }

    /// Run `ev` at absolute time `t` (>= now), after the events of kind < `prio`.
    pub fn at(&mut self, t: i64, prio: u8, ev: E) {
        let id = self.ticket();
        self.at_ticket(t, prio, id, ev);
    }

    /// Reserve the tie-breaking id an event scheduled now would get, for `at_ticket()`.
    pub fn ticket(&mut self) -> u64 {
        let id = self.ids;
        self.ids += 1;
        id
    }

    /// Schedule `ev` as if `at()` had been called when `ticket` was reserved (same key).
    pub fn at_ticket(&mut self, t: i64, prio: u8, ticket: u64, ev: E) {
        self.heap.push(Reverse(Entry {
            t,
            prio,
            id: ticket,
            ev,
        }));
    }

    /// Time of the next event, None when none is scheduled (Python: INFINITY).
    pub fn peek(&self) -> Option<i64> {
        self.heap.peek().map(|e| e.0.t)
    }

    /// The next event if it is due at or before `until`: the clock moves to it.
    pub fn pop_until(&mut self, until: i64) -> Option<E> {
        if self.heap.peek()?.0.t > until {
            return None;
        }
        let Reverse(e) = self.heap.pop()?;
        self.now = e.t;
        self.steps += 1;
        Some(e.ev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_then_priority_then_scheduling_order() {
        let mut s = Scheduler::new();
        s.at(5, READER, "r5");
        s.at(5, NETWORK, "n5a");
        let t = s.ticket();
        s.at(1, TIMER, "t1");
        s.at(5, NETWORK, "n5c");
        s.at_ticket(5, NETWORK, t, "n5b");
        let mut got = Vec::new();
        while let Some(e) = s.pop_until(10) {
            got.push(e);
        }
        assert_eq!(got, ["t1", "n5a", "n5b", "n5c", "r5"]);
        assert_eq!(s.steps, 5);
        assert_eq!(s.now, 5);
    }

    #[test]
    fn stops_after_until() {
        let mut s = Scheduler::new();
        s.at(11, WRITER, 1);
        assert_eq!(s.pop_until(10), None);
        assert_eq!(s.peek(), Some(11));
    }
}
