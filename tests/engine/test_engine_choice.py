"""Which engine runs: --engine, a scenario's `engine` field, a sweep axis, the default
(native where built, the Python engine for a Python patch), and one error line for a bad
engine or a Python patch under --engine native."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import cli
from tcpsim.engines import native_available
from tcpsim.runner import RunOptions, choose_engine, prepare
from tcpsim.scenario import ScenarioError, load_scenario, scenario_from_dict

ROOT = Path(__file__).resolve().parents[2]
PATCH = str(ROOT / "docs" / "examples" / "always_shrink.py") + ":AlwaysShrink"
needs_native = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")


def test_a_bad_engine_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "run", "seed-wscale8", "-d", "10ms", "--engine", "rust")
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        "tcpsim: error: --engine rust: unknown engine; choose one of: python, native"]


def test_the_scenario_field_is_checked_and_kept_out_of_the_metadata() -> None:
    with pytest.raises(ScenarioError, match='engine: expected "python" or "native"'):
        scenario_from_dict({"engine": "rust"})
    sc = scenario_from_dict({"engine": "python"})
    assert sc.engine == "python" and "engine" not in sc.as_dict()
    assert choose_engine(None, sc) == "python"


@needs_native
def test_the_default_is_native_with_or_without_a_python_patch() -> None:
    sc, _ = prepare(load_scenario("seed-wscale8"), RunOptions())
    assert choose_engine(None, sc) == "native"
    sc, _ = prepare(load_scenario("seed-wscale8"), RunOptions(policies=(PATCH,)))
    assert choose_engine(None, sc) == "native"


@needs_native
@pytest.mark.parametrize("engine", [(), ("--engine", "native")], ids=["default", "native"])
def test_a_python_patch_the_native_engine_cannot_call_is_one_error_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, engine: tuple[str, ...]) -> None:
    """try_coalesce changes its skbs in place: refused with the method and the fix named,
    never silently run without it."""
    f = tmp_path / "coal.py"
    f.write_text("class Coal:\n    def try_coalesce(self, sk, to, frm):\n        return False\n")
    code, _, err = cli(capsys, "run", "seed-wscale8", "-d", "10ms", *engine,
                       "--policy", f"{f}:Coal")
    assert code == 2 and "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"tcpsim: error: --policy {f}:Coal: decision point try_coalesce ")
    assert line.endswith("--engine python runs it")
    code, _, err = cli(capsys, "run", "seed-wscale8", "-d", "10ms", "--engine", "python",
                       "--policy", f"{f}:Coal", "--no-progress")
    assert code == 0, err


@needs_native
def test_engine_as_a_sweep_axis(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = cli(capsys, "sweep", "seed-wscale8", "-x", "engine=python,native",
                         "-d", "200ms", "-j", "1", "-r", str(tmp_path / "r"), "--json")
    assert code == 0, err
    import json
    rows = json.loads(out)
    assert [r["engine"] for r in rows] == ["python", "native"]
    drop = ("engine", "point", "hash", "wall_s", "events")
    a, b = ({k: v for k, v in r.items() if k not in drop and not k.startswith("engine")}
            for r in rows)
    assert a == b


@needs_native
def test_a_value_beyond_the_native_integers_is_one_error_line_naming_file_and_field(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A jitter of ~292 years fits Python's integers but not the native engine's i64 (found
    by the fuzz suite's explore run as an OverflowError traceback): every duration is held
    to what both engines can run (units.MAX_DURATION_NS)."""
    f = tmp_path / "huge.toml"
    f.write_text('[link]\nrtt = "20ms"\njitter = 9223372037.0\n'
                 '[writer]\nkind = "bulk"\n[reader]\nkind = "fast"\n')
    code, _, err = cli(capsys, "run", str(f), "-d", "10ms", "--no-progress")
    assert code == 2 and "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tcpsim: error: {f}: link.jitter: "), err
    assert "73 years" in lines[0]
