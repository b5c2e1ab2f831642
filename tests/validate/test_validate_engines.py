"""`validate` replays on either engine with the same results: the native engine's replay
applications (native/src/engine/replay.rs) tick at the trace's times as the Python
engine's (tcpsim/validate/replay.py) do, so each fixture gives the same model trace,
summary, replay counts and scores; the native engine is the default where it is built."""

from __future__ import annotations

from pathlib import Path

import pytest

from tcpsim.engines import native_available
from tcpsim.validate.run import validate_trace
from tcpsim.validate.trace import load, view
from tcpsim.validate.replay import plan, run_plan

pytestmark = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernel"
# a writer-ticked, a reader-ticked (oscillating grid) and a bulk fixture, each cut short
CASES = {"seed-never-reads-shrink1": 3.0, "seed-oscillating-reader": 1.5,
         "bulk-blocking-reader": 0.5, "seed-rcvbuf32k-fill": None}


@pytest.mark.parametrize("name", list(CASES))
def test_both_engines_give_the_same_replay_and_scores(name: str) -> None:
    v = {e: validate_trace(FIXTURES / f"{name}.parquet", until_s=CASES[name], engine=e)
         for e in ("python", "native")}
    py, nat = v["python"], v["native"]
    assert nat.replay.columns == py.replay.columns
    drop = ("wall_s",)
    assert ({k: x for k, x in nat.replay.result.summary.items() if k not in drop}
            == {k: x for k, x in py.replay.result.summary.items() if k not in drop})
    assert (nat.replay.write_size_mismatch, nat.replay.read_size_mismatch) == \
        (py.replay.write_size_mismatch, py.replay.read_size_mismatch)
    assert nat.score.as_dict() == py.score.as_dict()
    assert nat.replay.write_ticks or nat.replay.read_ticks      # the replay apps ran


def test_the_native_replay_is_driven_by_the_trace_ticks() -> None:
    """Not vacuous: the same plan without its ticks (the scenario's own applications) gives
    another model trace on the native engine."""
    name = "seed-never-reads-shrink1"
    cols, meta = load(FIXTURES / f"{name}.parquet")
    p = plan(view(cols, meta), until_ns=1_000_000_000)
    ticked = run_plan(p, engine="native")
    p.write_ticks = [(t + 150_000, n) for t, n in p.write_ticks or []]
    late = run_plan(p, engine="native")
    assert ticked.columns != late.columns
    assert late.columns == run_plan(p, engine="python").columns


def test_the_default_engine_is_native(capsys: pytest.CaptureFixture[str]) -> None:
    from tcpsim.validate import replay as rp_mod
    seen: list[str] = []
    orig = rp_mod._run_native

    def spy(*a, **kw):  # type: ignore[no-untyped-def]
        seen.append("native")
        return orig(*a, **kw)
    rp_mod._run_native = spy
    try:
        validate_trace(FIXTURES / "seed-never-reads-shrink1.parquet", until_s=0.5)
    finally:
        rp_mod._run_native = orig
    assert seen == ["native"]
