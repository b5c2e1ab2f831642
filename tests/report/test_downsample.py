"""Downsampling keeps the shape, every extreme and every mark."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tcpsim.report.downsample import (bin_sums, change_points, downsample, minmax_bins,
                                      nice_width, thin_marks)


def _step_value_at(t_keep: np.ndarray, y_keep: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The value an 'hv' step plot through the kept points shows at times t."""
    return y_keep[np.searchsorted(t_keep, t, side="right") - 1]


def test_change_points_are_lossless_for_a_step_plot() -> None:
    rng = np.random.default_rng(1)
    y = np.repeat(rng.integers(0, 5, 400), rng.integers(1, 20, 400))
    t = np.arange(len(y), dtype=float)
    idx = change_points(y)
    assert len(idx) < len(y) / 3
    np.testing.assert_array_equal(_step_value_at(t[idx], y[idx], t), y)


def test_change_points_with_run_ends_keep_flat_stretches_flat() -> None:
    y = np.array([0, 0, 0, 5, 5, 5, 5, 9])
    idx = change_points(y, run_ends=True)
    assert list(idx) == [0, 2, 3, 6, 7]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=3000),
       st.integers(1, 50))
def test_minmax_bins_keep_each_bins_extremes(values: list[int], nbins: int) -> None:
    y = np.array(values)
    t = np.linspace(0.0, 10.0, len(y))
    idx = minmax_bins(t, y, nbins)
    assert np.all(np.diff(idx) > 0)
    b = np.minimum((t / 10.0 * nbins).astype(int), nbins - 1)
    for k in np.unique(b):
        in_bin = b == k
        kept = idx[b[idx] == k]
        assert y[kept].max() == y[in_bin].max()
        assert y[kept].min() == y[in_bin].min()
        assert np.flatnonzero(in_bin)[0] in kept and np.flatnonzero(in_bin)[-1] in kept


def test_downsample_a_million_rows_keeps_peaks_within_budget() -> None:
    rng = np.random.default_rng(7)
    y = np.cumsum(rng.integers(-1500, 1600, 1_000_000))
    y[123_456] = y.max() + 10**9          # a one-row spike must survive
    y[654_321] = y.min() - 10**9          # and so must a one-row dip
    t = np.arange(len(y)) * 1e-3
    idx = downsample(t, y, max_points=4000)
    assert len(idx) <= 4000
    assert 123_456 in idx and 654_321 in idx
    assert idx[0] == 0 and idx[-1] == len(y) - 1


def test_downsample_leaves_short_series_alone() -> None:
    y = np.arange(100)
    assert list(downsample(np.arange(100.0), y, 4000)) == list(range(100))


def test_thin_marks_keeps_every_mark_under_the_cap() -> None:
    t = np.sort(np.random.default_rng(3).random(5000))
    idx, counts = thin_marks(t, max_marks=5000)
    assert list(idx) == list(range(5000)) and counts.sum() == 5000


def test_thin_marks_over_the_cap_marks_every_occupied_bin() -> None:
    rng = np.random.default_rng(4)
    t = np.sort(np.r_[rng.random(200_000) * 0.1, 0.5, 0.75, 1.0])   # a burst and 3 loners
    idx, counts = thin_marks(t, max_marks=1000)
    assert len(idx) <= 1000
    assert counts.sum() == len(t)
    for loner in (0.5, 0.75, 1.0):
        assert loner in t[idx]


def test_nice_width_and_bin_sums() -> None:
    assert nice_width(20.0, 400) == 0.05
    assert nice_width(2100.0, 400) == 10
    centres, sums = bin_sums(np.array([0.01, 0.02, 0.07]), np.array([1.0, 2.0, 4.0]), 0.05, 0.1)
    assert list(sums) == [3.0, 4.0]
    assert np.allclose(centres, [0.025, 0.075])
