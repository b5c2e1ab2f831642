"""The syntax tree of a parsed packetdrill script (the receive-path subset).

Everything here is an immutable value: frozen dataclasses with slots. A `Script` holds the
script options, an optional untimed init and cleanup shell command, and the timed events.
Every event keeps the line number of its time stamp, which is the line packetdrill reports
in its errors.

Sequence numbers are kept exactly as written, i.e. *relative* (packetdrill's default):
inbound `seq` counts from the peer's ISN, inbound `ack` from ours, and the other way round
for outbound packets; SACK blocks live in the space of the packet's `ack`. The SYN occupies
sequence number 0, so the first data byte is 1. An interpreter that gives both simulated
endpoints ISN 0 can therefore use the script numbers as `Segment` numbers unchanged.

Times are integer microseconds. A relative time (`+0.1`) is stored as the offset; resolving
it against the clock is the interpreter's job (see `timing.py`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import ClassVar, Union

# TCP header flag bits (RFC 9293 wire values; tcpsim.core.segment uses the same ones).
FIN = 0x01
SYN = 0x02
RST = 0x04
PSH = 0x08
ACK = 0x10
URG = 0x20

# Script flag characters in the order packetdrill and tcpdump print them ("." is ACK).
FLAG_CHARS: tuple[tuple[str, int], ...] = (
    ("S", SYN), ("F", FIN), ("R", RST), ("P", PSH), ("U", URG), (".", ACK),
)


class Wildcard(enum.Enum):
    """`*` in a field of an outbound packet, or `<...>` for its options: do not check."""

    ANY = "*"


ANY = Wildcard.ANY


# --------------------------------------------------------------------------- options


@dataclass(frozen=True, slots=True)
class ScriptOption:
    """One `--name[=value]` line; `value` is the raw text after `=`, or None."""

    name: str
    value: str | None
    line: int


@dataclass(frozen=True, slots=True)
class Options:
    """The script's options. The typed fields are None when the script does not set them."""

    mss: int | None = None              # --mss: gso_size of inbound packets above one MSS
    tolerance_usecs: int | None = None  # --tolerance_usecs: timing slack
    tcp_ts_tick_usecs: int | None = None  # --tcp_ts_tick_usecs: TS val clock, for TS checks
    raw: tuple[ScriptOption, ...] = ()  # every option as written, in order

    def get(self, name: str) -> str | None:
        """The raw value of the last `--name=...`, or None if absent (or valueless)."""
        value = None
        for opt in self.raw:
            if opt.name == name:
                value = opt.value
        return value


# --------------------------------------------------------------------------- timing


class TimeKind(enum.Enum):
    """How an event's time stamp is written."""

    ABSOLUTE = "t"              # 0.100
    RELATIVE = "+t"             # +0.1
    ANY = "*"                   # *      (outbound packets only)
    ABSOLUTE_RANGE = "t~t"      # 0.1~0.2 (outbound packets only)
    RELATIVE_RANGE = "+t~+t"    # +0~+.04 (outbound packets only)


@dataclass(frozen=True, slots=True)
class Timing:
    """An event time stamp.

    `usecs` is the start (or the only) time, `end_usecs` the end of a `~` range.
    `block_end_usecs` is set by the blocking form `t1...t2 syscall(...)`: the call starts
    at `t1` and must return at `t2`; `t2` is relative to the same anchor as `t1` when `t1`
    is relative, absolute otherwise.
    """

    kind: TimeKind
    usecs: int = 0
    end_usecs: int | None = None
    block_end_usecs: int | None = None

    @property
    def is_relative(self) -> bool:
        return self.kind in (TimeKind.RELATIVE, TimeKind.RELATIVE_RANGE)

    @property
    def is_range(self) -> bool:
        return self.kind in (TimeKind.ABSOLUTE_RANGE, TimeKind.RELATIVE_RANGE)


# --------------------------------------------------------------------------- TCP options


@dataclass(frozen=True, slots=True)
class Nop:
    kind: ClassVar[int] = 1

    @property
    def size(self) -> int:
        return 1


@dataclass(frozen=True, slots=True)
class Eol:
    kind: ClassVar[int] = 0

    @property
    def size(self) -> int:
        return 1


@dataclass(frozen=True, slots=True)
class Mss:
    value: int
    kind: ClassVar[int] = 2

    @property
    def size(self) -> int:
        return 4


@dataclass(frozen=True, slots=True)
class WScale:
    shift: int
    kind: ClassVar[int] = 3

    @property
    def size(self) -> int:
        return 3


@dataclass(frozen=True, slots=True)
class SackOK:
    kind: ClassVar[int] = 4

    @property
    def size(self) -> int:
        return 2


@dataclass(frozen=True, slots=True)
class Sack:
    """SACK blocks in the order written; the first may be a D-SACK."""

    blocks: tuple[tuple[int, int], ...]
    kind: ClassVar[int] = 5

    @property
    def size(self) -> int:
        return 2 + 8 * len(self.blocks)


@dataclass(frozen=True, slots=True)
class Timestamp:
    val: int
    ecr: int
    kind: ClassVar[int] = 8

    @property
    def size(self) -> int:
        return 10


TcpOption = Union[Nop, Eol, Mss, WScale, SackOK, Sack, Timestamp]

