"""scripts/capture_fixtures.py carries each fixture's host preset (the manifest's `host`, the
run's `[timing] host` under `tcpsim validate --plain`): declared on the Fixture, validated
against tcpsim.app_latency.HOSTS, and written into the manifest entry by --retag and by a
re-recording, so neither loses it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.scripts import load_script

KERNEL = Path(__file__).resolve().parents[1] / "fixtures" / "kernel"
SMALL = KERNEL / "seed-rcvbuf32k-fill.parquet"   # a stand-in trace: the host is manifest-only


def _committed() -> dict[str, dict]:
    return {e["name"]: e for e in json.loads((KERNEL / "manifest.json").read_text())["fixtures"]}


def test_the_five_committed_hosts_are_declared_on_their_fixtures() -> None:
    cf = load_script("capture_fixtures")
    committed = {n: (e["host"], e["host_source"]) for n, e in _committed().items() if "host" in e}
    declared = {f.name: (f.host, f.host_source) for f in cf.FIXTURES if f.host}
    assert len(committed) == 5 and declared == committed


def test_retag_into_a_copy_keeps_every_host_and_adds_none(tmp_path) -> None:
    """--retag (no root, no capture) into a copy of tests/fixtures/kernel: the five hosts
    come out as committed; a fixture without one gets none."""
    cf = load_script("capture_fixtures")
    out = tmp_path / "kernel"
    out.mkdir()
    shutil.copy(KERNEL / "manifest.json", out / "manifest.json")
    for name in _committed():
        shutil.copy(SMALL, out / f"{name}.parquet")
    before = json.loads((out / "manifest.json").read_text())
    for e in before["fixtures"]:
        if e["name"] == "seed-default-fill":      # a host the Fixture does not name
            e["host"], e["host_source"] = "dev-vm-spin", "stale"
        if e["name"] == "bulk-blocking-reader":   # a host lost from the manifest
            del e["host"], e["host_source"]
    (out / "manifest.json").write_text(json.dumps(before))
    assert cf.main(["--retag", "--out", str(out)]) == 0
    got = {e["name"]: e for e in json.loads((out / "manifest.json").read_text())["fixtures"]}
    for name, e in _committed().items():
        assert got[name].get("host") == e.get("host"), name
        assert got[name].get("host_source") == e.get("host_source"), name
        assert got[name]["fixture"]["host"] == e.get("host", "")
    assert "host" not in got["seed-default-fill"]


def _work(tmp_path: Path, name: str) -> Path:
    """A work folder as run_jobs leaves it for one capture of `name` (a stand-in trace)."""
    run = tmp_path / "work" / f"{name}.0"
    run.mkdir(parents=True)
    shutil.copy(SMALL, run / f"{name}.parquet")
    (run / "summary.json").write_text(json.dumps({"outcomes": {"drops": "no drops"}}))
    return tmp_path / "work"


def test_a_rerecording_writes_the_host_into_its_manifest_entry(tmp_path) -> None:
    cf = load_script("capture_fixtures")
    fx = next(f for f in cf.FIXTURES if f.name == "bulk-blocking-reader")
    entry = cf.record(fx, tmp_path / "out", 1, _work(tmp_path, fx.name))
    assert entry["host"] == "dev-vm-loaded" == _committed()[fx.name]["host"]
    assert entry["host_source"] == _committed()[fx.name]["host_source"]
    plain = next(f for f in cf.FIXTURES if not f.host)
    assert "host" not in cf.record(plain, tmp_path / "out", 1, _work(tmp_path, plain.name))


@pytest.mark.parametrize("kw,msg", [
    ({"host": "dev-vm-nowhere", "host_source": "x"}, "host: expected one of dev-vm-duty50"),
    ({"host": "exact", "host_source": "x"}, "host: expected one of"),
    ({"host": "dev-vm-spin"}, "host and host_source come together"),
    ({"host_source": "why"}, "host and host_source come together"),
])
def test_a_host_not_among_the_presets_names_the_fixture_and_the_choices(kw: dict,
                                                                        msg: str) -> None:
    cf = load_script("capture_fixtures")
    with pytest.raises(ValueError, match=msg) as err:
        cf.Fixture("x-fixture", "seed-default-fill", 1.0, **kw)
    assert "fixture x-fixture" in str(err.value)
