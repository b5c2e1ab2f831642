//! Linux 6.17 (with the 6.16 autotuning rewrite before it) (models/linux_6_17.py).
//!
//! From 6.16 (Eric Dumazet's May-2025 series):
//! * tcp_rmem[2] defaults to 32 MiB (572be9bf9d0d) instead of 6 MiB.
//! * DRS rewritten as tcp_rcvbuf_grow() (65c5287892e9 "tcp: fix sk_rcvbuf overshoot"): the
//!   bytes still queued are not credited as read, and the buffer is sized for twice what was
//!   read in the last receiver RTT -- no 16-segment cushion, no growth term.
//! * the receiver RTT from timestamps seeks the minimum: smaller samples are taken at once,
//!   zero samples are ignored, larger ones are smoothed only while the receive queue is empty.
//!
//! From 6.17 (the July-2025 series):
//! * 1d2fbaad7cd8 "tcp: stronger sk_rcvbuf checks": admission and pruning test
//!   rmem + skb->truesize <= rcvbuf *before* queueing (tcp_can_ingest), so memory-squeeze zero
//!   windows come much earlier; tcp_prune_queue() does nothing on empty queues.
//! * "do not accept packets beyond window": a segment whose end lies beyond the advertised
//!   window is dropped unless the receive queue is empty (BeyondWindow).
//! * out-of-order segments also update rcv_mss ("call tcp_measure_rcv_mss() for ooo packets").
//! * "tcp: fix tcp_ofo_queue() to avoid including too much DUP SACK range" (June 2025): data
//!   received again in order while held out of order is D-SACKed exactly, not up to the end of
//!   the new data (tcp_dsack_mult.pkt is its test).
//!
//! Stable point: 6.17.0-6.17.2. The 6.17.y series took f017c1f768b6 ("tcp: use skb->len instead
//! of skb->truesize in tcp_can_ingest()", stable review of 2025-10-13, so 6.17.3 -- the release
//! number is inferred from the review date) and from then on admits as linux-6.18.0 does; it
//! ended before 026dfef287c0 (Feb 2026) could reach it (UNVERIFIED: no 6.17.y revert found).

use crate::kcall;
use crate::kernel::Kernel;
use crate::models::linux_5_15::{set_rcvbuf_grown, MIB};
use crate::models::linux_6_14::Linux614;
use crate::segment::Segment;
use crate::skb::Skb;
use crate::socket::TcpSocket;
use crate::sysctl::Sysctls;

/// Linux 6.17: tcp_rcvbuf_grow() DRS, truesize admission, beyond-window drops.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux617;

impl Kernel for Linux617 {
    fn base(&self) -> &dyn Kernel {
        &Linux614
    }

