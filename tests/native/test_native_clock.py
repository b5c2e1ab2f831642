"""The clocks: jiffies, the timer wheel and the socket's timer arithmetic, native against
tcpsim/core/clock.py and the Python socket's two branches (exact clock / kernel tick)."""

from functools import cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpsim.core.constants import TCP_RTO_MAX_NS, TCP_RTO_MIN_NS
from tcpsim.core.segment import ACK, Segment

from harness import established
from native_compare import field, home
from strategies import nat_duration_ns, nat_hz, nat_jiffies, nat_time_ns

try:
    from tcpsim.core.clock import JiffyClock
except ImportError:
    from tcpsim.core.clock import JiffyClock
from tcpsim.core.clock import VALID_HZ

real_hz = st.sampled_from(VALID_HZ)


def test_valid_hz(native):
    assert native.VALID_HZ == list(VALID_HZ)


@pytest.mark.parametrize("hz", [0, 1, 200, 1001, -250])
def test_bad_hz_says_the_same(native, hz):
    with pytest.raises(ValueError) as py_err:
        JiffyClock(hz)
    with pytest.raises(ValueError) as rs_err:
        native.JiffyClock(hz)
    assert str(rs_err.value) == str(py_err.value)


@given(hz=real_hz, t=nat_time_ns, j=nat_jiffies, d=nat_duration_ns, us=st.integers(0, 10**12))
def test_jiffy_arithmetic(native, hz, t, j, d, us):
    py, rs = JiffyClock(hz), native.JiffyClock(hz)
    assert rs.hz == hz
    assert rs.jiffies(t) == py.jiffies(t)
    assert rs.jiffies(-t) == py.jiffies(-t)
    assert rs.tick_ns(j) == py.tick_ns(j)
    assert rs.to_jiffies(d) == py.to_jiffies(d)
    assert rs.usecs_to_jiffies(us) == py.usecs_to_jiffies(us)


@given(hz=real_hz, clk=st.integers(0, 1 << 32), delta=st.one_of(
    st.integers(-100, 600), st.integers(0, 1 << 27), st.sampled_from([62, 63, 503, 504, 4031, 4032])))
def test_timer_wheel_buckets(native, hz, clk, delta):
    assert native.JiffyClock(hz).bucket_expiry(clk + delta, clk) == \
        JiffyClock(hz).bucket_expiry(clk + delta, clk)


@given(hz=real_hz, now=nat_time_ns, when_j=st.one_of(st.integers(0, 600), st.integers(0, 1 << 24)))
def test_arming(native, hz, now, when_j):
    assert native.JiffyClock(hz).arm(now, when_j) == JiffyClock(hz).arm(now, when_j)


@cache
def _socket(hz: int):
    """An established Python socket on this clock (reused: each test sets what it reads)."""
    return established("linux-6.1", hz=hz).sk


@given(hz=nat_hz, now=nat_time_ns, when=nat_duration_ns, d=st.integers(0, 10**12))
def test_clock_trait_against_the_socket(native, hz, now, when, d):
    """reset_xmit_timer / jiffies_up of the Clock trait = TcpSocket's methods of those names."""
    sk, clock = _socket(hz), native.Clock(hz)
    sk.now = now
    assert clock.hz == hz
    assert clock.reset_xmit_timer(now, when) == sk.reset_xmit_timer(when)
    assert clock.jiffies_up(d) == sk.jiffies_up(d)


@given(hz=nat_hz, m_us=st.integers(1, 10**8))
def test_rto_from_the_first_rtt_sample(native, hz, m_us):
    """icsk_rto after a first RTT sample (sender.py _rtt_estimator): srtt = m, rttvar = 2m."""
    sk = _socket(hz)
    snd = home(sk, "snd")
    snd.srtt_us8 = snd.mdev_us = snd.min_rtt_us = 0
    sk._rtt_estimator(m_us)
    rttvar = max(field(sk, "snd", "mdev_us"), TCP_RTO_MIN_NS // 1000)
    want = field(sk, "snd", "rto")
    assert min(native.Clock(hz).rto_ns((field(sk, "snd", "srtt_us8") >> 3) + rttvar),
               TCP_RTO_MAX_NS) == want


@given(hz=nat_hz, now=st.integers(10**12, 10**13), elapsed=st.one_of(
    st.integers(0, 1_200_000_000), st.sampled_from([499_999_999, 500_000_000, 500_000_001])))
def test_oow_rate_limit(native, hz, now, elapsed):
    """tcp_oow_rate_limited: an out-of-window pure ACK within tcp_invalid_ratelimit of the last
    answered one is not answered (receiver.py _drop_unacceptable)."""
    sk = _socket(hz)
    home(sk, "rcv").last_oow_ack_ns = now - elapsed
    sk.now = now
    before = sk.mib.TCPACKSkippedSeq
    sk._drop_unacceptable(Segment(0, 0, ACK, 1, 502), "test")
    sk.take_outbox()
    skipped = sk.mib.TCPACKSkippedSeq > before
    limit = sk.sysctl.tcp_invalid_ratelimit * 1_000_000
    assert native.Clock(hz).within(now - elapsed, now, limit) == skipped
