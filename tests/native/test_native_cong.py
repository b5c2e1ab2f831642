"""The congestion control (tcpsim/core/cong, native/src/cong) in both engines, in lockstep:
a sender driven through slow start with HyStart, a fast retransmit (ssthresh from the
algorithm: CUBIC's recalc_ssthresh; with SACK found by RACK and paced by PRR,
tcpsim/core/recovery.py, without SACK NewReno's three duplicate ACKs), congestion
avoidance on the cubic curve, an idle
period (slow start after idle, CUBIC's CA_EVENT_TX_START), and an RTO (TCP_CA_Loss). Both
sockets are compared field by field after every step (tests/native/test_native_socket.py's
Pair); each test also checks that the program reached the path it is about, so it cannot
pass by never getting there. The receiver lockstep machine (test_lockstep.py) drives no
sender, so these are the lockstep runs of the sender's algorithms."""

from __future__ import annotations

import random

import pytest

from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.segment import ACK, SYN, Segment

from tests.native.test_native_socket import Pair, handshake

CASES = [pytest.param(p, cc, hz, sack, id=f"{p}-{cc}-hz{hz}" + ("" if sack else "-nosack"))
         for p, cc, hz, sack in [("linux-5.15", "cubic", 0, True),
                                 ("linux-6.6", "cubic", 250, True),
                                 ("linux-6.14", "cubic", 0, True),
                                 ("linux-6.18", "cubic", 1000, True),
                                 ("linux-6.18", "cubic", 0, False),
                                 ("linux-6.18", "reno", 0, False)]]


def ack_at(p: Pair, t_ns: int, ackno: int, win: int = 65535,
           sacks: tuple[tuple[int, int], ...] = ()) -> None:
    p.segment(t_ns, Segment(1, 0, ACK, ackno, win, tsval=t_ns // NS_PER_MS + 1, tsecr=1,
                            sacks=sacks))


def acked_by(p: Pair, t_ns: int, rtt_ns: int, most: int = 4) -> int:
    """The cumulative ACK a peer sends at t: the segments sent at least rtt ago, at most
    `most` more than last time (the path's bottleneck spaces the ACKs)."""
    ack = p.py.snd.snd_una
    for i, e in enumerate(p.py.snd.rtx_queue):
        if e[2] + rtt_ns > t_ns or i == most:
            break
        ack = e[1]
    return ack


def random_sacks(rng: random.Random, snd) -> tuple[tuple[int, int], ...]:
    """SACK blocks a receiver missing some of the queue might send: a run of queued
    segments past the head, sometimes behind a D-SACK below the ACK, sometimes none."""
    q = snd.rtx_queue
    r = rng.random()
    if r < 0.15 or len(q) < 2:
        return ()
    i = rng.randrange(1, len(q))
    j = rng.randrange(i, min(len(q), i + 8))
    block = (q[i][0], q[j][1])
    if r < 0.3 and snd.snd_una > 1449:
        return ((snd.snd_una - 1448, snd.snd_una), block)             # D-SACK, then SACK
    return (block,)


def run_rounds(p: Pair, t: int, until: int, rtt_of, step: int = NS_PER_MS // 2,
               write: bool = True) -> int:
    """ACK every half ms what the path delivered (rtt_of(p) ns after sending), firing
    timers that fall due, a bulk writer keeping the send buffer full (`write`); returns the
    time reached."""
    while t < until:
        t += step
        if write and p.py.can_queue():
            p.do("write", t, 1 << 20)
        d = p.nat.next_deadline()
        if d and d <= t:
            p.do("on_timer", d)
        ack = acked_by(p, t, rtt_of(p))
        if ack > p.py.snd.snd_una:
            ack_at(p, t, ack)
    return t


