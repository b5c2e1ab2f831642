//! The send half: segmentation of writes, send window, congestion window (Reno), RTO with
//! exponential backoff and the tcp_retries2 give-up, zero-window persist probes, the tail
//! loss probe.
//!
//! Mirrors tcpsim/core/sender.py (`SendMixin`) as an `impl TcpSocket` block, with its
//! module-level constants. Models tcp_sendmsg()/tcp_write_xmit() [tcp.c, tcp_output.c],
//! tcp_ack() [tcp_input.c] and tcp_retransmit_timer()/tcp_probe_timer() [tcp_timer.c]. The
//! write queue keeps skb boundaries as Linux does; see sender.py's module docstring for the
//! whole story (size goal, tcp_tso_segs, tcp_grow_skb per era, tcp_tso_should_defer,
//! tcp_mss_split_point).

use crate::constants::{
    roundup_pow_of_two, skb_truesize, MAX_TCP_HEADER, SKB_SHINFO, SKB_STRUCT, TCP_INIT_CWND,
};

/// snd_ssthresh before any loss (TCP_INFINITE_SSTHRESH [include/net/tcp.h]).
pub const INFINITE_SSTHRESH: i64 = 0x7FFF_FFFF;
/// Head of a sender skb (tcp_stream_alloc_skb).
pub const SND_SKB_OVERHEAD: i64 = skb_truesize(256);
/// sk_gso_max_size of a TCP socket on a device with the legacy 64 KiB GSO limit (veth, lo):
/// the device's limit less MAX_TCP_HEADER + 1 (sk_dst_gso_max_size [net/core/sock.c]).
pub const SK_GSO_MAX_SIZE: i64 = 65536 - (MAX_TCP_HEADER + 1);
/// GSO_MAX_SEGS.
pub const SK_GSO_MAX_SEGS: i64 = 65535;
/// net.ipv4.tcp_min_tso_segs.
pub const TCP_MIN_TSO_SEGS: i64 = 2;
/// net.ipv4.tcp_tso_win_divisor.
pub const TCP_TSO_WIN_DIVISOR: i64 = 3;
/// net.ipv4.tcp_tso_rtt_log.
pub const TCP_TSO_RTT_LOG: i64 = 9;
/// net.ipv4.tcp_pacing_ss_ratio.
pub const TCP_PACING_SS_RATIO: i64 = 200;
/// net.ipv4.tcp_pacing_ca_ratio.
pub const TCP_PACING_CA_RATIO: i64 = 120;
/// sk_pacing_shift: about 1 ms of data per TSO packet.
pub const SK_PACING_SHIFT: i64 = 10;

/// Every constant above by its Python name (sender.py), for the differential test.
pub const ALL: &[(&str, i64)] = &[
    ("INFINITE_SSTHRESH", INFINITE_SSTHRESH),
    ("SND_SKB_OVERHEAD", SND_SKB_OVERHEAD),
    ("SK_GSO_MAX_SIZE", SK_GSO_MAX_SIZE),
    ("SK_GSO_MAX_SEGS", SK_GSO_MAX_SEGS),
    ("TCP_MIN_TSO_SEGS", TCP_MIN_TSO_SEGS),
    ("TCP_TSO_WIN_DIVISOR", TCP_TSO_WIN_DIVISOR),
    ("TCP_TSO_RTT_LOG", TCP_TSO_RTT_LOG),
    ("TCP_PACING_SS_RATIO", TCP_PACING_SS_RATIO),
    ("TCP_PACING_CA_RATIO", TCP_PACING_CA_RATIO),
    ("SK_PACING_SHIFT", SK_PACING_SHIFT),
];

use crate::arith::{ceil_div, floor_div};
use crate::cong::{CA_EVENT_CWND_RESTART, CA_EVENT_TX_START, TCP_CA_LOSS};
use crate::constants::{
    NS_PER_MS, NS_PER_US, TCP_MSS_DEFAULT, TCP_RTO_MAX_NS, TCP_RTO_MIN_NS, TCP_SYNACK_RETRIES,
    TCP_SYN_RETRIES,
};
use crate::recovery::{TCPCB_EVER_RETRANS, TCPCB_SACKED_ACKED};
use crate::rewind::Rewind;
use crate::segment::{Segment, ACK, FIN, PSH};
use crate::socket::{TcpSocket, TraceArgs};
use crate::state::{RtxEntry, TcpState};

/// `_tso_should_defer()` results: send now, defer, defer and count as cwnd-limited.
const DEFER: i64 = 1;
const DEFER_CWND_LIMITED: i64 = 2;

/// XMIT_STATES of tcpsim/core/state.py: states that transmit data.
fn xmit_state(s: TcpState) -> bool {
    matches!(
        s,
        TcpState::Established
            | TcpState::CloseWait
            | TcpState::FinWait1
            | TcpState::LastAck
            | TcpState::Closing
    )
}

/// SEND_STATES: states in which write() queues data.
fn send_state(s: TcpState) -> bool {
    matches!(s, TcpState::Established | TcpState::CloseWait)
}

impl TcpSocket {
    // -- send buffer ----------------------------------------------------------------------

    /// Models tcp_sndbuf_expand() [tcp_input.c, 5.15 to 6.18 alike]: the congestion
    /// control's factor times max(TCP_INIT_CWND, snd_cwnd, reordering + 1) segments of
    /// `sndbuf_per_mss()` each, at most tcp_wmem[2] (sender.py `sndbuf_expand`).
    pub fn sndbuf_expand(&mut self) {
        let snd = &self.snd;
        let nr_segs = TCP_INIT_CWND.max(snd.snd_cwnd).max(snd.reordering + 1);
        let sndmem = self.ca_sndbuf_expand() * nr_segs * self.sndbuf_per_mss();
        let snd = &mut self.snd;
        if snd.sk_sndbuf < sndmem {
            snd.sk_sndbuf = sndmem.min(self.sysctl.tcp_wmem.2);
        }
    }

    /// tcp_sndbuf_expand()'s per-segment memory [tcp_input.c, 6.18]: the larger of the
    /// peer's MSS option (rx_opt.mss_clamp) and mss_cache, plus MAX_TCP_HEADER and the
    /// aligned skb_shared_info, rounded up to a power of two, plus the aligned sk_buff
    /// (sender.py `sndbuf_per_mss`).
    pub fn sndbuf_per_mss(&self) -> i64 {
        let conn = &self.conn;
        let head = conn.peer_mss.max(conn.mss_cache) + MAX_TCP_HEADER + SKB_SHINFO;
        roundup_pow_of_two(head) + SKB_STRUCT
    }

    /// tcp_check_space() [tcp_input.c, 5.15 and 6.18 alike]: when a writer found the send
    /// buffer full (SOCK_NOSPACE), tcp_new_space(): grow it if tcp_should_expand_sndbuf()
    /// allows, then sk_stream_write_space() clears SOCK_NOSPACE once it is writeable
    /// (sender.py `check_space`).
    pub fn check_space(&mut self) {
        if !self.snd.sock_nospace {
            return;
        }
        if self.should_expand_sndbuf() {
            self.sndbuf_expand();
        }
        if self.stream_writeable() {
            self.snd.sock_nospace = false;
        }
    }

