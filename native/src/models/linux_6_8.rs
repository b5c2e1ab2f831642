//! Linux 6.8: the default scaling_ratio goes from 25 % to 50 % (models/linux_6_8.py).
//!
//! 697a6c8cec03 "tcp: increase the default TCP scaling ratio" (also backported to 6.6.y
//! stable): before any segment is measured the ratio is 128/256, so the initial windows are
//! back to ~64 KiB instead of 6.6.0's ~32 KiB. Otherwise 6.6 in everything ported so far.

use crate::kernel::Kernel;
use crate::models::linux_6_6;
use crate::socket::TcpSocket;

/// 1 << (TCP_RMEM_TO_WIN_SCALE - 1).
pub const DEFAULT_SCALING_RATIO: i64 = 128;

/// Linux 6.8: 6.6 with the 50 % default scaling_ratio.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux68;

impl Kernel for Linux68 {
    fn release(&self) -> &'static str {
        "6.8"
    }

    /// tcp_scaling_ratio_init() [6.8]: the ratio assumed before any segment is measured.
    fn initial_scaling_ratio(&self) -> i64 {
        DEFAULT_SCALING_RATIO
    }

    fn win_from_space(&self, sk: &TcpSocket, space: i64) -> i64 {
        linux_6_6::win_from_space(sk, space)
    }
}
