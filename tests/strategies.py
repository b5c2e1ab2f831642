"""Hypothesis strategies shared by the test suite.

Each area keeps its strategies in its own clearly marked section; append new sections below.
"""

from __future__ import annotations

from hypothesis import strategies as st

# =========================================================================== packetdrill
# Strategies for tcpsim.conformance.packetdrill (tests/conformance/test_pd_*.py): syntax-tree
# values that render to valid script lines, and segments as the simulator would send them.

from tcpsim.conformance.packetdrill.ast import (  # noqa: E402
    ACK, ANY, FIN, PSH, RST, SYN, URG, Direction, Eol, Mss, Nop, Sack, SackOK, TcpPacket,
    Timestamp, TimeKind, Timing, WScale, options_size,
)

U16, U32 = 0xFFFF, 0xFFFF_FFFF

pd_flags = st.sets(st.sampled_from([SYN, FIN, RST, PSH, ACK, URG])).map(sum)

pd_sack_blocks = st.lists(
    st.tuples(st.integers(0, U32), st.integers(0, U32)), min_size=1, max_size=4,
).map(tuple)

pd_option = st.one_of(
    st.just(Nop()), st.just(Eol()), st.just(SackOK()),
    st.builds(Mss, st.integers(0, U16)),
    st.builds(WScale, st.integers(0, 14)),
    st.builds(Timestamp, st.integers(0, U32), st.integers(0, U32)),
    st.builds(Sack, pd_sack_blocks),
)


def _pad(options: list) -> tuple:
    """Append NOPs up to a multiple of 4 bytes, as a valid script must."""
    return tuple(options) + (Nop(),) * (-options_size(tuple(options)) % 4)


pd_options = st.lists(pd_option, max_size=5).map(_pad).filter(lambda o: options_size(o) <= 40)


@st.composite
def pd_packets(draw, direction: Direction | None = None) -> TcpPacket:
    """A TCP packet line that the parser accepts (inbound ones give `win`, no wildcards)."""
    direction = direction or draw(st.sampled_from(Direction))
    outbound = direction is Direction.OUTBOUND
    length = draw(st.integers(0, U16))
    seq = draw(st.integers(0, U32 - length))
    plain = st.integers(0, U32)
    ack = draw(st.one_of(st.none(), plain, st.just(ANY)) if outbound
               else st.one_of(st.none(), plain))
    win = draw(st.one_of(st.none(), st.integers(0, U16), st.just(ANY)) if outbound
               else st.integers(0, U16))
    urg = draw(st.one_of(st.none(), st.integers(0, U16)))
    options = draw(st.one_of(pd_options, st.just(ANY)) if outbound else pd_options)
    return TcpPacket(direction, draw(pd_flags), seq, length, ack, win, urg, options)


pd_usecs = st.integers(0, 10**8)


@st.composite
def pd_timings(draw, outbound: bool) -> Timing:
    """An event time stamp valid for an outbound packet (any kind) or other events."""
    kinds = list(TimeKind) if outbound else [TimeKind.ABSOLUTE, TimeKind.RELATIVE]
    kind = draw(st.sampled_from(kinds))
    if kind is TimeKind.ANY:
        return Timing(kind)
    start = draw(pd_usecs)
    end = start + draw(pd_usecs) if kind in (TimeKind.ABSOLUTE_RANGE,
                                              TimeKind.RELATIVE_RANGE) else None
    return Timing(kind, start, end)


@st.composite
def pd_segments(draw):
    """An outbound `Segment` whose options fit in a TCP header."""
    from tcpsim.core.segment import Segment

    flags = draw(pd_flags)
    syn = bool(flags & SYN)
    has_ts = draw(st.booleans())
    sack_limit = 0 if syn else (3 if has_ts else 4)
    length = draw(st.integers(0, U16))
    return Segment(
        draw(st.integers(0, U32 - length)), length, flags,
        draw(st.integers(0, U32)) if flags & ACK else 0, draw(st.integers(0, U16)),
        mss=draw(st.integers(1, U16)) if syn and draw(st.booleans()) else 0,
        wscale=draw(st.integers(0, 14)) if syn and draw(st.booleans()) else -1,
        sack_ok=syn and draw(st.booleans()),
        tsval=draw(st.integers(0, U32)) if has_ts else -1,
        tsecr=draw(st.integers(0, U32)) if has_ts else -1,
        sacks=tuple(draw(st.lists(st.tuples(st.integers(0, U32), st.integers(0, U32)),
                                  max_size=sack_limit))),
    )
