"""SIGINT and SIGTERM finish a command cleanly (issue 31; tcpsim/interrupt.py): the engine
stops at its next event boundary, the trace up to then is closed (valid, marked cut short in
its metadata), the summary so far is printed, one line says what was kept, and the exit
status is 128 + the signal. A sweep's workers die with a SIGKILLed parent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tcpsim import interrupt
from tcpsim.engines import native_available
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import load_scenario
from tests.cli_entry import run_main

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ["python", *(["native"] if native_available() else [])]


def _stop_at(monkeypatch, at_s: float, signame: str) -> None:
    """The run's progress hook asks for a stop (as the signal would) once the simulated
    time passes `at_s`: a signal at a known moment of the run."""
    def bar(total_ns, enabled):
        def hook(now):
            if now >= at_s * 1e9 and interrupt.requested() is None:
                interrupt.request(signame)
        return hook
    monkeypatch.setattr("tcpsim.runner.progress_bar", bar)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("at_s", [0.0, 100.0, 500.0])
def test_a_stopped_run_keeps_a_valid_trace_marked_cut_short(engine, at_s, tmp_path,
                                                            monkeypatch):
    _stop_at(monkeypatch, at_s, "SIGTERM")
    trace = tmp_path / "t.parquet"
    sc = load_scenario("seed-unbounded-growth")
    with interrupt.stoppable():
        result, _ = run(sc, RunOptions(duration=3000 * 10**9, trace=trace, engine=engine))
    cut = result.cut_short          # (a native slice is 2**18 events: ~100 s simulated here)
    assert cut is not None and cut["signal"] == "SIGTERM" and cut["duration_s"] == 3000
    assert at_s <= cut["at_s"] < 3000 and result.summary["duration_s"] == cut["at_s"]
    table = pq.read_table(trace)                  # closed: footer, metadata, no .partial
    meta = {k.decode(): json.loads(v) for k, v in table.schema.metadata.items()
            if not k.startswith(b"ARROW")}
    assert meta["cut_short"] == cut and meta["summary"]["duration_s"] == cut["at_s"]
    assert table.num_rows and max(table.column("t_ns").to_pylist()) <= cut["at_s"] * 1e9
    assert not trace.with_name("t.parquet.partial").exists()


def test_outside_a_stoppable_block_a_request_does_not_stop_a_run(monkeypatch):
    _stop_at(monkeypatch, 0.0, "SIGINT")
    result, _ = run(load_scenario("seed-rcvbuf32k-fill"), RunOptions(duration=10**9))
    assert result.cut_short is None and result.summary["duration_s"] == 1.0
    interrupt._state["signal"] = None


@pytest.mark.parametrize("signame,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_run_command_prints_the_summary_and_one_line(signame, code, tmp_path, monkeypatch,
                                                     capsys):
    _stop_at(monkeypatch, 5.0, signame)
    trace, pcap = tmp_path / "t.parquet", tmp_path / "t.pcap"
    got, out, err = run_main(["run", "seed-unbounded-growth", "-d", "3000s", "--trace", str(trace),
                              "--pcap", str(pcap)], monkeypatch, capsys)
    assert got == code
    assert "bytes_read" in out and f"trace: {trace}" in out and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tcpsim: interrupted by {signame}: the run "
                                                   "stopped at ")
    assert "of 3000 simulated s; kept the trace" in lines[0] and str(pcap) in lines[0]
    assert pq.read_table(trace).num_rows and pcap.stat().st_size > 24


def test_compare_keeps_the_sides_run_whole(tmp_path, monkeypatch, capsys):
    calls = {"n": 0}

    def bar(total_ns, enabled):                   # the second side is stopped
        calls["n"] += 1
        side = calls["n"]

        def hook(now):
            if side == 2:
                interrupt.request("SIGINT")
        return hook
    monkeypatch.setattr("tcpsim.runner.progress_bar", bar)
    html = tmp_path / "c.html"
    code, out, err = run_main(["compare", "seed-unbounded-growth", "-d", "3000s", "--profile",
                               "linux-6.1", "--vs", "linux-6.18", "--vs", "linux-6.6", "--html",
                               str(html)], monkeypatch, capsys)
    assert code == 130 and html.is_file() and "linux-6.1" in out
    line = err.strip().splitlines()[-1]
    assert line.startswith("tcpsim: interrupted by SIGINT: 1 of 3 sides ran whole; kept the "
                           "table above and the report"), err


def test_claims_say_how_many_were_checked(monkeypatch, capsys):
    _stop_at(monkeypatch, 1.0, "SIGTERM")
    code, _, err = run_main(["claims", "--quick", "--only", "unbounded-13"], monkeypatch, capsys)
    assert code == 143
    assert err.strip().splitlines()[-1] == ("tcpsim: interrupted by SIGTERM: 0 of 1 claims "
                                            "checked"), err


# -- real signals, to a real process -------------------------------------------------------

def _spawn(args: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "tcpsim.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(cond, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "never got there"
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_a_traced_run_with_pcap(sig, tmp_path):
    proc = _spawn(["run", "seed-unbounded-growth", "-d", "1000000s", "--trace", "t.parquet",
                   "--pcap", "t.pcap"], tmp_path)
    _wait_for(lambda: (tmp_path / "t.parquet.partial").exists(), proc)   # well into the run
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and "bytes_read" in out
    assert err.strip().splitlines()[-1].startswith(f"tcpsim: interrupted by {sig.name}: ")
    meta = pq.read_schema(tmp_path / "t.parquet").metadata
    assert json.loads(meta[b"cut_short"])["signal"] == sig.name
    assert (tmp_path / "t.pcap").stat().st_size > 24


def test_a_signal_as_the_command_starts(tmp_path):
    """SIGTERM before any engine runs (the scenario just loaded): one line, 143."""
    proc = _spawn(["run", "seed-unbounded-growth", "-d", "1000000s"], tmp_path)
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode in (143, -15) and "Traceback" not in err
    if proc.returncode == 143:
        assert err.strip().splitlines()[-1].startswith("tcpsim: interrupted by SIGTERM")


def _sweep(results: Path) -> list[str]:
    return ["sweep", "seed-unbounded-growth", "-d", "100000s", "-j", "2", "-x",
            "link.rtt=5ms,20ms,80ms,100ms", "-r", str(results)]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def _children(pid: int) -> list[int]:
    """The live child processes of `pid` (from /proc: no pgrep needed)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(") ", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_a_sweep(sig, tmp_path):
    proc = _spawn(_sweep(tmp_path / "r"), tmp_path)
    _wait_for(lambda: len(_children(proc.pid)) >= 2, proc)
    workers = _children(proc.pid)
    time.sleep(1)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"tcpsim: interrupted by {sig.name}: ")
    deadline = time.monotonic() + 30
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, workers))


