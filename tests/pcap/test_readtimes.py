"""The reader's wakeups read off a capture (tcpsim.pcap.readtimes): a reader whose period
changes, its phases segmented from the read-drawn ACKs; late reads moved to the ACKs that
date them; the replay reader that ticks there, holding the socket like the scenario's; and
the grade that leaves those ACKs out of its ACK timing. On synthetic ACK times and on the
small real captures of tests/fixtures/pcaps (their truth files are given to no replay)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tcpsim.pcap import PcapError
from tcpsim.pcap.fit import Capture, Unknowns, candidates, fit
from tcpsim.pcap.grade import ack_timing
from tcpsim.pcap.readtimes import grid_ticks, phase_ticks, phases, place
from tcpsim.pcap.workload import parse_phased, parse_reader
from tcpsim.validate.trace import Ack

PCAPS = Path(__file__).parent.parent / "fixtures" / "pcaps"
OSC = PCAPS / "veth-oscillating.pcap.gz"
LO = PCAPS / "lo-periodic-4096-10ms.pcap.gz"
MS = 1_000_000
US = 1_000


def oscillating_acks(drop: set[int] = frozenset()) -> list[int]:
    """The read-drawn ACKs of a loop that reads every 2 ms, then every 20 ms from its tick
    past 100 ms, then every 2 ms again from its tick past 200 ms (scripts/record_plain_pcaps.py's
    loop: the period is chosen at each tick), 15 us after each read; `drop`: ticks whose
    read drew no ACK (the window did not open enough)."""
    out, tick = [], 300 * US
    while tick < 300 * MS:
        out.append(tick + 15 * US)
        tick += 20 * MS if 100 * MS <= tick - 300 * US < 200 * MS else 2 * MS
    return [a for i, a in enumerate(out) if i not in drop]


def test_a_reader_whose_period_changes_is_cut_into_phases_on_their_own_grids():
    acks = oscillating_acks(drop={3, 4, 9, 60})
    ph = phases(acks, 300 * MS)
    assert [p.every for p in ph] == [2 * MS, 20 * MS, 2 * MS]
    # the slow phase's grid reaches back to the tick after the fast one's last (100.3 ms);
    # the slow one's last read (200.3 ms) is the fast one's first: both read there
    assert ph[0].first == 315 * US and abs(ph[1].first - 120_315 * US) <= 10 * US
    assert ph[0].last < ph[1].first <= ph[1].last < ph[2].first
    assert abs(ph[2].first - 200_315 * US) <= 10 * US and ph[2].last == 300 * MS
    ticks = phase_ticks(ph, 4096, 0, 15 * US, 0)
    got = [t for t, _ in ticks]
    want = [a - 15 * US for a in oscillating_acks()]
    assert all(abs(g - w) <= 10 * US for g, w in zip(got, want)) and len(got) == len(want)


def test_a_steady_reader_is_one_phase_and_few_acks_none():
    acks = [300 * US + j * 2 * MS for j in range(100) if j % 3]
    ph = phases(acks, 200 * MS)
    assert len(ph) == 1 and ph[0].every == 2 * MS and ph[0].first == 2300 * US
    assert phases(acks[:1], 200 * MS) == []


def test_a_late_read_moves_to_the_ack_that_dates_it_and_nothing_else_moves():
    ticks = grid_ticks(0, 2 * MS, 10 * MS, 8192)
    assert [t for t, _ in ticks] == [0, 2 * MS, 4 * MS, 6 * MS, 8 * MS, 10 * MS]
    lag = 15 * US
    acks = [2 * MS + 20 * US,            # on its grid (5 us off): stays
            4 * MS + 215 * US,           # 200 us late: moved to 4.2 ms
            4 * MS + 900 * US,           # a second ACK of the same period: not a read
            6 * MS + 2 * MS + 500 * US]  # 8.5 ms: the 8 ms tick's, 485 us late
    rt = place(ticks, acks, 0, lag, 30 * US)
    assert [t for t, _ in rt.ticks] == [0, 2 * MS, 4200 * US, 6 * MS, 8485 * US, 10 * MS]
    assert rt.placed == frozenset({acks[1], acks[3]})
    # the shift maps the capture's axis onto the model's; no read moves past the next tick
    shifted = place(ticks, [a - 1 * MS for a in acks], 1 * MS, lag, 30 * US)
    assert shifted.ticks == rt.ticks and shifted.placed == {acks[1] - MS, acks[3] - MS}
    assert place(ticks, acks, 0, lag, 10 * MS).placed == frozenset()


def test_acks_that_placed_a_read_are_left_out_of_the_ack_timing():
    k = [Ack(1 * MS, 100, 1000, 10), Ack(5 * MS, 200, 1000, 10)]
    m = [Ack(1 * MS, 100, 1000, 10), Ack(9 * MS, 200, 1000, 10)]
    assert ack_timing(k, m) == 0.5
    assert ack_timing(k, m, frozenset({5 * MS})) == 1.0
    assert ack_timing(k, m, frozenset({1 * MS})) == 0.0
    assert ack_timing(k, m, frozenset({1 * MS, 5 * MS})) == 1.0


def test_the_oscillating_capture_shows_its_halves_and_where_they_switched():
    """veth-oscillating's reader: 4096 B every 2 ms, then every 20 ms, alternating every
    250 ms of a Python loop whose halves drift (the fast ones start at 512 and 1012 ms)."""
    cap = Capture(OSC)
    ph = cap.phases()
    assert [p.every // MS for p in ph] == [2, 20, 2, 20, 2, 20, 2]
    starts = [p.first / MS for p in ph]
    for got, want in zip(starts, [2.3, 272.4, 512.3, 772.4, 1012.3, 1272.4, 1514.3]):
        assert abs(got - want) < 0.2
    assert cap.phased() and cap.phased_size() in range(3900, 4300)
    assert "phased:4096B" in cap.reader_candidates()
    # a steady reader's capture has one phase: no phased candidate (its grid is the
    # periodic reader's)
    lo = Capture(LO)
    assert not lo.phased() and not any(c.startswith("phased:") for c in lo.reader_candidates())


def test_the_replay_reader_on_the_grid_is_the_scenarios_periodic_reader():
    """A read-placing candidate whose threshold no read reaches ticks exactly where the
    scenario's periodic reader reads, holding the socket the same: the same grade."""
    cap = Capture(LO)
    u = Unknowns(reader="periodic:4096B/10ms", device="veth", phase_us=600, owns_us=300)
    same = cap.replay("linux-6.18", (), replace(u, reads_us=10**9), full=False)[0]
    assert same == cap.replay("linux-6.18", (), u, full=False)[0]


