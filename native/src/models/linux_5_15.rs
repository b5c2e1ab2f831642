//! Linux 5.15 LTS: the base receive path every later profile builds on (models/linux_5_15.py).
//!
//! Every decision point of src/kernel.rs is defined here, as 5.15 does it; later eras
//! (linux_6_1.rs, linux_6_6.rs, ...) build on it and override only what they changed. Each
//! method's doc comment names the kernel function it models [net/ipv4/tcp_input.c unless noted].
//!
//! Era facts: memory -> window uses tcp_adv_win_scale (default 1 = 50 %); the initial rcv_wnd
//! is capped at 64 KiB; tcp_rmem[2] defaults to 6 MiB; in-order admission tests
//! `rmem > rcvbuf` before adding (so the queue can overshoot by one skb) and an empty receive
//! queue always accepts; the window never shrinks (no tcp_shrink_window).
//!
//! As everywhere in the eras, `sk.k.point(sk, ..)` is Python's `self.point(sk, ..)`: the
//! socket's composed kernel, so that a later era's or a patch's override is the one called.

use std::collections::VecDeque;

use crate::arith::{bit_length, floor_div, py_floor_div};
use crate::constants::{
    align_up, round_down, skb_truesize, ICSK_ACK_PUSHED, ICSK_ACK_PUSHED2, MAX_TCP_WINDOW,
    NS_PER_US, TCP_ATO_MIN_NS, TCP_DELACK_MAX_NS, TCP_INIT_CWND, TCP_MIN_MSS, TCP_MSS_DEFAULT,
    TCP_RTO_MAX_NS, TCP_RTO_MIN_NS, TCP_TIMEOUT_INIT_NS,
};
use crate::kcall;
use crate::kernel::Kernel;
use crate::memory::Tail;
use crate::segment::{Segment, FIN, PSH, SYN, URG};
use crate::skb::Skb;
use crate::socket::TcpSocket;
use crate::socket::TraceArgs;
use crate::state::TcpState;
use crate::sysctl::{SysctlSpec, Sysctls};

pub const MIB: i64 = 1024 * 1024;
/// L1_CACHE_ALIGN(128 + MAX_HEADER) on x86-64.
pub const MAX_TCP_HEADER: i64 = 320;
pub const TCP_REMNANT: i64 = FIN | URG | SYN | PSH;
pub const SOCK_MIN_RCVBUF: i64 = 4608;

/// The sysctls every era has (SYSCTLS of models/linux_5_15.py; a Python frozenset, so the
/// order carries no meaning).
pub const SYSCTLS: &[&str] = &[
    "tcp_rmem",
    "tcp_wmem",
    "tcp_adv_win_scale",
    "tcp_app_win",
    "tcp_moderate_rcvbuf",
    "tcp_timestamps",
    "tcp_window_scaling",
    "tcp_sack",
    "tcp_retries2",
    "tcp_invalid_ratelimit",
    "tcp_workaround_signed_windows",
    "tcp_comp_sack_nr",
    "tcp_comp_sack_delay_ns",
    "rmem_max",
    "wmem_max",
    "tcp_congestion_control",
    "tcp_notsent_lowat",
    "tcp_slow_start_after_idle",
    "tcp_mem",
];

/// Linux 5.15: adv_win_scale windows, classic DRS, never-shrink windows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux515;

impl Linux515 {
    /// Models __tcp_grow_window(): the worse the len/truesize ratio, the lower the
    /// rcv_ssthresh up to which a bloated skb may still grow the window.
    fn grow_window_bloated(sk: &TcpSocket, truesize: i64, length: i64) -> i64 {
        let mut t = sk.k.win_from_space(sk, truesize) >> 1;
        let mut w = sk.k.win_from_space(sk, sk.sysctl.tcp_rmem.2) >> 1;
        while sk.rcv.rcv_ssthresh <= w {
            if t <= length {
                return 2 * sk.ack.ack_rcv_mss;
            }
            t >>= 1;
            w >>= 1;
        }
        0
    }

    /// The tcp_shrink_window=1 branch of __tcp_select_window() (b650d953cd39): free
    /// space rounded *down* to the scale unit; rcv_ssthresh rounded up (a soft limit).
    fn select_window_shrink(
        sk: &mut TcpSocket,
        free: i64,
        (allowed, full, mss, unit): (i64, i64, i64, i64),
    ) -> i64 {
        let mut free = round_down(free, unit);
        if free < full >> 1 {
            sk.ack.ack_quick = 0;
            if sk.under_memory_pressure() {
                kcall!(sk.pressure_adjust());
            }
            if free < allowed >> 4 || free < mss || free < unit {
                return 0;
            }
        }
        if free > sk.rcv.rcv_ssthresh {
            free = align_up(sk.rcv.rcv_ssthresh, unit);
        }
        free
    }

    /// The common tail of tcp_select_window(): store, cap, scale, count.
    pub(crate) fn store_window(sk: &mut TcpSocket, old: i64, new: i64) -> i64 {
        sk.rcv.rcv_wnd = new;
        sk.rcv.rcv_wup = sk.rcv.rcv_nxt;
        let wscale = sk.conn.rcv_wscale;
        let capped = if wscale == 0 && sk.sysctl.tcp_workaround_signed_windows != 0 {
            new.min(MAX_TCP_WINDOW)
        } else {
            new.min(65535 << wscale)
        };
        let new = capped >> wscale;
        if new == 0 {
            sk.rcv.pred_ok = false;
            if old != 0 {
                sk.mib.TCPToZeroWindowAdv += 1;
            }
        } else if old == 0 {
            sk.mib.TCPFromZeroWindowAdv += 1;
        }
        new
    }
}

