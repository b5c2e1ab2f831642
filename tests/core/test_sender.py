"""The send half: segmentation, send window, RTO backoff and give-up, persist probes."""

import pytest

from tcpsim.core.constants import NS_PER_MS, NS_PER_S, TCP_RTO_MAX_NS
from tcpsim.core.segment import ACK, SYN, Segment
from tcpsim.core.socket import TcpSocket
from tcpsim.catalog import get_profile


def sender(profile="linux-6.1", peer_win=65535, peer_ws=7, nodelay=True, cc=None, sack=True):
    """An established sender; `cc` the tcp_congestion_control (None: the default, cubic);
    `sack`: the peer offers SACK (without it the sender recovers as NewReno)."""
    prof = get_profile(profile)
    sysctls = prof.default_sysctls()
    if cc:
        sysctls = sysctls.with_overrides({"net.ipv4.tcp_congestion_control": cc})
    sk = TcpSocket(prof.policy(), sysctls, name="snd", nodelay=nodelay)
    sk.listen()
    sk.on_segment(0, Segment(0, 0, SYN, 0, 65535, mss=1460, wscale=peer_ws, sack_ok=sack, tsval=1, tsecr=0))
    sk.take_outbox()
    sk.on_segment(NS_PER_MS, Segment(1, 0, ACK, 1, peer_win, tsval=2, tsecr=sk.conn.ts_recent))
    return sk


def ack(sk, t_ms, ackno, win, seq=1):
    sk.on_segment(int(t_ms * NS_PER_MS), Segment(seq, 0, ACK, ackno, win, tsval=int(t_ms) + 1,
                                                 tsecr=1))
    return sk.take_outbox()


def test_the_window_is_filled_exactly_with_a_partial_last_segment():
    # tcp_snd_wnd_test() lets an skb go when its first MSS fits; tcp_mss_split_point() then
    # cuts it at the right edge, the last wire segment partial (TCP_NODELAY). The size goal
    # is one MSS (half of a 5120 B window), so the skb is multi-MSS only because 6.10's
    # tcp_grow_skb() merged the next ones into it; before 6.10 the window ends at 3 MSS
    sk = sender(profile="linux-6.10", peer_win=40)        # 40 << 7 = 5120 bytes of window
    sk.write(2 * NS_PER_MS, 10000)
    out = sk.take_outbox()
    assert [s.len for s in out] == [1448, 1448, 1448, 776]
    assert sk.snd.snd_nxt - sk.snd.snd_una == 5120
    old = sender(profile="linux-6.6", peer_win=40)
    old.write(2 * NS_PER_MS, 10000)
    assert [s.len for s in old.take_outbox()] == [1448, 1448, 1448]


@pytest.mark.parametrize("nodelay", [True, False])
def test_with_or_without_nodelay_the_window_edge_gets_its_partial_segment(nodelay):
    # tcp_mss_split_point() [tcp_output.c, 6.18] drops the partial tail only when
    # tcp_nagle_check() holds it -- with Nagle on, only while an earlier small segment is
    # unacknowledged (Minshall). So with nothing small in flight a Nagle sender fills the
    # window to its right edge as a TCP_NODELAY one does. A 6.18.44 kernel on veth sent such
    # runts with and without TCP_NODELAY at MTU 1500 (1296 and 64 bytes, each ending at the
    # receiver's advertised edge), 11500 (1608; 288 with ntb's charging) and 65535
    # (scripts/window_edge_capture.py, docs/ntb-jumbo-rx.md).
    sk = sender(profile="linux-6.18", peer_win=40, nodelay=nodelay)
    sk.write(2 * NS_PER_MS, 10000)
    assert [s.len for s in sk.take_outbox()] == [1448, 1448, 1448, 776]
    assert sk.snd.snd_nxt - sk.snd.snd_una == 5120                # the edge, to the byte


@pytest.mark.parametrize("nodelay,sent", [(True, [1448, 1448, 1448, 676]),
                                          (False, [1448, 1448, 1448])])
