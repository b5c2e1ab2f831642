"""Durations, sizes and rates: the one parser for scenario files, CLI options, capture,
replay and sweeps.

Every function takes the value as written (a TOML number or string, or an option's text)
and `where` -- the field or option it came from -- and returns an integer (ns, bytes,
bit/s), or raises `UnitError` naming `where` and the accepted forms.

* **Durations**: a number with a unit (`"250us"`, `"20ms"`, `"1.5s"`, `"35min"`, `"2h"`) or
  a bare number of seconds (`2`, `1.5`, `"2"`); never negative, NaN or infinite.
* **Sizes**: bytes (`1448`) or an integer with a unit: `B`, `KiB`/`MiB`/`GiB` (and `k`/`K`,
  `M`, `G`, also powers of 1024), `kB` (the SI spelling) or `KB`, `MB`/`GB` (powers of
  1000). The full table is SIZE_UNITS below and docs/scenarios.md "Units".
* **Rates**: bits per second, in tc's spelling (`"100mbit"`, `"1gbit"`, `"Mbit"`,
  `"kbit"`, `"bit"`; any case) or a bare number of bit/s. The spellings `bps`, `kbps`,
  `mbps`, `gbps` are refused: tc reads `mbps` as megaBYTES per second, most other tools as
  megabits, so the same file would mean two links eight times apart.
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

from tcpsim.core.constants import NS_PER_S
from tcpsim.errors import ScenarioError


class UnitError(ScenarioError):
    """A duration, size or rate that cannot be read; names the field and the accepted forms."""


_NUMBER = r"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
_VALUE = re.compile(rf"^\s*{_NUMBER}\s*([a-zA-Zµ]*)\s*$")

DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": NS_PER_S,
                  "sec": NS_PER_S, "min": 60 * NS_PER_S, "h": 3600 * NS_PER_S}
SIZE_UNITS = {"": 1, "B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "kB": 1000,
              "KB": 1000, "MB": 1000**2, "GB": 1000**3, "k": 1024, "K": 1024, "M": 1024**2,
              "G": 1024**3}
RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}   # lower-cased
AMBIGUOUS_RATES = {"bps": "bit", "kbps": "kbit", "mbps": "mbit", "gbps": "gbit"}

DURATION_FORMS = '"250us", "20ms", "1.5s", "35min" or a number of seconds'
SIZE_FORMS = 'bytes (1448) or "32KiB", "8MiB"'
RATE_FORMS = '"100mbit", "1gbit" (bits per second, as tc writes them)'


def _split(value: Any) -> tuple[float, str] | None:
    """A TOML/CLI value -> (number, unit) or None when it is not a number with a unit."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value), ""
    if not isinstance(value, str):
        return None
    m = _VALUE.match(value)
    return (float(m.group(1)), m.group(2)) if m else None


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


# The longest duration anywhere in a scenario: times are 64-bit nanoseconds in the native
# engine, and a time plus a delay plus a jitter must not wrap (3 * 2**61 < 2**63): 73 years.
MAX_DURATION_NS = 2**61


def parse_duration(value: Any, where: str, positive: bool = False) -> int:
    """A duration -> integer nanoseconds. `positive`: zero is refused too (a run length,
    a period)."""
    parts = _split(value)
    if parts is None or parts[1] not in DURATION_UNITS and parts[1] != "":
        raise UnitError(f"{where}: {_show(value)} is not a duration; write e.g. {DURATION_FORMS}")
    num, unit = parts
    if math.isnan(num) or math.isinf(num):
        raise UnitError(f"{where}: {_show(value)} is not a duration; write e.g. {DURATION_FORMS}")
    if num < 0:
        raise UnitError(f"{where}: duration must not be negative, got {_show(value)}")
    if isinstance(value, int) and not unit:
        ns = value * NS_PER_S
    else:
        ns = int(round(num * DURATION_UNITS[unit or "s"]))
    if positive and ns <= 0:
        raise UnitError(f"{where}: must be longer than zero, got {_show(value)}")
    if ns > MAX_DURATION_NS:
        raise UnitError(f"{where}: {_show(value)} is longer than tcpsim simulates; write at "
                        f"most {MAX_DURATION_NS // NS_PER_S // (365 * 86400)} years")
    return ns


def parse_size(value: Any, where: str) -> int:
    """A size -> integer bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise UnitError(f"{where}: size must not be negative, got {value}")
        return value
    parts = _split(value) if isinstance(value, str) else None
    if parts is not None and parts[0] < 0:
        raise UnitError(f"{where}: size must not be negative, got {_show(value)}")
    m = re.match(r"^\s*\+?([0-9]+)\s*([a-zA-Z]*)\s*$", value) if isinstance(value, str) else None
    if m is None or m.group(2) not in SIZE_UNITS:
        raise UnitError(f"{where}: {_show(value)} is not a size; write {SIZE_FORMS}")
    return int(m.group(1)) * SIZE_UNITS[m.group(2)]


def parse_rate(value: Any, where: str) -> int:
    """A rate -> integer bits per second (> 0)."""
    parts = _split(value)
    unit = parts[1].lower() if parts else ""
    if parts is not None and unit in AMBIGUOUS_RATES:
        bits = f"{parts[0]:g}{AMBIGUOUS_RATES[unit]}"
        raise UnitError(f"{where}: {_show(value)} is ambiguous (tc reads {parts[1]} as bytes per "
                        f"second, other tools as bits); write {bits!r} for bits per second, or "
                        f"eight times that for bytes")
    if parts is None or unit not in RATE_UNITS and unit != "" or not math.isfinite(parts[0]):
        raise UnitError(f"{where}: {_show(value)} is not a rate; write e.g. {RATE_FORMS}")
    if parts[0] <= 0:
        raise UnitError(f"{where}: a rate must be above zero, got {_show(value)}; "
                        "leave the rate out for an unlimited link")
    if isinstance(value, (int, float)):
        return int(value)
    return int(parts[0] * RATE_UNITS[unit or "bit"])


def seconds_option(option: str) -> Callable[[str], float]:
    """An argparse `type=` for a positive duration option (`--until 2s`, `--duration 1.5`):
    the value in seconds, or argparse's one-line error with the accepted forms."""
    import argparse

    def parse(text: str) -> float:
        try:
            return parse_duration(text, option, positive=True) / NS_PER_S
        except UnitError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{option}: ")) from None
    return parse


def fmt_duration(seconds: float) -> str:
    """Wall time as people read it: 12.3 s, 4m05s, 2h03m (progress lines, ETAs)."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(int(round(seconds)), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"
