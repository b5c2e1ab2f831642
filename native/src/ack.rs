//! ACK generation: per-segment bookkeeping, immediate vs delayed ACKs, the delayed-ACK
//! timer, window updates after reads, and SACK/D-SACK blocks.
//!
//! Mirrors tcpsim/core/ack.py (`AckMixin`) as an `impl TcpSocket` block. Models
//! tcp_event_data_recv(), __tcp_ack_snd_check(), tcp_send_delayed_ack(),
//! tcp_delack_timer_handler(), __tcp_cleanup_rbuf() and tcp_send_ack() [tcp_input.c,
//! tcp_output.c, tcp_timer.c, tcp.c].

use crate::constants::{
    ICSK_ACK_NOW, ICSK_ACK_PUSHED, ICSK_ACK_PUSHED2, ICSK_ACK_SCHED, ICSK_ACK_TIMER, NS_PER_MS,
    TCP_ATO_MIN_NS, TCP_DELACK_MAX_NS, TCP_DELACK_MIN_NS, TCP_MAX_QUICKACKS,
};
use crate::kcall;
use crate::segment::{Segment, ACK};
use crate::skb::Skb;
use crate::socket::TcpSocket;
use crate::state::TcpState;

/// HZ / 2 jiffies: tcp_send_delayed_ack()'s ato ceiling.
const HZ_HALF_NS: i64 = 500 * NS_PER_MS;

impl TcpSocket {
    // -- quick-ack mode -------------------------------------------------------------------

    /// Models tcp_incr_quickack(): allow up to rcv_wnd/(2*rcv_mss) immediate ACKs.
    pub fn incr_quickack(&mut self, max_quickacks: i64) {
        let mut quickacks = self.rcv.rcv_wnd.div_euclid(2 * self.ack.ack_rcv_mss);
        if quickacks == 0 {
            quickacks = 2;
        }
        quickacks = quickacks.min(max_quickacks);
        if quickacks > self.ack.ack_quick {
            self.ack.ack_quick = quickacks;
        }
    }

    /// Models tcp_enter_quickack_mode(): quick ACKs, leave ping-pong, reset ato.
    pub fn enter_quickack_mode(&mut self, max_quickacks: i64) {
        self.incr_quickack(max_quickacks);
        self.ack.ack_pingpong = 0;
        self.ack.ack_ato = TCP_ATO_MIN_NS;
    }

    /// Models tcp_in_quickack_mode().
    pub fn in_quickack_mode(&self) -> bool {
        self.ack.ack_quick > 0 && !self.in_pingpong()
    }

    /// inet_csk_in_pingpong_mode().
    pub fn in_pingpong(&self) -> bool {
        self.ack.ack_pingpong >= self.k.pingpong_thresh()
    }

    /// inet_csk_enter_pingpong_mode().
    pub fn enter_pingpong(&mut self) {
        self.ack.ack_pingpong = self.k.pingpong_thresh();
    }

    // -- tcp_event_data_recv --------------------------------------------------------------

    /// Models tcp_event_data_recv(): schedule an ACK, learn rcv_mss and RTT, adapt the
    /// delayed-ACK timeout (ato) to the inter-arrival time, grow rcv_ssthresh.
    pub fn event_data_recv(&mut self, seg: &Segment, skb: &Skb) {
        self.ack.ack_pending |= ICSK_ACK_SCHED;
        kcall!(self.measure_rcv_mss(seg, skb));
        kcall!(self.rcv_rtt_measure());
        self.ato_update();
        if seg.len >= 128 {
            kcall!(self.grow_window(skb, true, seg));
        }
    }

