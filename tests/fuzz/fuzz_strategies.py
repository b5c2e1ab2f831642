"""Hypothesis strategies for the fuzz suite: values of every TOML type (boundary and absurd
ones included), scenario documents with one field broken, CLI option values and files."""

from __future__ import annotations

import datetime
import math
from typing import Any

from hypothesis import strategies as st

# -- TOML values ------------------------------------------------------------------------------

UNITS = ("", "s", "ms", "us", "ns", "m", "h", "B", "KiB", "MiB", "GiB", "K", "M", "kbit",
         "Mbit", "Gbit", "bps", "%", "x", "ss")


@st.composite
def unit_strings(draw) -> str:
    """Strings that look like a duration, size or rate, near and far from valid."""
    number = draw(st.one_of(
        st.integers(-(1 << 70), 1 << 70).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.sampled_from(["", "0", "-0", "1e400", "0x10", "1_000", ".5", "5.", "nan", "inf"])))
    space = draw(st.sampled_from(["", " ", "  "]))
    return f"{number}{space}{draw(st.sampled_from(UNITS))}"


scalars = st.one_of(
    st.booleans(),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.sampled_from([0, 1, -1, 2, 65535, 65536, 1 << 31, (1 << 63) - 1, -(1 << 63)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    unit_strings(),
    st.just(datetime.date(2024, 1, 1)),
    st.just(datetime.time(12, 0)),
)

toml_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
                                            inner, max_size=3)),
    max_leaves=6)

# -- a TOML writer (no tomli_w in the test extras) --------------------------------------------


def _key(k: str) -> str:
    return k if k and all(c.isalnum() or c in "_-" for c in k) else _str(k)


def _str(s: str) -> str:
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF:
            out.append(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else "?")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def toml_value(v: Any) -> str:
    """`v` as a TOML inline value."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _str(v)
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def toml_document(doc: dict[str, Any]) -> str:
    """A scenario document: scalars at the top, then one [table] per dict."""
    lines = [f"{_key(k)} = {toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"[{_key(k)}]")
            lines += [f"{_key(kk)} = {toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"

# -- scenario documents -----------------------------------------------------------------------


BASE: dict[str, Any] = {
    "name": "fuzz", "profile": "linux-6.1", "duration": "5ms",
    "link": {"rtt": "1ms"}, "receiver": {"role": "server"},
    "writer": {"kind": "bulk", "bytes": 20000}, "reader": {"kind": "fast"},
}

# (table or "" for the top level, key): every field a scenario file may set
FIELDS = [("", k) for k in ("name", "description", "profile", "hz", "duration", "seed",
                            "policies")] + \
    [("link", k) for k in ("rtt", "delay", "delay_ab", "delay_ba", "rate", "queue_limit", "loss",
                           "mtu", "jitter")] + \
    [("receiver", k) for k in ("role", "device", "so_rcvbuf", "initrwnd")] + \
    [("sender", k) for k in ("initcwnd", "nodelay")] + \
    [("writer", k) for k in ("kind", "bytes", "every", "start")] + \
    [("reader", k) for k in ("kind", "bytes", "every", "bytes2", "every2", "period", "fast_for",
                             "slow_for", "fraction", "start")] + \
    [("sysctl", k) for k in ("tcp_rmem", "tcp_adv_win_scale", "tcp_moderate_rcvbuf", "rmem_max",
                             "tcp_shrink_window", "tcp_window_scaling", "tcp_app_win",
                             "net.ipv4.tcp_rmem", "tcp_comp_sack_nr")]

TABLES = ("link", "receiver", "sender", "writer", "reader", "sysctl")


def with_field(table: str, key: str, value: Any) -> dict[str, Any]:
    """BASE with `table.key` (or top-level `key`) set to `value`."""
    doc = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASE.items()}
    if table:
        doc.setdefault(table, {})[key] = value
    else:
        doc[key] = value
    return doc


field_edits = st.tuples(st.sampled_from(FIELDS), toml_values)

identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)

# -- CLI option values ------------------------------------------------------------------------

durations = st.one_of(unit_strings(), st.sampled_from(
    ["5ms", "0", "0s", "-1s", "2", "1.5", "1e-9", "1ns", "3ms", "nan", "inf", "1e400s", ""]))

sysctl_values = st.one_of(
    st.sampled_from(["1", "0", "-1", "[4096,131072,6291456]", "4096 131072 6291456",
                     "4096,131072,6291456", "[1,2]", "[]", "x", "", "1e9", "99999999999999999999"]),
    st.integers(-(1 << 40), 1 << 40).map(str), st.text(max_size=8))

sysctl_names = st.one_of(
    st.sampled_from(["tcp_rmem", "net.ipv4.tcp_rmem", "net/ipv4/tcp_rmem", "tcp_adv_win_scale",
                     "rmem_max", "net.core.rmem_max", "tcp_moderate_rcvbuf", "tcp_shrink_window",
                     "tcp_collapse_max_bytes", "tcp_rmme", ""]),
    identifiers)

profiles = st.one_of(st.sampled_from(["linux-5.15", "linux-6.1", "linux-6.18", "6.1", "linux-9",
                                      "", "linux-6.1.59"]), identifiers)

patches = st.one_of(st.sampled_from(["shrink-window", "initrwnd", "collapse-max-bytes",
                                     "rfc7323-retraction", "none", "shrink_window", "nosuch.py:X",
                                     ":", "x.py:"]), identifiers)

# -- file contents ----------------------------------------------------------------------------


@st.composite
def mangled(draw, good: bytes) -> bytes:
    """`good` truncated, with bytes flipped, or replaced by garbage."""
    how = draw(st.sampled_from(["truncate", "flip", "garbage", "empty", "append"]))
    if how == "truncate":
        return good[:draw(st.integers(0, max(0, len(good) - 1)))]
    if how == "flip" and good:
        data = bytearray(good)
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        return bytes(data)
    if how == "empty":
        return b""
    if how == "append":
        return good + draw(st.binary(max_size=64))
    return draw(st.binary(max_size=256))
