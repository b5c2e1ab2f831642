"""The socket owned by the user and its backlog (tcpsim/core/backlog.py, native/src/backlog.rs):
tcp_add_backlog()'s coalescing and limit, release_sock()'s processing, the ACK deferred to
tcp_release_cb() on 6.7+, timers waiting for the release -- each in both engines."""

from __future__ import annotations

import pytest

from tcpsim.core.constants import NS_PER_US
from tcpsim.core.segment import ACK, PSH, Segment
from tcpsim.engines import native_available

from harness import established

ENGINES = ["python", pytest.param("native", marks=pytest.mark.skipif(
    not native_available(), reason="the native extension is not built"))]
MSS = 1448
HEAD = 832          # SKB_TRUESIZE of the veth sender skb's head (docs/kernel-measurements.md, E1)


def snap(peer):
    return peer.sk.snapshot()


def burst(peer, n: int, *, same_ts: bool = True, tx_segs: int = 10) -> None:
    """n MSS segments at once, as one skb of the peer's cut in software (tx_segs > 1: fresh
    skbs, which coalesce); each with its own timestamp unless `same_ts`."""
    for i in range(n):
        seg = Segment(peer.seq, MSS, ACK | PSH, 1, 502,
                      tsval=peer.now // 1_000_000 + 1 + (0 if same_ts else i),
                      tsecr=peer.echo)
        seg.tx_segs = tx_segs
        peer.sk.on_segment(peer.now, seg)
        peer.seq += MSS
    peer.take()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_burst_while_owned_waits_in_the_backlog_as_one_skb(engine):
    """Ten segments arriving while the reader holds the socket: nothing is processed or
    ACKed before the release; they are one skb in the backlog (nine TCPBacklogCoalesce),
    charged to sk_backlog.len as the veth skb's head plus the payload; at the release they
    are queued as that one skb, and 6.18 sends one ACK for the lot (tcp_release_cb)."""
    p = established("linux-6.18", engine=engine)
    p.sk.hold(p.now, 60 * NS_PER_US)
    rcv_nxt = snap(p)["rcv"]["rcv_nxt"]
    burst(p, 10)
    s = snap(p)
    assert s["rcv"]["rcv_nxt"] == rcv_nxt, "processed while the socket was owned"
    assert s["mib"]["TCPBacklogCoalesce"] == 9
    assert s["mem"]["sk_backlog_len"] == HEAD + 10 * MSS
    assert p.sk.next_deadline() == p.now + 60 * NS_PER_US
    assert not p.acks[-1].ack > rcv_nxt, "an ACK went out while owned"
    sent = len(p.acks)
    p.sk.on_timer(p.now + 60 * NS_PER_US)
    p.take()
    s = snap(p)
    assert s["rcv"]["rcv_nxt"] == rcv_nxt + 10 * MSS
    assert s["mem"]["sk_backlog_len"] == 0 and s["mem"]["owned_until"] == 0
    assert len(s["mem"]["receive_queue"]) == 1 and s["mem"]["receive_queue"][0]["len"] == 10 * MSS
    assert len(p.acks) == sent + 1 and p.acks[-1].ack == rcv_nxt + 10 * MSS


@pytest.mark.parametrize("engine", ENGINES)
def test_coalescing_stops_at_the_fragment_limit(engine):
    """skb_try_coalesce() takes at most MAX_SKB_FRAGS (17) fragments: twenty segments make
    two backlog skbs (a segment crossing a page of the writer's frag holds two fragments,
    so the first may take 16), each with its own head."""
    p = established("linux-6.18", engine=engine)
    p.sk.hold(p.now, 60 * NS_PER_US)
    burst(p, 20)
    s = snap(p)
    assert s["mem"]["sk_backlog_len"] == 2 * HEAD + 20 * MSS
    assert s["mib"]["TCPBacklogCoalesce"] == 18


@pytest.mark.parametrize("engine", ENGINES)
def test_different_timestamps_do_not_coalesce(engine):
    """tcp_add_backlog() merges only byte-identical options: a new tsval is a new skb."""
    p = established("linux-6.18", engine=engine)
    p.sk.hold(p.now, 60 * NS_PER_US)
    burst(p, 3, same_ts=False)
    s = snap(p)
    assert s["mib"]["TCPBacklogCoalesce"] == 0
    assert s["mem"]["sk_backlog_len"] == 3 * (HEAD + MSS)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_full_backlog_drops(engine):
    """sk_add_backlog() refuses an skb once sk_backlog.len + sk_rmem_alloc exceed 2 *
    sk_rcvbuf + sk_sndbuf / 2 + 64 KiB (6.18): TcpExtTCPBacklogDrop, nothing of it queued."""
    p = established("linux-6.18", engine=engine, so_rcvbuf=2304)     # sk_rcvbuf 4608
    s = snap(p)
    limit = 2 * s["mem"]["sk_rcvbuf"] + s["snd"]["sk_sndbuf"] // 2 + 65536
    p.sk.hold(p.now, 60 * NS_PER_US)
    n = limit // (HEAD + MSS) + 3
    burst(p, n, same_ts=False)
    s = snap(p)
    kept = limit // (HEAD + MSS) + 1             # the test is "more than the limit"
    assert s["mib"]["TCPBacklogDrop"] == n - kept
    assert s["mem"]["sk_backlog_len"] == kept * (HEAD + MSS)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("profile,acks", [("linux-6.18", 1), ("linux-6.8", 1), ("linux-6.6", 2),
                                          ("linux-6.1", 2)])
def test_the_ack_waits_for_tcp_release_cb_from_6_7(profile, acks, engine):
    """Two backlog skbs (the timestamps differ): 6.1 decides and sends an ACK per skb while
    __release_sock() runs; 6.8 and 6.18 (tcp_backlog_ack_defer, 6.7) send one from
    tcp_release_cb()."""
    p = established(profile, engine=engine)
    p.sk.hold(p.now, 60 * NS_PER_US)
    burst(p, 4)
    p.now += 1_000_000
    p.sk.hold(p.now - 1_000_000, 1_000_000 + 60 * NS_PER_US)
    burst(p, 4)
    sent = len(p.acks)
    p.sk.on_timer(p.sk.next_deadline())
    p.take()
    assert len(p.acks) - sent == acks


@pytest.mark.parametrize("engine", ENGINES)
def test_timers_wait_for_the_release(engine):
    """A delayed ACK due while the socket is owned runs at the release (tcp_delack_timer()
    defers to tcp_release_cb()): next_deadline() is the release until then."""
    p = established("linux-6.18", engine=engine)
    for _ in range(40):                           # past quick-ACK mode: a lone segment
        p.now += 1_000_000                        # arms the delayed-ACK timer
        burst(p, 1)
        if p.sk.next_deadline():
            break
    d = p.sk.next_deadline()
    assert d > p.now
    p.sk.hold(p.now, d - p.now + 500 * NS_PER_US)
    assert p.sk.next_deadline() == d + 500 * NS_PER_US
    sent = len(p.acks)
    p.sk.on_timer(d)                              # owned: nothing runs
    p.take()
    assert len(p.acks) == sent
    p.sk.on_timer(d + 500 * NS_PER_US)
    p.take()
    assert len(p.acks) == sent + 1


@pytest.mark.parametrize("engine", ENGINES)
def test_no_hold_no_backlog(engine):
    """A hold of 0 (the default) never owns the socket."""
    p = established("linux-6.18", engine=engine)
    p.sk.hold(p.now, 0)
    burst(p, 3)
    s = snap(p)
    assert s["mem"]["owned_until"] == 0 and s["mib"]["TCPBacklogCoalesce"] == 0
