//! The receive half: segment validation, in-order and out-of-order queueing, reading.
//!
//! Mirrors tcpsim/core/receiver.py (`ReceiveMixin`) as an `impl TcpSocket` block. Follows
//! tcp_rcv_established() -> tcp_data_queue() / tcp_data_queue_ofo() and
//! tcp_recvmsg_locked() -> tcp_cleanup_rbuf() [net/ipv4/tcp_input.c, tcp.c]. Decisions that
//! differ between kernel versions go through `self.k` (admission, pruning, window growth,
//! autotuning, sequence checks).

use crate::arith::floor_div;
use crate::constants::{ICSK_ACK_NOW, ICSK_ACK_SCHED, TCP_MAX_QUICKACKS};
use crate::kcall;
use crate::memory::{skb_condense, Tail};
use crate::rewind::Rewind;
use crate::segment::{Segment, ACK, FIN, RST, SYN, URG};
use crate::skb::Skb;
use crate::socket::{TcpSocket, TraceArgs};
use crate::state::TcpState;

const NOT_FAST: i64 = SYN | FIN | RST | URG;

impl TcpSocket {
    // -- memory <-> window ----------------------------------------------------------------

    /// Models tcp_space(): window worth of the unused receive budget (may be negative).
    pub fn tcp_space(&self) -> i64 {
        self.k.win_from_space(
            self,
            self.mem.sk_rcvbuf - self.mem.sk_backlog_len - self.mem.sk_rmem_alloc,
        )
    }

    /// Models tcp_full_space(): window worth of the whole receive budget.
    pub fn full_space(&self) -> i64 {
        self.k.win_from_space(self, self.mem.sk_rcvbuf)
    }

    /// Models tcp_receive_window(): what the peer may still send.
    pub fn receive_window(&self) -> i64 {
        let w = self.rcv.rcv_wup + self.rcv.rcv_wnd - self.rcv.rcv_nxt;
        w.max(0)
    }

    /// Models tcp_fast_path_check(): re-enable header prediction when nothing unusual.
    /// It only ever turns the fast path on; a zero window, OFO data or a failed prune turn
    /// it off elsewhere.
    pub fn fast_path_check(&mut self) {
        let mem = &self.mem;
        if mem.ofo_queue.is_empty() && self.rcv.rcv_wnd != 0 && mem.sk_rmem_alloc < mem.sk_rcvbuf {
            self.rcv.pred_ok = true;
        }
    }

    // -- tcp_rcv_established --------------------------------------------------------------

    /// Models tcp_rcv_established(): header-prediction fast path, else validate, process
    /// the ACK and queue the data.
    pub fn rcv_established(&mut self, seg: &Segment, pre: Option<Skb>) {
        if seg.tsval >= 0 && self.conn.ts_ok {
            self.conn.rcv_tsecr = seg.tsecr;
        }
        let (rcv, snd) = (&self.rcv, &self.snd);
        if rcv.pred_ok
            && seg.seq == rcv.rcv_nxt
            && seg.flags & NOT_FAST == 0
            && seg.flags & ACK != 0
            && seg.win << self.conn.snd_wscale == snd.snd_wnd
            && seg.ack <= snd.snd_nxt
            && seg.ack >= snd.snd_una
        {
            let fast = self.conn.state == TcpState::Established; // tcp_rcv_established()
            if seg.len == 0 {
                self.ts_update(seg);
                self.tcp_ack(seg, !fast);
                return;
            }
            if seg.seq + seg.len <= rcv.rcv_nxt + self.receive_window() {
                let skb = match pre {
                    Some(skb) => skb,
                    None => self.dev.make_skb(
                        seg.seq,
                        seg.len,
                        false,
                        seg.gso_size,
                        seg.tx_segs,
                        seg.frags as i64,
                    ),
                };
                if skb.truesize <= self.mem.sk_forward_alloc {
                    self.fast_path_data(seg, skb, !fast);
                    return;
                }
                self.slow_path(seg, Some(skb)); // in order: the slow path queues this skb
                return;
            }
        }
        self.slow_path(seg, pre);
    }

    fn fast_path_data(&mut self, seg: &Segment, skb: Skb, slowpath: bool) {
        self.ts_update(seg);
        kcall!(self.rcv_rtt_measure_ts(seg));
        self.mib.TCPHPHits += 1;
        let truesize = skb.truesize;
        let coalesced = self.queue_rcv(skb.clone());
        self.trace_seg(
            "rx",
            if coalesced { "coalesced" } else { "queued" },
            seg,
            truesize,
            "",
        );
        self.event_data_recv(seg, &skb);
        if seg.ack > self.snd.snd_una {
            self.tcp_ack(seg, slowpath); // FLAG_DATA, not FLAG_SLOWPATH
        }
        self.ack_snd_check(false);
        self.data_ready();
    }

