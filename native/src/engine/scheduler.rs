//! The event loop (tcpsim/engine/scheduler.py): events at integer-nanosecond times, run in
//! the order of simpy's heap -- (time, priority, id) -- where `id` is one counter shared by
//! `at()` and `ticket()`, so the order is the Python engine's event for event.
//!
//! Events at the same nanosecond run in a fixed order of kinds (the priority) -- segment
//! deliveries, TCP timers, the writer, the reader -- and within a kind in scheduling order.

/// Segment deliveries.
pub const NETWORK: u8 = 0;
/// TCP timers (delayed ACK, RTO, persist).
pub const TIMER: u8 = 1;
/// The sending application.
pub const WRITER: u8 = 2;
/// The receiving application.
pub const READER: u8 = 3;

/// Bits of `Key::order` below the priority: the id (2**56 events is beyond any run).
const ID_BITS: u32 = 56;
/// Children per node of the heap: a node's children are 4 consecutive keys (96 bytes), so
/// a step down reads about one cache line where a binary heap reads one per level.
const ARITY: usize = 4;

/// One scheduled event's key: (time, priority << 56 | id), unique, and where its event
/// waits in `Scheduler::slots`. The events stay put while the keys move: a host keeps
/// thousands pending and the heap moves only these 24 bytes. `tag` (in what would be
/// padding) is the event's `Tagged::tag`, e.g. its connection: the engine looks at the next
/// event's without reading the event itself (`peek_tag`), to prefetch its connection.
#[derive(Clone, Copy)]
struct Key {
    t: i64,
    order: u64,
    slot: u32,
    tag: u32,
}

/// A scheduled event's tag, kept in its key: `Scheduler::peek_tag` gives the next event's
/// without touching the event (a host tags an event with its connection).
pub trait Tagged {
    fn tag(&self) -> u32 {
        0
    }
}

impl Tagged for u8 {}
impl Tagged for &str {}
impl<A, B, C> Tagged for (A, B, C) {}

impl Key {
    #[inline]
    fn before(&self, other: &Key) -> bool {
        (self.t, self.order) < (other.t, other.order)
    }
}

/// Calls events in time order, integer-nanosecond time (scheduler.py `Scheduler`).
pub struct Scheduler<E> {
    /// A 4-ary min-heap of the pending events' keys.
    heap: Vec<Key>,
    /// The pending events (by `Key::slot`), and the free slots among them.
    slots: Vec<E>,
    free: Vec<u32>,
    ids: u64,
    /// Time of the event being run (ns).
    pub now: i64,
    /// Events run so far.
    pub steps: u64,
}

