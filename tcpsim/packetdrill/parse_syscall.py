"""Parse a system call line: `name(arg, ...) = result [ERRNO] [(note)]`.

Arguments and the result are small expression trees (see `ast.Expr`):

    expr    := primary ('|' primary)*
    primary := '...' | INT | HEX | STRING+ ['...'] | '[' [expr, ...] ']' | '{' [expr, ...] '}'
             | '&' primary | WORD ['(' [expr, ...] ')'] ['=' expr]

This generic form covers packetdrill's typed structs (`{sa_family=AF_INET, ...}`,
`{msg_name(...)=..., msg_iov(1)=[{..., 64}], ...}`, `{onoff=1, linger=0}`, cmsg lists)
without a rule per struct; the interpreter gives them meaning.
"""

from __future__ import annotations

import re

from .ast import (
    Array, Assign, BinOp, Call, Dots, Expr, Int, Ref, Str, Struct, Symbol, SyscallEvent, Timing,
)
from .lexer import Kind
from .stream import TokenStream

_ERRNO_NAME = re.compile(r"E[A-Z0-9_]+")


def parse_syscall(s: TokenStream, line: int, timing: Timing) -> SyscallEvent:
    """Parse from the function name to the end of the result (and errno, note)."""
    name = s.expect(Kind.WORD, "as system call name").text
    s.expect_punct("(", f"after system call name '{name}'")
    args = _parse_list(s, ")", f"arguments of {name}()")
    s.expect_punct("=", f"and the expected result after {name}(...)")
    result = parse_expression(s, calls=False)  # `= O_RDWR (note)` is a word and a note
    errno = _parse_errno(s)
    note = _parse_note(s)
    return SyscallEvent(line, timing, name, args, result, errno, note)


def parse_expression(s: TokenStream, calls: bool = True) -> Expr:
    """One expression; with `calls=False` a word followed by '(' is not read as a call."""
    expr = _parse_primary(s, calls)
    while s.accept_punct("|"):
        expr = BinOp("|", expr, _parse_primary(s, calls))
    return expr


def _parse_list(s: TokenStream, close: str, context: str) -> tuple[Expr, ...]:
    """Comma-separated expressions up to and including the `close` character."""
    if s.accept_punct(close):
        return ()
    items = [parse_expression(s)]
    while s.accept_punct(","):
        items.append(parse_expression(s))
    s.expect_punct(close, f"to close the {context}")
    return tuple(items)


def _parse_primary(s: TokenStream, calls: bool = True) -> Expr:
    token = s.peek()
    kind = token.kind
    if kind is Kind.ELLIPSIS:
        s.next()
        return Dots()
    if kind in (Kind.INT, Kind.HEX):
        s.next()
        return Int(int(token.value), token.text)  # type: ignore[arg-type]
    if kind is Kind.STRING:
        return _parse_string(s)
    if kind is Kind.WORD:
        return _parse_word(s, calls)
    if token.is_punct("["):
        s.next()
        return Array(_parse_list(s, "]", "array"))
    if token.is_punct("{"):
        s.next()
        return Struct(_parse_list(s, "}", "struct"))
    if token.is_punct("&"):
        s.next()
        return Ref(_parse_primary(s, calls))
    if kind is Kind.FLOAT:
        s.unsupported(f"floating-point value {token.text} in a system call expression")
    s.fail(f"expected an expression, got {token.describe()}")


def _parse_string(s: TokenStream) -> Str:
    """Adjacent strings concatenate; a trailing `...` makes it a prefix match."""
    value = s.next().text
    while s.peek().kind is Kind.STRING:
        value += s.next().text
    truncated = s.peek().kind is Kind.ELLIPSIS
    if truncated:
        s.next()
    return Str(value, truncated)


def _parse_word(s: TokenStream, calls: bool = True) -> Expr:
    name = s.next().text
    target: Symbol | Call = Symbol(name)
    if calls and s.accept_punct("("):
        target = Call(name, _parse_list(s, ")", f"arguments of {name}(...)"))
    if s.accept_punct("="):
        return Assign(target, parse_expression(s))
    return target


def _parse_errno(s: TokenStream) -> str | None:
    """`ERRNO` after the result, e.g. `= -1 EAGAIN` (a word shaped like an errno name)."""
    token = s.peek()
    if token.kind is Kind.WORD and _ERRNO_NAME.fullmatch(token.text):
        return s.next().text
    return None


def _parse_note(s: TokenStream) -> str | None:
    """`(words ...)` after the result or errno: strerror text or a comment like `(flags O_RDWR)`."""
    if not s.peek().is_punct("("):
        return None
    line = s.next().line
    words: list[str] = []
    while not s.peek().is_punct(")"):
        token = s.next()
        if token.kind not in (Kind.WORD, Kind.INT, Kind.HEX, Kind.FLOAT):
            s.fail(f"unexpected {token.describe()} in the note after a system call result", line)
        words.append(token.text)
    s.next()
    return " ".join(words)
