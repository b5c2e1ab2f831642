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
/// Children per node of a heap: a node's children are 4 consecutive keys, so a step down
/// reads two or three cache lines where a binary heap reads one per level, twice as many.
const ARITY: usize = 4;
/// log2 of a time slice of the wheel, in ns: 2**17 ns = 131 us.
const SLICE_SHIFT: u32 = 17;
/// Slices on the wheel (a power of two): 2048 x 131 us = 268 ms ahead of the near heap
/// (all but ~0.3 % of a host's events are scheduled less far ahead).
const WHEEL: usize = 1 << 11;
/// Keys per chunk of a wheel's bucket.
const CHUNK: usize = 16;
/// No chunk (`Wheel::tails`, `Wheel::before`).
const NONE: u32 = u32::MAX;

/// One scheduled event and its key: (time, priority << 56 | id), unique. The event rides
/// with its key (a host's event is 16 bytes, the key 32): the next one is read from the
/// current slice's sorted run or the small heap `near`, which stay in the CPU's cache, and
/// nothing else.
#[derive(Clone, Copy)]
struct Key<E> {
    t: i64,
    order: u64,
    ev: E,
}

/// A scheduled event's tag: `Scheduler::peek_tag` gives the next event's, before it is
/// popped (a host tags an event with its connection, to prefetch it).
pub trait Tagged {
    fn tag(&self) -> u32 {
        0
    }
}

impl Tagged for u8 {}
impl Tagged for &str {}
impl<A, B, C> Tagged for (A, B, C) {}

impl<E> Key<E> {
    #[inline]
    fn before(&self, other: &Key<E>) -> bool {
        (self.t, self.order) < (other.t, other.order)
    }

    /// The wheel's time slice of the key's time.
    #[inline]
    fn slice(&self) -> i64 {
        self.t >> SLICE_SHIFT
    }
}

