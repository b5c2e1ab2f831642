//! Linux 6.6 LTS: windows from a measured len/truesize ratio, zero windows on memory
//! pressure (models/linux_6_6.py).
//!
//! What 6.6 changed in the receive path (commits cited in receive-path.md §12):
//! * from 6.5: net.ipv4.tcp_shrink_window (b650d953cd39, Cloudflare's patch upstream; default 0).
//! * dfa2f0483360 "tcp: get rid of sysctl_tcp_adv_win_scale": memory <-> window uses
//!   `scaling_ratio` (len/truesize x 256), sampled from a segment that changes rcv_mss; the
//!   default before any sample is 65 (~25 %) -- 6.6.0 to 6.8 shipped the small ~32 KiB initial
//!   windows this gives. tcp_adv_win_scale is kept but has no effect. DRS sizes sk_rcvbuf as
//!   tcp_space_from_win(rcvwin) instead of a per-segment memory estimate.
//! * e2142825c120 (tcp-oom-probe): an in-order segment dropped for lack of memory schedules an
//!   immediate ACK advertising a zero window (ICSK_ACK_NOMEM), not a silent drop; with an empty
//!   queue the segment is forced in. 6.6 does not store that zero in rcv_wnd (fixed in 6.14).
//! * 800a666141de: a zero window on a duplicate ACK updates the sender's snd_wnd.
//! * e89688e3e978: a zero-window retransmission gives up only after 2 x TCP_RTO_MAX without
//!   an ACK and 2 x TCP_RTO_MAX of retransmitting.
//! * since 6.2: tcp_prune_ofo_queue() stops at the incoming segment's sequence and counts
//!   OfoPruned only when it dropped something.
//! * quick-ack mode is left one step per ACK actually owed (Neal Cardwell, 2023).

use crate::arith::floor_div;
use crate::constants::{
    ICSK_ACK_NOMEM, ICSK_ACK_NOW, ICSK_ACK_PUSHED, ICSK_ACK_SCHED, TCP_ATO_MIN_NS, TCP_RTO_MAX_NS,
};
use crate::kcall;
use crate::kernel::Kernel;
use crate::models::linux_5_15::{drs_rcvwin, set_rcvbuf_grown, trace_ofo_prune};
use crate::models::linux_6_1::Linux61;
use crate::patches::shrink_window;
use crate::segment::{Segment, PSH};
use crate::skb::Skb;
use crate::socket::TcpSocket;

pub const TCP_RMEM_TO_WIN_SCALE: i64 = 8;

/// Linux 6.6: scaling_ratio windows (25 % default), NOMEM zero-window ACKs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux66;

impl Kernel for Linux66 {
    fn base(&self) -> &dyn Kernel {
        &Linux61
    }

