"""tcpsim.sweeps.report: the offline HTML page of a sweep -- figures, menus, the table."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tcpsim.core.constants import NS_PER_S
from tcpsim.runner import RunOptions
from tcpsim.sweeps import Results, build_points, parse_axis, run_sweep
from tcpsim.sweeps.report import ReportError, write_report

ROOT = Path(__file__).resolve().parents[2]
AXES = ["reader.bytes=1,1000", "link.rtt=5ms,20ms", "policy=none,shrink-window", "seed=1,2"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    axes = [parse_axis(a) for a in AXES]
    # apps on exact time: the slow readers' memory grows, as the page's figures expect
    points = build_points("seed-unbounded-growth", axes, RunOptions(duration=NS_PER_S // 2),
                          timing="exact")
    res = Results(root)
    res.prepare(axes, points, ["peak_sk_rmem_alloc", "counter.TcpExtTCPWantZeroWindowAdv"],
                name="demo", description="a demo", x="reader.bytes")
    run_sweep(points, jobs=1, results=res)
    return root, points


def figures(page: str) -> list[dict]:
    """The data of every plotly figure on the page."""
    calls = re.findall(r'Plotly\.newPlot\(\s*"[^"]+",\s*(\[.*?\]),\s*\{', page, flags=re.S)
    return [json.loads(c) for c in calls]


def test_the_page_has_lines_heatmaps_and_the_table_and_needs_no_network(results, tmp_path):
    root, points = results
    page = write_report(root, tmp_path / "r.html").read_text()
    from tcpsim.report.html import plotly_js_name
    assert "<script src" not in page and "cdn.plot.ly/plotly" not in page
    assert f"src='{plotly_js_name()}'" in page and (tmp_path / plotly_js_name()).is_file()
    assert "Plotly.newPlot" in page and len(page) < 1_000_000          # plotly.js beside it
    lines, heat = figures(page)
    # a line per combination of link.rtt x policy, per metric; seeds averaged
    assert len(lines) == 2 * 4 and all(t["type"] == "scatter" for t in lines)
    assert lines[0]["x"] == ["1", "1000"] and lines[0]["customdata"] == [2, 2]
    assert [t["visible"] for t in lines].count(True) == 4
    # heatmaps over reader.bytes x link.rtt, one per metric x policy
    assert len(heat) == 2 * 2 and heat[0]["type"] == "heatmap" and heat[0]["y"] == ["5ms", "20ms"]
    by = {(p.values["reader.bytes"], p.values["link.rtt"], p.values["policy"], p.values["seed"]): p
          for p in points}
    want = by[(1, "20ms", "none", 1)].summary["peak_sk_rmem_alloc"]
    assert heat[0]["z"][1][0] == want                                  # seeds agree: the mean
    assert page.count("<tr>") == 1 + 16 and "a demo" in page


def test_the_cli_report_and_its_errors(results, tmp_path):
    root, _ = results
    proc = subprocess.run([sys.executable, "-m", "tcpsim.cli", "sweep", "report", str(root),
                           "-o", str(tmp_path / "x.html"), "--metric", "drops", "--x", "link.rtt"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert figures((tmp_path / "x.html").read_text())[0][0]["x"] == ["5ms", "20ms"]
    from typer.testing import CliRunner
    from tcpsim.cli import app
    for args, needle in [([str(tmp_path)], "not a sweep results directory"),
                         ([str(root), "--metric", "bogus"], "--metric bogus: not a column"),
                         ([str(root), "--x", "hz"], "--x hz: not a varied axis")]:
        r = CliRunner().invoke(app, ["sweep", "report", *args])
        assert r.exit_code == 2 and r.stderr.count("\n") == 1 and needle in r.stderr, r.stderr
        assert r.stderr.startswith("tcpsim: error: ")


def test_a_sweep_with_one_axis_has_no_heatmap(tmp_path):
    axes = [parse_axis("reader.bytes=1,1000")]        # a reader that reads bytes (issue 31)
    points = build_points("seed-unbounded-growth", axes, RunOptions(duration=NS_PER_S // 4))
    res = Results(tmp_path)
    res.prepare(axes, points, [])
    run_sweep(points, jobs=1, results=res)
    page = write_report(tmp_path).read_text()
    assert len(figures(page)) == 1 and (tmp_path / "report.html").exists()


def test_nothing_stored_yet_is_an_error(tmp_path):
    axes = [parse_axis("seed=1,2")]
    res = Results(tmp_path)
    res.prepare(axes, build_points("seed-rcvbuf32k-fill", axes, RunOptions()), [])
    with pytest.raises(ReportError, match="no finished point stored yet"):
        write_report(tmp_path)


def test_sweep_axes_name_their_units_and_tick_bytes_in_binary():
    from tcpsim.sweeps.report import metric_axis, metric_unit
    assert metric_unit("peak_sk_rcvbuf") == "bytes" and metric_unit("goodput_mbps") == "Mbit/s"
    assert metric_unit("drops") == "count" and metric_unit("died_at_s") == "s"
    axis = metric_axis("peak_sk_rcvbuf", [131072, 29927320, None])
    assert axis["title"]["text"] == "peak_sk_rcvbuf (bytes)"
    assert any("MiB" in t for t in axis["ticktext"])
    assert metric_axis("drops", [0, 7])["tickvals"] is None
