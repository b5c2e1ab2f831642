"""One direction of a link: propagation delay, optional rate with a FIFO queue or a token
bucket (`tc tbf`), random loss, optional jitter.

The token bucket (`[link] kind = "tbf"`): tokens accrue at `rate` up to `burst` bytes; a
packet leaves when the bucket holds its length (the skb's: payload + TCP/IP headers +
Ethernet header), in FIFO order; a packet that would take the queue past `limit` bytes is
dropped (tbf's bfifo backlog), and one longer than `burst` can never leave (dropped). The
departure then takes the propagation delay and the jitter below.

Jitter is an extra delay per packet, exponentially distributed with the given mean, that never
reorders packets: a packet is not delivered before the one sent ahead of it. Real paths have
it (the capture's NFQUEUE delay is late by 0.1 ms median and several ms at p99, and
application sleeps overshoot) and some kernel behaviour depends on it: a slow reader's ACKs
spaced unevenly is what lets 6.18's never-shrink window ratchet down to zero.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Callable

from tcpsim.core.segment import Segment
from tcpsim.engine.scheduler import NETWORK, Scheduler

WIRE_OVERHEAD = 14 + 20 + 20 + 4 + 8 + 12   # Ethernet + IP + TCP + FCS + preamble + gap
TBF_OVERHEAD = 14 + 20 + 20                 # what tbf counts of a packet: Ethernet + IP + TCP


class LinkDirection:
    """Carries segments from one endpoint to the other, in order."""

    def __init__(self, sched: Scheduler, deliver: Callable[[Segment], None], delay_ns: int,
                 rate_bps: int = 0, queue_limit: int = 1000, loss: float = 0.0,
                 rng: random.Random | None = None, jitter_ns: int = 0,
                 jitter_rng: random.Random | None = None, tbf_burst: int = 0,
                 tbf_limit: int = 0) -> None:
        self.sched = sched
        self.deliver = deliver
        self.delay = delay_ns
        self.rate = rate_bps
        self.queue_limit = queue_limit
        self.loss = loss
        self.rng = rng or random.Random(0)
        self.jitter = jitter_ns
        self.jitter_rng = jitter_rng or random.Random(1)
        self.last_delivery = 0
        self.busy_until = 0
        self.in_queue: deque[int] = deque()   # departure times of queued packets (rate only)
        # Packets on their way, in delivery order: (arrival time, tie-break ticket, segment).
        # Arrival times never decrease (a FIFO link, jitter never reorders), so only the
        # head is on the scheduler's heap; each delivery schedules the next one with the
        # ticket reserved when it was sent, which keeps the event order exactly as if every
        # packet had been scheduled at send time.
        self.flight: deque[tuple[int, int, Segment]] = deque()
        self.sent = self.dropped = self.lost = 0
        # token bucket (tbf_burst > 0): tokens in bit-nanoseconds (bytes * 8 * 1e9), exact
        self.tbf_burst, self.tbf_limit = tbf_burst, tbf_limit
        self.tokens = tbf_burst * 8 * 1_000_000_000
        self.tokens_at = 0
        self.backlog = 0
        self.tbf_queue: deque[tuple[int, int]] = deque()   # (departure, bytes) of queued

    def _tbf(self, t: int, seg: Segment) -> int:
        """Models `tbf_enqueue()`/`tbf_dequeue()` [net/sched/sch_tbf.c]: the departure time
        of a packet queued at t, or -1 when the bucket's queue drops it."""
        q = self.tbf_queue
        while q and q[0][0] <= t:
            self.backlog -= q.popleft()[1]
        size = seg.len + (12 if seg.tsval >= 0 else 0) + TBF_OVERHEAD
        if size > self.tbf_burst or self.backlog + size > self.tbf_limit:
            return -1
        d = t if t > self.busy_until else self.busy_until
        full = self.tbf_burst * 8 * 1_000_000_000
        self.tokens = min(full, self.tokens + (d - self.tokens_at) * self.rate)
        need = size * 8 * 1_000_000_000
        if self.tokens < need:
            wait = -(-(need - self.tokens) // self.rate)
            d += wait
            self.tokens += wait * self.rate
        self.tokens -= need
        self.tokens_at = self.busy_until = d
        q.append((d, size))
        self.backlog += size
        return d

    def send(self, seg: Segment) -> None:
        """Put a segment on the link (at the scheduler's current time)."""
        sched = self.sched
        t = sched.env.clock                             # sched.now, without its property call
        self.sent += 1
        if self.loss and self.rng.random() < self.loss:
            self.lost += 1
            return
        if self.tbf_burst:
            t = self._tbf(t, seg)
            if t < 0:
                self.dropped += 1
                return
        elif self.rate:
            q = self.in_queue
            while q and q[0] <= t:
                q.popleft()
            if len(q) >= self.queue_limit:
                self.dropped += 1
                return
            start = t if t > self.busy_until else self.busy_until
            bits = (seg.len + (12 if seg.tsval >= 0 else 0) + WIRE_OVERHEAD) * 8
            t = self.busy_until = start + bits * 1_000_000_000 // self.rate
            q.append(t)
        t += self.delay
        if self.jitter:
            t += int(self.jitter_rng.expovariate(1.0 / self.jitter))
            if t < self.last_delivery:
                t = self.last_delivery                  # never overtake the previous packet
            self.last_delivery = t
        flight = self.flight
        flight.append((t, sched.ticket(), seg))
        if len(flight) == 1:
            sched.at_ticket(t, NETWORK, flight[0][1], self._arrive)

    def _arrive(self) -> None:
        """The head of the flight reaches the far end; the next one takes its place."""
        flight = self.flight
        seg = flight.popleft()[2]
        if flight:
            t, ticket, _ = flight[0]
            self.sched.at_ticket(t, NETWORK, ticket, self._arrive)
        self.deliver(seg)
