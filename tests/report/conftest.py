"""Fixtures for the report tests: short simulated runs and hand-written traces."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from tcpsim.core.constants import NS_PER_S
from tcpsim.report.runs import simulate
from tcpsim.runner import RunOptions
from tcpsim.scenario import load_scenario
from tcpsim.trace.schema import COLUMN_NAMES, STR_COLUMNS

from exact import load_exact

GROWTH_S = 3          # seconds of seed-unbounded-growth: enough for thousands of rows
PROFILE = "linux-6.1.59"    # 6.1 with tcp_shrink_window backported (default 0)


@pytest.fixture(scope="session")
def fill_run() -> tuple[dict, dict]:
    """seed-rcvbuf32k-fill: ~70 packets fill a 64 KiB buffer, a zero window, probes."""
    return simulate(load_scenario("seed-rcvbuf32k-fill"), RunOptions())


@pytest.fixture(scope="session")
def growth_runs() -> dict[str, tuple[dict, dict]]:
    """seed-unbounded-growth for a few seconds on 6.1.59 (the 6.1 that has the sysctl),
    stock and with tcp_shrink_window=1; apps on exact time, so the stock run grows (the
    story the report tells; with the default timing it soon stalls at a zero window)."""
    sc = load_exact("seed-unbounded-growth")
    dur = GROWTH_S * NS_PER_S
    return {
        "stock": simulate(sc, RunOptions(profile=PROFILE, duration=dur)),
        "shrink": simulate(sc, RunOptions(profile=PROFILE, duration=dur,
                                          sysctl={"net.ipv4.tcp_shrink_window": 1})),
    }


def _default(name: str) -> Any:
    return "" if name in STR_COLUMNS else -1


@pytest.fixture
def make_trace() -> Callable[..., dict[str, list]]:
    """Build a columns dict from row dicts; unspecified fields are unknown (-1 / '')."""
    def build(rows: list[dict[str, Any]]) -> dict[str, list]:
        return {name: [r.get(name, _default(name)) for r in rows] for name in COLUMN_NAMES}
    return build
