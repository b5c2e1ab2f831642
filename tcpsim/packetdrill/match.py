"""Compare an actual outbound segment with a script's `>` line, packetdrill style.

Checks run in packetdrill's order and stop at the first difference:

1. payload length, e.g. `live packet payload: expected 0 bytes vs actual 1000 bytes`;
2. IP length (headers + options + payload),
   e.g. `live packet field ipv4_total_length: expected: 52 (0x34) vs actual: 40 (0x28)`;
3. TCP header: data offset, FIN, SYN, RST, PSH, ACK, URG, seq, ack_seq, window, urg_ptr,
   e.g. `live packet field tcp_window: expected: 756 (0x2f4) vs actual: 1550 (0x60e)`;
4. TCP options, kind by kind in order,
   e.g. `bad value outbound TCP option 5 (sack): expected sack 1:1001 vs actual sack 1:2001`;
5. timing (`match_outbound` only),
   e.g. `timing error: expected outbound packet at 0.147979 sec but happened at ...`.

Step 2 is why a missing or extra option usually surfaces as an IP length error, exactly as
with the real tool; `Mismatch.report()` adds both packets to show what differs. Pass
`ip_version=None` in the config to skip the length checks (IP length and TCP data offset)
and get the option-level message instead.

What is not checked, as in packetdrill: `win` when omitted; options under `<...>`; TS ecr
of outbound packets; TS val unless `--tcp_ts_tick_usecs` is set. `win *` and `ack *` skip
their check (an extension of this front end). An omitted `ack` expects 0, but only when the actual segment has
the ACK bit (a `Segment` without ACK may carry any value in `ack`).

Sequence numbers are compared as given: the interpreter uses ISN 0 on both sides, so script
numbers and `Segment` numbers live in the same space.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from .ast import (
    ACK, ANY, FIN, OPTION_NAMES, PSH, RST, SYN, URG, PacketEvent, Script, TcpOption, TcpPacket,
    Timestamp, options_size,
)
from .layout import segment_options
from .render import render_option, render_options, render_packet, render_segment
from .timing import ExpectedTime, check_time, describe
from .tsmap import TimestampMap

if TYPE_CHECKING:
    from tcpsim.core.segment import Segment

TCP_HEADER = 20
# The IP length field packetdrill checks, and how much IP header it counts.
_IP_LENGTH_FIELD = {"ipv4": ("ipv4_total_length", 20), "ipv6": ("ipv6_payload_len", 0)}


@dataclass(frozen=True, slots=True)
class MatchConfig:
    """Settings of a run that affect matching (packetdrill command line / script options)."""

    tolerance_usecs: int = 4000
    ts_tick_usecs: int = 0           # 0: do not check outbound TS val
    ip_version: str | None = "ipv4"  # "ipv4", "ipv6", or None to skip the length checks

    def __post_init__(self) -> None:
        if self.ip_version is not None and self.ip_version not in _IP_LENGTH_FIELD:
            raise ValueError(f"ip_version must be 'ipv4', 'ipv6' or None, not {self.ip_version!r}")

    @classmethod
    def from_script(cls, script: Script, ip_version: str | None = "ipv4") -> MatchConfig:
        ticks = script.options.tcp_ts_tick_usecs or 0
        return cls(script.tolerance_usecs, ticks, ip_version)


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The first difference found. `str()` is packetdrill's one-line message."""

    field: str            # e.g. 'tcp_window', 'ipv4_total_length', 'options', 'timing'
    message: str
    script_packet: str    # the expected line, rendered
    actual_packet: str    # the actual segment, rendered as a script line

    def __str__(self) -> str:
        return self.message

    def report(self) -> str:
        """The message plus both packets, as packetdrill prints them after an error."""
        return (f"{self.message}\nscript packet: {self.script_packet}"
                f"\nactual packet: {self.actual_packet}")


def match_packet(expected: PacketEvent | TcpPacket, actual: Segment,
                 config: MatchConfig = MatchConfig(),
                 ts_map: TimestampMap | None = None) -> Mismatch | None:
    """None if `actual` matches the outbound line `expected` (time aside), else the first
    mismatch. `ts_map` (one per connection) learns and applies the TS val mapping."""
    packet = expected.packet if isinstance(expected, PacketEvent) else expected
    if ts_map is not None:
        _record_ts(packet, actual, ts_map)
    ctx = _Context(packet, actual, config, ts_map, segment_options(actual))
    for check in _CHECKS:
        found = check(ctx)
        if found is not None:
            field, message = found
            return Mismatch(field, message, render_packet(packet), render_segment(actual))
    return None


def match_outbound(event: PacketEvent, actual: Segment, actual_usecs: int,
                   expected_time: ExpectedTime, config: MatchConfig = MatchConfig(),
                   ts_map: TimestampMap | None = None) -> Mismatch | None:
    """`match_packet`, then the timing check (packetdrill checks time last)."""
    found = match_packet(event, actual, config, ts_map)
    if found is not None:
        return found
    message = check_time(expected_time, actual_usecs, config.tolerance_usecs, describe(event))
    if message is None:
        return None
    return Mismatch("timing", message, render_packet(event.packet), render_segment(actual))


def failure_line(filename: str, event: PacketEvent, problem: Mismatch | str) -> str:
    """packetdrill's fatal line for a packet event: `file:LINE: error handling packet: ...`."""
    return f"{filename}:{event.line}: error handling packet: {problem}"


# --------------------------------------------------------------------------- the checks


