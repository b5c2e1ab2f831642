"""The socket's complete state as plain data: the form both engines report.

`snapshot(sk)` walks the five records of tcpsim/core/state.py by their declared dataclass
fields (a field added to a record appears here without an edit), both receive-side queues
skb by skb (every `Skb` slot), the retransmit and write queues, the MIB (every core counter
and the profile's patch counters) and the socket-level flags. The native socket
(tcpsim._native.TcpSocket.snapshot) returns the same dict, so the lockstep tests compare
the two with `==` and name the first path that differs.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from tcpsim.core.mib import COUNTERS
from tcpsim.core.skb import Skb

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

RECORDS = ("conn", "rcv", "mem", "ack", "snd")


def plain(value: Any) -> Any:
    """A record value as plain data: enum members as their str value, an skb as the dict of
    its slots, sequences (lists, tuples, deques) as lists, recursively."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Skb):
        return skb_dict(value)
    if isinstance(value, (list, tuple, deque)):
        return [plain(v) for v in value]
    return value


def skb_dict(skb: Skb) -> dict[str, Any]:
    """Every slot of one skb (seq, end_seq, len, truesize, head, linear, nfrags, ...)."""
    return {name: getattr(skb, name) for name in Skb.__slots__}


def record_dict(record: Any) -> dict[str, Any]:
    """Every declared field of one state record, under its Python name."""
    return {f.name: plain(getattr(record, f.name)) for f in fields(record)}


def patch_counters(policy: Any) -> tuple[str, ...]:
    """The counters the patches composed into `policy`'s class declare (`Patch.counters`),
    in the order the profile applied them (Profile.counters())."""
    names: list[str] = []
    for klass in reversed(type(policy).__mro__):
        for name in vars(klass).get("counters", {}) or {}:
            if name not in names:
                names.append(name)
    return tuple(names)


def mib_dict(sk: TcpSocket) -> dict[str, int]:
    """Every core counter and the profile's patch counters (zero until bumped)."""
    return {name: getattr(sk.mib, name) for name in (*COUNTERS, *patch_counters(sk.k))}


def sock_dict(sk: TcpSocket) -> dict[str, Any]:
    """The socket-level state outside the records."""
    return {"state": str(sk.conn.state.value), "now": sk.now, "tcp_mstamp": sk.tcp_mstamp,
            "readable": sk.readable, "writable": sk.writable, "error": sk.error, "eof": sk.eof,
            "accepted": sk.accepted, "next_deadline": sk.next_deadline()}


def snapshot(sk: TcpSocket) -> dict[str, dict[str, Any]]:
    """The contract's snapshot: {"conn", "rcv", "ack", "mem", "snd": every field; "mib";
    "sock"} (docs: /work/native-contract.md, tests/core/test_snapshot.py)."""
    out = {name: record_dict(getattr(sk, name)) for name in RECORDS}
    out["mib"] = mib_dict(sk)
    out["sock"] = sock_dict(sk)
    return out


def first_difference(want: Any, got: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first path at which two snapshots (or any plain data) differ, as
    (path, want, got) -- e.g. ("rcv.rcv_wnd", 65535, 65280) -- or None when equal. A bool
    and an int of the same value differ (the engines must agree on types too)."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in (*want, *(k for k in got if k not in want)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in want or key not in got:
                return sub, want.get(key, "<missing>"), got.get(key, "<missing>")
            found = first_difference(want[key], got[key], sub)
            if found:
                return found
        return None
    if isinstance(want, list) and isinstance(got, list):
        for i, (a, b) in enumerate(zip(want, got)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(want) != len(got):
            return f"{path}.len", len(want), len(got)
        return None
    if want != got or type(want) is not type(got):
        return path, want, got
    return None