    /// tcp_validate_incoming(), tcp_ack(), then tcp_data_queue(). `skb`: the skb the fast
    /// path already built for this in-order segment (the same one would be built).
    fn slow_path(&mut self, seg: &Segment, skb: Option<Skb>) {
        let reason = kcall!(self.tcp_sequence(seg));
        if !reason.is_empty() {
            self.drop_unacceptable(seg, reason);
            return;
        }
        if seg.flags & RST != 0 {
            self.trace_seg("rx", "rst", seg, -1, "");
            self.abort("ECONNRESET");
            return;
        }
        if seg.flags & ACK == 0 {
            self.trace_seg("drop", "", seg, -1, "TCP_FLAGS");
            return;
        }
        self.ts_update(seg);
        if self.tcp_ack(seg, true) < 0 {
            self.trace_seg("drop", "bad ack", seg, -1, "TCP_ACK_UNSENT_DATA");
            return;
        }
        kcall!(self.rcv_rtt_measure_ts(seg));
        if seg.len != 0 || seg.flags & FIN != 0 {
            self.data_queue(seg, skb);
        }
        if self.conn.state != TcpState::Closed {
            self.ack_snd_check(true); // tcp_ack_snd_check(), every segment
        }
    }

    /// tcp_store_ts_recent(): remember the peer's timestamp for our echo.
    fn ts_update(&mut self, seg: &Segment) {
        if self.conn.ts_ok && seg.tsval >= 0 && seg.seq <= self.rcv.rcv_wup {
            self.conn.ts_recent = seg.tsval;
        }
    }

    /// tcp_validate_incoming() failure: drop; answer with a dupACK unless RST, rate limited
    /// for zero-length segments (tcp_oow_rate_limited).
    fn drop_unacceptable(&mut self, seg: &Segment, reason: &'static str) {
        self.trace_seg("drop", "unacceptable", seg, -1, reason);
        if seg.flags & RST != 0 {
            return;
        }
        if seg.len == 0 && seg.flags & (SYN | FIN) == 0 {
            let limit = self.sysctl.tcp_invalid_ratelimit * 1_000_000;
            let clock = &self.clock; // elapsed jiffies
            if clock.stamp_ticks(self.now) - clock.stamp_ticks(self.rcv.last_oow_ack_ns)
                < clock.usecs_to_ticks(floor_div(limit, 1000))
            {
                self.mib.TCPACKSkippedSeq += 1;
                return;
            }
            self.rcv.last_oow_ack_ns = self.now;
        }
        self.send_dupack(seg);
    }

    // -- tcp_data_queue -------------------------------------------------------------------

    /// Models tcp_data_queue(): in-order, old, beyond-window, partial and OFO cases.
    /// `skb`: already built for an in-order segment (see slow_path).
    pub fn data_queue(&mut self, seg: &Segment, skb: Option<Skb>) {
        let fin = seg.flags & FIN != 0;
        if seg.seq == self.rcv.rcv_nxt {
            if self.receive_window() == 0 && !self.k.zero_window_accepts(self, seg) {
                self.mib.TCPZeroWindowDrop += 1;
                self.out_of_window(seg, "TCP_ZEROWINDOW");
                return;
            }
            self.queue_in_order(seg, seg.seq, seg.len, fin, skb);
            return;
        }
        let end_seq = seg.end_seq();
        if end_seq <= self.rcv.rcv_nxt {
            // wholly old
            self.mib.DelayedACKLost += 1;
            self.set_dsack(seg.seq, end_seq);
            self.out_of_window(seg, "TCP_OLD_DATA");
            return;
        }
        if seg.seq >= self.rcv.rcv_nxt + self.receive_window() {
            // starts beyond the window
            kcall!(self.overwindow_drop());
            self.out_of_window(seg, "TCP_OVERWINDOW");
            return;
        }
        if seg.seq < self.rcv.rcv_nxt {
            // partial overlap
            self.set_dsack(seg.seq, self.rcv.rcv_nxt);
            if self.receive_window() == 0 {
                self.mib.TCPZeroWindowDrop += 1;
                self.out_of_window(seg, "TCP_ZEROWINDOW");
                return;
            }
            // not trimmed: the whole skb is queued (it cannot coalesce: its seq is not the
            // tail's end_seq) and the reader skips the old bytes by offset
            self.queue_in_order(seg, seg.seq, seg.len, fin, None);
            return;
        }
        self.data_queue_ofo(seg);
    }