/// Calls events in time order, integer-nanosecond time (scheduler.py `Scheduler`).
///
/// The order is that of one heap of every pending (time, priority, id); the keys are kept
/// in four places by how far ahead their time is, so that each event costs a few steps on
/// keys that stay in the CPU's cache (a host of 10 000 connections keeps ~55 000 events
/// pending; one heap of them, 1.3 MB, cost a cache miss at nearly every level):
///
/// * `run`: the events of the current time slice (131 us) as they were when it came, sorted
///   (from `pos` on: those not yet run). Sorted, the events to come are known several
///   ahead, and the host reads their connections ahead (`Simulation::read_ahead`).
/// * `near`: a 4-ary heap of the events scheduled into the current slice (or before it)
///   since it came. More than half of a host's events are scheduled for the very
///   nanosecond they are scheduled at (nearly all the next segment of a train sent at one
///   moment, which arrives at the same time as the one before it), and land here.
/// * `wheel`: the events of the next 2048 slices (268 ms), unordered, one bucket per slice:
///   scheduling one appends its key (`Wheel`). When `run` and `near` run empty, the
///   earliest slice holding events becomes `run` (its bucket sorted).
/// * `far`: a 4-ary heap of the events beyond the wheel (RTOs, lifetimes' ends: few), whose
///   slice is taken into `run` when it comes.
///
/// Every key in `run` and `near` is before every key elsewhere (its slice is earlier), so
/// the lesser of their least keys is the least pending: the same order as one heap, event
/// for event.
pub struct Scheduler<E> {
    /// The keys of the current slice when it came, sorted; `run[pos..]` are pending.
    run: Vec<Key<E>>,
    pos: usize,
    /// Slices taken into `run` so far (`run_position`).
    runs: u64,
    /// Slices are sorted into `run` as they come (`sort_slices`); else heapified into
    /// `near`, and `run` stays empty (a schedule nobody reads ahead in: one connection's
    /// few events a slice pay no sort).
    sorted: bool,
    /// A 4-ary min-heap of the keys scheduled before slice `next` since `run` was filled.
    near: Vec<Key<E>>,
    /// The first slice not in `run` or `near`: slices `next .. next + WHEEL` are on the
    /// wheel.
    next: i64,
    /// Bucket `s % WHEEL`: the keys of the events in slice `s`, unordered.
    wheel: Wheel<E>,
    /// A 4-ary min-heap of the keys of the events at slice `next + WHEEL` or later.
    far: Vec<Key<E>>,
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
            run: Vec::new(),
            pos: 0,
            runs: 0,
            sorted: false,
            near: Vec::new(),
            next: 0,
            wheel: Wheel::new(),
            far: Vec::new(),
            ids: 0,
            now: 0,
            steps: 0,
        }
    }

    /// Run `ev` at absolute time `t` (>= now), after the events of kind < `prio`.
    #[inline]
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

    /// Nothing is pending in `run` or `near` (then nothing is pending at all: they are
    /// refilled as they run empty).
    #[inline]
    fn idle(&self) -> bool {
        self.pos == self.run.len() && self.near.is_empty()
    }

    /// Schedule `ev` as if `at()` had been called when `ticket` was reserved (same key).
    /// Inlined: called out of line, the event was read back from memory wider than its
    /// caller had just written it, and waited for those writes (a failed store forward:
    /// two fifths of this function's samples on a large host).
    #[inline(always)]
    pub fn at_ticket(&mut self, t: i64, prio: u8, ticket: u64, ev: E) {
        debug_assert!(ticket < 1 << ID_BITS);
        let key = Key {
            t,
            order: u64::from(prio) << ID_BITS | ticket,
            ev,
        };
        let ahead = key.slice() - self.next;
        if self.idle() {
            // nothing is pending: the current slice is this key's
            self.next = key.slice() + 1;
            self.near.push(key);
        } else if ahead < 0 {
            heap_push(&mut self.near, key);
        } else if ahead < WHEEL as i64 {
            self.wheel.push((key.slice() as usize) & (WHEEL - 1), key);
        } else {
            self.push_far(key);
        }
    }

    #[cold]
    #[inline(never)]
    fn push_far(&mut self, key: Key<E>) {
        heap_push(&mut self.far, key);
    }

    /// The next event's key and whether it is `run`'s (else `near`'s root). `run` and
    /// `near` are refilled as they run empty, so None only when nothing is scheduled.
    #[inline]
    fn first(&self) -> Option<(&Key<E>, bool)> {
        match (self.run.get(self.pos), self.near.first()) {
            (Some(r), Some(n)) => Some(if n.before(r) { (n, false) } else { (r, true) }),
            (Some(r), None) => Some((r, true)),
            (None, n) => n.map(|n| (n, false)),
        }
    }

    /// `run` and `near` ran empty: make the earliest slice holding events (on the wheel or
    /// in `far`) `run`, sorted (or `near`, heapified: `sorted`). False when nothing is
    /// scheduled.
    #[cold]
    fn refill(&mut self) -> bool {
        debug_assert!(self.idle());
        let on_wheel = self
            .wheel
            .first_occupied((self.next as usize) & (WHEEL - 1))
            .map(|ahead| self.next + ahead as i64);
        let in_far = self.far.first().map(Key::slice);
        let s = match (on_wheel, in_far) {
            (Some(w), Some(f)) => w.min(f),
            (Some(w), None) => w,
            (None, Some(f)) => f,
            (None, None) => return false,
        };
        // the slice's keys into `run` (to be sorted) or, unsorted, into `near` (a heap)
        let into = if self.sorted {
            self.run.clear();
            self.pos = 0;
            self.runs += 1;
            &mut self.run
        } else {
            &mut self.near
        };
        if on_wheel == Some(s) {
            self.wheel.take((s as usize) & (WHEEL - 1), into);
        }
        while self.far.first().is_some_and(|k| k.slice() == s) {
            into.push(heap_pop(&mut self.far));
        }
        if self.sorted {
            self.run.sort_unstable_by_key(|k| (k.t, k.order));
        } else {
            heapify(&mut self.near);
        }
        self.next = s + 1;
        true
    }

    /// Time of the next event, None when none is scheduled (Python: INFINITY).
    #[inline]
    pub fn peek(&self) -> Option<i64> {
        self.first().map(|(k, _)| k.t)
    }

    /// The time and priority of the next event, None when none is scheduled.
    #[inline]
    pub fn peek_key(&self) -> Option<(i64, u8)> {
        self.first().map(|(k, _)| (k.t, (k.order >> ID_BITS) as u8))
    }

    /// The tag of the next event (`Tagged`), None when none is scheduled.
    #[inline]
    pub fn peek_tag(&self) -> Option<u32> {
        self.first().map(|(k, _)| k.ev.tag())
    }

    /// Sort each slice into `run` as it comes, so the events to come can be read ahead
    /// (`run_at`); the order of the events is the same either way.
    pub fn sort_slices(&mut self) {
        self.sorted = true;
    }

    /// Whether the next event is the current run's (`run_at(run_position().1)`), None when
    /// none is scheduled.
    #[inline]
    pub fn next_in_run(&self) -> Option<bool> {
        self.first().map(|(_, r)| r)
    }

    /// Where the sorted run of the current slice stands: (which run: it changes at each
    /// refill, the next pending index of it). `run_at(i)` for i from there on are events
    /// to come in that order (others scheduled meanwhile may come between them): a hint
    /// for reading ahead.
    #[inline]
    pub fn run_position(&self) -> (u64, usize) {
        (self.runs, self.pos)
    }

    /// The time and event at index `i` of the current run (`run_position`), if there is
    /// one.
    #[inline]
    pub fn run_at(&self, i: usize) -> Option<(i64, E)> {
        self.run.get(i).map(|k| (k.t, k.ev))
    }

    /// The next event if it is due at or before `until`: the clock moves to it.
    pub fn pop_until(&mut self, until: i64) -> Option<E> {
        let (first, from_run) = self.first()?;
        if first.t > until {
            return None;
        }
        let top = if from_run {
            self.pos += 1;
            self.run[self.pos - 1]
        } else {
            heap_pop(&mut self.near)
        };
        if self.idle() {
            self.refill();
        }
        self.now = top.t;
        self.steps += 1;
        Some(top.ev)
    }
}

