"""Render syntax-tree values (and actual segments) back into packetdrill script text.

Used for the packet dumps in mismatch reports, and by tests that round-trip generated
lines through the parser. `parse(render_event(e))` gives back an event equal to `e`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from .ast import (
    ACK, ANY, FLAG_CHARS, Array, Assign, BinOp, Call, CodeEvent, CommandEvent, Dots, Eol, Event,
    Expr, Int, Mss, Nop, PacketEvent, Ref, Sack, SackOK, Str, Struct, Symbol, SyscallEvent,
    TcpOption, TcpPacket, TimeKind, Timestamp, Timing, Wildcard, WScale,
)
from .layout import segment_options

if TYPE_CHECKING:
    from tcpsim.core.segment import Segment


def render_seconds(usecs: int) -> str:
    """Microseconds as the shortest exact decimal seconds: 100000 -> '0.1', 0 -> '0'."""
    return format(Decimal(usecs).scaleb(-6).normalize(), "f")


def render_timing(timing: Timing) -> str:
    t, kind = render_seconds(timing.usecs), timing.kind
    if kind is TimeKind.ANY:
        text = "*"
    elif kind is TimeKind.RELATIVE:
        text = f"+{t}"
    elif kind is TimeKind.ABSOLUTE:
        text = t
    elif kind is TimeKind.RELATIVE_RANGE:
        text = f"+{t}~+{render_seconds(timing.end_usecs or 0)}"
    else:
        text = f"{t}~{render_seconds(timing.end_usecs or 0)}"
    if timing.block_end_usecs is not None:
        text += f"...{render_seconds(timing.block_end_usecs)}"
    return text


def render_flags(flags: int) -> str:
    """Script flag spelling: 'S.', 'FP.', '.', or '-' when no flag is set."""
    return "".join(ch for ch, bit in FLAG_CHARS if flags & bit) or "-"


def render_option(opt: TcpOption) -> str:
    if isinstance(opt, Nop):
        return "nop"
    if isinstance(opt, Eol):
        return "eol"
    if isinstance(opt, Mss):
        return f"mss {opt.value}"
    if isinstance(opt, WScale):
        return f"wscale {opt.shift}"
    if isinstance(opt, SackOK):
        return "sackOK"
    if isinstance(opt, Timestamp):
        return f"TS val {opt.val} ecr {opt.ecr}"
    assert isinstance(opt, Sack)
    return "sack " + " ".join(f"{a}:{b}" for a, b in opt.blocks)


def render_options(options: tuple[TcpOption, ...] | Wildcard) -> str:
    """'<mss 1460,nop,wscale 7>', '<...>', or '' for no options."""
    if options is ANY:
        return "<...>"
    if not options:
        return ""
    return "<" + ",".join(render_option(o) for o in options) + ">"


def _field(name: str, value: int | Wildcard | None) -> str:
    if value is None:
        return ""
    return f" {name} {'*' if value is ANY else value}"


def render_packet(packet: TcpPacket) -> str:
    """The packet line without its time: '< P. 1:1001(1000) ack 1 win 257'."""
    text = (f"{packet.direction.value} {render_flags(packet.flags)} "
            f"{packet.seq}:{packet.end_seq}({packet.payload_len})")
    text += _field("ack", packet.ack) + _field("win", packet.win) + _field("urg", packet.urg)
    opts = render_options(packet.options)
    return f"{text} {opts}" if opts else text


def render_segment(seg: Segment) -> str:
    """An actual segment in outbound-line form: '> . 1:1(0) ack 1001 win 756 <nop,nop,...>'."""
    text = f"> {render_flags(seg.flags)} {seg.seq}:{seg.seq + seg.len}({seg.len})"
    if seg.flags & ACK:
        text += f" ack {seg.ack}"
    text += f" win {seg.win}"
    opts = render_options(segment_options(seg))
    return f"{text} {opts}" if opts else text


def render_expr(expr: Expr) -> str:
    if isinstance(expr, Int):
        return expr.text
    if isinstance(expr, Str):
        return '"' + expr.value + '"' + ("..." if expr.truncated else "")
    if isinstance(expr, Symbol):
        return expr.name
    if isinstance(expr, Dots):
        return "..."
    if isinstance(expr, Array):
        return "[" + ", ".join(render_expr(e) for e in expr.items) + "]"
    if isinstance(expr, Struct):
        return "{" + ", ".join(render_expr(e) for e in expr.items) + "}"
    if isinstance(expr, Assign):
        return f"{render_expr(expr.target)}={render_expr(expr.value)}"
    if isinstance(expr, BinOp):
        return f"{render_expr(expr.lhs)}{expr.op}{render_expr(expr.rhs)}"
    if isinstance(expr, Ref):
        return "&" + render_expr(expr.target)
    assert isinstance(expr, Call)
    return f"{expr.name}(" + ", ".join(render_expr(e) for e in expr.args) + ")"


def render_syscall(event: SyscallEvent) -> str:
    args = ", ".join(render_expr(a) for a in event.args)
    text = f"{event.name}({args}) = {render_expr(event.result)}"
    if event.errno:
        text += f" {event.errno}"
    if event.note is not None:
        text += f" ({event.note})"
    return text


def render_event(event: Event) -> str:
    """One script line (a multi-line command or code block keeps its newlines)."""
    if isinstance(event, PacketEvent):
        action = render_packet(event.packet)
    elif isinstance(event, SyscallEvent):
        action = render_syscall(event)
    elif isinstance(event, CommandEvent):
        action = f"`{event.command}`"
    else:
        assert isinstance(event, CodeEvent)
        action = f"%{{ {event.code} }}%"
    return f"{render_timing(event.timing)} {action}"
