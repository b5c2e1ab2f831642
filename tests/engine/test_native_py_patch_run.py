"""A whole native run with a user's Python patch (`--policy FILE.py:Class`): the native
engine runs it by default, calls the patch at the points it overrides (and the result is
the unpatched run's when the patch only wraps super()), and stops at the event where the
patch raised, raising that exception (the CLI turns it into one line: tests/test_policy.py)."""

from __future__ import annotations

import pytest

from tcpsim.engines import native_available
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import load_scenario
from tcpsim.units import parse_duration

pytestmark = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")

RAISES_AT = 3


def _opts(*policies: str) -> RunOptions:
    return RunOptions(policies=policies, duration=parse_duration("2s", "d"))


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The engine of each run made."""
    import tcpsim.runner as runner
    made: list[str] = []
    orig = runner.make_simulation

    def spy(engine, *a, **kw):  # type: ignore[no-untyped-def]
        made.append(engine)
        return orig(engine, *a, **kw)
    monkeypatch.setattr(runner, "make_simulation", spy)
    return made


def test_the_run_stops_at_the_event_the_patch_raised_in(tmp_path, monkeypatch, engines):
    calls = tmp_path / "calls"
    monkeypatch.setenv("TCPSIM_TEST_CALLS", str(calls))
    f = tmp_path / "late_boom.py"
    f.write_text(f"""import os
class LateBoom:
    def shrink_allowed(self, sk):
        with open(os.environ["TCPSIM_TEST_CALLS"], "a") as out:
            out.write("x")
        if os.path.getsize(os.environ["TCPSIM_TEST_CALLS"]) == {RAISES_AT}:
            raise RuntimeError("third call")
        return super().shrink_allowed(sk)
""")
    with pytest.raises(RuntimeError, match="third call"):
        run(load_scenario("seed-never-reads"), _opts(f"{f}:LateBoom"))
    assert engines == ["native"]
    assert calls.read_text() == "x" * RAISES_AT        # halted there: not one call more


def test_a_patch_wrapping_super_gives_the_unpatched_run(tmp_path, monkeypatch, engines):
    calls = tmp_path / "calls"
    monkeypatch.setenv("TCPSIM_TEST_CALLS", str(calls))
    f = tmp_path / "count.py"
    f.write_text("""import os
class Count:
    def rcv_space_adjust(self, sk):
        with open(os.environ["TCPSIM_TEST_CALLS"], "a") as out:
            out.write("x")
        super().rcv_space_adjust(sk)
""")
    result, _ = run(load_scenario("seed-unbounded-growth"), _opts(f"{f}:Count"))
    plain, _ = run(load_scenario("seed-unbounded-growth"), _opts())
    assert engines == ["native", "native"]
    assert calls.read_text()                            # called
    keep = ("wall_s", "policy", "profile", "policies")
    assert ({k: v for k, v in result.summary.items() if k not in keep}
            == {k: v for k, v in plain.summary.items() if k not in keep})
    assert result.counters == plain.counters