/// The wheel's buckets: bucket `b`'s keys in chunks of `CHUNK` from one store, its last
/// chunk first, each chunk naming the one before it. Chunks are shared by all buckets (a
/// bucket's are returned as it is taken): the store holds about what is pending, where one
/// vector per bucket each grew to the most its slice ever held (80 MB at 10 000
/// connections), and the chunk a key is appended to was most often just used.
struct Wheel<E> {
    /// Chunk `c` is `store[c * CHUNK..][..CHUNK]`.
    store: Vec<Key<E>>,
    /// The chunk before chunk `c` in its bucket (NONE: its first).
    before: Vec<u32>,
    /// Chunks not in a bucket.
    free: Vec<u32>,
    /// Bucket `b`'s last chunk (NONE: empty), and the keys in it.
    tails: Vec<(u32, u32)>,
    /// Bit `b` set: bucket `b` holds keys.
    occupied: Vec<u64>,
}

impl<E: Copy> Wheel<E> {
    fn new() -> Self {
        Wheel {
            store: Vec::new(),
            before: Vec::new(),
            free: Vec::new(),
            tails: vec![(NONE, 0); WHEEL],
            occupied: vec![0; WHEEL / 64],
        }
    }

    /// Append `key` to bucket `b`.
    #[inline(always)]
    fn push(&mut self, b: usize, key: Key<E>) {
        let (mut tail, mut n) = self.tails[b];
        if tail == NONE || n as usize == CHUNK {
            (tail, n) = (self.new_chunk(b, tail, key), 0);
        }
        self.store[tail as usize * CHUNK + n as usize] = key;
        self.tails[b] = (tail, n + 1);
    }

    /// A chunk for bucket `b`, after its last `tail` (the first key of a bucket, and one in
    /// 16 after).
    #[inline]
    fn new_chunk(&mut self, b: usize, tail: u32, key: Key<E>) -> u32 {
        let c = match self.free.pop() {
            Some(c) => c,
            None => {
                let c = u32::try_from(self.before.len()).expect("fewer than 2**32 chunks");
                self.store.resize(self.store.len() + CHUNK, key);
                self.before.push(NONE);
                c
            }
        };
        self.before[c as usize] = tail;
        self.occupied[b / 64] |= 1 << (b % 64);
        c
    }

    /// Move bucket `b`'s keys to the end of `out`; the bucket is empty after.
    fn take(&mut self, b: usize, out: &mut Vec<Key<E>>) {
        let (mut c, mut n) = self.tails[b];
        while c != NONE {
            let at = c as usize * CHUNK;
            out.extend_from_slice(&self.store[at..at + n as usize]);
            self.free.push(c);
            (c, n) = (self.before[c as usize], CHUNK as u32);
        }
        self.tails[b] = (NONE, 0);
        self.occupied[b / 64] &= !(1 << (b % 64));
    }

