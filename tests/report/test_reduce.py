"""A long trace read reduced (tcpsim/report/reduce.py) tells the report what every row does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tcpsim.core.constants import NS_PER_S
from tcpsim.report import extract, reduce
from tcpsim.report.html import report_html
from tcpsim.report.runs import Run
from tcpsim.report.summary import summarize
from tcpsim.report.trace import load_reduced, load_trace, read_metadata
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import load_scenario

from exact import load_exact

CASES = {
    # zero windows and probes
    "fill": (lambda: load_scenario("seed-rcvbuf32k-fill"), RunOptions()),
    # growth, collapses, drops on 6.1.59
    "growth": (lambda: load_exact("seed-unbounded-growth"),
               RunOptions(profile="linux-6.1.59", duration=3 * NS_PER_S)),
    # a reader that stops and starts: stalls, zero windows
    "oscillating": (lambda: load_scenario("seed-oscillating-reader"),
                    RunOptions(duration=20 * NS_PER_S)),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def traced(request, tmp_path_factory) -> Path:
    make, opts = CASES[request.param]
    path = tmp_path_factory.mktemp("reduce") / f"{request.param}.parquet"
    from dataclasses import replace
    run(make(), replace(opts, trace=str(path)))
    return path


def _both(path: Path, monkeypatch=None):
    meta = read_metadata(path)
    full, _ = load_trace(path)
    red = load_reduced(path, meta=meta)
    return full, red, meta


def test_the_summary_is_the_same(traced: Path) -> None:
    full, red, meta = _both(traced)
    assert red.reduced is not None and red.reduced.rows == full.n
    assert summarize(red, meta) == summarize(full, meta)


def test_marks_rates_and_segment_counts_are_the_same(traced: Path) -> None:
    full, red, meta = _both(traced)
    for kind, m in extract.all_marks(full).items():
        r = extract.all_marks(red)[kind]
        assert len(r) == len(m), kind
        assert np.array_equal(r.t, m.t), kind
    end = Run("x", full, meta).end_s
    width = extract.rate_width(end)
    for tr_a, tr_b in ((full, red),):
        a, b = extract.wire_rate(tr_a, width, end), extract.wire_rate(tr_b, width, end)
        assert np.array_equal(a.y, b.y)
        read = Run("x", full, meta).bytes_read
        ga = extract.goodput(extract.delivered(tr_a, end, read), width, end)
        gb = extract.goodput(extract.delivered(tr_b, end, read), width, end)
        assert np.allclose(ga.y, gb.y)
        sa, sb = extract.segment_counts(tr_a, width, end), extract.segment_counts(tr_b, width, end)
        assert all(np.array_equal(sa[k].y, sb[k].y) for k in sa)


def test_series_keep_their_extremes_and_ends(traced: Path) -> None:
    full, red, _ = _both(traced)
    for column in ("sk_rmem_alloc", "sk_rcvbuf", "recv_q", "window_clamp"):
        a, b = extract.rcv_series(full, column), extract.rcv_series(red, column)
        assert (a.y.max(), a.y.min(), a.y[-1], a.t[-1]) == (b.y.max(), b.y.min(), b.y[-1], b.t[-1])
    a, b = extract.sender_inflight(full), extract.sender_inflight(red)
    assert a.y.max() == b.y.max()


def test_a_kind_past_the_mark_limit_is_one_mark_per_bin_with_its_count(traced: Path,
                                                                        monkeypatch) -> None:
    full, _, meta = _both(traced)
    marks = extract.all_marks(full)
    kind = max(marks, key=lambda k: len(marks[k]))
    total = len(marks[kind])
    if total < 3:
        pytest.skip("no kind with enough marks")
    monkeypatch.setattr(reduce, "MAX_MARKS", 2)
    red = load_reduced(traced, meta=meta)
    m = extract.all_marks(red)[kind]
    assert len(m) == total and m.counts is not None and int(m.counts.sum()) == total
    assert len(m.t) <= 2
    report_html(Run("reduced", red, meta))      # draws


def test_load_trace_reduces_long_traces_only(traced: Path, monkeypatch) -> None:
    tr, _ = load_trace(traced)
    assert tr.reduced is None
    monkeypatch.setattr(reduce, "REDUCE_ROWS", 100)
    tr, meta = load_trace(traced)
    assert tr.reduced is not None and tr.n <= tr.reduced.rows
    page = report_html(Run("long", tr, meta))
    assert "Receive memory" in page or "memory" in page


def test_fine_bins_divide_every_report_width() -> None:
    for end_s in (0.5, 2, 20, 60, 300, 2100, 86400):
        f = reduce.fine_width(end_s)
        for other in (end_s, end_s * 3, end_s * 17):
            w = extract.rate_width(other)
            assert abs(w / f - round(w / f)) < 1e-9 and w >= f
