"""The objectives, one by one, on made-up summaries: what each reads and how it counts."""

from __future__ import annotations

import pytest

from tcpsim.searching.objective import OBJECTIVES, evaluate

COUNTERS = {"TcpExtTCPRcvQDrop": 2, "TcpExtTCPOFODrop": 1, "TcpExtTCPZeroWindowDrop": 5,
            "TcpExtBeyondWindow": 7}
SUMMARY = {"peak_sk_rcvbuf": 1_048_576, "peak_sk_rmem_alloc": 2_097_152, "drops": 15,
           "zero_windows_sent": 3, "window_probes": 9, "died_at_s": None, "duration_s": 10.0,
           "goodput_mbps": 4.5}
REFERENCE = ({**SUMMARY, "peak_sk_rcvbuf": 131072}, COUNTERS)


@pytest.mark.parametrize("name, expected", [
    ("rcvbuf_ratio", 8.0), ("rmem_ratio", 16.0),
    ("inwindow_drops", 3.0),          # RcvQDrop + OFODrop: not zero-window or beyond-window
    ("drops", 15.0), ("zero_windows", 3.0), ("window_probes", 9.0), ("death", 0.0),
    ("goodput_lost", -4.5),           # minus the goodput: a difference is the goodput lost
])
def test_each_objective_reads_its_numbers(name: str, expected: float) -> None:
    ref = REFERENCE if OBJECTIVES[name].reference else None
    assert evaluate(OBJECTIVES[name], (SUMMARY, COUNTERS), ref) == pytest.approx(expected)


def test_death_counts_earlier_deaths_as_worse() -> None:
    early = evaluate(OBJECTIVES["death"], ({**SUMMARY, "died_at_s": 2.0}, COUNTERS), None)
    late = evaluate(OBJECTIVES["death"], ({**SUMMARY, "died_at_s": 9.0}, COUNTERS), None)
    assert early == pytest.approx(1.8) and late == pytest.approx(1.1) and early > late >= 1.0
