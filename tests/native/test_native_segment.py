"""Segments (flags, options, end_seq, repr) and the kernel's 32-bit sequence comparison."""

from hypothesis import given
from hypothesis import strategies as st

from tcpsim.core.segment import Segment, flags_str

from strategies import nat_flags, nat_payload, nat_segment_kwargs, nat_seq, nat_u32_near_wrap


def test_flags_render_the_same(native):
    for flags in range(0x40):
        assert native.flags_str(flags) == flags_str(flags)


@given(seq=nat_seq, length=nat_payload, flags=nat_flags, ack=nat_seq,
       win=st.integers(0, 65535), opts=nat_segment_kwargs)
def test_segment_repr_and_end_seq(native, seq, length, flags, ack, win, opts):
    want = Segment(seq, length, flags, ack, win, **opts)
    text, end_seq = native.segment_info(seq, length, flags, ack, win, **opts)
    assert (text, end_seq) == (repr(want), want.end_seq)


def _kernel_before(s1: int, s2: int) -> bool:
    """before() [include/net/tcp.h] as its definition reads: the difference taken as a
    signed 32-bit number is negative. (The Python model has no twin: its sequence numbers
    are unbounded integers, see tcpsim/core/segment.py.)"""
    return (s1 - s2) % (1 << 32) >= 1 << 31


@given(pair=nat_u32_near_wrap())
def test_before_after_wrap_like_the_kernel(native, pair):
    a, b = pair
    assert native.before(a, b) == _kernel_before(a, b)
    assert native.after(a, b) == _kernel_before(b, a)
    assert native.between(a, b, (b + 100) % (1 << 32)) == ((a - b) % (1 << 32) <= 100)
