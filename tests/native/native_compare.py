"""Reading the Python socket's state the way the native records lay it out.

The socket's fields are moving from flat attributes (`sk.rcv_nxt`) into five records
(`sk.rcv.rcv_nxt`, tcpsim/core/state.py); these helpers read either layout.
"""

from __future__ import annotations

from collections import deque
from typing import Any

RECORDS = ("conn", "rcv", "mem", "ack", "snd")


def home(sk: Any, record: str) -> Any:
    """The object that holds `record`'s fields: `sk.<record>` once the socket has records,
    the socket itself before."""
    rec = getattr(sk, record, None)
    return sk if rec is None or callable(rec) else rec


def field(sk: Any, record: str, name: str) -> Any:
    """`sk.<record>.<name>`, or `sk.<name>` on the flat socket."""
    return getattr(home(sk, record), name)


def plain(v: Any) -> Any:
    """A Python field value in the shapes the native binding returns: sequences as lists,
    skbs as dicts of their slots, enum strings as str."""
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (list, tuple, deque)):
        return [plain(x) for x in v]
    if hasattr(v, "__slots__") and hasattr(v, "truesize"):
        return {s: plain(getattr(v, s)) for s in type(v).__slots__}
    return v


def assert_same_fields(got: dict[str, dict[str, Any]], sk: Any, records=RECORDS,
                       step: str = "") -> None:
    """Every field of the native records `got` ({record: {field: value}}) equals the Python
    socket's, value and type; the message names the first field that differs."""
    for record in records:
        for name, value in got[record].items():
            want = plain(field(sk, record, name))
            assert value == want and type(value) is type(want), \
                f"{step + ': ' if step else ''}{record}.{name}: native {value!r}, python {want!r}"