def test_at_the_window_edge_nagle_cuts_the_partial_while_a_small_one_is_unacked(nodelay, sent):
    # a 100-byte segment still in flight: Nagle's split point stops at the last full MSS,
    # TCP_NODELAY still sends the 676 bytes that reach the edge
    sk = sender(profile="linux-6.18", peer_win=40, nodelay=nodelay)
    sk.write(2 * NS_PER_MS, 100)
    assert [s.len for s in sk.take_outbox()] == [100]
    sk.write(3 * NS_PER_MS, 10000)
    assert [s.len for s in sk.take_outbox()] == sent


def test_nagle_holds_a_small_segment_while_an_earlier_small_one_is_unacked():
    # Minshall's Nagle (tcp_nagle_check): one small segment may be in flight, not two
    sk = sender(nodelay=False)
    sk.write(2 * NS_PER_MS, 1448 + 100)
    assert [s.len for s in sk.take_outbox()] == [1448, 100]
    sk.write(3 * NS_PER_MS, 50)
    assert sk.take_outbox() == []                          # held: 100 B still unacked
    out = ack(sk, 30, 1549, 502)
    assert [s.len for s in out] == [50]


def test_rto_backs_off_exponentially_and_gives_up_after_tcp_retries2_model_time():
    sk = sender()
    sk.write(2 * NS_PER_MS, 1448)
    sk.take_outbox()
    times = []
    while not sk.error:
        d = sk.next_deadline()
        sk.on_timer(d)
        sk.take_outbox()
        times.append(d)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert all(b >= a for a, b in zip(gaps, gaps[1:]))    # backing off
    assert max(gaps) == TCP_RTO_MAX_NS
    assert sk.error == "ETIMEDOUT"
    elapsed = (times[-1] - 2 * NS_PER_MS) / NS_PER_S
    assert 924 <= elapsed <= 1100                         # 924.6 s for tcp_retries2 = 15


def test_zero_window_persist_probes_back_off_and_stop_when_window_opens():
    sk = sender(peer_win=20)                              # 2560 bytes
    sk.write(2 * NS_PER_MS, 4000)
    out = sk.take_outbox()
    ack(sk, 5, 1 + sum(s.len for s in out), 0)            # everything acked, window 0
    probes = []
    for _ in range(4):
        d = sk.next_deadline()
        sk.on_timer(d)
        got = sk.take_outbox()
        assert got and got[0].len == 0 and got[0].seq == sk.snd.snd_una - 1
        probes.append(d)
    gaps = [b - a for a, b in zip(probes, probes[1:])]
    assert gaps[1] == 2 * gaps[0] and gaps[2] == 2 * gaps[1]
    assert sk.mib.TCPWinProbe == 4
    out = ack(sk, probes[-1] / NS_PER_MS + 1, sk.snd.snd_una, 40)
    assert out and out[0].len > 0 and not sk.snd.probe_deadline


def test_zero_window_with_data_in_flight_times_out_by_profile_rule():
    for profile, limit_s in (("linux-6.1", 120), ("linux-6.6", 240)):
        sk = sender(profile)
        sk.write(2 * NS_PER_MS, 2 * 1448)
        sk.take_outbox()
        ack(sk, 3, 1449, 0)                               # window closed, one segment outstanding
        assert sk.snd.snd_wnd == 0
        while not sk.error:
            sk.on_timer(sk.next_deadline())
            sk.take_outbox()
        died = sk.now / NS_PER_S
        assert limit_s < died < limit_s + 130, (profile, died)


