"""The kernel tick (CONFIG_HZ): jiffies, the timer wheel, and the TCP timing built on them.

The reference numbers are the development machine's Linux 6.18.44 (CONFIG_HZ=250), measured
in tests/fixtures/kernel/seed-never-reads-shrink1 (docs/kernel-measurements.md, "HZ"):
delayed ACKs every 32.0 ms covering 32 segments of 4 B; the first delayed-ACK timer armed at
40.8 ms ran at 83.8 ms (10 jiffies + the wheel's one).
"""

import pytest

from tcpsim.core.constants import NS_PER_MS, TCP_ATO_MIN_NS
from tcpsim.core.clock import VALID_HZ, JiffyClock, parse_hz

from harness import established


# -- the clock and the wheel ----------------------------------------------------------------------

def test_jiffies_and_ticks_at_every_hz():
    for hz in VALID_HZ:
        jc = JiffyClock(hz)
        for j in (0, 1, 7, 299, 300, 12345):
            t = jc.tick_ns(j)
            assert jc.jiffies(t) == j and jc.jiffies(t - 1) == j - 1
        # the model's ms constants are whole jiffies at every HZ the kernel offers
        for ms in (40, 200, 500, 1000):
            assert jc.tick_ns(jc.to_jiffies(ms * NS_PER_MS)) == ms * NS_PER_MS


def test_usecs_to_jiffies_rounds_up():
    jc = JiffyClock(250)
    assert [jc.usecs_to_jiffies(u) for u in (0, 1, 4000, 4001, 210_500)] == [0, 1, 1, 2, 53]


def test_wheel_level_0_runs_a_timer_one_jiffy_after_its_expiry():
    jc = JiffyClock(250)
    assert jc.bucket_expiry(20, 10) == 21
    assert jc.bucket_expiry(10 + 62, 10) == 73                # delta 62: still level 0


def test_wheel_level_1_rounds_up_to_8_jiffies():
    jc = JiffyClock(1000)
    # delta 63..503 jiffies: granularity 8, the next multiple strictly after expires
    assert jc.bucket_expiry(100 + 63, 100) == 168
    assert jc.bucket_expiry(240, 40) == 248                     # a 200 ms RTO at HZ=1000
    assert jc.bucket_expiry(247, 40) == 248
    assert jc.bucket_expiry(248, 40) == 256
    # level 2 (504..4031 jiffies): granularity 64 (TCP_TIMEOUT_INIT = 1 s at HZ=1000)
    assert jc.bucket_expiry(1000, 0) == 1024


def test_first_delayed_ack_timer_as_measured_at_hz_250():
    # armed at 40.8 ms for ato = 40 ms: the kernel's timer ran at 83.8 ms (its tick phase
    # is 0.2 ms off the trace clock); 81 ms at HZ=1000
    expires, fire = JiffyClock(250).arm(40_800_000, 10)
    assert (expires, fire) == (20, 84 * NS_PER_MS)
    assert JiffyClock(1000).arm(40_800_000, 40)[1] == 81 * NS_PER_MS


def test_parse_hz_names_the_field_and_the_fix():
    assert parse_hz("250") == 250 and parse_hz(1000) == 1000
    for bad in (200, "fast", True, 0, 2.5):
        with pytest.raises(ValueError) as e:
            parse_hz(bad, "hz")
        msg = str(e.value)
        assert msg.startswith("hz:") and "100, 250, 300, 1000" in msg and "\n" not in msg


# -- delayed ACKs ----------------------------------------------------------------------------------

def _small_segment_acks(hz: int, n: int = 400) -> list[tuple[float, int]]:
    """4 B every 1 ms to a receiver that never reads (seed-never-reads, tcp_shrink_window=1):
    every ACK the receiver sends, (time ms, ack_seq), timers run when due."""
    p = established("linux-6.18", hz=hz, sysctl={"net.ipv4.tcp_shrink_window": 1})
    sk = p.sk
    acks = []
    for i in range(n):
        t = 2.0 + i
        while sk.next_deadline() and sk.next_deadline() <= int(t * NS_PER_MS):
            for s in p.at(sk.next_deadline() / NS_PER_MS).tick():
                acks.append((sk.now / NS_PER_MS, s.ack))
        for s in p.at(t).send(4):
            acks.append((t, s.ack))
    return acks


def _steady_period(acks: list[tuple[float, int]]) -> set[tuple[float, int]]:
    tail = acks[-8:]
    return {(b[0] - a[0], b[1] - a[1]) for a, b in zip(tail, tail[1:])}


def test_delayed_ack_period_is_32_segments_at_hz_250():
    # ato = 10 jiffies, ato >> 2 = 2 jiffies: the pending timer (armed for +10 jiffies) is
    # "about to expire" 8 jiffies = 32 ms after it was armed -- the kernel's 32.0 ms / +128
    assert _steady_period(_small_segment_acks(250)) == {(32.0, 128)}