    /// out_of_window: enter quick-ack mode, schedule an immediate ACK, drop.
    fn out_of_window(&mut self, seg: &Segment, reason: &'static str) {
        self.trace_seg("drop", "out of window", seg, -1, reason);
        self.enter_quickack_mode(TCP_MAX_QUICKACKS);
        self.ack.ack_pending |= ICSK_ACK_SCHED;
        self.ack.ack_pending |= ICSK_ACK_NOW;
    }

    fn queue_in_order(
        &mut self,
        seg: &Segment,
        seq: i64,
        length: i64,
        fin: bool,
        skb: Option<Skb>,
    ) {
        let skb = match skb {
            Some(s) => s,
            None => self.dev.make_skb(
                seq,
                length,
                fin,
                seg.gso_size,
                seg.tx_segs,
                seg.frags as i64,
            ),
        };
        if !kcall!(self.admit_in_order(&skb)) {
            self.mib.TCPRcvQDrop += 1;
            self.trace_seg("drop", "rcvq full", seg, skb.truesize, "PROTO_MEM");
            self.data_ready();
            return;
        }
        let truesize = skb.truesize;
        let coalesced = self.queue_rcv(skb.clone());
        self.trace_seg(
            "rx",
            if coalesced { "coalesced" } else { "queued" },
            seg,
            truesize,
            "",
        );
        if length != 0 {
            self.event_data_recv(seg, &skb);
        }
        if fin {
            self.tcp_fin();
        }
        if !self.mem.ofo_queue.is_empty() {
            self.ofo_queue_drain();
            if self.mem.ofo_queue.is_empty() {
                self.ack.ack_pending |= ICSK_ACK_NOW;
            }
        }
        if !self.rcv.selective_acks.is_empty() {
            self.sack_remove();
        }
        self.fast_path_check();
        self.data_ready();
    }

    /// Models tcp_queue_rcv(): coalesce into the tail or append; advance rcv_nxt. Returns
    /// true when the skb was coalesced (eaten).
    pub fn queue_rcv(&mut self, skb: Skb) -> bool {
        let eaten =
            !self.mem.receive_queue.is_empty() && kcall!(self.try_coalesce(Tail::Receive, &skb));
        let (end_seq, fin) = (skb.end_seq, skb.fin);
        if !eaten {
            let truesize = skb.truesize;
            self.mem.receive_queue.push_back(skb);
            self.charge(truesize);
        }
        let rcv = &mut self.rcv;
        rcv.bytes_received += end_seq - rcv.rcv_nxt - i64::from(fin);
        rcv.rcv_nxt = end_seq;
        eaten
    }

    // -- out-of-order queue ---------------------------------------------------------------

    /// receiver.py `segment_skb`: the skb the ingress device builds for the whole of `seg`
    /// (its FIN included).
    pub fn segment_skb(&self, seg: &Segment) -> Skb {
        self.dev.make_skb(
            seg.seq,
            seg.len,
            seg.flags & FIN != 0,
            seg.gso_size,
            seg.tx_segs,
            seg.frags as i64,
        )
    }

    /// Models tcp_data_queue_ofo(): admission, SACK, insert/merge in sequence order.
    pub fn data_queue_ofo(&mut self, seg: &Segment) {
        let skb = self.segment_skb(seg);
        if !kcall!(self.try_rmem_schedule(&skb, skb.truesize)) {
            self.mib.TCPOFODrop += 1;
            self.trace_seg("drop", "ofo full", seg, skb.truesize, "PROTO_MEM");
            self.data_ready();
            return;
        }
        kcall!(self.ofo_measure_rcv_mss(seg, &skb));
        self.rcv.pred_ok = false;
        self.ack.ack_pending |= ICSK_ACK_SCHED;
        self.mib.TCPOFOQueue += 1;
        let (seq, end) = (skb.seq, skb.end_seq);
        if self
            .mem
            .ofo_queue
            .iter()
            .any(|o| o.seq <= seq && end <= o.end_seq)
        {
            // fully covered: duplicate
            self.mib.TCPOFOMerge += 1;
            self.mib.TCPDSACKOfoSent += 1;
            self.set_dsack(seq, end);
            self.trace_seg("drop", "ofo dup", seg, skb.truesize, "TCP_OFOMERGE");
            return;
        }
        self.sack_new_ofo(seq, end);
        let tail_meets = self.mem.ofo_queue.last().is_some_and(|t| t.end_seq == seq);
        if tail_meets && kcall!(self.try_coalesce(Tail::Ofo, &skb)) {
            if self.conn.sack_ok {
                kcall!(self.grow_window(&skb, true, seg));
            }
            self.trace_seg("rx", "ofo coalesced", seg, skb.truesize, "");
        } else {
            let mut i = 0;
            while i < self.mem.ofo_queue.len() {
                let o = &self.mem.ofo_queue[i];
                if seq <= o.seq && o.end_seq <= end {
                    // new skb covers old ones
                    let o = self.mem.ofo_queue.remove(i);
                    self.uncharge(o.truesize);
                    self.mib.TCPOFOMerge += 1;
                } else {
                    i += 1;
                }
            }
            let at = self.mem.ofo_queue.partition_point(|s| s.seq <= seq);
            self.mem.ofo_queue.insert(at, skb.clone());
            if self.conn.sack_ok {
                kcall!(self.grow_window(&skb, false, seg));
            }
            let peer_released = self.rcv.peer_released;
            let parked = &mut self.mem.ofo_queue[at];
            skb_condense(parked, peer_released);
            let truesize = parked.truesize;
            self.charge(truesize);
            self.trace_seg("rx", "ofo", seg, truesize, "");
        }
        kcall!(self.ofo_rcvbuf_grow());
    }

