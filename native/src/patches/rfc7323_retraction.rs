//! RFC 7323 receiver-side window retraction (Simon Baatz, net-next 2026): rcv_mwnd_seq
//! (models/patches/rfc7323_retraction.py).
//!
//! RFC 7323 §2.4 lets a receiver retract (shrink) its window but requires it to accept data
//! that the sender sent into any window previously advertised. Linux's tcp_shrink_window (6.5)
//! retracts without that tolerance: tcp_sequence() checks against the current window, so a
//! sender that used the old window is dropped as beyond-window. The series tracks the maximum
//! right edge ever advertised (tp->rcv_mwnd_seq) and makes tcp_sequence() accept segments up to
//! it (tcp_max_receive_window()); tcp_data_queue() still drops in-order data at a zero window
//! and out-of-order data beyond the current window, which now counts as BeyondWindow
//! (e2b9c52a2b00). Apply it to linux-6.17 or later (it builds on their beyond-window checks):
//! `--policy rfc7323-retraction`.
//! Tests: the kernel selftests tcp_rcv_wnd_shrink_allowed / tcp_rcv_wnd_shrink_nomem.
//!
//! Upstream: merged for 7.1 as 0e24d17bd966 + e2b9c52a2b00, modelled by the linux-7.1 profile
//! (models/linux_7_1.py). The same rcv_mwnd_seq tracking and BeyondWindow counting, one
//! difference: this patch (the series as posted) lets a FIN one byte past the largest
//! advertised edge through, where 7.1 checks the FIN against the live window (such a segment
//! then goes only into an empty receive queue). Use the patch to see the idea on an older
//! kernel; use -p linux-7.1 for what 7.1 does.

use crate::kernel::Kernel;
use crate::patches::PatchInfo;
use crate::socket::TcpSocket;

/// tcp_sequence() accepts up to the largest right edge ever advertised.
/// Its rcv_mwnd_seq is the socket's (sk.rcv.rcv_mwnd_seq, where 7.1 keeps it): a kernel
/// object serves every socket of a host's class, on any thread.
pub struct Rfc7323Retraction {
    base: Box<dyn Kernel>,
}

pub const PATCH: PatchInfo = PatchInfo {
    name: "rfc7323-retraction",
    summary: "2026 upstream series: accept data up to the max advertised right edge (rcv_mwnd_seq)",
    class_name: "Rfc7323Retraction",
    apply: |base| Box::new(Rfc7323Retraction { base }),
};

impl Kernel for Rfc7323Retraction {
    fn base(&self) -> &dyn Kernel {
        &*self.base
    }

    fn class_name(&self) -> &'static str {
        PATCH.class_name
    }

    /// tcp_select_window() then rcv_mwnd_seq = max(rcv_mwnd_seq, rcv_wup + rcv_wnd), kept in
    /// the socket.
    fn advertise_window(&self, sk: &mut TcpSocket) -> i64 {
        let raw = self.base.advertise_window(sk);
        let edge = sk.rcv.rcv_wup + sk.rcv.rcv_wnd;
        sk.rcv.rcv_mwnd_seq = sk.rcv.rcv_mwnd_seq.max(edge);
        raw
    }

    /// e2b9c52a2b00: TCP_OVERWINDOW drops count as BeyondWindow too.
    fn overwindow_drop(&self, sk: &mut TcpSocket) {
        sk.mib.BeyondWindow += 1;
    }

    /// tcp_max_receive_window(): from rcv_nxt to the largest right edge advertised.
    fn sequence_window(&self, sk: &TcpSocket) -> i64 {
        let right = sk.rcv.rcv_mwnd_seq.max(sk.rcv.rcv_wup + sk.rcv.rcv_wnd);
        (right - sk.rcv.rcv_nxt).max(0)
    }
}
