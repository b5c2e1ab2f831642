"""The pcap commands on both engines: `tcpsim replay FILE.pcap` prints the same report (text
and --json) on the Python and the native engine, for the captures the other pcap tests use;
`tcpsim run --pcap` writes the same bytes; replay runs natively by default where built."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import cli
from pcap_frames import SLOW_READER, ZERO_WINDOW_RUN, capture
from tcpsim.engines import native_available

pytestmark = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")


def _run_pcap(capsys, tmp_path: Path, scenario: str, engine: str, *args: str) -> Path:
    out = tmp_path / f"{Path(scenario).stem}.{engine}.pcap"
    code, _, err = cli(capsys, "run", scenario, "--pcap", str(out), "--engine", engine, *args)
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def slow_toml(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("engines") / "slow-reader.toml"
    path.write_text(SLOW_READER)
    return path


@pytest.mark.parametrize("scenario,args", [
    (ZERO_WINDOW_RUN, ("-d", "1s")),
    ("slow", ()),
])
def test_run_pcap_is_the_same_bytes_on_both_engines(capsys, tmp_path, slow_toml, scenario, args):
    name = str(slow_toml) if scenario == "slow" else scenario
    py = _run_pcap(capsys, tmp_path, name, "python", *args)
    nat = _run_pcap(capsys, tmp_path, name, "native", *args)
    assert py.stat().st_size > 2000                  # a connection's worth of frames
    assert py.read_bytes() == nat.read_bytes()


@pytest.fixture(scope="module")
def captures(tmp_path_factory, slow_toml) -> dict[str, tuple[Path, tuple[str, ...]]]:
    """The captures the pcap tests replay (pcap_frames', test_pcap_export's runs), with the
    options they replay them with."""
    from tcpsim.runner import RunOptions, run
    from tcpsim.scenario import load_scenario
    d = tmp_path_factory.mktemp("captures")
    fill, slow = d / "fill.pcap", d / "slow.pcap"
    run(load_scenario(ZERO_WINDOW_RUN), RunOptions(duration=1_000_000_000, pcap=fill))
    run(load_scenario(slow_toml), RunOptions(pcap=slow))
    return {
        "frames": (capture(d / "c.pcap"), ("--reader", "never")),
        "fill": (fill, ("-s", "net.ipv4.tcp_adv_win_scale=0", "--reader", "never",
                        "--rcvbuf", "32768")),
        "fill-inferred": (fill, ()),
        "slow": (slow, ()),
        # a receive buffer smaller than the capture's: the writer waits for room
        "slow-small-rcvbuf": (slow, ("--rcvbuf", "8192")),
    }


@pytest.mark.parametrize("key", ["frames", "fill", "fill-inferred", "slow", "slow-small-rcvbuf"])
@pytest.mark.parametrize("form", [(), ("--json",)], ids=["text", "json"])
def test_replay_report_is_the_same_on_both_engines(capsys, captures, key, form):
    path, opts = captures[key]
    out = {}
    for engine in ("python", "native"):
        code, stdout, err = cli(capsys, "replay", str(path), *opts, *form, "--engine", engine)
        assert code in (0, 1), err
        out[engine] = stdout
    assert "kernel_acks" in out["python"] if form else "ACK windows:" in out["python"]
    assert out["python"] == out["native"]


def test_the_small_rcvbuf_replay_makes_the_writer_wait(capsys, captures):
    """The small-SO_RCVBUF replay does make the model's sender refuse bytes, so the case
    above compares the engines' ScheduleWriter waiting for room (benchmarks/parity.py
    p-tap-replay is a replay where when it writes them shows in the report)."""
    import json
    path, opts = captures["slow-small-rcvbuf"]
    code, stdout, err = cli(capsys, "replay", str(path), *opts, "--json", "--engine", "native")
    assert code in (0, 1), err
    d = json.loads(stdout)
    assert d["info"]["replay"]["write_size_mismatch"] > 0


def test_replay_runs_natively_by_default(capsys, tmp_path, monkeypatch):
    from tcpsim.validate import replay
    ran = []
    native = replay._run_native
    monkeypatch.setattr(replay, "_run_native", lambda *a: ran.append(1) or native(*a))
    cap = str(capture(tmp_path / "c.pcap"))
    assert cli(capsys, "replay", cap, "--reader", "never")[0] in (0, 1)
    assert ran == [1]
    assert cli(capsys, "replay", cap, "--reader", "never", "--engine", "python")[0] in (0, 1)
    assert ran == [1]


def test_replay_refuses_an_unknown_engine(capsys, tmp_path):
    code, out, err = cli(capsys, "replay", str(capture(tmp_path / "c.pcap")), "--engine", "rust")
    assert code == 2 and out == ""
    assert err.splitlines() == ["tcpsim: error: --engine rust: unknown engine; choose one of: "
                                "python, native"]
