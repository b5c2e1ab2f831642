//! Linux 6.14 (and the 6.11 change before it) (models/linux_6_14.py).
//!
//! * from 6.11 (Subash Abhinov Kasiviswanathan / Sean Tranchetti): when the measured
//!   scaling_ratio changes, window_clamp follows tcp_win_from_space(sk_rcvbuf) -- also for
//!   SO_RCVBUF-locked sockets -- and the DRS baseline is capped to it.
//! * 25c1a9ca53db "tcp_cubic: fix incorrect HyStart round start detection" (v6.14): HyStart's
//!   rounds are reset below hystart_low_window too.
//! * 8c670bdfa58e "tcp: correct handling of extreme memory squeeze" (Jon Maloy, v6.14): the
//!   zero window advertised after a memory drop is stored (rcv_wnd = 0, rcv_wup = rcv_nxt), so a
//!   later read reliably sends the window update.

use crate::kcall;
use crate::kernel::Kernel;
use crate::models::linux_6_10::Linux610;
use crate::socket::TcpSocket;
use crate::state::TcpState;

/// Linux 6.14: clamp follows the ratio; NOMEM zero window stored.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux614;

impl Kernel for Linux614 {
    fn base(&self) -> &dyn Kernel {
        &Linux610
    }

    fn class_name(&self) -> &'static str {
        "Linux614"
    }

    fn release(&self) -> &'static str {
        "6.14"
    }

    /// hystart_update() [tcp_cubic.c, 6.14]: 25c1a9ca53db "tcp_cubic: fix incorrect HyStart
    /// round start detection" (Mahdi Arghavani, 2025) moves the hystart_low_window test after
    /// the round reset, so rounds are tracked from the first ACK. Also in stable trees
    /// (5.15.179 and later); the 5.15 .. 6.10 profiles model the mainline releases.
    fn hystart_round_reset_first(&self, _sk: &TcpSocket) -> bool {
        true
    }

    /// tcp_measure_rcv_mss() [6.11+]: window_clamp = W(sk_rcvbuf), DRS baseline capped.
    fn on_scaling_ratio_change(&self, sk: &mut TcpSocket) {
        let clamp = sk.k.win_from_space(sk, sk.mem.sk_rcvbuf);
        kcall!(sk.set_window_clamp(clamp));
        if sk.rcv.window_clamp < sk.rcv.rcvq_space {
            sk.rcv.rcvq_space = sk.rcv.window_clamp;
        }
    }

    /// Models tcp_set_window_clamp() [6.x]: lowering the clamp lowers rcv_ssthresh;
    /// raising it lets rcv_ssthresh follow up to rcv_wnd.
    fn set_window_clamp(&self, sk: &mut TcpSocket, val: i64) {
        let rcv = &mut sk.rcv;
        if val == 0 {
            if sk.conn.state == TcpState::Closed {
                rcv.window_clamp = 0;
            }
            return;
        }
        let old = rcv.window_clamp;
        let new = val.max(4608 / 2);
        if new == old {
            return;
        }
        rcv.window_clamp = new;
        if new < old {
            rcv.rcv_ssthresh = rcv.rcv_ssthresh.min(new);
        } else {
            rcv.rcv_ssthresh = rcv.rcv_wnd.min(new).max(rcv.rcv_ssthresh);
        }
    }

    /// tcp_select_window() NOMEM branch [6.14+]: store the zero.
    fn nomem_window(&self, sk: &mut TcpSocket) -> i64 {
        sk.rcv.pred_ok = false;
        sk.rcv.rcv_wnd = 0;
        sk.rcv.rcv_wup = sk.rcv.rcv_nxt;
        0
    }
}