impl Kernel for Linux515 {
    fn base(&self) -> &dyn Kernel {
        unreachable!("Linux 5.15 defines every decision point: nothing is underneath")
    }

    fn class_name(&self) -> &'static str {
        "Linux515"
    }

    fn counters(&self) -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }

    fn new_sysctls(&self) -> Vec<SysctlSpec> {
        Vec::new()
    }

    fn extra_sysctls(&self) -> Vec<&'static str> {
        Vec::new()
    }

    // -- profile-level facts --------------------------------------------------------------

    fn release(&self) -> &'static str {
        "5.15"
    }

    fn sysctls(&self) -> Vec<&'static str> {
        SYSCTLS.to_vec()
    }

    fn rmem2_default(&self) -> i64 {
        6 * MIB
    }

    /// TCP_PINGPONG_THRESH: data sent within ato of data received this many times
    /// makes the connection interactive (delayed ACKs are then not inflated).
    fn pingpong_thresh(&self) -> i64 {
        3
    }

    /// gfp_memcg_charge() [include/net/sock.h]: GFP_NOWAIT from softirq in 5.15 as released
    /// -- over cgroup v2's memory.max the charge fails (memcg.rs).
    fn memcg_softirq_atomic(&self) -> bool {
        false
    }

    /// No scaling_ratio before 6.6 (reported as -1).
    fn default_scaling_ratio(&self) -> i64 {
        -1
    }

    fn collapse_ns_per_byte(&self) -> f64 {
        0.32
    }

    fn collapse_ns_fixed(&self) -> i64 {
        2000
    }

    /// No per-CPU reserve of the TCP pool before 6.0: every page a socket charges goes to
    /// tcp_memory_allocated at once (sk_memory_allocated_add() [include/net/sock.h, 5.15] is
    /// an atomic add), which `mem_pcpu_rsv = 0` models (src/protmem.rs).
    fn default_sysctls(&self) -> Sysctls {
        let d = Sysctls::default();
        Sysctls {
            tcp_rmem: (4096, 131072, self.rmem2_default()),
            mem_pcpu_rsv: 0,
            ..d
        }
    }

    /// No scaling_ratio before 6.6 (reported as -1).
    fn initial_scaling_ratio(&self) -> i64 {
        -1
    }

    /// __tcp_ack_snd_check() [tcp_input.c, 5.15 .. 6.18]: compressed SACKs wait 5 % of
    /// the RTT (the smaller of the receiver's estimate and srtt), at most
    /// tcp_comp_sack_delay_ns.
    fn comp_sack_delay_ns(&self, sk: &TcpSocket, rtt_us8: i64) -> i64 {
        sk.sysctl
            .tcp_comp_sack_delay_ns
            .min(((rtt_us8 >> 3) * 1000).div_euclid(20))
    }

    /// icsk_delack_max: the delayed-ACK timeout cap (TCP_DELACK_MAX).
    fn delack_max(&self, _sk: &TcpSocket) -> i64 {
        TCP_DELACK_MAX_NS
    }

    // -- memory <-> window ----------------------------------------------------------------

    /// Models tcp_win_from_space() [include/net/tcp.h, 5.15]: tcp_adv_win_scale.
    fn win_from_space(&self, sk: &TcpSocket, space: i64) -> i64 {
        let a = sk.sysctl.tcp_adv_win_scale;
        if a <= 0 {
            space >> -a
        } else {
            space - (space >> a)
        }
    }

    /// Inverse of win_from_space (only used by 6.6+ DRS; kept for symmetry).
    fn space_from_win(&self, sk: &TcpSocket, win: i64) -> i64 {
        let a = sk.sysctl.tcp_adv_win_scale;
        if a <= 0 {
            win << -a
        } else {
            floor_div(win << a, (1 << a) - 1)
        }
    }

    // -- handshake ------------------------------------------------------------------------

    /// The initial rcv_wnd: capped at 64 KiB (a337531b942b, v4.19 .. 6.9).
    fn initial_rcv_wnd(&self, _sk: &TcpSocket, space: i64) -> i64 {
        space.min(65535)
    }

    /// Models tcp_select_initial_window() [tcp_output.c]: rcv_wnd, window_clamp and
    /// the window scale chosen from the largest buffer the socket could ever use.
    fn select_initial_window(&self, sk: &mut TcpSocket, space: i64, mss: i64) {
        let clamp = if sk.rcv.window_clamp != 0 {
            sk.rcv.window_clamp
        } else {
            65535 << 14
        };
        let mut space = space.max(0).min(clamp);
        if space > mss {
            space = floor_div(space, mss) * mss;
        }
        let mut rcv_wnd = if sk.sysctl.tcp_workaround_signed_windows != 0 {
            space.min(MAX_TCP_WINDOW)
        } else {
            sk.k.initial_rcv_wnd(sk, space)
        };
        if sk.conn.init_rwnd != 0 {
            rcv_wnd = rcv_wnd.min(sk.conn.init_rwnd * mss);
        }
        let mut wscale = 0;
        if sk.conn.wscale_ok {
            let s = &sk.sysctl;
            let biggest = space.max(s.tcp_rmem.2).max(s.rmem_max).min(clamp);
            wscale = (bit_length(biggest) - 1 - 15).clamp(0, 14);
        }
        sk.rcv.rcv_wnd = rcv_wnd;
        sk.conn.rcv_wscale = wscale;
        sk.rcv.window_clamp = (65535 << wscale).min(clamp);
    }

    /// tcp_connect_init() / tcp_openreq_init_rwin(): rcv_ssthresh starts at rcv_wnd.
    fn init_rcv_ssthresh(&self, sk: &mut TcpSocket) {
        sk.rcv.rcv_ssthresh = sk.rcv.rcv_wnd;
    }

    /// Models tcp_init_buffer_space(): window_clamp = full space less one segment
    /// (tcp_app_win), rcv_ssthresh bounded by it, DRS baseline = min(.., 10 * advmss).
    fn init_buffer_space(&self, sk: &mut TcpSocket) {
        let app_win = sk.sysctl.tcp_app_win;
        let advmss = sk.conn.advmss;
        let maxwin = sk.full_space();
        let rcv = &mut sk.rcv;
        if rcv.window_clamp >= maxwin {
            rcv.window_clamp = maxwin;
            if app_win != 0 && maxwin > 4 * advmss {
                rcv.window_clamp = (maxwin - (maxwin >> app_win)).max(4 * advmss);
            }
        }
        if app_win != 0 && rcv.window_clamp > 2 * advmss && rcv.window_clamp + advmss > maxwin {
            rcv.window_clamp = (2 * advmss).max(maxwin - advmss);
        }
        rcv.rcv_ssthresh = rcv.rcv_ssthresh.min(rcv.window_clamp);
        rcv.rcvq_space = rcv
            .rcv_ssthresh
            .min(rcv.rcv_wnd)
            .min(TCP_INIT_CWND * advmss);
    }

    // -- socket options -------------------------------------------------------------------

    /// TCP_WINDOW_CLAMP [tcp.c, 5.15]: only the clamp changes.
    fn set_window_clamp(&self, sk: &mut TcpSocket, val: i64) {
        if val == 0 {
            if sk.conn.state == TcpState::Closed {
                sk.rcv.window_clamp = 0;
            }
            return;
        }
        sk.rcv.window_clamp = val.max(SOCK_MIN_RCVBUF / 2);
    }

    /// SO_RCVBUF on an open socket: only sk_rcvbuf changes.
    fn on_rcvbuf_set(&self, _sk: &mut TcpSocket) {}

    // -- receiver RTT ---------------------------------------------------------------------

    /// Models tcp_rcv_rtt_update(): EWMA 1/8 (timestamps) or min-only (window).
    fn rcv_rtt_update(&self, sk: &mut TcpSocket, sample_us: i64, win_dep: bool) {
        let mut est = sk.rcv.rcv_rtt_us8;
        if est != 0 {
            if !win_dep {
                est += sample_us - (est >> 3);
            } else if sample_us << 3 < est {
                est = sample_us << 3;
            }
        } else {
            est = sample_us << 3;
        }
        sk.rcv.rcv_rtt_us8 = est;
    }

    /// Models tcp_rcv_rtt_measure(): one window's worth of data per sample (no TS).
    fn rcv_rtt_measure(&self, sk: &mut TcpSocket) {
        if sk.rcv.rcv_rtt_time != 0 {
            if sk.rcv.rcv_nxt < sk.rcv.rcv_rtt_seq {
                return;
            }
            let sample = sk.tcp_mstamp - sk.rcv.rcv_rtt_time;
            kcall!(sk.rcv_rtt_update(sample, true));
        }
        sk.rcv.rcv_rtt_seq = sk.rcv.rcv_nxt + sk.rcv.rcv_wnd;
        sk.rcv.rcv_rtt_time = sk.tcp_mstamp;
    }

    /// Models tcp_rcv_rtt_measure_ts() [5.15]: sample = now - echoed timestamp, once
    /// per new echo, from full-sized segments; 0 ms counts as 1 ms.
    fn rcv_rtt_measure_ts(&self, sk: &mut TcpSocket, seg: &Segment) {
        let tsecr = sk.conn.rcv_tsecr;
        if !sk.conn.ts_ok || tsecr <= 0 || tsecr == sk.rcv.rcv_rtt_last_tsecr {
            return;
        }
        sk.rcv.rcv_rtt_last_tsecr = tsecr;
        if seg.len >= sk.ack.ack_rcv_mss {
            let sample = sk.k.ts_rtt_sample_us(sk.tsval() - tsecr);
            if sample >= 0 {
                kcall!(sk.rcv_rtt_update(sample, false));
            }
        }
    }

    /// tcp_rtt_tsopt_us() [5.15]: a 0 ms difference counts as 1 ms; -1 = no sample.
    fn ts_rtt_sample_us(&self, delta_ms: i64) -> i64 {
        if delta_ms >= 0 {
            delta_ms.max(1) * 1000
        } else {
            -1
        }
    }

    // -- rcv_mss --------------------------------------------------------------------------

    /// Models tcp_measure_rcv_mss() [5.15]: learn the peer's segment size; mark small
    /// pushed segments (ICSK_ACK_PUSHED/PUSHED2) for the read-side ACK rule.
    fn measure_rcv_mss(&self, sk: &mut TcpSocket, seg: &Segment, skb: &Skb) {
        let lss = sk.rcv.last_seg_size;
        sk.rcv.last_seg_size = 0;
        let mut length = if seg.gso_size != 0 {
            seg.gso_size
        } else {
            seg.len
        };
        if length >= sk.ack.ack_rcv_mss {
            if length != sk.ack.ack_rcv_mss {
                kcall!(sk.on_rcv_mss_change(seg, skb));
            }
            sk.ack.ack_rcv_mss = length.min(sk.conn.advmss);
            return;
        }
        length += sk.conn.tcp_header_len;
        if length >= TCP_MSS_DEFAULT + 20
            || (length >= TCP_MIN_MSS + 20 && seg.flags & TCP_REMNANT == 0)
        {
            length -= sk.conn.tcp_header_len;
            sk.rcv.last_seg_size = length;
            if length == lss {
                sk.ack.ack_rcv_mss = length;
                return;
            }
        }
        if sk.ack.ack_pending & ICSK_ACK_PUSHED != 0 {
            sk.ack.ack_pending |= ICSK_ACK_PUSHED2;
        }
        sk.ack.ack_pending |= ICSK_ACK_PUSHED;
    }

    /// What a segment that changes rcv_mss teaches besides (6.6: scaling_ratio).
    fn on_rcv_mss_change(&self, _sk: &mut TcpSocket, _seg: &Segment, _skb: &Skb) {}

    /// No scaling_ratio before 6.6, so nothing follows a change of it.
    fn on_scaling_ratio_change(&self, _sk: &mut TcpSocket) {}

    /// Out-of-order data does not update rcv_mss before 6.17.
    fn ofo_measure_rcv_mss(&self, _sk: &mut TcpSocket, _seg: &Segment, _skb: &Skb) {}

    // -- window growth and selection ------------------------------------------------------

    /// Models tcp_grow_window(): raise rcv_ssthresh by two MSS (or 2*len) per segment
    /// whose payload is worth its memory; bloated skbs only while rcv_ssthresh is small.
    fn grow_window(&self, sk: &mut TcpSocket, skb: &Skb, adjust: bool, _seg: &Segment) {
        let room = sk.rcv.window_clamp.min(sk.tcp_space()) - sk.rcv.rcv_ssthresh;
        if room <= 0 {
            return;
        }
        if sk.under_memory_pressure() {
            kcall!(sk.grow_under_pressure());
            return;
        }
        let mut truesize = skb.truesize;
        if adjust && skb.linear == 0 {
            truesize -= skb_truesize(skb.head);
            if truesize < skb.len {
                truesize = skb.truesize;
            }
        }
        let mut incr = if sk.k.win_from_space(sk, truesize) <= skb.len {
            2 * sk.conn.advmss
        } else {
            Self::grow_window_bloated(sk, truesize, skb.len)
        };
        if incr != 0 {
            incr = incr.max(2 * skb.len);
            sk.rcv.rcv_ssthresh += room.min(incr);
            sk.ack.ack_quick |= 1;
        }
    }

    /// tcp_grow_window() under memory pressure [5.15]: no growth, nothing else.
    fn grow_under_pressure(&self, _sk: &mut TcpSocket) {}

    /// Under memory pressure [5.15]: rcv_ssthresh = min(rcv_ssthresh, 4 * advmss).
    fn pressure_adjust(&self, sk: &mut TcpSocket) {
        sk.rcv.rcv_ssthresh = sk.rcv.rcv_ssthresh.min(4 * sk.conn.advmss);
    }

    /// May the window retract? Never before 6.5 (no tcp_shrink_window).
    fn shrink_allowed(&self, _sk: &TcpSocket) -> bool {
        false
    }

    /// The window of the ACK a memory drop asks for (ICSK_ACK_NOMEM, 6.6): 5.15 drops
    /// silently and never asks; a patch that sets the flag gets 6.6's zero, not stored.
    fn nomem_window(&self, _sk: &mut TcpSocket) -> i64 {
        0
    }

    /// Models __tcp_select_window(): the window memory allows, in bytes, before the
    /// never-shrink rule. Zero when free space is below max(rcv_mss, full/16) and below
    /// half of the full window; otherwise bounded by rcv_ssthresh and rounded up to the
    /// window-scale unit so scaling cannot hide it.
    fn select_window(&self, sk: &mut TcpSocket) -> i64 {
        let mut mss = sk.ack.ack_rcv_mss;
        let mut free = sk.tcp_space();
        let allowed = sk.full_space();
        let full = sk.rcv.window_clamp.min(allowed);
        if mss > full {
            mss = full;
            if mss <= 0 {
                return 0;
            }
        }
        let unit = 1 << sk.conn.rcv_wscale;
        if sk.k.shrink_allowed(sk) {
            return Self::select_window_shrink(sk, free, (allowed, full, mss, unit));
        }
        if free < full >> 1 {
            sk.ack.ack_quick = 0;
            if sk.under_memory_pressure() {
                kcall!(sk.pressure_adjust());
            }
            free = round_down(free, unit);
            if free < allowed >> 4 || free < mss {
                return 0;
            }
        }
        if free > sk.rcv.rcv_ssthresh {
            free = sk.rcv.rcv_ssthresh;
        }
        if sk.conn.rcv_wscale != 0 {
            return align_up(free, unit);
        }
        let mut window = sk.rcv.rcv_wnd;
        if window <= free - mss || window > free {
            window = floor_div(free, mss) * mss;
        } else if mss == full && free > window + (full >> 1) {
            window = free;
        }
        window
    }

    /// Models tcp_select_window() [tcp_output.c]: the raw 16-bit window for the next
    /// segment. Never shrinks the offered window: a smaller result is replaced by the
    /// current right edge rounded up to the scale unit (TCPWantZeroWindowAdv when that
    /// hides a zero). Updates rcv_wnd / rcv_wup and the zero-window MIBs.
    fn advertise_window(&self, sk: &mut TcpSocket) -> i64 {
        let old = sk.rcv.rcv_wnd;
        let cur = sk.receive_window();
        let mut new = kcall!(sk.select_window());
        if new < cur && !sk.k.shrink_allowed(sk) {
            if new == 0 {
                sk.mib.TCPWantZeroWindowAdv += 1;
                sk.trace(
                    "window",
                    "want zero (never-shrink kept it open)",
                    TraceArgs::default(),
                );
            }
            new = align_up(cur, 1 << sk.conn.rcv_wscale);
        }
        Self::store_window(sk, old, new)
    }

    // -- sequence checks and admission ----------------------------------------------------

    /// Models tcp_sequence() [<= 6.16]: acceptable unless wholly before rcv_wup or
    /// starting beyond the window. Returns a drop reason, or "" when acceptable.
    fn tcp_sequence(&self, sk: &mut TcpSocket, seg: &Segment) -> &'static str {
        if seg.end_seq() < sk.rcv.rcv_wup {
            return "TCP_OLD_SEQUENCE";
        }
        if seg.seq > sk.rcv.rcv_nxt + sk.k.sequence_window(sk) {
            return "TCP_INVALID_SEQUENCE";
        }
        ""
    }

    /// The window tcp_sequence() checks against: tcp_receive_window(), what the peer may
    /// still send according to our last advertisement.
    fn sequence_window(&self, sk: &TcpSocket) -> i64 {
        sk.receive_window()
    }

    /// tcp_data_queue() drops a segment that starts beyond the window
    /// (TCP_OVERWINDOW): no counter of its own.
    fn overwindow_drop(&self, _sk: &mut TcpSocket) {}

    /// Before 6.17 only a segment's start is checked against the window: its end never
    /// makes it unacceptable.
    fn end_beyond_window(&self, _sk: &TcpSocket, _seg: &Segment, _right: i64) -> bool {
        false
    }

    /// In-order data at a zero window is dropped (TCPZeroWindowDrop), FIN included.
    fn zero_window_accepts(&self, _sk: &TcpSocket, _seg: &Segment) -> bool {
        false
    }

    /// The 'does it fit now?' test of admission and pruning [<= 6.16].
    fn can_ingest(&self, sk: &TcpSocket, _skb: &Skb) -> bool {
        sk.mem.sk_rmem_alloc <= sk.mem.sk_rcvbuf
    }

    /// The memory step of tcp_data_queue()'s in-order branch [5.15, 6.1]: an empty
    /// receive queue always accepts (sk_forced_mem_schedule); otherwise
    /// tcp_try_rmem_schedule() decides and a failure drops silently (TCPRcvQDrop).
    fn admit_in_order(&self, sk: &mut TcpSocket, skb: &Skb) -> bool {
        if sk.mem.receive_queue.is_empty() {
            sk.forced_mem_schedule(skb.truesize);
            return true;
        }
        kcall!(sk.try_rmem_schedule(skb, skb.truesize))
    }

    /// Models tcp_try_rmem_schedule() [5.15-6.16]: over budget (rmem > rcvbuf) ->
    /// prune the queue, then prune the OFO queue until the quota can be had.
    fn try_rmem_schedule(&self, sk: &mut TcpSocket, skb: &Skb, size: i64) -> bool {
        if !sk.k.can_ingest(sk, skb) || !sk.rmem_schedule(size) {
            if kcall!(sk.prune_queue(skb)) < 0 {
                return false;
            }
            while !sk.rmem_schedule(size) {
                if !kcall!(sk.prune_ofo_queue(skb)) {
                    return false;
                }
            }
        }
        true
    }

    /// Models tcp_clamp_window(): leave quick-ack mode; raise sk_rcvbuf to the memory
    /// in use (up to tcp_rmem[2]) unless locked, under pressure (the host's or its memcg's)
    /// or with the host's pool at tcp_mem[0] or more -- the ratchet behind Cloudflare's
    /// unbounded buffers; if still over, rcv_ssthresh falls to 2 * advmss.
    fn clamp_window(&self, sk: &mut TcpSocket) {
        sk.ack.ack_quick = 0;
        let rmem2 = sk.sysctl.tcp_rmem.2;
        let mem = &sk.mem;
        let pool_ok = !sk.proto.under_pressure()
            && sk.proto.memory_allocated() < sk.proto.limit(0)
            && !sk.memcg_pressure();
        if mem.sk_rcvbuf < rmem2 && !mem.rcvbuf_locked && pool_ok {
            let raised = mem.sk_rmem_alloc.min(rmem2);
            if raised != mem.sk_rcvbuf {
                sk.mem.sk_rcvbuf = raised;
                sk.trace("autotune", "clamp_window", TraceArgs::default());
            }
        }
        if sk.mem.sk_rmem_alloc > sk.mem.sk_rcvbuf {
            sk.rcv.rcv_ssthresh = sk.rcv.window_clamp.min(2 * sk.conn.advmss);
        }
    }

    /// Models tcp_prune_queue() [5.15, 6.1]: clamp the window, collapse the OFO and
    /// receive queues, prune the OFO queue; -1 (RcvPruned) when still over budget.
    fn prune_queue(&self, sk: &mut TcpSocket, skb: &Skb) -> i64 {
        sk.mib.PruneCalled += 1;
        sk.trace(
            "prune",
            "",
            TraceArgs {
                truesize: skb.truesize,
                ..TraceArgs::default()
            },
        );
        if sk.k.needs_clamp(sk, skb) {
            kcall!(sk.clamp_window());
        } else if sk.under_memory_pressure() {
            kcall!(sk.pressure_adjust());
        }
        if sk.k.can_ingest(sk, skb) {
            return 0;
        }
        kcall!(sk.collapse(skb));
        if sk.k.can_ingest(sk, skb) {
            return 0;
        }
        kcall!(sk.prune_ofo_queue(skb));
        if sk.k.can_ingest(sk, skb) {
            return 0;
        }
        sk.mib.RcvPruned += 1;
        sk.rcv.pred_ok = false;
        -1
    }

    /// When tcp_prune_queue() calls tcp_clamp_window() [5.15]: rmem >= rcvbuf.
    fn needs_clamp(&self, sk: &TcpSocket, _skb: &Skb) -> bool {
        sk.mem.sk_rmem_alloc >= sk.mem.sk_rcvbuf
    }

    /// The collapse step of tcp_prune_queue(): OFO queue, then the receive queue. Each
    /// collapse that rewrites data is charged a modelled duration (collapse_cost_ns).
    fn collapse(&self, sk: &mut TcpSocket, _skb: &Skb) {
        let before = sk.mem.collapsed_bytes;
        let rmem = sk.mem.sk_rmem_alloc;
        sk.collapse_ofo_queue();
        sk.collapse_receive_queue();
        let copied = sk.mem.collapsed_bytes - before;
        if copied != 0 {
            let cost = sk.k.collapse_cost_ns(sk, copied);
            sk.mem.collapses += 1;
            sk.mem.collapse_ns_total += cost;
            sk.mem.collapse_ns_max = sk.mem.collapse_ns_max.max(cost);
            let detail = format!("freed {}", rmem - sk.mem.sk_rmem_alloc);
            sk.trace(
                "collapse",
                detail,
                TraceArgs {
                    length: copied,
                    cost,
                    ..TraceArgs::default()
                },
            );
        }
    }

    /// How long tcp_collapse() runs for `copied` payload bytes rewritten: linear in the
    /// bytes, calibrated to Cloudflare's figures (a 6 MiB collapse takes about 2 ms; the
    /// 170 MiB queues of their adv_win_scale +2 runs gave 32-64 ms spikes). A CPU, not a
    /// kernel, property: override it in a policy to model another machine. (Python's
    /// `int(FIXED + copied * PER_BYTE)`: the same float sum, truncated.)
    fn collapse_cost_ns(&self, sk: &TcpSocket, copied: i64) -> i64 {
        let k = &sk.k;
        (k.collapse_ns_fixed() as f64 + copied as f64 * k.collapse_ns_per_byte()) as i64
    }

    /// Models tcp_prune_ofo_queue() [5.15, 6.1]: drop OFO skbs from the highest
    /// sequence down, rcvbuf/8 at a time, until back under budget. OfoPruned counts
    /// every call on a non-empty queue.
    fn prune_ofo_queue(&self, sk: &mut TcpSocket, skb: &Skb) -> bool {
        if sk.mem.ofo_queue.is_empty() {
            return false;
        }
        sk.mib.OfoPruned += 1;
        let mut goal = sk.mem.sk_rcvbuf >> 3;
        while let Some(dropped) = sk.ofo_drop_last() {
            goal -= dropped.truesize;
            trace_ofo_prune(sk, &dropped);
            if sk.mem.ofo_queue.is_empty() || goal <= 0 {
                if sk.k.can_ingest(sk, skb) && !sk.under_memory_pressure() {
                    break;
                }
                goal = sk.mem.sk_rcvbuf >> 3;
            }
        }
        sk.rcv.selective_acks.clear();
        true
    }

    /// Models tcp_try_coalesce(): merge into the previous skb, charging only the
    /// delta, with no receive-buffer check at all.
    fn try_coalesce(&self, sk: &mut TcpSocket, to: Tail, frm: &Skb) -> bool {
        sk.coalesce_into(to, frm)
    }

    /// tcp_ofo_queue() [<= 6.16]: an OFO skb starting below dsack_high (where the new
    /// in-order data ended) is D-SACKed up to dsack_high -- more than was duplicated --
    /// and dsack_high drops to the skb's end. Returns (D-SACK end, new dsack_high).
    fn ofo_dsack(&self, _sk: &TcpSocket, skb: &Skb, dsack_high: i64) -> (i64, i64) {
        (dsack_high, dsack_high.min(skb.end_seq))
    }

    /// Out-of-order data does not grow sk_rcvbuf before 6.18.
    fn ofo_rcvbuf_grow(&self, _sk: &mut TcpSocket) {}

    /// The stop test of tcp_prune_ofo_queue() [5.15]: back under budget (rmem <=
    /// rcvbuf, as can_ingest() tests it; 5.15's prune_ofo_queue() applies it inline).
    fn ofo_prune_done(&self, sk: &TcpSocket, dropped: &Skb) -> bool {
        sk.k.can_ingest(sk, dropped)
    }

    // -- receive buffer autotuning (DRS) --------------------------------------------------

    /// Earliest tcp_mstamp (us) at which rcv_space_adjust() acts, -1 when it cannot
    /// (no receiver RTT yet). Used to skip idle reads exactly.
    fn rcv_space_gate_us(&self, sk: &TcpSocket) -> i64 {
        if sk.rcv.rcv_rtt_us8 == 0 {
            return -1;
        }
        sk.rcv.rcvq_time + (sk.rcv.rcv_rtt_us8 >> 3)
    }

    /// Bytes DRS credits to this RTT when the reader has reached copied_seq.
    fn rcv_space_copied(&self, _sk: &TcpSocket, copied_seq: i64, rcvq_seq: i64) -> i64 {
        copied_seq - rcvq_seq
    }

    /// Models tcp_rcv_space_adjust() [5.15, 6.1]: once per receiver RTT, if the
    /// application read more than last time, size sk_rcvbuf for twice that plus a
    /// 16-segment cushion and a growth term, at a per-segment memory cost.
    fn rcv_space_adjust(&self, sk: &mut TcpSocket) {
        let now = sk.tcp_mstamp;
        let gate = sk.k.rcv_space_gate_us(sk);
        if gate < 0 || now < gate {
            return;
        }
        let copied =
            sk.k.rcv_space_copied(sk, sk.rcv.copied_seq, sk.rcv.rcvq_seq);
        if copied > sk.rcv.rcvq_space {
            if sk.sysctl.tcp_moderate_rcvbuf != 0 && !sk.mem.rcvbuf_locked {
                kcall!(sk.grow_rcvbuf(copied));
            }
            sk.rcv.rcvq_space = copied;
        }
        sk.rcv.rcvq_seq = sk.rcv.copied_seq;
        sk.rcv.rcvq_time = now;
    }

    /// The sizing step of tcp_rcv_space_adjust() [5.15, 6.1].
    fn grow_rcvbuf(&self, sk: &mut TcpSocket, copied: i64) {
        let advmss = sk.conn.advmss;
        let rcvwin = drs_rcvwin(sk, copied);
        let mut rcvmem = skb_truesize(advmss + MAX_TCP_HEADER);
        while sk.k.win_from_space(sk, rcvmem) < advmss {
            rcvmem += 128;
        }
        let rcvbuf = (floor_div(rcvwin, advmss) * rcvmem).min(sk.sysctl.tcp_rmem.2);
        set_rcvbuf_grown(sk, rcvbuf);
    }

    /// tcp_rcvbuf_grow() does not exist before 6.16.
    fn rcvbuf_grow(&self, _sk: &mut TcpSocket, _newval: i64) {}

    /// No tcp_rcvbuf_grow() before 6.16, so no growth term (6.18 brings one back).
    fn rcvbuf_grow_term(&self, _sk: &TcpSocket, _newval: i64, _oldval: i64) -> i64 {
        0
    }

    // -- ACK details ----------------------------------------------------------------------

    /// Models tcp_dec_quickack_mode() [5.15]: one quick ACK used per segment sent.
    fn dec_quickack_mode(&self, sk: &mut TcpSocket) {
        let ack = &mut sk.ack;
        if ack.ack_quick != 0 {
            if ack.ack_quick <= 1 {
                ack.ack_quick = 0;
                ack.ack_ato = TCP_ATO_MIN_NS;
            } else {
                ack.ack_quick -= 1;
            }
        }
    }

    // -- sender side ----------------------------------------------------------------------

    /// Models tcp_may_update_window() [5.15]: a newer ACK or segment, or the same one
    /// with a larger window.
    fn may_update_window(&self, sk: &TcpSocket, seg: &Segment, ack: i64, nwin: i64) -> bool {
        let snd = &sk.snd;
        ack > snd.snd_una || seg.seq > snd.snd_wl1 || (seg.seq == snd.snd_wl1 && nwin > snd.snd_wnd)
    }

    /// Zero window with data in flight [tcp_retransmit_timer, 5.15]: give up when
    /// nothing was heard from the peer for TCP_RTO_MAX (120 s).
    fn rtx_probe0_timed_out(&self, sk: &TcpSocket) -> bool {
        sk.now - sk.snd.rcv_tstamp > TCP_RTO_MAX_NS
    }

    /// tcp_grow_skb() does not exist before 6.10: tcp_write_xmit() sends the head skb
    /// of the write queue as it is, however short (see linux_6_10.rs).
    fn grow_skb(&self, _sk: &TcpSocket, _q: &mut VecDeque<i64>, _missing: i64) {}

    /// tcp_tso_autosize() [tcp_output.c, 5.15]: the TSO size is the pacing rate's 1 ms
    /// share only; the min_rtt bonus came in 5.18 (see linux_6_1.rs).
    fn tso_rtt_bytes(&self, _sk: &TcpSocket) -> i64 {
        0
    }

    /// tcp_event_new_data_sent() [tcp_output.c, 5.15]: no tcp_check_space(); the send
    /// buffer grows only after an ACK, once the push that follows it is done
    /// (tcp_data_snd_check()). 4bfe744ff164 added the call in 5.18 (see linux_6_1.rs).
    fn new_data_checks_space(&self, _sk: &TcpSocket) -> bool {
        false
    }

    /// tcp_tso_should_defer() [tcp_output.c, 5.15]: defer only if the oldest unacked
    /// segment went out at least half an srtt ago (srtt_us >> 4 whole microseconds), i.e.
    /// its ACK is due within that: returns how soon (ns) the next ACK must be due.
    fn tso_defer_ack_window(&self, sk: &TcpSocket, srtt_ns: i64) -> i64 {
        srtt_ns - ((sk.snd.srtt_us8 >> 4) * NS_PER_US)
    }

    /// tcp_schedule_loss_probe() [tcp_output.c, 5.15]: the probe timeout, in whole
    /// jiffies (ns): 2 * srtt converted to jiffies (rounded up), plus TCP_RTO_MIN when a
    /// single segment is out (the peer may be delaying its ACK) or TCP_TIMEOUT_MIN (two
    /// jiffies) otherwise; TCP_TIMEOUT_INIT (1 s) before any RTT sample. (Stable trees
    /// that took 1c2709cfff1d have 6.7's rule, see linux_6_8.rs.)
    fn loss_probe_timeout(&self, sk: &TcpSocket) -> i64 {
        if sk.snd.srtt_us8 == 0 {
            return TCP_TIMEOUT_INIT_NS;
        }
        let floor = if sk.snd.rtx_queue.len() == 1 {
            TCP_RTO_MIN_NS
        } else {
            sk.jiffies_up(1) * 2
        };
        sk.jiffies_up((sk.snd.srtt_us8 >> 2) * NS_PER_US) + floor
    }

    /// hystart_ack_delay() [tcp_cubic.c, 5.15]: the time four GSO_MAX_SIZE (64 KiB) bursts
    /// take at the pacing rate, at most 1 ms; 0 without a pacing rate (the model's rate is
    /// ~0UL, -1, until the first RTT sample: the allowance is then 0).
    fn hystart_ack_delay(&self, sk: &TcpSocket) -> i64 {
        ack_delay(sk, GSO_MAX_SIZE)
    }

    /// cubictcp_acked() [tcp_cubic.c, 5.15]: HyStart runs only from a cwnd of
    /// hystart_low_window (16) up, its round bookkeeping included (changed in 6.14). As 5.15.y
    /// has it, with 4e1fddc98d25 (v5.16, backported): the round ends when snd_una passes
    /// end_seq, in hystart_update().
    fn hystart_round_reset_first(&self, _sk: &TcpSocket) -> bool {
        false
    }
}

