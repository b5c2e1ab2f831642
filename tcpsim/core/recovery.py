"""The sender's SACK loss recovery: the scoreboard, RACK loss detection, fast recovery with
proportional rate reduction, and what an RTO keeps. A connection that negotiated SACK takes
this path; one without SACK keeps NewReno (sender.py: `_dupack`, the partial ACKs of
`_clean_rtx_queue`).

Models, as of 6.18 with net.ipv4.tcp_recovery = 1 (RACK loss detection):
tcp_sacktag_write_queue() / tcp_sacktag_one() / tcp_check_dsack() [tcp_input.c] (the
scoreboard), tcp_rack_advance() / tcp_rack_detect_loss() / tcp_rack_mark_lost() /
tcp_rack_reo_wnd() [tcp_recovery.c] (RACK; its dupthresh fallback: with no reordering seen the
reordering window is zero once tp->reordering = 3 segments are SACKed),
tcp_fastretrans_alert() / tcp_enter_recovery() / tcp_init_cwnd_reduction() /
tcp_cwnd_reduction() (PRR, RFC 6937) / tcp_end_cwnd_reduction() / tcp_cong_control()
[tcp_input.c], and tcp_timeout_mark_lost() [tcp_input.c].

The retransmit queue holds MSS-sized segments and the receiver's blocks fall on their edges,
so a block covers whole entries (the kernel splits an skb at a block edge,
tcp_match_skb_to_sack()). The model's lost_out counts segments marked lost and not yet
retransmitted (the kernel's lost_out less its retrans_out over lost segments), so
packets_in_flight() is len(rtx_queue) - lost_out - sacked_out, as the kernel's
packets_out - (sacked_out + lost_out) + retrans_out.

The RACK reordering timer (ICSK_TIME_REO_TIMEOUT) is a deadline of its own beside the RTO.
Counted where the kernel counts them: TCPSackRecovery (tcp_enter_recovery), TCPDSACKRecv /
TCPDSACKOfoRecv (tcp_check_dsack), TCPSACKReorder (tcp_check_sack_reordering), TCPDelivered
(tcp_sacktag_one / tcp_clean_rtx_queue), TCPLostRetransmit (tcp_mark_skb_lost, sender.py).
Not modelled: the D-SACK-driven reo_wnd_steps, undo of a spurious recovery (tcp_try_undo_*),
F-RTO (tcp_frto), the growth of tp->reordering, SACK reneging beyond forgetting the SACKed
flags at an RTO, and skb shifting/merging (tcp_shifted_skb: the queue holds MSS-sized
segments), so no TCPSackShifted / TCPSackMerged / TCPSackShiftFallback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.constants import NS_PER_US, TCP_MAX_REORDERING
from tcpsim.core.sender import (
    END, LOST, RETRANS, SACKED, SEQ, TCPCB_EVER_RETRANS, TCPCB_SACKED_ACKED, TX_NS,
)
from tcpsim.core.state import INFINITE_SSTHRESH

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

TCP_TIMEOUT_MIN = 2            # jiffies [include/net/tcp.h]


def rack_sent_after(t1: int, t2: int, seq1: int, seq2: int) -> bool:
    """tcp_skb_sent_after() [include/net/tcp.h]: sent later, or at the same time with a
    higher end sequence."""
    return t1 > t2 or (t1 == t2 and seq1 > seq2)


class RecoveryMixin:
    """SACK loss recovery of TcpSocket."""

    __slots__ = ()

    # -- the scoreboard ----------------------------------------------------------------------

    @staticmethod
    def check_dsack(sacks: tuple[tuple[int, int], ...], ack: int) -> bool:
        """tcp_check_dsack() [tcp_input.c, 6.18]: the first block reports a duplicate
        (D-SACK, RFC 2883) when it starts below the cumulative ACK, or lies within the
        second block."""
        if not sacks:
            return False
        start0, end0 = sacks[0]
        if start0 < ack:
            return True
        if len(sacks) > 1:
            start1, end1 = sacks[1]
            return start1 <= start0 and end0 <= end1
        return False

    def count_dsack(self: TcpSocket, sacks: tuple[tuple[int, int], ...], ack: int) -> None:
        """The counters of tcp_check_dsack() [tcp_input.c, 6.18], run on every ACK with SACK
        blocks (tcp_sacktag_write_queue(), on old ACKs too) before any block is checked:
        TCPDSACKRecv for a first block below the ACK, TCPDSACKOfoRecv for one within the
        second block."""
        if sacks[0][0] < ack:
            self.mib.TCPDSACKRecv += 1
        elif self.check_dsack(sacks, ack):
            self.mib.TCPDSACKOfoRecv += 1

    def sacktag_write_queue(self: TcpSocket, sacks: tuple[tuple[int, int], ...],
                            ack: int) -> tuple[int, bool, int]:
        """Models tcp_sacktag_write_queue() [tcp_input.c, 6.18]: every queued segment a
        valid block covers becomes SACKED_ACKED (tcp_sacktag_one(): out of lost_out, into
        sacked_out, RACK advanced by it); a D-SACK is recognised (tcp_check_dsack()) and,
        reporting data below the cumulative ACK, tags nothing -- within the second block it
        only repeats that block. A SACKed segment never retransmitted below the highest
        SACKed sequence shows reordering (tcp_check_sack_reordering(): reord_seen). SACKs
        of never-retransmitted segments give an RTT sample when the ACK gives none
        (sack_rtt_us, from the earliest one). Returns (newly SACKed, D-SACK seen, that
        RTT in ns or -1)."""
        snd = self.snd
        dsack = self.check_dsack(sacks, ack)
        newly = 0
        first_sackt = -1
        reord = snd.snd_nxt                                 # state->reord
        for i, (start, end) in enumerate(sacks):
            if i == 0 and dsack and end <= snd.snd_una:
                continue                                    # an old duplicate: nothing to tag
            if start >= end or end > snd.snd_nxt or end <= snd.snd_una:
                continue                                    # tcp_is_sackblock_valid()
            for e in snd.rtx_queue:
                if e[SEQ] >= end:
                    break
                if e[SEQ] < start or e[END] > end or e[SACKED] & TCPCB_SACKED_ACKED:
                    continue
                if not e[SACKED] & TCPCB_EVER_RETRANS and e[SEQ] < snd.highest_sack:
                    reord = min(reord, e[SEQ])
                self._sacktag_one(e)
                newly += 1
                if not e[SACKED] & TCPCB_EVER_RETRANS and (first_sackt < 0
                                                           or e[TX_NS] < first_sackt):
                    first_sackt = e[TX_NS]
        if not snd.in_loss:                 # the model has no undo_marker
            self.check_sack_reordering(reord, snd.highest_sack)
        return newly, dsack, -1 if first_sackt < 0 else self.now - first_sackt

    def check_sack_reordering(self: TcpSocket, low_seq: int, fack: int) -> None:
        """tcp_check_sack_reordering() [tcp_input.c, 5.15 and 6.18 alike]: a segment from
        `low_seq` was delivered without a retransmission below `fack`
        (tcp_highest_sack_seq()); when that distance exceeds tp->reordering segments,
        tp->reordering becomes it in segments (rounded up), at most tcp_max_reordering.
        Either way TCPSACKReorder counts it, once per call (the SACK tagging and the
        cumulative ACK's clean-up each call it once). The model keeps reord_seen where it
        was set before; tp->reordering sizes the send buffer (tcp_sndbuf_expand():
        reordering + 1 segments)."""
        snd = self.snd
        mss = self.conn.mss_cache
        metric = fack - low_seq
        if metric <= 0:
            return
        if mss and metric > snd.reordering * mss:
            snd.reordering = min((metric + mss - 1) // mss, TCP_MAX_REORDERING)
        self.mib.TCPSACKReorder += 1

    def _sacktag_one(self: TcpSocket, e: list[int]) -> None:
        """tcp_sacktag_one() [tcp_input.c, 6.18] for a segment newly SACKed (delivered:
        TCPDelivered)."""
        snd = self.snd
        if not e[SACKED] & TCPCB_EVER_RETRANS and e[SEQ] < snd.highest_sack:
            snd.reord_seen = True                   # tcp_check_sack_reordering()
        self.mib.TCPDelivered += 1
        if e[LOST] and not e[RETRANS]:
            snd.lost_out -= 1
        e[LOST] = 0
        e[SACKED] |= TCPCB_SACKED_ACKED
        snd.sacked_out += 1
        self.rack_advance(e[SACKED], e[END], e[TX_NS])
        if e[END] > snd.highest_sack:
            snd.highest_sack = e[END]

    def sack_acked(self: TcpSocket, acked: list[list[int]], ack: int) -> None:
        """The SACK bookkeeping of tcp_clean_rtx_queue() [tcp_input.c, 6.18] for the
        segments the cumulative ACK removed, in sequence order: a SACKed one leaves
        sacked_out; any other advances RACK, and one never retransmitted below the highest
        SACKed sequence filled a hole without a retransmission: reordering. A run of
        never-retransmitted segments was sent in sequence order, so RACK advanced by its
        last one ends where advancing by each would (the native twin does each)."""
        snd = self.snd
        last: list[int] | None = None
        reord = snd.snd_nxt
        for e in acked:
            sacked = e[SACKED]
            if sacked & TCPCB_SACKED_ACKED:
                snd.sacked_out -= 1
            elif sacked & TCPCB_EVER_RETRANS:
                if last is not None:
                    self.rack_advance(0, last[END], last[TX_NS])
                    last = None
                self.rack_advance(sacked, e[END], e[TX_NS])
            else:
                if e[SEQ] < snd.highest_sack:
                    snd.reord_seen = True
                    reord = min(reord, e[SEQ])
                last = e
        if last is not None:
            self.rack_advance(0, last[END], last[TX_NS])
        self.check_sack_reordering(reord, snd.highest_sack if snd.sacked_out else ack)

    # -- RACK ----------------------------------------------------------------------------------

    def rack_advance(self: TcpSocket, sacked: int, end_seq: int, xmit_ns: int) -> None:
        """Models tcp_rack_advance() [tcp_recovery.c, 6.18]: a delivered segment makes RACK's
        reference the latest sent of them (send time, then end sequence) and its RTT the
        RACK RTT -- unless it was retransmitted and delivered sooner than the minimum RTT
        (the original's delivery acknowledged a spurious retransmission)."""
        snd = self.snd
        rtt_us = (self.now - xmit_ns) // NS_PER_US
        if sacked & TCPCB_EVER_RETRANS and (not snd.min_rtt_us or rtt_us < snd.min_rtt_us):
            return
        snd.rack_advanced = True
        snd.rack_rtt_us = rtt_us
        if rack_sent_after(xmit_ns, snd.rack_mstamp, end_seq, snd.rack_end_seq):
            snd.rack_mstamp = xmit_ns
            snd.rack_end_seq = end_seq

    def rack_reo_wnd(self: TcpSocket) -> int:
        """tcp_rack_reo_wnd() [tcp_recovery.c, 6.18], in us: with no reordering seen, zero
        in recovery (and Loss) and once tp->reordering segments are SACKed (the dupthresh
        fallback); else a quarter of the minimum RTT (reo_wnd_steps = 1), at most srtt."""
        snd = self.snd
        if not snd.reord_seen and (snd.in_recovery or snd.sacked_out >= snd.reordering):
            return 0
        srtt_us = snd.srtt_us8 >> 3
        if not snd.min_rtt_us:
            return srtt_us                                  # tcp_min_rtt() is ~0U
        return min(snd.min_rtt_us >> 2, srtt_us)

    def rack_skb_timeout(self: TcpSocket, e: list[int], reo_wnd: int) -> int:
        """tcp_rack_skb_timeout() [tcp_recovery.c, 6.18]: us left before a segment sent
        before RACK's reference counts as lost."""
        return self.snd.rack_rtt_us + reo_wnd - (self.now - e[TX_NS]) // NS_PER_US

    def rack_detect_loss(self: TcpSocket) -> tuple[int, bool]:
        """Models tcp_rack_detect_loss() [tcp_recovery.c, 6.18]: every segment in flight
        (not SACKed, not marked lost and waiting) sent before RACK's reference is lost once
        the RACK RTT plus the reordering window has passed since it was sent. The kernel
        walks its send-time ordered list and stops at the first segment not sent before
        the reference; the model's queue is in sequence order, so it tests every segment.
        Returns the longest wait left in us (0: none) and whether a retransmission in
        flight was lost again (retrans_out fell: FLAG_LOST_RETRANS)."""
        snd = self.snd
        reo_wnd = self.rack_reo_wnd()
        timeout = 0
        relost = False
        mstamp, end_seq = snd.rack_mstamp, snd.rack_end_seq
        for e in snd.rtx_queue:
            if e[SACKED] & TCPCB_SACKED_ACKED or (e[LOST] and not e[RETRANS]):
                continue
            if not rack_sent_after(mstamp, e[TX_NS], end_seq, e[END]):
                continue
            remaining = self.rack_skb_timeout(e, reo_wnd)
            if remaining <= 0:
                relost = relost or e[RETRANS] > 0
                self.mark_skb_lost(e)
            elif remaining > timeout:
                timeout = remaining
        return timeout, relost

    def rack_mark_lost(self: TcpSocket) -> bool:
        """Models tcp_rack_mark_lost() [tcp_recovery.c, 6.18]: detect losses once per
        advance of RACK, as tcp_identify_packet_loss() calls it; a segment still waiting out
        the reordering window arms the reordering timer for that wait (in jiffies, plus
        TCP_TIMEOUT_MIN). The kernel's timer takes the xmit timer from the loss probe and the
        RTO; the model's disarms the probe and keeps the RTO beside it (the kernel rearms the
        RTO from the head's send time when it fires), and a detection that leaves nothing
        waiting disarms it (as the ACK's tcp_set_xmit_timer() would). Returns
        whether a retransmission was lost again (FLAG_LOST_RETRANS)."""
        snd = self.snd
        if not snd.rack_advanced:
            return False
        snd.rack_advanced = False
        timeout, relost = self.rack_detect_loss()
        snd.reo_deadline = 0
        if timeout:
            clock = self.clock
            when = clock.ticks_ns(clock.usecs_to_ticks(timeout) + TCP_TIMEOUT_MIN)
            snd.reo_deadline = self.reset_xmit_timer(when)
            snd.tlp_deadline = 0                          # the xmit timer is taken
        return relost

    def rack_reo_timeout(self: TcpSocket) -> None:
        """Models tcp_rack_reo_timeout() [tcp_recovery.c, 6.18], the reordering timer:
        detect losses again; if that marked any, enter Recovery unless in it (from Open,
        Disorder or Loss), with PRR's first step for one delivered segment, and retransmit
        what is lost."""
        snd = self.snd
        if not snd.rtx_queue:
            return
        prior_inflight = self.packets_in_flight()
        prior_lost = snd.lost_out
        self.rack_detect_loss()
        if prior_inflight == self.packets_in_flight():
            return
        if not snd.in_recovery or snd.in_loss:
            self.enter_recovery()
            self.cwnd_reduction(1, snd.lost_out > prior_lost, False)
        self._retransmit_lost()

    def mark_skb_lost(self: TcpSocket, e: list[int]) -> None:
        """tcp_mark_skb_lost() [tcp_input.c, 6.18]: a SACKed segment is never lost; a
        retransmitted one lost again must go out again."""
        if not e[SACKED] & TCPCB_SACKED_ACKED:
            self._mark_lost(e)

    # -- recovery ------------------------------------------------------------------------------

    def fastretrans_alert(self: TcpSocket, ack: int, prior_una: int, delivered: int) -> None:
        """Models tcp_fastretrans_alert() then tcp_cong_control() [tcp_input.c, 6.18] for a
        SACK connection, on an ACK that is dubious (SACK information, or not Open).
        Reaching high_seq ends Recovery (tcp_end_cwnd_reduction(): cwnd = ssthresh) or Loss
        (back to Open, cwnd as slow start left it). Then RACK marks losses
        (tcp_identify_packet_loss()); a loss proven while Open, or a retransmission lost
        again during Loss, enters Recovery (tcp_time_to_recover(): lost_out). Then cwnd:
        PRR in Recovery (tcp_cwnd_reduction()), else the congestion control's increase on
        an ACK of new data (tcp_may_raise_cwnd(): FLAG_DATA_ACKED) -- slow start from the
        RTO's cwnd during Loss. `delivered`: segments newly acked or SACKed."""
        snd = self.snd
        if not snd.in_recovery:
            snd.retrans_stamp = 0                          # TCP_CA_Open
        elif ack >= snd.high_seq:
            if not snd.in_loss:
                self.end_cwnd_reduction()
            snd.in_recovery = snd.in_loss = False       # tcp_try_undo_recovery(): Open
            snd.retrans_stamp = 0
        prior_lost = snd.lost_out
        relost = snd.in_loss and self.rack_mark_lost()
        if not snd.in_loss and not snd.in_recovery:
            self.rack_mark_lost()
            if snd.lost_out:
                self.enter_recovery()
        elif relost:
            self.enter_recovery()                        # Loss -> Recovery (FLAG_LOST_RETRANS)
        elif not snd.in_loss:
            self.rack_mark_lost()
        una_advanced = ack > prior_una
        if snd.in_recovery and not snd.in_loss:
            self.cwnd_reduction(delivered, snd.lost_out > prior_lost, una_advanced)
        elif una_advanced:
            self.ca.cong_avoid(self, delivered)

    def enter_recovery(self: TcpSocket) -> None:
        """Models tcp_enter_recovery() + tcp_init_cwnd_reduction() [tcp_input.c, 6.18]
        (counting TCPSackRecovery): high_seq = snd_nxt, the loss probe forgotten, ssthresh by the congestion control
        (Reno: half, CUBIC: 0.7), cwnd left for PRR to bring down from prior_cwnd."""
        snd = self.snd
        snd.high_seq = snd.snd_nxt
        snd.tlp_high_seq = 0
        snd.tlp_deadline = 0                              # the xmit timer is the RTO now
        snd.cwnd_cnt = 0
        snd.prior_cwnd = snd.snd_cwnd
        snd.prr_delivered = 0
        snd.prr_out = 0
        snd.snd_ssthresh = self.ca.ssthresh(self)
        snd.in_recovery = True
        snd.in_loss = False
        self.mib.TCPSackRecovery += 1

    def cwnd_reduction(self: TcpSocket, newly_acked_sacked: int, newly_lost: bool,
                       una_advanced: bool) -> None:
        """Models tcp_cwnd_reduction() [tcp_input.c, 6.18], proportional rate reduction
        (RFC 6937): while the flight is above ssthresh, send ssthresh/prior_cwnd of what is
        delivered; below it, slow-start back up to ssthresh (one more on an ACK of new data
        that marked nothing lost); at least one segment at the start (the fast
        retransmit). cwnd = packets in flight + that count."""
        snd = self.snd
        if newly_acked_sacked <= 0 or not snd.prior_cwnd:
            return
        inflight = self.packets_in_flight()
        delta = snd.snd_ssthresh - inflight
        snd.prr_delivered += newly_acked_sacked
        if delta < 0:
            dividend = snd.snd_ssthresh * snd.prr_delivered + snd.prior_cwnd - 1
            sndcnt = dividend // snd.prior_cwnd - snd.prr_out
        else:
            sndcnt = max(snd.prr_delivered - snd.prr_out, newly_acked_sacked)
            if una_advanced and not newly_lost:
                sndcnt += 1
            sndcnt = min(delta, sndcnt)
        sndcnt = max(sndcnt, 0 if snd.prr_out else 1)
        snd.snd_cwnd = inflight + sndcnt

    def end_cwnd_reduction(self: TcpSocket) -> None:
        """tcp_end_cwnd_reduction() [tcp_input.c, 6.18]: leaving Recovery, cwnd = ssthresh."""
        snd = self.snd
        if snd.snd_ssthresh < INFINITE_SSTHRESH:
            snd.snd_cwnd = snd.snd_ssthresh

    def timeout_mark_lost(self: TcpSocket) -> None:
        """Models tcp_timeout_mark_lost() [tcp_input.c, 6.18], at an RTO: every segment not
        SACKed is lost, except those RACK says were sent too recently to tell (not the
        head). A SACKed head means the receiver reneged: every SACKed flag is forgotten."""
        snd = self.snd
        q = snd.rtx_queue
        reneg = bool(q) and bool(q[0][SACKED] & TCPCB_SACKED_ACKED)
        if reneg:
            snd.sacked_out = 0
        for i, e in enumerate(q):
            if reneg:
                e[SACKED] &= ~TCPCB_SACKED_ACKED
            elif i and self.rack_skb_timeout(e, 0) > 0:
                continue                                  # sent too recently to tell
            self.mark_skb_lost(e)
