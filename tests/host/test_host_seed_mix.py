"""The shipped host experiment (experiments/host-seed-mix.toml): ten reproducer sessions among
190 request/response sessions push a small `tcp_mem` into pressure; with the fix
(`--policy shrink-window`) the host reaches it later or not at all (issue 27's done-means)."""

from __future__ import annotations

import pytest

from tcpsim.host.run import load_host_with, run_host
from tcpsim.units import parse_duration


def _pool_is_charged() -> bool:
    """Whether the host TCP memory model charges the pool (tcpsim/core/protmem.py)."""
    from tcpsim.catalog import get_profile
    from tcpsim.engine.simulation import Simulation
    from tcpsim.scenario import load_scenario
    sc = load_scenario("seed-unbounded-growth").with_(duration=200_000_000)
    sim = Simulation(sc, get_profile(sc.profile))
    sim.run()
    return sim.pool.total_pages() > 0


pytestmark = pytest.mark.skipif(not _pool_is_charged(),
                                reason="the host memory model does not charge the pool yet")


def _onset(policies: tuple[str, ...] = ()) -> tuple[float | None, dict]:
    host = load_host_with("host-seed-mix", policies=policies,
                          duration=parse_duration("20s", "duration"))
    r = run_host(host)
    return r.pressure["onset_s"], r.as_json()


def test_the_seed_mix_reaches_pressure_and_the_fix_delays_or_avoids_it():
    onset, out = _onset()
    assert onset is not None, "the seed mix never reached memory pressure"
    assert out["nstat"]["TcpExtTCPMemoryPressures"] >= 1
    assert out["pressure"]["peak_sockstat_mem"] > 1100         # tcp_mem[1] of the file
    fixed, _ = _onset(("shrink-window",))
    assert fixed is None or fixed > onset
