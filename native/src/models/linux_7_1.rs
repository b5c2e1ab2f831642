//! Linux 7.1: receive-side RFC 7323 window retraction (models/linux_7_1.py).
//!
//! 0e24d17bd966 "tcp: implement RFC 7323 window retraction receiver requirements" (net-next,
//! merged for 7.1; the v3 patch mail read): the socket remembers the highest right edge it
//! ever advertised, tp->rcv_mwnd_seq -- set to rcv_wup + rcv_wnd at connect, on the SYN-ACK,
//! for children, Fast Open children and TCP_REPAIR_WINDOW, and raised in tcp_select_window()
//! each time a window is stored (the zero-window branch included). tcp_sequence() checks a
//! segment's end against rcv_nxt + tcp_max_receive_window(); the FIN allowance still uses the
//! live window. tcp_data_queue() is unchanged; its TCP_OVERWINDOW drop counts BeyondWindow
//! (e2b9c52a2b00). Release inferred from the net-next merge date (UNVERIFIED, ±1).
//!
//! tcpsim keeps rcv_mwnd_seq in sk.rcv.rcv_mwnd_seq, raised where tcp_select_window() stores
//! a window; the handshake initialisations all equal the live right edge, which
//! tcp_max_receive_window() here takes as a floor. Relation to `--policy rfc7323-retraction`
//! (src/patches/rfc7323_retraction.rs): the same tracking and counting, but the patch extends
//! the FIN allowance to the maximum window while 7.1 keeps it at the live window.

use crate::kernel::Kernel;
use crate::models::linux_7_0::Linux70;
use crate::segment::{Segment, FIN};
use crate::socket::TcpSocket;

/// Linux 7.1: tcp_sequence() honours the largest window ever advertised.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux71;

/// tcp_update_max_rcv_wnd_seq() [include/net/tcp.h, 7.1]: raise rcv_mwnd_seq to the right
/// edge just stored.
fn update_max_rcv_wnd_seq(sk: &mut TcpSocket) {
    let edge = sk.rcv.rcv_wup + sk.rcv.rcv_wnd;
    sk.rcv.rcv_mwnd_seq = sk.rcv.rcv_mwnd_seq.max(edge);
}

impl Kernel for Linux71 {
    fn base(&self) -> &dyn Kernel {
        &Linux70
    }

    fn class_name(&self) -> &'static str {
        "Linux71"
    }

    fn release(&self) -> &'static str {
        "7.1"
    }

    /// tcp_select_window() [7.1]: store the window, then tcp_update_max_rcv_wnd_seq().
    fn advertise_window(&self, sk: &mut TcpSocket) -> i64 {
        let raw = self.base().advertise_window(sk);
        update_max_rcv_wnd_seq(sk);
        raw
    }

    /// tcp_select_window() NOMEM branch [7.1]: the stored zero updates rcv_mwnd_seq too.
    fn nomem_window(&self, sk: &mut TcpSocket) -> i64 {
        let raw = self.base().nomem_window(sk);
        update_max_rcv_wnd_seq(sk);
        raw
    }

    /// tcp_max_receive_window() [include/net/tcp.h, 7.1]: rcv_mwnd_seq - rcv_nxt, at least 0
    /// (the handshake's rcv_wup + rcv_wnd as the floor of rcv_mwnd_seq).
    fn sequence_window(&self, sk: &TcpSocket) -> i64 {
        let rcv = &sk.rcv;
        (rcv.rcv_mwnd_seq.max(rcv.rcv_wup + rcv.rcv_wnd) - rcv.rcv_nxt).max(0)
    }

    /// Models tcp_sequence()'s end check [7.1, 0e24d17bd966]: `right` is the largest edge
    /// advertised (sequence_window); a segment ending past it is still in the window when
    /// it ends, FIN byte left out, within the live window (the FIN allowance keeps the live
    /// edge). The rest of tcp_sequence() -- a segment starting beyond, or ending beyond
    /// while data is queued, is BeyondWindow -- is 6.17's.
    fn end_beyond_window(&self, sk: &TcpSocket, seg: &Segment, right: i64) -> bool {
        let fin = i64::from(seg.flags & FIN != 0);
        seg.end_seq() > right && seg.end_seq() - fin > sk.rcv.rcv_nxt + sk.receive_window()
    }

    /// tcp_data_queue() TCP_OVERWINDOW [7.1, e2b9c52a2b00]: counted as BeyondWindow.
    fn overwindow_drop(&self, sk: &mut TcpSocket) {
        sk.mib.BeyondWindow += 1;
    }
}
