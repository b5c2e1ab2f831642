"""The search space as a Hypothesis strategy: a property over every workload of a space,
with `hypothesis.target` steering generation toward the worst and the shrinker reducing a
counterexample toward the defaults -- the property-testing face of `tcpsim search`."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings, target

from tcpsim.searching import load_search, with_overrides
from tcpsim.searching.evaluate import Evaluator
from tests.strategies import search_workloads

SPACE = load_search("rcvbuf-growth")
DURATION = 3 * 10**9


def _ratio(ev: Evaluator, workload: dict) -> float:
    e = ev.evaluate([(workload, DURATION)])[0]
    assert e.objective is not None, e.error
    return e.objective


FIXED = Evaluator(with_overrides(SPACE, policy=("shrink-window",)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload=search_workloads(SPACE))
def test_shrink_window_keeps_every_generic_workload_near_autotuning(workload: dict) -> None:
    ratio = _ratio(FIXED, workload)
    target(ratio, label="rcvbuf_ratio")
    assert ratio < 2.0


VANILLA = Evaluator(SPACE)


@pytest.mark.slow
def test_targeted_search_finds_a_vanilla_61_counterexample() -> None:
    """The same property on linux-6.1 fails: Hypothesis' targeted phase climbs to a
    ratcheting workload and the shrinker reduces it (up to 300 examples)."""
    found: list[dict] = []

    @settings(max_examples=300, deadline=None, database=None,
              phases=[Phase.generate, Phase.target, Phase.shrink],
              suppress_health_check=[HealthCheck.too_slow])
    @given(workload=search_workloads(SPACE))
    def prop(workload: dict) -> None:
        ratio = _ratio(VANILLA, workload)
        target(ratio, label="rcvbuf_ratio")
        if ratio >= 4.0:
            found.append(workload)
        assert ratio < 4.0

    with pytest.raises(AssertionError):
        prop()
    # shrunk to Cloudflare's reproducer: 1 B reads on the base's 1448 B / 1 ms writer
    assert found[-1] == {"reader.bytes": 1, "sysctl.net.ipv4.tcp_rmem": [4096, 131072, 268435456]}
