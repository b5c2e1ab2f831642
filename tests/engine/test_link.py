"""LinkDirection: delay, serialization rate with a FIFO queue limit, seeded loss."""

import random

from tcpsim.core.segment import ACK, Segment
from tcpsim.engine.link import LinkDirection
from tcpsim.engine.scheduler import Scheduler


def seg(n=1448):
    return Segment(1, n, ACK, 1, 100, tsval=1, tsecr=1)


def test_delay_only_preserves_order_and_adds_delay():
    s = Scheduler()
    got = []
    link = LinkDirection(s, lambda x: got.append((s.now, x)), delay_ns=10_000)
    a, b = seg(), seg()
    link.send(a)
    link.send(b)
    s.run(10**9)
    assert [t for t, _ in got] == [10_000, 10_000] and [x for _, x in got] == [a, b]


def test_rate_serializes_and_queue_limit_drops():
    s = Scheduler()
    got = []
    link = LinkDirection(s, lambda x: got.append(s.now), delay_ns=0, rate_bps=10**9, queue_limit=3)
    for _ in range(5):
        link.send(seg())
    s.run(10**9)
    per = (1448 + 12 + 78) * 8                            # bits on the wire per segment
    assert got == [per, 2 * per, 3 * per] and link.dropped == 2


def test_loss_is_seeded():
    def lost(seed):
        s = Scheduler()
        got = []
        link = LinkDirection(s, got.append, 0, loss=0.3, rng=random.Random(seed))
        sent = [seg() for _ in range(200)]
        for x in sent:
            link.send(x)
        s.run(10**9)
        return [i for i, x in enumerate(sent) if x not in got]
    assert lost(1) == lost(1) and 30 < len(lost(1)) < 90 and lost(1) != lost(2)


def test_jitter_delays_but_never_reorders_and_is_seeded():
    def deliveries(seed):
        s = Scheduler()
        got = []
        link = LinkDirection(s, lambda x: got.append((s.now, x)), 1000, jitter_ns=500_000,
                             jitter_rng=random.Random(seed))
        sent = [seg() for _ in range(300)]
        for i, x in enumerate(sent):
            s.at(i * 100_000, 0, link.send, x)
        s.run(10**10)
        return got, sent
    got, sent = deliveries(1)
    assert [x for _, x in got] == sent                       # order kept
    times = [t for t, _ in got]
    assert times == sorted(times)
    extra = [t - i * 100_000 - 1000 for i, t in enumerate(times)]
    assert min(extra) >= 0 and 200_000 < sum(extra) / len(extra) < 2_000_000
    assert [t for t, _ in deliveries(1)[0]] == times != [t for t, _ in deliveries(2)[0]]