@pytest.mark.parametrize("cc,cwnd", [("reno", 10), ("cubic", 14)])
def test_three_dupacks_fast_retransmit_and_reduce_cwnd(cc, cwnd):
    # Reno halves (tcp_reno_ssthresh); CUBIC keeps beta = 717/1024 (cubictcp_recalc_ssthresh).
    # NewReno: a connection without SACK counts duplicate ACKs (with SACK, recovery.py)
    sk = sender(cc=cc, sack=False)
    sk.snd.snd_cwnd = 20
    sk.write(2 * NS_PER_MS, 20 * 1448)
    sk.take_outbox()
    for i in range(3):
        out = ack(sk, 5 + i, 1, 502)
    assert sk.mib.TCPFastRetrans == 1 and sk.snd.snd_cwnd == cwnd
    assert any(s.seq == 1 and s.len == 1448 for s in out)


@pytest.mark.parametrize("profile,wire", [("linux-6.10", [1448, 1448, 936]),
                                          ("linux-6.6", [936, 1448, 1448])])
def test_a_persist_slice_leaves_the_rest_of_the_skb_which_grows_back_before_sending(profile, wire):
    # tcp_write_wakeup() fragments the head skb to the window (the size goal is one MSS here:
    # half of a 4096 B peak window, rounded down to whole MSS). When the window opens,
    # tcp_grow_skb() [tcp_output.c, 6.10+] refills the 2384 B rest from the next skb before
    # the window test, so the wire sees 1448 + 1448 + 936; before 6.10 the rest goes alone,
    # then the next skb. (The window shrinks after the handshake: a 512 B window at the
    # handshake would make tcp_sync_mss() cut the MSS itself to 512.)
    sk = sender(profile=profile, peer_win=32, peer_ws=7)  # 4096 bytes of window
    sk.write(2 * NS_PER_MS, 1000)
    sk.take_outbox()
    ack(sk, 3, 1001, 4)                                    # acked; 512 bytes of window now
    sk.write(4 * NS_PER_MS, 1448 * 3)                      # three one-MSS skbs
    assert sk.take_outbox() == []                          # a whole MSS does not fit
    grown = profile == "linux-6.10"
    assert list(sk.snd.write_queue) == ([2896, 1448] if grown else [1448, 1448, 1448])
    sk.on_timer(sk.next_deadline())                        # persist timer: send a slice
    first = sk.take_outbox()
    assert [s.len for s in first] == [512]
    out = ack(sk, sk.now / NS_PER_MS + 20, 1513, 502)      # window opens wide
    assert [s.len for s in out] == wire
    assert not sk.snd.write_queue


def test_write_queue_skbs_are_half_the_peers_largest_window():
    # tcp_xmit_size_goal() [tcp.c, v6.18]: the GSO size bounded to half of max_window
    # (tcp_bound_to_half_wnd), in whole MSS -- 22 x 1448 for a 64256 B window, not two MSS
    sk = sender(profile="linux-6.18", peer_win=502)        # 502 << 7 = 64256
    assert sk.size_goal() == 22 * 1448
    sk.snd.sk_sndbuf = 1 << 20                             # room for three skbs (46080 has two)
    sk.write(2 * NS_PER_MS, 80_000)
    assert len(sk.take_outbox()) == 10                     # initcwnd
    assert list(sk.snd.write_queue) == [31856 - 10 * 1448, 31856, 80_000 - 2 * 31856]


def test_a_full_send_buffer_only_stops_new_skbs():
    # tcp_sendmsg_locked() [tcp.c, v6.18] checks sk_stream_memory_free() only before it
    # allocates a new skb; the unsent tail skb is filled to the size goal regardless, so a
    # write meeting a full buffer is accepted up to the skb boundary, then EAGAIN
    sk = sender(profile="linux-6.18", peer_win=100)        # 12800 B: size goal 4 MSS
    assert sk.size_goal() == 4 * 1448
    sk.write(2 * NS_PER_MS, 14_000)
    sk.take_outbox()
    assert list(sk.snd.write_queue) == [14_000 - 12_800]       # beyond the window, unsent
    sk.snd.sk_sndbuf = 1000                                    # the buffer is now over-full
    assert sk.write(3 * NS_PER_MS, 5000) == 4 * 1448 - 1200
    assert sk.write(4 * NS_PER_MS, 5000) == 0


