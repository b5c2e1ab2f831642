//! Linux 6.8: the default scaling_ratio goes from 25 % to 50 % (models/linux_6_8.py).
//!
//! 697a6c8cec03 "tcp: increase the default TCP scaling ratio" (Hechao Li, 2024; also backported
//! to 6.6.y stable): before any segment is measured the ratio is 128/256, so the initial windows
//! are back to ~64 KiB (64240 / 65160 on the wire) instead of 6.6.0's ~32 KiB.
//!
//! Sender: 1c2709cfff1d "tcp: fix excessive TLP and RACK timeouts from HZ rounding" (6.7; in
//! the 4.19+ stable trees too) adds the loss probe's 2 ms floor in microseconds before the
//! conversion to jiffies (the same as 5.15's two jiffies at HZ=1000, less at HZ=250).
//!
//! Socket backlog: 133c4c0d3717 "tcp: defer regular ACK while processing socket backlog" (6.7)
//! adds net.ipv4.tcp_backlog_ack_defer (default 1): an ACK due while the socket is owned by
//! the user waits for tcp_release_cb() [tcp_output.c, 6.7+] (__tcp_ack_snd_check
//! [tcp_input.c]).

use crate::constants::{NS_PER_US, TCP_RTO_MIN_NS, TCP_TIMEOUT_INIT_NS};
use crate::kernel::Kernel;
use crate::models::linux_6_6::Linux66;
use crate::socket::TcpSocket;

/// Linux 6.8: 6.6 with the 50 % default scaling_ratio.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux68;

impl Kernel for Linux68 {
    fn base(&self) -> &dyn Kernel {
        &Linux66
    }

    fn class_name(&self) -> &'static str {
        "Linux68"
    }

    fn release(&self) -> &'static str {
        "6.8"
    }

    /// 6.7's net.ipv4.tcp_backlog_ack_defer.
    fn sysctls(&self) -> Vec<&'static str> {
        let mut s = Linux66.sysctls();
        s.push("tcp_backlog_ack_defer");
        s
    }

    /// 1 << (TCP_RMEM_TO_WIN_SCALE - 1).
    fn default_scaling_ratio(&self) -> i64 {
        128
    }

    /// 6.6's tcp_scaling_ratio_init() with this era's DEFAULT_SCALING_RATIO (Python
    /// inherits the method, which reads the attribute; see src/kernel.rs on constants).
    fn initial_scaling_ratio(&self) -> i64 {
        self.default_scaling_ratio()
    }

    /// tcp_schedule_loss_probe() [tcp_output.c, 6.7+]: 2 * srtt plus tcp_rto_min (one
    /// segment out) or TCP_TIMEOUT_MIN_US (2 ms), summed in microseconds, then rounded up
    /// to whole jiffies; TCP_TIMEOUT_INIT before any RTT sample.
    fn loss_probe_timeout(&self, sk: &TcpSocket) -> i64 {
        if sk.snd.srtt_us8 == 0 {
            return TCP_TIMEOUT_INIT_NS;
        }
        let floor = if sk.snd.rtx_queue.len() == 1 {
            TCP_RTO_MIN_NS
        } else {
            2000 * NS_PER_US
        };
        sk.jiffies_up((sk.snd.srtt_us8 >> 2) * NS_PER_US + floor)
    }
}
