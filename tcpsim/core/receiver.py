"""The receive half: segment validation, in-order and out-of-order queueing, reading.

Follows tcp_rcv_established() -> tcp_data_queue() / tcp_data_queue_ofo() and
tcp_recvmsg_locked() -> tcp_cleanup_rbuf() [net/ipv4/tcp_input.c, tcp.c]. Decisions that
differ between kernel versions go through `self.k` (admission, pruning, window growth,
autotuning, sequence checks).
"""

from __future__ import annotations

from bisect import insort
from typing import TYPE_CHECKING

from tcpsim.core.constants import (
    ICSK_ACK_NOW, ICSK_ACK_PUSHED, ICSK_ACK_PUSHED2, ICSK_ACK_SCHED, TCP_MAX_QUICKACKS,
)
from tcpsim.core.memory import skb_condense
from tcpsim.core.segment import ACK, FIN, PSH, RST, SYN, URG, Segment
from tcpsim.core.skb import Skb
from tcpsim.core.state import (
    CLOSE_WAIT, CLOSED, CLOSING, ESTABLISHED, FIN_WAIT1, FIN_WAIT2, TIME_WAIT,
)

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

_NOT_FAST = SYN | FIN | RST | URG


class ReceiveMixin:
    """Receive-path behaviour of TcpSocket."""

    __slots__ = ()

    # -- memory <-> window ------------------------------------------------------------------

    def tcp_space(self: TcpSocket) -> int:
        """Models tcp_space(): window worth of the unused receive budget (may be negative);
        skbs parked in the backlog count against it (sk_backlog.len, tcpsim/core/backlog.py)."""
        mem = self.mem
        return self.k.win_from_space(self, mem.sk_rcvbuf - mem.sk_backlog_len - mem.sk_rmem_alloc)

    def full_space(self: TcpSocket) -> int:
        """Models tcp_full_space(): window worth of the whole receive budget."""
        return self.k.win_from_space(self, self.mem.sk_rcvbuf)

    def receive_window(self: TcpSocket) -> int:
        """Models tcp_receive_window(): what the peer may still send."""
        rcv = self.rcv
        w = rcv.rcv_wup + rcv.rcv_wnd - rcv.rcv_nxt
        return w if w > 0 else 0

    def fast_path_check(self: TcpSocket) -> None:
        """Models tcp_fast_path_check(): re-enable header prediction when nothing unusual.
        It only ever turns the fast path on; a zero window, OFO data or a failed prune
        turn it off elsewhere."""
        mem = self.mem
        if not mem.ofo_queue and self.rcv.rcv_wnd != 0 and mem.sk_rmem_alloc < mem.sk_rcvbuf:
            self.rcv.pred_ok = True

    # -- tcp_rcv_established ----------------------------------------------------------------

    def rcv_established(self: TcpSocket, seg: Segment, skb: Skb | None = None) -> None:
        """Models tcp_rcv_established(): header-prediction fast path, else validate,
        process the ACK and queue the data. `skb`: the skb the device built, when it was
        built before (a backlog skb, tcpsim/core/backlog.py); else built here."""
        conn, rcv, snd = self.conn, self.rcv, self.snd
        if seg.tsval >= 0 and conn.ts_ok:
            conn.rcv_tsecr = seg.tsecr
        if (rcv.pred_ok and seg.seq == rcv.rcv_nxt and not seg.flags & _NOT_FAST
                and seg.flags & ACK and seg.win << conn.snd_wscale == snd.snd_wnd
                and seg.ack <= snd.snd_nxt and seg.ack >= snd.snd_una):
            fast = conn.state == ESTABLISHED        # tcp_rcv_established(): its fast path
            if seg.len == 0:
                self._ts_update(seg)
                self.tcp_ack(seg, slowpath=not fast)
                return
            if seg.seq + seg.len <= rcv.rcv_nxt + self.receive_window():
                if skb is None:
                    skb = self.dev.make_skb(seg.seq, seg.len, False, seg.gso_size,
                                            seg.tx_segs, seg.frags)
                if skb.truesize <= self.mem.sk_forward_alloc:
                    self._fast_path_data(seg, skb, not fast)
                    return
                self._slow_path(seg, skb)       # in order: the slow path queues this skb
                return
        self._slow_path(seg, skb)

    def _fast_path_data(self: TcpSocket, seg: Segment, skb: Skb, slowpath: bool) -> None:
        self._ts_update(seg)
        self.k.rcv_rtt_measure_ts(self, seg)
        self.mib.TCPHPHits += 1
        coalesced = self.queue_rcv(skb)
        self.trace("rx", "coalesced" if coalesced else "queued", seg, skb.truesize)
        self.event_data_recv(seg, skb)
        if seg.ack > self.snd.snd_una:
            self.tcp_ack(seg, slowpath)                 # FLAG_DATA, not FLAG_SLOWPATH
        self.ack_snd_check(ofo_possible=False)
        self.data_ready()

    def _slow_path(self: TcpSocket, seg: Segment, skb: Skb | None = None) -> None:
        """tcp_validate_incoming(), tcp_ack(), then tcp_data_queue(). `skb`: the skb the
        fast path already built for this in-order segment (the same one would be built)."""
        reason = self.k.tcp_sequence(self, seg)
        if reason:
            self._drop_unacceptable(seg, reason)
            return
        if seg.flags & RST:
            self.trace("rx", "rst", seg)
            self.abort("ECONNRESET")
            return
        if not seg.flags & ACK:
            self.trace("drop", "", seg, reason="TCP_FLAGS")
            return
        self._ts_update(seg)
        if self.tcp_ack(seg) < 0:
            self.trace("drop", "bad ack", seg, reason="TCP_ACK_UNSENT_DATA")
            return
        self.k.rcv_rtt_measure_ts(self, seg)
        if seg.len or seg.flags & FIN:
            self.data_queue(seg, skb)
        if self.conn.state != CLOSED:
            self.ack_snd_check(ofo_possible=True)            # tcp_ack_snd_check(), every segment

    def _ts_update(self: TcpSocket, seg: Segment) -> None:
        """tcp_store_ts_recent(): remember the peer's timestamp for our echo."""
        conn = self.conn
        if conn.ts_ok and seg.tsval >= 0 and seg.seq <= self.rcv.rcv_wup:
            conn.ts_recent = seg.tsval

    def _drop_unacceptable(self: TcpSocket, seg: Segment, reason: str) -> None:
        """tcp_validate_incoming() failure: drop; answer with a dupACK unless RST, rate
        limited for zero-length segments (tcp_oow_rate_limited)."""
        self.trace("drop", "unacceptable", seg, reason=reason)
        if seg.flags & RST:
            return
        if seg.len == 0 and not seg.flags & (SYN | FIN):
            limit = self.sysctl.tcp_invalid_ratelimit * 1_000_000
            clock = self.clock                                      # elapsed jiffies
            if (clock.stamp_ticks(self.now) - clock.stamp_ticks(self.rcv.last_oow_ack_ns)
                    < clock.usecs_to_ticks(limit // 1000)):
                self.mib.TCPACKSkippedSeq += 1
                return
            self.rcv.last_oow_ack_ns = self.now
        self.send_dupack(seg)

    # -- tcp_data_queue ---------------------------------------------------------------------

    def data_queue(self: TcpSocket, seg: Segment, skb: Skb | None = None) -> None:
        """Models tcp_data_queue(): in-order, old, beyond-window, partial and OFO cases.
        `skb`: already built for an in-order segment (see _slow_path)."""
        rcv = self.rcv
        fin = bool(seg.flags & FIN)
        if seg.seq == rcv.rcv_nxt:
            if self.receive_window() == 0 and not self.k.zero_window_accepts(self, seg):
                self.mib.TCPZeroWindowDrop += 1
                self._out_of_window(seg, "TCP_ZEROWINDOW")
                return
            self._queue_in_order(seg, seg.seq, seg.len, fin, skb)
            return
        end_seq = seg.end_seq
        if end_seq <= rcv.rcv_nxt:                         # wholly old
            self.mib.DelayedACKLost += 1
            self._set_dsack(seg.seq, end_seq)
            self._out_of_window(seg, "TCP_OLD_DATA")
            return
        if seg.seq >= rcv.rcv_nxt + self.receive_window():  # starts beyond the window
            self.k.overwindow_drop(self)
            self._out_of_window(seg, "TCP_OVERWINDOW")
            return
        if seg.seq < rcv.rcv_nxt:                          # partial overlap
            self._set_dsack(seg.seq, rcv.rcv_nxt)
            if self.receive_window() == 0:
                self.mib.TCPZeroWindowDrop += 1
                self._out_of_window(seg, "TCP_ZEROWINDOW")
                return
            # not trimmed: the whole skb is queued (it cannot coalesce: its seq is not the
            # tail's end_seq) and the reader skips the old bytes by offset
            self._queue_in_order(seg, seg.seq, seg.len, fin)
            return
        self.data_queue_ofo(seg)

    def _out_of_window(self: TcpSocket, seg: Segment, reason: str) -> None:
        """out_of_window: enter quick-ack mode, schedule an immediate ACK, drop."""
        self.trace("drop", "out of window", seg, reason=reason)
        self.enter_quickack_mode(TCP_MAX_QUICKACKS)
        self.ack.ack_pending |= ICSK_ACK_SCHED
        self.ack.ack_pending |= ICSK_ACK_NOW

    def _queue_in_order(self: TcpSocket, seg: Segment, seq: int, length: int, fin: bool,
                        skb: Skb | None = None) -> None:
        if skb is None:
            skb = self.dev.make_skb(seq, length, fin, seg.gso_size, seg.tx_segs, seg.frags)
        if not self.k.admit_in_order(self, skb):
            self.mib.TCPRcvQDrop += 1
            self.trace("drop", "rcvq full", seg, skb.truesize, reason="PROTO_MEM")
            self.data_ready()
            return
        coalesced = self.queue_rcv(skb)
        self.trace("rx", "coalesced" if coalesced else "queued", seg, skb.truesize)
        if length:
            self.event_data_recv(seg, skb)
        if fin:
            self.tcp_fin()
        if self.mem.ofo_queue:
            self.ofo_queue_drain()
            if not self.mem.ofo_queue:
                self.ack.ack_pending |= ICSK_ACK_NOW
        if self.rcv.selective_acks:
            self.sack_remove()
        self.fast_path_check()
        self.data_ready()

    def queue_rcv(self: TcpSocket, skb: Skb) -> bool:
        """Models tcp_queue_rcv(): coalesce into the tail or append; advance rcv_nxt.
        Returns True when the skb was coalesced (eaten)."""
        rcv = self.rcv
        q = self.mem.receive_queue
        eaten = bool(q) and self.k.try_coalesce(self, q[-1], skb)
        if not eaten:
            q.append(skb)
            self.charge(skb.truesize)
        rcv.bytes_received += skb.end_seq - rcv.rcv_nxt - (1 if skb.fin else 0)
        rcv.rcv_nxt = skb.end_seq
        return eaten

    # -- out-of-order queue -------------------------------------------------------------------

    def segment_skb(self: TcpSocket, seg: Segment) -> Skb:
        """The skb the ingress device builds for the whole of `seg` (its FIN included)."""
        return self.dev.make_skb(seg.seq, seg.len, bool(seg.flags & FIN), seg.gso_size,
                                 seg.tx_segs, seg.frags)

    def data_queue_ofo(self: TcpSocket, seg: Segment) -> None:
        """Models tcp_data_queue_ofo(): admission, SACK, insert/merge in sequence order."""
        skb = self.segment_skb(seg)
        if not self.k.try_rmem_schedule(self, skb, skb.truesize):
            self.mib.TCPOFODrop += 1
            self.trace("drop", "ofo full", seg, skb.truesize, reason="PROTO_MEM")
            self.data_ready()
            return
        self.k.ofo_measure_rcv_mss(self, seg, skb)
        self.rcv.pred_ok = False
        self.ack.ack_pending |= ICSK_ACK_SCHED
        self.mib.TCPOFOQueue += 1
        ofo = self.mem.ofo_queue
        seq, end = skb.seq, skb.end_seq
        for other in ofo:
            if other.seq <= seq and end <= other.end_seq:          # fully covered: duplicate
                self.mib.TCPOFOMerge += 1
                self.mib.TCPDSACKOfoSent += 1
                self._set_dsack(seq, end)
                self.trace("drop", "ofo dup", seg, skb.truesize, reason="TCP_OFOMERGE")
                return
        self.sack_new_ofo(seq, end)
        if ofo and ofo[-1].end_seq == seq and self.k.try_coalesce(self, ofo[-1], skb):
            self.k.grow_window(self, skb, True, seg) if self.conn.sack_ok else None
            self.trace("rx", "ofo coalesced", seg, skb.truesize)
        else:
            covered = [o for o in ofo if seq <= o.seq and o.end_seq <= end]
            for o in covered:                                        # new skb covers old ones
                ofo.remove(o)
                self.uncharge(o.truesize)
                self.mib.TCPOFOMerge += 1
            insort(ofo, skb, key=lambda s: s.seq)
            if self.conn.sack_ok:
                self.k.grow_window(self, skb, False, seg)
            skb_condense(skb, self.rcv.peer_released)
            self.charge(skb.truesize)
            self.trace("rx", "ofo", seg, skb.truesize)
        self.k.ofo_rcvbuf_grow(self)

    def ofo_queue_drain(self: TcpSocket) -> None:
        """Models tcp_ofo_queue(): move OFO skbs that became in-order to the receive queue."""
        rcv = self.rcv
        ofo = self.mem.ofo_queue
        dsack_high = rcv.rcv_nxt                            # the end of the new in-order data
        while ofo and ofo[0].seq <= rcv.rcv_nxt:
            skb = ofo.pop(0)
            if skb.seq < dsack_high:                         # received twice: D-SACK it
                end, dsack_high = self.k.ofo_dsack(self, skb, dsack_high)
                self._dsack_extend(skb.seq, end)
            if skb.end_seq <= rcv.rcv_nxt:                  # entirely old
                self.uncharge(skb.truesize)
                continue
            q = self.mem.receive_queue
            if q and self.k.try_coalesce(self, q[-1], skb):
                self.uncharge(skb.truesize)                  # the source skb is freed
            else:
                q.append(skb)
            rcv.bytes_received += skb.end_seq - rcv.rcv_nxt - (1 if skb.fin else 0)
            rcv.rcv_nxt = skb.end_seq               # an overlapping head is kept: reads skip it
            if skb.fin:
                self.tcp_fin()
                break

    # -- FIN ----------------------------------------------------------------------------------

    def tcp_fin(self: TcpSocket) -> None:
        """Models tcp_fin(): the peer has finished sending."""
        conn, rcv, ack = self.conn, self.rcv, self.ack
        ack.ack_pending |= ICSK_ACK_SCHED
        rcv.rcv_shutdown = True
        if conn.state == ESTABLISHED:
            conn.state = CLOSE_WAIT
            self.enter_pingpong()
        elif conn.state == FIN_WAIT1:
            conn.state = CLOSING
            ack.ack_pending |= ICSK_ACK_NOW
        elif conn.state == FIN_WAIT2:
            conn.state = TIME_WAIT
            ack.ack_pending |= ICSK_ACK_NOW
        # Out-of-order data after the FIN is dropped, and the SACK state with it, a pending
        # D-SACK included (skb_rbtree_purge + tcp_sack_reset).
        for skb in self.mem.ofo_queue:
            self.uncharge(skb.truesize)
        self.mem.ofo_queue.clear()
        if conn.sack_ok:
            rcv.dsack = None
            rcv.selective_acks = []
        self.readable = True

    def data_ready(self: TcpSocket) -> None:
        """Models tcp_data_ready(): wake the reader when enough is queued."""
        rcv = self.rcv
        if rcv.rcv_nxt - rcv.copied_seq >= rcv.rcvlowat or rcv.rcv_shutdown:
            self.readable = True

    # -- reading --------------------------------------------------------------------------------

    def read(self: TcpSocket, now: int, n: int) -> int:
        """The application reads up to n bytes. Models tcp_recvmsg_locked(): copy from the
        head skb, free skbs once fully consumed, autotune per chunk, then tcp_cleanup_rbuf().
        Returns the bytes copied (0 at EOF or when nothing is queued)."""
        rcv = self.rcv
        self.release_due(now)
        self._clock(now)
        q = self.mem.receive_queue
        if not q:
            return 0
        copied = 0
        freed = False
        while copied < n and q:
            skb = q[0]
            offset = rcv.copied_seq - skb.seq
            avail = skb.len - offset
            if avail > 0:
                used = min(avail, n - copied)
                rcv.copied_seq += used
                copied += used
                self.k.rcv_space_adjust(self)
                if used < avail:
                    break
            q.popleft()
            if skb.fin:
                rcv.copied_seq += 1
                self.eof = True
            self.uncharge(skb.truesize)
            freed = True
            if skb.fin:
                break
        if not q:
            self.readable = rcv.rcv_shutdown
        rcv.read_untraced += copied
        acked = self.cleanup_rbuf(copied)
        if freed or acked:
            self.trace("read", "freed" if freed else "", length=rcv.read_untraced)
            rcv.read_untraced = 0
        return copied

    def count_inert_reads(self: TcpSocket, t0: int, period: int, n: int, limit: int) -> int:
        """How many of the reads of n bytes at t0, t0+period, ... (at most `limit`) would
        change nothing but copied_seq and the DRS measurement.

        Such a read frees no skb (it stays inside the head skb), tcp_cleanup_rbuf() sends
        nothing (its inputs do not change while only copied_seq moves), and DRS only
        restarts its measurement. The engine applies runs of them at once with
        apply_inert_reads(), which must leave exactly the state the reads one by one would
        have left; the reader is woken for the first read that is not inert."""
        rcv = self.rcv
        q = self.mem.receive_queue
        if not q or n <= 0 or limit <= 0:
            return 0
        head = q[0]
        left = head.seq + head.len - rcv.copied_seq       # bytes before the head is consumed
        count = min(limit, (left - 1) // n)
        if count <= 0:
            return 0
        # tcp_cleanup_rbuf() may zero ack_quick / lower rcv_ssthresh as it decides (as
        # __tcp_select_window() does); planning must not, so look and put them back.
        saved = self.ack.ack_quick, rcv.rcv_ssthresh
        acks = self.cleanup_would_ack(n)
        self.ack.ack_quick, rcv.rcv_ssthresh = saved
        if acks:
            return 0
        k = self.k
        gate = k.rcv_space_gate_us(self)
        if gate < 0:
            return count
        rtt_us = rcv.rcv_rtt_us8 >> 3
        space, seq = rcv.rcvq_space, rcv.rcvq_seq
        i = self._first_read_at_or_after(t0, period, gate)
        while i < count:
            copied_seq = rcv.copied_seq + (i + 1) * n
            if k.rcv_space_copied(self, copied_seq, seq) > space:
                return i
            seq = copied_seq
            t_us = (t0 + i * period) // 1000
            i = self._first_read_at_or_after(t0, period, t_us + rtt_us)
        return count

    @staticmethod
    def _first_read_at_or_after(t0: int, period: int, gate_us: int) -> int:
        """Index of the first read time t0 + i*period whose microsecond clock >= gate_us."""
        target = gate_us * 1000
        if target <= t0:
            return 0
        return -(-(target - t0) // period)

    def apply_inert_reads(self: TcpSocket, t0: int, period: int, n: int, count: int) -> None:
        """Apply `count` reads known to be inert (see count_inert_reads): advance
        copied_seq, and run DRS exactly at the reads where its RTT gate opens."""
        rcv = self.rcv
        if count <= 0:
            return
        base = rcv.copied_seq
        k = self.k
        self.cleanup_would_ack(n)       # the first read's side effects; the rest repeat them
        gate = k.rcv_space_gate_us(self)
        if gate >= 0:
            i = self._first_read_at_or_after(t0, period, gate)
            while i < count:
                t = t0 + i * period
                self._clock(t)
                rcv.copied_seq = base + (i + 1) * n
                k.rcv_space_adjust(self)
                i = self._first_read_at_or_after(t0, period, k.rcv_space_gate_us(self))
        self._clock(t0 + (count - 1) * period)
        rcv.copied_seq = base + count * n
        rcv.read_untraced += count * n