def test_a_tso_skb_waits_for_a_bigger_window_within_1ms_of_the_last_send():
    # tcp_tso_should_defer() [tcp_output.c, v6.18]: a multi-MSS skb that could send less
    # than a third of the window is held back when data went out less than 1 ms ago and the
    # next ACK is due within min(srtt/2, 1 ms); the next push after that 1 ms sends it
    sk = sender(profile="linux-6.18", peer_win=100)        # 12800 B of window
    sk.write(2 * NS_PER_MS, 1448)
    sk.take_outbox()
    ack(sk, 3, 1449, 100)                                  # srtt 1 ms
    sk.write(3 * NS_PER_MS, 20 * 1448)                     # fills the window at t = 3 ms
    assert sum(s.len for s in sk.take_outbox()) == 12800
    out = ack(sk, 3.6, 1449 + 2 * 1448, 100)               # opens 2896 B < 12800 / 3
    assert out == []                                       # deferred: the ACK of 3.0 is due
    sk.write(int(3.9 * NS_PER_MS), 100)
    assert sk.take_outbox() == []                          # still within 1 ms of the send
    sk.write(int(4.1 * NS_PER_MS), 100)
    assert [s.len for s in sk.take_outbox()] == [1448, 1448]


def _small_flight(sk, n):
    """n 4-byte writes, one per ms, each its own segment (TCP_NODELAY)."""
    for i in range(n):
        sk.write((2 + i) * NS_PER_MS, 4)
    return [s for s in sk.take_outbox() if s.len]


def test_a_cwnd_limited_flight_grows_cwnd_on_every_ack_of_that_window():
    # tcp_cwnd_validate() remembers "cwnd-limited" until snd_una passes the snd_nxt of the
    # moment it was limited, so each of the ten ACKs of the first flight counts in slow start
    # (the kernel's 10 -> 20 in seed-never-reads-shrink1), not only the first one
    sk = sender()
    assert sk.snd.snd_cwnd == 10
    segs = _small_flight(sk, 12)
    assert len(segs) == 10 and sk.snd.write_queue                  # cwnd full, 8 B queued
    for i, s in enumerate(segs):
        ack(sk, 30 + i, s.seq + s.len, 502)
    assert sk.snd.snd_cwnd == 20


def test_slow_start_grows_an_app_limited_cwnd_only_to_twice_the_largest_flight():
    # tcp_is_cwnd_limited(): in slow start, cwnd may grow while below 2 * max_packets_out
    sk = sender()
    segs = _small_flight(sk, 6)
    assert len(segs) == 6 and not sk.snd.write_queue                # never cwnd-limited
    for i, s in enumerate(segs):
        ack(sk, 30 + i, s.seq + s.len, 502)
    assert sk.snd.snd_cwnd == 12


def _bulk_flight(profile="linux-6.18", peer_win=502):
    """A 10-segment flight of a bulk write, with one 1 ms RTT sample (srtt 1 ms)."""
    sk = sender(profile=profile, peer_win=peer_win)
    sk.write(2 * NS_PER_MS, 1448)
    sk.take_outbox()
    ack(sk, 3, 1449, peer_win)                             # srtt 1 ms
    return sk


def test_the_loss_probe_timer_is_two_srtt_plus_2ms_and_never_after_the_rto():
    # tcp_schedule_loss_probe() [tcp_output.c, v6.18]: armed when data goes out on a SACK
    # connection: 2 * srtt + TCP_TIMEOUT_MIN_US (several segments out), in whole jiffies
    sk = _bulk_flight()
    sk.write(3 * NS_PER_MS, 4 * 1448)
    assert len(sk.take_outbox()) == 4
    assert sk.snd.tlp_deadline == 3 * NS_PER_MS + (2 + 2) * NS_PER_MS
    assert sk.snd.tlp_deadline < sk.snd.rto_deadline
    # one segment out: the floor is TCP_RTO_MIN (the peer may delay its ACK), capped by the RTO
    one = _bulk_flight()
    one.write(3 * NS_PER_MS, 100)
    one.take_outbox()
    assert one.snd.tlp_deadline == min(3 * NS_PER_MS + 2 * NS_PER_MS + 200 * NS_PER_MS,
                                   3 * NS_PER_MS + one.snd.rto)
    # no SACK: no probe (the kernel requires tcp_is_sack())
    nosack = _bulk_flight()
    nosack.conn.sack_ok = False
    nosack.write(3 * NS_PER_MS, 4 * 1448)
    nosack.take_outbox()
    assert nosack.snd.tlp_deadline == 0


