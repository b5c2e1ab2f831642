//! Linux 6.1.59: the 6.1 stable series gains net.ipv4.tcp_shrink_window
//! (models/linux_6_1_59.py).
//!
//! Stable backport (9cddad8c0d47, review 2023-10-16) of b650d953cd39 "tcp: enforce receive
//! buffer memory limits by allowing the tcp window to shrink" -- Cloudflare's patch, in
//! src/patches/shrink_window.rs. Default 0 keeps 6.1.14's behaviour; 1 lets a scaled window
//! retract to what memory allows.

use crate::kernel::Kernel;
use crate::models::linux_6_1::Linux61;
use crate::patches::shrink_window;
use crate::socket::TcpSocket;

/// Linux 6.1.59: 6.1 plus the tcp_shrink_window sysctl.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux6159;

impl Kernel for Linux6159 {
    fn base(&self) -> &dyn Kernel {
        &Linux61
    }

    fn class_name(&self) -> &'static str {
        "Linux6159"
    }

    fn release(&self) -> &'static str {
        "6.1.59"
    }

    fn sysctls(&self) -> Vec<&'static str> {
        let mut s = Linux61.sysctls();
        s.push("tcp_shrink_window");
        s
    }

    /// ShrinkWindowSysctl (src/patches/shrink_window.rs): the merged form of b650d953cd39.
    fn shrink_allowed(&self, sk: &TcpSocket) -> bool {
        shrink_window::shrink_allowed(sk)
    }
}