    /// The ato update of tcp_event_data_recv() [tcp_input.c], in the clock's ticks (ack.py
    /// `_ato_update`): ato, the inter-arrival time m and icsk_rto are whole jiffies.
    fn ato_update(&mut self) {
        let (lrcvtime, ato, m) =
            self.clock
                .ato_sample(self.now, self.ack.ack_ato, self.ack.ack_lrcvtime);
        if self.ack.ack_ato == 0 {
            self.incr_quickack(TCP_MAX_QUICKACKS);
            self.ack.ack_ato = TCP_ATO_MIN_NS;
        } else {
            let clock = &self.clock;
            let ato_min = clock.to_ticks(TCP_ATO_MIN_NS);
            let rto = clock.to_ticks(self.snd.rto);
            if m <= ato_min.div_euclid(2) {
                self.ack.ack_ato = clock.ticks_ns((ato >> 1) + ato_min.div_euclid(2));
            } else if m < ato {
                self.ack.ack_ato = clock.ticks_ns(((ato >> 1) + m).min(rto));
            } else if m > rto {
                self.incr_quickack(TCP_MAX_QUICKACKS);
            }
        }
        self.ack.ack_lrcvtime = lrcvtime;
    }

    // -- immediate or delayed -------------------------------------------------------------

    /// Models tcp_ack_snd_check() / __tcp_ack_snd_check().
    pub fn ack_snd_check(&mut self, ofo_possible: bool) {
        if self.ack.ack_pending & ICSK_ACK_SCHED == 0 {
            return;
        }
        let now_ack = {
            let big = self.rcv.rcv_nxt - self.rcv.rcv_wup > self.ack.ack_rcv_mss;
            big && (self.rcv.rcv_nxt - self.rcv.copied_seq < self.rcv.rcvlowat || {
                let w = kcall!(self.select_window());
                w >= self.rcv.rcv_wnd
            })
        };
        if now_ack || self.in_quickack_mode() || self.ack.ack_pending & ICSK_ACK_NOW != 0 {
            if !self.releasing || !self.defer_ack() {
                // 6.7+: to tcp_release_cb()
                self.send_ack();
            }
            return;
        }
        if !ofo_possible || self.mem.ofo_queue.is_empty() {
            self.send_delayed_ack();
            return;
        }
        self.sack_compress();
    }

    /// Out-of-order data with SACK: the first dupACKs go out at once, then they are
    /// compressed by a short timer (the profile's comp_sack_delay_ns).
    fn sack_compress(&mut self) {
        if !self.conn.sack_ok || self.ack.compressed_ack >= self.sysctl.tcp_comp_sack_nr {
            self.send_ack();
            return;
        }
        let ack = &mut self.ack;
        if ack.comp_rcv_nxt != self.rcv.rcv_nxt {
            // the first 3 dupACKs at each new rcv_nxt go out at once
            ack.comp_rcv_nxt = self.rcv.rcv_nxt;
            ack.dup_ack_counter = 0;
        }
        if ack.dup_ack_counter < 3 {
            ack.dup_ack_counter += 1;
            self.send_ack();
            return;
        }
        ack.compressed_ack += 1;
        if ack.comp_sack_deadline != 0 {
            return;
        }
        let mut rtt_us8 = self.rcv.rcv_rtt_us8;
        let srtt = self.snd.srtt_us8;
        if srtt != 0 {
            rtt_us8 = if rtt_us8 != 0 {
                rtt_us8.min(srtt)
            } else {
                srtt
            };
        }
        let delay = self.k.comp_sack_delay_ns(self, rtt_us8);
        self.ack.comp_sack_deadline = self.now + delay;
    }

    /// tcp_compressed_ack_kick(): flush the compressed SACK.
    pub fn compressed_ack_timer(&mut self) {
        if self.ack.compressed_ack != 0 {
            self.ack.compressed_ack = 0;
            self.send_ack();
        }
    }

