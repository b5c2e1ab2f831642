"""Time stalled (tcpsim/searching/stall.py): the sender's rwnd_limited time and the
receiver's zero-window time, read from a trace; and a search that finds a real stall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tcpsim
from tcpsim.engines import native_available
from tcpsim.report.trace import Trace
from tcpsim.runner import RunOptions
from tcpsim.scenario import read_scenario_file
from tcpsim.searching.objective import OBJECTIVES, evaluate
from tcpsim.searching.stall import attempt, rwnd_limited_ns, zero_window_ns
from tcpsim.sweeps.grid import _build_point

MS = 1_000_000


def _trace(rows: list[tuple]) -> Trace:
    keys = ("t_ns", "sock", "event", "len", "snd_una", "snd_nxt", "snd_wnd", "win_raw")
    return Trace.from_columns({k: [r[i] for r in rows] for i, k in enumerate(keys)})


def test_rwnd_limited_counts_from_the_window_edge_to_the_send_it_allowed() -> None:
    """3000 B written into a 2000 B window: the segment after the first 2000 B waits from
    the send that reached the edge (t=0) to the send the opened window allowed (t=10 ms);
    after that nothing is unsent, and a window too small for data never written is no stall."""
    tr = _trace([
        (0, "snd", "write", 3000, 1, 1, 2000, -1),          # window admits the first MSS
        (0, "snd", "tx", 2000, 1, 2001, 2000, -1),          # at the edge, 1000 B unsent
        (10 * MS, "snd", "tx", 1000, 2001, 3001, 2000, -1),  # window opened: sent
        (20 * MS, "snd", "write", 5000, 3001, 3001, 100, -1),  # 100 B window < one MSS
        (25 * MS, "snd", "tx", 100, 3001, 3101, 100, -1),
    ])
    assert rwnd_limited_ns(tr, 1000, 30 * MS) == 10 * MS + 10 * MS   # 0-10 ms, 20-30 ms
    assert rwnd_limited_ns(tr, 1000, 22 * MS) == 10 * MS + 2 * MS    # the run ends at 22 ms


def test_zero_window_time_runs_from_closing_to_reopening() -> None:
    tr = _trace([
        (0, "rcv", "tx", 0, 0, 0, 0, 0),                    # the SYN's window: not a stall
        (1 * MS, "rcv", "tx", 0, 0, 0, 0, 100),
        (2 * MS, "rcv", "tx", 0, 0, 0, 0, 0),               # closed
        (5 * MS, "rcv", "tx", 0, 0, 0, 0, 0),               # still closed
        (7 * MS, "rcv", "tx", 0, 0, 0, 0, 50),              # open again
        (9 * MS, "rcv", "tx", 0, 0, 0, 0, 0),               # closed to the end
    ])
    assert zero_window_ns(tr, 10 * MS) == 5 * MS + 1 * MS


def test_objectives_read_the_stall_fields() -> None:
    run = ({"rwnd_limited_s": 1.5, "zero_window_s": 0.25}, {})
    assert evaluate(OBJECTIVES["time_stalled"], run, None) == 1.5
    assert evaluate(OBJECTIVES["zero_window_time"], run, None) == 0.25
    assert OBJECTIVES["time_stalled"].trace and not OBJECTIVES["inwindow_drops"].trace


@pytest.mark.parametrize("profile", ["linux-6.17", "linux-6.18.0", "linux-6.18"])
def test_the_admission_revert_workload_does_not_stall_the_sender(profile: str) -> None:
    """rpc-loopback (80 kB every 1 ms, read every 3 ms) with the skbs loopback carries (one
    GSO skb per transmission, docs/kernel-measurements.md E7): DRS grows sk_rcvbuf from the
    first reads, so neither the stricter admission (6.17, 6.18.0) nor the revert (6.18)
    holds the sender on its window for more than a few ms of the 2 s (6.17: 9 ms; before
    whole GSO skbs, MSS-sized clones kept sk_rcvbuf small and 6.18.0 stalled for the whole
    run). The same run's summary is the plain run's plus the stall fields."""
    raw, src = read_scenario_file("rpc-loopback")
    p = _build_point(0, raw, src, {}, RunOptions(profile=profile))
    summary, counters, err = attempt(p)
    assert not err and summary is not None
    assert summary["rwnd_limited_s"] < 0.01 * summary["duration_s"]
    assert summary["zero_window_s"] <= summary["rwnd_limited_s"]
    plain = tcpsim.run("rpc-loopback", profile=profile).summary
    assert {k: v for k, v in summary.items() if k not in ("rwnd_limited_s", "zero_window_s",
                                                          "wall_s")} == \
        {k: v for k, v in plain.items() if k != "wall_s"}


def test_stall_search_finds_617_autotuning_holding_the_sender_back(tmp_path: Path) -> None:
    """The shipped sender-stalls search (6.17 minus 6.14), budget 48 workloads of 2 s, seed
    1 (~150 runs with their traces, a few seconds): it finds a plain stream the 6.17
    receiver holds back on its window that 6.14 never does -- no drops involved -- and
    which 6.18 (aa251c84636c "tcp: fix too slow tcp_rcvbuf_grow() action", whose message
    says the earlier change "limited how fast a sender can increase BDP at each RTT") no
    longer holds back."""
    res = tcpsim.search("sender-stalls", budget=48, jobs=1, out=tmp_path)
    assert res.finding is not None
    f = res.finding
    assert f.sides["policy"] >= 0.5 and f.sides["vs"] < 0.1 * f.sides["policy"]
    assert f.summaries["policy"]["drops"] == 0                 # not the admission check
    raw, src = read_scenario_file(str(tmp_path / "finding" / "scenario.toml"))
    after = attempt(_build_point(0, raw, src, {}, RunOptions(profile="linux-6.18")))[0]
    assert after is not None and after["rwnd_limited_s"] < 0.25 * f.sides["policy"]
    record = json.loads((tmp_path / "finding" / "finding.json").read_text())
    assert record["objective"] == "time_stalled"
    assert record["peaks"]["policy"]["rwnd_limited_s"] == f.sides["policy"]
    assert (tmp_path / "finding" / "compare.txt").is_file()


@pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")
@pytest.mark.parametrize("experiment, profile", [("ntb-jumbo-rx", "linux-6.17"),
                                                 ("seed-rcvbuf32k-fill", "linux-6.1")])
def test_both_engines_give_the_same_stall_times(experiment: str, profile: str) -> None:
    """The stall times come from the trace both engines write: the Python engine's rows and
    the native engine's Arrow groups read the same (ntb-jumbo-rx: a partial window;
    seed-rcvbuf32k-fill: a zero window)."""
    got = []
    for engine in ("native", "python"):
        raw, src = read_scenario_file(experiment)
        raw.update(engine=engine, duration="0.5s")
        summary, _, err = attempt(_build_point(0, raw, src, {}, RunOptions(profile=profile)))
        assert not err and summary is not None
        got.append((summary["rwnd_limited_s"], summary["zero_window_s"]))
    assert got[0] == got[1] and got[0][0] > 0.4
