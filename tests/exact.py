"""Exact application timing for the tests that pin it (`from exact import exact, load_exact`).

A scenario read from a file or a dict gives its periodic writer, periodic reader and blocking
reader the calibrated wakeup latencies of its host preset by default (tcpsim.app_latency
DEFAULT_TIMING, docs/app-latency.md). A test about a receive-path mechanism whose figures
were worked out on time (a 1 B read every 1 ms, a reader that reads on arrival) says so here,
visibly, with the run-wide opt-out `[timing] host = "exact"`; the default itself is tested in
tests/engine/test_app_timing.py.
"""

from __future__ import annotations

from typing import Any

EXACT = {"host": "exact"}


def exact(raw: dict[str, Any]) -> dict[str, Any]:
    """A scenario document with exact application timing (`[timing] host = "exact"`)."""
    return {**raw, "timing": dict(EXACT)}


def load_exact(name: str) -> Any:
    """A scenario file or built-in experiment read with exact application timing."""
    from tcpsim.scenario import load_scenario
    return load_scenario(name, timing="exact")