@pytest.mark.parametrize("profile,jiffies", [("linux-6.6", 1 + 2), ("linux-6.8", 1)])
def test_the_loss_probe_timeout_floor_before_and_after_6_7(profile, jiffies):
    # 1c2709cfff1d (6.7): the 2 ms floor is added in microseconds before rounding up to
    # jiffies; before, 2 * srtt was rounded up and two jiffies added. Equal at HZ=1000, so
    # shown at HZ=250 (4 ms jiffies): srtt 0.6 ms gives 1 + 2 jiffies before, 1 after
    from tcpsim.core.clock import JiffyClock
    sk = _bulk_flight(profile)
    sk.clock = JiffyClock(250)
    sk.snd.srtt_us8 = 600 << 3
    sk.write(3 * NS_PER_MS, 4 * 1448)
    sk.take_outbox()
    assert len(sk.snd.rtx_queue) > 1
    assert sk.k.loss_probe_timeout(sk) == jiffies * 4 * NS_PER_MS


def test_the_loss_probe_timer_runs_on_the_timer_wheel_at_hz_250():
    # tcp_reset_xmit_timer(ICSK_TIME_LOSS_PROBE, usecs_to_jiffies(timeout)): at HZ=250 the
    # 4 ms probe timeout (srtt 1 ms: 2 ms + 2 ms) is one jiffy, armed from the jiffy of
    # 3 ms (0) and run by the wheel one jiffy after its expiry: at 8 ms
    from tcpsim.core.clock import JiffyClock
    sk = _bulk_flight()
    sk.clock = JiffyClock(250)
    sk.write(3 * NS_PER_MS, 4 * 1448)
    sk.take_outbox()
    assert sk.k.loss_probe_timeout(sk) == 4 * NS_PER_MS
    assert sk.snd.tlp_deadline == 8 * NS_PER_MS


def test_the_loss_probe_sends_the_deferred_tso_skb_as_new_data():
    # tcp_send_loss_probe(): the head of the write queue fits the window, so tcp_write_xmit()
    # runs with push_one = 2 -- tcp_tso_should_defer() is skipped and the deferred skb goes
    sk = _bulk_flight(peer_win=100)                        # 12800 B of window
    sk.write(3 * NS_PER_MS, 20 * 1448)
    assert sum(s.len for s in sk.take_outbox()) == 12800
    assert ack(sk, 3.6, 1449 + 2 * 1448, 100) == []        # deferred (see above)
    t = sk.snd.tlp_deadline
    assert t and sk.next_deadline() == t
    sk.on_timer(t)
    out = sk.take_outbox()
    assert [s.len for s in out] == [1448, 1448]            # the whole 2896 B opening
    assert sk.mib.TCPLossProbes == 1 and sk.mib.TCPRetransSegs == 0
    assert sk.snd.tlp_high_seq == sk.snd.snd_nxt
    assert sk.snd.rto_deadline == t + sk.snd.rto                   # the RTO restarts from the probe


