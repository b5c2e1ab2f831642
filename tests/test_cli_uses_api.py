"""The command line is a client of the public API (issue 17): `run`, `compare`, `report` and
the profile listing go through tcpsim.api, and a run's metadata is built in one place
(RunResult.metadata) whichever way it is run."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

import tcpsim
from tcpsim import api
from tcpsim.report.runs import simulate
from tcpsim.runner import RunOptions
from tcpsim.scenario import load_scenario
from tests.cli_entry import run_main

NAME = "seed-rcvbuf32k-fill"


@pytest.fixture
def api_calls(monkeypatch):
    """Records every tcpsim.api entry point the CLI calls (and still calls through)."""
    calls: list[str] = []
    for name in ("run_with", "load_trace", "recorded_run", "profiles", "patches"):
        real = getattr(api, name)

        def spy(*a, _real=real, _name=name, **kw):
            calls.append(_name)
            return _real(*a, **kw)
        monkeypatch.setattr(api, name, spy)
    return calls


def test_run_goes_through_the_api(api_calls, monkeypatch, capsys):
    code, out, _ = run_main(["run", NAME, "-d", "50ms"], monkeypatch, capsys)
    assert code == 0 and api_calls == ["run_with"]
    assert out.startswith(f"{NAME} under linux-6.1")


def test_compare_goes_through_the_api(api_calls, monkeypatch, capsys, tmp_path):
    code, out, _ = run_main(["compare", NAME, "-d", "50ms", "--html", str(tmp_path / "c.html"),
                             "--profile", "linux-6.1", "--vs", "linux-6.18"], monkeypatch, capsys)
    assert code == 0 and api_calls == ["run_with", "run_with"]
    assert (tmp_path / "c.html").is_file() and "peak limit (skmem_rb)" in out


def test_compare_of_one_side_twice_is_one_error_line(monkeypatch, capsys, tmp_path):
    code, out, err = run_main(["compare", NAME, "-d", "10ms", "--html", str(tmp_path / "c.html"),
                               "--profile", "linux-6.1", "--vs", "linux-6.1"], monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("tcpsim: error: --vs linux-6.1: the same variant is given twice")


def test_report_and_profiles_go_through_the_api(api_calls, monkeypatch, capsys, tmp_path):
    trace = tmp_path / "t.parquet"
    api.run_with(load_scenario(NAME), RunOptions(duration=50_000_000, trace=trace))
    api_calls.clear()
    code, out, _ = run_main(["report", str(trace), "--html", str(tmp_path / "r.html")],
                            monkeypatch, capsys)
    assert code == 0 and api_calls == ["load_trace"]
    code, out, _ = run_main(["profiles"], monkeypatch, capsys)
    assert code == 0 and api_calls == ["load_trace", "profiles", "patches"]
    assert "linux-6.18" in out and "shrink-window" in out


def test_the_metadata_is_the_same_whichever_way_a_run_is_made(tmp_path):
    """Trace footer (runner), in-memory comparison run (report.simulate) and the API's
    Run.meta: one dict, from RunResult.metadata."""
    trace = tmp_path / "t.parquet"
    opts = dict(profile="linux-6.18", duration=50_000_000)
    via_api = tcpsim.run(NAME, profile="linux-6.18", duration="50ms", trace=trace)
    _, simulated = simulate(load_scenario(NAME), RunOptions(**opts))
    footer = tcpsim.load_trace(trace).meta
    assert via_api.meta == simulated
    assert json.loads(json.dumps(via_api.meta)) == footer     # the footer holds it as JSON
    assert set(footer) == {"source", "profile", "scenario", "sysctls", "counters", "summary"}
    assert "wall_s" not in footer["summary"] and footer["scenario"]["duration"] == 50_000_000
    raw = pq.read_schema(trace).metadata
    assert set(k.decode() for k in raw if not k.startswith(b"ARROW")) == set(footer)
