//! Linux 6.18 as the development machines run it (6.18.44) (models/linux_6_18.py).
//!
//! What 6.18 changed on top of 6.17 (autumn-2025 fixes), and what its stable series took back:
//! * admission: 6.18.0 tested rmem + skb->len <= rcvbuf ("tcp: use skb->len instead of
//!   skb->truesize in tcp_can_ingest()"); 026dfef287c0 "tcp: give up on stronger sk_rcvbuf
//!   checks (for now)" (net 2026-02-28, mainline 7.0-rc) returned to rmem <= rcvbuf; the
//!   6.18.y series took it in 6.18.17 (its release announcement lists it), so this profile models
//!   6.18.17 and later, and linux-6.18.0 models 6.18.0-6.18.16. 6.18.44
//!   measured: 787 PruneCalled and 0 RcvPruned while tcp_clamp_window() dragged rcvbuf up
//!   (docs/kernel-measurements.md, E5), which only the reverted test allows.
//! * aa251c84636c "tcp: fix too slow tcp_rcvbuf_grow() action": the slow-start growth term
//!   2 * rcvwin * (new - old) / old is back in tcp_rcvbuf_grow().
//! * out-of-order segments grow sk_rcvbuf (tcp_data_queue_ofo() calls tcp_rcvbuf_grow() with
//!   the unchanged baseline, so the OFO span is budgeted) once the socket is accepted.
//! * a bare FIN is accepted at a zero window, and a segment whose data fits but whose FIN lies
//!   just past the window is not "beyond window".
//! * sender: 295ce1eb36ae "tcp: fix tcp_tso_should_defer() vs large RTT" (Oct 2025, 6.18-rc2;
//!   also taken by the 5.4 ... 6.17 stable trees): a TSO skb waits for a bigger window only if
//!   the next ACK is due within min(srtt / 2, 1 ms), not srtt / 2.

use crate::arith::py_floor_div;
use crate::constants::NS_PER_MS;
use crate::kcall;
use crate::kernel::Kernel;
use crate::models::linux_6_17::Linux617;
use crate::segment::{Segment, FIN};
use crate::skb::Skb;
use crate::socket::TcpSocket;

/// Linux 6.18.y: proportional DRS growth, OFO-driven growth, plain admission.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux618;

impl Kernel for Linux618 {
    fn base(&self) -> &dyn Kernel {
        &Linux617
    }

    fn class_name(&self) -> &'static str {
        "Linux618"
    }

    fn release(&self) -> &'static str {
        "6.18"
    }

    /// Models tcp_can_ingest() [6.18.y after 026dfef287c0]: rmem <= rcvbuf, tested
    /// before queueing (tcp_prune_queue() still clamps whenever this fails).
    fn can_ingest(&self, sk: &TcpSocket, _skb: &Skb) -> bool {
        sk.mem.sk_rmem_alloc <= sk.mem.sk_rcvbuf
    }

    /// aa251c84636c: let the sender double its rate, 2 * rcvwin * (new - old) / old.
    fn rcvbuf_grow_term(&self, _sk: &TcpSocket, newval: i64, oldval: i64) -> i64 {
        let rcvwin = newval << 1;
        if oldval != 0 {
            py_floor_div(rcvwin * (newval - oldval), oldval) << 1
        } else {
            0
        }
    }

    /// tcp_data_queue_ofo() [6.18]: tcp_rcvbuf_grow(rcvq_space.space) for accepted
    /// sockets, so the receive buffer covers the out-of-order span.
    fn ofo_rcvbuf_grow(&self, sk: &mut TcpSocket) {
        if sk.accepted {
            let space = sk.rcv.rcvq_space;
            kcall!(sk.rcvbuf_grow(space));
        }
    }

    /// A bare FIN is accepted even at a zero window.
    fn zero_window_accepts(&self, _sk: &TcpSocket, seg: &Segment) -> bool {
        seg.len == 0 && seg.flags & FIN != 0
    }

    /// FIN allowance: only the data must fit.
    fn end_beyond_window(&self, _sk: &TcpSocket, seg: &Segment, right: i64) -> bool {
        seg.seq + seg.len > right
    }

    /// tcp_tso_should_defer() [tcp_output.c, 6.18, 295ce1eb]: defer only if the next
    /// ACK (the oldest unacked segment's send time + srtt) is due within min(srtt / 2,
    /// 1 ms): with a long RTT a smooth ACK clock beats bigger TSO packets.
    fn tso_defer_ack_window(&self, _sk: &TcpSocket, srtt_ns: i64) -> i64 {
        (srtt_ns >> 1).min(NS_PER_MS)
    }
}
