"""tcpsim.sweeps.progress: plain lines on a non-terminal, the closing summary, the ETA."""

import io

from tcpsim.sweeps import progress as prog
from tcpsim.sweeps.progress import Progress, fmt_duration


def test_plain_lines_every_few_seconds_and_a_summary(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(prog.time, "monotonic", lambda: now[0])
    out = io.StringIO()
    p = Progress(10, 2, stream=out)
    with p:
        for step in range(4):
            now[0] += 2.0
            p.point_done(failed=step == 1)
    lines = out.getvalue().splitlines()
    # a line at 6 s after the start (>= 5 s since the last), not at every point
    assert lines == ["sweep: 5/10 points, 1 failed, ETA 10.0 s"]
    assert p.summary("results: r") == ("sweep: 6/10 points in 8.0 s: 4 run, 2 already done, "
                                       "1 failed; results: r")


def test_quiet_and_terminal_modes_write_no_plain_lines():
    out = io.StringIO()
    with Progress(3, 0, stream=out, enabled=False) as p:
        p.point_done(False)
    assert out.getvalue() == ""
    out = io.StringIO()
    with Progress(3, 0, stream=out, fancy=True) as p:      # rich, transient: cleared at the end
        for _ in range(3):
            p.point_done(False)
    assert "sweep: " not in out.getvalue()


def test_fmt_duration():
    assert [fmt_duration(s) for s in (3.21, 65, 7260)] == ["3.2 s", "1m05s", "2h01m"]


def _simulated_sweep(costs, workers, startup_s, check_after):
    """Run a sweep's schedule on a fake clock: `workers` take points in order, each point
    costing costs[i] seconds after a start-up of `startup_s`; returns (ETA shown, truth) once
    `check_after` points have finished."""
    now = [0.0]
    p = Progress(len(costs), 0, stream=io.StringIO(), enabled=False, workers=workers,
                 clock=lambda: now[0])
    free = [startup_s] * workers
    finish = []
    for c in costs:
        w = min(range(workers), key=lambda k: free[k])
        free[w] += c
        finish.append((free[w], c))
    finish.sort()
    end = finish[-1][0]
    for n, (t, c) in enumerate(finish, start=1):
        now[0] = t
        p.point_done(False, cost_s=c)
        if n == check_after:
            return p.eta(), end - t
    raise AssertionError("unreached")


import random

import pytest


@pytest.mark.parametrize("workers, startup_s, spread", [
    (1, 3.0, 0.0), (1, 0.2, 0.5), (2, 3.0, 0.5), (4, 8.0, 0.3), (2, 0.0, 0.9)])
def test_eta_is_within_half_of_the_truth_after_a_fifth_of_the_points(workers, startup_s, spread):
    rng = random.Random(workers * 100 + int(spread * 10))
    costs = [1.0 + rng.uniform(-spread, spread) for _ in range(50)]
    eta, truth = _simulated_sweep(costs, workers, startup_s, check_after=10)
    assert eta is not None and abs(eta - truth) <= 0.5 * truth, (eta, truth)


def test_the_eta_counts_down_between_points_and_is_none_before_the_first():
    now = [0.0]
    p = Progress(4, 0, enabled=False, clock=lambda: now[0])
    assert p.eta() is None
    now[0] = 2.0
    p.point_done(False, cost_s=2.0)
    assert p.eta() == 6.0
    now[0] = 3.0
    assert p.eta() == 5.0


def test_a_resumed_sweep_shows_its_stored_points_and_does_not_count_them_into_the_rate():
    now = [0.0]
    out = io.StringIO()
    p = Progress(10, 0, stream=out, fancy=True, clock=lambda: now[0])
    with p:
        p.set_resumed(6)
        assert p._bar.tasks[0].completed == 6
        now[0] = 1.0
        p.point_done(False, cost_s=1.0)
        assert p.done == 7 and p.eta() == 3.0      # 3 points left at 1 s each, not 6/1 s