    /// tcp_should_expand_sndbuf() [tcp_input.c, 5.15-6.18]: no SO_SNDBUF lock (the model has
    /// no SO_SNDBUF), no tcp_mem or memcg pressure nor the host's pool at tcp_mem[0] or
    /// more, the flight below cwnd.
    fn should_expand_sndbuf(&self) -> bool {
        !self.proto.under_pressure()
            && self.proto.memory_allocated() < self.proto.limit(0)
            && !self.memcg_pressure()
            && self.packets_in_flight() < self.snd.snd_cwnd
    }

    /// __sk_stream_is_writeable(sk, 1) [include/net/sock.h, 6.18]: free space at least half
    /// the queued bytes, below the buffer, unsent bytes below half tcp_notsent_lowat
    /// (sender.py `_stream_writeable`).
    fn stream_writeable(&self) -> bool {
        let snd = &self.snd;
        let queued = self.wmem_queued();
        snd.sk_sndbuf - queued >= queued >> 1
            && queued < snd.sk_sndbuf
            && (snd.write_seq - snd.snd_nxt) << 1 < self.sysctl.tcp_notsent_lowat
    }

    /// sk_wmem_queued: payload plus one sender-skb overhead per queued skb.
    pub fn wmem_queued(&self) -> i64 {
        let snd = &self.snd;
        let nskbs = (snd.rtx_queue.len() + snd.write_queue.len()) as i64;
        (snd.write_seq - snd.snd_una) + nskbs * SND_SKB_OVERHEAD
    }

    /// Payload bytes a write() may still queue (sk_stream_memory_free), 0 when full.
    pub fn send_space(&self) -> i64 {
        let free = self.snd.sk_sndbuf - self.wmem_queued();
        if free <= 0 {
            return 0;
        }
        let mss = if self.conn.mss_cache != 0 {
            self.conn.mss_cache
        } else {
            536
        };
        floor_div(free * mss, mss + SND_SKB_OVERHEAD).max(0)
    }

    /// Would write() queue anything now (tcp_sendmsg_locked)? See sender.py `can_queue`.
    pub fn can_queue(&self) -> bool {
        let snd = &self.snd;
        if !send_state(self.conn.state) || snd.snd_shutdown {
            return false;
        }
        snd.write_queue
            .back()
            .is_some_and(|&l| l < self.size_goal())
            || self.memory_free()
    }

    /// sk_stream_memory_free() [include/net/sock.h] and tcp_stream_memory_free() [tcp.c]:
    /// sk_wmem_queued < sk_sndbuf, and the unsent bytes below tcp_notsent_lowat (sender.py
    /// `_memory_free`).
    fn memory_free(&self) -> bool {
        let snd = &self.snd;
        self.wmem_queued() < snd.sk_sndbuf
            && snd.write_seq - snd.snd_nxt < self.sysctl.tcp_notsent_lowat
    }

    // -- writing --------------------------------------------------------------------------

    /// The application writes n bytes; returns how many were queued (0 when the send buffer
    /// is full or the connection is not open).
    pub fn write(&mut self, now: i64, n: i64) -> i64 {
        self.release_due(now);
        self.set_clock(now);
        if !send_state(self.conn.state) || self.snd.snd_shutdown {
            return 0;
        }
        let take = self.queue_bytes(n);
        if take <= 0 {
            self.writable = false;
            return 0;
        }
        self.snd.write_seq += take;
        let x = TraceArgs {
            length: take,
            ..TraceArgs::default()
        };
        self.trace("write", "", x);
        self.write_xmit(false);
        self.wmem_settle();
        take
    }

    /// tcp_xmit_size_goal() [tcp.c, v6.18]: bytes per write-queue skb, a whole number of
    /// MSS: the GSO size, bounded to half the peer's largest window, at least one MSS.
    pub fn size_goal(&self) -> i64 {
        let mss = self.conn.mss_cache;
        let goal = self.bound_to_half_wnd(SK_GSO_MAX_SIZE);
        (floor_div(goal, mss).min(SK_GSO_MAX_SEGS) * mss).max(mss)
    }

    /// tcp_bound_to_half_wnd() [include/net/tcp.h, v6.18]: a packet size bounded to half the
    /// peer's largest window seen (see sender.py `bound_to_half_wnd`); bounds the size goal
    /// and the MSS tcp_sync_mss() sets.
    pub fn bound_to_half_wnd(&self, pktsize: i64) -> i64 {
        let snd = &self.snd;
        let cutoff = if snd.max_window > TCP_MSS_DEFAULT {
            snd.max_window >> 1
        } else {
            snd.max_window
        };
        if cutoff != 0 && pktsize > cutoff {
            cutoff.max(68 - self.conn.tcp_header_len)
        } else {
            pktsize
        }
    }

    /// tcp_tso_segs() / tcp_tso_autosize() [tcp_output.c, v6.18]: segments per transmitted
    /// skb (see sender.py `tso_segs`).
    pub fn tso_segs(&mut self) -> i64 {
        let mss = self.conn.mss_cache;
        let rate = self.snd.pacing_rate;
        let nbytes = if rate < 0 {
            SK_GSO_MAX_SIZE
        } else {
            rate >> SK_PACING_SHIFT
        };
        let nbytes = (nbytes + self.k.tso_rtt_bytes(self)).min(SK_GSO_MAX_SIZE);
        floor_div(nbytes, mss).clamp(TCP_MIN_TSO_SEGS, SK_GSO_MAX_SEGS)
    }

    /// tcp_update_pacing_rate() [tcp_input.c, v6.18]: 200 % of cwnd * mss / srtt in slow
    /// start, 120 % after; unlimited before the first RTT sample. `cwnd` 0: snd_cwnd.
    pub fn update_pacing_rate(&mut self, cwnd: i64) {
        let snd = &mut self.snd;
        if snd.srtt_us8 == 0 {
            return;
        }
        let cwnd = if cwnd != 0 { cwnd } else { snd.snd_cwnd };
        let ratio = if cwnd < floor_div(snd.snd_ssthresh, 2) {
            TCP_PACING_SS_RATIO
        } else {
            TCP_PACING_CA_RATIO
        };
        let segs = cwnd.max(snd.rtx_queue.len() as i64);
        let rate = self.conn.mss_cache as i128 * 80_000 * ratio as i128 * segs as i128;
        snd.pacing_rate = i64::try_from(rate.div_euclid(snd.srtt_us8 as i128))
            .expect("pacing rate overflowed i64");
    }