    fn class_name(&self) -> &'static str {
        "Linux66"
    }

    fn release(&self) -> &'static str {
        "6.6"
    }

    fn sysctls(&self) -> Vec<&'static str> {
        let mut s = Linux61.sysctls();
        s.push("tcp_shrink_window");
        s
    }

    /// (1200 << 8) / SKB_TRUESIZE(4096).
    fn default_scaling_ratio(&self) -> i64 {
        65
    }

    /// tcp_scaling_ratio_init(): the ratio assumed before any segment is measured.
    fn initial_scaling_ratio(&self) -> i64 {
        self.default_scaling_ratio()
    }

    /// ShrinkWindowSysctl (src/patches/shrink_window.rs): the merged form of b650d953cd39.
    fn shrink_allowed(&self, sk: &TcpSocket) -> bool {
        shrink_window::shrink_allowed(sk)
    }

    /// Models __tcp_win_from_space() [include/net/tcp.h, 6.6]: space * ratio / 256.
    fn win_from_space(&self, sk: &TcpSocket, space: i64) -> i64 {
        (space * sk.rcv.scaling_ratio) >> TCP_RMEM_TO_WIN_SCALE
    }

    /// Models __tcp_space_from_win(): win * 256 / ratio.
    fn space_from_win(&self, sk: &TcpSocket, win: i64) -> i64 {
        floor_div(win << TCP_RMEM_TO_WIN_SCALE, sk.rcv.scaling_ratio)
    }

    /// tcp_measure_rcv_mss() [6.6]: re-sample scaling_ratio from this one skb, only
    /// when rcv_mss is about to change (a steady stream of equal segments never does).
    fn on_rcv_mss_change(&self, sk: &mut TcpSocket, seg: &Segment, skb: &Skb) {
        let old = sk.rcv.scaling_ratio;
        sk.rcv.scaling_ratio = floor_div(skb.len << TCP_RMEM_TO_WIN_SCALE, skb.truesize).max(1);
        if sk.rcv.scaling_ratio != old {
            kcall!(sk.on_scaling_ratio_change());
        }
        if seg.flags & PSH != 0 {
            sk.ack.ack_pending |= ICSK_ACK_PUSHED;
        }
    }

    /// Nothing follows a ratio change in 6.6 (window_clamp does from 6.11).
    fn on_scaling_ratio_change(&self, _sk: &mut TcpSocket) {}

    /// tcp_grow_window() under pressure [6.x]: tcp_adjust_rcv_ssthresh().
    fn grow_under_pressure(&self, sk: &mut TcpSocket) {
        kcall!(sk.pressure_adjust());
    }

    /// tcp_data_queue() in-order memory step [6.6, e2142825c120]: on failure ask for an
    /// immediate zero-window ACK; drop only if other data is queued, else force it in.
    fn admit_in_order(&self, sk: &mut TcpSocket, skb: &Skb) -> bool {
        if kcall!(sk.try_rmem_schedule(skb, skb.truesize)) {
            return true;
        }
        sk.ack.ack_pending |= ICSK_ACK_NOMEM | ICSK_ACK_NOW | ICSK_ACK_SCHED;
        sk.data_ready();
        if !sk.mem.receive_queue.is_empty() && skb.len != 0 {
            return false;
        }
        sk.forced_mem_schedule(skb.truesize);
        true
    }

    /// tcp_select_window() [6.6]: after a memory drop advertise 0 at once.
    fn advertise_window(&self, sk: &mut TcpSocket) -> i64 {
        if sk.ack.ack_pending & ICSK_ACK_NOMEM != 0 {
            return kcall!(sk.nomem_window());
        }
        self.base().advertise_window(sk)
    }

    /// 6.6-6.13: the zero is advertised but not stored in rcv_wnd (the deadlock Jon
    /// Maloy fixed in 6.14: the read-side window update may then never fire).
    fn nomem_window(&self, _sk: &mut TcpSocket) -> i64 {
        0
    }

    /// tcp_dec_quickack_mode() [6.6]: count only ACKs of new data actually owed.
    fn dec_quickack_mode(&self, sk: &mut TcpSocket) {
        let ack = &mut sk.ack;
        if ack.ack_quick != 0 {
            let pkts = i64::from(ack.ack_pending & ICSK_ACK_SCHED != 0);
            if pkts >= ack.ack_quick {
                ack.ack_quick = 0;
                ack.ack_ato = TCP_ATO_MIN_NS;
            } else {
                ack.ack_quick -= pkts;
            }
        }
    }

    /// tcp_prune_ofo_queue() [6.2+]: never drop OFO data below the incoming segment;
    /// OfoPruned and the SACK reset only when something was dropped.
    fn prune_ofo_queue(&self, sk: &mut TcpSocket, skb: &Skb) -> bool {
        let mut pruned = false;
        let mut goal = sk.mem.sk_rcvbuf >> 3;
        while sk
            .mem
            .ofo_queue
            .last()
            .is_some_and(|last| skb.seq <= last.seq)
        {
            let Some(dropped) = sk.ofo_drop_last() else {
                break;
            };
            pruned = true;
            goal -= dropped.truesize;
            trace_ofo_prune(sk, &dropped);
            if sk.mem.ofo_queue.is_empty() || goal <= 0 {
                if sk.k.ofo_prune_done(sk, &dropped) && !sk.under_memory_pressure() {
                    break;
                }
                goal = sk.mem.sk_rcvbuf >> 3;
            }
        }
        if pruned {
            sk.mib.OfoPruned += 1;
            sk.rcv.selective_acks.clear();
        }
        pruned
    }

    /// The stop test inside tcp_prune_ofo_queue() [6.2-6.16]: rmem <= rcvbuf.
    fn ofo_prune_done(&self, sk: &TcpSocket, _dropped: &Skb) -> bool {
        sk.mem.sk_rmem_alloc <= sk.mem.sk_rcvbuf
    }

    /// tcp_rcv_space_adjust() sizing [6.6-6.15]: memory = tcp_space_from_win(rcvwin).
    fn grow_rcvbuf(&self, sk: &mut TcpSocket, copied: i64) {
        let rcvwin = drs_rcvwin(sk, copied);
        let rcvbuf = sk.k.space_from_win(sk, rcvwin).min(sk.sysctl.tcp_rmem.2);
        set_rcvbuf_grown(sk, rcvbuf);
    }

    /// tcp_may_update_window() [6.6, 800a666141de]: a zero window always counts.
    fn may_update_window(&self, sk: &TcpSocket, seg: &Segment, ack: i64, nwin: i64) -> bool {
        let snd = &sk.snd;
        ack > snd.snd_una
            || seg.seq > snd.snd_wl1
            || (seg.seq == snd.snd_wl1 && (nwin > snd.snd_wnd || nwin == 0))
    }

    /// tcp_rtx_probe0_timed_out() [6.6]: no ACK for 2 x TCP_RTO_MAX and retransmitting
    /// for 2 x TCP_RTO_MAX.
    fn rtx_probe0_timed_out(&self, sk: &TcpSocket) -> bool {
        let timeout = 2 * TCP_RTO_MAX_NS;
        if sk.now - sk.snd.rcv_tstamp <= timeout {
            return false;
        }
        sk.now - sk.snd.retrans_stamp > timeout
    }
}
