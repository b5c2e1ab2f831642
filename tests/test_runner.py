"""tcpsim.runner: the long-run note (a very long --duration is announced, once, with an
estimate; a short one says nothing). The wall clock is injected: nothing here is timed."""

from tcpsim.runner import pace_note

S = 10**9


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_a_long_run_is_announced_once_with_an_estimate():
    clock, notes, seen = FakeClock(), [], []
    cb = pace_note(100_000_000 * S, notes.append, seen.append, clock=clock)
    clock.t += 1.0
    cb(5 * S)                       # too early to judge the pace
    assert notes == []
    clock.t += 1.0
    cb(10 * S)                      # 10 simulated s in 2 wall s: 2e7 s left = 231 days
    clock.t += 5.0
    cb(20 * S)
    assert len(notes) == 1 and notes[0].startswith("this run will take about 231.5 days more")
    assert "(10 of 100000000 simulated seconds in 2 s)" in notes[0]
    assert seen == [5 * S, 10 * S, 20 * S]          # the progress bar still gets every call


def test_a_short_run_says_nothing():
    clock, notes = FakeClock(), []
    cb = pace_note(60 * S, notes.append, clock=clock)
    clock.t += 2.0
    cb(30 * S)                      # 2 s left
    clock.t += 2.0
    cb(60 * S)
    assert notes == []


def test_cli_run_passes_the_note_to_stderr(monkeypatch, capsys):
    import json

    from cli_entry import run_main

    import tcpsim.runner as runner
    monkeypatch.setattr(runner, "_PACE_AFTER_S", 0.0)
    monkeypatch.setattr(runner, "LONG_RUN_S", -1.0)     # any run counts as long
    code, out, err = run_main(["run", "seed-unbounded-growth", "-d", "5s", "--json", "--no-progress",
                               "--timing", "exact"], monkeypatch, capsys)   # exact: no early stall
    assert code == 0 and json.loads(out)["summary"]["events"] > 16384   # one progress call
    assert err.startswith("tcpsim: note: this run will take about") and err.count("\n") == 1
