"""The replay's writer (tcpsim.pcap.replay.writer_feed, FEEDS): how a capture's bytes reach
the model's sender is a fitted unknown of `replay --fit`, pinnable with --writer-feed, and so
is how long each write holds the socket (--write-owns-socket); both engines replay every feed
alike."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tcpsim.engines import native_available
from tcpsim.pcap.fit import ORDER, Capture, Unknowns, fit
from tcpsim.pcap.replay import FEEDS, OPEN_CWND, replay_capture, writer_feed
from tcpsim.validate.report import text

from cli_entry import run_main

PCAPS = Path(__file__).parent.parent / "fixtures" / "pcaps"
PERIODIC = PCAPS / "veth-periodic-1448-1ms.pcap.gz"
# veth-periodic-1448-1ms's fit under linux-6.18 with the writer as sent (its other unknowns)
FITTED = Unknowns(reader="periodic:1455B/1ms", device="veth", phase_us=300, shrink=1,
                  owns_us=500)


def test_the_feeds_group_the_wire_s_transmissions():
    writes = [(0, 1448), (5_000, 1448),             # a burst: 5 us apart
              (1_000_000, 1448),                    # 1 ms later, no ACK before: a write
              (2_030_000, 1448), (2_034_000, 1448),  # 30 us after an ACK: let out by it
              (3_000_000, 1448)]                    # on its own again
    acks = [2_000_000]
    assert writer_feed(writes, acks, "as-sent") == writes == writer_feed(writes, acks, "paced")
    assert writer_feed(writes, acks, "backlogged") == [(0, 6 * 1448)]
    # a run of back-to-back transmissions is one write, whatever let it out
    assert writer_feed(writes, acks, "bursts") == [(0, 2 * 1448), (1_000_000, 1448),
                                                   (2_030_000, 2 * 1448), (3_000_000, 1448)]
    assert writer_feed(writes, acks, "pauses") == [(0, 2 * 1448), (1_000_000, 3 * 1448),
                                                   (3_000_000, 1448)]
    # the ACK's reach: a transmission later than react_ns after it started on its own
    assert writer_feed(writes, acks, "pauses", react_ns=20_000)[2] == (2_030_000, 2 * 1448)
    with pytest.raises(ValueError, match="writer feed 'bulk'"):
        writer_feed(writes, acks, "bulk")


def test_a_bulk_capture_fed_pauses_is_one_write_and_a_periodic_writer_keeps_its_writes():
    bulk = Capture(PERIODIC)                         # truth: a bulk writer
    assert len(bulk.write_ticks(bulk.k, 0, bulk.k.end_ns, "pauses", 21_500, 43_000)) == 1
    per = Capture(PCAPS / "veth-fast.pcap.gz")       # truth: 14480 B every 1 ms
    ticks = per.write_ticks(per.k, 0, per.k.end_ns, "pauses", 21_000, 42_000)
    assert len(ticks) > 0.8 * per.k.end_ns / 1e6     # about one write a millisecond
    assert max(n for _, n in ticks) <= 4 * 14480


def test_the_paced_feed_lets_the_capture_pace_the_sender_and_ranks_6_18_above_6_6():
    """Fed each segment's bytes when it left, the model's sender is never cwnd-limited where
    the kernel's bulk sender was, its cwnd grows later, and from the 22nd ACK it holds back
    what the kernel sent (ACK of 60817 where the capture's is of 74225); paced by the
    capture with its cwnd out of the way it follows the capture ACK for ACK."""
    cap = Capture(PERIODIC)
    g, rp = cap.replay("linux-6.18", (), FITTED, full=False)
    assert rp.plan.scenario.initcwnd == 10
    pg, prp = cap.replay("linux-6.18", (), Unknowns(**{**FITTED.__dict__, "writer": "paced"}),
                         full=False)
    assert prp.plan.scenario.initcwnd == OPEN_CWND
    assert pg.within_unit_fraction >= 0.85 > g.within_unit_fraction
    assert pg.total > g.total + 0.03
    f = fit(cap, "linux-6.18", pinned={k: getattr(FITTED, k) for k in
                                      ("reader", "device", "phase_us", "shrink", "owns_us")})
    assert f.best.writer == "paced" and f.grade.total >= pg.total
    old = fit(cap, "linux-6.6", pinned={"reader": "periodic:1455B/1ms", "device": "veth"})
    assert f.grade.total > old.grade.total + 0.02


def test_the_writer_is_an_unknown_of_the_fit_reported_like_the_others():
    assert ORDER[-2:] == ("writer", "wowns_us")      # swept after the rest (docs/pcap.md)
    cap = Capture(PCAPS / "veth-never.pcap.gz")
    f = fit(cap, "linux-6.18", pinned={"writer": "backlogged", "wowns_us": 30},
            order=("writer", "wowns_us", "device"))
    assert (f.best.writer, f.best.wowns_us) == ("backlogged", 30)
    shown = {x.name: (x.value, x.determined) for x in f.fitted}
    assert shown["writer"] == ("backlogged", "pinned") and shown["wowns_us"] == ("30 us", "pinned")
    _, rp = cap.replay("linux-6.18", (), f.best, full=False)
    assert rp.plan.scenario.writer.owns_socket == 30_000


@pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")
@pytest.mark.parametrize("feed", FEEDS)
def test_every_feed_and_the_writer_s_hold_replay_alike_on_both_engines(feed):
    u = Unknowns(**{**FITTED.__dict__, "writer": feed, "wowns_us": 30})
    out = {}
    for engine in ("python", "native"):
        cap = Capture(PERIODIC, until_s=0.06, engine=engine)
        g, rp = cap.replay("linux-6.18", (), u, full=False)
        out[engine] = (g.as_dict(), rp.columns, rp.write_size_mismatch)
    assert out["python"] == out["native"]


def test_writer_feed_pins_and_replays_without_a_fit(monkeypatch, capsys):
    v = replay_capture(PERIODIC, reader="periodic:1448B/1ms", until_s=0.1, feed="paced")
    assert "note: writer feed given: --writer-feed paced" in text(v.score)
    code, _, err = run_main(["replay", str(PERIODIC), "--writer-feed", "bulk"], monkeypatch,
                            capsys)
    assert code == 2 and err.strip().splitlines() == [
        "tcpsim: error: --writer-feed bulk: expected one of as-sent, bursts, paced, pauses, "
        "backlogged"]
    code, _, err = run_main(["replay", str(PERIODIC), "--write-owns-socket", "30us"],
                            monkeypatch, capsys)
    assert code == 2 and err.strip().splitlines() == [
        "tcpsim: error: --write-owns-socket 30us: pins an unknown of a fit; give --fit (or "
        "--profiles) with it"]
    code, _, err = run_main(["replay", str(PERIODIC), "--fit", "--write-owns-socket", "1.5us"],
                            monkeypatch, capsys)
    assert code == 2 and "--write-owns-socket 1.5us: give whole microseconds" in err


def test_a_burst_the_window_lets_out_is_replayed_as_one_write():
    """veth-periodic-small-writes-shrink1: while the window is shut the writer's 1448 B a
    millisecond wait in the socket; the ACK that opens it lets them out as one
    multi-segment skb (traced on 6.18: 12 segments), cut by software GSO into fresh skbs
    that merge in the reading receiver's backlog and join its queue whole. Fed each
    segment as it left, the model's sender sends one-segment skbs (clones on this device)
    that coalesce one by one, and the closed window reopens elsewhere."""
    cap = Capture(PCAPS / "veth-periodic-small-writes-shrink1.pcap.gz")
    truth = Unknowns(reader="periodic:1000B/1ms", device="veth-direct:tso=off", shrink=1,
                     phase_us=225, owns_us=100)
    sent = cap.replay("linux-6.18", (), truth, full=False)[0]
    burst = cap.replay("linux-6.18", (), replace(truth, writer="bursts"), full=False)[0]
    assert sent.within_unit_fraction < 0.5 < 0.6 < burst.within_unit_fraction
    assert burst.total > sent.total + 0.05
