"""Turn event time stamps into expected times on the run's clock, and check actual times.

All times are microseconds since the script started (the first event is at 0).

packetdrill resolves a relative time against "now", the moment the previous event finished
(for an outbound packet: when it was seen; for a system call: when it returned), with one
exception: consecutive inbound packets anchor on the previous packet's *script* time, so
processing delays do not accumulate. `*` also takes "now" as its nominal time. Absolute times
need no anchor. The end of a blocking system call (`t1...t2`) moves with `t1` when `t1` is
relative.

Checks allow `tolerance_usecs` on both sides (default 4000, `--tolerance_usecs`); a range
`a~b` allows [a - tol, b + tol]. Messages follow packetdrill's wording, e.g.
`timing error: expected outbound packet at 0.147979 sec but happened at 0.235739 sec;
tolerance 0.004000 sec`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ast import (
    CodeEvent, CommandEvent, Direction, Event, PacketEvent, SyscallEvent, TimeKind, Timing,
)


@dataclass(frozen=True, slots=True)
class ExpectedTime:
    """An event's time resolved against the clock (absolute microseconds)."""

    kind: TimeKind
    usecs: int                    # start, or the only time
    end_usecs: int | None = None  # end of a range
    offset_usecs: int = 0         # the anchor added to relative times (0 for absolute)
    block_end_usecs: int | None = None  # when a blocking system call must return


def describe(event: Event) -> str:
    """packetdrill's name for the event kind in timing errors."""
    if isinstance(event, PacketEvent):
        return f"{event.packet.direction.name.lower()} packet"
    if isinstance(event, SyscallEvent):
        return "system call start"
    if isinstance(event, CommandEvent):
        return "command"
    assert isinstance(event, CodeEvent)
    return "data collection for code"


def _is_inbound(event: Event | None) -> bool:
    return isinstance(event, PacketEvent) and event.packet.direction is Direction.INBOUND


def anchor_usecs(prev: Event | None, prev_expected: ExpectedTime | None, event: Event,
                 now_usecs: int) -> int:
    """What `event`'s relative time counts from: the previous inbound packet's script time
    if both are inbound packets, else `now_usecs` (when the previous event finished)."""
    if _is_inbound(prev) and _is_inbound(event) and prev_expected is not None:
        return prev_expected.usecs
    return now_usecs


def resolve(timing: Timing, anchor: int) -> ExpectedTime:
    """The expected time of an event whose time stamp is `timing`, given its anchor."""
    relative = timing.kind in (TimeKind.RELATIVE, TimeKind.RELATIVE_RANGE, TimeKind.ANY)
    offset = anchor if relative else 0
    end = None if timing.end_usecs is None else timing.end_usecs + offset
    block_end = timing.block_end_usecs
    if block_end is not None and timing.kind is TimeKind.RELATIVE:
        block_end += offset
    return ExpectedTime(timing.kind, timing.usecs + offset, end, offset, block_end)


def check_time(expected: ExpectedTime, actual_usecs: int, tolerance_usecs: int,
               description: str) -> str | None:
    """None if `actual_usecs` fits the expectation, else packetdrill's timing error text."""
    kind, tol = expected.kind, tolerance_usecs
    if kind is TimeKind.ANY:
        return None
    if kind in (TimeKind.ABSOLUTE_RANGE, TimeKind.RELATIVE_RANGE):
        return _check_range(expected, actual_usecs, tol, description)
    if abs(actual_usecs - expected.usecs) <= tol:
        return None
    return (f"timing error: expected {description} at {_secs(expected.usecs)} sec "
            f"but happened at {_secs(actual_usecs)} sec; tolerance {_secs(tol)} sec")


def check_block_end(expected: ExpectedTime, return_usecs: int,
                    tolerance_usecs: int) -> str | None:
    """Check when a blocking system call (`t1...t2`) returned against `t2`."""
    if expected.block_end_usecs is None:
        return None
    point = ExpectedTime(TimeKind.ABSOLUTE, expected.block_end_usecs)
    return check_time(point, return_usecs, tolerance_usecs, "system call return")


def _check_range(expected: ExpectedTime, actual: int, tol: int, description: str) -> str | None:
    end = expected.end_usecs if expected.end_usecs is not None else expected.usecs
    if expected.usecs - tol <= actual <= end + tol:
        return None
    if expected.kind is TimeKind.ABSOLUTE_RANGE:
        return (f"timing error: expected {description} in time range "
                f"{_secs(expected.usecs)}~{_secs(end)} sec but happened at {_secs(actual)} sec")
    off = expected.offset_usecs
    return (f"timing error: expected {description} in relative time range "
            f"+{_secs(expected.usecs - off)}~+{_secs(end - off)} sec "
            f"but happened at {_signed_secs(actual - off)} sec")


def _secs(usecs: int) -> str:
    """C's `%.6f` of usecs / 1e6, exactly (no float rounding)."""
    sign = "-" if usecs < 0 else ""
    whole, frac = divmod(abs(usecs), 1_000_000)
    return f"{sign}{whole}.{frac:06d}"


def _signed_secs(usecs: int) -> str:
    """C's `%+.6f`."""
    text = _secs(usecs)
    return text if text.startswith("-") else "+" + text
