//! The kernel's decision points, as one trait whose default methods are Linux 5.15.
//!
//! Mirrors the policy interface of tcpsim/policy.py as implemented by models/linux_5_15.py;
//! later eras (src/models/linux_*.rs) override exactly what their Python twins override.
//! Only the decision points that the ported rooms call are here so far: the rest arrive
//! with the rooms that call them (receive, ack, sender).

use crate::socket::TcpSocket;

/// A kernel era's decisions. Default methods are 5.15's (models/linux_5_15.py `Linux515`).
pub trait Kernel: Send + Sync {
    /// The era's release, as the Python class's `RELEASE` ("5.15", "6.6").
    fn release(&self) -> &'static str;

    /// No scaling_ratio before 6.6 (reported as -1).
    fn initial_scaling_ratio(&self) -> i64 {
        -1
    }

    /// Models tcp_win_from_space() [include/net/tcp.h, 5.15]: tcp_adv_win_scale.
    fn win_from_space(&self, sk: &TcpSocket, space: i64) -> i64 {
        let a = sk.sysctl.tcp_adv_win_scale;
        if a <= 0 {
            space >> (-a)
        } else {
            space - (space >> a)
        }
    }
}
