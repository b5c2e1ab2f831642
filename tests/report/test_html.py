"""The single-run report: one HTML file from a trace file, plotly.js beside it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tcpsim.report import build_report
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import load_scenario


@pytest.fixture(scope="module")
def fill_report(tmp_path_factory) -> tuple[str, dict]:
    tmp = tmp_path_factory.mktemp("report")
    trace = tmp / "fill.parquet"
    result, _ = run(load_scenario("seed-rcvbuf32k-fill"), RunOptions(trace=trace))
    out = build_report(trace, tmp / "out" / "fill.html")
    return Path(out).read_text(encoding="utf-8"), result.summary


def test_report_needs_no_network_and_loads_plotly_from_beside_it(fill_report, tmp_path_factory) -> None:
    from tcpsim.report.html import plotly_js_name, standalone
    page, _ = fill_report
    assert page.startswith("<!DOCTYPE html>")
    srcs = re.findall(r"<script[^>]+src\s*=\s*[\"']([^\"']+)", page, re.I)
    assert srcs == [plotly_js_name()]     # one local file, written once per folder
    assert not re.search(r"<link[^>]+href\s*=\s*[\"']https?:", page, re.I)
    assert "Plotly.newPlot" in page
    assert len(page) < 2_000_000          # the data and the text, not the library
    one = standalone(page)                # a single file to send around
    assert not re.search(r"<script[^>]+src\s*=", one, re.I) and len(one) > 3_000_000


def test_write_page_writes_plotly_once_beside_the_pages(tmp_path) -> None:
    from tcpsim.report.html import page, plotly_js_name, write_page
    write_page(tmp_path / "a.html", page("a", "<p>a</p>"))
    js = tmp_path / plotly_js_name()
    first = js.stat().st_mtime_ns
    write_page(tmp_path / "b.html", page("b", "<p>b</p>"))
    assert js.stat().st_mtime_ns == first and js.stat().st_size > 3_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.html", "b.html", js.name]


def test_report_names_the_scenario_and_summarizes_it(fill_report) -> None:
    page, summary = fill_report
    assert "seed-rcvbuf32k-fill under linux-6.1" in page
    assert "SO_RCVBUF 32 KiB" in page                         # the description
    for label in ("peak memory (skmem_r)", "windows closed to zero", "data segments dropped",
                  "stalls", "goodput", "died at"):
        assert label in page
    assert "TcpExtTCPToZeroWindowAdv" in page                 # the counters table
    assert summary["zero_windows_sent"] >= 1


def test_report_contains_every_chart(fill_report) -> None:
    page, _ = fill_report
    for title in ("Receive memory", "Events:", "Receive window", "Delivered to the application",
                  "Throughput on the wire", "Sender:", "Received segments per",
                  "Per ingress packet"):
        assert title in page, title
    assert "no run collapsed its queues" in page   # timed traces without any collapse