@pytest.mark.parametrize(("profile", "cc", "hz", "sack"), CASES)
def test_sender_paths_agree(native, profile, cc, hz, sack):
    p = Pair(profile, sysctl={"net.ipv4.tcp_congestion_control": cc,
                              "net.ipv4.tcp_wmem": [4096, 16384, 16 << 20]}, hz=hz)
    handshake(p, "client", sack=sack)
    t = 2 * NS_PER_MS
    p.do("write", t, 6 << 20)
    # slow start; the queue builds with the flight (1 us of RTT per segment in flight)
    def rtt(sk): return 20 * NS_PER_MS + 40_000 * len(sk.py.snd.rtx_queue)
    t = run_rounds(p, t, 400 * NS_PER_MS, rtt)
    snd = p.py.snd
    if cc == "cubic":
        assert snd.ca_found                                          # HyStart left slow start
    # a loss: three duplicate ACKs, or with SACK one ACK SACKing three segments past the
    # head (RACK's dupthresh fallback marks the head lost, PRR lets it out at once)
    cwnd = snd.snd_cwnd
    if sack:
        q = snd.rtx_queue
        t += 100_000
        ack_at(p, t, snd.snd_una, sacks=((q[1][0], q[3][1]),))
        assert snd.sacked_out == 3 and snd.prior_cwnd == cwnd and q[0][3] == 1
    else:
        for _ in range(3):
            t += 100_000
            ack_at(p, t, snd.snd_una)
    assert p.py.mib.TCPFastRetrans == 1
    want = max(cwnd * 717 // 1024, 2) if cc == "cubic" else max(cwnd >> 1, 2)
    assert snd.snd_ssthresh == want
    if cc == "cubic":
        assert snd.ca_last_max_cwnd == cwnd and snd.ca_epoch_start == 0
    # recovery (NewReno: one hole per partial ACK), then congestion avoidance on the curve
    flat = lambda sk: 20 * NS_PER_MS                                 # noqa: E731
    while snd.in_recovery:
        t = run_rounds(p, t, t + 100 * NS_PER_MS, flat)
    t = run_rounds(p, t, t + 1000 * NS_PER_MS, flat)
    if cc == "cubic":
        assert snd.ca_epoch_start and snd.ca_k > 0 and snd.ca_cnt >= 2
    # idle: the writer stops, everything is acked, 3 s pass, then a new write
    while snd.rtx_queue or snd.write_queue:
        t = run_rounds(p, t, t + 100 * NS_PER_MS, flat, step=NS_PER_MS // 4, write=False)
    t += 3000 * NS_PER_MS
    epoch = snd.ca_epoch_start
    before = snd.snd_cwnd
    assert before > snd.initcwnd
    p.do("write", t, 1 << 20)
    assert snd.snd_cwnd < before                                     # tcp_cwnd_restart()
    if cc == "cubic":
        assert epoch and snd.ca_epoch_start > epoch                  # CA_EVENT_TX_START
    # the peer goes quiet: RTO, TCP_CA_Loss
    while not p.py.mib.TCPTimeouts:
        p.do("on_timer", p.nat.next_deadline())
    assert snd.snd_cwnd == 1
    if cc == "cubic":
        assert snd.ca_last_max_cwnd == 0 and not snd.ca_found      # cubictcp_state(Loss)
    t = p.py.now
    run_rounds(p, t, t + 500 * NS_PER_MS, lambda sk: 20 * NS_PER_MS)


@pytest.mark.parametrize(("profile", "cc", "hz", "sack"), CASES)
def test_a_window_reopened_after_a_stall_restarts_cwnd_in_both(native, profile, cc, hz, sack):
    """tcp_ack_update_window() -> tcp_slow_start_after_idle_check(): the peer's zero
    window holds queued data for 5 s, then a window update lets the sender go on with
    initcwnd, not the cwnd it had (issue 14)."""
    p = Pair(profile, sysctl={"net.ipv4.tcp_congestion_control": cc}, hz=hz)
    handshake(p, "client", sack=sack)
    t = 2 * NS_PER_MS
    p.do("write", t, 1 << 20)
    t = run_rounds(p, t, 100 * NS_PER_MS, lambda sk: 20 * NS_PER_MS)
    snd = p.py.snd
    t += 20 * NS_PER_MS
    ack_at(p, t, snd.snd_nxt, win=0)                       # all acked, the window closes
    p.do("write", t, 1 << 20)                              # queued behind the zero window
    cwnd = snd.snd_cwnd
    assert cwnd > snd.initcwnd and snd.write_queue and not snd.rtx_queue
    while (d := p.nat.next_deadline()) and d < t + 5000 * NS_PER_MS:   # zero-window probes
        p.do("on_timer", d)
    t += 5000 * NS_PER_MS
    ack_at(p, t, snd.snd_una, win=65535)
    assert snd.snd_cwnd == snd.initcwnd and len(snd.rtx_queue) == snd.initcwnd


@pytest.mark.parametrize("seed", range(6))
def test_random_sender_programs_agree(native, seed):
    """Seeded random writes, ACKs (new data, duplicates, window changes), idle gaps and
    timers, CUBIC and Reno alternating, on several profiles and clocks; even seeds with SACK
    (duplicates carrying SACK blocks of random runs of the queue, D-SACKs below the ACK),
    odd seeds without (NewReno)."""
    rng = random.Random(seed)
    profile = rng.choice(["linux-5.15", "linux-6.1", "linux-6.14", "linux-6.18"])
    cc = "cubic" if seed % 3 else "reno"
    sack = seed % 2 == 0
    p = Pair(profile, sysctl={"net.ipv4.tcp_congestion_control": cc}, hz=rng.choice([0, 250]))
    handshake(p, "client", sack=sack)
    t = 2 * NS_PER_MS
    for _ in range(400):
        t += rng.choice((100_000, NS_PER_MS, 5 * NS_PER_MS, 20 * NS_PER_MS, 700 * NS_PER_MS))
        r = rng.random()
        snd = p.py.snd
        if r < 0.2:
            p.do("write", t, rng.choice((1000, 20_000, 200_000)))
        elif r < 0.75:
            ack_at(p, t, acked_by(p, t, 20 * NS_PER_MS), rng.choice((65535, 65535, 200)))
        elif r < 0.9 and snd.rtx_queue:
            ack_at(p, t, snd.snd_una, sacks=random_sacks(rng, snd) if sack else ())
        else:
            d = p.nat.next_deadline()
            if d:
                t = max(t, d)
                p.do("on_timer", d)


@pytest.mark.parametrize("nodelay", [True, False])
@pytest.mark.parametrize("small_first", [False, True])
def test_the_window_edge_partial_segment_in_both_engines(native, nodelay, small_first):
    # tcp_mss_split_point() / tcp_nagle_check() at the peer's right edge (5120 bytes, not a
    # whole number of MSS), with and without TCP_NODELAY, with and without a small segment
    # in flight (tests/core/test_sender.py pins the figures): the same segments from both
    # engines, and the path is reached (the edge is not on an MSS boundary)
    p = Pair("linux-6.18", nodelay=nodelay)
    p.do("listen")
    p.segment(0, Segment(0, 0, SYN, 0, 65535, mss=1460, wscale=7, sack_ok=True, tsval=1,
                         tsecr=0))
    p.segment(NS_PER_MS, Segment(1, 0, ACK, 1, 40, tsval=2, tsecr=p.py.conn.ts_recent))
    t = 2 * NS_PER_MS
    if small_first:
        p.do("write", t, 100)
        t += NS_PER_MS
    p.py.write(t, 10000)
    p.nat.write(t, 10000)
    lens = [s.len for s in p.check()]
    held = small_first and not nodelay
    assert lens[:3] == [1448] * 3 and (len(lens) == 3) == held
    assert (p.py.snd.snd_nxt - 1 == 5120) == (not held)
