"""ACK generation: per-segment bookkeeping, immediate vs delayed ACKs, the delayed-ACK
timer, window updates after reads, and SACK/D-SACK blocks.

Models tcp_event_data_recv(), __tcp_ack_snd_check(), tcp_send_delayed_ack(),
tcp_delack_timer_handler(), __tcp_cleanup_rbuf() and tcp_send_ack() [tcp_input.c,
tcp_output.c, tcp_timer.c, tcp.c].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.constants import (
    ICSK_ACK_NOW, ICSK_ACK_PUSHED, ICSK_ACK_PUSHED2, ICSK_ACK_SCHED, ICSK_ACK_TIMER,
    TCP_ATO_MIN_NS, TCP_MAX_QUICKACKS,
)
from tcpsim.core.segment import ACK, Segment

from tcpsim.core.skb import Skb
from tcpsim.core.state import CLOSED

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class AckMixin:
    """ACK behaviour of TcpSocket."""

    __slots__ = ()

    # -- quick-ack mode -----------------------------------------------------------------------

    def incr_quickack(self: TcpSocket, max_quickacks: int) -> None:
        """Models tcp_incr_quickack(): allow up to rcv_wnd/(2*rcv_mss) immediate ACKs."""
        ack = self.ack
        quickacks = self.rcv.rcv_wnd // (2 * ack.ack_rcv_mss) or 2
        quickacks = min(quickacks, max_quickacks)
        if quickacks > ack.ack_quick:
            ack.ack_quick = quickacks

    def enter_quickack_mode(self: TcpSocket, max_quickacks: int) -> None:
        """Models tcp_enter_quickack_mode(): quick ACKs, leave ping-pong, reset ato."""
        self.incr_quickack(max_quickacks)
        self.ack.ack_pingpong = 0
        self.ack.ack_ato = TCP_ATO_MIN_NS

    def in_quickack_mode(self: TcpSocket) -> bool:
        """Models tcp_in_quickack_mode()."""
        return self.ack.ack_quick > 0 and not self.in_pingpong()

    def in_pingpong(self: TcpSocket) -> bool:
        return self.ack.ack_pingpong >= self.k.pingpong_thresh()

    def enter_pingpong(self: TcpSocket) -> None:
        self.ack.ack_pingpong = self.k.pingpong_thresh()

    # -- tcp_event_data_recv ------------------------------------------------------------------

    def event_data_recv(self: TcpSocket, seg: Segment, skb: Skb) -> None:
        """Models tcp_event_data_recv(): schedule an ACK, learn rcv_mss and RTT, adapt the
        delayed-ACK timeout (ato) to the inter-arrival time, grow rcv_ssthresh."""
        self.ack.ack_pending |= ICSK_ACK_SCHED
        self.k.measure_rcv_mss(self, seg, skb)
        self.k.rcv_rtt_measure(self)
        self._ato_update()
        if seg.len >= 128:
            self.k.grow_window(self, skb, True, seg)

    def _ato_update(self: TcpSocket) -> None:
        """The ato update of tcp_event_data_recv() [tcp_input.c], in the clock's ticks: ato,
        the inter-arrival time m and icsk_rto are whole jiffies, and ato >> 1 halves a
        jiffy count (at HZ = 250 a 60 ms ato halves to 28 ms, not 30). ack_ato and
        ack_lrcvtime stay in ns (lrcvtime on the tick that started its jiffy). With the
        default clock the ticks are ns and the jiffy a millisecond."""
        ack, clock = self.ack, self.clock
        lrcvtime, ato, m = clock.ato_sample(self.now, ack.ack_ato, ack.ack_lrcvtime)
        if not ack.ack_ato:
            self.incr_quickack(TCP_MAX_QUICKACKS)
            ack.ack_ato = TCP_ATO_MIN_NS
        else:
            half_ato_min = clock.ato_min_ticks // 2
            if m <= half_ato_min:                   # the common case: no RTO conversion
                ack.ack_ato = clock.ticks_ns((ato >> 1) + half_ato_min)
            else:
                rto = clock.to_ticks(self.snd.rto)
                if m < ato:
                    ack.ack_ato = clock.ticks_ns(min((ato >> 1) + m, rto))
                elif m > rto:
                    self.incr_quickack(TCP_MAX_QUICKACKS)
        ack.ack_lrcvtime = lrcvtime

    # -- immediate or delayed ----------------------------------------------------------------

    def ack_snd_check(self: TcpSocket, ofo_possible: bool) -> None:
        """Models tcp_ack_snd_check() / __tcp_ack_snd_check()."""
        rcv, ack = self.rcv, self.ack
        if not ack.ack_pending & ICSK_ACK_SCHED:
            return
        if (((rcv.rcv_nxt - rcv.rcv_wup) > ack.ack_rcv_mss
             and ((rcv.rcv_nxt - rcv.copied_seq) < rcv.rcvlowat
                  or self.k.select_window(self) >= rcv.rcv_wnd))
                or self.in_quickack_mode() or ack.ack_pending & ICSK_ACK_NOW):
            if not self.releasing or not self.defer_ack():      # 6.7+: to tcp_release_cb()
                self.send_ack()
            return
        if not ofo_possible or not self.mem.ofo_queue:
            self.send_delayed_ack()
            return
        self._sack_compress()

    def _sack_compress(self: TcpSocket) -> None:
        """Out-of-order data with SACK: the first dupACKs go out at once, then they are
        compressed by a short timer (the profile's comp_sack_delay_ns)."""
        rcv, ack, snd = self.rcv, self.ack, self.snd
        s = self.sysctl
        if not self.conn.sack_ok or ack.compressed_ack >= s.tcp_comp_sack_nr:
            self.send_ack()
            return
        if ack.comp_rcv_nxt != rcv.rcv_nxt:               # the first 3 dupACKs at each
            ack.comp_rcv_nxt = rcv.rcv_nxt                # new rcv_nxt go out at once
            ack.dup_ack_counter = 0
        if ack.dup_ack_counter < 3:
            ack.dup_ack_counter += 1
            self.send_ack()
            return
        ack.compressed_ack += 1
        if ack.comp_sack_deadline:
            return
        rtt_us8 = rcv.rcv_rtt_us8
        if snd.srtt_us8:
            rtt_us8 = min(rtt_us8, snd.srtt_us8) if rtt_us8 else snd.srtt_us8
        ack.comp_sack_deadline = self.now + self.k.comp_sack_delay_ns(self, rtt_us8)

    def compressed_ack_timer(self: TcpSocket) -> None:
        """tcp_compressed_ack_kick(): flush the compressed SACK."""
        if self.ack.compressed_ack:
            self.ack.compressed_ack = 0
            self.send_ack()

    def send_delayed_ack(self: TcpSocket) -> None:
        """Models tcp_send_delayed_ack() [tcp_output.c, 6.18]: arm (or pull in) the
        delayed-ACK timer. Everything is in the clock's ticks: the RTT bound is
        usecs_to_jiffies(srtt) (rounded up), the timer is armed for jiffies + ato, and a
        pending timer whose recorded expiry (icsk_delack_timeout: the requested expiry, not
        the wheel bucket's) is within ato >> 2 ticks makes the ACK go at once. At HZ = 250
        with ato = 40 ms that is 2 jiffies: a timer armed 8 jiffies = 32 ms earlier, where
        HZ = 1000 gives 40 >> 2 = 10 jiffies, 30 ms. With a kernel tick the timer runs on
        the wheel's bucket, one jiffy after its expiry (level 0); with the default clock at
        the expiry itself."""
        ack, clock, srtt_us8 = self.ack, self.clock, self.snd.srtt_us8
        nj, ato, rtt, delack_max = clock.delack_ticks(self.now, ack.ack_ato, srtt_us8 >> 3,
                                                      self.k.delack_max(self))
        delack_min = clock.delack_min_ticks
        if ato > delack_min:
            max_ato = clock.hz_half_ticks                        # HZ / 2
            if self.in_pingpong() or ack.ack_pending & ICSK_ACK_PUSHED:
                max_ato = clock.delack_max_ticks
            if srtt_us8:
                max_ato = min(max_ato, max(rtt, delack_min))
            ato = min(ato, max_ato)
        ato = min(ato, delack_max)
        timeout = nj + ato
        if ack.ack_pending & ICSK_ACK_TIMER and ack.delack_deadline:
            if ack.delack_expires <= nj + (ato >> 2):
                self.send_ack()
                return
            timeout = min(timeout, ack.delack_expires)
        ack.ack_pending |= ICSK_ACK_SCHED | ICSK_ACK_TIMER
        if timeout != ack.delack_expires or not ack.delack_deadline:
            ack.delack_expires = timeout             # mod_timer: same expiry, same bucket
            ack.delack_deadline = clock.timer_ns(timeout, nj)

    def delack_timer(self: TcpSocket) -> None:
        """Models tcp_delack_timer_handler(): send the ACK still owed, inflate ato."""
        ack = self.ack
        if ack.compressed_ack:
            ack.compressed_ack = 0
        if not ack.ack_pending & ICSK_ACK_SCHED or self.conn.state == CLOSED:
            return
        if not self.in_pingpong():
            ack.ack_ato = min(ack.ack_ato << 1, self.snd.rto)
        else:
            ack.ack_pingpong = 0
            ack.ack_ato = TCP_ATO_MIN_NS
        self.mib.DelayedACKs += 1
        self.send_ack()

    # -- window update after a read ------------------------------------------------------------

    def cleanup_would_ack(self: TcpSocket, copied: int) -> bool:
        """The decision of __tcp_cleanup_rbuf() without its effects (see cleanup_rbuf)."""
        rcv, ack = self.rcv, self.ack
        if ack.ack_pending & ICSK_ACK_SCHED:
            if rcv.rcv_nxt - rcv.rcv_wup > ack.ack_rcv_mss:
                return True
            if (copied > 0 and (ack.ack_pending & ICSK_ACK_PUSHED2
                                or (ack.ack_pending & ICSK_ACK_PUSHED and not self.in_pingpong()))
                    and self.mem.sk_rmem_alloc == 0):
                return True
        if copied > 0 and not rcv.rcv_shutdown:
            now_win = self.receive_window()
            if 2 * now_win <= rcv.window_clamp:
                new = self.k.select_window(self)
                if new and new >= 2 * now_win:
                    return True
        return False

    def cleanup_rbuf(self: TcpSocket, copied: int) -> bool:
        """Models __tcp_cleanup_rbuf(): after a read, send the ACK still owed or a window
        update when the read at least doubled a window that was at most half open."""
        if self.conn.state == CLOSED:
            return False
        if self.cleanup_would_ack(copied):
            self.send_ack()
            return True
        return False

    # -- sending ACKs ---------------------------------------------------------------------------

    def send_ack(self: TcpSocket) -> None:
        """Models tcp_send_ack(): a pure ACK carrying the window tcp_select_window() picks."""
        if self.conn.state == CLOSED:
            return
        seg = self.make_segment(self.snd.snd_nxt, 0, ACK)
        self.ack_sent()
        self._emit(seg)

    def send_dupack(self: TcpSocket, seg: Segment) -> None:
        """Models tcp_send_dupack(): duplicate data gets a D-SACK and quick-ack mode."""
        if seg.len and seg.seq < self.rcv.rcv_nxt:
            self.mib.DelayedACKLost += 1
            self.enter_quickack_mode(TCP_MAX_QUICKACKS)
            if self.conn.sack_ok:
                self._set_dsack(seg.seq, min(seg.end_seq, self.rcv.rcv_nxt))
        self.send_ack()

    def ack_sent(self: TcpSocket) -> None:
        """Models tcp_event_ack_sent(): leave quick-ack mode by one, clear the pending ACK."""
        ack = self.ack
        if ack.compressed_ack:
            ack.compressed_ack = 0
            ack.comp_sack_deadline = 0
        self.k.dec_quickack_mode(self)
        ack.ack_pending = 0
        ack.delack_deadline = 0
        ack.delack_expires = 0

    def make_segment(self: TcpSocket, seq: int, length: int, flags: int) -> Segment:
        """Build an outgoing segment with ACK, window, timestamps and SACK blocks
        (__tcp_transmit_skb: every non-SYN segment calls tcp_select_window)."""
        conn, rcv = self.conn, self.rcv
        win = self.k.advertise_window(self)
        seg = Segment(seq, length, flags, rcv.rcv_nxt, win)
        if conn.ts_ok:
            seg.tsval = self._tsval()
            seg.tsecr = conn.ts_recent
        if conn.sack_ok and (rcv.dsack or rcv.selective_acks):
            blocks = []
            if rcv.dsack:
                blocks.append(rcv.dsack)
                rcv.dsack = None
            room = (3 if conn.ts_ok else 4) - len(blocks)
            blocks.extend((b[0], b[1]) for b in rcv.selective_acks[:room])
            seg.sacks = tuple(blocks)
        return seg

    # -- SACK blocks ------------------------------------------------------------------------------

    def _set_dsack(self: TcpSocket, start: int, end: int) -> None:
        """tcp_dsack_set(): report a duplicate range in the next ACK."""
        if self.conn.sack_ok:
            self.rcv.dsack = (start, end)
            self.mib.TCPDSACKOldSent += 1 if end <= self.rcv.rcv_nxt else 0

    def _dsack_extend(self: TcpSocket, start: int, end: int) -> None:
        """tcp_dsack_extend(): start a D-SACK, or widen the pending one when they touch."""
        rcv = self.rcv
        if rcv.dsack is None:
            self._set_dsack(start, end)
        elif start <= rcv.dsack[1] and rcv.dsack[0] <= end:
            rcv.dsack = (min(start, rcv.dsack[0]), max(end, rcv.dsack[1]))

    def sack_new_ofo(self: TcpSocket, seq: int, end: int) -> None:
        """Models tcp_sack_new_ofo_skb(): extend or add a SACK block, most recent first."""
        if not self.conn.sack_ok:
            return
        blocks = self.rcv.selective_acks
        for i, b in enumerate(blocks):
            if b[0] <= end and seq <= b[1]:              # touches: extend and move to front
                b[0], b[1] = min(b[0], seq), max(b[1], end)
                blocks.insert(0, blocks.pop(i))
                self._sack_merge()
                return
        blocks.insert(0, [seq, end])
        del blocks[4:]

    def _sack_merge(self: TcpSocket) -> None:
        """tcp_sack_maybe_coalesce(): merge the first block with any it now overlaps."""
        blocks = self.rcv.selective_acks
        first = blocks[0]
        i = 1
        while i < len(blocks):
            b = blocks[i]
            if b[0] <= first[1] and first[0] <= b[1]:
                first[0], first[1] = min(first[0], b[0]), max(first[1], b[1])
                del blocks[i]
            else:
                i += 1

    def sack_remove(self: TcpSocket) -> None:
        """Models tcp_sack_remove(): drop blocks now below rcv_nxt."""
        rcv = self.rcv
        rcv.selective_acks = [b for b in rcv.selective_acks if b[1] > rcv.rcv_nxt]
        if not self.mem.ofo_queue:
            rcv.selective_acks = []