    /// tcp_sendmsg_locked() [tcp.c, v6.18]: top up the unsent tail skb to the size goal,
    /// then new skbs; returns the bytes queued (sender.py `_queue_bytes`). Each skb's share of
    /// the write is copied into the writer's page frag (pagefrag.rs).
    fn queue_bytes(&mut self, n: i64) -> i64 {
        let goal = self.size_goal();
        let mut free = self
            .pfrag
            .page_free(self.snd.snd_una == self.snd.write_seq, self.snd.wstamp_ns);
        let mut done = 0;
        if let Some(last) = self.snd.write_queue.back_mut() {
            if *last < goal {
                done = (goal - *last).min(n);
                *last += done;
                self.pfrag.copy(self.snd.write_seq, done, free);
                free = false;
            }
        }
        if done < n {
            let mut queued = self.wmem_queued() + done;
            let sndbuf = self.snd.sk_sndbuf;
            let mut notsent = self.snd.write_seq + done - self.snd.snd_nxt;
            let lowat = self.sysctl.tcp_notsent_lowat;
            if queued < sndbuf && notsent < lowat {
                self.slow_start_after_idle_check(); // tcp_skb_entail()
            }
            while done < n && queued < sndbuf && notsent < lowat {
                let take = goal.min(n - done);
                self.snd.write_queue.push_back(take);
                self.pfrag.copy(self.snd.write_seq + done, take, free);
                free = false;
                done += take;
                queued += take + SND_SKB_OVERHEAD;
                notsent += take;
            }
            if done < n {
                self.snd.sock_nospace = true; // wait_for_space: SOCK_NOSPACE
            }
        }
        done
    }

    /// tcp_slow_start_after_idle_check() [include/net/tcp.h, 5.15] and tcp_cwnd_restart()
    /// [tcp_output.c], from tcp_skb_entail() and tcp_ack_update_window() [tcp_input.c]:
    /// see sender.py `_slow_start_after_idle_check`.
    fn slow_start_after_idle_check(&mut self) {
        if self.sysctl.tcp_slow_start_after_idle == 0 || !self.snd.rtx_queue.is_empty() {
            return;
        }
        let mut delta = self.clock.ticks(self.now) - self.clock.ticks(self.ack.lsndtime);
        let rto = self.clock.to_ticks(self.snd.rto);
        if delta <= rto {
            return;
        }
        self.ca_cwnd_event(CA_EVENT_CWND_RESTART);
        let snd = &mut self.snd;
        let mut cwnd = snd.snd_cwnd;
        if !snd.in_recovery {
            // tcp_current_ssthresh()
            snd.snd_ssthresh = snd.snd_ssthresh.max((cwnd >> 1) + (cwnd >> 2));
        }
        let restart = snd.initcwnd.min(cwnd);
        delta -= rto;
        while delta > 0 && cwnd > restart {
            cwnd >>= 1;
            delta -= rto;
        }
        snd.snd_cwnd = cwnd.max(restart);
    }

    /// tcp_nagle_check(): with Nagle on, a small segment waits while an earlier small
    /// segment is still unacknowledged (Minshall's variant).
    fn nagle_holds(&self, small: bool) -> bool {
        let snd = &self.snd;
        small
            && !snd.nodelay
            && !snd.rtx_queue.is_empty()
            && snd.snd_una < snd.snd_sml
            && snd.snd_sml <= snd.snd_nxt
    }

    /// shutdown(SHUT_WR)/close(): queue a FIN after the data.
    pub fn shutdown_write(&mut self, now: i64) {
        self.set_clock(now);
        if self.snd.snd_shutdown {
            return;
        }
        self.snd.snd_shutdown = true;
        self.snd.fin_queued = true;
        match self.conn.state {
            TcpState::Established => self.conn.state = TcpState::FinWait1,
            TcpState::CloseWait => self.conn.state = TcpState::LastAck,
            _ => {}
        }
        self.write_xmit(false);
        self.wmem_settle();
    }

    /// tcp_packets_in_flight(): sent and not acked, less those SACKed and those marked lost
    /// and not yet retransmitted (packets_out - sacked_out - lost_out + retrans_out).
    pub fn packets_in_flight(&self) -> i64 {
        self.snd.rtx_queue.len() as i64 - self.snd.lost_out - self.snd.sacked_out
    }

    /// Mark retransmit-queue entry `i` lost: it leaves the flight until retransmitted.
    /// A lost segment retransmitted and marked lost again counts TCPLostRetransmit
    /// (tcp_mark_skb_lost() [tcp_input.c, 6.18]).
    pub(crate) fn mark_lost(&mut self, i: usize) {
        let e = &mut self.snd.rtx_queue[i];
        if !(e.lost != 0 && e.retrans == 0) {
            if e.lost != 0 {
                self.mib.TCPLostRetransmit += 1;
            }
            e.lost = 1;
            e.retrans = 0;
            self.snd.lost_out += 1;
        }
    }

    /// Models tcp_write_xmit(): send what cwnd, the peer's window and Nagle allow;
    /// retransmissions of lost segments go first (see sender.py `write_xmit`). `probe` is
    /// the loss probe's call (push_one = 2, TCP_NAGLE_OFF).
    pub fn write_xmit(&mut self, probe: bool) {
        {
            let snd = &self.snd;
            let fin_owed = snd.fin_queued && !snd.fin_sent;
            if snd.write_queue.is_empty() && snd.lost_out == 0 && !fin_owed {
                return; // nothing to send (the common case)
            }
        }
        if !xmit_state(self.conn.state) {
            return;
        }
        self.retransmit_lost();
        let mss = self.conn.mss_cache;
        let start = self.packets_in_flight();
        let mut inflight = start;
        let wnd_end = self.snd.snd_una + self.snd.snd_wnd;
        let max_segs = self.tso_segs();
        let mut deferred_limited = false;
        while !self.snd.write_queue.is_empty() {
            let cwnd = self.snd.snd_cwnd;
            let quota = if inflight >= cwnd {
                if !probe {
                    break;
                }
                1 // force out the probe
            } else {
                // tcp_cwnd_test() (at most half the cwnd per skb), capped at tcp_tso_segs()
                (cwnd >> 1).max(1).min(cwnd - inflight).min(max_segs)
            };
            let missing = quota * mss - self.snd.write_queue[0];
            if missing > 0 && self.snd.write_queue.len() > 1 {
                // tcp_grow_skb(), 6.10+: the era edits the write queue, lent out for the call
                let mut q = std::mem::take(&mut self.snd.write_queue);
                self.k.grow_skb(self, &mut q, missing);
                self.snd.write_queue = q;
            }
            let skb_len = self.snd.write_queue[0];
            let is_tail = self.snd.write_queue.len() == 1;
            if self.snd.snd_nxt + mss.min(skb_len) > wnd_end {
                break; // tcp_snd_wnd_test()
            }
            let limit = if skb_len <= mss {
                // one segment
                if is_tail && !probe && self.nagle_holds(skb_len < mss) {
                    break; // tcp_nagle_test()
                }
                skb_len
            } else {
                if !probe {
                    let defer =
                        self.tso_should_defer(skb_len, is_tail, wnd_end, inflight, max_segs);
                    if defer != 0 {
                        deferred_limited = defer == DEFER_CWND_LIMITED;
                        break;
                    }
                }
                self.mss_split_point(skb_len, is_tail, wnd_end, quota, probe)
            };
            let mut sent = 0;
            let segs = ceil_div(limit, mss); // tcp_skb_pcount() sent
            if self.snd.gso_whole && segs > 1 {
                // one GSO skb on the wire
                self.send_new(self.snd.snd_nxt, limit, inflight, segs);
                sent = limit;
                inflight += segs;
            }
            while sent < limit {
                let seg_len = mss.min(limit - sent);
                self.send_new(self.snd.snd_nxt, seg_len, inflight, segs);
                sent += seg_len;
                inflight += 1;
            }
            if sent < skb_len {
                self.snd.write_queue[0] = skb_len - sent; // tso_fragment(): rest stays
            } else {
                self.snd.write_queue.pop_front_rewind();
            }
            if self.k.new_data_checks_space(self) {
                self.check_space(); // tcp_event_new_data_sent()
            }
            if probe {
                break; // push_one
            }
        }
        let limited = deferred_limited || inflight >= self.snd.snd_cwnd;
        if self.snd.in_recovery && !self.snd.in_loss && self.conn.sack_ok {
            self.snd.prr_out += inflight - start; // tcp_in_cwnd_reduction()
        }
        if inflight > start || limited {
            self.cwnd_validate(limited);
            if inflight > start && !probe {
                self.schedule_loss_probe(false);
            }
        }
        let snd = &self.snd;
        if snd.fin_queued && !snd.fin_sent && snd.write_queue.is_empty() {
            self.send_fin();
        }
        let snd = &self.snd;
        if snd.rtx_queue.is_empty() && !snd.write_queue.is_empty() && snd.probe_deadline == 0 {
            // tcp_check_probe_timer()
            self.snd.probe_deadline = self.reset_xmit_timer(self.probe0_base());
        }
    }

