"""The native engine's generator is CPython's `random.Random`: same seeding from any
integer (negative, beyond 64 bits), same `random()` and `expovariate()` streams -- what
makes seeded loss and jitter identical on both engines."""

from __future__ import annotations

import random

import pytest

from tcpsim.engines import native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")

SEEDS = [0, 1, 2, 3, 42, -1, -42, 2**31 - 1, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 1,
         -(2**63), 2**64 + 5, 2**70 + 3, -(2**90) - 11, *range(100, 300, 7)]


@pytest.mark.parametrize("seed", SEEDS)
def test_streams_match_cpython(seed: int) -> None:
    from tcpsim._native import random_draws
    n = 700                                    # past one regeneration of the 624-word state
    got_random, got_expo = random_draws(seed, n, 1.0 / 250_000)
    ref = random.Random(seed)
    assert got_random == [ref.random() for _ in range(n)]
    assert got_expo == [ref.expovariate(1.0 / 250_000) for _ in range(n)]
