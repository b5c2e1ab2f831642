//! Marek Majkowski's initrwnd patch (2022, not merged): open rcv_ssthresh on the first RTT
//! (models/patches/initrwnd.py).
//!
//! "RTAX_INITRWND should be able to bring the rcv_ssthresh above 64KiB" (net-next, 2022-07-21):
//! rcv_ssthresh normally starts at the initial rcv_wnd (at most 64 KiB before 6.10) and grows
//! by two segments per good packet, so a large receive window opens over many RTTs. With the
//! patch, a route's initrwnd (in segments; scenario `[receiver] initrwnd = 1000`) raises the
//! initial rcv_ssthresh to initrwnd * mss, so the first scaled ACK can advertise it all.
//! Upstream, initrwnd can only *lower* the initial window (applied as a min).

use crate::constants::TCP_HEADER_TS;
use crate::kernel::Kernel;
use crate::patches::PatchInfo;
use crate::socket::TcpSocket;

/// tcp_connect_init() / tcp_openreq_init_rwin(): rcv_ssthresh = max(rcv_wnd, initrwnd * mss).
pub struct InitRwnd {
    base: Box<dyn Kernel>,
}

pub const PATCH: PatchInfo = PatchInfo {
    name: "initrwnd",
    summary: "Majkowski's initrwnd: a route's initrwnd raises the initial rcv_ssthresh",
    class_name: "InitRwnd",
    apply: |base| Box::new(InitRwnd { base }),
};

impl Kernel for InitRwnd {
    fn base(&self) -> &dyn Kernel {
        &*self.base
    }

    fn class_name(&self) -> &'static str {
        PATCH.class_name
    }

    fn init_rcv_ssthresh(&self, sk: &mut TcpSocket) {
        let mss = sk.conn.advmss - if sk.conn.ts_ok { TCP_HEADER_TS } else { 0 };
        sk.rcv.rcv_ssthresh = sk.rcv.rcv_wnd.max(sk.conn.init_rwnd * mss);
    }
}