    /// How many buckets after `start` (0: `start` itself) the first that holds keys comes,
    /// None when all are empty.
    fn first_occupied(&self, start: usize) -> Option<usize> {
        let words = self.occupied.len();
        let (w0, b0) = (start / 64, start % 64);
        // the first word from `start` on, the other words in turn, the first word's bits
        // before `start` last (they are slices a whole turn ahead)
        let head = self.occupied[w0] & (!0u64 << b0);
        let found = if head != 0 {
            Some(w0 * 64 + head.trailing_zeros() as usize)
        } else {
            (1..=words).find_map(|i| {
                let w = (w0 + i) % words;
                let bits = if w == w0 {
                    self.occupied[w] & !(!0u64 << b0)
                } else {
                    self.occupied[w]
                };
                (bits != 0).then(|| w * 64 + bits.trailing_zeros() as usize)
            })
        };
        found.map(|b| (b + WHEEL - start) & (WHEEL - 1))
    }
}

/// Add `key` to the 4-ary min-heap `heap`.
#[inline]
fn heap_push<E: Copy>(heap: &mut Vec<Key<E>>, key: Key<E>) {
    let i = heap.len();
    heap.push(key);
    sift_up(heap, i, key);
}

/// Take the least key of the (non-empty) 4-ary min-heap `heap`.
#[inline]
fn heap_pop<E: Copy>(heap: &mut Vec<Key<E>>) -> Key<E> {
    let top = heap[0];
    let last = heap.pop().expect("a pending event");
    if !heap.is_empty() {
        sift_down(heap, last);
    }
    top
}

/// Make `heap` a 4-ary min-heap (Floyd's: each parent sifted down, the last first).
fn heapify<E: Copy>(heap: &mut [Key<E>]) {
    let n = heap.len();
    if n < 2 {
        return;
    }
    for i in (0..=(n - 2) / ARITY).rev() {
        let key = heap[i];
        let mut i = i;
        loop {
            let first = ARITY * i + 1;
            if first >= n {
                break;
            }
            let mut c = first;
            for j in first + 1..(first + ARITY).min(n) {
                if heap[j].before(&heap[c]) {
                    c = j;
                }
            }
            if !heap[c].before(&key) {
                break;
            }
            heap[i] = heap[c];
            i = c;
        }
        heap[i] = key;
    }
}

