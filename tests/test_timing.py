"""`tcpsim timing`: a host's own application timing as a preset (tcpsim.timing), found by
tcpsim.app_latency like the shipped ones and used by --timing and [timing] host."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tcpsim import app_latency, timing


def tcpsim(env_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TCPSIM_TIMING_DIR": str(env_dir)}
    return subprocess.run([sys.executable, "-m", "tcpsim.cli", *args], capture_output=True,
                          text=True, env=env)


def test_measure_writes_a_preset_in_the_shipped_format_that_runs_use(tmp_path):
    r = tcpsim(tmp_path, "timing", "measure", "mine", "--seconds", "2", "--period", "500us",
               "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["periodic_reader"]["wakeups"] >= timing.MIN_WAKEUPS
    doc = json.loads(gzip.decompress((tmp_path / "app_latency_blocks-mine.json.gz").read_bytes()))
    # the document scripts/app_latency_blocks.py --json writes, which load_blocks() reads
    assert {"about", "machine", "made", "method", "unit_ns", "block_wakeups", "captures",
            "sequences"} <= set(doc)
    assert set(doc["sequences"]) == {"periodic_writer", "periodic_reader"}
    assert "blocking_reader" in doc["captures"][0]
    r = tcpsim(tmp_path, "timing", "list")
    assert "mine" in r.stdout and "(yours)" in r.stdout
    r = tcpsim(tmp_path, "run", "seed-unbounded-growth", "-d", "300ms", "--timing", "mine",
               "--no-progress")
    assert r.returncode == 0, r.stderr
    r = tcpsim(tmp_path, "run", "seed-unbounded-growth", "-d", "300ms", "--timing", "theirs",
               "--no-progress")
    assert r.returncode == 2 and "mine" in r.stderr


def test_a_user_preset_loads_through_the_same_function(tmp_path, monkeypatch):
    seq = {"periodic_writer": [70_000 + i % 7 * 1000 for i in range(3000)],
           "periodic_reader": [60_000 + i % 5 * 1000 for i in range(3000)]}
    path = timing.write_preset("unit", seq, [{"run": "test"}], "test", tmp_path)
    monkeypatch.setenv("TCPSIM_TIMING_DIR", str(tmp_path))
    try:
        assert "unit" in app_latency.register_user_hosts() or "unit" in app_latency.HOSTS
        got = app_latency.load_sequences("periodic_reader", "unit")
        assert got[0][:3] == (60_000, 61_000, 62_000)
        assert app_latency.default_latency("unit", "reader", "periodic") == "periodic_reader_blocks"
    finally:
        app_latency.HOSTS.pop("unit", None)
        app_latency.DEFAULT_TIMING.pop("unit", None)
    assert path.name == "app_latency_blocks-unit.json.gz"


def _run_folder(root: Path, n: int) -> Path:
    raw = root / "run1" / "seed.raw"
    raw.mkdir(parents=True)
    (raw / "meta.json").write_text(json.dumps({"scenario": {"writer": {"kind": "periodic"},
                                                            "reader": {"kind": "periodic"}},
                                               "profile": "linux-6.18"}))
    for side, late in (("sender", 80_000), ("receiver", 90_000)):
        rows = ["t_ns,kind,n"]
        for i in range(n):
            due = (i + 1) * 1_000_000
            rows += [f"{due + late},wake,{due}", f"{due + late + 5000},send,100"]
        (raw / f"{side}_events.csv").write_text("\n".join(rows) + "\n")
    return root


def test_fit_builds_a_preset_from_capture_runs_and_refuses_what_it_cannot_use(tmp_path):
    runs = _run_folder(tmp_path / "runs", 1500)
    out = tmp_path / "presets"
    r = tcpsim(out, "timing", "fit", "fromruns", str(runs), "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["periodic_writer"]["p50_us"] == 80.0 and s["periodic_reader"]["p50_us"] == 90.0
    r = tcpsim(out, "timing", "fit", "x", str(tmp_path / "nothing"))
    assert r.returncode == 2 and r.stderr.startswith("tcpsim: error:") and "no capture run" in r.stderr
    r = tcpsim(out, "timing", "measure", "exact")
    assert r.returncode == 2 and "name" in r.stderr


@pytest.mark.parametrize("name", ["dev-vm-quiet", "a/b", ""])
def test_bad_names(name):
    with pytest.raises(timing.TimingError):
        timing.check_name(name)
