"""tcpsim.app_latency: the shipped calibration and its integer lookup."""

import random

import pytest

from tcpsim.app_latency import UNIT, load, load_tables, table_lookup


def test_lookup_hits_the_quantiles_and_interpolates_in_integers():
    t = [0, 100, 1000]
    assert table_lookup(t, 0.0) == 0
    assert table_lookup(t, 0.5) == 100
    assert table_lookup(t, 0.25) == 50
    assert table_lookup(t, 0.75) == 550
    assert table_lookup(t, (UNIT - 1) / UNIT) == 999         # never reaches past the max
    assert isinstance(table_lookup(t, 0.3), int)


def test_lookup_is_exact_integer_arithmetic_on_the_mt_stream():
    # the same formula written out with the integer k that random() is made of
    rng = random.Random(7)
    t = [10, 20, 40, 80, 10_000]
    for _ in range(1000):
        u = rng.random()
        k = int(u * UNIT)
        assert k / UNIT == u                                   # random() is k / 2**53
        p = k * 4
        i, f = p >> 53, p & (UNIT - 1)
        assert table_lookup(t, u) == t[i] + (((t[i + 1] - t[i]) * f) >> 53)


@pytest.mark.parametrize("u", [-0.1, 1.0, 2.0])
def test_lookup_refuses_u_outside_the_unit_interval(u):
    with pytest.raises(ValueError, match="u must be"):
        table_lookup([0, 1], u)


def test_shipped_tables_are_monotone_integer_quantiles_with_provenance():
    doc = load()
    assert doc["machine"]["release"] and doc["method"] and doc["made"]
    tables = load_tables()
    assert {"periodic_writer", "periodic_reader", "blocking_reader"} <= set(tables)
    for name, q in tables.items():
        assert 21 <= len(q) <= 101, name
        assert all(isinstance(v, int) and v >= 0 for v in q), name
        assert q == sorted(q), name
        assert doc["tables"][name]["n_samples"] >= 1000, name