    /// Models tcp_send_delayed_ack() [tcp_output.c, 6.18]: arm (or pull in) the delayed-ACK
    /// timer, everything in the clock's ticks (see ack.py `send_delayed_ack`).
    pub fn send_delayed_ack(&mut self) {
        let delack_max = self.k.delack_max(self);
        let pingpong = self.in_pingpong();
        let clock = &self.clock;
        let ack = &self.ack;
        let srtt_us8 = self.snd.srtt_us8;
        let (nj, mut ato, rtt, delack_max) =
            clock.delack_ticks(self.now, ack.ack_ato, srtt_us8 >> 3, delack_max);
        let delack_min = clock.to_ticks(TCP_DELACK_MIN_NS);
        if ato > delack_min {
            let mut max_ato = clock.to_ticks(HZ_HALF_NS); // HZ / 2
            if pingpong || ack.ack_pending & ICSK_ACK_PUSHED != 0 {
                max_ato = clock.to_ticks(TCP_DELACK_MAX_NS);
            }
            if srtt_us8 != 0 {
                max_ato = max_ato.min(rtt.max(delack_min));
            }
            ato = ato.min(max_ato);
        }
        ato = ato.min(delack_max);
        let mut timeout = nj + ato;
        if ack.ack_pending & ICSK_ACK_TIMER != 0 && ack.delack_deadline != 0 {
            if ack.delack_expires <= nj + (ato >> 2) {
                self.send_ack();
                return;
            }
            timeout = timeout.min(ack.delack_expires);
        }
        let deadline = clock.timer_ns(timeout, nj);
        let ack = &mut self.ack;
        ack.ack_pending |= ICSK_ACK_SCHED | ICSK_ACK_TIMER;
        if timeout != ack.delack_expires || ack.delack_deadline == 0 {
            ack.delack_expires = timeout; // mod_timer: same expiry, same bucket
            ack.delack_deadline = deadline;
        }
    }

    /// Models tcp_delack_timer_handler(): send the ACK still owed, inflate ato.
    pub fn delack_timer(&mut self) {
        if self.ack.compressed_ack != 0 {
            self.ack.compressed_ack = 0;
        }
        if self.ack.ack_pending & ICSK_ACK_SCHED == 0 || self.conn.state == TcpState::Closed {
            return;
        }
        if !self.in_pingpong() {
            self.ack.ack_ato = (self.ack.ack_ato << 1).min(self.snd.rto);
        } else {
            self.ack.ack_pingpong = 0;
            self.ack.ack_ato = TCP_ATO_MIN_NS;
        }
        self.mib.DelayedACKs += 1;
        self.send_ack();
    }

    // -- window update after a read -------------------------------------------------------

    /// The decision of __tcp_cleanup_rbuf() without its effects (see cleanup_rbuf).
    pub fn cleanup_would_ack(&mut self, copied: i64) -> bool {
        let (rcv, ack) = (&self.rcv, &self.ack);
        if ack.ack_pending & ICSK_ACK_SCHED != 0 {
            if rcv.rcv_nxt - rcv.rcv_wup > ack.ack_rcv_mss {
                return true;
            }
            if copied > 0
                && (ack.ack_pending & ICSK_ACK_PUSHED2 != 0
                    || (ack.ack_pending & ICSK_ACK_PUSHED != 0 && !self.in_pingpong()))
                && self.mem.sk_rmem_alloc == 0
            {
                return true;
            }
        }
        if copied > 0 && !self.rcv.rcv_shutdown {
            let now_win = self.receive_window();
            if 2 * now_win <= self.rcv.window_clamp {
                let new = kcall!(self.select_window());
                if new != 0 && new >= 2 * now_win {
                    return true;
                }
            }
        }
        false
    }

    /// Models __tcp_cleanup_rbuf(): after a read, send the ACK still owed or a window update
    /// when the read at least doubled a window that was at most half open.
    pub fn cleanup_rbuf(&mut self, copied: i64) -> bool {
        if self.conn.state == TcpState::Closed {
            return false;
        }
        if self.cleanup_would_ack(copied) {
            self.send_ack();
            return true;
        }
        false
    }

    // -- sending ACKs ---------------------------------------------------------------------

    /// Models tcp_send_ack(): a pure ACK carrying the window tcp_select_window() picks.
    pub fn send_ack(&mut self) {
        if self.conn.state == TcpState::Closed {
            return;
        }
        let seg = self.make_segment(self.snd.snd_nxt, 0, ACK);
        self.ack_sent();
        self.emit(seg, false);
    }

    /// Models tcp_send_dupack(): duplicate data gets a D-SACK and quick-ack mode.
    pub fn send_dupack(&mut self, seg: &Segment) {
        if seg.len != 0 && seg.seq < self.rcv.rcv_nxt {
            self.mib.DelayedACKLost += 1;
            self.enter_quickack_mode(TCP_MAX_QUICKACKS);
            if self.conn.sack_ok {
                self.set_dsack(seg.seq, seg.end_seq().min(self.rcv.rcv_nxt));
            }
        }
        self.send_ack();
    }

