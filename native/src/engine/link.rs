//! One direction of a link (tcpsim/engine/link.py): propagation delay, optional rate with a
//! FIFO queue or a token bucket (`tc tbf`), random loss, optional jitter.
//!
//! Jitter is an extra delay per packet, exponentially distributed with the given mean, that
//! never reorders packets: a packet is not delivered before the one sent ahead of it.

use std::collections::VecDeque;

use super::random::LazyRandom;
use super::scheduler::{Scheduler, Tagged, NETWORK};
use crate::rewind::Rewind;
use crate::segment::Segment;

/// Ethernet + IP + TCP + FCS + preamble + gap.
pub const WIRE_OVERHEAD: i64 = 14 + 20 + 20 + 4 + 8 + 12;
/// What tbf counts of a packet: Ethernet + IP + TCP headers.
pub const TBF_OVERHEAD: i64 = 14 + 20 + 20;
/// Token units per byte: bit-nanoseconds (bytes * 8 * 1e9), exact in integers.
const TOKEN_BYTE: i128 = 8 * 1_000_000_000;

/// Carries segments from one endpoint to the other, in order (link.py `LinkDirection`).
pub struct LinkDirection {
    pub delay: i64,
    pub rate: i64,
    pub queue_limit: usize,
    pub loss: f64,
    pub jitter: i64,
    pub last_delivery: i64,
    pub busy_until: i64,
    /// Departure times of queued packets (rate only).
    in_queue: VecDeque<i64>,
    /// Packets on their way, in delivery order: (arrival time, tie-break ticket, segment);
    /// only the head is on the scheduler's heap.
    flight: VecDeque<(i64, u64, Segment)>,
    pub sent: i64,
    pub dropped: i64,
    pub lost: i64,
    /// The token bucket of a `tbf` link, None for the FIFO link. Behind a box: most links
    /// have none, and a host of thousands of connections reads each direction from memory
    /// at every packet (link.py keeps these fields on the direction itself).
    tbf: Option<Box<TokenBucket>>,
}

/// A link direction's token bucket (link.py `LinkDirection`'s `tbf_*` fields): bucket size
/// and queue limit (bytes), tokens (bit-ns) as of `tokens_at`, the bytes queued and each
/// queued packet's (departure, bytes).
struct TokenBucket {
    tbf_burst: i64,
    tbf_limit: i64,
    tokens: i128,
    tokens_at: i64,
    backlog: i64,
    tbf_queue: VecDeque<(i64, i64)>,
}

impl TokenBucket {
    /// link.py `_tbf`: models `tbf_enqueue()`/`tbf_dequeue()` [net/sched/sch_tbf.c]: the
    /// departure time of a packet queued at `t` on a link of `rate` busy until `busy_until`
    /// (moved to it), None when the bucket's queue drops it.
    fn tbf(&mut self, busy_until: &mut i64, rate: i64, t: i64, seg: &Segment) -> Option<i64> {
        while self.tbf_queue.front().is_some_and(|&(d, _)| d <= t) {
            let (_, size) = self.tbf_queue.pop_front().expect("a queued packet");
            self.backlog -= size;
        }
        let size = seg.len + if seg.tsval >= 0 { 12 } else { 0 } + TBF_OVERHEAD;
        if size > self.tbf_burst || self.backlog + size > self.tbf_limit {
            return None;
        }
        let mut d = t.max(*busy_until);
        let rate = i128::from(rate);
        let full = i128::from(self.tbf_burst) * TOKEN_BYTE;
        self.tokens = full.min(self.tokens + i128::from(d - self.tokens_at) * rate);
        let need = i128::from(size) * TOKEN_BYTE;
        if self.tokens < need {
            let wait = (need - self.tokens + rate - 1) / rate;
            d += wait as i64;
            self.tokens += wait * rate;
        }
        self.tokens -= need;
        self.tokens_at = d;
        *busy_until = d;
        self.tbf_queue.push_back((d, size));
        self.backlog += size;
        Some(d)
    }
}

impl LinkDirection {
    /// A direction with `delay_ns`, `rate_bps` (0: unlimited), `queue_limit` packets,
    /// `loss` probability and mean `jitter_ns`.
    pub fn new(delay_ns: i64, rate_bps: i64, queue_limit: i64, loss: f64, jitter_ns: i64) -> Self {
        LinkDirection {
            delay: delay_ns,
            rate: rate_bps,
            queue_limit: queue_limit.max(0) as usize,
            loss,
            jitter: jitter_ns,
            last_delivery: 0,
            busy_until: 0,
            in_queue: VecDeque::new(),
            flight: VecDeque::new(),
            sent: 0,
            dropped: 0,
            lost: 0,
            tbf: None,
        }
    }

