"""Scenario value parsing: durations, sizes and rates as written in scenario TOML files."""

from __future__ import annotations

import re

_DUR = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9, "min": 60 * 10**9,
        "h": 3600 * 10**9}
_SIZE = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 1000,
         "mb": 10**6, "gb": 10**9}
_RATE = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "bps": 8, "kbps": 8000,
         "mbps": 8 * 10**6, "gbps": 8 * 10**9}
_NUM = r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Zµ]*)\s*"


def _split(value: str, what: str) -> tuple[float, str]:
    m = re.fullmatch(_NUM, value)
    if not m:
        raise ValueError(f"not a {what}: {value!r}")
    return float(m.group(1)), m.group(2).lower()


def duration_ns(value: object) -> int:
    """'250us', '20ms', '1.5s', '35min' or a number of seconds -> nanoseconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return round(value * 10**9)
    num, unit = _split(str(value), "duration")
    if unit not in _DUR:
        raise ValueError(f"unknown duration unit in {value!r}")
    return round(num * _DUR[unit])


def size_bytes(value: object) -> int:
    """An integer, or '32KiB' / '256MiB' -> bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    num, unit = _split(str(value), "size")
    if unit not in _SIZE:
        raise ValueError(f"unknown size unit in {value!r}")
    return round(num * _SIZE[unit])


def rate_bps(value: object) -> int:
    """'1gbit', '100mbit' -> bits per second."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    num, unit = _split(str(value), "rate")
    if unit not in _RATE:
        raise ValueError(f"unknown rate unit in {value!r}")
    return round(num * _RATE[unit])
