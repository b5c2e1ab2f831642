"""The send half: segmentation of writes, send window, congestion window (the socket's
congestion control, tcpsim/core/cong: CUBIC or Reno), RTO with
exponential backoff and the tcp_retries2 give-up, zero-window persist probes.

Models tcp_sendmsg()/tcp_write_xmit() [tcp.c, tcp_output.c], tcp_ack() [tcp_input.c] and
tcp_retransmit_timer()/tcp_probe_timer() [tcp_timer.c]. The write queue keeps skb boundaries
as Linux does. TCP always uses (software) GSO, even when the device has it off
(sk_setup_caps), so a write fills the unsent tail skb up to the size goal -- half the peer's
largest window, at most the GSO size (tcp_xmit_size_goal) -- and a transmission sends an skb
as MSS-sized wire segments, at most tcp_tso_segs() of them at a time (the pacing-rate based
tcp_tso_autosize). Before the window test the head skb may be grown to that many segments
with bytes of the next skb (tcp_grow_skb, 6.10+; the profile decides). An skb goes out when
its first MSS fits the peer's window (tcp_snd_wnd_test); it may wait for more ACKs when only
a small part of the window is open (tcp_tso_should_defer); it is then cut at the window's
right edge (tcp_mss_split_point), the last wire segment partial unless Nagle holds it. A
persist-timer slice splits the head skb too (tcp_fragment). Both are how a sender lands
exactly on a receiver's right window edge. The send buffer gates only the allocation of a new
skb (tcp_sendmsg_locked), so a write that meets a full buffer ends at an skb boundary.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from tcpsim.core.constants import (
    MAX_TCP_HEADER, NS_PER_MS, NS_PER_US, SKB_SHINFO, SKB_STRUCT, TCP_INIT_CWND,
    TCP_MSS_DEFAULT, TCP_RTO_MAX_NS, TCP_RTO_MIN_NS, TCP_SYN_RETRIES, TCP_SYNACK_RETRIES,
    TCP_TIMEOUT_INIT_NS, roundup_pow_of_two, skb_truesize,
)
from tcpsim.core.cong import CA_EVENT_CWND_RESTART, CA_EVENT_TX_START, TCP_CA_LOSS
from tcpsim.core.segment import ACK, FIN, PSH, Segment
from tcpsim.core.state import (
    CLOSE_WAIT, CLOSED, ESTABLISHED, FIN_WAIT1, HANDSHAKE_STATES, INFINITE_SSTHRESH, LAST_ACK,
    LISTEN, SEND_STATES, SYN_SENT, XMIT_STATES,
)

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

SND_SKB_OVERHEAD = skb_truesize(256)     # head of a sender skb (tcp_stream_alloc_skb)
# sk_gso_max_size of a TCP socket on a device with the legacy 64 KiB GSO limit (veth, lo):
# the device's limit less MAX_TCP_HEADER + 1 (sk_dst_gso_max_size [net/core/sock.c]).
SK_GSO_MAX_SIZE = 65536 - (MAX_TCP_HEADER + 1)
SK_GSO_MAX_SEGS = 65535                  # GSO_MAX_SEGS
TCP_MIN_TSO_SEGS = 2                     # net.ipv4.tcp_min_tso_segs
TCP_TSO_WIN_DIVISOR = 3                  # net.ipv4.tcp_tso_win_divisor
TCP_TSO_RTT_LOG = 9                      # net.ipv4.tcp_tso_rtt_log
TCP_PACING_SS_RATIO, TCP_PACING_CA_RATIO = 200, 120   # net.ipv4.tcp_pacing_{ss,ca}_ratio
SK_PACING_SHIFT = 10                     # sk_pacing_shift: about 1 ms of data per TSO packet

# _tso_should_defer() results: send now, defer, defer and count as cwnd-limited
DEFER, DEFER_CWND_LIMITED = 1, 2

# rtx_queue entry fields: [seq, end, last tx time, times retransmitted, lost, is FIN,
# sacked (the tcp_skb_cb->sacked bits of recovery.py)]
SEQ, END, TX_NS, RETRANS, LOST, IS_FIN, SACKED = 0, 1, 2, 3, 4, 5, 6
TCPCB_SACKED_ACKED = 0x01      # tcp_skb_cb->sacked bits [include/net/tcp.h]
TCPCB_EVER_RETRANS = 0x80


class SendMixin:
    """Send-path behaviour of TcpSocket."""

    __slots__ = ()

    # -- send buffer ----------------------------------------------------------------------------

    def sndbuf_expand(self: TcpSocket) -> None:
        """Models tcp_sndbuf_expand() [tcp_input.c, 5.15 to 6.18 alike]: room for the
        congestion control's factor (its sndbuf_expand hook; 2 when it has none) times
        max(TCP_INIT_CWND, snd_cwnd, reordering + 1) segments of sndbuf_per_mss() each,
        at most tcp_wmem[2]. Never shrinks the buffer."""
        snd = self.snd
        nr_segs = max(TCP_INIT_CWND, snd.snd_cwnd, snd.reordering + 1)
        sndmem = self.ca.sndbuf_expand(self) * nr_segs * self.sndbuf_per_mss()
        if snd.sk_sndbuf < sndmem:
            snd.sk_sndbuf = min(sndmem, self.sysctl.tcp_wmem[2])

    def sndbuf_per_mss(self: TcpSocket) -> int:
        """tcp_sndbuf_expand()'s per-segment memory [tcp_input.c, 6.18]: the worst case
        of one non-GSO skb per segment with a kmalloc'ed (power-of-two) head -- the larger
        of the peer's MSS option (rx_opt.mss_clamp) and mss_cache, plus MAX_TCP_HEADER and
        the aligned skb_shared_info, rounded up to a power of two, plus the aligned
        sk_buff: 4352 up to a 3456-byte MSS, 16640 at 11448 (MTU 11500)."""
        conn = self.conn
        head = max(conn.peer_mss, conn.mss_cache) + MAX_TCP_HEADER + SKB_SHINFO
        return roundup_pow_of_two(head) + SKB_STRUCT

    def check_space(self: TcpSocket) -> None:
        """tcp_check_space() [tcp_input.c, 5.15 and 6.18 alike]: only when a writer found
        the send buffer full since it was last woken (SOCK_NOSPACE), tcp_new_space(): grow
        the buffer if tcp_should_expand_sndbuf() allows, then sk_stream_write_space()
        [net/core/stream.c], which clears SOCK_NOSPACE once the buffer is writeable. Run
        after an ACK (tcp_data_snd_check()) and, from 5.18 (the profile's
        new_data_checks_space), after every skb of new data sent
        (tcp_event_new_data_sent()). The model wakes a blocked writer as before, on any
        room (can_queue())."""
        snd = self.snd
        if not snd.sock_nospace:
            return
        if self._should_expand_sndbuf():
            self.sndbuf_expand()
        if self._stream_writeable():
            snd.sock_nospace = False

    def _should_expand_sndbuf(self: TcpSocket) -> bool:
        """tcp_should_expand_sndbuf() [tcp_input.c, 5.15-6.18]: not with SO_SNDBUF set
        (SOCK_SNDBUF_LOCK; the model has no SO_SNDBUF), not under tcp_mem or memcg pressure nor
        with the host's pool at tcp_mem[0] or more, and not while the flight fills cwnd."""
        proto = self.proto
        return (proto.memory_pressure < 0 and proto.allocated < proto.tcp_mem[0]
                and not self.memcg_pressure()
                and self.packets_in_flight() < self.snd.snd_cwnd)

    def _stream_writeable(self: TcpSocket) -> bool:
        """__sk_stream_is_writeable(sk, 1) [include/net/sock.h, 6.18]: free space at least
        half the queued bytes (sk_stream_min_wspace()), below the buffer, and the unsent
        bytes below half tcp_notsent_lowat (tcp_stream_memory_free(sk, 1) [tcp.c])."""
        snd = self.snd
        queued = self.wmem_queued()
        return (snd.sk_sndbuf - queued >= queued >> 1 and queued < snd.sk_sndbuf
                and (snd.write_seq - snd.snd_nxt) << 1 < self.sysctl.tcp_notsent_lowat)

    def wmem_queued(self: TcpSocket) -> int:
        """sk_wmem_queued: payload plus one sender-skb overhead per queued skb."""
        snd = self.snd
        nskbs = len(snd.rtx_queue) + len(snd.write_queue)
        return (snd.write_seq - snd.snd_una) + nskbs * SND_SKB_OVERHEAD

    def send_space(self: TcpSocket) -> int:
        """Payload bytes a write() may still queue (sk_stream_memory_free), 0 when full."""
        free = self.snd.sk_sndbuf - self.wmem_queued()
        if free <= 0:
            return 0
        mss = self.conn.mss_cache or 536
        return max(0, free * mss // (mss + SND_SKB_OVERHEAD))

    def can_queue(self: TcpSocket) -> bool:
        """Would write() queue anything now (tcp_sendmsg_locked)? The unsent tail skb is
        topped up to the size goal without a memory check; a new skb needs
        sk_stream_memory_free (sk_wmem_queued < sk_sndbuf). An application blocked in
        send() can make progress exactly when this holds."""
        snd = self.snd
        if self.conn.state not in SEND_STATES or snd.snd_shutdown:
            return False
        q = snd.write_queue
        return bool(q and q[-1] < self.size_goal()) or self._memory_free()

    def _memory_free(self: TcpSocket) -> bool:
        """sk_stream_memory_free() [include/net/sock.h]: sk_wmem_queued < sk_sndbuf, and
        tcp_stream_memory_free() [tcp.c]: the unsent bytes (write_seq - snd_nxt) below
        tcp_notsent_lowat (UINT_MAX by default: no limit)."""
        snd = self.snd
        return (self.wmem_queued() < snd.sk_sndbuf
                and snd.write_seq - snd.snd_nxt < self.sysctl.tcp_notsent_lowat)

    # -- writing ---------------------------------------------------------------------------------

    def write(self: TcpSocket, now: int, n: int) -> int:
        """The application writes n bytes; returns how many were queued (0 when the send
        buffer is full or the connection is not open)."""
        self.release_due(now)
        self._clock(now)
        if self.conn.state not in SEND_STATES or self.snd.snd_shutdown:
            return 0
        take = self._queue_bytes(n)
        if take <= 0:
            self.writable = False
            return 0
        self.snd.write_seq += take
        self.trace("write", "", length=take)
        self.write_xmit()
        self.wmem_settle()
        return take

    def size_goal(self: TcpSocket) -> int:
        """tcp_xmit_size_goal() [tcp.c, v6.18]: bytes per write-queue skb, a whole number of
        MSS: the GSO size, bounded to half the peer's largest window (tcp_bound_to_half_wnd),
        at least one MSS. How many of them one transmission takes is tcp_tso_segs()."""
        mss = self.conn.mss_cache
        goal = self.bound_to_half_wnd(SK_GSO_MAX_SIZE)
        return max(min(goal // mss, SK_GSO_MAX_SEGS) * mss, mss)

    def bound_to_half_wnd(self: TcpSocket, pktsize: int) -> int:
        """tcp_bound_to_half_wnd() [include/net/tcp.h, v6.18]: a packet size bounded to half
        the peer's largest window seen (the whole of it when that is at most 536 bytes), not
        below 68 bytes of segment. Bounds the size goal, and the MSS when tcp_sync_mss() sets
        it -- which matters on jumbo links: at a 64 KiB MTU the peer's first window (about
        64 KiB) halves the MSS to about 32 KiB (`ss` shows mss:32768 on loopback)."""
        snd = self.snd
        cutoff = snd.max_window >> 1 if snd.max_window > TCP_MSS_DEFAULT else snd.max_window
        if cutoff and pktsize > cutoff:
            return max(cutoff, 68 - self.conn.tcp_header_len)
        return pktsize

    def tso_segs(self: TcpSocket) -> int:
        """tcp_tso_segs() / tcp_tso_autosize() [tcp_output.c, v6.18]: segments per
        transmitted skb -- about 1 ms of the pacing rate (rate >> sk_pacing_shift), plus (5.18+,
        the profile's tso_rtt_bytes) a share of the GSO size for short RTTs, at most the GSO
        size, at least tcp_min_tso_segs."""
        mss = self.conn.mss_cache
        rate = self.snd.pacing_rate
        nbytes = SK_GSO_MAX_SIZE if rate < 0 else rate >> SK_PACING_SHIFT
        nbytes = min(nbytes + self.k.tso_rtt_bytes(self), SK_GSO_MAX_SIZE)
        return min(max(nbytes // mss, TCP_MIN_TSO_SEGS), SK_GSO_MAX_SEGS)

    def _update_pacing_rate(self: TcpSocket, cwnd: int = 0) -> None:
        """tcp_update_pacing_rate() [tcp_input.c, v6.18], run by tcp_cong_control() on every
        ACK that finds data in flight, and once when the handshake completes: 200 % of
        cwnd * mss / srtt in slow start (cwnd below half of ssthresh), 120 % after. Before
        the first RTT sample the rate stays unlimited (sk_pacing_rate starts at ~0UL).
        `cwnd`: the active side's SYN-ACK is processed before tcp_init_transfer() applies
        the route's initcwnd, with tcp_init_sock()'s TCP_INIT_CWND."""
        snd = self.snd
        if not snd.srtt_us8:
            return
        cwnd = cwnd or snd.snd_cwnd
        ratio = TCP_PACING_SS_RATIO if cwnd < snd.snd_ssthresh // 2 else TCP_PACING_CA_RATIO
        rate = self.conn.mss_cache * 80_000 * ratio * max(cwnd, len(snd.rtx_queue))
        snd.pacing_rate = rate // snd.srtt_us8

    def _queue_bytes(self: TcpSocket, n: int) -> int:
        """tcp_sendmsg_locked() [tcp.c, v6.18]: top up the unsent tail skb to the size goal,
        then new skbs; returns the bytes queued. The send buffer only gates a *new* skb
        (sk_stream_memory_free: sk_wmem_queued < sk_sndbuf); filling the tail skb takes no
        room check, so a write that meets a full buffer stops at an skb boundary (the
        kernel's partial writes complete the tail skb, then EAGAIN). Each skb's share of
        the write is copied into the writer's page frag (tcpsim/core/pagefrag.py)."""
        snd = self.snd
        q = snd.write_queue
        goal = self.size_goal()
        pf = self.pfrag
        free = pf.page_free(snd.snd_una == snd.write_seq, snd.wstamp_ns)
        done = 0
        if q and q[-1] < goal:
            done = min(goal - q[-1], n)
            q[-1] += done
            pf.copy(snd.write_seq, done, free)
            free = False
        if done < n:
            queued = self.wmem_queued() + done
            sndbuf = snd.sk_sndbuf
            notsent = snd.write_seq + done - snd.snd_nxt
            lowat = self.sysctl.tcp_notsent_lowat
            if queued < sndbuf and notsent < lowat:
                self._slow_start_after_idle_check()       # tcp_skb_entail()
            while done < n and queued < sndbuf and notsent < lowat:
                take = min(goal, n - done)
                q.append(take)
                pf.copy(snd.write_seq + done, take, free)
                free = False
                done += take
                queued += take + SND_SKB_OVERHEAD
                notsent += take
            if done < n:
                snd.sock_nospace = True                   # wait_for_space: SOCK_NOSPACE
        return done

    def _slow_start_after_idle_check(self: TcpSocket) -> None:
        """tcp_slow_start_after_idle_check() [include/net/tcp.h, 5.15], as tcp_skb_entail()
        queues a new skb, and as tcp_ack_update_window() [tcp_input.c, 5.15 and 6.18] takes
        a changed window while unsent data is queued: with tcp_slow_start_after_idle,
        nothing in flight and the last data sent more than an RTO ago (in jiffies; zero-
        window probes carry no data and do not count), tcp_cwnd_restart() [tcp_output.c]:
        CA_EVENT_CWND_RESTART; ssthresh = tcp_current_ssthresh() (at least 3/4 of cwnd);
        cwnd halves once per RTO of idle time beyond the first, down to
        min(initcwnd, cwnd)."""
        snd = self.snd
        if not self.sysctl.tcp_slow_start_after_idle or snd.rtx_queue:
            return
        clock = self.clock
        delta = clock.ticks(self.now) - clock.ticks(self.ack.lsndtime)
        rto = clock.to_ticks(snd.rto)
        if delta <= rto:
            return
        self.ca.cwnd_event(self, CA_EVENT_CWND_RESTART)
        cwnd = snd.snd_cwnd
        if not snd.in_recovery:                          # tcp_current_ssthresh()
            snd.snd_ssthresh = max(snd.snd_ssthresh, (cwnd >> 1) + (cwnd >> 2))
        restart = min(snd.initcwnd, cwnd)
        delta -= rto
        while delta > 0 and cwnd > restart:
            cwnd >>= 1
            delta -= rto
        snd.snd_cwnd = max(cwnd, restart)

    def _nagle_holds(self: TcpSocket, small: bool) -> bool:
        """tcp_nagle_check(): with Nagle on, a small segment waits while an earlier small
        segment is still unacknowledged (Minshall's variant)."""
        snd = self.snd
        return (small and not snd.nodelay and bool(snd.rtx_queue)
                and snd.snd_una < snd.snd_sml <= snd.snd_nxt)

    def shutdown_write(self: TcpSocket, now: int) -> None:
        """shutdown(SHUT_WR)/close(): queue a FIN after the data."""
        conn, snd = self.conn, self.snd
        self._clock(now)
        if snd.snd_shutdown:
            return
        snd.snd_shutdown = True
        snd.fin_queued = True
        if conn.state == ESTABLISHED:
            conn.state = FIN_WAIT1
        elif conn.state == CLOSE_WAIT:
            conn.state = LAST_ACK
        self.write_xmit()
        self.wmem_settle()

    def packets_in_flight(self: TcpSocket) -> int:
        """tcp_packets_in_flight(): sent and not acked, less those SACKed and those marked
        lost and not yet retransmitted (packets_out - sacked_out - lost_out + retrans_out)."""
        snd = self.snd
        return len(snd.rtx_queue) - snd.lost_out - snd.sacked_out

    def _mark_lost(self: TcpSocket, e: list[int]) -> None:
        """Mark a segment lost: it leaves the flight until it is retransmitted. A lost
        segment retransmitted and marked lost again counts TCPLostRetransmit
        (tcp_mark_skb_lost() [tcp_input.c, 6.18])."""
        if not (e[LOST] and not e[RETRANS]):
            if e[LOST]:
                self.mib.TCPLostRetransmit += 1
            e[LOST] = 1
            e[RETRANS] = 0
            self.snd.lost_out += 1

    def write_xmit(self: TcpSocket, probe: bool = False) -> None:
        """Models tcp_write_xmit(): send what cwnd, the peer's window and Nagle allow;
        retransmissions of lost segments go first. Arms the persist timer when the window
        blocks everything (tcp_check_probe_timer), and the tail loss probe when it sent
        something (tcp_schedule_loss_probe). `probe` is the loss probe's call (push_one = 2,
        TCP_NAGLE_OFF): one skb, one segment allowed past a full cwnd, no deferral, no Nagle."""
        snd = self.snd
        if not snd.write_queue and not snd.lost_out and not (
                snd.fin_queued and not snd.fin_sent):
            return                                  # nothing to send (the common case)
        if self.conn.state not in XMIT_STATES:
            return
        self._retransmit_lost()
        mss = self.conn.mss_cache
        inflight = start = self.packets_in_flight()
        wnd_end = snd.snd_una + snd.snd_wnd
        max_segs = self.tso_segs()
        deferred_limited = False
        q = snd.write_queue
        while q:
            cwnd = snd.snd_cwnd
            if inflight >= cwnd:
                if not probe:
                    break
                quota = 1                                          # force out the probe
            else:
                # tcp_cwnd_test() (at most half the cwnd per skb), capped at tcp_tso_segs()
                quota = min(max(cwnd >> 1, 1), cwnd - inflight, max_segs)
            missing = quota * mss - q[0]
            if missing > 0 and len(q) > 1:
                self.k.grow_skb(self, q, missing)                  # tcp_grow_skb(), 6.10+
            skb_len = q[0]
            is_tail = len(q) == 1
            if snd.snd_nxt + min(mss, skb_len) > wnd_end:
                break                                              # tcp_snd_wnd_test()
            if skb_len <= mss:                                     # one segment
                if is_tail and not probe and self._nagle_holds(skb_len < mss):
                    break                                          # tcp_nagle_test()
                limit = skb_len
            else:
                if not probe:
                    defer = self._tso_should_defer(skb_len, is_tail, wnd_end, inflight, max_segs)
                    if defer:
                        deferred_limited = defer == DEFER_CWND_LIMITED
                        break
                limit = self._mss_split_point(skb_len, is_tail, wnd_end, quota, probe)
            sent = 0
            segs = -(-limit // mss)                                # tcp_skb_pcount() sent
            if snd.gso_whole and segs > 1:                         # one GSO skb on the wire
                self._send_new(snd.snd_nxt, limit, inflight, segs)
                sent, inflight = limit, inflight + segs
            while sent < limit:
                seg_len = min(mss, limit - sent)
                self._send_new(snd.snd_nxt, seg_len, inflight, segs)
                sent += seg_len
                inflight += 1
            if sent < skb_len:
                q[0] = skb_len - sent                              # tso_fragment(): rest stays
            else:
                q.popleft()
            if self.k.new_data_checks_space(self):
                self.check_space()                                 # tcp_event_new_data_sent()
            if probe:
                break                                              # push_one
        limited = deferred_limited or inflight >= snd.snd_cwnd
        if snd.in_recovery and not snd.in_loss and self.conn.sack_ok:
            snd.prr_out += inflight - start                 # tcp_in_cwnd_reduction()
        if inflight > start or limited:
            self._cwnd_validate(limited)
            if inflight > start and not probe:
                self.schedule_loss_probe(False)
        if snd.fin_queued and not snd.fin_sent and not q:
            self._send_fin()
        if not snd.rtx_queue and q and not snd.probe_deadline:
            # tcp_check_probe_timer()
            snd.probe_deadline = self.reset_xmit_timer(self.probe0_base())

    def _mss_split_point(self: TcpSocket, skb_len: int, is_tail: bool, wnd_end: int,
                         quota: int, nagle_off: bool = False) -> int:
        """tcp_mss_split_point() [tcp_output.c, v6.18]: bytes of the head skb to send now --
        quota segments when they fit the window (and more data follows), else up to the
        window's right edge, the partial last segment dropped only when Nagle holds it."""
        mss = self.conn.mss_cache
        window = wnd_end - self.snd.snd_nxt
        max_len = mss * quota
        if max_len <= window and not is_tail:
            return min(max_len, skb_len)
        needed = min(skb_len, window)
        if max_len <= needed:
            return max_len
        partial = needed % mss
        if partial and not nagle_off and self._nagle_holds(True):
            return needed - partial
        return needed

    def _tso_should_defer(self: TcpSocket, skb_len: int, is_tail: bool, wnd_end: int,
                          inflight: int, max_segs: int) -> int:
        """tcp_tso_should_defer() [tcp_output.c, v6.18]: hold a multi-segment skb back for a
        bigger one when data went out less than 1 ms ago, neither a full tcp_tso_segs() skb
        nor a tcp_tso_win_divisor share of the window can go, and the next ACK is due soon
        enough (the oldest unacked segment's send time plus srtt; within srtt / 2, or since
        295ce1eb [6.18] within min(srtt / 2, 1 ms): the profile's tso_defer_ack_window). The
        1 ms test is on tcp_wstamp_ns (nanoseconds, since 4.20), not on jiffies. Not in
        recovery. Returns 0 (send), DEFER or DEFER_CWND_LIMITED."""
        snd = self.snd
        if snd.in_recovery or self.now - snd.wstamp_ns > NS_PER_MS:
            return 0
        mss = self.conn.mss_cache
        send_win = wnd_end - snd.snd_nxt
        cong_win = (snd.snd_cwnd - inflight) * mss
        limit = min(send_win, cong_win)
        if limit >= max_segs * mss:
            return 0
        if not is_tail and limit >= skb_len:
            return 0
        if limit >= min(snd.snd_wnd, snd.snd_cwnd * mss) // TCP_TSO_WIN_DIVISOR:
            return 0
        if not snd.rtx_queue:
            return 0
        srtt_ns = snd.srtt_us8 * (NS_PER_US >> 3)
        how_far = snd.rtx_queue[0][TX_NS] + srtt_ns - self.now
        if how_far > self.k.tso_defer_ack_window(self, srtt_ns):
            return 0
        if cong_win < send_win and cong_win <= skb_len:
            return DEFER_CWND_LIMITED                # *is_cwnd_limited = true
        return DEFER

    def _send_new(self: TcpSocket, seq: int, length: int, inflight: int,
                  segs: int = 1) -> None:
        """Send new data [seq, seq + length); `inflight`: packets_in_flight() before it (the
        caller's count: write_xmit keeps one for its cwnd test); `segs`: the segment count
        of the skb it is cut from (above 1: software GSO makes each a fresh skb).

        `length` above one MSS: the whole skb goes out as one GSO skb of `segs` segments
        (`SndState.gso_whole`, gso_size = MSS), as tcp_transmit_skb() [tcp_output.c, 6.18]
        hands a TSO device one skb per transmission: one tcp_event_data_sent(), one ACK
        carried; the retransmit queue keeps one entry per segment (the model's
        packets_out) and tcp_event_new_data_sent() counts tcp_skb_pcount() segments."""
        snd = self.snd
        mss = self.conn.mss_cache
        flags = ACK | (PSH if seq + length == snd.write_seq else 0)
        seg = self.make_segment(seq, length, flags)
        seg.tx_segs = segs
        seg.frags = self.pfrag.frags(seq, length)
        if length > mss:
            seg.gso_size = mss
        if not inflight:
            self.ca.cwnd_event(self, CA_EVENT_TX_START)    # tcp_event_data_sent()
        snd.snd_nxt = seq + length
        if length % mss:                              # len < tcp_skb_pcount() * mss
            snd.snd_sml = snd.snd_nxt                 # tcp_minshall_update()
        for start in range(seq, seq + length, mss):
            snd.rtx_queue.append([start, min(start + mss, seq + length), self.now, 0, 0, 0, 0])
            self.mib.TCPOrigDataSent += 1             # tcp_event_new_data_sent()
        self._data_sent()
        self._emit(seg)

    def _send_fin(self: TcpSocket) -> None:
        snd = self.snd
        seg = self.make_segment(snd.snd_nxt, 0, ACK | FIN)
        snd.rtx_queue.append([snd.snd_nxt, snd.snd_nxt + 1, self.now, 0, 0, 1, 0])
        snd.snd_nxt += 1
        snd.write_seq += 1
        snd.fin_sent = True
        self.mib.TCPOrigDataSent += 1                 # tcp_event_new_data_sent()
        self._data_sent()
        self._emit(seg)

    def _data_sent(self: TcpSocket) -> None:
        """tcp_event_data_sent() + tcp_event_new_data_sent(): ping-pong and RTO arming."""
        ack, snd = self.ack, self.snd
        snd.wstamp_ns = self.now                      # __tcp_transmit_skb(), no pacing
        self.ack_sent()
        if self.now - ack.ack_lrcvtime < ack.ack_ato:
            ack.ack_pingpong += 1
        ack.lsndtime = self.now
        if not snd.rto_deadline:
            snd.rto_deadline = self.reset_xmit_timer(snd.rto)
        snd.probe_deadline = 0

    def _retransmit_lost(self: TcpSocket) -> None:
        """Models tcp_xmit_retransmit_queue() [tcp_output.c, 6.18]: retransmit segments
        marked lost (never SACKed ones), in sequence order, as cwnd allows. Each counts
        TCPFastRetrans, or TCPSlowStartRetrans in Loss (with or without SACK); with SACK, in
        Recovery, toward PRR's prr_out, and resending the head restarts the RTO."""
        snd = self.snd
        if not snd.lost_out:
            return
        sack = self.conn.sack_ok
        inflight = self.packets_in_flight()
        for i, e in enumerate(snd.rtx_queue):
            if inflight >= snd.snd_cwnd or not snd.lost_out:
                break
            if e[LOST] and not e[RETRANS]:
                self._retransmit(e)
                inflight += 1
                if snd.in_loss:
                    self.mib.TCPSlowStartRetrans += 1
                else:
                    self.mib.TCPFastRetrans += 1
                    if sack and snd.in_recovery:
                        snd.prr_out += 1
                if sack and not i:
                    snd.rto_deadline = self.reset_xmit_timer(snd.rto)

    def _retransmit(self: TcpSocket, e: list[int], tlp: bool = False) -> None:
        """Models tcp_retransmit_skb(): resend one queued segment. A loss probe calls the
        inner __tcp_retransmit_skb() directly (`tlp`), which leaves retrans_stamp alone."""
        snd = self.snd
        if not snd.retrans_stamp and not tlp:
            snd.retrans_stamp = e[TX_NS]
        if e[LOST] and not e[RETRANS]:
            snd.lost_out -= 1
        if e[IS_FIN]:
            seg = self.make_segment(e[SEQ], 0, ACK | FIN)
        else:
            seg = self.make_segment(e[SEQ], e[END] - e[SEQ], ACK | PSH)
            seg.frags = self.pfrag.frags(e[SEQ], e[END] - e[SEQ])
        e[RETRANS] += 1
        e[SACKED] |= TCPCB_EVER_RETRANS
        e[TX_NS] = self.now
        snd.wstamp_ns = self.now
        self.ack.lsndtime = self.now                # tcp_event_data_sent(), as for new data
        self.mib.TCPRetransSegs += 1
        self._emit(seg, retrans=True)

    # -- ACK processing --------------------------------------------------------------------------

    def tcp_ack(self: TcpSocket, seg: Segment, slowpath: bool = True) -> int:
        """Models tcp_ack(): window update, cleaning the retransmit queue, RTT, cwnd,
        recovery, persist-timer handling. Returns -1 for an unacceptable ACK. `slowpath`:
        the caller is not tcp_rcv_established()'s header-prediction fast path (FLAG_SLOWPATH);
        it decides TCPHPAcks against TCPPureAcks."""
        snd = self.snd
        ack = seg.ack
        if ack > snd.snd_nxt:
            self.send_ack()
            return -1
        if ack < snd.snd_una:
            if ack < snd.snd_una - min(snd.max_window, snd.bytes_acked):
                self.send_ack()                                  # challenge ACK
                return -1
            if self.conn.sack_ok and seg.sacks:
                self.count_dsack(seg.sacks, ack)          # old_ack: tcp_sacktag_write_queue()
            return 0
        nwin = seg.win << self.conn.snd_wscale
        prior_una = snd.snd_una
        self._count_ack(seg, slowpath)
        win_update = self.k.may_update_window(self, seg, ack, nwin)   # FLAG_WIN_UPDATE
        if win_update:                                      # tcp_ack_update_window()
            changed = nwin != snd.snd_wnd
            snd.snd_wnd = nwin
            snd.snd_wl1 = seg.seq
            if changed and snd.write_queue:
                # a window that opens on queued data after an idle spell restarts cwnd,
                # as a new skb would (a reopened zero window gets initcwnd, not the old cwnd)
                self._slow_start_after_idle_check()
            if nwin > snd.max_window:
                snd.max_window = nwin
        snd.rcv_tstamp = self.now
        snd.probes_out = 0
        prior_packets = bool(snd.rtx_queue)
        sack = self._sack_scoreboard(seg, ack) if self.conn.sack_ok else None
        if ack > prior_una:
            self._clean_rtx_queue(ack, sack, seg.tsecr if self.conn.ts_ok else -1)
        elif sack is not None:
            self._sack_dupack(ack, sack)
        elif (not self.conn.sack_ok and not seg.len and not win_update and snd.rtx_queue
              and not seg.flags & FIN):
            self._dupack()                                  # FLAG_NOT_DUP is clear
        if snd.tlp_high_seq:
            self._process_tlp_ack(seg, ack, prior_una, win_update)
        if ack > prior_una and not self.schedule_loss_probe(True):
            snd.tlp_deadline = 0                           # tcp_set_xmit_timer(): the RTO
        if prior_packets:
            self._update_pacing_rate()                      # tcp_cong_control()
        if not snd.rtx_queue:
            snd.rto_deadline = 0
            if snd.write_queue:
                self._ack_probe()
        self.write_xmit()
        self.check_space()                                  # tcp_data_snd_check()
        return 0

    def _count_ack(self: TcpSocket, seg: Segment, slowpath: bool) -> None:
        """tcp_ack() [tcp_input.c, 6.18]: an ACK that advances snd_una on the fast path (not
        FLAG_SLOWPATH; a segment with SACK blocks never passes header prediction, its
        header length differs) counts TCPHPAcks; any other without data, SYN or FIN counts
        TCPPureAcks."""
        if not slowpath and not seg.sacks and seg.ack > self.snd.snd_una:
            self.mib.TCPHPAcks += 1
        elif seg.end_seq == seg.seq:
            self.mib.TCPPureAcks += 1

    def _sack_scoreboard(self: TcpSocket, seg: Segment, ack: int) -> tuple[int, int] | None:
        """A SACK connection's ACK: tag the scoreboard (tcp_sacktag_write_queue(), when the
        ACK carries blocks). Returns (segments newly SACKed, SACK RTT sample in ns or -1)
        when tcp_fastretrans_alert() has work (the ACK carries SACK information, or a
        recovery, SACKed or lost segments are under way), None for a clean ACK."""
        snd = self.snd
        newly, rtt_ns = 0, -1
        if seg.sacks:
            self.count_dsack(seg.sacks, ack)
        if seg.sacks and snd.rtx_queue:
            newly, _dsack, rtt_ns = self.sacktag_write_queue(seg.sacks, ack)
        if not (seg.sacks or snd.in_recovery or snd.sacked_out or snd.lost_out):
            return None
        return newly, rtt_ns

    def _sack_dupack(self: TcpSocket, ack: int, sack: tuple[int, int]) -> None:
        """A SACK connection's ACK that does not advance snd_una: the SACK RTT sample
        (tcp_ack_update_rtt()), then tcp_fastretrans_alert()."""
        newly, rtt_ns = sack
        if rtt_ns >= 0:
            self._rtt_sample(rtt_ns)
        self.fastretrans_alert(ack, ack, newly)

    def _rtt_sample(self: TcpSocket, rtt_ns: int) -> None:
        """tcp_ack_update_rtt() and the congestion control's pkts_acked() with one RTT
        sample (at least 1 us)."""
        rtt_us = max(1, rtt_ns // NS_PER_US)
        self._rtt_estimator(rtt_us)
        self.ca.pkts_acked(self, rtt_us)             # the ack_sample's rtt_us

    def _clean_rtx_queue(self: TcpSocket, ack: int,
                         sack: tuple[int, int] | None = None, tsecr: int = -1) -> None:
        """Models tcp_clean_rtx_queue() [tcp_input.c]: drop what the ACK covers, sample the
        RTT (tcp_ack_update_rtt: from a never-retransmitted segment (Karn), else the SACK
        sample, else the ACK's timestamp echo `tsecr`), then the loss state: NewReno's
        partial ACKs without SACK; with SACK information (`sack`: newly SACKed, SACK RTT)
        tcp_fastretrans_alert() and tcp_cong_control() (recovery.py)."""
        snd = self.snd
        acked_pkts = 0
        rtt_ns = -1
        prior_una = snd.snd_una
        sack_ok = self.conn.sack_ok
        q = snd.rtx_queue
        acked: list[list[int]] = []
        while q and q[0][END] <= ack:
            e = q.popleft()
            acked_pkts += 1
            if not e[SACKED] & TCPCB_SACKED_ACKED:
                self.mib.TCPDelivered += 1            # tcp_newly_delivered(); a SACKed one was
            if e[LOST] and not e[RETRANS]:
                snd.lost_out -= 1
            if sack_ok:
                acked.append(e)
            if not e[RETRANS]:
                rtt_ns = self.now - e[TX_NS]
        if acked:
            self.sack_acked(acked, ack)
        if sack is not None and rtt_ns < 0:
            rtt_ns = sack[1]
        if rtt_ns < 0 and acked_pkts:
            rtt_ns = self.tsopt_rtt_us(tsecr) * NS_PER_US   # -1 us: none, stays negative
        if q and q[0][SEQ] < ack:                # partially acked segment
            q[0][SEQ] = ack
        snd.bytes_acked += ack - snd.snd_una
        snd.snd_una = ack
        self.pfrag.release(ack)
        snd.retransmits = 0
        snd.dupacks = 0
        if rtt_ns >= 0:
            self._rtt_sample(rtt_ns)
        if sack is not None:
            self.fastretrans_alert(ack, prior_una, acked_pkts + sack[0])
        elif snd.in_recovery and ack >= snd.high_seq:
            snd.in_recovery = snd.in_loss = False
            if snd.snd_ssthresh < INFINITE_SSTHRESH:
                snd.snd_cwnd = max(min(snd.snd_cwnd, snd.snd_ssthresh), 1)
            snd.retrans_stamp = 0
        elif snd.in_loss:
            # TCP_CA_Loss is not a cwnd reduction (tcp_in_cwnd_reduction() covers CWR and
            # Recovery only), so tcp_cong_control() slow-starts cwnd from 1 on every ACK of
            # new data while the lost segments go out again [tcp_input.c]
            self.ca.cong_avoid(self, acked_pkts)
        elif snd.in_recovery:
            for e in q:
                if not e[RETRANS]:
                    self._mark_lost(e)           # NewReno partial ACK: next hole is lost
                    break
        else:
            snd.retrans_stamp = 0
            self.ca.cong_avoid(self, acked_pkts)
        snd.rto_deadline = self.reset_xmit_timer(snd.rto) if q else 0
        snd.backoff = 0
        self.writable = self.send_space() > 0

    def _rtt_estimator(self: TcpSocket, m: int) -> None:
        """Models tcp_rtt_estimator() + tcp_set_rto() (RFC 6298 with Linux's rto_min)."""
        snd = self.snd
        if snd.srtt_us8:
            err = m - (snd.srtt_us8 >> 3)
            snd.srtt_us8 += err
            if err < 0:
                err = -err - (snd.mdev_us >> 2)
                if err > 0:
                    err >>= 3
            else:
                err -= snd.mdev_us >> 2
            snd.mdev_us += err
        else:
            snd.srtt_us8 = m << 3
            snd.mdev_us = m << 1
        if not snd.min_rtt_us or m < snd.min_rtt_us:
            snd.min_rtt_us = m                          # tcp_update_rtt_min()
        rttvar = max(snd.mdev_us, TCP_RTO_MIN_NS // NS_PER_US)
        clock = self.clock                   # icsk_rto is in jiffies: usecs_to_jiffies rounds up
        rto = clock.ticks_ns(clock.usecs_to_ticks((snd.srtt_us8 >> 3) + rttvar))
        snd.rto = min(rto, TCP_RTO_MAX_NS)

    def _cwnd_validate(self: TcpSocket, limited: bool) -> None:
        """Models the bookkeeping of tcp_cwnd_validate() [tcp_output.c, as of f4ce91ce12a7
        "tcp: fix cwnd-limited checking to improve congestion control"; every profile shares
        this sender], called by tcp_write_xmit() when it sent something or found the flight
        at cwnd: a cwnd-limited send is remembered for the rest of the current window (until
        snd_una passes cwnd_usage_seq, the snd_nxt of then); while not limited,
        max_packets_out follows the largest flight of the window."""
        snd = self.snd
        if (snd.snd_una >= snd.cwnd_usage_seq or limited
                or (not snd.cwnd_limited and len(snd.rtx_queue) > snd.max_packets_out)):
            snd.cwnd_limited = limited
            snd.max_packets_out = len(snd.rtx_queue)
            snd.cwnd_usage_seq = snd.snd_nxt

    def is_cwnd_limited(self: TcpSocket) -> bool:
        """tcp_is_cwnd_limited() [include/net/tcp.h]: cwnd was the limit in this window, or,
        in slow start, cwnd is below twice the largest flight of the window."""
        snd = self.snd
        if snd.cwnd_limited:
            return True
        if snd.snd_cwnd < snd.snd_ssthresh:
            return snd.snd_cwnd < 2 * snd.max_packets_out
        return False

    def _dupack(self: TcpSocket) -> None:
        """Three duplicate ACKs: fast retransmit the head; tcp_init_cwnd_reduction() sets
        ssthresh by the congestion control (Reno: half, CUBIC: 0.7) and the model's cwnd
        drops to it at once (no PRR)."""
        snd = self.snd
        snd.dupacks += 1
        if snd.dupacks == 3 and not snd.in_recovery:
            self.mib.TCPRenoRecovery += 1                 # tcp_enter_recovery(), no SACK
            self.mib.TCPFastRetrans += 1
            snd.tlp_deadline = 0                          # the xmit timer is the RTO now
            snd.snd_ssthresh = self.ca.ssthresh(self)
            snd.snd_cwnd = snd.snd_ssthresh
            snd.in_recovery = True
            snd.high_seq = snd.snd_nxt
            self._mark_lost(snd.rtx_queue[0])
            self._retransmit(snd.rtx_queue[0])

    def _ack_probe(self: TcpSocket) -> None:
        """Models tcp_ack_probe(): stop probing once the head skb fits the window."""
        snd = self.snd
        head_end = snd.snd_nxt + snd.write_queue[0]
        if head_end <= snd.snd_una + snd.snd_wnd:
            snd.backoff = 0
            snd.probe_deadline = 0
        else:
            snd.probe_deadline = self.reset_xmit_timer(self.probe0_when())

    # -- tail loss probe -------------------------------------------------------------------------

    def schedule_loss_probe(self: TcpSocket, advancing_rto: bool) -> bool:
        """Models tcp_schedule_loss_probe() [tcp_output.c, v6.18]: arm the loss-probe timer
        (it replaces the RTO on the shared xmit timer) for a SACK connection with data in
        flight and no loss episode under way (ca_state Open; the model has no CWR state and
        counts duplicate ACKs as Disorder). The probe timeout is the profile's
        loss_probe_timeout() (about 2 * srtt plus a floor), never later than the RTO: the
        full RTO when the caller is about to rearm it (`advancing_rto`, on an ACK), else
        what is left of it from the head segment's send time (tcp_rto_delta_us).
        tcp_early_retrans is taken at its default (3: TLP on); Fast Open is not modelled."""
        snd, conn = self.snd, self.conn
        if (not snd.rtx_queue or not conn.sack_ok or snd.in_recovery or snd.dupacks
                or snd.sacked_out or conn.state not in XMIT_STATES):
            return False
        timeout = self.k.loss_probe_timeout(self)
        rto_delta = snd.rto if advancing_rto else snd.rtx_queue[0][TX_NS] + snd.rto - self.now
        if rto_delta > 0:
            timeout = min(timeout, self.clock.jiffies_up(rto_delta))   # usecs_to_jiffies
        snd.tlp_deadline = self.reset_xmit_timer(timeout)      # ICSK_TIME_LOSS_PROBE
        return True

    def send_loss_probe(self: TcpSocket) -> None:
        """Models tcp_send_loss_probe() [tcp_output.c, v6.18], run when the probe timer
        fires: at most one probe per episode (tlp_high_seq). If the head of the write queue
        fits the peer's window, tcp_write_xmit() sends one skb of new data with push_one = 2
        (a full cwnd lets one segment through, tcp_tso_should_defer() and Nagle are skipped);
        if that sends nothing, no probe. Otherwise the last segment in flight is sent again
        (the kernel fragments the last skb to its last MSS; the model's retransmit queue
        holds MSS-sized segments already). A probe sent records tlp_high_seq = snd_nxt,
        counts TCPLossProbes and restarts the RTO from now; otherwise the RTO is rearmed at
        the head segment's send time + RTO (tcp_rearm_rto).

        Not modelled: skb_still_in_host_queue() (the model has no qdisc), the probe's
        effect on RACK (the model has no RACK/SACK scoreboard), and tcp_early_retrans
        values other than 3."""
        snd = self.snd
        if not snd.rtx_queue or self.conn.state not in XMIT_STATES:
            return
        if snd.tlp_high_seq:
            self._rearm_rto_after_probe(False)
            return
        snd.tlp_retrans = False
        q = snd.write_queue
        if q and snd.snd_nxt + min(self.conn.mss_cache, q[0]) <= snd.snd_una + snd.snd_wnd:
            pcount = len(snd.rtx_queue)
            self.write_xmit(probe=True)
            if len(snd.rtx_queue) <= pcount:
                self._rearm_rto_after_probe(False)
                return
        else:
            self._retransmit(snd.rtx_queue[-1], tlp=True)
            snd.tlp_retrans = True
        snd.tlp_high_seq = snd.snd_nxt
        self.mib.TCPLossProbes += 1
        self.trace("timer", "loss probe")
        self._rearm_rto_after_probe(True)

    def _rearm_rto_after_probe(self: TcpSocket, sent: bool) -> None:
        """tcp_rearm_rto() at the end of tcp_send_loss_probe(): from now after a probe, else
        what is left of the RTO from the head segment's send time (tcp_rto_delta_us, at
        least 1 us, rounded up to jiffies)."""
        snd = self.snd
        if sent:
            snd.rto_deadline = self.reset_xmit_timer(snd.rto)
        else:
            left = snd.rtx_queue[0][TX_NS] + snd.rto - self.now
            snd.rto_deadline = self.reset_xmit_timer(self.clock.jiffies_up(max(left, 1)))

    def _process_tlp_ack(self: TcpSocket, seg: Segment, ack: int, prior_una: int,
                         win_update: bool) -> None:
        """Models tcp_process_tlp_ack() [tcp_input.c, v6.18]: once the ACK reaches
        tlp_high_seq the episode ends -- a probe of new data needs nothing more; a
        retransmitted probe that the peer reports as a duplicate (a D-SACK, or a pure
        duplicate ACK) means nothing was lost; an ACK beyond tlp_high_seq without that means
        the probe repaired a loss: cwnd is reduced once (CWR: ssthresh by the congestion
        control, Reno's half or CUBIC's 0.7, and cwnd at once to it)."""
        snd = self.snd
        if ack < snd.tlp_high_seq:
            return
        if not snd.tlp_retrans:
            snd.tlp_high_seq = 0
        elif seg.sacks and seg.sacks[0][0] < ack:          # D-SACK: both copies arrived
            snd.tlp_high_seq = 0
        elif ack > snd.tlp_high_seq:
            snd.tlp_high_seq = 0
            snd.snd_ssthresh = self.ca.ssthresh(self)
            snd.snd_cwnd = snd.snd_ssthresh
            self.mib.TCPLossProbeRecovery += 1
        elif ack == prior_una and not seg.len and not win_update:
            snd.tlp_high_seq = 0                          # pure duplicate ACK

    # -- timers ------------------------------------------------------------------------------------

    def probe0_base(self: TcpSocket) -> int:
        """tcp_probe0_base(): max(rto, TCP_RTO_MIN)."""
        return max(self.snd.rto, TCP_RTO_MIN_NS)

    def probe0_when(self: TcpSocket) -> int:
        """tcp_probe0_when(): exponential persist backoff, at most TCP_RTO_MAX."""
        b = min(self.snd.backoff, 10)
        return min(self.probe0_base() << b, TCP_RTO_MAX_NS)

    def retransmit_timer(self: TcpSocket) -> None:
        """Models tcp_retransmit_timer(): give up after tcp_retries2 (as modelled time), or
        enter loss, retransmit the head and back off. With a zero window and data in flight
        the retransmission acts as a probe (the profile decides when that times out); that
        branch leaves before TCPTimeouts is counted [tcp_timer.c, 6.18]."""
        snd = self.snd
        if self.conn.state in HANDSHAKE_STATES:
            self._handshake_timeout()
            return
        if not snd.rtx_queue or self.conn.state == CLOSED:
            return
        self.trace("timer", "rto")
        if snd.snd_wnd == 0:
            if self.k.rtx_probe0_timed_out(self):
                self.mib.TCPAbortOnTimeout += 1
                self.abort("ETIMEDOUT")
                return
            self._enter_loss()
            self._retransmit(snd.rtx_queue[0])
            snd.rto = min(snd.rto << 1, TCP_RTO_MAX_NS)
            snd.rto_deadline = self.reset_xmit_timer(snd.rto)
            return
        self.mib.TCPTimeouts += 1
        if snd.retransmits and self._write_timeout():
            self.mib.TCPAbortOnTimeout += 1
            self.abort("ETIMEDOUT")
            return
        self._enter_loss()
        self._retransmit(snd.rtx_queue[0])
        snd.backoff += 1
        snd.retransmits += 1
        snd.rto = min(snd.rto << 1, TCP_RTO_MAX_NS)
        snd.rto_deadline = self.reset_xmit_timer(snd.rto)

    def _enter_loss(self: TcpSocket) -> None:
        """tcp_enter_loss(): everything in flight is lost, cwnd = 1, ssthresh by the
        congestion control, then TCP_CA_Loss (CUBIC forgets its curve). With SACK,
        tcp_timeout_mark_lost() keeps SACKed segments (and those sent too recently for
        RACK to tell) out of the lost ones, and cwnd = packets in flight + 1."""
        snd = self.snd
        if not snd.in_recovery or snd.retransmits == 0:
            snd.snd_ssthresh = self.ca.loss_ssthresh(self)
        snd.snd_cwnd = 1
        snd.cwnd_cnt = 0
        snd.tlp_deadline = 0
        snd.tlp_high_seq = 0                          # tcp_enter_loss() forgets the probe
        snd.in_recovery = snd.in_loss = True
        snd.high_seq = snd.snd_nxt
        if self.conn.sack_ok:
            self.timeout_mark_lost()
            snd.snd_cwnd = self.packets_in_flight() + 1
        else:
            for e in snd.rtx_queue:
                if e[LOST] and e[RETRANS]:
                    self.mib.TCPLostRetransmit += 1     # tcp_mark_skb_lost()
                e[LOST] = 1
                e[RETRANS] = 0
            snd.lost_out = len(snd.rtx_queue)
        self.ca.set_state(self, TCP_CA_LOSS)            # tcp_set_ca_state()

    def _write_timeout(self: TcpSocket) -> bool:
        """Models retransmits_timed_out() with tcp_model_timeout(retries2, TCP_RTO_MIN)."""
        boundary = self.sysctl.tcp_retries2
        thresh = 9                                     # ilog2(TCP_RTO_MAX / TCP_RTO_MIN)
        if boundary <= thresh:
            timeout = ((2 << boundary) - 1) * TCP_RTO_MIN_NS
        else:
            timeout = ((2 << thresh) - 1) * TCP_RTO_MIN_NS + (boundary - thresh) * TCP_RTO_MAX_NS
        return self.now - self.snd.retrans_stamp >= timeout

    def _handshake_timeout(self: TcpSocket) -> None:
        """The SYN or SYN-ACK was not answered: send it again, the timer backed off.
        Active side: tcp_retransmit_timer() in SYN_SENT, ETIMEDOUT after tcp_syn_retries
        (tcp_write_timeout [tcp_timer.c]). Passive side: the request sock's timer
        (reqsk_timer_handler() [inet_connection_sock.c], tcp_syn_ack_timeout()), which
        drops the request after tcp_synack_retries: the listener forgets it."""
        snd = self.snd
        active = self.conn.state == SYN_SENT
        if snd.retransmits >= (TCP_SYN_RETRIES if active else TCP_SYNACK_RETRIES):
            if active:
                self.abort("ETIMEDOUT")
            else:
                self.conn.state = LISTEN
                snd.rto_deadline = 0
            return
        self.mib.TCPTimeouts += 1
        snd.retransmits += 1
        self.mib.TCPRetransSegs += 1
        self.trace("timer", "rto")
        if active:
            self._emit(self.make_syn(), retrans=True)
        else:
            self._emit(self.make_synack())              # tcp_make_synack() counts OutSegs
        snd.rto = min(snd.rto << 1, TCP_RTO_MAX_NS)
        snd.rto_deadline = self.reset_xmit_timer(snd.rto)

    def resend_synack(self: TcpSocket) -> None:
        """A retransmitted SYN reached the request: tcp_check_req() answers it with the
        SYN-ACK again (inet_rtx_syn_ack(), counted in num_retrans: no RTT sample from it
        then). The model has one counter: this one also counts toward tcp_synack_retries,
        which in the kernel counts the request timer's expiries only (num_timeout)."""
        self.snd.retransmits += 1
        self.mib.TCPRetransSegs += 1
        self._emit(self.make_synack())

    def probe_timer(self: TcpSocket) -> None:
        """Models tcp_probe_timer() + tcp_send_probe0() + tcp_write_wakeup()."""
        snd = self.snd
        if snd.rtx_queue or not snd.write_queue or self.conn.state == CLOSED:
            snd.probes_out = 0
            return
        if snd.probes_out >= self.sysctl.tcp_retries2:
            self.mib.TCPAbortOnTimeout += 1
            self.abort("ETIMEDOUT")
            return
        wnd_end = snd.snd_una + snd.snd_wnd
        q = snd.write_queue
        if snd.snd_nxt < wnd_end:                      # window partly open: send a slice
            seg_len = min(wnd_end - snd.snd_nxt, self.conn.mss_cache, q[0])
            if seg_len < q[0]:
                q[0] -= seg_len                          # tcp_fragment(): the rest stays a skb
            else:
                q.popleft()
            self._send_new(snd.snd_nxt, seg_len, self.packets_in_flight())
            if self.k.new_data_checks_space(self):
                self.check_space()                       # tcp_event_new_data_sent()
        else:                                          # zero-window probe: old sequence
            self.mib.TCPWinProbe += 1
            seg = self.make_segment(snd.snd_una - 1, 0, ACK)
            self.trace("timer", "probe")
            self._emit(seg)
        if snd.rtx_queue:
            snd.probes_out = 0
            snd.backoff = 0
            return
        snd.probes_out += 1
        if snd.backoff < self.sysctl.tcp_retries2:
            snd.backoff += 1
        snd.probe_deadline = self.reset_xmit_timer(self.probe0_when())
