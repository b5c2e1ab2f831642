"""Shrinking long series for plotting without hiding what matters.

A receiver's state is a step function: a value holds from one event to the next. Two steps
keep a plot of millions of events small and faithful:

1. `change_points()` keeps only the rows where the value changes (lossless for a step
   plot drawn with `line_shape="hv"`);
2. if that is still too many, `minmax_bins()` cuts the time span into bins and keeps, per
   bin, the first, the last, the lowest and the highest row -- so every peak and every dip
   survives, and the line still joins up across bins.

Marks (drops, collapses, zero windows, probes, retransmissions) are never downsampled:
every one is drawn. Only a kind with more than `MAX_MARKS` events (hundreds of thousands
of retransmissions, say -- more than a screen has pixels) is drawn one mark per occupied
time bin, with the count in the hover text (`thin_marks()`), so no burst disappears.

Rates (bytes per second on the wire, goodput) are sums per time bin, see `bin_sums()`.
"""

from __future__ import annotations

import math

import numpy as np

DEFAULT_MAX_POINTS = 4000      # per series; ~4 points per bin -> ~1000 bins over the run
DEFAULT_RATE_BINS = 400        # target bins for rate charts (rounded to a nice width)
MAX_MARKS = 50_000             # per kind of mark; above it, one mark per occupied time bin


def change_points(y: np.ndarray, run_ends: bool = False) -> np.ndarray:
    """Indices of the first row, the last row and every row whose value differs from the
    previous row's; with `run_ends`, also every row whose value differs from the next
    row's (needed when points are joined by straight lines rather than steps)."""
    n = len(y)
    if n <= 2:
        return np.arange(n)
    keep = np.empty(n, dtype=bool)
    keep[0] = keep[-1] = True
    keep[1:-1] = y[1:-1] != y[:-2]
    if run_ends:
        keep[1:-1] |= y[1:-1] != y[2:]
    return np.flatnonzero(keep)


def minmax_bins(t: np.ndarray, y: np.ndarray, nbins: int) -> np.ndarray:
    """Indices of the first, last, minimum and maximum row of every time bin (sorted,
    unique). `t` must be non-decreasing."""
    n = len(t)
    if n == 0 or nbins <= 0:
        return np.arange(0)
    t0, t1 = float(t[0]), float(t[-1])
    span = t1 - t0
    if span <= 0:
        b = np.zeros(n, dtype=np.int64)
    else:
        b = np.minimum(((t - t0) / span * nbins).astype(np.int64), nbins - 1)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    ends = np.r_[starts[1:], n] - 1
    order = np.lexsort((y, b))             # by bin, then by value (bins are contiguous)
    picks = np.concatenate([starts, ends, order[starts], order[ends]])
    return np.unique(picks)


def downsample(t: np.ndarray, y: np.ndarray, max_points: int = DEFAULT_MAX_POINTS,
               shape: str = "hv") -> np.ndarray:
    """Indices of the rows to plot: change points, then min/max binning if still above
    `max_points`. The global minimum and maximum are always kept. `shape` is how the plot
    joins the points ("hv" steps or "linear")."""
    idx = change_points(y, run_ends=shape != "hv")
    if len(idx) <= max_points:
        return idx
    sub = minmax_bins(t[idx], y[idx], max(1, max_points // 4))
    return idx[sub]


def nice_width(span: float, target_bins: int = DEFAULT_RATE_BINS) -> float:
    """A round bin width (1, 2 or 5 x 10^k) giving about `target_bins` bins over `span`."""
    if span <= 0:
        return 1.0
    raw = span / max(1, target_bins)
    exp = math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * 10 ** exp >= raw:
            return m * 10 ** exp
    return 10 ** (exp + 1)


def bin_sums(t: np.ndarray, w: np.ndarray, width: float,
             t_end: float) -> tuple[np.ndarray, np.ndarray]:
    """Sums of `w` per bin of `width` over [0, t_end]: (bin centres, sums)."""
    nb = max(1, int(math.ceil(t_end / width))) if t_end > 0 else 1
    edges = np.arange(nb + 1) * width
    sums, _ = np.histogram(t, bins=edges, weights=w)
    return (edges[:-1] + edges[1:]) / 2, sums


def thin_marks(t: np.ndarray, max_marks: int = MAX_MARKS) -> tuple[np.ndarray, np.ndarray]:
    """(indices, events per kept mark). All marks when there are at most `max_marks`;
    otherwise the first mark of every occupied bin of `max_marks` bins over the span, with
    how many marks the bin holds. `t` must be non-decreasing."""
    n = len(t)
    if n <= max_marks:
        return np.arange(n), np.ones(n, dtype=np.int64)
    span = float(t[-1] - t[0]) or 1.0
    b = np.minimum(((t - t[0]) / span * max_marks).astype(np.int64), max_marks - 1)
    starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
    counts = np.diff(np.r_[starts, n])
    return starts, counts
