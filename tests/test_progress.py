"""Long work shows progress on stderr: a line per step on a terminal, a line every few seconds
in a log (#18: `compare` and `claims` were silent until the end)."""

from __future__ import annotations

import contextlib
import io

from tcpsim.cli import main
from tcpsim.progress import StepProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_line_per_step():
    out = Terminal()
    steps = StepProgress("claims", stream=out)
    for i, key in enumerate(("a", "b"), start=1):
        steps.start(i, 2, key)
    assert out.getvalue() == "claims: 1/2 a\nclaims: 2/2 b\n"


def test_a_log_gets_a_line_every_few_seconds_and_none_for_quick_work():
    now = [0.0]
    out = io.StringIO()
    steps = StepProgress("compare", stream=out, every_s=5.0, clock=lambda: now[0])
    for i, t in enumerate((1.0, 2.0, 6.0, 7.0, 12.0), start=1):
        now[0] = t
        steps.start(i, 5, f"v{i}")
    assert out.getvalue() == "compare: 3/5 v3\ncompare: 5/5 v5\n"


def _stderr_of(argv: list[str]) -> str:
    err = Terminal()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code in (0, 1, None), err.getvalue()
    return err.getvalue()


def test_compare_shows_each_run_on_a_terminal(tmp_path):
    err = _stderr_of(["compare", "seed-never-reads", "-d", "5ms", "-p", "linux-6.1",
                      "--vs", "linux-6.6", "-o", str(tmp_path / "c.html")])
    assert "compare: 1/2 linux-6.1\n" in err and "compare: 2/2 linux-6.6\n" in err


def test_claims_shows_each_claim_on_a_terminal():
    err = _stderr_of(["claims", "--quick", "--only", "wscale8", "--only", "syn-6.6"])
    assert "claims: 1/2 wscale8\n" in err and "claims: 2/2 syn-6.6\n" in err


def test_run_shows_an_eta_from_the_simulated_time_rate():
    from tcpsim.engine.result import progress_bar, run_eta
    assert run_eta(0, 10, 5.0) is None and run_eta(5, 10, 0.01) is None
    assert run_eta(25 * 10**9, 100 * 10**9, 2.0) == 6.0      # a quarter in 2 s: 6 s to go
    now = [0.0]
    out = io.StringIO()
    show = progress_bar(100 * 10**9, True, clock=lambda: now[0], stream=out)
    now[0] = 2.0
    show(25 * 10**9)
    assert "25.0%" in out.getvalue() and "ETA 6.0 s" in out.getvalue()