/// GSO_MAX_SIZE of 5.15 (GSO_LEGACY_MAX_SIZE from 5.19).
pub const GSO_MAX_SIZE: i64 = 65536;

/// min(USEC_PER_MSEC, gso_bytes * 4 * USEC_PER_SEC / sk_pacing_rate), 0 when the rate is 0
/// (or ~0UL), for hystart_ack_delay().
pub(crate) fn ack_delay(sk: &TcpSocket, gso_bytes: i64) -> i64 {
    let rate = sk.snd.pacing_rate;
    if rate <= 0 {
        return 0;
    }
    (gso_bytes * 4 * 1_000_000 / rate).min(1000)
}

/// The trace event of one skb dropped by tcp_prune_ofo_queue() (5.15's and 6.2's loops).
pub(crate) fn trace_ofo_prune(sk: &mut TcpSocket, dropped: &Skb) {
    sk.trace(
        "drop",
        "ofo prune",
        TraceArgs {
            truesize: dropped.truesize,
            reason: "TCP_OFO_QUEUE_PRUNE".into(),
            ..TraceArgs::default()
        },
    );
}

/// The window tcp_rcv_space_adjust() [5.15-6.15] sizes for: twice what was copied, a
/// 16-segment cushion, and twice the growth over the last RTT.
pub(crate) fn drs_rcvwin(sk: &TcpSocket, copied: i64) -> i64 {
    let space = sk.rcv.rcvq_space;
    let mut rcvwin = (copied << 1) + 16 * sk.conn.advmss;
    let grow = py_floor_div(rcvwin * (copied - space), space);
    rcvwin += grow << 1;
    rcvwin
}

/// The common tail of the DRS sizing steps: a larger sk_rcvbuf is taken and window_clamp
/// follows it (win_from_space of the new budget).
pub(crate) fn set_rcvbuf_grown(sk: &mut TcpSocket, rcvbuf: i64) {
    if rcvbuf > sk.mem.sk_rcvbuf {
        sk.mem.sk_rcvbuf = rcvbuf;
        sk.rcv.window_clamp = sk.k.win_from_space(sk, rcvbuf);
        sk.trace("autotune", "rcvbuf_grow", TraceArgs::default());
    }
}
