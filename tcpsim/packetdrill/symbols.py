"""Symbolic constants of the system-call subset, and how argument expressions become numbers.

packetdrill evaluates names such as `SOL_SOCKET` or `O_RDWR|O_NONBLOCK` to the Linux values
before making the call; the simulated calls need the same numbers (`fcntl(F_GETFL)` returns a
flag word the script compares with `0x2`). Errno names map through Python's `errno` module,
which carries the Linux numbers on Linux.
"""

from __future__ import annotations

import errno as _errno
import os

from .ast import Array, BinOp, Expr, Int, Symbol

# x86-64 Linux values (include/uapi/...); only what the receive-path subset uses.
SYMBOLS: dict[str, int] = {
    # socket(2)
    "AF_INET": 2, "AF_INET6": 10, "PF_INET": 2, "PF_INET6": 10,
    "SOCK_STREAM": 1, "IPPROTO_TCP": 6, "IPPROTO_IP": 0,
    # levels and options
    "SOL_SOCKET": 1, "SOL_TCP": 6,
    "SO_REUSEADDR": 2, "SO_SNDBUF": 7, "SO_RCVBUF": 8, "SO_RCVLOWAT": 18,
    "TCP_NODELAY": 1, "TCP_MAXSEG": 2, "TCP_WINDOW_CLAMP": 10, "TCP_INQ": 36,
    "TCP_CM_INQ": 36,
    # fcntl(2)
    "F_GETFL": 3, "F_SETFL": 4, "O_RDONLY": 0, "O_WRONLY": 1, "O_RDWR": 2,
    "O_NONBLOCK": 0o4000,
    # shutdown(2)
    "SHUT_RD": 0, "SHUT_WR": 1, "SHUT_RDWR": 2,
    # ioctl(2)
    "SIOCINQ": 0x541B, "FIONREAD": 0x541B, "SIOCOUTQ": 0x5411, "TIOCOUTQ": 0x5411,
    # recv flags
    "MSG_PEEK": 0x2, "MSG_DONTWAIT": 0x40,
}

# tcp_info's tcpi_state values (include/net/tcp_states.h) by the core's state names.
TCP_STATE_NUMBERS: dict[str, int] = {
    "ESTABLISHED": 1, "SYN_SENT": 2, "SYN_RECV": 3, "FIN_WAIT1": 4, "FIN_WAIT2": 5,
    "TIME_WAIT": 6, "CLOSED": 7, "CLOSE_WAIT": 8, "LAST_ACK": 9, "LISTEN": 10, "CLOSING": 11,
}

# The same numbers under their kernel macro names, for `%{ }%` code (`tcpi_state == TCP_CLOSE`).
TCP_STATE_CONSTANTS: dict[str, int] = {
    ("TCP_CLOSE" if name == "CLOSED" else f"TCP_{name}"): number
    for name, number in TCP_STATE_NUMBERS.items()
}


class SymbolError(ValueError):
    """An argument the subset cannot turn into a number (the message names it)."""


def errno_number(name: str) -> int:
    """The Linux number of an errno name such as 'EAGAIN'."""
    value = getattr(_errno, name, None)
    if not isinstance(value, int):
        raise SymbolError(f"unknown errno {name}")
    return value


def errno_name(number: int) -> str:
    return _errno.errorcode.get(number, str(number))


def strerror(number: int) -> str:
    return os.strerror(number)


def int_value(expr: Expr) -> int:
    """An integer argument: a literal, a known symbol, `a|b`, or a one-element `[x]`."""
    if isinstance(expr, Int):
        return expr.value
    if isinstance(expr, Symbol):
        if expr.name in SYMBOLS:
            return SYMBOLS[expr.name]
        raise SymbolError(f"symbol {expr.name}")
    if isinstance(expr, BinOp) and expr.op == "|":
        return int_value(expr.lhs) | int_value(expr.rhs)
    if isinstance(expr, Array) and len(expr.items) == 1:
        return int_value(expr.items[0])
    raise SymbolError(f"argument {type(expr).__name__.lower()} where an integer is expected")
