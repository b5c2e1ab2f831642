"""pytest configuration: tests/ on sys.path so tests import `harness` and `strategies`;
Hypothesis profiles.

Hypothesis profiles (HYPOTHESIS_PROFILE selects one; `ci` when unset):

ci       derandomize=True, no example database: every run of the default suite -- CI on a
         clean checkout, a developer's `pytest -n 2` -- draws the same examples, so the suite
         is green or red for the code, never for the draw. A failure reproduces by rerunning.
explore  derandomize=False: new random examples each run, to hunt for what the fixed draw
         misses, e.g. `HYPOTHESIS_PROFILE=explore pytest tests/core/test_receiver_state_machine.py`
         (or pass `--hypothesis-seed=N`, which overrides either profile). What it finds is
         fixed and its shrunk program kept as a regression test.

Tests that pass their own `settings(...)` inherit these values for what they leave unset.
"""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(config, items):
    """Skip @pytest.mark.root tests unless we are root, `ip netns` works and every program a
    capture runs is installed (.ci/run installs them as root; see CAPTURE_TOOLS)."""
    from tcpsim.capture.netns import missing_tools, netns_available

    if not any("root" in item.keywords for item in items):
        return
    if not netns_available():
        reason = "needs root and `ip netns` (real-kernel capture)"
    elif missing := missing_tools():
        reason = f"needs {', '.join(missing)} on PATH (apt-get install {' '.join(missing)})"
    else:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