    /// tcp_mss_split_point() [tcp_output.c, v6.18]: bytes of the head skb to send now.
    fn mss_split_point(
        &self,
        skb_len: i64,
        is_tail: bool,
        wnd_end: i64,
        quota: i64,
        nagle_off: bool,
    ) -> i64 {
        let mss = self.conn.mss_cache;
        let window = wnd_end - self.snd.snd_nxt;
        let max_len = mss * quota;
        if max_len <= window && !is_tail {
            return max_len.min(skb_len);
        }
        let needed = skb_len.min(window);
        if max_len <= needed {
            return max_len;
        }
        let partial = needed.rem_euclid(mss);
        if partial != 0 && !nagle_off && self.nagle_holds(true) {
            return needed - partial;
        }
        needed
    }

    /// tcp_tso_should_defer() [tcp_output.c, v6.18]: see sender.py `_tso_should_defer`.
    /// Returns 0 (send), DEFER or DEFER_CWND_LIMITED.
    fn tso_should_defer(
        &mut self,
        skb_len: i64,
        is_tail: bool,
        wnd_end: i64,
        inflight: i64,
        max_segs: i64,
    ) -> i64 {
        let snd = &self.snd;
        if snd.in_recovery || self.now - snd.wstamp_ns > NS_PER_MS {
            return 0;
        }
        let mss = self.conn.mss_cache;
        let send_win = wnd_end - snd.snd_nxt;
        let cong_win = (snd.snd_cwnd - inflight) * mss;
        let limit = send_win.min(cong_win);
        if limit >= max_segs * mss {
            return 0;
        }
        if !is_tail && limit >= skb_len {
            return 0;
        }
        if limit >= floor_div(snd.snd_wnd.min(snd.snd_cwnd * mss), TCP_TSO_WIN_DIVISOR) {
            return 0;
        }
        let Some(head) = snd.rtx_queue.front() else {
            return 0;
        };
        let srtt_ns = snd.srtt_us8 * (NS_PER_US >> 3);
        let how_far = head.tx_ns + srtt_ns - self.now;
        if how_far > self.k.tso_defer_ack_window(self, srtt_ns) {
            return 0;
        }
        if cong_win < send_win && cong_win <= skb_len {
            return DEFER_CWND_LIMITED; // *is_cwnd_limited = true
        }
        DEFER
    }

    /// Send new data [seq, seq + length); `inflight`: packets_in_flight() before it (the
    /// caller's count: write_xmit keeps one for its cwnd test); `segs`: the segment count of
    /// the skb it is cut from (above 1: software GSO makes each a fresh skb).
    ///
    /// `length` above one MSS: the whole skb goes out as one GSO skb of `segs` segments
    /// (`SndState::gso_whole`, gso_size = MSS), as tcp_transmit_skb() [tcp_output.c, 6.18]
    /// hands a TSO device one skb per transmission: one tcp_event_data_sent(), one ACK
    /// carried; the retransmit queue keeps one entry per segment (the model's packets_out)
    /// and tcp_event_new_data_sent() counts tcp_skb_pcount() segments.
    fn send_new(&mut self, seq: i64, length: i64, inflight: i64, segs: i64) {
        let mss = self.conn.mss_cache;
        let psh = if seq + length == self.snd.write_seq {
            PSH
        } else {
            0
        };
        let mut seg = self.make_segment(seq, length, ACK | psh);
        seg.tx_segs = segs;
        seg.frags = self.pfrag.frags(seq, length) as i32;
        if length > mss {
            seg.gso_size = mss;
        }
        if inflight == 0 {
            self.ca_cwnd_event(CA_EVENT_TX_START); // tcp_event_data_sent()
        }
        let now = self.now;
        let snd = &mut self.snd;
        snd.snd_nxt = seq + length;
        if length % mss != 0 {
            snd.snd_sml = snd.snd_nxt; // tcp_minshall_update(): len < tcp_skb_pcount() * mss
        }
        let mut start = seq;
        while start < seq + length {
            snd.rtx_queue.push_back(RtxEntry {
                seq: start,
                end: (start + mss).min(seq + length),
                tx_ns: now,
                retrans: 0,
                lost: 0,
                is_fin: 0,
                sacked: 0,
            });
            self.mib.TCPOrigDataSent += 1; // tcp_event_new_data_sent()
            start += mss;
        }
        self.data_sent();
        self.emit(seg, false);
    }

    fn send_fin(&mut self) {
        let seg = self.make_segment(self.snd.snd_nxt, 0, ACK | FIN);
        let snd = &mut self.snd;
        snd.rtx_queue.push_back(RtxEntry {
            seq: snd.snd_nxt,
            end: snd.snd_nxt + 1,
            tx_ns: self.now,
            retrans: 0,
            lost: 0,
            is_fin: 1,
            sacked: 0,
        });
        snd.snd_nxt += 1;
        snd.write_seq += 1;
        snd.fin_sent = true;
        self.mib.TCPOrigDataSent += 1; // tcp_event_new_data_sent()
        self.data_sent();
        self.emit(seg, false);
    }

