"""The single-run report: one self-contained HTML file from a trace file."""

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


def test_report_is_self_contained(fill_report) -> None:
    page, _ = fill_report
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]+src\s*=", page, re.I)
    assert not re.search(r"<link[^>]+href\s*=\s*[\"']https?:", page, re.I)
    assert "Plotly.newPlot" in page
    assert len(page) > 3_000_000          # plotly.js itself is inline
    assert len(page) < 8_000_000


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