/// Move `key` up from the hole at `i` to where it belongs, and put it there.
#[inline]
fn sift_up<E: Copy>(heap: &mut [Key<E>], mut i: usize, key: Key<E>) {
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

/// Put `key` at the root's place (a hole) and move it to where it belongs: the hole
/// goes down along the smallest children to a leaf, then `key` comes up from there
/// (the last key, moved to the root, nearly always belongs near the bottom: this saves
/// comparing it at every level on the way down).
#[inline]
fn sift_down<E: Copy>(heap: &mut [Key<E>], key: Key<E>) {
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
    sift_up(heap, i, key);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reproducible stream of draws in 0..m (a 64-bit LCG) for the ordering tests.
    fn draws(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |m| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        }
    }

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
    /// A schedule whose slices are sorted into `run` or heapified into `near`.
    fn schedule<E: Copy + Tagged>(sorted: bool) -> Scheduler<E> {
        let mut s = Scheduler::new();
        if sorted {
            s.sort_slices();
        }
        s
    }

    #[test]
    fn order_matches_an_ordered_set() {
        for sorted in [false, true] {
            order_matches_an_ordered_set_in(schedule(sorted));
        }
    }

    fn order_matches_an_ordered_set_in(mut s: Scheduler<(i64, u8, u64)>) {
        let mut pending = std::collections::BTreeSet::new();
        let mut draw = draws(12345);
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

    /// The same with times from the same nanosecond to seconds ahead: keys in `near`, on
    /// the wheel (within a turn, at a turn's edge) and in `far`, refills that take a slice
    /// from the wheel, from `far` or from both, `peek` between pops.
    #[test]
    fn order_matches_an_ordered_set_across_the_wheel() {
        for sorted in [false, true] {
            across_the_wheel_in(schedule(sorted));
        }
    }

    fn across_the_wheel_in(mut s: Scheduler<(i64, u8, u64)>) {
        let mut pending = std::collections::BTreeSet::new();
        let mut draw = draws(99);
        let turn = (WHEEL as i64) << SLICE_SHIFT;
        for round in 0..60_000u64 {
            for _ in 0..draw(3) {
                let ahead = match draw(8) {
                    0 | 1 => 0,
                    2 => draw(1 << SLICE_SHIFT) as i64,
                    3 => draw(1 << 22) as i64,
                    4 => draw(turn as u64) as i64,
                    5 => turn - 1 + draw(3) as i64 - 1 - (s.now & ((1 << SLICE_SHIFT) - 1)),
                    6 => turn + draw(4 * turn as u64) as i64,
                    _ => (draw(4) as i64) << SLICE_SHIFT,
                };
                let (t, prio) = (s.now + ahead.max(0), draw(4) as u8);
                let key = (t, prio, s.ids);
                s.at(t, prio, key);
                pending.insert(key);
            }
            if round % 5 == 0 {
                assert_eq!(s.peek(), pending.first().map(|k| k.0));
            }
            if round % 4 != 0 || round > 50_000 {
                assert_eq!(s.pop_until(i64::MAX), pending.pop_first());
            }
        }
        while let Some(e) = s.pop_until(i64::MAX) {
            assert_eq!(Some(e), pending.pop_first());
        }
        assert!(pending.is_empty());
        assert_eq!(s.peek(), None);
    }

    /// A bucket gives back every key appended to it, over many chunks, whatever the other
    /// buckets hold; its chunks serve other buckets after.
    #[test]
    fn wheel_buckets_keep_their_keys() {
        let mut w = Wheel::new();
        let key = |t: i64| Key {
            t,
            order: 0,
            ev: (),
        };
        for t in 0..5 * CHUNK as i64 + 3 {
            w.push(7, key(t));
            w.push(WHEEL - 1, key(-t));
        }
        assert_eq!(w.first_occupied(0), Some(7));
        assert_eq!(w.first_occupied(8), Some(WHEEL - 1 - 8));
        assert_eq!(w.first_occupied(WHEEL - 1), Some(0));
        let mut out = Vec::new();
        w.take(7, &mut out);
        let mut got: Vec<i64> = out.iter().map(|k| k.t).collect();
        got.sort_unstable();
        assert_eq!(got, (0..5 * CHUNK as i64 + 3).collect::<Vec<_>>());
        assert_eq!(w.first_occupied(0), Some(WHEEL - 1));
        let chunks = w.before.len();
        w.push(3, key(1));
        assert_eq!(w.before.len(), chunks, "a chunk given back is used again");
        out.clear();
        w.take(WHEEL - 1, &mut out);
        assert_eq!(out.len(), 5 * CHUNK + 3);
        w.take(3, &mut out);
        assert_eq!(w.first_occupied(5), None);
    }

    /// A schedule that ran empty is refilled by what comes next, however far ahead.
    #[test]
    fn refills_after_running_empty() {
        for sorted in [false, true] {
            refills_in(schedule(sorted));
        }
    }

    fn refills_in(mut s: Scheduler<u8>) {
        let turn = (WHEEL as i64) << SLICE_SHIFT;
        s.at(3 * turn + 5, READER, 1);
        assert_eq!(s.pop_until(i64::MAX), Some(1));
        assert_eq!(s.peek(), None);
        s.at(3 * turn + 5, NETWORK, 2);
        s.at(3 * turn + 6 + turn, NETWORK, 3);
        s.at(3 * turn + 4 + turn, WRITER, 4);
        assert_eq!(s.peek(), Some(3 * turn + 5));
        assert_eq!(s.pop_until(i64::MAX), Some(2));
        assert_eq!(s.pop_until(4 * turn), None);
        assert_eq!(s.pop_until(i64::MAX), Some(4));
        assert_eq!(s.pop_until(i64::MAX), Some(3));
        assert_eq!(s.now, 4 * turn + 6);
    }

    /// A sorted slice shows the events to come in their order (`run_at`), those
    /// scheduled into it since coming between them as their keys say.
    #[test]
    fn a_sorted_slice_is_read_ahead_in_order() {
        let mut s = schedule(true);
        let base = 5 << SLICE_SHIFT;
        s.at(1, READER, 0u8);
        for (t, ev) in [(9, 4), (3, 2), (3, 1), (7, 3)] {
            s.at(base + t, TIMER, ev);
        }
        assert_eq!(s.pop_until(i64::MAX), Some(0));
        let (run, pos) = s.run_position();
        let ahead: Vec<_> = (pos..).map_while(|i| s.run_at(i)).collect();
        assert_eq!(
            ahead,
            [(base + 3, 2), (base + 3, 1), (base + 7, 3), (base + 9, 4)]
        );
        assert_eq!(s.next_in_run(), Some(true));
        s.at(base + 5, NETWORK, 9); // scheduled into the current slice: `near`
        let got: Vec<_> = std::iter::from_fn(|| s.pop_until(i64::MAX)).collect();
        assert_eq!(got, [2, 1, 9, 3, 4]);
        assert_eq!(s.run_position().0, run, "one slice: no refill");
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
