"""The host benchmark's harness (tcpsim/bench_host.py): a case runs in a child process of the
chosen source tree, and two trees measured side by side give the same simulation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tcpsim.bench_host import format_case, run_case
from tcpsim.engines import native_available

native = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")
ROOT = str(Path(__file__).resolve().parents[2])


@native
def test_a_case_runs_in_the_tree_asked_and_says_so() -> None:
    here = run_case(20, "1s")
    there = run_case(20, "1s", tree=ROOT)
    assert "tree" not in here and there["tree"] == ROOT
    assert here["events"] == there["events"] > 0
    assert here["peak_sockstat_mem"] == there["peak_sockstat_mem"]
    assert f"[{ROOT}]" in format_case(there) and "[" not in format_case(here)