    /// Models tcp_event_ack_sent(): leave quick-ack mode by one, clear the pending ACK.
    pub fn ack_sent(&mut self) {
        if self.ack.compressed_ack != 0 {
            self.ack.compressed_ack = 0;
            self.ack.comp_sack_deadline = 0;
        }
        kcall!(self.dec_quickack_mode());
        let ack = &mut self.ack;
        ack.ack_pending = 0;
        ack.delack_deadline = 0;
        ack.delack_expires = 0;
    }

    /// Build an outgoing segment with ACK, window, timestamps and SACK blocks
    /// (__tcp_transmit_skb: every non-SYN segment calls tcp_select_window).
    pub fn make_segment(&mut self, seq: i64, length: i64, flags: i64) -> Segment {
        let win = kcall!(self.advertise_window());
        let mut seg = Segment::new(seq, length, flags, self.rcv.rcv_nxt, win);
        if self.conn.ts_ok {
            seg.tsval = self.tsval();
            seg.tsecr = self.conn.ts_recent;
        }
        let rcv = &mut self.rcv;
        if self.conn.sack_ok && (rcv.dsack.is_some() || !rcv.selective_acks.is_empty()) {
            let mut blocks = Vec::new();
            if let Some(d) = rcv.dsack.take() {
                blocks.push(d);
            }
            let room = (if self.conn.ts_ok { 3 } else { 4 }) - blocks.len();
            blocks.extend(rcv.selective_acks.iter().take(room).copied());
            seg.sacks = blocks;
        }
        seg
    }

    // -- SACK blocks ----------------------------------------------------------------------

    /// tcp_dsack_set(): report a duplicate range in the next ACK.
    pub fn set_dsack(&mut self, start: i64, end: i64) {
        if self.conn.sack_ok {
            self.rcv.dsack = Some((start, end));
            if end <= self.rcv.rcv_nxt {
                self.mib.TCPDSACKOldSent += 1;
            }
        }
    }

    /// tcp_dsack_extend(): start a D-SACK, or widen the pending one when they touch.
    pub fn dsack_extend(&mut self, start: i64, end: i64) {
        match self.rcv.dsack {
            None => self.set_dsack(start, end),
            Some((s, e)) => {
                if start <= e && s <= end {
                    self.rcv.dsack = Some((start.min(s), end.max(e)));
                }
            }
        }
    }

    /// Models tcp_sack_new_ofo_skb(): extend or add a SACK block, most recent first.
    pub fn sack_new_ofo(&mut self, seq: i64, end: i64) {
        if !self.conn.sack_ok {
            return;
        }
        let blocks = &mut self.rcv.selective_acks;
        if let Some(i) = blocks.iter().position(|b| b.0 <= end && seq <= b.1) {
            // touches: extend and move to front
            let b = blocks.remove(i);
            blocks.insert(0, (b.0.min(seq), b.1.max(end)));
            self.sack_merge();
            return;
        }
        blocks.insert(0, (seq, end));
        blocks.truncate(4);
    }

    /// tcp_sack_maybe_coalesce(): merge the first block with any it now overlaps.
    fn sack_merge(&mut self) {
        let blocks = &mut self.rcv.selective_acks;
        let mut i = 1;
        while i < blocks.len() {
            let (first, b) = (blocks[0], blocks[i]);
            if b.0 <= first.1 && first.0 <= b.1 {
                blocks[0] = (first.0.min(b.0), first.1.max(b.1));
                blocks.remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Models tcp_sack_remove(): drop blocks now below rcv_nxt.
    pub fn sack_remove(&mut self) {
        let rcv_nxt = self.rcv.rcv_nxt;
        self.rcv.selective_acks.retain(|b| b.1 > rcv_nxt);
        if self.mem.ofo_queue.is_empty() {
            self.rcv.selective_acks.clear();
        }
    }
}
