"""Application wakeup latency measured on a real kernel, as quantile tables (docs/app-latency.md).

The tables live in tcpsim/data/app_latency.json, made by scripts/app_latency.py from the
captures of issue 14 (tcpsim.capture.wakeups measures them). Each table is a list of N+1
integer nanosecond values: the empirical quantiles at probabilities k/N, k = 0..N (the
first is the smallest latency seen, the last the largest).

A latency is drawn as ``table_lookup(table, rng.random())``: the uniform double is turned
into an exact integer (``random()`` returns k / 2**53 for an integer k) and the table is
interpolated linearly in integer arithmetic, so a second engine holding the same MT19937
stream reproduces every draw bit for bit, with no libm and no float rounding after the
first exact step.

    load_tables() -> {name: [ns, ...]}
    table_lookup(table, u) -> ns
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Sequence

UNIT_BITS = 53                      # random.random() = k / 2**53, k an integer
UNIT = 1 << UNIT_BITS


def table_lookup(table: Sequence[int], u: float) -> int:
    """The latency (ns) at uniform ``u`` in [0, 1): linear interpolation between the table's
    quantiles, in integers.

    With N = len(table) - 1 and k = u * 2**53 (exact for random.random()), the position is
    p = k * N; the segment i = p >> 53 and the fraction f = p & (2**53 - 1) give
    table[i] + ((table[i+1] - table[i]) * f) >> 53 (floor; the table is non-decreasing)."""
    n = len(table) - 1
    if n < 1:
        raise ValueError("a latency table needs at least two quantiles")
    if not 0.0 <= u < 1.0:
        raise ValueError(f"u must be in [0, 1), got {u!r}")
    k = int(u * UNIT)               # exact: u is a multiple of 2**-53 below 1
    p = k * n
    i, f = p >> UNIT_BITS, p & (UNIT - 1)
    return table[i] + (((table[i + 1] - table[i]) * f) >> UNIT_BITS)


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The whole calibration document (tables plus provenance)."""
    text = resources.files("tcpsim").joinpath("data/app_latency.json").read_text()
    return json.loads(text)


def load_tables() -> dict[str, list[int]]:
    """{table name: quantiles in ns} of the shipped calibration."""
    return {name: list(t["quantiles_ns"]) for name, t in load()["tables"].items()}