    /// Models tcp_ofo_queue(): move OFO skbs that became in-order to the receive queue.
    pub fn ofo_queue_drain(&mut self) {
        let mut dsack_high = self.rcv.rcv_nxt; // the end of the new in-order data
        while self
            .mem
            .ofo_queue
            .first()
            .is_some_and(|s| s.seq <= self.rcv.rcv_nxt)
        {
            let skb = self.mem.ofo_queue.remove(0);
            if skb.seq < dsack_high {
                // received twice: D-SACK it
                let (end, high) = self.k.ofo_dsack(self, &skb, dsack_high);
                dsack_high = high;
                self.dsack_extend(skb.seq, end);
            }
            if skb.end_seq <= self.rcv.rcv_nxt {
                // entirely old
                self.uncharge(skb.truesize);
                continue;
            }
            if !self.mem.receive_queue.is_empty() && kcall!(self.try_coalesce(Tail::Receive, &skb))
            {
                self.uncharge(skb.truesize); // the source skb is freed
            } else {
                self.mem.receive_queue.push_back(skb.clone());
            }
            let rcv = &mut self.rcv;
            rcv.bytes_received += skb.end_seq - rcv.rcv_nxt - i64::from(skb.fin);
            rcv.rcv_nxt = skb.end_seq; // an overlapping head is kept: reads skip it
            if skb.fin {
                self.tcp_fin();
                break;
            }
        }
    }

    // -- FIN ------------------------------------------------------------------------------

    /// Models tcp_fin(): the peer has finished sending.
    pub fn tcp_fin(&mut self) {
        self.ack.ack_pending |= ICSK_ACK_SCHED;
        self.rcv.rcv_shutdown = true;
        match self.conn.state {
            TcpState::Established => {
                self.conn.state = TcpState::CloseWait;
                self.enter_pingpong();
            }
            TcpState::FinWait1 => {
                self.conn.state = TcpState::Closing;
                self.ack.ack_pending |= ICSK_ACK_NOW;
            }
            TcpState::FinWait2 => {
                self.conn.state = TcpState::TimeWait;
                self.ack.ack_pending |= ICSK_ACK_NOW;
            }
            _ => {}
        }
        // Out-of-order data after the FIN is dropped, and the SACK state with it, a pending
        // D-SACK included (skb_rbtree_purge + tcp_sack_reset).
        let ofo = std::mem::take(&mut self.mem.ofo_queue);
        for skb in &ofo {
            self.uncharge(skb.truesize);
        }
        if self.conn.sack_ok {
            self.rcv.dsack = None;
            self.rcv.selective_acks.clear();
        }
        self.readable = true;
    }

    /// Models tcp_data_ready(): wake the reader when enough is queued.
    pub fn data_ready(&mut self) {
        let rcv = &self.rcv;
        if rcv.rcv_nxt - rcv.copied_seq >= rcv.rcvlowat || rcv.rcv_shutdown {
            self.readable = true;
        }
    }

    // -- reading --------------------------------------------------------------------------

