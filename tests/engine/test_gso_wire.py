"""One GSO skb per transmission on a TSO local pair (Device.gso_whole; E7 in
docs/kernel-measurements.md): what the receiver is handed, in both engines."""

from __future__ import annotations

import pytest

import tcpsim
from tcpsim.core.devices import device
from tcpsim.engines import native_available

ENGINES = ["python", pytest.param("native", marks=pytest.mark.skipif(
    not native_available(), reason="tcpsim._native not built"))]


def _rx(engine: str, dev: object, **link: object) -> list[tuple[int, int]]:
    """(len, truesize) of the data segments the receiver was handed: one 20000-B write
    every 5 ms, read at once."""
    raw = {"name": "gso", "profile": "linux-6.18", "duration": "12ms",
           "timing": {"host": "exact"}, "link": {"rtt": "40us", "mtu": 1500, **link},
           "receiver": {"device": dev},
           "writer": {"kind": "periodic", "bytes": 20000, "every": "5ms"},
           "reader": {"kind": "fast"}}
    t = tcpsim.run(raw, engine=engine, trace=True).trace.to_pydict()
    return [(n, ts) for n, ts, sock, ev in zip(t["len"], t["truesize"], t["sock"], t["event"])
            if (sock, ev) == ("rcv", "rx") and n]


def test_only_a_shared_tso_sender_device_passes_gso_skbs_whole():
    assert device("loopback").gso_whole and device("veth-direct").gso_whole
    assert not device("loopback:tso=off").gso_whole
    assert not device("veth").gso_whole and not device("nic-4k").gso_whole


@pytest.mark.parametrize("engine", ENGINES)
def test_loopback_hands_the_receiver_one_skb_per_transmission(engine):
    # the kernel's first skbs over lo (E7): half the initial cwnd per skb (tcp_cwnd_test()),
    # then what the window allows, then one skb per write
    rx = _rx(engine, "loopback")
    assert [n for n, _ in rx] == [7240, 7240, 5520, 17376, 2624, 20000]
    assert all(ts == n + 832 for n, ts in rx)   # truesize of the whole, one sender head


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dev, link", [({"preset": "loopback", "tso": False}, {}),
                                       ("veth", {}), ("loopback", {"rate": "1gbit"})])
def test_without_tso_or_through_a_rate_limiter_the_wire_is_mss_sized(engine, dev, link):
    assert max(n for n, _ in _rx(engine, dev, **link)) == 1448
