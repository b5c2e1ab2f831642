"""The host report (tcpsim/report/host.py): sockstat mem against tcp_mem with pressure shaded,
per class what each run gave it, the sweep figure, the page and its tables, and the commands
that write it (run HOST --report, report HOST-TRACE, compare HOST)."""

from __future__ import annotations

import json

import pytest

from tcpsim.host.run import load_host_with, run_host
from tcpsim.host.scenario import read_host_text
from tests.host_files import tiny_host
from tcpsim.report.host import (classes_figure, host_doc, host_rows, host_run, memory_figure,
                                pressure_intervals, run_label, sweep_figure, write_host_report)

TINY = tiny_host("2s", bad=3, good=4, lifetime="500ms")


@pytest.fixture(scope="module")
def tiny_runs():
    """The tiny host (reaches pressure at 0.6 s) stock and with shrink-window."""
    stock = run_host(read_host_text(TINY), engine="python")
    fixed = run_host(read_host_text(tiny_host("2s", bad=3, good=4, lifetime="500ms",
                                               policies=("shrink-window",))),
                     engine="python")
    return [host_run(run_label(stock.as_json()), stock), host_run(run_label(fixed.as_json()), fixed)]


def test_pressure_intervals_run_from_the_first_sample_in_to_the_first_out():
    doc = {"duration_s": 1.0, "sockstat": [
        {"t_s": t / 10, "mem": 0, "inuse": 0, "pressure": p}
        for t, p in enumerate([0, 1, 1, 0, 0, 1, 0, 0, 1, 1])]}
    assert pressure_intervals(doc) == [(0.1, 0.3), (0.5, 0.6), (0.8, 1.0)]
    assert pressure_intervals({"duration_s": 1.0, "sockstat": []}) == []


def test_memory_figure_shades_pressure_and_draws_tcp_mem(tiny_runs):
    stock, fixed = tiny_runs
    assert stock.label == "linux-6.1" and fixed.label == "linux-6.1 + shrink-window"
    fig = memory_figure(tiny_runs)
    names = [t.name for t in fig.data]
    assert "linux-6.1: under memory pressure" in names
    shade = fig.data[names.index("linux-6.1: under memory pressure")]
    onset = stock.doc["pressure"]["onset_s"]
    assert shade.x[0] == onset and shade.fill == "toself"
    mem = fig.data[names.index("linux-6.1: sockstat mem")]
    assert max(mem.y) == stock.doc["pressure"]["peak_sockstat_mem"]
    assert [n for n in names if n.startswith("tcp_mem")] == [
        "tcp_mem[0] (min) = 30", "tcp_mem[1] (pressure) = 40", "tcp_mem[2] (max) = 60"]


def test_classes_figure_bars_are_the_class_table(tiny_runs):
    fig = classes_figure(tiny_runs)
    # 4 metrics x 2 classes x 2 runs
    assert len(fig.data) == 16
    bars = {(t.x[0], t.hovertemplate.split(":")[0], t.hovertemplate.split(": ")[1]): t.y[0]
            for t in fig.data}
    for r in tiny_runs:
        for row in r.doc["classes"]:
            assert bars[(r.label, row["class"], "goodput")] == row["goodput_mbps"]
            assert bars[(r.label, row["class"], "drops")] == row["drops"]
            assert bars[(r.label, row["class"], "zero windows sent")] == row["zero_windows_sent"]


def test_rows_give_deltas_against_the_first_run(tiny_runs):
    rows = {r["key"]: r for r in host_rows(tiny_runs)}
    stock, fixed = tiny_runs
    assert rows["policies"]["values"] == {stock.label: "none", fixed.label: "shrink-window"}
    mem = rows["peak_sockstat_mem"]
    assert mem["deltas"][fixed.label] == (fixed.doc["pressure"]["peak_sockstat_mem"]
                                          - stock.doc["pressure"]["peak_sockstat_mem"])
    assert rows["bad.drops"]["values"][stock.label] == stock.doc["classes"][0]["drops"]
    assert rows["TcpExtTCPMemoryPressures"]["values"][stock.label] == 1


def test_sweep_figure_one_line_per_series_against_the_field(tiny_runs):
    stock, fixed = tiny_runs
    fig = sweep_figure([("6.1", 3, stock), ("6.1", 0, fixed)], "class.bad.count")
    line = next(t for t in fig.data if t.name == "6.1" and t.showlegend)
    assert list(line.x) == [0, 3]                                   # sorted by the field
    assert list(line.y) == [fixed.doc["pressure"]["in_pressure_ms"] / 1000,
                            stock.doc["pressure"]["in_pressure_ms"] / 1000]


def test_page_loads_plotly_from_beside_it(tiny_runs, tmp_path):
    from tcpsim.report.html import plotly_js_name
    out = write_host_report(tiny_runs, tmp_path / "h.html")
    page = out.read_text()
    assert f'src="{plotly_js_name()}"' in page and (tmp_path / plotly_js_name()).is_file()
    assert "sockstat mem against tcp_mem" in page and "class bad" in page
    with pytest.raises(ValueError, match="duplicate"):
        write_host_report([tiny_runs[0], tiny_runs[0]], tmp_path / "x.html")


