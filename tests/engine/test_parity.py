"""The native engine gives the Python engine's results: the same trace table (metadata
included) and the same summary, counters and `ss` lines, on every golden case and the
parity extras of benchmarks/parity.py (loss with jitter, seeds, devices, hz, patches,
two-way, the pcap tap and `tcpsim replay` of its pcap), each run for a short time. `benchmarks/parity.py --full` runs
the golden cases for their full durations."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

from tcpsim.engines import native_available

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import parity  # noqa: E402

pytestmark = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")

_KEYS = [c.key for c in parity.cases(Path(tempfile.mkdtemp(prefix="tcpsim-parity-keys-")))]


@pytest.fixture(scope="module")
def case_list(tmp_path_factory: pytest.TempPathFactory) -> dict[str, parity.Case]:
    root = tmp_path_factory.mktemp("parity")
    return {c.key: c for c in parity.cases(root)}


@pytest.mark.parametrize("key", _KEYS)
def test_engines_agree(key: str, case_list: dict[str, parity.Case], tmp_path: Path) -> None:
    assert parity.run_both(case_list[key], tmp_path) == []


def test_a_planted_difference_is_found(case_list: dict[str, parity.Case], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a native trace one row short is reported."""
    from tcpsim.trace import columns
    orig = columns.TraceGroups.table

    def short(self, ints: list, codes, new: list):  # type: ignore[no-untyped-def]
        t = orig(self, ints, codes, new)
        return t.slice(0, max(0, t.num_rows - 1))
    monkeypatch.setattr(columns.TraceGroups, "table", short)
    diffs = parity.run_both(case_list["p-device-veth"], tmp_path)
    assert diffs and diffs[0].startswith("trace:")


def test_a_planted_replay_difference_is_found(case_list: dict[str, parity.Case], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay comparison can fail: a Python ScheduleWriter that drops the bytes its
    socket refused is reported -- the small-SO_RCVBUF replay refuses some at most ticks.
    (Deferring them to the next tick, no on_writable, is not a reliable plant: whether the
    bytes written early reach the wire earlier depends on the window at that moment.)"""
    from tcpsim.validate.replay import ScheduleWriter
    flush = ScheduleWriter._flush

    def lossy(self: ScheduleWriter) -> None:
        flush(self)
        self.pending = 0

    monkeypatch.setattr(ScheduleWriter, "_flush", lossy)
    diffs = parity.run_both(case_list["p-tap-replay"], tmp_path)
    assert diffs and all(d.startswith("replay {'rcvbuf': 8192}") for d in diffs)