    /// The application reads up to n bytes. Models tcp_recvmsg_locked(): copy from the head
    /// skb, free skbs once fully consumed, autotune per chunk, then tcp_cleanup_rbuf().
    /// Returns the bytes copied (0 at EOF or when nothing is queued).
    pub fn read(&mut self, now: i64, n: i64) -> i64 {
        self.release_due(now);
        self.set_clock(now);
        if self.mem.receive_queue.is_empty() {
            return 0;
        }
        let mut copied = 0;
        let mut freed = false;
        while copied < n {
            let Some(skb) = self.mem.receive_queue.front() else {
                break;
            };
            let (seq, len, fin, truesize) = (skb.seq, skb.len, skb.fin, skb.truesize);
            let offset = self.rcv.copied_seq - seq;
            let avail = len - offset;
            if avail > 0 {
                let used = avail.min(n - copied);
                self.rcv.copied_seq += used;
                copied += used;
                kcall!(self.rcv_space_adjust());
                if used < avail {
                    break;
                }
            }
            self.mem.receive_queue.pop_front_rewind();
            if fin {
                self.rcv.copied_seq += 1;
                self.eof = true;
            }
            self.uncharge(truesize);
            freed = true;
            if fin {
                break;
            }
        }
        if self.mem.receive_queue.is_empty() {
            self.readable = self.rcv.rcv_shutdown;
        }
        self.rcv.read_untraced += copied;
        let acked = self.cleanup_rbuf(copied);
        if freed || acked {
            let length = self.rcv.read_untraced;
            let x = TraceArgs {
                length,
                ..TraceArgs::default()
            };
            self.trace("read", if freed { "freed" } else { "" }, x);
            self.rcv.read_untraced = 0;
        }
        copied
    }

    /// How many of the reads of n bytes at t0, t0+period, ... (at most `limit`) would
    /// change nothing but copied_seq and the DRS measurement (receiver.py
    /// `count_inert_reads`; see apply_inert_reads).
    pub fn count_inert_reads(&mut self, t0: i64, period: i64, n: i64, limit: i64) -> i64 {
        let Some(head) = self.mem.receive_queue.front() else {
            return 0;
        };
        if n <= 0 || limit <= 0 {
            return 0;
        }
        let left = head.seq + head.len - self.rcv.copied_seq; // bytes before the head is consumed
        let count = limit.min(floor_div(left - 1, n));
        if count <= 0 {
            return 0;
        }
        // tcp_cleanup_rbuf() may zero ack_quick / lower rcv_ssthresh as it decides (as
        // __tcp_select_window() does); planning must not, so look and put them back.
        let saved = (self.ack.ack_quick, self.rcv.rcv_ssthresh);
        let acks = self.cleanup_would_ack(n);
        (self.ack.ack_quick, self.rcv.rcv_ssthresh) = saved;
        if acks {
            return 0;
        }
        let gate = self.k.rcv_space_gate_us(self);
        if gate < 0 {
            return count;
        }
        let rtt_us = self.rcv.rcv_rtt_us8 >> 3;
        let (space, mut seq) = (self.rcv.rcvq_space, self.rcv.rcvq_seq);
        let mut i = first_read_at_or_after(t0, period, gate);
        while i < count {
            let copied_seq = self.rcv.copied_seq + (i + 1) * n;
            if self.k.rcv_space_copied(self, copied_seq, seq) > space {
                return i;
            }
            seq = copied_seq;
            let t_us = floor_div(t0 + i * period, 1000);
            i = first_read_at_or_after(t0, period, t_us + rtt_us);
        }
        count
    }

    /// Apply `count` reads known to be inert (see count_inert_reads): advance copied_seq,
    /// and run DRS exactly at the reads where its RTT gate opens.
    pub fn apply_inert_reads(&mut self, t0: i64, period: i64, n: i64, count: i64) {
        if count <= 0 {
            return;
        }
        let base = self.rcv.copied_seq;
        self.cleanup_would_ack(n); // the first read's side effects; the rest repeat them
        let gate = self.k.rcv_space_gate_us(self);
        if gate >= 0 {
            let mut i = first_read_at_or_after(t0, period, gate);
            while i < count {
                let t = t0 + i * period;
                self.set_clock(t);
                self.rcv.copied_seq = base + (i + 1) * n;
                kcall!(self.rcv_space_adjust());
                let g = self.k.rcv_space_gate_us(self);
                i = first_read_at_or_after(t0, period, g);
            }
        }
        self.set_clock(t0 + (count - 1) * period);
        self.rcv.copied_seq = base + count * n;
        self.rcv.read_untraced += count * n;
    }
}

/// Index of the first read time t0 + i*period whose microsecond clock >= gate_us.
fn first_read_at_or_after(t0: i64, period: i64, gate_us: i64) -> i64 {
    let target = gate_us * 1000;
    if target <= t0 {
        return 0;
    }
    -floor_div(-(target - t0), period)
}