def test_host_trace_reads_back_as_the_run(tmp_path):
    from tcpsim.host.outputs import write_host_trace
    r = run_host(read_host_text(TINY), engine="python")
    write_host_trace(r, tmp_path / "h.parquet")
    assert host_doc(tmp_path / "h.parquet") == json.loads(json.dumps(r.as_json()))
    with pytest.raises(ValueError, match="not a host trace"):
        import pyarrow as pa
        import pyarrow.parquet as pq
        pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
        host_doc(tmp_path / "other.parquet")


# -- the commands ------------------------------------------------------------------------------

def test_run_host_report_and_report_of_the_host_trace(tmp_path, monkeypatch, capsys):
    from cli_entry import run_main
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    code, out, err = run_main(["run", str(f), "--engine", "python", "--report",
                               str(tmp_path / "r.html"), "--trace", str(tmp_path / "h.parquet")],
                              monkeypatch, capsys)
    assert code == 0, err
    assert f"report: {tmp_path / 'r.html'}" in out and (tmp_path / "r.html").is_file()
    code, out, err = run_main(["report", str(tmp_path / "h.parquet")], monkeypatch, capsys)
    assert code == 0, err
    page = (tmp_path / "h.html").read_text()
    assert "tiny under linux-6.1" in page and "sockstat mem" in page


def test_compare_host_variants(tmp_path, monkeypatch, capsys):
    from cli_entry import run_main
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    code, out, err = run_main(["compare", str(f), "--engine", "python", "--json", "--html",
                               str(tmp_path / "c.html"), "--profile", "linux-6.1", "--set",
                               "class.bad.count=0", "--vs", "linux-6.1"], monkeypatch, capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["runs"] == ["linux-6.1 + class.bad.count=0", "linux-6.1"]
    rows = {r["key"]: r["values"] for r in doc["rows"]}
    assert rows["bad.connections"] == {"linux-6.1 + class.bad.count=0": 0, "linux-6.1": 3}
    assert rows["TcpExtTCPMemoryPressures"]["linux-6.1"] == 1
    assert (tmp_path / "c.html").is_file()


@pytest.mark.parametrize("args,needle", [
    (["--pcap", "x.pcap"], "--pcap: not for a host comparison"),
    (["--runs", "3"], "--runs: not for a host comparison"),
    (["--set", "class.bad.count=-1"], "class.bad.count"),
])
def test_compare_host_bad_input_one_line(tmp_path, monkeypatch, capsys, args, needle):
    from cli_entry import run_main
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    code, out, err = run_main(["compare", str(f), "--engine", "python", "--profile", "linux-6.1",
                               "--vs", "linux-6.1", "--policy", "shrink-window", *args],
                              monkeypatch, capsys)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcpsim: error:") and needle in lines[0], err


def test_load_host_with_sets_is_what_compare_uses():
    h = load_host_with("host-seed-mix", sets=(("class.bad.count", 2),))
    assert h.classes[0].count == 2


def test_host_files_that_are_not_traces_say_what_they_are(tmp_path, monkeypatch, capsys):
    from cli_entry import run_main
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    code, out, err = run_main(["run", str(f), "--engine", "python", "--trace",
                               str(tmp_path / "h.parquet"), "--connections"], monkeypatch, capsys)
    assert code == 0, err
    code, out, err = run_main(["report", str(tmp_path / "h.connections.parquet")], monkeypatch,
                              capsys)
    lines = err.strip().splitlines()
    assert code != 0 and len(lines) == 1 and "table of its connections" in lines[0]
    assert f"tcpsim report {tmp_path / 'h.parquet'}" in lines[0]
    code, out, err = run_main(["compare", "seed-never-reads", "-d", "50ms", "--trace",
                               str(tmp_path / "h.parquet"), "--profile", "linux-6.1", "--html",
                               str(tmp_path / "x.html")], monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code != 0 and len(lines) == 1 and "a host run's, not a connection's trace" in lines[0]


def test_a_memcg_hosts_report_shows_the_cgroup(tmp_path):
    """With a `[memcg]` the report draws the cgroup's usage against its limit (the cgroup, not
    tcp_mem, stops these receivers), says so at a glance, and tables its numbers under the
    cgroup files' names; a run without one shows "—" there."""
    from pathlib import Path

    from tcpsim.host.scenario import load_host
    from tcpsim.report.host import host_report_html
    fix = Path(__file__).resolve().parents[1] / "fixtures" / "host" / "memcg-v1-4.toml"
    r = run_host(load_host(fix), engine="python", timing="exact")
    held = host_run("memcg", r)
    fig = memory_figure([held])
    names = [t.name for t in fig.data]
    usage = fig.data[names.index("memcg (v1) usage")]
    assert max(usage.y) == r.memcg["peak_usage_pages"] == 100
    assert "memcg limit = 100" in names
    rows = {row["key"]: row for row in host_rows([held])}
    assert rows["memcg.refused_charges"]["values"]["memcg"] == r.memcg["refused_charges"] > 0
    assert rows["memcg.memory.kmem.tcp.max_usage_in_bytes"]["values"]["memcg"] == 409600
    page = host_report_html([held])
    assert "memory cgroup" in page and "memcg (v1) peak 100 of 100 pages" in page
    free = dict(held.doc)
    free.pop("memcg")
    both = host_rows([held, host_run("none", free)])
    row = next(x for x in both if x["key"] == "memcg.refused_charges")
    assert row["values"]["none"] is None
    assert not [x for x in host_rows([host_run("none", free)]) if x["section"] == "memory cgroup"]