    fn class_name(&self) -> &'static str {
        "Linux617"
    }

    fn release(&self) -> &'static str {
        "6.17"
    }

    fn rmem2_default(&self) -> i64 {
        32 * MIB
    }

    fn pingpong_thresh(&self) -> i64 {
        1
    }

    fn default_sysctls(&self) -> Sysctls {
        Sysctls {
            tcp_rmem: (4096, 131072, self.rmem2_default()),
            ..Sysctls::default()
        }
    }

    // -- 6.16: autotuning -----------------------------------------------------------------

    /// tcp_rcv_space_adjust() [6.16+]: bytes read this RTT minus bytes still queued.
    fn rcv_space_copied(&self, sk: &TcpSocket, copied_seq: i64, rcvq_seq: i64) -> i64 {
        (copied_seq - rcvq_seq) - (sk.rcv.rcv_nxt - copied_seq)
    }

    /// Models tcp_rcv_space_adjust() [6.16+]: once per receiver RTT, grow the buffer
    /// through tcp_rcvbuf_grow() when more was consumed than last time.
    fn rcv_space_adjust(&self, sk: &mut TcpSocket) {
        let now = sk.tcp_mstamp;
        let gate = sk.k.rcv_space_gate_us(sk);
        if gate < 0 || now < gate {
            return;
        }
        let copied =
            sk.k.rcv_space_copied(sk, sk.rcv.copied_seq, sk.rcv.rcvq_seq);
        if copied > sk.rcv.rcvq_space {
            kcall!(sk.rcvbuf_grow(copied));
        }
        sk.rcv.rcvq_seq = sk.rcv.copied_seq;
        sk.rcv.rcvq_time = now;
    }

    /// Models tcp_rcvbuf_grow() [6.16]: rcvbuf = tcp_space_from_win(2 * newval + the
    /// out-of-order span), capped at tcp_rmem[2]; window_clamp follows.
    fn rcvbuf_grow(&self, sk: &mut TcpSocket, newval: i64) {
        let oldval = sk.rcv.rcvq_space;
        sk.rcv.rcvq_space = newval;
        if sk.sysctl.tcp_moderate_rcvbuf == 0 || sk.mem.rcvbuf_locked {
            return;
        }
        let k = &sk.k;
        let mut rcvwin = (newval << 1) + k.rcvbuf_grow_term(sk, newval, oldval);
        if let Some(last) = sk.mem.ofo_queue.last() {
            rcvwin += last.end_seq - sk.rcv.rcv_nxt;
        }
        let rcvbuf = k.space_from_win(sk, rcvwin).min(sk.sysctl.tcp_rmem.2);
        set_rcvbuf_grown(sk, rcvbuf);
    }

    /// 6.16-6.17 (before aa251c84636c): no slow-start growth term.
    fn rcvbuf_grow_term(&self, _sk: &TcpSocket, _newval: i64, _oldval: i64) -> i64 {
        0
    }

    /// Models tcp_rcv_rtt_update() [6.16+]: jump to smaller samples; smooth larger
    /// timestamp samples only while nothing is queued; ignore larger window samples.
    fn rcv_rtt_update(&self, sk: &mut TcpSocket, sample_us: i64, win_dep: bool) {
        let old = sk.rcv.rcv_rtt_us8;
        let m = sample_us << 3;
        if old == 0 || m < old {
            sk.rcv.rcv_rtt_us8 = m;
            return;
        }
        if win_dep || sk.rcv.rcv_nxt != sk.rcv.copied_seq {
            return;
        }
        sk.rcv.rcv_rtt_us8 = old - (old >> 3) + sample_us;
    }

    /// tcp_rcv_rtt_measure_ts() [6.16+]: zero-delay samples are ignored.
    fn ts_rtt_sample_us(&self, delta_ms: i64) -> i64 {
        if delta_ms > 0 {
            delta_ms * 1000
        } else {
            -1
        }
    }

    // -- 6.17: admission and sequence checks ----------------------------------------------

    /// Models tcp_can_ingest() [6.17, 1d2fbaad7cd8]: rmem + truesize <= rcvbuf.
    fn can_ingest(&self, sk: &TcpSocket, skb: &Skb) -> bool {
        sk.mem.sk_rmem_alloc + skb.truesize <= sk.mem.sk_rcvbuf
    }

    /// tcp_prune_queue() [6.17+]: clamp when the incoming skb cannot be ingested.
    fn needs_clamp(&self, sk: &TcpSocket, skb: &Skb) -> bool {
        !sk.k.can_ingest(sk, skb)
    }

    /// The stop test inside tcp_prune_ofo_queue() [6.17+]: tcp_can_ingest() of the skb
    /// just dropped (as the kernel passes it).
    fn ofo_prune_done(&self, sk: &TcpSocket, dropped: &Skb) -> bool {
        sk.k.can_ingest(sk, dropped)
    }

    /// tcp_prune_queue() [6.17+]: nothing to prune on empty queues.
    fn prune_queue(&self, sk: &mut TcpSocket, skb: &Skb) -> i64 {
        if sk.mem.sk_rmem_alloc == 0 {
            return -1;
        }
        self.base().prune_queue(sk, skb)
    }

    /// Models tcp_sequence() [6.17+]: also reject a segment ending beyond the window
    /// unless the receive queue is empty (BeyondWindow).
    fn tcp_sequence(&self, sk: &mut TcpSocket, seg: &Segment) -> &'static str {
        if seg.end_seq() < sk.rcv.rcv_wup {
            return "TCP_OLD_SEQUENCE";
        }
        let right = sk.rcv.rcv_nxt + sk.k.sequence_window(sk);
        if sk.k.end_beyond_window(sk, seg, right) {
            if seg.seq > right {
                sk.mib.BeyondWindow += 1;
                return "TCP_INVALID_SEQUENCE";
            }
            if !sk.mem.receive_queue.is_empty() {
                sk.mib.BeyondWindow += 1;
                return "TCP_INVALID_END_SEQUENCE";
            }
        }
        ""
    }

    /// Does the segment end past the right edge? [6.17: the FIN byte counts].
    fn end_beyond_window(&self, _sk: &TcpSocket, seg: &Segment, right: i64) -> bool {
        seg.end_seq() > right
    }

    /// tcp_ofo_queue() [6.17+, "tcp: fix tcp_ofo_queue() to avoid including too much DUP
    /// SACK range"]: D-SACK only the duplicated part, up to min(end_seq, dsack_high).
    fn ofo_dsack(&self, _sk: &TcpSocket, skb: &Skb, dsack_high: i64) -> (i64, i64) {
        (skb.end_seq.min(dsack_high), dsack_high)
    }

    /// tcp_data_queue_ofo() [6.17+]: out-of-order data updates rcv_mss too.
    fn ofo_measure_rcv_mss(&self, sk: &mut TcpSocket, seg: &Segment, skb: &Skb) {
        kcall!(sk.measure_rcv_mss(seg, skb));
    }
}
