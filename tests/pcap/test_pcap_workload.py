"""The workload a capture implies (tcpsim.pcap.workload): the reader's grid read off the
window updates, and the readers `--reader` takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tcpsim.importers.pcap import load
from tcpsim.pcap import PcapError
from tcpsim.pcap.workload import parse_reader, read_grid

PCAPS = Path(__file__).parent.parent / "fixtures" / "pcaps"
MS = 1_000_000


def test_a_grid_is_the_longest_period_the_updates_sit_on():
    # updates at some of a 10 ms reader's reads (x0.6 ms), a few tens of us late
    times = [t * 10 * MS + 600_000 + j for t, j in zip((7, 12, 18, 25, 30, 35, 40, 46, 48, 53),
                                                     (0, 40, 10, 70, 30, 0, 20, 50, 10, 60))]
    period, phase = read_grid(times)
    assert period == 10 * MS                  # 5 ms and 1 ms concentrate too: the longest wins
    assert 600_000 <= phase <= 640_000
    # every 1 ms at x.23 ms: 2 ms and longer spread the phases
    ones = [t * MS + 230_000 for t in (221, 244, 267, 290, 313, 337, 361, 382, 389, 412)]
    assert read_grid(ones) == (MS, 230_000)


def test_no_grid_from_scattered_or_too_few_updates():
    import random
    rng = random.Random(28)
    scattered = sorted(rng.randrange(2000 * MS) for _ in range(40))
    assert read_grid(scattered) is None
    assert read_grid([10 * MS, 20 * MS, 30 * MS]) is None


def test_the_10ms_reader_is_inferred_on_its_grid_not_as_a_1ms_rate():
    """The issue's complaint: "the importer inferred 388 B every 1 ms for that reader (the
    rate right, the grain wrong)". The capture's window updates (sent by the reader's
    recv()) all fall at x0.6 ms on a 10 ms grid."""
    imp = load(PCAPS / "lo-periodic-4096-10ms-shrink1.pcap.gz")
    r = imp.scenario["reader"]
    assert (r["kind"], r["every"]) == ("periodic", "10ms")
    assert abs(r["bytes"] - 4096) < 0.05 * 4096
    assert r["start"].endswith("ns") and 500_000 < int(r["start"][:-2]) < 700_000
    assert "every 10 ms from 0.6" in imp.meta["summary"]["reader"]


def test_an_oscillating_reader_can_be_given():
    assert parse_reader("oscillating:4096B/2ms,4096B/20ms,250ms") == {
        "kind": "oscillating", "bytes": 4096, "every": "2000000ns", "bytes2": 4096,
        "every2": "20000000ns", "period": "250000000ns"}
    with pytest.raises(PcapError, match="oscillating"):
        parse_reader("oscillating:4096B/0ms,4096B/20ms,250ms")
