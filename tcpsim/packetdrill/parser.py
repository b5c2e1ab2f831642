"""Parse a whole packetdrill script into a `Script`.

    script := option* [`init command`] event+ [`cleanup command`]
    event  := time action
    time   := '+' T | T | '*' | T '~' T | '+' T '~' '+' T        (T: seconds, >= 0)
    action := packet | [... T] syscall | `shell command` | %{ python }%

Entry point: `parse(text, filename)`. Errors raise `PacketdrillSyntaxError`, whose text is
`file.pkt:LINE: error: message`; syntax packetdrill accepts but this subset does not gives
`unsupported: <construct>`.
"""

from __future__ import annotations

from decimal import Decimal

from .ast import (
    CodeEvent, CommandEvent, Event, Options, PacketEvent, Script, ScriptOption, ShellCommand,
    TimeKind, Timing,
)
from .errors import PacketdrillSyntaxError
from .lexer import Kind, tokenize
from .parse_packet import parse_packet
from .parse_syscall import parse_syscall
from .semantics import check_event, check_script
from .stream import TokenStream

_TYPED_OPTIONS = ("mss", "tolerance_usecs", "tcp_ts_tick_usecs")


def parse(text: str, filename: str) -> Script:
    """Parse script `text`; `filename` is only used in error messages and `Script.filename`."""
    s = TokenStream(tokenize(text, filename), filename)
    options = _parse_options(s)
    init = _parse_untimed_command(s)
    events: list[Event] = []
    cleanup = None
    while not s.at_end():
        if s.peek().kind is Kind.SHELL:
            cleanup = _parse_cleanup(s)
            break
        events.append(_parse_event(s))
    if not events:
        raise PacketdrillSyntaxError(filename, s.peek().line, "script has no events")
    script = Script(filename, options, tuple(events), init, cleanup)
    check_script(script)
    return script


def parse_file(path: str) -> Script:
    """Read and parse a script file (UTF-8)."""
    with open(path, encoding="utf-8") as f:
        return parse(f.read(), path)


# --------------------------------------------------------------------------- options


def _parse_options(s: TokenStream) -> Options:
    raw: list[ScriptOption] = []
    while s.peek().kind is Kind.OPTION:
        token = s.next()
        name, value = token.value  # type: ignore[misc]
        raw.append(ScriptOption(name, value, token.line))
    typed = {name: _int_option(s, raw, name) for name in _TYPED_OPTIONS}
    return Options(raw=tuple(raw), **typed)


def _int_option(s: TokenStream, raw: list[ScriptOption], name: str) -> int | None:
    """The value of the last `--name=N`, checked to be a non-negative integer."""
    found = [opt for opt in raw if opt.name == name]
    if not found:
        return None
    opt = found[-1]
    if opt.value is None or not opt.value.isdigit():
        s.fail(f"--{name} needs a non-negative integer value, got {opt.value!r}", opt.line)
    return int(opt.value)


# --------------------------------------------------------------------------- commands


def _parse_untimed_command(s: TokenStream) -> ShellCommand | None:
    if s.peek().kind is not Kind.SHELL:
        return None
    token = s.next()
    return ShellCommand(token.line, token.text)


def _parse_cleanup(s: TokenStream) -> ShellCommand:
    """An untimed command is only allowed last; anything after it is an error."""
    command = _parse_untimed_command(s)
    assert command is not None
    if not s.at_end():
        s.fail("shell command without a time stamp in the middle of the script "
               "(only the first and the last command may be untimed)", command.line)
    return command


# --------------------------------------------------------------------------- events


def _parse_event(s: TokenStream) -> Event:
    token = s.peek()
    if token.kind is Kind.OPTION:
        s.fail("script options (--name=value) must come before the first event")
    line = token.line
    timing = _parse_timing(s)
    event = _parse_action(s, line, timing)
    check_event(event, s.filename)
    return event


def _parse_action(s: TokenStream, line: int, timing: Timing) -> Event:
    token = s.peek()
    if token.kind is Kind.ELLIPSIS:
        return _parse_blocking_syscall(s, line, timing)
    if token.is_punct("<") or token.is_punct(">"):
        return PacketEvent(line, timing, parse_packet(s))
    if token.kind is Kind.WORD and s.peek(1).is_punct("("):
        return parse_syscall(s, line, timing)
    if token.kind is Kind.SHELL:
        return CommandEvent(line, timing, s.next().text)
    if token.kind is Kind.CODE:
        return CodeEvent(line, timing, s.next().text)
    if token.kind is Kind.WORD:
        s.fail(f"expected '(' after system call name '{token.text}', "
               f"got {s.peek(1).describe()}")
    s.fail("expected a packet ('<' or '>'), a system call, a `shell command` or a "
           f"%{{ }}% block after the event time, got {token.describe()}")


def _parse_blocking_syscall(s: TokenStream, line: int, timing: Timing) -> Event:
    """`t1...t2 syscall(...)`: the call blocks from t1 until t2."""
    s.next()
    end = _parse_time(s, "after '...'")
    if not (s.peek().kind is Kind.WORD and s.peek(1).is_punct("(")):
        s.fail("a blocking time window (t1...t2) can only be used with a system call")
    timing = Timing(timing.kind, timing.usecs, timing.end_usecs, end)
    return parse_syscall(s, line, timing)


# --------------------------------------------------------------------------- timing


def _parse_timing(s: TokenStream) -> Timing:
    if s.accept_punct("*"):
        return Timing(TimeKind.ANY)
    if s.accept_punct("+"):
        start = _parse_time(s, "after '+'")
        if not s.accept_punct("~"):
            return Timing(TimeKind.RELATIVE, start)
        s.expect_punct("+", "after '~' in a relative time range (+a~+b)")
        return Timing(TimeKind.RELATIVE_RANGE, start, _parse_time(s, "after '~+'"))
    if s.peek().kind not in (Kind.INT, Kind.FLOAT):
        s.fail(f"expected an event time (e.g. '+0', '0.100', '*'), got {s.peek().describe()}")
    start = _parse_time(s, "as event time")
    if not s.accept_punct("~"):
        return Timing(TimeKind.ABSOLUTE, start)
    if s.peek().is_punct("+"):
        s.fail("a time range is either absolute (a~b) or relative (+a~+b), not mixed")
    return Timing(TimeKind.ABSOLUTE_RANGE, start, _parse_time(s, "after '~'"))


def _parse_time(s: TokenStream, context: str) -> int:
    """Seconds (integer or decimal) as integer microseconds, truncated like packetdrill."""
    token = s.peek()
    if token.kind not in (Kind.INT, Kind.FLOAT):
        s.fail(f"expected a time in seconds {context}, got {token.describe()}")
    s.next()
    seconds = Decimal(token.text)
    if seconds < 0:
        s.fail("negative time", token.line)
    return int(seconds * 1_000_000)
