//! Linux 6.6 LTS: windows from a measured len/truesize ratio (models/linux_6_6.py).
//!
//! dfa2f0483360 "tcp: get rid of sysctl_tcp_adv_win_scale": memory <-> window uses
//! `scaling_ratio` (len/truesize x 256); the default before any sample is 65 (~25 %).

use crate::kernel::Kernel;
use crate::socket::TcpSocket;

pub const TCP_RMEM_TO_WIN_SCALE: i64 = 8;
/// (1200 << 8) / SKB_TRUESIZE(4096).
pub const DEFAULT_SCALING_RATIO: i64 = 65;

/// Linux 6.6: scaling_ratio windows (25 % default).
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux66;

impl Kernel for Linux66 {
    fn release(&self) -> &'static str {
        "6.6"
    }

    /// tcp_scaling_ratio_init(): the ratio assumed before any segment is measured.
    fn initial_scaling_ratio(&self) -> i64 {
        DEFAULT_SCALING_RATIO
    }

    fn win_from_space(&self, sk: &TcpSocket, space: i64) -> i64 {
        win_from_space(sk, space)
    }
}

/// Models __tcp_win_from_space() [include/net/tcp.h, 6.6]: space * ratio / 256. (A free
/// function so that later eras, which keep it, call it as Python's subclasses inherit it.)
pub fn win_from_space(sk: &TcpSocket, space: i64) -> i64 {
    (space * sk.rcv.scaling_ratio) >> TCP_RMEM_TO_WIN_SCALE
}
