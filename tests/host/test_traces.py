"""A host's per-connection traces, only where asked (tcpsim/host/traces.py): the selection,
one single-connection trace per selected connection beside the host trace, the same rows
from both engines, and bad selections as one error line."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tcpsim.engines import native_available
from tcpsim.host.populations import expand
from tcpsim.host.run import run_host
from tcpsim.host.scenario import read_host_text
from tests.host_files import connection_trace_tables, tiny_host
from tcpsim.host.traces import MAX_TRACED, ConnectionTraces, connection_path, select_connections
from tcpsim.scenario import ScenarioError
from tcpsim.trace.schema import COLUMN_NAMES

TINY = tiny_host()

ENGINES = ["python"] + (["native"] if native_available() else [])


def _plan():
    return expand(read_host_text(TINY))


def test_selection_by_class_and_number():
    plan = _plan()
    bad = {i for i, f in enumerate(plan.flows) if f.cls == 0}
    assert len(bad) == 2
    assert select_connections(["bad"], plan) == bad
    assert select_connections(["bad,4", "4"], plan) == bad | {4}
    good = {i for i, f in enumerate(plan.flows) if f.cls == 1}
    assert len(good) > 3                                       # churn: every generation
    assert select_connections(["good"], plan) == good


@pytest.mark.parametrize("sel,needle", [
    (["nope"], "--trace-connections nope: not a class of tiny (classes: bad, good)"),
    (["9999"], "--trace-connections 9999: tiny has connections 0-"),
    (["bad,-1"], "--trace-connections -1: not a class"),
])
def test_bad_selection_names_the_option(sel, needle):
    with pytest.raises(ScenarioError, match=None) as e:
        select_connections(sel, _plan())
    assert needle in str(e.value)


def test_too_many_files_is_an_error(monkeypatch):
    import tcpsim.host.traces as traces
    monkeypatch.setattr(traces, "MAX_TRACED", 2)
    with pytest.raises(ScenarioError, match="select at most 2"):
        traces.select_connections(["good"], _plan())
    assert MAX_TRACED >= 1000


@pytest.mark.parametrize("engine", ENGINES)
def test_each_selected_connection_is_a_single_connection_trace(engine, tmp_path):
    from tcpsim.api import load_trace
    sink = ConnectionTraces(tmp_path / "h.parquet")
    plans = []
    host = read_host_text(TINY)
    r = run_host(host, engine=engine, sink=sink, traced=["bad", "3"], plan_ready=plans.append)
    written = sink.close(r, plans[0])
    want = sorted(select_connections(["bad", "3"], plans[0]))
    assert written == [str(connection_path(tmp_path / "h.parquet", i)) for i in want]
    for i, path in zip(want, written):
        t = pq.read_table(path)
        assert t.column_names == list(COLUMN_NAMES) and t.num_rows > 0
        assert set(t.column("sock").to_pylist()) == {"rcv", "snd"}
        run = load_trace(path)                             # what tcpsim report reads
        host = run.meta["summary"]["host"]
        flow = plans[0].flows[i]
        assert host["connection"] == i and host["class"] == plans[0].classes[flow.cls]
        assert min(t.column("t_ns").to_pylist()) >= flow.start     # the host's clock
        rec = next(f for f in r.flows if f.index == i)
        assert run.meta["summary"]["bytes_read"] == rec.read_bytes
    # tracing does not change the run
    again = run_host(read_host_text(TINY), engine=engine)
    assert json.dumps(again.as_json(True), sort_keys=True) == json.dumps(r.as_json(True),
                                                                         sort_keys=True)


@pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")
def test_both_engines_write_the_same_connection_traces(tmp_path):
    tables = connection_trace_tables(TINY, tmp_path)
    assert len(tables["python"]) == len(tables["native"]) > 5
    for a, b in zip(tables["python"], tables["native"]):
        assert a.equals(b)
        assert a.schema.metadata == b.schema.metadata


# -- the command -------------------------------------------------------------------------------

def test_run_host_trace_is_small_unless_asked(tmp_path, monkeypatch, capsys):
    from cli_entry import run_main
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    code, out, err = run_main(["run", str(f), "--engine", "python", "--trace",
                               str(tmp_path / "h.parquet")], monkeypatch, capsys)
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.glob("h*")) == ["h.parquet"]
    code, out, err = run_main(["run", str(f), "--engine", "python", "--trace",
                               str(tmp_path / "h.parquet"), "--trace-connections", "bad"],
                              monkeypatch, capsys)
    assert code == 0, err
    files = sorted(p.name for p in tmp_path.glob("h.conn-*.parquet"))
    assert len(files) == 2 and all(name in out for name in files)
    code, out, err = run_main(["report", str(tmp_path / files[0])], monkeypatch, capsys)
    assert code == 0, err


@pytest.mark.parametrize("args,needle", [
    (["--trace-connections", "bad"], "--trace-connections: the connections' traces go beside "
                                     "the host's: add --trace host.parquet"),
    (["--trace", "h.parquet", "--trace-connections", "nope"], "not a class of tiny"),
    (["--trace", "h.parquet", "--trace-connections", "100000"], "tiny has connections 0-"),
])
def test_bad_trace_selection_is_one_error_line(tmp_path, monkeypatch, capsys, args, needle):
    from cli_entry import run_main
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(["run", str(f), "--engine", "python", *args], monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code != 0 and len(lines) == 1 and lines[0].startswith("tcpsim: error:"), err
    assert needle in lines[0]


def test_trace_connections_of_a_scenario_is_an_error(monkeypatch, capsys):
    from cli_entry import run_main
    code, out, err = run_main(["run", "seed-never-reads", "-d", "10ms", "--trace-connections",
                               "1"], monkeypatch, capsys)
    assert code != 0 and "selects a host's connections" in err and len(err.strip().splitlines()) == 1
