"""Start-up stays small: a command imports only what it uses (docs/performance.md, target c).

Each case runs `tcpsim ARGS` in a fresh interpreter and lists the modules it ended with; a
top-level import of pyarrow, pydantic, simpy, ... added on the way (in the CLI, the runner,
the native engine's runner, the catalogue) makes one of them fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tcpsim.engines import native_available

ROOT = Path(__file__).resolve().parent.parent
SHORT = [str(ROOT / "benchmarks" / "targets" / "c.toml"), "-d", "2s"]
needs_native = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")

# Imported only where named: the trace (pyarrow; numpy comes with it), the Python engine
# (simpy, the Python socket), reports (pandas, plotly), sweeps (dask), help pages (rich).
# pydantic never: typer would use it to convert option values (tcpsim/cli_params.py).
HEAVY = ("pyarrow", "numpy", "pandas", "pydantic", "simpy", "plotly", "rich", "dask",
         "distributed", "pkg_resources", "importlib.metadata", "tcpsim.core.socket",
         "tcpsim.engine.simulation", "tcpsim.trace.recorder", "tcpsim.report")

_PROBE = """
import json, sys
sys.argv = ["tcpsim", *json.loads(sys.argv[1])]
from tcpsim.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules(args: list[str]) -> set[str]:
    """The modules `tcpsim ARGS` imported (it must succeed)."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.splitlines()[-1])
    assert found["code"] in (0, None), proc.stderr
    return set(found["modules"])


def _heavy(modules: set[str], allowed: tuple[str, ...] = ()) -> list[str]:
    return sorted(h for h in HEAVY if h not in allowed
                  and any(m == h or m.startswith(h + ".") for m in modules))


@needs_native
def test_a_native_run_without_a_trace_imports_nothing_heavy() -> None:
    assert _heavy(_modules(["run", *SHORT])) == []


@needs_native
def test_a_native_run_with_a_trace_imports_pyarrow_only(tmp_path: Path) -> None:
    modules = _modules(["run", *SHORT, "--trace", str(tmp_path / "t.parquet")])
    assert {"pyarrow", "pyarrow.parquet", "tcpsim.trace.recorder"} <= modules
    assert _heavy(modules, allowed=("pyarrow", "numpy", "tcpsim.trace.recorder")) == []


def test_the_python_engine_imports_simpy_and_no_arrow() -> None:
    modules = _modules(["run", *SHORT, "--engine", "python"])
    assert "simpy" in modules
    assert _heavy(modules, allowed=("simpy", "importlib.metadata", "tcpsim.core.socket",
                                    "tcpsim.engine.simulation")) == []


@pytest.mark.parametrize("args", [["profiles"], ["run", "--help"]],
                         ids=["profiles", "run --help"])
def test_listings_and_help_import_no_engine(args: list[str]) -> None:
    assert _heavy(_modules(args), allowed=("rich", "importlib.metadata")) == []
