//! The sender's SACK loss recovery: the scoreboard, RACK loss detection, fast recovery with
//! proportional rate reduction, and what an RTO keeps. A connection that negotiated SACK
//! takes this path; one without SACK keeps NewReno (sender.rs: `dupack`, the partial ACKs of
//! `clean_rtx_queue`).
//!
//! Mirrors tcpsim/core/recovery.py (`RecoveryMixin`) as an `impl TcpSocket` block. Models,
//! as of 6.18 with net.ipv4.tcp_recovery = 1 (RACK loss detection):
//! tcp_sacktag_write_queue() / tcp_sacktag_one() / tcp_check_dsack() [tcp_input.c],
//! tcp_rack_advance() / tcp_rack_detect_loss() / tcp_rack_mark_lost() / tcp_rack_reo_wnd()
//! [tcp_recovery.c] (with its dupthresh fallback), tcp_fastretrans_alert() /
//! tcp_enter_recovery() / tcp_init_cwnd_reduction() / tcp_cwnd_reduction() (PRR, RFC 6937) /
//! tcp_end_cwnd_reduction() / tcp_cong_control() [tcp_input.c], and
//! tcp_timeout_mark_lost() [tcp_input.c], and the reordering timer tcp_rack_reo_timeout().
//! See recovery.py's module docstring for what is not modelled (undo, F-RTO, ...).

use crate::arith::floor_div;
use crate::constants::{NS_PER_US, TCP_MAX_REORDERING};
use crate::sender::INFINITE_SSTHRESH;
use crate::socket::TcpSocket;
use crate::state::RtxEntry;

/// tcp_skb_cb->sacked: TCPCB_SACKED_ACKED [include/net/tcp.h].
pub const TCPCB_SACKED_ACKED: i64 = 0x01;
/// tcp_skb_cb->sacked: TCPCB_EVER_RETRANS.
pub const TCPCB_EVER_RETRANS: i64 = 0x80;
/// net.ipv4.tcp_reordering: tp->reordering, the dupthresh.
/// TCP_TIMEOUT_MIN [include/net/tcp.h], in jiffies.
pub const TCP_TIMEOUT_MIN: i64 = 2;