    /// tcp_event_data_sent() + tcp_event_new_data_sent(): ping-pong and RTO arming.
    fn data_sent(&mut self) {
        self.snd.wstamp_ns = self.now; // __tcp_transmit_skb(), no pacing
        self.ack_sent();
        let ack = &mut self.ack;
        if self.now - ack.ack_lrcvtime < ack.ack_ato {
            ack.ack_pingpong += 1;
        }
        ack.lsndtime = self.now;
        if self.snd.rto_deadline == 0 {
            self.snd.rto_deadline = self.reset_xmit_timer(self.snd.rto);
        }
        self.snd.probe_deadline = 0;
    }

    /// Models tcp_xmit_retransmit_queue() [tcp_output.c, 6.18]: retransmit segments marked
    /// lost, as cwnd allows, each counted TCPFastRetrans or, in Loss, TCPSlowStartRetrans
    /// (see sender.py `_retransmit_lost`).
    pub(crate) fn retransmit_lost(&mut self) {
        if self.snd.lost_out == 0 {
            return;
        }
        let sack = self.conn.sack_ok;
        let mut inflight = self.packets_in_flight();
        let mut i = 0;
        while i < self.snd.rtx_queue.len() {
            if inflight >= self.snd.snd_cwnd || self.snd.lost_out == 0 {
                break;
            }
            let e = self.snd.rtx_queue[i];
            if e.lost != 0 && e.retrans == 0 {
                self.retransmit(i, false);
                inflight += 1;
                if self.snd.in_loss {
                    self.mib.TCPSlowStartRetrans += 1;
                } else {
                    self.mib.TCPFastRetrans += 1;
                    if sack && self.snd.in_recovery {
                        self.snd.prr_out += 1;
                    }
                }
                if sack && i == 0 {
                    self.snd.rto_deadline = self.reset_xmit_timer(self.snd.rto);
                }
            }
            i += 1;
        }
    }

    /// Models tcp_retransmit_skb(): resend retransmit-queue entry `i`. A loss probe calls
    /// the inner __tcp_retransmit_skb() directly (`tlp`), which leaves retrans_stamp alone.
    fn retransmit(&mut self, i: usize, tlp: bool) {
        let e = self.snd.rtx_queue[i];
        if self.snd.retrans_stamp == 0 && !tlp {
            self.snd.retrans_stamp = e.tx_ns;
        }
        if e.lost != 0 && e.retrans == 0 {
            self.snd.lost_out -= 1;
        }
        let seg = if e.is_fin != 0 {
            self.make_segment(e.seq, 0, ACK | FIN)
        } else {
            let mut seg = self.make_segment(e.seq, e.end - e.seq, ACK | PSH);
            seg.frags = self.pfrag.frags(e.seq, e.end - e.seq) as i32;
            seg
        };
        let now = self.now;
        let e = &mut self.snd.rtx_queue[i];
        e.retrans += 1;
        e.sacked |= TCPCB_EVER_RETRANS;
        e.tx_ns = now;
        self.snd.wstamp_ns = now;
        self.ack.lsndtime = now; // tcp_event_data_sent(), as for new data
        self.mib.TCPRetransSegs += 1;
        self.emit(seg, true);
    }

    // -- ACK processing -------------------------------------------------------------------

    /// Models tcp_ack(): window update, cleaning the retransmit queue, RTT, cwnd, recovery,
    /// persist-timer handling. Returns -1 for an unacceptable ACK. `slowpath`: not the
    /// header-prediction fast path (FLAG_SLOWPATH; see sender.py `tcp_ack`).
    pub fn tcp_ack(&mut self, seg: &Segment, slowpath: bool) -> i64 {
        let ack = seg.ack;
        if ack > self.snd.snd_nxt {
            self.send_ack();
            return -1;
        }
        if ack < self.snd.snd_una {
            if ack < self.snd.snd_una - self.snd.max_window.min(self.snd.bytes_acked) {
                self.send_ack(); // challenge ACK
                return -1;
            }
            if self.conn.sack_ok && !seg.sacks.is_empty() {
                self.count_dsack(&seg.sacks, ack); // old_ack: tcp_sacktag_write_queue()
            }
            return 0;
        }
        let nwin = seg.win << self.conn.snd_wscale;
        let prior_una = self.snd.snd_una;
        self.count_ack(seg, slowpath);
        let win_update = self.k.may_update_window(self, seg, ack, nwin); // FLAG_WIN_UPDATE
        if win_update {
            // tcp_ack_update_window()
            let changed = nwin != self.snd.snd_wnd;
            self.snd.snd_wnd = nwin;
            self.snd.snd_wl1 = seg.seq;
            if changed && !self.snd.write_queue.is_empty() {
                // a window that opens on queued data after an idle spell restarts cwnd,
                // as a new skb would (a reopened zero window gets initcwnd, not the old cwnd)
                self.slow_start_after_idle_check();
            }
            if nwin > self.snd.max_window {
                self.snd.max_window = nwin;
            }
        }
        let snd = &mut self.snd;
        snd.rcv_tstamp = self.now;
        snd.probes_out = 0;
        let prior_packets = !snd.rtx_queue.is_empty();
        let sack = if self.conn.sack_ok {
            self.sack_scoreboard(seg, ack)
        } else {
            None
        };
        if ack > prior_una {
            let tsecr = if self.conn.ts_ok { seg.tsecr } else { -1 };
            self.clean_rtx_queue(ack, sack, tsecr);
        } else if let Some(sack) = sack {
            self.sack_dupack(ack, sack);
        } else if !self.conn.sack_ok
            && seg.len == 0
            && !win_update
            && !self.snd.rtx_queue.is_empty()
            && seg.flags & FIN == 0
        {
            self.dupack(); // FLAG_NOT_DUP is clear
        }
        if self.snd.tlp_high_seq != 0 {
            self.process_tlp_ack(seg, ack, prior_una, win_update);
        }
        if ack > prior_una && !self.schedule_loss_probe(true) {
            self.snd.tlp_deadline = 0; // tcp_set_xmit_timer(): the RTO
        }
        if prior_packets {
            self.update_pacing_rate(0); // tcp_cong_control()
        }
        if self.snd.rtx_queue.is_empty() {
            self.snd.rto_deadline = 0;
            if !self.snd.write_queue.is_empty() {
                self.ack_probe();
            }
        }
        self.write_xmit(false);
        self.check_space(); // tcp_data_snd_check()
        0
    }

    /// tcp_ack() [tcp_input.c, 6.18]: TCPHPAcks for an ACK advancing snd_una on the fast
    /// path (no SACK blocks), else TCPPureAcks for one without data, SYN or FIN (see
    /// sender.py `_count_ack`).
    fn count_ack(&mut self, seg: &Segment, slowpath: bool) {
        if !slowpath && seg.sacks.is_empty() && seg.ack > self.snd.snd_una {
            self.mib.TCPHPAcks += 1;
        } else if seg.end_seq() == seg.seq {
            self.mib.TCPPureAcks += 1;
        }
    }

