//! Cloudflare's window-shrinking patch (Mike Freemon, 2023): upstream as tcp_shrink_window
//! (models/patches/shrink_window.py).
//!
//! "tcp: enforce receive buffer memory limits by allowing the tcp window to shrink" (v3,
//! 2023-06-09), merged as b650d953cd39 for 6.5 and backported to 6.1.59. Without it the
//! offered window never retracts: tcp_select_window() rounds the current right edge *up* to the
//! window-scale unit, so a sender of small segments keeps getting window while memory runs
//! past sk_rcvbuf, and tcp_clamp_window() then raises sk_rcvbuf toward tcp_rmem[2]. With it
//! (and window scaling) the window follows free memory down to zero.
//!
//! `shrink_allowed` is the upstream form (Python's mixin `ShrinkWindowSysctl`: the sysctl,
//! default 0), used by linux-6.1.59 and 6.5+. `ShrinkWindow` is the patch for kernels without
//! it (`--policy shrink-window`): the same code with the sysctl defaulting to 1.

use crate::kernel::Kernel;
use crate::patches::PatchInfo;
use crate::socket::TcpSocket;
use crate::sysctl::Sysctls;

/// ShrinkWindowSysctl.shrink_allowed: net.ipv4.tcp_shrink_window (merged form of
/// b650d953cd39). Retract when the sysctl is set and the window is scaled (without scaling
/// the old behaviour is already exact to the byte).
pub fn shrink_allowed(sk: &TcpSocket) -> bool {
    sk.sysctl.tcp_shrink_window != 0 && sk.conn.rcv_wscale != 0
}

/// Cloudflare's patch on a kernel that lacks the sysctl: shrink by default.
pub struct ShrinkWindow {
    base: Box<dyn Kernel>,
}

pub const PATCH: PatchInfo = PatchInfo {
    name: "shrink-window",
    summary: "Cloudflare's tcp_shrink_window=1 behaviour for kernels without the sysctl",
    class_name: "ShrinkWindow",
    apply: |base| Box::new(ShrinkWindow { base }),
};

impl Kernel for ShrinkWindow {
    fn base(&self) -> &dyn Kernel {
        &*self.base
    }

    fn class_name(&self) -> &'static str {
        PATCH.class_name
    }

    fn extra_sysctls(&self) -> Vec<&'static str> {
        let mut s = self.base.extra_sysctls();
        s.push("tcp_shrink_window");
        s
    }

    fn default_sysctls(&self) -> Sysctls {
        Sysctls {
            tcp_shrink_window: 1,
            ..self.base.default_sysctls()
        }
    }

    fn shrink_allowed(&self, sk: &TcpSocket) -> bool {
        shrink_allowed(sk)
    }
}