    /// The direction shaped by a token bucket of `burst` and `limit` bytes at its rate.
    pub fn with_tbf(mut self, burst: i64, limit: i64) -> Self {
        self.tbf = (burst != 0).then(|| {
            Box::new(TokenBucket {
                tbf_burst: burst,
                tbf_limit: limit,
                tokens: i128::from(burst) * TOKEN_BYTE,
                tokens_at: 0,
                backlog: 0,
                tbf_queue: VecDeque::new(),
            })
        });
        self
    }

    /// Put a segment on the link at the scheduler's current time; `rng` draws the loss,
    /// `jitter_rng` the jitter; `arrive` is the event that delivers this direction's head.
    pub fn send<E: Copy + Tagged>(
        &mut self,
        sched: &mut Scheduler<E>,
        seg: Segment,
        rng: &mut LazyRandom,
        jitter_rng: &mut LazyRandom,
        arrive: E,
    ) {
        let mut t = sched.now;
        self.sent += 1;
        if self.loss != 0.0 && rng.get().random() < self.loss {
            self.lost += 1;
            return;
        }
        if let Some(tb) = self.tbf.as_deref_mut() {
            match tb.tbf(&mut self.busy_until, self.rate, t, &seg) {
                Some(d) => t = d,
                None => {
                    self.dropped += 1;
                    return;
                }
            }
        } else if self.rate != 0 {
            while self.in_queue.front().is_some_and(|&d| d <= t) {
                self.in_queue.pop_front();
            }
            if self.in_queue.len() >= self.queue_limit {
                self.dropped += 1;
                return;
            }
            let start = t.max(self.busy_until);
            let ts = if seg.tsval >= 0 { 12 } else { 0 };
            let bits = (seg.len + ts + WIRE_OVERHEAD) * 8;
            self.busy_until = start + bits * 1_000_000_000 / self.rate;
            t = self.busy_until;
            self.in_queue.push_back(t);
        }
        t += self.delay;
        if self.jitter != 0 {
            t += jitter_rng.get().expovariate(1.0 / self.jitter as f64) as i64;
            if t < self.last_delivery {
                t = self.last_delivery;
            }
            self.last_delivery = t;
        }
        let ticket = sched.ticket();
        self.flight.push_back((t, ticket, seg));
        if self.flight.len() == 1 {
            sched.at_ticket(t, NETWORK, ticket, arrive);
        }
    }

    /// Prefetch where the next `send` puts its segment (a hint: see src/prefetch.rs).
    #[inline]
    pub fn prefetch_tail(&self) {
        let (a, b) = self.flight.as_slices();
        let tail = if b.is_empty() { a } else { b };
        let entry = std::mem::size_of::<(i64, u64, Segment)>();
        crate::prefetch::lines(tail.as_ptr().wrapping_add(tail.len()), entry.div_ceil(64));
    }

    /// The head of the flight reaches the far end (returned); the next one takes its place.
    pub fn arrive<E: Copy + Tagged>(&mut self, sched: &mut Scheduler<E>, arrive: E) -> Segment {
        let (_, _, seg) = self
            .flight
            .pop_front_rewind()
            .expect("an arrival with nothing in flight");
        if let Some(&(t, ticket, _)) = self.flight.front() {
            sched.at_ticket(t, NETWORK, ticket, arrive);
        }
        seg
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::random::Random;

    fn seg(len: i64) -> Segment {
        let mut s = Segment::new(0, len, 0x10, 0, 0);
        s.tsval = -1;
        s
    }

    fn arrivals(link: &mut LinkDirection, sched: &mut Scheduler<u8>) -> Vec<i64> {
        let mut out = Vec::new();
        while sched.pop_until(i64::MAX).is_some() {
            link.arrive(sched, 0);
            out.push(sched.now);
        }
        out
    }

    #[test]
    fn rate_serialises_and_the_queue_limit_drops() {
        let (mut sched, mut r, mut j) = (Scheduler::new(), LazyRandom::new(0), LazyRandom::new(1));
        // 1000 B + 78 B overhead at 8 Mbit/s: 1.078 ms per packet
        let mut link = LinkDirection::new(5_000_000, 8_000_000, 2, 0.0, 0);
        for _ in 0..3 {
            link.send(&mut sched, seg(1000), &mut r, &mut j, 0u8);
        }
        assert_eq!(link.dropped, 1);
        assert_eq!(arrivals(&mut link, &mut sched), [6_078_000, 7_156_000]);
    }

    #[test]
    fn jitter_never_reorders_and_loss_draws_the_python_stream() {
        let (mut sched, mut r, mut j) = (Scheduler::new(), LazyRandom::new(7), LazyRandom::new(15));
        let mut link = LinkDirection::new(1_000_000, 0, 1000, 0.3, 2_000_000);
        for _ in 0..200 {
            link.send(&mut sched, seg(100), &mut r, &mut j, 0u8);
        }
        let mut expect = Random::new(7);
        let lost = (0..200).filter(|_| expect.random() < 0.3).count() as i64;
        assert_eq!(link.lost, lost);
        let t = arrivals(&mut link, &mut sched);
        assert_eq!(t.len() as i64, 200 - lost);
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
    }
}
