"""The send half: segmentation of writes, send window, congestion window (Reno), RTO with
exponential backoff and the tcp_retries2 give-up, zero-window persist probes.

Models tcp_sendmsg()/tcp_write_xmit() [tcp.c, tcp_output.c], tcp_ack() [tcp_input.c] and
tcp_retransmit_timer()/tcp_probe_timer() [tcp_timer.c]. The write queue keeps skb
boundaries as Linux does. TCP always uses (software) GSO, even when the device has it off
(sk_setup_caps), so a write fills the unsent tail skb up to the size goal -- at least two
MSS (tcp_tso_autosize's min_tso_segs) -- and a transmission sends an skb as MSS-sized wire
segments. An skb goes out when its first MSS fits the peer's window (tcp_snd_wnd_test); it
is then cut at the window's right edge (tcp_mss_split_point), the last wire segment partial
unless Nagle holds it. A persist-timer slice splits the head skb too (tcp_fragment). Both
are how a sender lands exactly on a receiver's right window edge.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from tcpsim.core.constants import (
    NS_PER_US, TCP_RESOURCE_PROBE_INTERVAL_NS, TCP_RTO_MAX_NS, TCP_RTO_MIN_NS,
    TCP_TIMEOUT_INIT_NS, skb_truesize,
)
from tcpsim.core.segment import ACK, FIN, PSH, Segment

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

INFINITE_SSTHRESH = 0x7FFFFFFF
SND_SKB_OVERHEAD = skb_truesize(256)     # head of a sender skb (tcp_stream_alloc_skb)
_PER_MSS_MEM = 4096 + 256                # tcp_sndbuf_expand(): roundup_pow_of_two + sk_buff

_XMIT_STATES = frozenset({"ESTABLISHED", "CLOSE_WAIT", "FIN_WAIT1", "LAST_ACK", "CLOSING"})

# rtx_queue entry fields: [seq, end, last tx time, times retransmitted, lost, is FIN]
SEQ, END, TX_NS, RETRANS, LOST, IS_FIN = 0, 1, 2, 3, 4, 5


class SendMixin:
    """Send-path behaviour of TcpSocket."""

    __slots__ = ()

    def _init_send_state(self: TcpSocket, initcwnd: int, nodelay: bool) -> None:
        self.iss = self.snd_una = self.snd_nxt = self.write_seq = 0
        self.snd_wnd = self.snd_wl1 = self.max_window = 0
        self.bytes_acked = 0
        self.initcwnd = initcwnd
        self.snd_cwnd = initcwnd
        self.snd_ssthresh = INFINITE_SSTHRESH
        self.cwnd_cnt = 0
        self.cwnd_limited = False                # tp->is_cwnd_limited
        self.max_packets_out = 0                 # tp->max_packets_out
        self.cwnd_usage_seq = 0                  # tp->cwnd_usage_seq
        self.srtt_us8 = 0
        self.mdev_us = 0
        self.rto = TCP_TIMEOUT_INIT_NS
        self.rtx_queue: deque[list[int]] = deque()
        self.write_queue: deque[int] = deque()   # lengths of the unsent skbs, in order
        self.snd_sml = 0                         # end of the last small segment sent
        self.lost_out = 0
        self.rto_deadline = self.probe_deadline = 0
        self.backoff = self.retransmits = self.probes_out = 0
        self.retrans_stamp = 0
        self.rcv_tstamp = 0
        self.dupacks = 0
        self.high_seq = 0
        self.in_recovery = False
        self.rtx_next = 0
        self.sk_sndbuf = self.sysctl.tcp_wmem[1]
        self.nodelay = nodelay
        self.fin_queued = self.fin_sent = self.snd_shutdown = False

    # -- send buffer ----------------------------------------------------------------------------

    def sndbuf_expand(self: TcpSocket) -> None:
        """Models tcp_sndbuf_expand(): room for two windows of max(cwnd, 10) segments."""
        sndmem = 2 * max(self.initcwnd, self.snd_cwnd, 10) * _PER_MSS_MEM
        if self.sk_sndbuf < sndmem:
            self.sk_sndbuf = min(sndmem, self.sysctl.tcp_wmem[2])

    def wmem_queued(self: TcpSocket) -> int:
        """sk_wmem_queued: payload plus one sender-skb overhead per queued skb."""
        nskbs = len(self.rtx_queue) + len(self.write_queue)
        return (self.write_seq - self.snd_una) + nskbs * SND_SKB_OVERHEAD

    def send_space(self: TcpSocket) -> int:
        """Payload bytes a write() may still queue (sk_stream_memory_free), 0 when full."""
        free = (self.sk_sndbuf - (self.write_seq - self.snd_una)      # wmem_queued(), inlined
                - (len(self.rtx_queue) + len(self.write_queue)) * SND_SKB_OVERHEAD)
        if free <= 0:
            return 0
        mss = self.mss_cache or 536
        return max(0, free * mss // (mss + SND_SKB_OVERHEAD))

    # -- writing ---------------------------------------------------------------------------------

    def write(self: TcpSocket, now: int, n: int) -> int:
        """The application writes n bytes; returns how many were queued (0 when the send
        buffer is full or the connection is not open)."""
        self._clock(now)
        if self.state not in ("ESTABLISHED", "CLOSE_WAIT") or self.snd_shutdown:
            return 0
        take = min(n, self.send_space())
        if take <= 0:
            self.writable = False
            return 0
        self._queue_bytes(take)
        self.write_seq += take
        self.sink.record(self, "write", "", length=take)
        self.write_xmit()
        return take

    def size_goal(self: TcpSocket) -> int:
        """tcp_xmit_size_goal(): bytes per skb. tcp_tso_autosize() gives at least two
        segments (min_tso_segs) -- what an app-limited or slow flow gets; faster flows build
        bigger skbs, which go on the wire the same way."""
        return 2 * self.mss_cache

    def _queue_bytes(self: TcpSocket, n: int) -> None:
        """tcp_sendmsg_locked(): top up the unsent tail skb to the size goal, then new skbs."""
        q = self.write_queue
        goal = self.size_goal()
        if q and q[-1] < goal:
            room = min(goal - q[-1], n)
            q[-1] += room
            n -= room
        while n > 0:
            q.append(min(goal, n))
            n -= q[-1]

    def _nagle_holds(self: TcpSocket, small: bool) -> bool:
        """tcp_nagle_check(): with Nagle on, a small segment waits while an earlier small
        segment is still unacknowledged (Minshall's variant)."""
        return (small and not self.nodelay and bool(self.rtx_queue)
                and self.snd_una < self.snd_sml <= self.snd_nxt)

    def shutdown_write(self: TcpSocket, now: int) -> None:
        """shutdown(SHUT_WR)/close(): queue a FIN after the data."""
        self._clock(now)
        if self.snd_shutdown:
            return
        self.snd_shutdown = True
        self.fin_queued = True
        if self.state == "ESTABLISHED":
            self.state = "FIN_WAIT1"
        elif self.state == "CLOSE_WAIT":
            self.state = "LAST_ACK"
        self.write_xmit()

    def packets_in_flight(self: TcpSocket) -> int:
        """tcp_packets_in_flight(): sent and not acked, less those marked lost and not yet
        retransmitted (packets_out - lost_out + retrans_out)."""
        return len(self.rtx_queue) - self.lost_out

    def _mark_lost(self: TcpSocket, e: list[int]) -> None:
        """Mark a segment lost: it leaves the flight until it is retransmitted."""
        if not (e[LOST] and not e[RETRANS]):
            e[LOST] = 1
            e[RETRANS] = 0
            self.lost_out += 1

    def write_xmit(self: TcpSocket) -> None:
        """Models tcp_write_xmit(): send what cwnd, the peer's window and Nagle allow;
        retransmissions of lost segments go first. Arms the persist timer when the window
        blocks everything (tcp_check_probe_timer)."""
        if not self.write_queue and not self.lost_out and not (
                self.fin_queued and not self.fin_sent):
            return                                  # nothing to send (the common case)
        if self.state not in _XMIT_STATES:
            return
        self._retransmit_lost()
        mss = self.mss_cache
        inflight = start = self.packets_in_flight()
        wnd_end = self.snd_una + self.snd_wnd
        q = self.write_queue
        while q:
            skb_len = q[0]
            if inflight >= self.snd_cwnd:
                break
            if self.snd_nxt + min(mss, skb_len) > wnd_end:
                break                                              # tcp_snd_wnd_test()
            if self._nagle_holds(skb_len < mss):
                break                                              # tcp_nagle_test()
            limit = min(skb_len, wnd_end - self.snd_nxt, (self.snd_cwnd - inflight) * mss)
            if limit < skb_len and limit % mss and self._nagle_holds(True):
                limit -= limit % mss                               # tcp_mss_split_point()
            sent = 0
            while sent < limit:
                seg_len = min(mss, limit - sent)
                self._send_new(self.snd_nxt, seg_len)
                sent += seg_len
                inflight += 1
            if sent < skb_len:
                q[0] = skb_len - sent                              # tso_fragment(): rest stays
                break
            q.popleft()
        limited = inflight >= self.snd_cwnd
        if inflight > start or limited:
            self._cwnd_validate(limited)
        if self.fin_queued and not self.fin_sent and not q:
            self._send_fin()
        if not self.rtx_queue and q and not self.probe_deadline:
            self.probe_deadline = self.reset_xmit_timer(self.probe0_base())  # tcp_check_probe_timer()

    def _send_new(self: TcpSocket, seq: int, length: int) -> None:
        flags = ACK | (PSH if seq + length == self.write_seq else 0)
        seg = self.make_segment(seq, length, flags)
        self.snd_nxt = seq + length
        if length < self.mss_cache:
            self.snd_sml = self.snd_nxt                 # tcp_minshall_update()
        self.rtx_queue.append([seq, seq + length, self.now, 0, 0, 0])
        self._data_sent()
        self._emit(seg)

    def _send_fin(self: TcpSocket) -> None:
        seg = self.make_segment(self.snd_nxt, 0, ACK | FIN)
        self.rtx_queue.append([self.snd_nxt, self.snd_nxt + 1, self.now, 0, 0, 1])
        self.snd_nxt += 1
        self.write_seq += 1
        self.fin_sent = True
        self._data_sent()
        self._emit(seg)

    def _data_sent(self: TcpSocket) -> None:
        """tcp_event_data_sent() + tcp_event_new_data_sent(): ping-pong and RTO arming."""
        self.ack_sent()
        if self.now - self.ack_lrcvtime < self.ack_ato:
            self.ack_pingpong += 1
        self.lsndtime = self.now
        if not self.rto_deadline:
            self.rto_deadline = self.reset_xmit_timer(self.rto)
        self.probe_deadline = 0

    def _retransmit_lost(self: TcpSocket) -> None:
        """Retransmit segments marked lost, as cwnd allows (tcp_xmit_retransmit_queue)."""
        if not self.lost_out:
            return
        inflight = self.packets_in_flight()
        for e in self.rtx_queue:
            if inflight >= self.snd_cwnd or not self.lost_out:
                break
            if e[LOST] and not e[RETRANS]:
                self._retransmit(e)
                inflight += 1

    def _retransmit(self: TcpSocket, e: list[int]) -> None:
        """Models tcp_retransmit_skb(): resend one queued segment."""
        if not self.retrans_stamp:
            self.retrans_stamp = e[TX_NS]
        if e[LOST] and not e[RETRANS]:
            self.lost_out -= 1
        if e[IS_FIN]:
            seg = self.make_segment(e[SEQ], 0, ACK | FIN)
        else:
            seg = self.make_segment(e[SEQ], e[END] - e[SEQ], ACK | PSH)
        e[RETRANS] += 1
        e[TX_NS] = self.now
        self.mib.TCPRetransSegs += 1
        self._emit(seg)

    # -- ACK processing --------------------------------------------------------------------------

    def tcp_ack(self: TcpSocket, seg: Segment) -> int:
        """Models tcp_ack(): window update, cleaning the retransmit queue, RTT, cwnd,
        recovery, persist-timer handling. Returns -1 for an unacceptable ACK."""
        ack = seg.ack
        if ack > self.snd_nxt:
            self.send_ack()
            return -1
        if ack < self.snd_una:
            if ack < self.snd_una - min(self.max_window, self.bytes_acked):
                self.send_ack()                                  # challenge ACK
                return -1
            return 0
        nwin = seg.win << self.snd_wscale
        prior_una = self.snd_una
        win_update = self.k.may_update_window(self, seg, ack, nwin)   # FLAG_WIN_UPDATE
        if win_update:
            self.snd_wnd = nwin
            self.snd_wl1 = seg.seq
            if nwin > self.max_window:
                self.max_window = nwin
        self.rcv_tstamp = self.now
        self.probes_out = 0
        if ack > prior_una:
            self._clean_rtx_queue(ack)
        elif not seg.len and not win_update and self.rtx_queue and not seg.flags & FIN:
            self._dupack()                                  # FLAG_NOT_DUP is clear
        if not self.rtx_queue:
            self.rto_deadline = 0
            if self.write_queue:
                self._ack_probe()
        self.write_xmit()
        return 0

    def _clean_rtx_queue(self: TcpSocket, ack: int) -> None:
        acked_pkts = 0
        rtt_ns = -1
        q = self.rtx_queue
        while q and q[0][END] <= ack:
            e = q.popleft()
            acked_pkts += 1
            if e[LOST] and not e[RETRANS]:
                self.lost_out -= 1
            if not e[RETRANS]:
                rtt_ns = self.now - e[TX_NS]
        if q and q[0][SEQ] < ack:                # partially acked segment
            q[0][SEQ] = ack
        self.bytes_acked += ack - self.snd_una
        self.snd_una = ack
        self.retransmits = 0
        self.dupacks = 0
        if rtt_ns >= 0:
            self._rtt_estimator(max(1, rtt_ns // NS_PER_US))
        if self.in_recovery and ack >= self.high_seq:
            self.in_recovery = False
            self.snd_cwnd = max(min(self.snd_cwnd, self.snd_ssthresh), 1) if self.snd_ssthresh < INFINITE_SSTHRESH else self.snd_cwnd
            self.retrans_stamp = 0
        elif self.in_recovery:
            for e in q:
                if not e[RETRANS]:
                    self._mark_lost(e)           # NewReno partial ACK: next hole is lost
                    break
        else:
            self.retrans_stamp = 0
            self._cong_avoid(acked_pkts)
        self.rto_deadline = self.reset_xmit_timer(self.rto) if q else 0
        self.backoff = 0
        self.writable = self.send_space() > 0
        self.sndbuf_expand()

    def _rtt_estimator(self: TcpSocket, m: int) -> None:
        """Models tcp_rtt_estimator() + tcp_set_rto() (RFC 6298 with Linux's rto_min)."""
        if self.srtt_us8:
            err = m - (self.srtt_us8 >> 3)
            self.srtt_us8 += err
            if err < 0:
                err = -err - (self.mdev_us >> 2)
                if err > 0:
                    err >>= 3
            else:
                err -= self.mdev_us >> 2
            self.mdev_us += err
        else:
            self.srtt_us8 = m << 3
            self.mdev_us = m << 1
        rttvar = max(self.mdev_us, TCP_RTO_MIN_NS // NS_PER_US)
        jc = self.jc
        if jc is None:
            self.rto = min(((self.srtt_us8 >> 3) + rttvar) * NS_PER_US, TCP_RTO_MAX_NS)
        else:                                # icsk_rto is in jiffies: usecs_to_jiffies rounds up
            rto_j = jc.usecs_to_jiffies((self.srtt_us8 >> 3) + rttvar)
            self.rto = min(jc.tick_ns(rto_j), TCP_RTO_MAX_NS)

    def _cwnd_validate(self: TcpSocket, limited: bool) -> None:
        """Models the bookkeeping of tcp_cwnd_validate() [tcp_output.c, as of f4ce91ce12a7
        "tcp: fix cwnd-limited checking to improve congestion control"; every profile shares
        this sender], called by tcp_write_xmit() when it sent something or found the flight
        at cwnd: a cwnd-limited send is remembered for the rest of the current window (until
        snd_una passes cwnd_usage_seq, the snd_nxt of then); while not limited,
        max_packets_out follows the largest flight of the window."""
        if (self.snd_una >= self.cwnd_usage_seq or limited
                or (not self.cwnd_limited and len(self.rtx_queue) > self.max_packets_out)):
            self.cwnd_limited = limited
            self.max_packets_out = len(self.rtx_queue)
            self.cwnd_usage_seq = self.snd_nxt

    def is_cwnd_limited(self: TcpSocket) -> bool:
        """tcp_is_cwnd_limited() [include/net/tcp.h]: cwnd was the limit in this window, or,
        in slow start, cwnd is below twice the largest flight of the window."""
        if self.cwnd_limited:
            return True
        if self.snd_cwnd < self.snd_ssthresh:
            return self.snd_cwnd < 2 * self.max_packets_out
        return False

    def _cong_avoid(self: TcpSocket, acked: int) -> None:
        """Reno: slow start below ssthresh, +1 segment per window above, only while the
        flow is cwnd-limited (tcp_is_cwnd_limited)."""
        if not self.is_cwnd_limited():
            return
        if self.snd_cwnd < self.snd_ssthresh:
            self.snd_cwnd = min(self.snd_cwnd + acked, self.snd_ssthresh)
            return
        self.cwnd_cnt += acked
        if self.cwnd_cnt >= self.snd_cwnd:
            self.cwnd_cnt -= self.snd_cwnd
            self.snd_cwnd += 1

    def _dupack(self: TcpSocket) -> None:
        """Three duplicate ACKs: fast retransmit the head, halve cwnd (Reno)."""
        self.dupacks += 1
        if self.dupacks == 3 and not self.in_recovery:
            self.mib.TCPFastRetrans += 1
            self.snd_ssthresh = max(self.snd_cwnd >> 1, 2)
            self.snd_cwnd = self.snd_ssthresh
            self.in_recovery = True
            self.high_seq = self.snd_nxt
            self._mark_lost(self.rtx_queue[0])
            self._retransmit(self.rtx_queue[0])

    def _ack_probe(self: TcpSocket) -> None:
        """Models tcp_ack_probe(): stop probing once the head skb fits the window."""
        head_end = self.snd_nxt + self.write_queue[0]
        if head_end <= self.snd_una + self.snd_wnd:
            self.backoff = 0
            self.probe_deadline = 0
        else:
            self.probe_deadline = self.reset_xmit_timer(self.probe0_when())

    # -- timers ------------------------------------------------------------------------------------

    def probe0_base(self: TcpSocket) -> int:
        """tcp_probe0_base(): max(rto, TCP_RTO_MIN)."""
        return max(self.rto, TCP_RTO_MIN_NS)

    def probe0_when(self: TcpSocket) -> int:
        """tcp_probe0_when(): exponential persist backoff, at most TCP_RTO_MAX."""
        b = min(self.backoff, 10)
        return min(self.probe0_base() << b, TCP_RTO_MAX_NS)

    def retransmit_timer(self: TcpSocket) -> None:
        """Models tcp_retransmit_timer(): give up after tcp_retries2 (as modelled time), or
        enter loss, retransmit the head and back off. With a zero window and data in flight
        the retransmission acts as a probe (the profile decides when that times out)."""
        if not self.rtx_queue or self.state == "CLOSED":
            return
        if self.state in ("SYN_SENT", "SYN_RECV"):
            self._handshake_timeout()
            return
        self.mib.TCPTimeouts += 1
        self.sink.record(self, "timer", "rto")
        if self.snd_wnd == 0:
            if self.k.rtx_probe0_timed_out(self):
                self.mib.TCPAbortOnTimeout += 1
                self.abort("ETIMEDOUT")
                return
            self._enter_loss()
            self._retransmit(self.rtx_queue[0])
            self.rto = min(self.rto << 1, TCP_RTO_MAX_NS)
            self.rto_deadline = self.reset_xmit_timer(self.rto)
            return
        if self.retransmits and self._write_timeout():
            self.mib.TCPAbortOnTimeout += 1
            self.abort("ETIMEDOUT")
            return
        self._enter_loss()
        self._retransmit(self.rtx_queue[0])
        self.backoff += 1
        self.retransmits += 1
        self.rto = min(self.rto << 1, TCP_RTO_MAX_NS)
        self.rto_deadline = self.reset_xmit_timer(self.rto)

    def _enter_loss(self: TcpSocket) -> None:
        """tcp_enter_loss(): everything in flight is lost, cwnd = 1."""
        if not self.in_recovery or self.retransmits == 0:
            self.snd_ssthresh = max(self.packets_in_flight() >> 1, 2)
        self.snd_cwnd = 1
        self.cwnd_cnt = 0
        self.in_recovery = True
        self.high_seq = self.snd_nxt
        for e in self.rtx_queue:
            e[LOST] = 1
            e[RETRANS] = 0
        self.lost_out = len(self.rtx_queue)

    def _write_timeout(self: TcpSocket) -> bool:
        """Models retransmits_timed_out() with tcp_model_timeout(retries2, TCP_RTO_MIN)."""
        boundary = self.sysctl.tcp_retries2
        thresh = 9                                     # ilog2(TCP_RTO_MAX / TCP_RTO_MIN)
        if boundary <= thresh:
            timeout = ((2 << boundary) - 1) * TCP_RTO_MIN_NS
        else:
            timeout = ((2 << thresh) - 1) * TCP_RTO_MIN_NS + (boundary - thresh) * TCP_RTO_MAX_NS
        return self.now - self.retrans_stamp >= timeout

    def _handshake_timeout(self: TcpSocket) -> None:
        self.retransmits += 1
        if self.retransmits > 6:
            self.abort("ETIMEDOUT")
            return
        self.rto = min(self.rto << 1, TCP_RTO_MAX_NS)
        self.rto_deadline = self.reset_xmit_timer(self.rto)

    def probe_timer(self: TcpSocket) -> None:
        """Models tcp_probe_timer() + tcp_send_probe0() + tcp_write_wakeup()."""
        if self.rtx_queue or not self.write_queue or self.state == "CLOSED":
            self.probes_out = 0
            return
        if self.probes_out >= self.sysctl.tcp_retries2:
            self.mib.TCPAbortOnTimeout += 1
            self.abort("ETIMEDOUT")
            return
        wnd_end = self.snd_una + self.snd_wnd
        q = self.write_queue
        if self.snd_nxt < wnd_end:                      # window partly open: send a slice
            seg_len = min(wnd_end - self.snd_nxt, self.mss_cache, q[0])
            if seg_len < q[0]:
                q[0] -= seg_len                          # tcp_fragment(): the rest stays a skb
            else:
                q.popleft()
            self._send_new(self.snd_nxt, seg_len)
        else:                                          # zero-window probe: old sequence
            self.mib.TCPWinProbe += 1
            seg = self.make_segment(self.snd_una - 1, 0, ACK)
            self.sink.record(self, "timer", "probe")
            self._emit(seg)
        if self.rtx_queue:
            self.probes_out = 0
            self.backoff = 0
            return
        self.probes_out += 1
        if self.backoff < self.sysctl.tcp_retries2:
            self.backoff += 1
        self.probe_deadline = self.reset_xmit_timer(self.probe0_when())