impl<E: Copy + Tagged> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy + Tagged> Scheduler<E> {
    /// An empty schedule at time 0.
    pub fn new() -> Self {
        Scheduler {
            heap: Vec::new(),
            slots: Vec::new(),
            free: Vec::new(),
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
        debug_assert!(ticket < 1 << ID_BITS);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = ev;
                s
            }
            None => {
                self.slots.push(ev);
                u32::try_from(self.slots.len() - 1).expect("fewer than 2**32 pending events")
            }
        };
        let key = Key {
            t,
            order: u64::from(prio) << ID_BITS | ticket,
            slot,
            tag: ev.tag(),
        };
        // sift up from a hole at the end
        let i = self.heap.len();
        self.heap.push(key);
        self.sift_up(i, key);
    }

    /// Move `key` up from the hole at `i` to where it belongs, and put it there.
    #[inline]
    fn sift_up(&mut self, mut i: usize, key: Key) {
        let heap = &mut self.heap[..];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if !key.before(&heap[parent]) {
                break;
            }
            heap[i] = heap[parent];
            i = parent;
        }
        heap[i] = key;
    }

    /// Time of the next event, None when none is scheduled (Python: INFINITY).
    #[inline]
    pub fn peek(&self) -> Option<i64> {
        self.heap.first().map(|k| k.t)
    }

    /// The time and priority of the next event, None when none is scheduled.
    #[inline]
    pub fn peek_key(&self) -> Option<(i64, u8)> {
        self.heap.first().map(|k| (k.t, (k.order >> ID_BITS) as u8))
    }

    /// The tag of the next event (`Tagged`), None when none is scheduled.
    #[inline]
    pub fn peek_tag(&self) -> Option<u32> {
        self.heap.first().map(|k| k.tag)
    }

    /// Ask the CPU to bring the next event into cache (a hint: no effect on what runs).
    #[inline]
    pub fn prefetch_next(&self) {
        if let Some(k) = self.heap.first() {
            if let Some(ev) = self.slots.get(k.slot as usize) {
                crate::prefetch::read(ev);
            }
        }
    }

    /// The next event if it is due at or before `until`: the clock moves to it.
    pub fn pop_until(&mut self, until: i64) -> Option<E> {
        let top = *self.heap.first()?;
        if top.t > until {
            return None;
        }
        let last = self.heap.pop().expect("a pending event");
        if !self.heap.is_empty() {
            self.sift_down(last);
        }
        self.now = top.t;
        self.steps += 1;
        self.free.push(top.slot);
        Some(self.slots[top.slot as usize])
    }

    /// Put `key` at the root's place (a hole) and move it to where it belongs: the hole
    /// goes down along the smallest children to a leaf, then `key` comes up from there
    /// (the last key, moved to the root, nearly always belongs near the bottom: this saves
    /// comparing it at every level on the way down).
    #[inline]
    fn sift_down(&mut self, key: Key) {
        let heap = &mut self.heap[..];
        let n = heap.len();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            let c = if first + ARITY <= n {
                // the smaller of two pairs' smaller (independent compares)
                let a = first + usize::from(heap[first + 1].before(&heap[first]));
                let b = first + 2 + usize::from(heap[first + 3].before(&heap[first + 2]));
                if heap[b].before(&heap[a]) {
                    b
                } else {
                    a
                }
            } else if first < n {
                let mut c = first;
                for j in first + 1..n {
                    if heap[j].before(&heap[c]) {
                        c = j;
                    }
                }
                c
            } else {
                break;
            };
            heap[i] = heap[c];
            i = c;
        }
        self.sift_up(i, key);
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

    /// Pushes and pops interleaved, many at equal times: each pop is the least
    /// (time, priority, id) pending, as an ordered set of the keys gives it.
    #[test]
    fn order_matches_an_ordered_set() {
        let mut s = Scheduler::new();
        let mut pending = std::collections::BTreeSet::new();
        let mut x: u64 = 12345;
        let mut draw = |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        let mut pops = 0;
        for round in 0..50_000u64 {
            for _ in 0..draw(4) {
                let (t, prio) = (s.now + draw(50) as i64, draw(4) as u8);
                let key = (t, prio, s.ids);
                s.at(t, prio, key);
                pending.insert(key);
            }
            if round % 3 != 0 || round > 40_000 {
                let want = pending.pop_first();
                assert_eq!(s.pop_until(i64::MAX), want);
                pops += 1;
            }
        }
        assert!(pops > 30_000);
        while let Some(e) = s.pop_until(i64::MAX) {
            assert_eq!(Some(e), pending.pop_first());
        }
        assert!(pending.is_empty());
    }

    /// An event's tag rides in its key: `peek_tag` is the next event's, as popped.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Tag(u32);
    impl Tagged for Tag {
        fn tag(&self) -> u32 {
            self.0
        }
    }

    #[test]
    fn peek_tag_is_the_next_events() {
        let mut s = Scheduler::new();
        for (t, tag) in [(7, 3), (2, 9), (5, 1), (2, 4)] {
            s.at(t, TIMER, Tag(tag));
        }
        while let Some(tag) = s.peek_tag() {
            s.prefetch_next();
            assert_eq!(s.pop_until(i64::MAX), Some(Tag(tag)));
        }
        assert_eq!(s.steps, 4);
    }

    #[test]
    fn stops_after_until() {
        let mut s = Scheduler::new();
        s.at(11, WRITER, 1);
        assert_eq!(s.pop_until(10), None);
        assert_eq!(s.peek(), Some(11));
    }
}
