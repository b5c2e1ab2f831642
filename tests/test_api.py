"""The public API (tcpsim.run, compare, sweep, load_trace, profiles, scenarios): scenario and duration
forms, bad arguments named in the error, what a Run holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import tcpsim
from tcpsim.runner import RunOptions, run as runner_run
from tcpsim.scenario import builtin_experiment, load_scenario

NAME = "seed-rcvbuf32k-fill"            # SO_RCVBUF 32 KiB fill: a few hundred events per second
SHORT = "300ms"


@pytest.fixture(scope="module")
def short_run() -> tcpsim.Run:
    return tcpsim.run(NAME, profile="linux-6.18", duration=SHORT)


def _same_numbers(a: dict, b: dict) -> bool:
    return {k: v for k, v in a.items() if k != "wall_s"} == {k: v for k, v in b.items() if k != "wall_s"}


def test_the_api_is_the_top_level_and_all_of_it_is_in___all__():
    for name in ("run", "compare", "sweep", "load_trace", "profiles", "Run", "Comparison"):
        assert name in tcpsim.__all__
        assert callable(getattr(tcpsim, name))
    assert tcpsim.run is tcpsim.api.run


def test_no_submodule_shadows_an_api_name():
    """The catalogue is tcpsim.catalog and the sweep machinery tcpsim.sweeps: importing them
    (as the CLI and the workers do) leaves tcpsim.profiles and tcpsim.sweep the API's
    functions, and tcpsim.experiments the data package of the scenario files."""
    import types

    import tcpsim.catalog
    import tcpsim.experiments
    import tcpsim.sweeps
    for name in tcpsim.__all__:
        assert not isinstance(getattr(tcpsim, name), types.ModuleType), name
    assert tcpsim.profiles is tcpsim.api.profiles and tcpsim.sweep is tcpsim.api.sweep
    assert tcpsim.scenarios is tcpsim.api.scenarios
    assert isinstance(tcpsim.experiments, types.ModuleType)
    assert callable(tcpsim.catalog.get_profile) and callable(tcpsim.sweeps.parse_axis)
    with pytest.raises(AttributeError):
        tcpsim.no_such_thing  # noqa: B018


def test_api_names_are_free_in_a_fresh_interpreter():
    """Whatever is imported first, the API names resolve to the API (no module in the way)."""
    code = ("import tcpsim.catalog, tcpsim.sweeps, tcpsim.experiments, tcpsim, types; "
            "print([n for n in tcpsim.__all__ if isinstance(getattr(tcpsim, n), types.ModuleType)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent, check=True)
    assert out.stdout.strip() == "[]"


def test_import_tcpsim_loads_neither_the_simulator_nor_plotly_nor_arrow():
    code = ("import sys, tcpsim; heavy = [m for m in ('tcpsim.api', 'tcpsim.engine', 'plotly', "
            "'pyarrow', 'numpy', 'simpy') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parent.parent, check=True)
    assert out.stdout.strip() == "[]"


def test_a_run_gives_the_runners_numbers(short_run):
    result, _ = runner_run(load_scenario(NAME), RunOptions(profile="linux-6.18",
                                                           duration=300_000_000))
    assert _same_numbers(short_run.summary, result.summary)
    assert short_run.counters == result.counters
    assert short_run.ss == result.ss
    assert short_run.profile == "linux-6.18" and short_run.scenario == NAME


@pytest.mark.parametrize("form", ["name", "path", "pathlib", "dict"])
def test_every_scenario_form_runs_the_same_workload(form, short_run):
    path = builtin_experiment(NAME)
    scenario = {"name": NAME, "path": str(path), "pathlib": path,
                "dict": tcpsim.scenario_dict(NAME)}[form]
    r = tcpsim.run(scenario, profile="linux-6.18", duration=SHORT)
    assert _same_numbers(r.summary, short_run.summary)


def test_an_edited_scenario_dict_changes_the_run():
    sc = tcpsim.scenario_dict(NAME)
    sc.setdefault("receiver", {})["device"] = "nic-4k"
    veth = tcpsim.run(NAME, duration=SHORT, trace=False)
    nic = tcpsim.run(sc, duration=SHORT, trace=False)
    assert nic.summary["peak_sk_rmem_alloc"] != veth.summary["peak_sk_rmem_alloc"]


@pytest.mark.parametrize("duration", ["0.3s", "300ms", 0.3, "0.005min"])
def test_durations_are_strings_or_seconds(duration):
    r = tcpsim.run(NAME, duration=duration, trace=False)
    assert r.summary["duration_s"] == pytest.approx(0.3)


def test_integer_seconds():
    r = tcpsim.run(NAME, duration=1, trace=False)
    assert r.summary["duration_s"] == 1


@pytest.mark.parametrize("kwargs, exc, starts", [
    ({"scenario": "no-such-experiment"}, ValueError, "scenario: no-such-experiment"),
    ({"scenario": 42}, TypeError, "scenario:"),
    ({"scenario": {"reader": {"kind": "sometimes"}}}, ValueError, "scenario: reader.kind"),
    ({"duration": "soon"}, ValueError, "duration:"),
    ({"duration": -1}, ValueError, "duration:"),
    ({"duration": 0}, ValueError, "duration:"),
    ({"duration": [1]}, TypeError, "duration:"),
    ({"profile": "linux-9.9"}, ValueError, "profile: unknown profile"),
    ({"profile": 6.1}, TypeError, "profile:"),
    ({"policy": "no-such-patch"}, ValueError, "policy: unknown patch"),
    ({"policy": "./missing.py:Patch"}, ValueError, "policy ./missing.py:Patch"),
    ({"policy": [1]}, TypeError, "policy:"),
    ({"sysctl": {"net.ipv4.tcp_nonsense": 1}}, ValueError, "sysctl net.ipv4.tcp_nonsense"),
    ({"sysctl": ["net.ipv4.tcp_shrink_window=1"]}, TypeError, "sysctl:"),
    ({"seed": "1"}, TypeError, "seed:"),
    ({"hz": 7}, ValueError, "hz:"),
    ({"engine": "rust"}, ValueError, "engine: unknown engine 'rust'"),
])
def test_bad_arguments_name_themselves(kwargs, exc, starts):
    kwargs = {"scenario": NAME, "duration": "10ms", **kwargs}
    with pytest.raises(exc) as info:
        tcpsim.run(kwargs.pop("scenario"), **kwargs)
    assert str(info.value).startswith(starts), str(info.value)


def test_engine_none_and_python_are_the_same_run():
    a = tcpsim.run(NAME, duration="50ms", engine=None, trace=False)
    b = tcpsim.run(NAME, duration="50ms", engine="python", trace=False)
    assert _same_numbers(a.summary, b.summary)


def test_the_trace_is_an_arrow_table_pandas_and_polars_read(short_run):
    tr = short_run.trace
    assert isinstance(tr, pa.Table)
    assert {"t_ns", "sock", "event", "sk_rmem_alloc", "sk_rcvbuf", "rcv_wnd"} <= set(tr.column_names)
    df = tr.to_pandas()
    assert len(df) == tr.num_rows > 0
    assert df[df["sock"] == "rcv"]["sk_rcvbuf"].max() == short_run.summary["peak_sk_rcvbuf"]
    polars = pytest.importorskip("polars")
    assert polars.from_arrow(tr).height == tr.num_rows


def test_figures_are_plotly_figures_with_data(short_run):
    import plotly.graph_objects as go
    for name in ("memory", "window", "delivery", "events"):
        fig = short_run.figure(name)
        assert isinstance(fig, go.Figure)
        assert any(len(t.x) for t in fig.data if getattr(t, "x", None) is not None), name
    with pytest.raises(ValueError, match="figure: unknown figure 'nope'; choose one of memory"):
        short_run.figure("nope")


def test_report_and_repr(short_run, tmp_path):
    page = short_run.report(tmp_path / "r" / "run.html")
    assert page.is_file() and "Plotly.newPlot" in page.read_text()
    text = repr(short_run)
    assert text.startswith(f"<tcpsim.Run {NAME} under linux-6.18: duration_s=0.3")
    assert "peak_sk_rcvbuf=65536" in text and "trace rows" in text


def test_a_run_without_trace_says_so():
    r = tcpsim.run(NAME, duration="10ms", trace=False)
    with pytest.raises(ValueError, match="trace: this run kept no trace"):
        r.trace  # noqa: B018


def test_load_trace_round_trips_a_saved_trace(short_run, tmp_path):
    path = short_run.save_trace(tmp_path / "t.parquet")
    loaded = tcpsim.load_trace(path)
    assert loaded.summary == short_run.meta["summary"]
    assert loaded.counters == short_run.counters
    assert loaded.trace.num_rows == short_run.trace.num_rows
    assert loaded.scenario == NAME and loaded.profile == "linux-6.18"
    assert len(loaded.figure("memory").data) > 0


def test_load_trace_of_a_cli_trace(tmp_path):
    out = tmp_path / "cli.parquet"
    runner_run(load_scenario(NAME), RunOptions(duration=100_000_000, trace=out))
    assert tcpsim.load_trace(out).summary["duration_s"] == 0.1


def test_load_trace_bad_paths(tmp_path):
    with pytest.raises(ValueError, match="path: .*no such trace file"):
        tcpsim.load_trace(tmp_path / "missing.parquet")
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    with pytest.raises(ValueError, match="path: .*not a readable tcpsim trace"):
        tcpsim.load_trace(junk)
    other = tmp_path / "other.parquet"
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"x": [1]}), other)
    with pytest.raises(ValueError, match="path: .*no column t_ns, sock, event"):
        tcpsim.load_trace(other)


def test_compare_labels_table_figures_report(tmp_path):
    c = tcpsim.compare(NAME, ["linux-6.1", {"profile": "linux-6.1", "policy": "shrink-window"}],
                       duration="200ms")
    assert list(c.runs) == ["linux-6.1", "linux-6.1 + shrink-window"]
    assert c.runs["linux-6.1 + shrink-window"].profile == "linux-6.1+shrink-window"
    df = c.table.to_pandas()
    assert list(df.columns) == ["section", "metric", "label", "unit", "linux-6.1",
                                "linux-6.1 + shrink-window"]
    assert "peak_sk_rcvbuf" in set(df["metric"])
    # numbers as numbers: the table's values are the runs' summaries, typed
    assert str(c.table.schema.field("linux-6.1").type) in ("int64", "double")
    peak = df.set_index("metric").loc["peak_sk_rcvbuf", "linux-6.1"]
    assert peak == c.runs["linux-6.1"].summary["peak_sk_rcvbuf"]
    assert c.text["profile"] == {"linux-6.1": "linux-6.1",
                                 "linux-6.1 + shrink-window": "linux-6.1+shrink-window"}
    assert "peak limit (skmem_rb)" in repr(c) and "<table>" in c._repr_html_()
    fig = c.figure("memory")
    assert {t.legendgroup for t in fig.data} >= {"linux-6.1", "linux-6.1 + shrink-window"} or \
        any("linux-6.1 + shrink-window" in (t.name or "") for t in fig.data)
    page = c.report(tmp_path / "c.html")
    assert "linux-6.1 + shrink-window" in page.read_text()


def test_compare_named_variants_and_bad_variants():
    c = tcpsim.compare(NAME, {"old": "linux-6.1", "new": {"profile": "linux-6.18"}}, duration="50ms")
    assert list(c.runs) == ["old", "new"] and c.runs["new"].profile == "linux-6.18"
    with pytest.raises(ValueError, match="variants: compare needs at least two"):
        tcpsim.compare(NAME, ["linux-6.1"])
    with pytest.raises(ValueError, match="variants: two variants are labelled 'linux-6.1'"):
        tcpsim.compare(NAME, ["linux-6.1", "linux-6.1"])
    with pytest.raises(ValueError, match="variants: unknown key colour"):
        tcpsim.compare(NAME, [{"profile": "linux-6.1", "colour": "red"}, "linux-6.18"])
    with pytest.raises(TypeError, match="variants:"):
        tcpsim.compare(NAME, "linux-6.1")


def test_sweep_rows_match_single_runs():
    t = tcpsim.sweep(NAME, {"profile": ["linux-6.1", "linux-6.18"]}, duration="100ms", jobs=1)
    rows = t.to_pylist()
    assert [r["profile"] for r in rows] == ["linux-6.1", "linux-6.18"]
    single = tcpsim.run(NAME, profile="linux-6.18", duration="100ms", trace=False)
    assert rows[1]["peak_sk_rmem_alloc"] == single.summary["peak_sk_rmem_alloc"]
    assert rows[1]["counter.TcpExtTCPRcvCoalesce"] == single.counters["TcpExtTCPRcvCoalesce"]
    assert all(r["error"] == "" for r in rows)


def test_compare_and_sweep_take_the_options_run_takes():
    exact = tcpsim.run(NAME, profile="linux-6.1", duration="200ms", timing="exact", trace=False)
    c = tcpsim.compare(NAME, ["linux-6.1", "linux-6.18"], duration="200ms", timing="exact")
    assert c.runs["linux-6.1"].summary == {**exact.summary, "wall_s": c.runs["linux-6.1"].summary["wall_s"]}
    t = tcpsim.sweep(NAME, {"profile": ["linux-6.1"]}, duration="200ms", timing="exact", jobs=1)
    assert t.column("peak_sk_rmem_alloc").to_pylist() == [exact.summary["peak_sk_rmem_alloc"]]
    with pytest.raises(ValueError, match="^timing"):
        tcpsim.compare(NAME, ["linux-6.1", "linux-6.18"], duration="10ms", timing="warp")
    with pytest.raises(ValueError, match="^timing"):
        tcpsim.sweep(NAME, {"profile": ["linux-6.1"]}, duration="10ms", timing="warp", jobs=1)


def test_a_sweep_prints_as_a_table():
    t = tcpsim.sweep(NAME, {"profile": ["linux-6.1", "linux-6.18"]}, duration="50ms", jobs=1)
    text = repr(t)
    assert "2 points" in text and "rcvbuf" in text and "pyarrow.Table" not in text
    rows = [ln.split() for ln in text.splitlines()[1:] if ln.split()[:1] in (["0"], ["1"])]
    assert [r[1] for r in rows] == ["linux-6.1", "linux-6.18"]     # header: one or two lines
    assert "<table" in t._repr_html_() and t.num_rows == len(t) == 2
    assert isinstance(t.arrow, pa.Table) and t.to_pandas().shape[0] == 2


def test_sweep_of_a_dict_scenario():
    sc = tcpsim.scenario_dict(NAME)
    t = tcpsim.sweep(sc, {"receiver.device": ["veth", "nic-4k"]}, duration="100ms", jobs=1)
    peaks = t.column("peak_sk_rmem_alloc").to_pylist()
    assert len(peaks) == 2 and peaks[0] != peaks[1]


@pytest.mark.parametrize("vary, exc, starts", [
    ({"colour": [1]}, ValueError, "vary colour: not a scenario field"),
    ({"link.rtt": "1ms"}, TypeError, "vary: link.rtt"),
    ({}, TypeError, "vary:"),
    ({"profile": ["linux-9"]}, ValueError, "sweep point 0 (profile=linux-9)"),
])
def test_sweep_bad_axes(vary, exc, starts):
    with pytest.raises(exc) as info:
        tcpsim.sweep(NAME, vary, duration="10ms", jobs=1)
    assert str(info.value).startswith(starts), str(info.value)


def test_catalogues():
    assert list(tcpsim.profiles())[:2] == ["linux-5.15", "linux-6.1"]
    assert all(isinstance(v, str) and v for v in tcpsim.profiles().values())
    assert "shrink-window" in tcpsim.patches()
    assert NAME in tcpsim.scenarios()


def test_a_trace_path_streams_to_parquet_like_the_cli(tmp_path):
    path = tmp_path / "t.parquet"
    r = tcpsim.run(NAME, duration="100ms", trace=path)
    assert r.trace_path == path and path.is_file()
    assert f"trace in {path}" in repr(r)
    cli = tmp_path / "cli.parquet"
    runner_run(load_scenario(NAME), RunOptions(duration=100_000_000, trace=cli))
    assert r.trace.equals(tcpsim.load_trace(cli).trace)


def test_tick_by_tick_gives_the_same_run():
    a = tcpsim.run(NAME, duration="100ms", skip=False, trace=False)
    b = tcpsim.run(NAME, duration="100ms", trace=False)
    assert _same_numbers(a.summary, b.summary)


# The CLI can switch to the API without changing its output: the pages are the same bytes.

def test_the_comparison_page_is_the_one_tcpsim_compare_writes(tmp_path):
    from tcpsim.report import compare_runs, format_table, simulate
    sc = load_scenario(NAME)
    runs = []
    for label, profile, pol in (("linux-6.1", "linux-6.1", ()),
                                ("linux-6.1 + shrink-window", "linux-6.1", ("shrink-window",))):
        cols, meta = simulate(sc, RunOptions(profile=profile, policies=pol, duration=200_000_000))
        runs.append((label, cols, meta))
    page, rows = compare_runs(runs)
    c = tcpsim.compare(NAME, ["linux-6.1", {"profile": "linux-6.1", "policy": "shrink-window"}],
                       duration="200ms")
    assert c.report(tmp_path / "c.html").read_text() == page
    assert format_table(c.rows) == format_table(rows)


def test_the_report_page_is_the_one_tcpsim_report_writes(tmp_path):
    from tcpsim.report import build_report
    trace = tmp_path / "t.parquet"
    runner_run(load_scenario(NAME), RunOptions(duration=200_000_000, trace=trace))
    expected = build_report(trace, tmp_path / "cli.html").read_text()
    assert tcpsim.load_trace(trace).report(tmp_path / "api.html").read_text() == expected


def test_sweep_in_worker_processes_gives_the_same_rows():
    """Workers unpickle tcpsim.sweeps' functions by name (tcpsim.sweeps.execute)."""
    vary = {"profile": ["linux-6.1", "linux-6.18"]}
    one = tcpsim.sweep(NAME, vary, duration="50ms", jobs=1).drop_columns(["wall_s"])
    two = tcpsim.sweep(NAME, vary, duration="50ms", jobs=2).drop_columns(["wall_s"])
    assert one.equals(two)


def test_static_images_for_viewers_without_javascript():
    import plotly.io as pio
    old = pio.renderers.default
    try:
        try:
            import kaleido  # noqa: F401
        except ImportError:
            assert tcpsim.use_static_images() is False and pio.renderers.default == old
            return
        assert tcpsim.use_static_images() is True
        assert "png" in pio.renderers.default.split("+")
        assert tcpsim.use_static_images(False) is False
        assert "png" not in pio.renderers.default.split("+")
    finally:
        pio.renderers.default = old
