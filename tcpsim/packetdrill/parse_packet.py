"""Parse a TCP packet line: `< S 0:0(0) win 32792 <mss 1000,nop,wscale 7>`.

Grammar (after the `<` or `>` direction):

    flags  start:end(len)  [ack N|*]  [win N|*]  [urg N]  [<option, ...> | <...>]

Flags are letters from `SFRPU` optionally followed by `.` (ACK), or `.` alone, or `-` for
no flags. Options: `nop`, `eol`, `mss N`, `wscale N`, `sackOK`, `sack a:b [c:d ...]`,
`TS val N ecr N`. Other packetdrill packet syntax (IP/ECN fields, explicit ports, UDP, ICMP,
encapsulation, MD5, Fast Open, fuzzing) is reported as unsupported.
"""

from __future__ import annotations

from .ast import (
    ANY, FLAG_CHARS, Direction, Eol, Mss, Nop, Sack, SackOK, TcpOption, TcpPacket, Timestamp,
    Wildcard, WScale, options_size,
)
from .lexer import Kind
from .stream import TokenStream

U8, U16, U32 = 0xFF, 0xFFFF, 0xFFFF_FFFF
MAX_OPTION_BYTES = 40  # a TCP header is at most 60 bytes

_FLAG_BITS = dict(FLAG_CHARS)
_ECN_FLAG_CHARS = set("EWA01234567")
_UNSUPPORTED_PACKET_WORDS = {
    "ipv4": "IPv4 encapsulation in packet lines",
    "ipv6": "IPv6 encapsulation in packet lines",
    "udp": "UDP packets",
    "icmp": "ICMP packets",
    "gre": "GRE encapsulation",
    "GREv0": "GRE encapsulation",
    "mpls": "MPLS encapsulation",
}
_UNSUPPORTED_OPTIONS = {
    "md5": "TCP MD5 signature option",
    "FO": "TCP Fast Open option",
    "FOEXP": "TCP Fast Open (experimental) option",
}


def parse_packet(s: TokenStream) -> TcpPacket:
    """Parse from the direction token to the end of the packet line."""
    direction = Direction(s.next().text)
    _reject_unsupported_prefix(s)
    flags = _parse_flags(s)
    seq, payload_len = _parse_seq(s)
    ack = _parse_field(s, "ack", U32, "TCP ack sequence number")
    win = _parse_field(s, "win", U16, "TCP window value")
    urg = _parse_urg(s)
    options = _parse_options(s)
    if s.peek().is_punct("{"):
        s.unsupported("packet fuzzing parameters ({...})")
    return TcpPacket(direction, flags, seq, payload_len, ack, win, urg, options)


def _reject_unsupported_prefix(s: TokenStream) -> None:
    token = s.peek()
    if token.kind is Kind.WORD and token.text in _UNSUPPORTED_PACKET_WORDS:
        s.unsupported(_UNSUPPORTED_PACKET_WORDS[token.text])
    if token.is_punct("(") or token.is_punct("["):
        s.unsupported("IP header fields in packet lines (ECN, tos, ttl, flowlabel)")
    if token.kind is Kind.INT and s.peek(1).is_punct(">"):
        s.unsupported("explicit port numbers in packet lines")


def _parse_flags(s: TokenStream) -> int:
    token = s.peek()
    if s.accept_punct(".") or s.accept_punct("-"):
        return _FLAG_BITS["."] if token.text == "." else 0
    if token.kind is Kind.FLOAT:
        s.unsupported(f"AccECN ACE flags '{token.text}'")
    if token.kind is not Kind.WORD:
        s.fail(f"expected TCP flags (e.g. 'S', 'P.', '.'), got {token.describe()}")
    s.next()
    if s.peek().kind is Kind.FLOAT and s.peek().text.startswith("."):
        s.unsupported(f"AccECN ACE flags '{token.text}{s.peek().text}'")
    flags = 0
    for char in token.text:
        flags |= _flag_bit(s, char, token.line)
    if s.accept_punct("."):
        flags |= _FLAG_BITS["."]
    return flags


def _flag_bit(s: TokenStream, char: str, line: int) -> int:
    if char in _ECN_FLAG_CHARS:
        s.unsupported(f"ECN/AccECN TCP flag '{char}'", line)
    if char not in _FLAG_BITS or char == ".":
        s.fail(f"invalid TCP flag: '{char}'", line)
    return _FLAG_BITS[char]