/// tcp_skb_sent_after() [include/net/tcp.h]: sent later, or at the same time with a higher
/// end sequence.
pub fn rack_sent_after(t1: i64, t2: i64, seq1: i64, seq2: i64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// tcp_check_dsack() [tcp_input.c, 6.18]: the first block reports a duplicate (D-SACK,
/// RFC 2883) when it starts below the cumulative ACK, or lies within the second block.
pub fn check_dsack(sacks: &[(i64, i64)], ack: i64) -> bool {
    let Some(&(start0, end0)) = sacks.first() else {
        return false;
    };
    if start0 < ack {
        return true;
    }
    match sacks.get(1) {
        Some(&(start1, end1)) => start1 <= start0 && end0 <= end1,
        None => false,
    }
}

impl TcpSocket {
    // -- the scoreboard -------------------------------------------------------------------

    /// Models tcp_sacktag_write_queue() [tcp_input.c, 6.18]: tag the queued segments the
    /// valid blocks cover (see recovery.py `sacktag_write_queue`). Returns (newly SACKed,
    /// D-SACK seen, SACK RTT in ns or -1).
    pub fn sacktag_write_queue(&mut self, sacks: &[(i64, i64)], ack: i64) -> (i64, bool, i64) {
        let dsack = check_dsack(sacks, ack);
        let mut newly = 0;
        let mut first_sackt = -1;
        let mut reord = self.snd.snd_nxt; // state->reord
        for (i, &(start, end)) in sacks.iter().enumerate() {
            if i == 0 && dsack && end <= self.snd.snd_una {
                continue; // an old duplicate: nothing to tag
            }
            if start >= end || end > self.snd.snd_nxt || end <= self.snd.snd_una {
                continue; // tcp_is_sackblock_valid()
            }
            for j in 0..self.snd.rtx_queue.len() {
                let e = self.snd.rtx_queue[j];
                if e.seq >= end {
                    break;
                }
                if e.seq < start || e.end > end || e.sacked & TCPCB_SACKED_ACKED != 0 {
                    continue;
                }
                if e.sacked & TCPCB_EVER_RETRANS == 0 && e.seq < self.snd.highest_sack {
                    reord = reord.min(e.seq);
                }
                self.sacktag_one(j);
                newly += 1;
                if e.sacked & TCPCB_EVER_RETRANS == 0 && (first_sackt < 0 || e.tx_ns < first_sackt)
                {
                    first_sackt = e.tx_ns;
                }
            }
        }
        let rtt = if first_sackt < 0 {
            -1
        } else {
            self.now - first_sackt
        };
        if !self.snd.in_loss {
            // the model has no undo_marker
            self.check_sack_reordering(reord, self.snd.highest_sack);
        }
        (newly, dsack, rtt)
    }

    /// The counters of tcp_check_dsack() [tcp_input.c, 6.18] for an ACK with SACK blocks
    /// (see recovery.py `count_dsack`): TCPDSACKRecv, TCPDSACKOfoRecv.
    pub fn count_dsack(&mut self, sacks: &[(i64, i64)], ack: i64) {
        if sacks[0].0 < ack {
            self.mib.TCPDSACKRecv += 1;
        } else if check_dsack(sacks, ack) {
            self.mib.TCPDSACKOfoRecv += 1;
        }
    }

    /// tcp_check_sack_reordering() [tcp_input.c, 5.15 and 6.18 alike]: tp->reordering grows
    /// to the distance (in segments, rounded up) from `low_seq` to `fack` when that exceeds
    /// it, at most tcp_max_reordering; TCPSACKReorder counts it, once per call (the SACK
    /// tagging and the cumulative ACK's clean-up each call it once; see
    /// recovery.py `check_sack_reordering`).
    pub fn check_sack_reordering(&mut self, low_seq: i64, fack: i64) {
        let mss = self.conn.mss_cache;
        let snd = &mut self.snd;
        let metric = fack - low_seq;
        if metric <= 0 {
            return;
        }
        if mss != 0 && metric > snd.reordering * mss {
            snd.reordering = floor_div(metric + mss - 1, mss).min(TCP_MAX_REORDERING);
        }
        self.mib.TCPSACKReorder += 1;
    }

    /// tcp_sacktag_one() [tcp_input.c, 6.18] for retransmit-queue entry `j`, newly SACKed
    /// (delivered: TCPDelivered).
    fn sacktag_one(&mut self, j: usize) {
        let e = self.snd.rtx_queue[j];
        self.mib.TCPDelivered += 1;
        let snd = &mut self.snd;
        if e.sacked & TCPCB_EVER_RETRANS == 0 && e.seq < snd.highest_sack {
            snd.reord_seen = true; // tcp_check_sack_reordering()
        }
        if e.lost != 0 && e.retrans == 0 {
            snd.lost_out -= 1;
        }
        let entry = &mut snd.rtx_queue[j];
        entry.lost = 0;
        entry.sacked |= TCPCB_SACKED_ACKED;
        let sacked = entry.sacked;
        snd.sacked_out += 1;
        self.rack_advance(sacked, e.end, e.tx_ns);
        if e.end > self.snd.highest_sack {
            self.snd.highest_sack = e.end;
        }
    }

    /// The SACK bookkeeping of tcp_clean_rtx_queue() [tcp_input.c, 6.18] for a segment the
    /// cumulative ACK removes (see recovery.py `sack_acked`, which takes the removed run at
    /// once and advances RACK by the last never-retransmitted segment of each stretch: the
    /// same result as advancing by each, as here). `reord`: the lowest sequence delivered
    /// without a retransmission below the highest SACKed, for tcp_check_sack_reordering().
    pub fn sack_acked(&mut self, e: &RtxEntry, reord: &mut i64) {
        if e.sacked & TCPCB_SACKED_ACKED != 0 {
            self.snd.sacked_out -= 1;
            return;
        }
        if e.sacked & TCPCB_EVER_RETRANS == 0 && e.seq < self.snd.highest_sack {
            self.snd.reord_seen = true;
            *reord = (*reord).min(e.seq);
        }
        self.rack_advance(e.sacked, e.end, e.tx_ns);
    }

    // -- RACK -----------------------------------------------------------------------------

    /// Models tcp_rack_advance() [tcp_recovery.c, 6.18] (see recovery.py `rack_advance`).
    pub fn rack_advance(&mut self, sacked: i64, end_seq: i64, xmit_ns: i64) {
        let rtt_us = floor_div(self.now - xmit_ns, NS_PER_US);
        let snd = &mut self.snd;
        if sacked & TCPCB_EVER_RETRANS != 0 && (snd.min_rtt_us == 0 || rtt_us < snd.min_rtt_us) {
            return;
        }
        snd.rack_advanced = true;
        snd.rack_rtt_us = rtt_us;
        if rack_sent_after(xmit_ns, snd.rack_mstamp, end_seq, snd.rack_end_seq) {
            snd.rack_mstamp = xmit_ns;
            snd.rack_end_seq = end_seq;
        }
    }

    /// tcp_rack_reo_wnd() [tcp_recovery.c, 6.18], in us (see recovery.py `rack_reo_wnd`).
    pub fn rack_reo_wnd(&self) -> i64 {
        let snd = &self.snd;
        if !snd.reord_seen && (snd.in_recovery || snd.sacked_out >= snd.reordering) {
            return 0;
        }
        let srtt_us = snd.srtt_us8 >> 3;
        if snd.min_rtt_us == 0 {
            return srtt_us; // tcp_min_rtt() is ~0U
        }
        (snd.min_rtt_us >> 2).min(srtt_us)
    }

    /// tcp_rack_skb_timeout() [tcp_recovery.c, 6.18]: us left before a segment sent before
    /// RACK's reference counts as lost.
    pub fn rack_skb_timeout(&self, e: &RtxEntry, reo_wnd: i64) -> i64 {
        self.snd.rack_rtt_us + reo_wnd - floor_div(self.now - e.tx_ns, NS_PER_US)
    }

    /// Models tcp_rack_detect_loss() [tcp_recovery.c, 6.18] (see recovery.py
    /// `rack_detect_loss`). Returns the longest wait left in us and whether a
    /// retransmission in flight was lost again (FLAG_LOST_RETRANS).
    pub fn rack_detect_loss(&mut self) -> (i64, bool) {
        let reo_wnd = self.rack_reo_wnd();
        let mut timeout = 0;
        let mut relost = false;
        let (mstamp, end_seq) = (self.snd.rack_mstamp, self.snd.rack_end_seq);
        for j in 0..self.snd.rtx_queue.len() {
            let e = self.snd.rtx_queue[j];
            if e.sacked & TCPCB_SACKED_ACKED != 0 || (e.lost != 0 && e.retrans == 0) {
                continue;
            }
            if !rack_sent_after(mstamp, e.tx_ns, end_seq, e.end) {
                continue;
            }
            let remaining = self.rack_skb_timeout(&e, reo_wnd);
            if remaining <= 0 {
                relost = relost || e.retrans > 0;
                self.mark_skb_lost(j);
            } else if remaining > timeout {
                timeout = remaining;
            }
        }
        (timeout, relost)
    }

    /// Models tcp_rack_mark_lost() [tcp_recovery.c, 6.18]: detect losses, arm the
    /// reordering timer for what still waits (see recovery.py `rack_mark_lost`). Returns
    /// whether a retransmission was lost again.
    pub fn rack_mark_lost(&mut self) -> bool {
        if !self.snd.rack_advanced {
            return false;
        }
        self.snd.rack_advanced = false;
        let (timeout, relost) = self.rack_detect_loss();
        self.snd.reo_deadline = 0;
        if timeout != 0 {
            let when = self
                .clock
                .ticks_ns(self.clock.usecs_to_ticks(timeout) + TCP_TIMEOUT_MIN);
            self.snd.reo_deadline = self.reset_xmit_timer(when);
            self.snd.tlp_deadline = 0; // the xmit timer is taken
        }
        relost
    }

    /// Models tcp_rack_reo_timeout() [tcp_recovery.c, 6.18], the reordering timer (see
    /// recovery.py `rack_reo_timeout`).
    pub fn rack_reo_timeout(&mut self) {
        if self.snd.rtx_queue.is_empty() {
            return;
        }
        let prior_inflight = self.packets_in_flight();
        let prior_lost = self.snd.lost_out;
        self.rack_detect_loss();
        if prior_inflight == self.packets_in_flight() {
            return;
        }
        if !self.snd.in_recovery || self.snd.in_loss {
            self.enter_recovery();
            let newly_lost = self.snd.lost_out > prior_lost;
            self.cwnd_reduction(1, newly_lost, false);
        }
        self.retransmit_lost();
    }

    /// tcp_mark_skb_lost() [tcp_input.c, 6.18]: a SACKed segment is never lost; a
    /// retransmitted one lost again must go out again.
    pub fn mark_skb_lost(&mut self, j: usize) {
        if self.snd.rtx_queue[j].sacked & TCPCB_SACKED_ACKED == 0 {
            self.mark_lost(j);
        }
    }

    // -- recovery -------------------------------------------------------------------------

    /// Models tcp_fastretrans_alert() then tcp_cong_control() [tcp_input.c, 6.18] for a SACK
    /// connection (see recovery.py `fastretrans_alert`). `delivered`: segments newly acked
    /// or SACKed.
    pub fn fastretrans_alert(&mut self, ack: i64, prior_una: i64, delivered: i64) {
        if !self.snd.in_recovery {
            self.snd.retrans_stamp = 0; // TCP_CA_Open
        } else if ack >= self.snd.high_seq {
            if !self.snd.in_loss {
                self.end_cwnd_reduction();
            }
            let snd = &mut self.snd;
            snd.in_recovery = false; // tcp_try_undo_recovery(): Open
            snd.in_loss = false;
            snd.retrans_stamp = 0;
        }
        let prior_lost = self.snd.lost_out;
        let relost = self.snd.in_loss && self.rack_mark_lost();
        if !self.snd.in_loss && !self.snd.in_recovery {
            self.rack_mark_lost();
            if self.snd.lost_out != 0 {
                self.enter_recovery();
            }
        } else if relost {
            self.enter_recovery(); // Loss -> Recovery (FLAG_LOST_RETRANS)
        } else if !self.snd.in_loss {
            self.rack_mark_lost();
        }
        let una_advanced = ack > prior_una;
        if self.snd.in_recovery && !self.snd.in_loss {
            let newly_lost = self.snd.lost_out > prior_lost;
            self.cwnd_reduction(delivered, newly_lost, una_advanced);
        } else if una_advanced {
            self.ca_cong_avoid(delivered);
        }
    }

    /// Models tcp_enter_recovery() + tcp_init_cwnd_reduction() [tcp_input.c, 6.18] (see
    /// recovery.py `enter_recovery`).
    pub fn enter_recovery(&mut self) {
        let ssthresh = self.ca_ssthresh();
        let snd = &mut self.snd;
        snd.high_seq = snd.snd_nxt;
        snd.tlp_high_seq = 0;
        snd.tlp_deadline = 0; // the xmit timer is the RTO now
        snd.cwnd_cnt = 0;
        snd.prior_cwnd = snd.snd_cwnd;
        snd.prr_delivered = 0;
        snd.prr_out = 0;
        snd.snd_ssthresh = ssthresh;
        snd.in_recovery = true;
        snd.in_loss = false;
        self.mib.TCPSackRecovery += 1;
    }

    /// Models tcp_cwnd_reduction() [tcp_input.c, 6.18], proportional rate reduction
    /// (RFC 6937; see recovery.py `cwnd_reduction`).
    pub fn cwnd_reduction(
        &mut self,
        newly_acked_sacked: i64,
        newly_lost: bool,
        una_advanced: bool,
    ) {
        if newly_acked_sacked <= 0 || self.snd.prior_cwnd == 0 {
            return;
        }
        let inflight = self.packets_in_flight();
        let snd = &mut self.snd;
        let delta = snd.snd_ssthresh - inflight;
        snd.prr_delivered += newly_acked_sacked;
        let mut sndcnt;
        if delta < 0 {
            let dividend = snd.snd_ssthresh * snd.prr_delivered + snd.prior_cwnd - 1;
            sndcnt = floor_div(dividend, snd.prior_cwnd) - snd.prr_out;
        } else {
            sndcnt = (snd.prr_delivered - snd.prr_out).max(newly_acked_sacked);
            if una_advanced && !newly_lost {
                sndcnt += 1;
            }
            sndcnt = delta.min(sndcnt);
        }
        sndcnt = sndcnt.max(if snd.prr_out != 0 { 0 } else { 1 });
        snd.snd_cwnd = inflight + sndcnt;
    }

    /// tcp_end_cwnd_reduction() [tcp_input.c, 6.18]: leaving Recovery, cwnd = ssthresh.
    pub fn end_cwnd_reduction(&mut self) {
        let snd = &mut self.snd;
        if snd.snd_ssthresh < INFINITE_SSTHRESH {
            snd.snd_cwnd = snd.snd_ssthresh;
        }
    }

    /// Models tcp_timeout_mark_lost() [tcp_input.c, 6.18], at an RTO (see recovery.py
    /// `timeout_mark_lost`).
    pub fn timeout_mark_lost(&mut self) {
        let reneg = self
            .snd
            .rtx_queue
            .front()
            .is_some_and(|e| e.sacked & TCPCB_SACKED_ACKED != 0);
        if reneg {
            self.snd.sacked_out = 0;
        }
        for j in 0..self.snd.rtx_queue.len() {
            if reneg {
                self.snd.rtx_queue[j].sacked &= !TCPCB_SACKED_ACKED;
            } else if j != 0 && self.rack_skb_timeout(&self.snd.rtx_queue[j], 0) > 0 {
                continue; // sent too recently to tell
            }
            self.mark_skb_lost(j);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The same programs as tests/core/test_recovery.py, on the native socket (an active
    //! sender here: the handshake's 1 ms RTT is the minimum RTT).
    use super::*;
    use crate::cong::CongestionControl;
    use crate::models::kernel_for;
    use crate::segment::{Segment, ACK};
    use crate::socket::SocketParams;

    const MSS: i64 = 1448;
    const MS: i64 = 1_000_000;

    fn seg_start(i: i64) -> i64 {
        1 + i * MSS
    }

    /// A sender with n full segments in flight (cwnd n), sent at 2 ms.
    fn flight(reno: bool, n: i64, sack: bool) -> TcpSocket {
        let k = kernel_for("linux-6.1").unwrap();
        let mut sysctl = k.default_sysctls();
        if reno {
            sysctl.tcp_congestion_control = CongestionControl::Reno;
        }
        let mut sk = TcpSocket::new(k, sysctl, None, &SocketParams::default()).unwrap();
        sk.connect(0);
        sk.take_outbox();
        sk.on_segment(MS, &crate::bench::peer_synack(sack));
        sk.take_outbox();
        sk.snd.snd_cwnd = n;
        sk.write(2 * MS, n * MSS);
        assert_eq!(sk.take_outbox().len() as i64, n);
        sk
    }

    /// An ACK carrying SACK blocks of segment indexes [first, last + 1); returns the data
    /// segments it let out (their sequence numbers).
    fn sack_ack(sk: &mut TcpSocket, t_us: i64, ack: i64, blocks: &[(i64, i64)]) -> Vec<i64> {
        let mut seg = Segment::new(1, 0, ACK, ack, 502);
        seg.tsval = t_us / 1000 + 1;
        seg.tsecr = 1;
        seg.sacks = blocks
            .iter()
            .map(|&(a, b)| (seg_start(a), seg_start(b)))
            .collect();
        sk.on_segment(t_us * 1000, &seg);
        let out = sk.take_outbox();
        out.iter().filter(|s| s.len > 0).map(|s| s.seq).collect()
    }

    #[test]
    fn sacktag_takes_sacked_segments_out_of_the_flight() {
        let mut sk = flight(false, 10, true);
        sack_ack(&mut sk, 5000, 1, &[(1, 3)]);
        let flags: Vec<i64> = sk
            .snd
            .rtx_queue
            .iter()
            .map(|e| e.sacked & TCPCB_SACKED_ACKED)
            .collect();
        assert_eq!(flags, [0, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!((sk.snd.sacked_out, sk.packets_in_flight()), (2, 8));
        assert_eq!(sk.snd.highest_sack, seg_start(3));
        sack_ack(&mut sk, 6000, seg_start(2), &[(2, 3)]);
        assert_eq!((sk.snd.sacked_out, sk.snd.rtx_queue.len()), (1, 8));
    }

    #[test]
    fn rack_waits_out_the_reordering_window_until_three_are_sacked() {
        let mut sk = flight(false, 10, true);
        sack_ack(&mut sk, 5000, 1, &[(1, 2)]);
        assert!(sk.snd.lost_out == 0 && !sk.snd.in_recovery);
        assert!(sk.rack_reo_wnd() == sk.snd.min_rtt_us >> 2 && sk.rack_reo_wnd() > 0);
        let out = sack_ack(&mut sk, 5100, 1, &[(1, 4)]);
        assert!(sk.snd.in_recovery && !sk.snd.in_loss);
        assert_eq!(out, [1]); // the fast retransmit
        assert_eq!((sk.mib.TCPFastRetrans, sk.snd.rtx_queue[0].retrans), (1, 1));
    }

    #[test]
    fn the_reordering_timer_marks_the_hole_once_the_window_has_passed() {
        let mut sk = flight(false, 10, true);
        sack_ack(&mut sk, 5000, 1, &[(1, 2)]);
        let d = sk.snd.reo_deadline;
        assert!(d > 5 * MS && sk.snd.tlp_deadline == 0 && !sk.snd.in_recovery);
        sk.on_timer(d);
        assert!(sk.snd.in_recovery && sk.snd.rtx_queue[0].retrans == 1);
        assert_eq!(sk.mib.TCPFastRetrans, 1);
    }

    #[test]
    fn prr_brings_cwnd_down_in_proportion_to_what_is_delivered() {
        let mut sk = flight(true, 20, true);
        sk.write(3 * MS, 10 * MSS);
        let out = sack_ack(&mut sk, 5000, 1, &[(1, 4)]);
        let snd = &sk.snd;
        assert_eq!(
            (snd.snd_ssthresh, snd.prior_cwnd, snd.snd_cwnd),
            (10, 20, 18)
        );
        assert_eq!(out, [1, seg_start(20)]);
        assert_eq!((snd.prr_out, snd.prr_delivered), (2, 3));
        assert!(sack_ack(&mut sk, 5100, 1, &[(1, 5)]).is_empty());
        assert_eq!(sk.snd.snd_cwnd, sk.packets_in_flight());
        assert_eq!(sack_ack(&mut sk, 5200, 1, &[(1, 7)]), [seg_start(21)]);
        let hs = sk.snd.high_seq;
        sack_ack(&mut sk, 30_000, hs, &[]);
        assert!(!sk.snd.in_recovery && sk.snd.snd_cwnd >= 10 && sk.snd.snd_ssthresh == 10);
    }

    #[test]
    fn an_rto_keeps_sacked_segments() {
        let mut sk = flight(false, 10, true);
        sack_ack(&mut sk, 5000, 1, &[(1, 3)]);
        while sk.mib.TCPTimeouts == 0 {
            let d = sk.next_deadline();
            sk.on_timer(d);
        }
        assert!(sk.snd.in_loss && sk.snd.sacked_out == 2);
        let lost: Vec<i64> = sk.snd.rtx_queue.iter().map(|e| e.lost).collect();
        assert_eq!(lost, [1, 0, 0, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(sk.ack.lsndtime, sk.now); // tcp_event_data_sent() for the retransmission
    }

    #[test]
    fn without_sack_an_rto_marks_everything_lost() {
        let mut sk = flight(false, 10, false);
        while sk.mib.TCPTimeouts == 0 {
            let d = sk.next_deadline();
            sk.on_timer(d);
        }
        assert_eq!((sk.snd.lost_out, sk.snd.sacked_out), (9, 0));
    }

    #[test]
    fn dsack_is_recognised() {
        assert!(check_dsack(&[(10, 20)], 30));
        assert!(check_dsack(&[(40, 50), (30, 60)], 30));
        assert!(!check_dsack(&[(40, 50), (60, 70)], 30));
        assert!(!check_dsack(&[(40, 50)], 30));
        assert!(!check_dsack(&[], 30));
        let mut sk = flight(false, 10, true);
        sack_ack(&mut sk, 5000, seg_start(2), &[]);
        sack_ack(&mut sk, 6000, seg_start(2), &[(0, 1)]); // an old duplicate
        assert!(sk.snd.sacked_out == 0 && !sk.snd.in_recovery && !sk.snd.rack_advanced);
        sack_ack(&mut sk, 7000, seg_start(2), &[(4, 5), (3, 6)]);
        assert_eq!(sk.snd.sacked_out, 3);
    }

    #[test]
    fn without_sack_three_duplicates_are_the_fast_retransmit() {
        for (sack, want) in [(false, 1), (true, 0)] {
            let mut sk = flight(false, 10, sack);
            sack_ack(&mut sk, 4000, 1, &[]); // the peer's window (a window update)
            for i in 0..3 {
                sack_ack(&mut sk, 5000 + i * 1000, 1, &[]);
            }
            assert_eq!(sk.mib.TCPFastRetrans, want);
        }
    }
}
