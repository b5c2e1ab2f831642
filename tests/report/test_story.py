"""The one-line story at the top of a page says what happened, in words."""

from __future__ import annotations

from tcpsim.report.runs import make_run
from tcpsim.report.story import headline, memory_trend
from tcpsim.report.summary import summarize


def _story(cols, meta) -> str:
    run = make_run("r", cols, meta)
    return " · ".join(headline(summarize(run.trace, run.meta), memory_trend(run.trace, run.end_s)))


def test_growth_without_the_patch_reads_as_growing(growth_runs) -> None:
    text = _story(*growth_runs["stock"])
    assert "still growing at the end" in text
    assert "no zero window advertised (wanted" in text
    assert "no data segment dropped" in text


def test_growth_with_the_patch_reads_as_bounded_with_zero_windows(growth_runs) -> None:
    text = _story(*growth_runs["shrink"])
    assert "skmem_r stayed within" in text
    assert "zero window" in text and "no zero window" not in text


def test_a_dead_connection_says_so() -> None:
    s = {"peak_sk_rmem_alloc": 300 << 20, "final_sk_rmem_alloc": 290 << 20, "zero_windows_sent": 0,
         "want_zero_window": 0, "data_segments_dropped": 3, "drop_reasons": "PROTO_MEM 3",
         "error": "ETIMEDOUT", "died_at_s": 1124.5, "goodput_bps": 8000}
    text = " · ".join(headline(s, ("grew", 179.5)))
    assert "grew to 300 MiB (at 180 s)" in text
    assert "3 data segments dropped (PROTO_MEM 3)" in text
    assert "connection died at 1124.5 s: ETIMEDOUT" in text
