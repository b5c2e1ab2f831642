"""Checks packetdrill makes on parsed events and on the script as a whole.

Per event: `*` and `~` ranges are for outbound packets only; an inbound packet must give
`win`; wildcards (`<...>`, `ack *`, `win *`) are for outbound packets only; a range must not
run backwards, nor a blocking window end before it starts. Per script: the first event is at
time 0, and absolute times never go backwards.
"""

from __future__ import annotations

from .ast import ANY, Direction, Event, PacketEvent, Script, SyscallEvent, TimeKind
from .errors import PacketdrillSyntaxError

_ABSOLUTE = (TimeKind.ABSOLUTE, TimeKind.ABSOLUTE_RANGE)


def check_event(event: Event, filename: str) -> None:
    """Raise PacketdrillSyntaxError if `event` breaks a per-event rule."""
    message = _timing_problem(event) or _packet_problem(event)
    if message:
        raise PacketdrillSyntaxError(filename, event.line, message)


def check_script(script: Script) -> None:
    """Raise PacketdrillSyntaxError if the event times are inconsistent."""
    first = script.events[0]
    if first.timing.usecs != 0:
        _fail(script, first, "first event should be at time 0")
    for prev, event in zip(script.events, script.events[1:]):
        backwards = (prev.timing.kind in _ABSOLUTE and event.timing.kind in _ABSOLUTE
                     and event.timing.usecs < prev.timing.usecs)
        if backwards:
            _fail(script, event, f"time goes backward in script from {prev.timing.usecs} usec "
                                 f"to {event.timing.usecs} usec")


def _fail(script: Script, event: Event, message: str) -> None:
    raise PacketdrillSyntaxError(script.filename, event.line, message)


def _is_outbound_packet(event: Event) -> bool:
    return isinstance(event, PacketEvent) and event.packet.direction is Direction.OUTBOUND


def _timing_problem(event: Event) -> str | None:
    timing = event.timing
    if timing.kind is TimeKind.ANY and not _is_outbound_packet(event):
        return "event time <star> can only be used with outbound packets"
    if timing.is_range and not _is_outbound_packet(event):
        return "event time range can only be used with outbound packets"
    if timing.is_range and timing.end_usecs is not None and timing.end_usecs < timing.usecs:
        return "time range is backwards"
    if isinstance(event, SyscallEvent) and event.is_blocking:
        return _blocking_problem(event)
    return None


def _blocking_problem(event: SyscallEvent) -> str | None:
    timing = event.timing
    if timing.kind not in (TimeKind.ABSOLUTE, TimeKind.RELATIVE):
        return "a blocking system call needs a plain start time (t1...t2 or +t1...t2)"
    if timing.block_end_usecs is not None and timing.block_end_usecs < timing.usecs:
        return "blocking system call time window is backwards (t1...t2 with t2 < t1)"
    return None


def _packet_problem(event: Event) -> str | None:
    if not isinstance(event, PacketEvent) or event.packet.direction is Direction.OUTBOUND:
        return None
    packet = event.packet
    if packet.options is ANY:
        return "<...> for TCP options can only be used with outbound packets"
    if packet.win is None:
        return "window must be specified for inbound packets"
    if packet.win is ANY or packet.ack is ANY:
        return "wildcard '*' for a packet field can only be used with outbound packets"
    return None
