//! Congestion control: the sender's pluggable algorithm, one small interface
//! (tcpsim/core/cong/__init__.py).
//!
//! Models `struct tcp_congestion_ops` [include/net/tcp.h] and its registry [tcp_cong.c]. The
//! socket's algorithm is `sysctl.tcp_congestion_control` (tcp_assign_congestion_control()),
//! and the sender calls it through the `ca_*` methods below, which dispatch to `reno` or
//! `cubic` -- Python's `sk.ca.<hook>(sk, ...)`:
//!
//! - `ca_init`         init: tcp_init_congestion_control(), when the connection is set up
//! - `ca_ssthresh`     ssthresh: the new slow-start threshold on a loss or a reduction
//! - `ca_loss_ssthresh` the threshold tcp_enter_loss() sets (Reno's model differs, reno.rs)
//! - `ca_cong_avoid`   cong_avoid: cwnd growth on an ACK of new data
//! - `ca_pkts_acked`   pkts_acked: an RTT sample of the ACK (struct ack_sample's rtt_us)
//! - `ca_cwnd_event`   cwnd_event: CA_EVENT_TX_START, CA_EVENT_CWND_RESTART
//! - `ca_set_state`    set_state: tcp_set_ca_state(); only TCP_CA_Loss is reported
//!
//! `undo_cwnd` is not part of the model (the sender has no undo). The private state (struct
//! bictcp) lives in the sender's record, `SndState.ca_*`.

pub mod cubic;
pub mod reno;

use crate::socket::TcpSocket;

/// enum tcp_ca_event [include/net/tcp.h]: first transmit when no packets in flight.
pub const CA_EVENT_TX_START: i64 = 0;
/// Congestion window restart after idle.
pub const CA_EVENT_CWND_RESTART: i64 = 1;
/// enum tcp_ca_state [include/net/tcp.h]: TCP_CA_Loss.
pub const TCP_CA_LOSS: i64 = 4;

/// The registered algorithms (tcp_available_congestion_control of the model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CongestionControl {
    /// The kernel's default.
    #[default]
    Cubic,
    Reno,
}

impl CongestionControl {
    /// tcp_ca_find(): the algorithm of this name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "cubic" => Some(CongestionControl::Cubic),
            "reno" => Some(CongestionControl::Reno),
            _ => None,
        }
    }

    /// The name `net.ipv4.tcp_congestion_control` shows.
    pub fn name(self) -> &'static str {
        match self {
            CongestionControl::Cubic => "cubic",
            CongestionControl::Reno => "reno",
        }
    }
}

/// tcp_slow_start() [tcp_cong.c, 5.15]: cwnd grows by the segments acked, up to ssthresh;
/// returns the acked segments left over for congestion avoidance.
pub fn tcp_slow_start(sk: &mut TcpSocket, acked: i64) -> i64 {
    let snd = &mut sk.snd;
    let cwnd = (snd.snd_cwnd + acked).min(snd.snd_ssthresh);
    let left = acked - (cwnd - snd.snd_cwnd);
    snd.snd_cwnd = cwnd;
    left
}

/// tcp_cong_avoid_ai() [tcp_cong.c, 5.15]: one more segment of cwnd per `w` segments acked
/// (snd_cwnd_cnt counts them; a stale count >= w first pays one segment).
pub fn tcp_cong_avoid_ai(sk: &mut TcpSocket, w: i64, acked: i64) {
    let snd = &mut sk.snd;
    if snd.cwnd_cnt >= w {
        snd.cwnd_cnt = 0;
        snd.snd_cwnd += 1;
    }
    snd.cwnd_cnt += acked;
    if snd.cwnd_cnt >= w {
        let delta = snd.cwnd_cnt / w;
        snd.cwnd_cnt -= delta * w;
        snd.snd_cwnd += delta;
    }
}

impl TcpSocket {
    /// init: tcp_init_congestion_control().
    pub fn ca_init(&mut self) {
        if self.sysctl.tcp_congestion_control == CongestionControl::Cubic {
            cubic::init(self);
        }
    }

    /// ssthresh: the slow-start threshold after a loss or a cwnd reduction.
    pub fn ca_ssthresh(&mut self) -> i64 {
        match self.sysctl.tcp_congestion_control {
            CongestionControl::Cubic => cubic::ssthresh(self),
            CongestionControl::Reno => reno::ssthresh(self),
        }
    }

    /// The slow-start threshold tcp_enter_loss() sets.
    pub fn ca_loss_ssthresh(&mut self) -> i64 {
        match self.sysctl.tcp_congestion_control {
            CongestionControl::Cubic => cubic::ssthresh(self),
            CongestionControl::Reno => reno::loss_ssthresh(self),
        }
    }

    /// cong_avoid: grow cwnd on an ACK that acknowledged `acked` segments.
    pub fn ca_cong_avoid(&mut self, acked: i64) {
        match self.sysctl.tcp_congestion_control {
            CongestionControl::Cubic => cubic::cong_avoid(self, acked),
            CongestionControl::Reno => reno::cong_avoid(self, acked),
        }
    }

    /// pkts_acked: an ACK's RTT sample (us).
    pub fn ca_pkts_acked(&mut self, rtt_us: i64) {
        if self.sysctl.tcp_congestion_control == CongestionControl::Cubic {
            cubic::pkts_acked(self, rtt_us);
        }
    }

    /// cwnd_event: tcp_ca_event().
    pub fn ca_cwnd_event(&mut self, event: i64) {
        if self.sysctl.tcp_congestion_control == CongestionControl::Cubic {
            cubic::cwnd_event(self, event);
        }
    }

    /// sndbuf_expand: tcp_sndbuf_expand()'s factor [tcp_input.c, 6.18]; 2 when the hook is
    /// NULL, as for Reno and CUBIC (bbr's 3 is not modelled: no bbr here).
    pub fn ca_sndbuf_expand(&self) -> i64 {
        match self.sysctl.tcp_congestion_control {
            CongestionControl::Cubic | CongestionControl::Reno => 2,
        }
    }

    /// set_state: tcp_set_ca_state().
    pub fn ca_set_state(&mut self, state: i64) {
        if self.sysctl.tcp_congestion_control == CongestionControl::Cubic {
            cubic::set_state(self, state);
        }
    }
}