def test_the_loss_probe_resends_the_last_segment_when_no_new_data_fits():
    # window full: the probe retransmits the last segment in flight, once per episode
    sk = _bulk_flight(peer_win=100)
    sk.write(3 * NS_PER_MS, 20 * 1448)
    out = sk.take_outbox()
    last = out[-1]
    sk.on_timer(sk.snd.tlp_deadline)
    probe = sk.take_outbox()
    assert [(s.seq, s.len) for s in probe] == [(last.seq, last.len)]
    assert sk.mib.TCPLossProbes == 1 and sk.mib.TCPRetransSegs == 1
    assert sk.snd.retrans_stamp == 0                           # __tcp_retransmit_skb() only
    # a D-SACK for the probe (both copies arrived) ends the episode without a cwnd cut
    cwnd = sk.snd.snd_cwnd
    dsack = Segment(1, 0, ACK, last.seq + last.len, 100, tsval=9, tsecr=1,
                    sacks=((last.seq, last.seq + last.len),))
    sk.on_segment(sk.now + NS_PER_MS, dsack)
    assert sk.snd.tlp_high_seq == 0 and sk.snd.snd_cwnd >= cwnd


@pytest.mark.parametrize("profile,deferred", [("linux-6.18", False), ("linux-6.6", True)])
def test_295ce1eb_defers_only_if_the_next_ack_is_due_within_1ms(profile, deferred):
    # tcp_tso_should_defer(): with srtt 10 ms and the flight sent 6 ms ago the next ACK is due
    # in 4 ms -- within srtt / 2 (the rule before 295ce1eb), not within 1 ms (6.18)
    sk = sender(profile=profile, peer_win=100)             # 12800 B of window
    sk.snd.srtt_us8 = 0                                        # forget the handshake's 1 ms sample
    sk.write(2 * NS_PER_MS, 1448)
    sk.take_outbox()
    ack(sk, 12, 1449, 100)                                 # srtt 10 ms
    sk.write(12 * NS_PER_MS, 20 * 1448)
    sk.take_outbox()
    sk.snd.wstamp_ns = int(17.5 * NS_PER_MS)                   # data went out 0.5 ms ago
    out = ack(sk, 18, 1449 + 1448, 100)                    # 2664 B open: < 2 TSO segs
    assert (out == []) == deferred