@dataclass(frozen=True, slots=True)
class _Context:
    packet: TcpPacket
    seg: Segment
    config: MatchConfig
    ts_map: TimestampMap | None
    actual_options: tuple[TcpOption, ...]

    @property
    def script_options_size(self) -> int:
        """Option bytes the script expects (`<...>` allows whatever was sent)."""
        if self.packet.options is ANY:
            return options_size(self.actual_options)
        return options_size(self.packet.options)


def _field(name: str, expected: int, actual: int) -> tuple[str, str] | None:
    if expected == actual:
        return None
    return name, (f"live packet field {name}: expected: {expected} ({expected:#x}) "
                  f"vs actual: {actual} ({actual:#x})")


def _check_payload(ctx: _Context) -> tuple[str, str] | None:
    expected, actual = ctx.packet.payload_len, ctx.seg.len
    if expected == actual:
        return None
    return "payload", f"live packet payload: expected {expected} bytes vs actual {actual} bytes"


def _check_ip_length(ctx: _Context) -> tuple[str, str] | None:
    """IPv4 total length or IPv6 payload length: headers + options + payload."""
    version = ctx.config.ip_version
    if version is None:
        return None
    name, ip_header = _IP_LENGTH_FIELD[version]
    expected = ip_header + TCP_HEADER + ctx.script_options_size + ctx.packet.payload_len
    actual = ip_header + TCP_HEADER + options_size(ctx.actual_options) + ctx.seg.len
    return _field(name, expected, actual)


def _check_data_offset(ctx: _Context) -> tuple[str, str] | None:
    if ctx.config.ip_version is None:
        return None
    expected = (TCP_HEADER + ctx.script_options_size) // 4
    actual = (TCP_HEADER + options_size(ctx.actual_options)) // 4
    return _field("tcp_data_offset", expected, actual)


def _check_flags(ctx: _Context) -> tuple[str, str] | None:
    for name, bit in (("tcp_fin", FIN), ("tcp_syn", SYN), ("tcp_rst", RST),
                      ("tcp_psh", PSH), ("tcp_ack", ACK), ("tcp_urg", URG)):
        found = _field(name, int(bool(ctx.packet.flags & bit)), int(bool(ctx.seg.flags & bit)))
        if found:
            return found
    return None


def _check_seq(ctx: _Context) -> tuple[str, str] | None:
    return _field("tcp_seq", ctx.packet.seq, ctx.seg.seq)


def _check_ack(ctx: _Context) -> tuple[str, str] | None:
    ack = ctx.packet.ack
    if ack is ANY or (ack is None and not ctx.seg.flags & ACK):
        return None
    return _field("tcp_ack_seq", ack or 0, ctx.seg.ack)


def _check_window(ctx: _Context) -> tuple[str, str] | None:
    win = ctx.packet.win
    if win is None or win is ANY:
        return None
    return _field("tcp_window", win, ctx.seg.win)


def _check_urg_ptr(ctx: _Context) -> tuple[str, str] | None:
    return _field("tcp_urg_ptr", ctx.packet.urg or 0, getattr(ctx.seg, "urg_ptr", 0))


def _check_options(ctx: _Context) -> tuple[str, str] | None:
    expected = ctx.packet.options
    if expected is ANY:
        return None
    actual = ctx.actual_options
    kinds_differ = [o.kind for o in expected] != [o.kind for o in actual]
    if kinds_differ:
        return "options", (f"bad outbound TCP options: expected {render_options(expected) or '<>'}"
                           f" vs actual {render_options(actual) or '<>'}")
    for want, got in zip(expected, actual):
        found = _compare_option(ctx, want, got)
        if found:
            return found
    return None


def _compare_option(ctx: _Context, want: TcpOption, got: TcpOption) -> tuple[str, str] | None:
    name = OPTION_NAMES.get(want.kind, str(want.kind))
    detail = f"({name}): expected {render_option(want)} vs actual {render_option(got)}"
    if isinstance(want, Timestamp) and isinstance(got, Timestamp):
        return _compare_ts_val(ctx, want, got)
    if want.size != got.size:
        return "options", f"bad lengths for outbound TCP option {want.kind} {detail}"
    if want != got:
        return "options", f"bad value outbound TCP option {want.kind} {detail}"
    return None


def _compare_ts_val(ctx: _Context, want: Timestamp, got: Timestamp) -> tuple[str, str] | None:
    """TS val within tolerance when a tick length is configured; ecr is never checked."""
    tick, tol = ctx.config.ts_tick_usecs, ctx.config.tolerance_usecs
    if not tick:
        return None
    mapped = ctx.ts_map.to_script(got.val) if ctx.ts_map else got.val
    delta = (mapped - want.val + 2**31) % 2**32 - 2**31  # signed 32-bit difference
    if abs(delta) * tick <= tol:
        return None
    return "options", (f"bad outbound TCP timestamp value, tolerance {tol}: "
                       f"expected TS val {want.val} vs actual {mapped} (in script space)")


def _record_ts(packet: TcpPacket, seg: Segment, ts_map: TimestampMap) -> None:
    script_ts = packet.option(Timestamp)
    if isinstance(script_ts, Timestamp) and seg.tsval >= 0:
        ts_map.record(script_ts.val, seg.tsval)


_CHECKS: tuple[Callable[[_Context], "tuple[str, str] | None"], ...] = (
    _check_payload, _check_ip_length, _check_data_offset, _check_flags, _check_seq,
    _check_ack, _check_window, _check_urg_ptr, _check_options,
)
