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
