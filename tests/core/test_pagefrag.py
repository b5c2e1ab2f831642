"""The writer's page frag (tcpsim/core/pagefrag.py): where a sender's bytes lie in memory,
hence the page fragments of each segment -- the layout skb_try_coalesce() counts against
MAX_SKB_FRAGS at the receiver of a local pair."""

from __future__ import annotations

import pytest

from tcpsim.catalog import get_profile
from tcpsim.core.constants import SKB_FRAG_PAGE_SIZE
from tcpsim.core.devices import device, sender_frags
from tcpsim.core.pagefrag import PageFrag
from tcpsim.engine.simulation import Simulation
from tcpsim.scenario import scenario_from_dict

MSS = 1448


def test_a_stream_is_laid_out_page_after_page():
    """22 writes of 1448 B fill 31856 B of the first 32 KiB page; the 23rd crosses into the
    second and so holds two fragments -- the layout of sender_frags()."""
    pf = PageFrag()
    for k in range(30):
        pf.copy(1 + k * MSS, MSS, False)
    assert pf.frags(1 + 22 * MSS, MSS) == 2 == sender_frags(1 + 22 * MSS, MSS)
    assert pf.frags(1 + 21 * MSS, MSS) == 1
    assert list(pf.breaks) == [1, 1 + SKB_FRAG_PAGE_SIZE]


def test_a_free_page_restarts_at_offset_zero():
    """skb_page_frag_refill(): a page nothing else references is reused from its start, so
    every later page boundary falls one write further on."""
    pf = PageFrag()
    pf.reuse = True
    pf.copy(1, MSS, False)
    pf.on_peer(True, 10)
    pf.on_peer(False, 20)
    assert not pf.page_free(False, 15), "unacknowledged bytes hold the page"
    assert pf.page_free(True, 15)
    pf.copy(1 + MSS, MSS, True)
    assert pf.offset == MSS and pf.breaks[-1] == 1 + MSS
    for k in range(2, 30):
        pf.copy(1 + k * MSS, MSS, False)
    assert pf.frags(1 + 22 * MSS, MSS) == 1
    assert pf.frags(1 + 23 * MSS, MSS) == 2


def test_a_deferred_free_needs_a_transmission_after_it():
    """skb_attempt_defer_free(): the reader's free reaches the page only at the writer's
    next transmission (its CPU's NET_RX softirq)."""
    pf = PageFrag()
    pf.copy(1, MSS, False)
    pf.on_peer(True, 10)
    pf.on_peer(False, 20)
    assert not pf.page_free(True, 15)
    assert pf.page_free(True, 25)


def test_a_full_page_takes_a_new_one_and_old_breaks_are_forgotten():
    """A page is left when it is full (the 32-byte rule is not modelled: pagefrag.py)."""
    pf = PageFrag()
    pf.copy(1, SKB_FRAG_PAGE_SIZE - 8, False)
    pf.copy(SKB_FRAG_PAGE_SIZE - 7, 100, False)
    assert pf.offset == 92
    assert pf.frags(SKB_FRAG_PAGE_SIZE - 7, 100) == 2
    assert pf.frags(SKB_FRAG_PAGE_SIZE + 1, 40) == 1
    pf.release(SKB_FRAG_PAGE_SIZE + 1)
    assert list(pf.breaks) == [SKB_FRAG_PAGE_SIZE + 1]


def test_the_receivers_skb_takes_the_senders_fragments():
    """A segment that says its fragments is laid out as the sender laid it, whatever its
    stream offset; one that does not falls back to sender_frags()."""
    dev = device("veth-direct:tso=off")
    assert dev.make_skb(1, MSS, False, 0, 1, frags=2).nfrags == 2
    assert dev.make_skb(1, MSS, False, 0, 1).nfrags == 1
    from tcpsim.engines import native_available
    if native_available():
        from tcpsim import _native
        assert _native.make_skb("veth-direct:tso=off", 1, MSS, False, 0, 1, 2)["nfrags"] == 2


def _small_writes(reuse: bool) -> dict:
    return {"name": "small-writes", "profile": "linux-6.18", "duration": "200ms",
            "link": {"rtt": "20us", "mtu": 1500},
            "receiver": {"device": {"preset": "veth-direct", "tso": False, "reuse": reuse}},
            "writer": {"kind": "periodic", "bytes": MSS, "every": "1ms", "latency": "none"},
            "reader": {"kind": "fast", "latency": "none"}}


@pytest.mark.parametrize("reuse", [False, True])
def test_a_fast_reader_frees_the_page_only_when_its_frees_are_immediate(reuse):
    """One write of 1448 B a millisecond read at once: with the reader's frees immediate
    the page restarts at offset 0 while the connection idles, so it never reaches a second
    page; deferred (the default), the stream runs on page after page."""
    sim = Simulation(scenario_from_dict(_small_writes(reuse)), get_profile("linux-6.18"))
    sim.run()
    pf = sim.snd.pfrag
    written = sim.snd.snd.write_seq - 1
    if reuse:
        assert pf.offset < 4 * MSS and (pf.breaks[-1] - 1) % SKB_FRAG_PAGE_SIZE
    else:
        assert pf.offset == written % SKB_FRAG_PAGE_SIZE
        assert pf.breaks[-1] == 1 + written // SKB_FRAG_PAGE_SIZE * SKB_FRAG_PAGE_SIZE