def test_the_replay_reader_holds_the_socket_alike_on_both_engines():
    u = Unknowns(reader="periodic:4096B/10ms", device="veth", phase_us=600, owns_us=300,
                 reads_us=30)
    py = Capture(LO, engine="python", until_s=0.4)
    nat = Capture(LO, engine="native", until_s=0.4)
    g = nat.replay("linux-6.18", (), u, full=False)[0]
    assert py.replay("linux-6.18", (), u, full=False)[0] == g
    held = nat.replay("linux-6.18", (), replace(u, owns_us=0), full=False)[0]
    assert held != g                     # the hold is applied, not ignored


def test_the_phase_is_swept_in_5_us_steps_around_the_read_drawn_acks_bunch():
    """veth-tbf-periodic's reads draw ACKs 1.97--1.99 ms into each 2 ms period; with its late
    reads placed the grade moves by 0.1 between phases 10 us apart, so 5 us steps are tried."""
    cap = Capture(PCAPS / "veth-tbf-periodic.pcap.gz")
    assert set(range(1945, 1980, 5)) <= set(cap.phase_candidates(2000))


def test_a_candidate_that_places_reads_has_no_timing_to_fit():
    cap = Capture(OSC)
    cur = Unknowns(reader="phased:4096B")
    assert candidates(cap, "timing", cur) == ["exact"]
    assert candidates(cap, "reads_us", cur) == [0, 30, 100]
    assert candidates(cap, "reads_us", Unknowns(reader="blocking")) == [0]
    assert candidates(cap, "skip", cur) == [0, 1]


def test_the_oscillating_capture_is_fitted_by_a_phased_reader_within_a_unit():
    """The fit's periodic readers matched 66.6 % of veth-oscillating's windows within a
    unit; its phases read off the capture and its late reads placed, 87 %."""
    f = fit(Capture(OSC), "linux-6.18")
    assert f.best.reader == "phased:4096B" and f.best.reads_us
    assert f.grade.total >= 0.9 and f.grade.within_unit_fraction >= 0.8
    assert f.best.timing == "exact"


def test_a_phased_reader_is_a_fitted_one():
    assert parse_phased("phased:4096B") == 4096 == parse_phased("phased:4096")
    for bad in ("phased:", "phased:0B", "phased:4k"):
        with pytest.raises(PcapError, match="phased:BYTES"):
            parse_phased(bad)
    with pytest.raises(PcapError, match="give --fit"):
        parse_reader("phased:4096B")


def tcpsim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tcpsim.cli", *args], capture_output=True, text=True)


def test_the_read_placing_pins_need_a_fit_and_say_so_in_one_line():
    for args in (["--reader", "phased:4096B"], ["--late-reads", "30us"],
                 ["--fit", "--reader", "phased:big"], ["--fit", "--late-reads", "1.5us"]):
        r = tcpsim("replay", str(LO), *args)
        assert r.returncode == 2 and r.stderr.startswith("tcpsim: error:"), (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1
