"""Resolving event times against the clock, and packetdrill's timing error messages."""

from __future__ import annotations

from tcpsim.packetdrill import (
    anchor_usecs, check_block_end, check_time, describe, parse, resolve,
)
from tcpsim.packetdrill.ast import TimeKind, Timing
from tcpsim.packetdrill.timing import ExpectedTime

EVENTS = parse("""\
0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 5
+0.3 < S 0:0(0) win 900
+0.05 < . 1:1(0) ack 1 win 900
+0 > . 1:1(0) ack 2 win 800
+0 `true`
+0 %{ pass }%
+0.1...0.25 read(5, ..., 7) = 7
""", "t.pkt").events


def test_describe():
    assert [describe(e) for e in EVENTS[:6]] == [
        "system call start", "inbound packet", "inbound packet", "outbound packet",
        "command", "data collection for code"]


def test_inbound_after_inbound_anchors_on_script_time():
    prev = resolve(EVENTS[1].timing, anchor_usecs(EVENTS[0], None, EVENTS[1], 0))
    assert prev.usecs == 300_000
    # the simulator ran late (now = 0.31 s): the next inbound packet still counts from 0.3 s
    anchor = anchor_usecs(EVENTS[1], prev, EVENTS[2], now_usecs=310_000)
    assert resolve(EVENTS[2].timing, anchor).usecs == 350_000


def test_other_events_anchor_on_now():
    prev = ExpectedTime(TimeKind.RELATIVE, 350_000)
    assert anchor_usecs(EVENTS[2], prev, EVENTS[3], now_usecs=352_000) == 352_000
    assert anchor_usecs(EVENTS[3], prev, EVENTS[4], now_usecs=400_000) == 400_000


def test_resolve_kinds():
    assert resolve(Timing(TimeKind.ABSOLUTE, 500), 9_000) == ExpectedTime(TimeKind.ABSOLUTE, 500)
    rel = resolve(Timing(TimeKind.RELATIVE, 500), 9_000)
    assert (rel.usecs, rel.offset_usecs) == (9_500, 9_000)
    rng = resolve(Timing(TimeKind.RELATIVE_RANGE, 0, 40_000), 9_000)
    assert (rng.usecs, rng.end_usecs) == (9_000, 49_000)
    arng = resolve(Timing(TimeKind.ABSOLUTE_RANGE, 100, 200), 9_000)
    assert (arng.usecs, arng.end_usecs, arng.offset_usecs) == (100, 200, 0)
    assert resolve(Timing(TimeKind.ANY), 9_000).usecs == 9_000


def test_resolve_blocking_end_moves_with_relative_start():
    blocking = resolve(EVENTS[6].timing, 1_000_000)
    assert (blocking.usecs, blocking.block_end_usecs) == (1_100_000, 1_250_000)
    absolute = resolve(Timing(TimeKind.ABSOLUTE, 100_000, None, 200_000), 50_000)
    assert absolute.block_end_usecs == 200_000


def test_point_time_message():
    expected = ExpectedTime(TimeKind.ABSOLUTE, 1_105_369)
    assert check_time(expected, 1_109_000, 4_000, "outbound packet") is None
    assert check_time(expected, 1_147_772, 4_000, "outbound packet") == (
        "timing error: expected outbound packet at 1.105369 sec but happened at "
        "1.147772 sec; tolerance 0.004000 sec")
    assert "happened at 1.100000 sec" in check_time(expected, 1_100_000, 4_000, "x")


def test_range_messages():
    relative = resolve(Timing(TimeKind.RELATIVE_RANGE, 0, 40_000), 2_000_000)
    assert check_time(relative, 2_043_999, 4_000, "outbound packet") is None
    assert check_time(relative, 1_996_000, 4_000, "outbound packet") is None
    assert check_time(relative, 2_050_000, 4_000, "outbound packet") == (
        "timing error: expected outbound packet in relative time range +0.000000~+0.040000 "
        "sec but happened at +0.050000 sec")
    assert check_time(relative, 1_990_000, 4_000, "outbound packet").endswith(
        "but happened at -0.010000 sec")
    absolute = resolve(Timing(TimeKind.ABSOLUTE_RANGE, 100_000, 200_000), 0)
    assert check_time(absolute, 300_000, 4_000, "outbound packet") == (
        "timing error: expected outbound packet in time range 0.100000~0.200000 sec "
        "but happened at 0.300000 sec")


def test_star_always_matches():
    assert check_time(resolve(Timing(TimeKind.ANY), 5), 10**9, 0, "outbound packet") is None


def test_blocking_return_check():
    expected = resolve(EVENTS[6].timing, 0)
    assert check_block_end(expected, 252_000, 4_000) is None
    assert check_block_end(expected, 300_000, 4_000) == (
        "timing error: expected system call return at 0.250000 sec but happened at "
        "0.300000 sec; tolerance 0.004000 sec")
    assert check_block_end(resolve(EVENTS[0].timing, 0), 123, 0) is None