    /// A SACK connection's ACK: tag the scoreboard (see sender.py `_sack_scoreboard`).
    /// Returns (newly SACKed, SACK RTT in ns or -1) when tcp_fastretrans_alert() has work.
    fn sack_scoreboard(&mut self, seg: &Segment, ack: i64) -> Option<(i64, i64)> {
        let (mut newly, mut rtt_ns) = (0, -1);
        if !seg.sacks.is_empty() {
            self.count_dsack(&seg.sacks, ack);
        }
        if !seg.sacks.is_empty() && !self.snd.rtx_queue.is_empty() {
            let (n, _dsack, rtt) = self.sacktag_write_queue(&seg.sacks, ack);
            newly = n;
            rtt_ns = rtt;
        }
        let snd = &self.snd;
        if seg.sacks.is_empty() && !snd.in_recovery && snd.sacked_out == 0 && snd.lost_out == 0 {
            return None;
        }
        Some((newly, rtt_ns))
    }

    /// A SACK connection's ACK that does not advance snd_una: the SACK RTT sample, then
    /// tcp_fastretrans_alert().
    fn sack_dupack(&mut self, ack: i64, sack: (i64, i64)) {
        let (newly, rtt_ns) = sack;
        if rtt_ns >= 0 {
            self.rtt_sample(rtt_ns);
        }
        self.fastretrans_alert(ack, ack, newly);
    }

    /// tcp_ack_update_rtt() and the congestion control's pkts_acked() with one RTT sample
    /// (at least 1 us).
    fn rtt_sample(&mut self, rtt_ns: i64) {
        let rtt_us = floor_div(rtt_ns, NS_PER_US).max(1);
        self.rtt_estimator(rtt_us);
        self.ca_pkts_acked(rtt_us); // the ack_sample's rtt_us
    }

    /// Models tcp_clean_rtx_queue() [tcp_input.c] (see sender.py `_clean_rtx_queue`): the
    /// RTT sample as tcp_ack_update_rtt() takes it -- a never-retransmitted segment's
    /// (Karn), else the SACK sample, else the ACK's timestamp echo `tsecr`.
    fn clean_rtx_queue(&mut self, ack: i64, sack: Option<(i64, i64)>, tsecr: i64) {
        let mut acked_pkts = 0;
        let mut rtt_ns = -1;
        let prior_una = self.snd.snd_una;
        let sack_ok = self.conn.sack_ok;
        let mut reord = self.snd.snd_nxt;
        while self.snd.rtx_queue.front().is_some_and(|e| e.end <= ack) {
            let e = self.snd.rtx_queue.pop_front_rewind().expect("checked");
            acked_pkts += 1;
            if e.sacked & TCPCB_SACKED_ACKED == 0 {
                self.mib.TCPDelivered += 1; // tcp_newly_delivered(); a SACKed one was
            }
            if e.lost != 0 && e.retrans == 0 {
                self.snd.lost_out -= 1;
            }
            if sack_ok {
                self.sack_acked(&e, &mut reord);
            }
            if e.retrans == 0 {
                rtt_ns = self.now - e.tx_ns;
            }
        }
        if sack_ok && acked_pkts > 0 {
            let fack = if self.snd.sacked_out != 0 {
                self.snd.highest_sack
            } else {
                ack
            };
            self.check_sack_reordering(reord, fack);
        }
        if let Some((_, sack_rtt)) = sack {
            if rtt_ns < 0 {
                rtt_ns = sack_rtt;
            }
        }
        if rtt_ns < 0 && acked_pkts > 0 {
            rtt_ns = self.tsopt_rtt_us(tsecr) * NS_PER_US; // -1 us: none, stays negative
        }
        let snd = &mut self.snd;
        if let Some(head) = snd.rtx_queue.front_mut() {
            if head.seq < ack {
                head.seq = ack; // partially acked segment
            }
        }
        snd.bytes_acked += ack - snd.snd_una;
        snd.snd_una = ack;
        self.pfrag.release(ack);
        let snd = &mut self.snd;
        snd.retransmits = 0;
        snd.dupacks = 0;
        if rtt_ns >= 0 {
            self.rtt_sample(rtt_ns);
        }
        let snd = &mut self.snd;
        if let Some((newly, _)) = sack {
            self.fastretrans_alert(ack, prior_una, acked_pkts + newly);
        } else if snd.in_recovery && ack >= snd.high_seq {
            snd.in_recovery = false;
            snd.in_loss = false;
            if snd.snd_ssthresh < INFINITE_SSTHRESH {
                snd.snd_cwnd = snd.snd_cwnd.min(snd.snd_ssthresh).max(1);
            }
            snd.retrans_stamp = 0;
        } else if snd.in_loss {
            // TCP_CA_Loss is not a cwnd reduction: slow start from 1 on every ACK of new
            // data while the lost segments go out again [tcp_input.c]
            self.ca_cong_avoid(acked_pkts);
        } else if snd.in_recovery {
            if let Some(i) = snd.rtx_queue.iter().position(|e| e.retrans == 0) {
                self.mark_lost(i); // NewReno partial ACK: next hole is lost
            }
        } else {
            snd.retrans_stamp = 0;
            self.ca_cong_avoid(acked_pkts);
        }
        self.snd.rto_deadline = if self.snd.rtx_queue.is_empty() {
            0
        } else {
            self.reset_xmit_timer(self.snd.rto)
        };
        self.snd.backoff = 0;
        self.writable = self.send_space() > 0;
    }

    /// Models tcp_rtt_estimator() + tcp_set_rto() (RFC 6298 with Linux's rto_min).
    pub fn rtt_estimator(&mut self, m: i64) {
        let snd = &mut self.snd;
        if snd.srtt_us8 != 0 {
            let mut err = m - (snd.srtt_us8 >> 3);
            snd.srtt_us8 += err;
            if err < 0 {
                err = -err - (snd.mdev_us >> 2);
                if err > 0 {
                    err >>= 3;
                }
            } else {
                err -= snd.mdev_us >> 2;
            }
            snd.mdev_us += err;
        } else {
            snd.srtt_us8 = m << 3;
            snd.mdev_us = m << 1;
        }
        if snd.min_rtt_us == 0 || m < snd.min_rtt_us {
            snd.min_rtt_us = m; // tcp_update_rtt_min()
        }
        let rttvar = snd.mdev_us.max(TCP_RTO_MIN_NS / NS_PER_US);
        // icsk_rto is in jiffies: usecs_to_jiffies rounds up
        let rto = self
            .clock
            .ticks_ns(self.clock.usecs_to_ticks((snd.srtt_us8 >> 3) + rttvar));
        snd.rto = rto.min(TCP_RTO_MAX_NS);
    }

    /// Models the bookkeeping of tcp_cwnd_validate() [tcp_output.c, as of f4ce91ce12a7]
    /// (see sender.py `_cwnd_validate`).
    fn cwnd_validate(&mut self, limited: bool) {
        let snd = &mut self.snd;
        let packets = snd.rtx_queue.len() as i64;
        if snd.snd_una >= snd.cwnd_usage_seq
            || limited
            || (!snd.cwnd_limited && packets > snd.max_packets_out)
        {
            snd.cwnd_limited = limited;
            snd.max_packets_out = packets;
            snd.cwnd_usage_seq = snd.snd_nxt;
        }
    }