@pytest.mark.parametrize("profile,segs", [("linux-5.15", 45), ("linux-6.1", 90)])
def test_tso_autosize_adds_a_min_rtt_share_from_5_18(profile, segs):
    # 65466904b015 (5.18): tcp_tso_autosize() adds gso_max_size >> (min_rtt_us >> 9); with a
    # 50 us min RTT that is the whole GSO size (before: the pacing rate's 1 ms share only)
    sk = sender(profile=profile)
    sk.snd.min_rtt_us = 50
    sk.snd.pacing_rate = 45 * 1448 * 1024                      # 45 MSS per 1/1024 s
    assert sk.tso_segs() == min(segs, (65536 - 193) // 1448)


def test_after_an_rto_cwnd_slow_starts_from_one_while_the_lost_segments_go_again():
    # tcp_enter_loss(): everything in flight is lost and cwnd = 1; Loss is not a cwnd
    # reduction (tcp_in_cwnd_reduction() is CWR/Recovery only), so tcp_cong_control()
    # slow-starts: each ACK of a retransmitted segment lets two more go (the model's Reno)
    sk = sender(cc="reno")
    sk.write(2 * NS_PER_MS, 6 * 1448)
    assert len(sk.take_outbox()) == 6
    while not sk.mib.TCPTimeouts:                          # the loss probe, then the RTO
        sk.on_timer(sk.next_deadline())
        out = sk.take_outbox()
    assert [s.seq for s in out] == [1] and sk.snd.snd_cwnd == 1   # the head goes again
    out = ack(sk, 1100, 1 + 1448, 502)                     # it is acked
    assert sk.snd.snd_cwnd == 2
    assert [s.seq for s in out] == [1 + 1448, 1 + 2 * 1448]
    out = ack(sk, 1200, 1 + 3 * 1448, 502)                 # two more acked: slow start up to
    assert sk.snd.snd_ssthresh == 3 and sk.snd.snd_cwnd == 3       # ssthresh (half the flight of 6)
    assert [s.seq for s in out] == [1 + i * 1448 for i in (3, 4, 5)]   # the rest goes


@pytest.mark.parametrize("timestamps", [1, 0])
def test_an_ack_of_a_retransmission_resets_the_rto_through_the_timestamp_echo(timestamps):
    # tcp_ack_update_rtt() [tcp_input.c, 5.15-6.18]: Karn's rule forbids timing a
    # retransmitted segment by its send time, but with timestamps the ACK's TSecr times it
    # (RFC 7323 RTTM, tcp_rtt_tsopt_us: 0 ms counts as 1 ms); tcp_set_rto() then sets the
    # RTO afresh instead of leaving it doubled. A sender whose receiver keeps refusing it for
    # memory retransmits every ~200 ms, not 200, 400, 800 ms (measured on 6.18: the host
    # fixture seed-mix-200-tight, docs/hosts.md)
    prof = get_profile("linux-6.18")
    sysctls = prof.default_sysctls().with_overrides({"net.ipv4.tcp_timestamps": timestamps})
    sk = TcpSocket(prof.policy(), sysctls, name="snd", nodelay=True)
    sk.listen()
    sk.on_segment(0, Segment(0, 0, SYN, 0, 65535, mss=1460, wscale=7, sack_ok=True,
                             tsval=1, tsecr=0))
    sk.take_outbox()
    sk.on_segment(NS_PER_MS, Segment(1, 0, ACK, 1, 502, tsval=2, tsecr=sk.conn.ts_recent))
    assert sk.conn.ts_ok == bool(timestamps)
    base = sk.snd.rto
    sk.write(2 * NS_PER_MS, 1448)
    sk.take_outbox()
    while sk.mib.TCPTimeouts < 3:                          # the loss probe, then three RTOs
        d = sk.next_deadline()
        sk.on_timer(d)
        (resent,) = sk.take_outbox()
    assert sk.snd.rto == 8 * base
    echo = resent.tsval if timestamps else -1
    sk.on_segment(d + NS_PER_MS, Segment(1, 0, ACK, 1 + 1448, 502,
                                         tsval=d // NS_PER_MS + 2 if timestamps else -1,
                                         tsecr=echo))
    assert sk.snd.snd_una == 1 + 1448
    if timestamps:                                         # a 1 ms sample: the RTO is set afresh
        assert base <= sk.snd.rto < 2 * base and sk.snd.backoff == 0
    else:                                                  # Karn alone: still backed off
        assert sk.snd.rto == 8 * base


def test_a_write_can_top_up_a_partly_sent_tail_skb_with_the_send_buffer_full():
    # tcp_sendmsg_locked(): the unsent tail skb is filled to the size goal without a memory
    # check; only a new skb needs sk_wmem_queued < sk_sndbuf. A blocked writer must be woken
    # by that rule (can_queue), not by send_space(), or it sleeps while send() would progress
    sk = sender(profile="linux-6.18", peer_win=40)         # 5120 B of window
    sk.snd.max_window = 1 << 20                                # size goal: the GSO size
    goal = sk.size_goal()
    assert sk.write(2 * NS_PER_MS, goal) == goal
    sk.take_outbox()
    assert len(sk.snd.write_queue) == 1 and sk.snd.write_queue[0] < goal   # head = tail, partly sent
    sk.snd.sk_sndbuf = sk.wmem_queued()                        # no room for a new skb
    assert sk.send_space() == 0 and sk.can_queue()
    assert sk.write(3 * NS_PER_MS, 10) == 10               # the tail takes it
    sk.write(4 * NS_PER_MS, goal)                          # tail full now
    assert not sk.can_queue() and sk.write(5 * NS_PER_MS, 1) == 0


def test_a_window_below_the_mss_arms_the_persist_timer_and_each_ack_rearms_it():
    # Nothing in flight and the head skb's first MSS does not fit a 1024-byte window:
    # tcp_write_xmit() sends nothing and tcp_check_probe_timer() arms the persist timer.
    # An ACK that arrives meanwhile goes tcp_ack()'s no_queue path, where tcp_ack_probe()
    # re-arms it from now [tcp_input.c, v6.18] (pure ACKs reach tcp_ack() on the fast path
    # too; in-order data with an unchanged ack_seq does not). When the peer falls quiet,
    # tcp_probe_timer() -> tcp_write_wakeup() sends what the window takes: a 1024-byte
    # slice, not a zero-window probe.
    sk = sender(profile="linux-6.18", peer_win=502)
    sk.write(2 * NS_PER_MS, 4000)
    sent = sum(s.len for s in sk.take_outbox())
    ack(sk, 5, 1 + sent, 8)                               # all acked, window 8 << 7 = 1024
    sk.write(6 * NS_PER_MS, 4000)
    assert not [s for s in sk.take_outbox() if s.len] and not sk.snd.rtx_queue
    assert sk.snd.probe_deadline == 6 * NS_PER_MS + sk.probe0_base()
    for t_ms in range(10, 310, 10):                       # an ACK every 10 ms for 300 ms
        assert not [s for s in ack(sk, t_ms, 1 + sent, 8) if s.len]
        assert sk.snd.probe_deadline == t_ms * NS_PER_MS + sk.probe0_when()
    quiet = sk.snd.probe_deadline
    sk.on_timer(quiet)
    (slice_,) = [s for s in sk.take_outbox() if s.len]
    assert slice_.len == 1024 and sk.mib.TCPWinProbe == 0 and quiet > 300 * NS_PER_MS


@pytest.mark.parametrize("unsent,fast", [(4000, True), (7256, False)])
def test_the_send_queue_shares_the_quota_that_decides_the_receive_fast_path(unsent, fast):
    # One sk_forward_alloc per socket: tcp_sendmsg_locked() charges every queued skb's
    # truesize to it and the ACK that frees the skb gives it back, reclaiming whole pages
    # [tcp.c, sock.h, 6.18]. So at a stalled bulk sender it is the part of a page its send
    # queue leaves over: (-sk_wmem_queued) mod 4096 (the kernel measured: w758464 f3392). An
    # in-order 48-byte message whose skb fits that rest takes tcp_rcv_established()'s fast
    # path, which does not call tcp_ack() (the ack_seq is unchanged) and so does not re-arm
    # the persist timer; one that does not fit goes to the slow path, whose tcp_ack() does.
    sk = sender(profile="linux-6.18", peer_win=502)
    sk.write(2 * NS_PER_MS, 4000)
    sent = sum(s.len for s in sk.take_outbox())
    ack(sk, 5, 1 + sent, 8)                               # all acked, window 1024 < MSS
    sk.write(6 * NS_PER_MS, unsent)
    assert sk.wmem_queued() == unsent + 832
    # the first message turns header prediction on (tcp_fast_path_check); read at once
    sk.on_segment(8 * NS_PER_MS, Segment(1, 48, ACK, 1 + sent, 8, tsval=9, tsecr=1))
    assert sk.read(8 * NS_PER_MS, 4096) == 48 and sk.rcv.pred_ok
    assert sk.mem.sk_forward_alloc == -(unsent + 832) % 4096 == (3360 if fast else 104)
    armed = sk.snd.probe_deadline
    assert 104 < sk.dev.make_skb(49, 48, False, 0).truesize <= 3360
    sk.on_segment(10 * NS_PER_MS, Segment(49, 48, ACK, 1 + sent, 8, tsval=11, tsecr=1))
    assert sk.rcv.rcv_nxt == 97 and sk.mib.TCPHPHits == (1 if fast else 0)
    assert (sk.snd.probe_deadline == armed) == fast
    if not fast:
        assert sk.snd.probe_deadline == 10 * NS_PER_MS + sk.probe0_when()