def _parse_seq(s: TokenStream) -> tuple[int, int]:
    """`start:end(len)`; returns (start, len)."""
    line = s.peek().line
    start = s.expect_int("as start sequence number (start:end(len))")
    s.expect_punct(":", "after start sequence number")
    end = s.expect_int("as end sequence number (start:end(len))")
    s.expect_punct("(", "before payload length")
    length = s.expect_int("as payload length")
    s.expect_punct(")", "after payload length")
    _check_range(s, start, U32, "TCP start sequence number", line)
    _check_range(s, end, U32, "TCP end sequence number", line)
    _check_range(s, length, U16, "TCP payload size", line)
    if end != start + length:
        s.fail("inconsistent TCP sequence numbers and payload size", line)
    return start, length


def _parse_field(s: TokenStream, word: str, limit: int, what: str) -> int | Wildcard | None:
    """`word N`, `word *` (wildcard), or nothing."""
    if not s.accept_word(word):
        return None
    if s.accept_punct("*"):
        return ANY
    line = s.peek().line
    value = s.expect_int(f"after '{word}'")
    _check_range(s, value, limit, what, line)
    return value


def _parse_urg(s: TokenStream) -> int | None:
    if not s.accept_word("urg"):
        return None
    line = s.peek().line
    value = s.expect_int("after 'urg'")
    _check_range(s, value, U16, "urg_ptr value", line)
    return value


def _parse_options(s: TokenStream) -> tuple[TcpOption, ...] | Wildcard:
    if not s.peek().is_punct("<"):
        return ()
    line = s.next().line
    if s.peek().kind is Kind.ELLIPSIS:
        s.next()
        s.expect_punct(">", "to close the <...> options wildcard")
        return ANY
    options = [_parse_option(s)]
    while s.accept_punct(","):
        options.append(_parse_option(s))
    s.expect_punct(">", "to close the TCP option list")
    _check_options_size(s, tuple(options), line)
    return tuple(options)


def _check_options_size(s: TokenStream, options: tuple[TcpOption, ...], line: int) -> None:
    size = options_size(options)
    if size % 4:
        s.fail("TCP options are not padded to a multiple of 4 bytes: "
               f"{size % 4} excess bytes", line)
    if size > MAX_OPTION_BYTES:
        s.fail(f"TCP options too long: {size} bytes (at most {MAX_OPTION_BYTES})", line)


def _parse_option(s: TokenStream) -> TcpOption:
    token = s.peek()
    if token.kind is not Kind.WORD:
        s.fail(f"expected a TCP option (nop, mss, wscale, sackOK, sack, TS, eol), "
               f"got {token.describe()}")
    if token.text in _UNSUPPORTED_OPTIONS:
        s.unsupported(_UNSUPPORTED_OPTIONS[token.text])
    parser = _OPTION_PARSERS.get(token.text)
    if parser is None:
        s.unsupported(f"TCP option '{token.text}'")
    s.next()
    return parser(s)


def _parse_mss(s: TokenStream) -> Mss:
    line = s.peek().line
    value = s.expect_int("after 'mss'")
    _check_range(s, value, U16, "mss value", line)
    return Mss(value)


def _parse_wscale(s: TokenStream) -> WScale:
    line = s.peek().line
    value = s.expect_int("after 'wscale'")
    _check_range(s, value, U8, "window scale shift count", line)
    return WScale(value)


def _parse_sack(s: TokenStream) -> Sack:
    blocks = [_parse_sack_block(s)]
    while s.peek().kind in (Kind.INT, Kind.HEX):
        blocks.append(_parse_sack_block(s))
    return Sack(tuple(blocks))


def _parse_sack_block(s: TokenStream) -> tuple[int, int]:
    line = s.peek().line
    left = s.expect_int("as SACK block start (sack a:b)")
    s.expect_punct(":", "in SACK block")
    right = s.expect_int("as SACK block end (sack a:b)")
    _check_range(s, left, U32, "TCP SACK left sequence number", line)
    _check_range(s, right, U32, "TCP SACK right sequence number", line)
    return left, right


def _parse_timestamp(s: TokenStream) -> Timestamp:
    line = s.peek().line
    if not s.accept_word("val"):
        s.fail(f"expected 'val' after 'TS', got {s.peek().describe()}")
    val = s.expect_int("after 'TS val'")
    if not s.accept_word("ecr"):
        s.fail(f"expected 'ecr' after 'TS val {val}', got {s.peek().describe()}")
    ecr = s.expect_int("after 'ecr'")
    _check_range(s, val, U32, "ts val", line)
    _check_range(s, ecr, U32, "ecr val", line)
    return Timestamp(val, ecr)


_OPTION_PARSERS = {
    "nop": lambda s: Nop(),
    "eol": lambda s: Eol(),
    "sackOK": lambda s: SackOK(),
    "mss": _parse_mss,
    "wscale": _parse_wscale,
    "sack": _parse_sack,
    "TS": _parse_timestamp,
}


def _check_range(s: TokenStream, value: int, limit: int, what: str, line: int) -> None:
    if not 0 <= value <= limit:
        s.fail(f"{what} out of range", line)