@pytest.mark.parametrize("executor", ["local", pytest.param("dask", marks=pytest.mark.slow)])
def test_sigkill_of_a_sweep_leaves_no_worker(executor, tmp_path):
    if executor == "dask":
        pytest.importorskip("distributed")
    proc = _spawn([*_sweep(tmp_path / "r"), "-e", executor], tmp_path)
    _wait_for(lambda: len(_children(proc.pid)) >= 2, proc, timeout=180)
    time.sleep(3 if executor == "dask" else 1)       # the workers have started their points
    workers = _children(proc.pid)
    proc.kill()
    proc.communicate()
    deadline = time.monotonic() + 60
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for w in left:                                   # do not leave them to the next test
        os.kill(w, signal.SIGKILL)
    assert not left, f"orphans: {left}"


def test_a_signal_to_a_search_keeps_its_runs(tmp_path):
    """`tcpsim search` (the interrupt mechanism shared with sweep): SIGTERM is Ctrl-C, one
    line saying where the runs are, 143; its pool workers go with it."""
    proc = _spawn(["search", "rcvbuf-growth", "--budget", "400", "-j", "2", "-o",
                   str(tmp_path / "s")], tmp_path)
    _wait_for(lambda: len(_children(proc.pid)) >= 2, proc, timeout=180)
    workers = _children(proc.pid)
    time.sleep(2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("tcpsim: interrupted by SIGTERM: the runs so "
                                                   "far are stored in ")
    deadline = time.monotonic() + 30
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, workers))


def _asked_at_once(monkeypatch, signame: str) -> None:
    """Every stoppable block starts with a stop already asked for (the signal came while
    the command was loading): the engines stop at their first boundary."""
    from contextlib import contextmanager
    real = interrupt.stoppable

    @contextmanager
    def asked():
        with real():
            interrupt.request(signame)
            yield
    monkeypatch.setattr(interrupt, "stoppable", asked)


def test_replay_and_validate_stop_with_one_line(tmp_path, monkeypatch, capsys):
    pcap = tmp_path / "c.pcap"
    code, _, _ = run_main(["run", "seed-rcvbuf32k-fill", "-d", "50ms", "--pcap", str(pcap)],
                          monkeypatch, capsys)
    assert code == 0
    _asked_at_once(monkeypatch, "SIGTERM")
    code, out, err = run_main(["replay", str(pcap)], monkeypatch, capsys)
    assert code == 143 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == ("tcpsim: interrupted by SIGTERM: nothing kept (a "
                                            "score needs the whole replay; --until S scores the "
                                            "first S seconds)")
    fixture = ROOT / "tests" / "fixtures" / "kernel" / "seed-default-fill.parquet"
    code, out, err = run_main(["validate", str(fixture)], monkeypatch, capsys)
    assert code == 143
    assert err.strip().splitlines()[-1] == ("tcpsim: interrupted by SIGTERM: 0 of 1 traces "
                                            "validated")
