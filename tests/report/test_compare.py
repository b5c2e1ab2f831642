"""Comparisons: deltas against the first run, the terminal and JSON tables, the page."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tcpsim.report import build_comparison, compare_runs, format_table, table_json
from tcpsim.report.collapse import collapse_latencies
from tcpsim.report.tables import delta, fmt_delta, make_row
from tcpsim.report.trace import Trace
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import load_scenario


@pytest.fixture(scope="module")
def compared(growth_runs):
    runs = [("6.1.59", *growth_runs["stock"]), ("6.1.59 shrink", *growth_runs["shrink"])]
    page, rows = compare_runs(runs)
    return page, rows, growth_runs


def _row(rows, section, key):
    found = [r for r in rows if r["section"] == section and r["key"] == key]
    assert len(found) == 1, (section, key)
    return found[0]


def test_counter_deltas_are_against_the_first_run(compared) -> None:
    _, rows, runs = compared
    a, b = runs["stock"][1]["counters"], runs["shrink"][1]["counters"]
    counter_rows = [r for r in rows if r["section"] == "counters"]
    assert {r["key"] for r in counter_rows} == {k for k in a if a[k] or b[k]}
    for r in counter_rows:
        assert r["values"] == {"6.1.59": a[r["key"]], "6.1.59 shrink": b[r["key"]]}
        assert r["deltas"] == {"6.1.59 shrink": b[r["key"]] - a[r["key"]]}


def test_summary_tells_the_story(compared) -> None:
    _, rows, runs = compared
    peak = _row(rows, "summary", "peak_sk_rmem_alloc")
    stock, shrink = peak["values"]["6.1.59"], peak["values"]["6.1.59 shrink"]
    assert stock == runs["stock"][1]["summary"]["peak_sk_rmem_alloc"]
    assert peak["deltas"]["6.1.59 shrink"] == shrink - stock < 0
    zw = _row(rows, "summary", "zero_windows_sent")
    assert zw["values"]["6.1.59"] == 0 and zw["values"]["6.1.59 shrink"] >= 1
    cfg = _row(rows, "config", "net.ipv4.tcp_shrink_window")
    assert cfg["values"] == {"6.1.59": 0, "6.1.59 shrink": 1}


def test_format_table_prints_values_and_signed_deltas(compared) -> None:
    _, rows, runs = compared
    text = format_table(rows)
    assert "[summary]" in text and "[counters]" in text and "[config]" in text
    assert "Δ vs 6.1.59" in text.splitlines()[1]
    want = runs["stock"][1]["counters"]["TcpExtTCPWantZeroWindowAdv"]
    line = next(ln for ln in text.splitlines() if ln.startswith("TcpExtTCPWantZeroWindowAdv"))
    assert f"{want:,}" in line and f"−{want:,}" in line


def test_table_json_round_trips(compared) -> None:
    _, rows, _ = compared
    doc = json.loads(table_json(rows))
    assert doc["runs"] == ["6.1.59", "6.1.59 shrink"]
    assert doc["rows"] == json.loads(json.dumps(rows))


def test_comparison_page_loads_plotly_from_beside_it_and_overlays_the_runs(compared) -> None:
    from tcpsim.report.html import plotly_js_name
    page, _, _ = compared
    assert re.findall(r"<script[^>]+src\s*=\s*[\"']([^\"']+)", page, re.I) == [plotly_js_name()]
    assert "6.1.59: skmem_r (sk_rmem_alloc)" in page and "6.1.59 shrink: skmem_r" in page
    assert "What differs" in page and "net.ipv4.tcp_shrink_window" in page


def test_delta_and_its_text() -> None:
    assert delta(5, 3) == 2 and delta("x", 3) is None and delta(None, 1) is None
    assert fmt_delta(-2048, "bytes", 1024, 3072) == "−2 KiB (×0.333)"
    assert fmt_delta(0, "count") == ""
    row = make_row("summary", "k", "k", "count", {"a": 10, "b": 7, "c": None})
    assert row["deltas"] == {"b": -3, "c": None}


def test_labels_must_be_distinct(growth_runs) -> None:
    cols, meta = growth_runs["stock"]
    with pytest.raises(ValueError, match="duplicate"):
        compare_runs([("a", cols, meta), ("a", cols, meta)])
    with pytest.raises(ValueError, match="no runs"):
        compare_runs([])


def test_collapse_latency_hook(growth_runs) -> None:
    cols, meta = growth_runs["stock"]
    old = {k: v for k, v in cols.items() if k != "collapse_ns"}      # a trace from before
    assert collapse_latencies(Trace.from_columns(old)) is None
    page, _ = compare_runs([("plain", old, meta)])
    assert "no <code>collapse_ns</code> column" in page
    page, _ = compare_runs([("timed", cols, meta)])                    # timed, none happened
    assert "no run collapsed its queues" in page
    # the cost model adds a collapse_ns column: the histogram appears, fed from it
    n = len(cols["t_ns"])
    with_cost = dict(cols, event=list(cols["event"]), collapse_ns=[-1] * n)
    rcv = [i for i in range(n) if cols["sock"][i] == "rcv"]
    for k, i in enumerate(rcv[100:105]):
        with_cost["event"][i] = "collapse"
        with_cost["collapse_ns"][i] = (k + 1) * 10_000
    lat = collapse_latencies(Trace.from_columns(with_cost))
    assert list(lat) == pytest.approx([10.0, 20.0, 30.0, 40.0, 50.0])
    page, _ = compare_runs([("costed", with_cost, meta)])
    assert "Collapse latency (time spent in each tcp_collapse)" in page
    assert "no <code>collapse_ns</code> column" not in page


def test_build_comparison_from_trace_files(tmp_path) -> None:
    sc = load_scenario("seed-rcvbuf32k-fill")
    paths = []
    for label, rmem in (("32k", None), ("wscale0", {"net.ipv4.tcp_adv_win_scale": 1})):
        p = tmp_path / f"{label}.parquet"
        run(sc, RunOptions(trace=p, sysctl=rmem))
        paths.append((label, p))
    rows = build_comparison(paths, tmp_path / "cmp.html")
    page = (tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert "32k vs wscale0" in page
    assert page.count("Per ingress packet") == 2          # one per short run
    adv = _row(rows, "config", "net.ipv4.tcp_adv_win_scale")
    assert adv["values"] == {"32k": 0, "wscale0": 1} and adv["deltas"] == {"wscale0": 1}
    assert np.isfinite(len(rows))


def test_the_comparison_names_each_runs_conditions(tmp_path):
    import tcpsim
    c = tcpsim.compare("seed-never-reads", ["linux-6.1", "linux-6.18"], duration="50ms",
                       timing="exact")
    page = c.report(tmp_path / "c.html").read_text()
    assert "<th>conditions</th>" in page and "timing exact · 0.05 s · seed 1" in page