    /// tcp_is_cwnd_limited() [include/net/tcp.h]: cwnd was the limit in this window, or, in
    /// slow start, cwnd is below twice the largest flight of the window.
    pub fn is_cwnd_limited(&self) -> bool {
        let snd = &self.snd;
        if snd.cwnd_limited {
            return true;
        }
        if snd.snd_cwnd < snd.snd_ssthresh {
            return snd.snd_cwnd < 2 * snd.max_packets_out;
        }
        false
    }

    /// Three duplicate ACKs: fast retransmit the head; ssthresh by the congestion control
    /// (Reno: half, CUBIC: 0.7), cwnd at once to it (no PRR).
    fn dupack(&mut self) {
        self.snd.dupacks += 1;
        if self.snd.dupacks == 3 && !self.snd.in_recovery {
            self.mib.TCPRenoRecovery += 1; // tcp_enter_recovery(), no SACK
            self.mib.TCPFastRetrans += 1;
            self.snd.tlp_deadline = 0; // the xmit timer is the RTO now
            let ssthresh = self.ca_ssthresh();
            let snd = &mut self.snd;
            snd.snd_ssthresh = ssthresh;
            snd.snd_cwnd = snd.snd_ssthresh;
            snd.in_recovery = true;
            snd.high_seq = snd.snd_nxt;
            self.mark_lost(0);
            self.retransmit(0, false);
        }
    }

    /// Models tcp_ack_probe(): stop probing once the head skb fits the window.
    fn ack_probe(&mut self) {
        let snd = &self.snd;
        let head_end = snd.snd_nxt + snd.write_queue[0];
        if head_end <= snd.snd_una + snd.snd_wnd {
            self.snd.backoff = 0;
            self.snd.probe_deadline = 0;
        } else {
            self.snd.probe_deadline = self.reset_xmit_timer(self.probe0_when());
        }
    }

    // -- tail loss probe ------------------------------------------------------------------

    /// Models tcp_schedule_loss_probe() [tcp_output.c, v6.18]: arm the loss-probe timer (see
    /// sender.py `schedule_loss_probe`).
    pub fn schedule_loss_probe(&mut self, advancing_rto: bool) -> bool {
        let snd = &self.snd;
        if snd.rtx_queue.is_empty()
            || !self.conn.sack_ok
            || snd.in_recovery
            || snd.dupacks != 0
            || snd.sacked_out != 0
            || !xmit_state(self.conn.state)
        {
            return false;
        }
        let mut timeout = self.k.loss_probe_timeout(self);
        let snd = &self.snd;
        let rto_delta = if advancing_rto {
            snd.rto
        } else {
            snd.rtx_queue[0].tx_ns + snd.rto - self.now
        };
        if rto_delta > 0 {
            timeout = timeout.min(self.jiffies_up(rto_delta)); // usecs_to_jiffies
        }
        self.snd.tlp_deadline = self.reset_xmit_timer(timeout); // ICSK_TIME_LOSS_PROBE
        true
    }

    /// Models tcp_send_loss_probe() [tcp_output.c, v6.18], run when the probe timer fires
    /// (see sender.py `send_loss_probe` for what is and is not modelled).
    pub fn send_loss_probe(&mut self) {
        if self.snd.rtx_queue.is_empty() || !xmit_state(self.conn.state) {
            return;
        }
        if self.snd.tlp_high_seq != 0 {
            self.rearm_rto_after_probe(false);
            return;
        }
        self.snd.tlp_retrans = false;
        let snd = &self.snd;
        let fits = snd.write_queue.front().is_some_and(|&head| {
            snd.snd_nxt + self.conn.mss_cache.min(head) <= snd.snd_una + snd.snd_wnd
        });
        if fits {
            let pcount = self.snd.rtx_queue.len();
            self.write_xmit(true);
            if self.snd.rtx_queue.len() <= pcount {
                self.rearm_rto_after_probe(false);
                return;
            }
        } else {
            let last = self.snd.rtx_queue.len() - 1;
            self.retransmit(last, true);
            self.snd.tlp_retrans = true;
        }
        self.snd.tlp_high_seq = self.snd.snd_nxt;
        self.mib.TCPLossProbes += 1;
        self.trace("timer", "loss probe", TraceArgs::default());
        self.rearm_rto_after_probe(true);
    }

    /// tcp_rearm_rto() at the end of tcp_send_loss_probe(): from now after a probe, else
    /// what is left of the RTO from the head segment's send time (at least 1 us, rounded up
    /// to jiffies).
    fn rearm_rto_after_probe(&mut self, sent: bool) {
        if sent {
            self.snd.rto_deadline = self.reset_xmit_timer(self.snd.rto);
        } else {
            let left = self.snd.rtx_queue[0].tx_ns + self.snd.rto - self.now;
            let when = self.jiffies_up(left.max(1));
            self.snd.rto_deadline = self.reset_xmit_timer(when);
        }
    }

    /// Models tcp_process_tlp_ack() [tcp_input.c, v6.18] (see sender.py
    /// `_process_tlp_ack`).
    fn process_tlp_ack(&mut self, seg: &Segment, ack: i64, prior_una: i64, win_update: bool) {
        let snd = &mut self.snd;
        if ack < snd.tlp_high_seq {
            return;
        }
        if !snd.tlp_retrans {
            snd.tlp_high_seq = 0;
        } else if seg.sacks.first().is_some_and(|b| b.0 < ack) {
            snd.tlp_high_seq = 0; // D-SACK: both copies arrived
        } else if ack > snd.tlp_high_seq {
            snd.tlp_high_seq = 0;
            let ssthresh = self.ca_ssthresh();
            let snd = &mut self.snd;
            snd.snd_ssthresh = ssthresh;
            snd.snd_cwnd = snd.snd_ssthresh;
            self.mib.TCPLossProbeRecovery += 1;
        } else if ack == prior_una && seg.len == 0 && !win_update {
            snd.tlp_high_seq = 0; // pure duplicate ACK
        }
    }

    // -- timers ---------------------------------------------------------------------------

    /// tcp_probe0_base(): max(rto, TCP_RTO_MIN).
    pub fn probe0_base(&self) -> i64 {
        self.snd.rto.max(TCP_RTO_MIN_NS)
    }

    /// tcp_probe0_when(): exponential persist backoff, at most TCP_RTO_MAX.
    pub fn probe0_when(&self) -> i64 {
        let b = self.snd.backoff.min(10);
        (self.probe0_base() << b).min(TCP_RTO_MAX_NS)
    }