def test_delayed_ack_period_is_31_segments_at_hz_1000_and_by_default():
    # ato >> 2 = 10 jiffies of 1 ms: the ACK goes 30 ms after arming, with the 31st segment
    assert _steady_period(_small_segment_acks(1000)) == {(31.0, 124)}
    assert _steady_period(_small_segment_acks(0)) == {(31.0, 124)}


def test_delayed_ack_timer_runs_on_the_wheel_bucket():
    for hz, want_ms in ((250, 44.0), (1000, 41.0)):
        p = established("linux-6.18", hz=hz)
        sk = p.sk
        for i in range(60):                       # leave quick-ack mode
            p.at(2 + i * 0.1).send(1448)
            p.read(1 << 20)
        p.take()
        p.at(100.5).send(10)
        # expiry = jiffy of 100.5 ms + ato (40 ms); the wheel runs it one jiffy later
        assert sk.ack.delack_deadline - 100 * NS_PER_MS == want_ms * NS_PER_MS
        assert sk.clock.tick_ns(sk.ack.delack_expires) == 140 * NS_PER_MS


def test_ato_halving_works_in_whole_jiffies():
    # m <= TCP_ATO_MIN/2: ato = ato/2 + TCP_ATO_MIN/2, both halves in jiffies. From 60 ms:
    # HZ=250 -> (15 >> 1) + 5 = 12 jiffies = 48 ms; HZ=1000 -> 30 + 20 = 50 ms.
    for hz, want in ((250, 48), (1000, 50), (0, 50)):
        p = established("linux-6.18", hz=hz)
        sk = p.sk
        p.at(10).send(100)
        sk.ack.ack_ato = 60 * NS_PER_MS
        p.at(12).send(100)
        assert sk.ack.ack_ato == want * NS_PER_MS, hz


def test_first_ato_is_tcp_ato_min_at_every_hz():
    for hz in VALID_HZ:
        p = established("linux-6.18", hz=hz)
        p.at(10).send(100)
        assert p.sk.ack.ack_ato == TCP_ATO_MIN_NS


# -- retransmission timer ----------------------------------------------------------------------------

def test_rto_is_rounded_up_to_whole_jiffies():
    p = established("linux-6.18", hz=250)
    sk = p.sk
    sk.snd.srtt_us8 = 0                               # the first sample (not the handshake's)
    sk._rtt_estimator(10_500)                     # srtt 10.5 ms, rttvar floor 200 ms
    assert sk.snd.rto == 212 * NS_PER_MS              # usecs_to_jiffies(210 500) = 53 jiffies
    q = established("linux-6.18")
    q.sk.snd.srtt_us8 = 0
    q.sk._rtt_estimator(10_500)
    assert q.sk.snd.rto == 210_500_000                # default clock: to the microsecond


def test_rto_timer_uses_the_wheel():
    p = established("linux-6.18", hz=1000)
    sk = p.sk
    sk.now = 40 * NS_PER_MS
    assert sk.reset_xmit_timer(200 * NS_PER_MS) == 248 * NS_PER_MS      # level 1
    q = established("linux-6.18", hz=250)
    q.sk.now = 40 * NS_PER_MS
    assert q.sk.reset_xmit_timer(200 * NS_PER_MS) == 244 * NS_PER_MS    # 50 jiffies: level 0
    d = established("linux-6.18")
    d.sk.now = 40 * NS_PER_MS
    assert d.sk.reset_xmit_timer(200 * NS_PER_MS) == 240 * NS_PER_MS    # default: exact


# -- one interface, two clocks ----------------------------------------------------------------

def test_the_exact_clock_keeps_ns_and_floors_the_ack_timing_to_1_ms():
    from tcpsim.core.clock import ExactClock, make_clock
    c = make_clock(0)
    assert isinstance(c, ExactClock) and c.hz == 0
    assert c.ticks(41_700_000) == 41 * NS_PER_MS and c.stamp(41_700_000) == 41_700_000
    assert c.reset_timer(41_700_000, 200 * NS_PER_MS) == 241_700_000     # no wheel
    assert c.jiffies_up(1) == NS_PER_MS and c.ticks_ns(c.usecs_to_ticks(210_500)) == 210_500_000


def test_the_jiffy_clock_implements_the_interface_with_its_wheel():
    from tcpsim.core.clock import make_clock
    c = make_clock(250)
    assert isinstance(c, JiffyClock)
    assert c.ticks(41_700_000) == 10 and c.stamp(41_700_000) == 40 * NS_PER_MS
    assert c.reset_timer(40_800_000, 40 * NS_PER_MS) == c.arm(40_800_000, 10)[1]
    assert c.ticks_ns(c.usecs_to_ticks(210_500)) == 212 * NS_PER_MS       # 53 jiffies
    assert c.timer_ns(20, 10) == c.tick_ns(21)                            # level 0: +1 jiffy