OPTION_NAMES: dict[int, str] = {0: "eol", 1: "nop", 2: "mss", 3: "wscale", 4: "sackOK",
                                5: "sack", 8: "TS"}


def options_size(options: tuple[TcpOption, ...]) -> int:
    """Bytes the options take in the TCP header."""
    return sum(opt.size for opt in options)


# --------------------------------------------------------------------------- packets


class Direction(enum.Enum):
    INBOUND = "<"    # injected into the stack under test
    OUTBOUND = ">"   # expected from the stack under test


@dataclass(frozen=True, slots=True)
class TcpPacket:
    """A `<` or `>` line: `flags seq:end(len) [ack N] [win N] [urg N] [<options>]`.

    `ack` is None when omitted (the header carries 0, and an outbound check expects 0, as in
    packetdrill), ANY for `ack *`. `win` is None when omitted and ANY for `win *`; both mean
    "not checked" on an outbound packet (an inbound packet must give it). `options` is ANY
    for `<...>` (outbound only) and `()` when the line has none.
    """

    direction: Direction
    flags: int
    seq: int
    payload_len: int
    ack: int | Wildcard | None = None
    win: int | Wildcard | None = None
    urg: int | None = None
    options: tuple[TcpOption, ...] | Wildcard = ()

    @property
    def end_seq(self) -> int:
        """The `end` of `start:end(len)` (payload only, no SYN/FIN)."""
        return self.seq + self.payload_len

    @property
    def flags_text(self) -> str:
        """Flags in script form: 'S.', 'P.', 'F.', '.', or '-' for none."""
        return "".join(ch for ch, bit in FLAG_CHARS if self.flags & bit) or "-"

    def option(self, cls: type) -> TcpOption | None:
        """The first option of the given class, or None (also for `<...>`)."""
        if self.options is ANY:
            return None
        return next((o for o in self.options if isinstance(o, cls)), None)


# --------------------------------------------------------------------------- syscall expressions


@dataclass(frozen=True, slots=True)
class Int:
    """An integer literal; `text` keeps the spelling (`0x2`, `-1`)."""

    value: int
    text: str


@dataclass(frozen=True, slots=True)
class Str:
    """A string literal; `truncated` for packetdrill's `"abc"...` (prefix match)."""

    value: str
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class Symbol:
    """A bare word: a symbolic constant (`SOL_SOCKET`, `O_NONBLOCK`) or a field name."""

    name: str


@dataclass(frozen=True, slots=True)
class Dots:
    """`...`: any value (packetdrill's ellipsis)."""


@dataclass(frozen=True, slots=True)
class Array:
    """`[a, b]`: an array, or a pointer to a value (`[1]`, `[10000]`)."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Struct:
    """`{a, b}` or `{name=value, ...}`: a C struct (sockaddr, msghdr, iovec, linger, ...)."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Assign:
    """`name=value` inside a struct or argument list; `target` may be a Call (`msg_iov(1)`)."""

    target: Symbol | Call
    value: Expr


@dataclass(frozen=True, slots=True)
class BinOp:
    """`a | b` (flag sets)."""

    op: str
    lhs: Expr
    rhs: Expr


@dataclass(frozen=True, slots=True)
class Ref:
    """`&x`: the address of a value."""

    target: Expr


@dataclass(frozen=True, slots=True)
class Call:
    """`name(args)` inside an expression: `htons(8080)`, `inet_addr("...")`, `msg_name(...)`."""

    name: str
    args: tuple[Expr, ...]


Expr = Union[Int, Str, Symbol, Dots, Array, Struct, Assign, BinOp, Ref, Call]


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class PacketEvent:
    line: int
    timing: Timing
    packet: TcpPacket


@dataclass(frozen=True, slots=True)
class SyscallEvent:
    """`name(args) = result [ERRNO] [(note)]`, e.g. `read(4, ..., 1000) = -1 EAGAIN (...)`."""

    line: int
    timing: Timing
    name: str
    args: tuple[Expr, ...]
    result: Expr
    errno: str | None = None
    note: str | None = None

    @property
    def is_blocking(self) -> bool:
        """True for the `t1...t2` form: the call must block until `t2`."""
        return self.timing.block_end_usecs is not None


@dataclass(frozen=True, slots=True)
class CommandEvent:
    """A timed shell command in backquotes; `command` is the text between them."""

    line: int
    timing: Timing
    command: str


@dataclass(frozen=True, slots=True)
class CodeEvent:
    """A `%{ python }%` block; `code` is the text inside, spaces and tabs trimmed."""

    line: int
    timing: Timing
    code: str


Event = Union[PacketEvent, SyscallEvent, CommandEvent, CodeEvent]


@dataclass(frozen=True, slots=True)
class ShellCommand:
    """An untimed backquoted command: the script's init (first) or cleanup (last) command."""

    line: int
    command: str


@dataclass(frozen=True, slots=True)
class Script:
    filename: str
    options: Options
    events: tuple[Event, ...]
    init_command: ShellCommand | None = None
    cleanup_command: ShellCommand | None = None

    DEFAULT_TOLERANCE_USECS: ClassVar[int] = 4000

    @property
    def tolerance_usecs(self) -> int:
        """`--tolerance_usecs`, or packetdrill's default of 4 ms."""
        tol = self.options.tolerance_usecs
        return self.DEFAULT_TOLERANCE_USECS if tol is None else tol
