"""The token-bucket link (`[link] kind = "tbf"`, tcpsim/engine/link.py): validation, the
shaped rate, the burst and the byte limit."""

from __future__ import annotations

import random

import pytest

from tcpsim.core.segment import Segment
from tcpsim.engine.link import TBF_OVERHEAD, LinkDirection
from tcpsim.engine.scheduler import Scheduler
from tcpsim.errors import ScenarioError
from tcpsim.scenario import scenario_from_dict


def _link(**t: object):
    return scenario_from_dict({"name": "x", "link": {"rtt": "2ms", **t}}).link


def test_tbf_fields_parse_as_tc_writes_them() -> None:
    link = _link(kind="tbf", rate="200mbit", burst="32kb", limit="3mb")
    assert (link.kind, link.rate_bps, link.burst, link.limit) == ("tbf", 200_000_000, 32768,
                                                                   3 << 20)
    assert _link(kind="tbf", rate="1mbit", burst=12500, limit="64KiB").burst == 12500


@pytest.mark.parametrize("fields,msg", [
    ({"kind": "tbf", "rate": "1mbit", "burst": 1500}, 'link.limit: required for kind = "tbf"'),
    ({"kind": "tbf", "burst": 1500, "limit": 3000}, "link.rate: required"),
    ({"kind": "tbf", "rate": "1mbit", "burst": 1500, "limit": 3000, "queue_limit": 5},
     "link.queue_limit: a FIFO field"),
    ({"burst": 1500}, 'link.burst: a token-bucket field; add kind = "tbf"'),
    ({"kind": "htb"}, 'link.kind: expected "fifo" or "tbf"'),
])
def test_bad_tbf_fields_name_the_field(fields: dict, msg: str) -> None:
    with pytest.raises(ScenarioError, match=msg):
        _link(**fields)


def test_a_fifo_link_keeps_its_metadata() -> None:
    sc = scenario_from_dict({"name": "x", "link": {"rtt": "2ms", "rate": "1mbit"}})
    assert "kind" not in sc.as_dict()["link"] and "burst" not in sc.as_dict()["link"]


def _departures(n: int, payload: int, rate: int, burst: int, limit: int) -> list[int]:
    """Arrival times at the far end (delay 0) of n packets all sent at time 0."""
    sched = Scheduler()
    got: list[int] = []
    link = LinkDirection(sched, lambda seg: got.append(sched.now), 0, rate, 1000, 0.0,
                         random.Random(0), 0, random.Random(1), burst, limit)
    for _ in range(n):
        link.send(Segment(0, payload, 0))
    sched.run(1 << 40)
    return got


def test_the_bucket_passes_its_burst_at_once_then_the_rate() -> None:
    size = 1000 + TBF_OVERHEAD
    t = _departures(5, 1000, 8_000_000, burst=2 * size, limit=10 * size)   # 1 byte per us
    assert t[:2] == [0, 0]                              # the full bucket: two at once
    assert t[2:] == [size * 1000, 2 * size * 1000, 3 * size * 1000]


def test_the_byte_limit_drops_what_does_not_fit() -> None:
    size = 1000 + TBF_OVERHEAD
    # the first leaves at once on the full bucket; three wait in the 3-packet backlog
    assert len(_departures(10, 1000, 8_000_000, burst=size, limit=3 * size)) == 4