    /// Models tcp_retransmit_timer(): give up after tcp_retries2 (as modelled time), or
    /// enter loss, retransmit the head and back off. With a zero window and data in flight
    /// the retransmission acts as a probe (the era decides when that times out).
    pub fn retransmit_timer(&mut self) {
        if matches!(self.conn.state, TcpState::SynSent | TcpState::SynRecv) {
            self.handshake_timeout();
            return;
        }
        if self.snd.rtx_queue.is_empty() || self.conn.state == TcpState::Closed {
            return;
        }
        self.trace("timer", "rto", TraceArgs::default());
        if self.snd.snd_wnd == 0 {
            // this branch leaves before TCPTimeouts is counted [tcp_timer.c, 6.18]
            if self.k.rtx_probe0_timed_out(self) {
                self.mib.TCPAbortOnTimeout += 1;
                self.abort("ETIMEDOUT");
                return;
            }
            self.enter_loss();
            self.retransmit(0, false);
            self.snd.rto = (self.snd.rto << 1).min(TCP_RTO_MAX_NS);
            self.snd.rto_deadline = self.reset_xmit_timer(self.snd.rto);
            return;
        }
        self.mib.TCPTimeouts += 1;
        if self.snd.retransmits != 0 && self.write_timeout() {
            self.mib.TCPAbortOnTimeout += 1;
            self.abort("ETIMEDOUT");
            return;
        }
        self.enter_loss();
        self.retransmit(0, false);
        self.snd.backoff += 1;
        self.snd.retransmits += 1;
        self.snd.rto = (self.snd.rto << 1).min(TCP_RTO_MAX_NS);
        self.snd.rto_deadline = self.reset_xmit_timer(self.snd.rto);
    }

    /// tcp_enter_loss(): everything in flight is lost, cwnd = 1, ssthresh by the congestion
    /// control, then TCP_CA_Loss (CUBIC forgets its curve). With SACK,
    /// tcp_timeout_mark_lost() keeps SACKed segments (and those sent too recently for RACK
    /// to tell) out of the lost ones, and cwnd = packets in flight + 1.
    fn enter_loss(&mut self) {
        if !self.snd.in_recovery || self.snd.retransmits == 0 {
            self.snd.snd_ssthresh = self.ca_loss_ssthresh();
        }
        let snd = &mut self.snd;
        snd.snd_cwnd = 1;
        snd.cwnd_cnt = 0;
        snd.tlp_deadline = 0;
        snd.tlp_high_seq = 0; // tcp_enter_loss() forgets the probe
        snd.in_recovery = true;
        snd.in_loss = true;
        snd.high_seq = snd.snd_nxt;
        if self.conn.sack_ok {
            self.timeout_mark_lost();
            self.snd.snd_cwnd = self.packets_in_flight() + 1;
        } else {
            for e in snd.rtx_queue.iter_mut() {
                if e.lost != 0 && e.retrans != 0 {
                    self.mib.TCPLostRetransmit += 1; // tcp_mark_skb_lost()
                }
                e.lost = 1;
                e.retrans = 0;
            }
            snd.lost_out = snd.rtx_queue.len() as i64;
        }
        self.ca_set_state(TCP_CA_LOSS); // tcp_set_ca_state()
    }

    /// Models retransmits_timed_out() with tcp_model_timeout(retries2, TCP_RTO_MIN).
    fn write_timeout(&self) -> bool {
        let boundary = self.sysctl.tcp_retries2;
        let thresh = 9; // ilog2(TCP_RTO_MAX / TCP_RTO_MIN)
        let timeout = if boundary <= thresh {
            ((2 << boundary) - 1) * TCP_RTO_MIN_NS
        } else {
            ((2 << thresh) - 1) * TCP_RTO_MIN_NS + (boundary - thresh) * TCP_RTO_MAX_NS
        };
        self.now - self.snd.retrans_stamp >= timeout
    }

    /// The SYN or SYN-ACK was not answered: send it again, the timer backed off (see
    /// sender.py `_handshake_timeout`: tcp_retransmit_timer() in SYN_SENT, the request
    /// sock's reqsk_timer_handler() [inet_connection_sock.c] in SYN_RECV).
    fn handshake_timeout(&mut self) {
        let active = self.conn.state == TcpState::SynSent;
        let retries = if active {
            TCP_SYN_RETRIES
        } else {
            TCP_SYNACK_RETRIES
        };
        if self.snd.retransmits >= retries {
            if active {
                self.abort("ETIMEDOUT");
            } else {
                self.conn.state = TcpState::Listen;
                self.snd.rto_deadline = 0;
            }
            return;
        }
        self.mib.TCPTimeouts += 1;
        self.snd.retransmits += 1;
        self.mib.TCPRetransSegs += 1;
        self.trace("timer", "rto", TraceArgs::default());
        let seg = if active {
            self.make_syn()
        } else {
            self.make_synack()
        };
        self.emit(seg, active); // tcp_make_synack() counts OutSegs every time
        self.snd.rto = (self.snd.rto << 1).min(TCP_RTO_MAX_NS);
        self.snd.rto_deadline = self.reset_xmit_timer(self.snd.rto);
    }

    /// A retransmitted SYN reached the request: tcp_check_req() answers it with the SYN-ACK
    /// again (inet_rtx_syn_ack()); see sender.py `resend_synack` for the model's one
    /// counter.
    pub fn resend_synack(&mut self) {
        self.snd.retransmits += 1;
        self.mib.TCPRetransSegs += 1;
        let seg = self.make_synack();
        self.emit(seg, false);
    }

    /// Models tcp_probe_timer() + tcp_send_probe0() + tcp_write_wakeup().
    pub fn probe_timer(&mut self) {
        if !self.snd.rtx_queue.is_empty()
            || self.snd.write_queue.is_empty()
            || self.conn.state == TcpState::Closed
        {
            self.snd.probes_out = 0;
            return;
        }
        if self.snd.probes_out >= self.sysctl.tcp_retries2 {
            self.mib.TCPAbortOnTimeout += 1;
            self.abort("ETIMEDOUT");
            return;
        }
        let wnd_end = self.snd.snd_una + self.snd.snd_wnd;
        if self.snd.snd_nxt < wnd_end {
            // window partly open: send a slice
            let head = self.snd.write_queue[0];
            let seg_len = (wnd_end - self.snd.snd_nxt)
                .min(self.conn.mss_cache)
                .min(head);
            if seg_len < head {
                self.snd.write_queue[0] -= seg_len; // tcp_fragment(): the rest stays a skb
            } else {
                self.snd.write_queue.pop_front_rewind();
            }
            let inflight = self.packets_in_flight();
            self.send_new(self.snd.snd_nxt, seg_len, inflight, 1);
            if self.k.new_data_checks_space(self) {
                self.check_space(); // tcp_event_new_data_sent()
            }
        } else {
            // zero-window probe: old sequence
            self.mib.TCPWinProbe += 1;
            let seg = self.make_segment(self.snd.snd_una - 1, 0, ACK);
            self.trace("timer", "probe", TraceArgs::default());
            self.emit(seg, false);
        }
        if !self.snd.rtx_queue.is_empty() {
            self.snd.probes_out = 0;
            self.snd.backoff = 0;
            return;
        }
        self.snd.probes_out += 1;
        if self.snd.backoff < self.sysctl.tcp_retries2 {
            self.snd.backoff += 1;
        }
        self.snd.probe_deadline = self.reset_xmit_timer(self.probe0_when());
    }
}
