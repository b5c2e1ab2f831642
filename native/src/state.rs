//! The socket's state, as five typed records plus the connection state.
//!
//! Target shape of /work/state-spec.md (Python twin: tcpsim/core/state.py once the reshape
//! lands; today the same fields sit flat on tcpsim/core/socket.py `TcpSocket`). Field names
//! are the Python model's (kernel names; trace columns), only grouped by the kernel struct
//! they mirror. Initial values are those of socket.py `__init__`/`_init_receive_state`,
//! ack.py `_init_ack_state` and sender.py `_init_send_state`.

use std::collections::VecDeque;
use std::fmt;

use crate::constants::{TCP_MSS_DEFAULT, TCP_REORDERING, TCP_TIMEOUT_INIT_NS};
use crate::sender::INFINITE_SSTHRESH;
use crate::skb::Skb;
use crate::sysctl::Sysctls;
use crate::value::{FromValue, ToValue, Value};

/// Connection states (include/net/tcp_states.h); `as_str()` is the Python value, so traces
/// are unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcpState {
    Closed,
    Listen,
    SynSent,
    SynRecv,
    Established,
    CloseWait,
    FinWait1,
    FinWait2,
    LastAck,
    Closing,
    TimeWait,
}

impl TcpState {
    /// Every state, in the order of the Python enum.
    pub const ALL: [TcpState; 11] = [
        TcpState::Closed,
        TcpState::Listen,
        TcpState::SynSent,
        TcpState::SynRecv,
        TcpState::Established,
        TcpState::CloseWait,
        TcpState::FinWait1,
        TcpState::FinWait2,
        TcpState::LastAck,
        TcpState::Closing,
        TcpState::TimeWait,
    ];

    /// The state's name as the Python model and the traces spell it ("ESTABLISHED").
    pub fn as_str(self) -> &'static str {
        match self {
            TcpState::Closed => "CLOSED",
            TcpState::Listen => "LISTEN",
            TcpState::SynSent => "SYN_SENT",
            TcpState::SynRecv => "SYN_RECV",
            TcpState::Established => "ESTABLISHED",
            TcpState::CloseWait => "CLOSE_WAIT",
            TcpState::FinWait1 => "FIN_WAIT1",
            TcpState::FinWait2 => "FIN_WAIT2",
            TcpState::LastAck => "LAST_ACK",
            TcpState::Closing => "CLOSING",
            TcpState::TimeWait => "TIME_WAIT",
        }
    }

    /// The state named `name` (as `as_str()` spells it).
    pub fn from_name(name: &str) -> Option<TcpState> {
        TcpState::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// A synchronized state (socket.py `SYNCHRONIZED`): the handshake is complete.
    pub fn synchronized(self) -> bool {
        !matches!(
            self,
            TcpState::Closed | TcpState::Listen | TcpState::SynSent | TcpState::SynRecv
        )
    }
}

impl fmt::Display for TcpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromValue for TcpState {
    fn from_value(v: &Value) -> Result<Self, String> {
        match v {
            Value::Str(s) => TcpState::from_name(s).ok_or_else(|| format!("no TCP state {s}")),
            _ => Err(format!("expected a state name, got {v:?}")),
        }
    }
}

impl ToValue for TcpState {
    fn to_value(&self) -> Value {
        Value::Str(self.as_str().to_string())
    }
}

/// One skb on the retransmit queue (sender.py: the list `[seq, end, last tx time, times
/// retransmitted, lost, is FIN]`, integers all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtxEntry {
    pub seq: i64,
    pub end: i64,
    pub tx_ns: i64,
    pub retrans: i64,
    pub lost: i64,
    pub is_fin: i64,
    /// tcp_skb_cb->sacked bits: TCPCB_SACKED_ACKED, TCPCB_EVER_RETRANS (recovery.rs).
    pub sacked: i64,
}

impl ToValue for RtxEntry {
    fn to_value(&self) -> Value {
        [
            self.seq,
            self.end,
            self.tx_ns,
            self.retrans,
            self.lost,
            self.is_fin,
            self.sacked,
        ]
        .to_vec()
        .to_value()
    }
}

/// Declares a record struct and its `FIELDS` / `fields()` (name and value of every field, in
/// declaration order), so that the field list is written once.
macro_rules! record {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident: $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $($(#[$fm])* pub $f: $t,)*
        }

        impl $name {
            /// The field names, in declaration order.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($f),)*];

            /// (name, value) of every field, in declaration order.
            pub fn fields(&self) -> Vec<(&'static str, Value)> {
                vec![$((stringify!($f), self.$f.to_value()),)*]
            }

            /// The value of the field `name` (None: no such field). The one read table of
            /// the record (fields.rs).
            pub fn get(&self, name: &str) -> Option<Value> {
                match name {
                    $(stringify!($f) => Some(self.$f.to_value()),)*
                    _ => None,
                }
            }

            /// Set the field `name` to `v`; Err says why not (no such field, wrong type, a
            /// queue). The one write table of the record (fields.rs).
            pub fn set(&mut self, name: &str, v: &Value) -> Result<(), String> {
                match name {
                    $(stringify!($f) => {
                        self.$f = FromValue::from_value(v)
                            .map_err(|e| format!("{}: {e}", stringify!($f)))?;
                        Ok(())
                    })*
                    _ => Err(format!("no field {name}")),
                }
            }
        }
    };
}

record! {
    /// `sk.conn`: tcp_options_received + MSS + lifecycle.
    pub struct ConnState {
        pub state: TcpState,
        pub wscale_ok: bool,
        pub sack_ok: bool,
        pub ts_ok: bool,
        pub rcv_wscale: i64,
        pub snd_wscale: i64,
        pub tcp_header_len: i64,
        pub ts_recent: i64,
        pub rcv_tsecr: i64,
        pub mtu: i64,
        pub advmss: i64,
        pub mss_cache: i64,
        pub peer_mss: i64,
        pub init_rwnd: i64,
        /// When our SYN / SYN-ACK went out (the handshake's RTT); -1 before.
        pub syn_tx_ns: i64,
    }
}

impl ConnState {
    /// socket.py `TcpSocket.__init__`: a closed socket for a link of `mtu` bytes.
    pub fn new(mtu: i64, init_rwnd: i64) -> Self {
        ConnState {
            state: TcpState::Closed,
            wscale_ok: false,
            sack_ok: false,
            ts_ok: false,
            rcv_wscale: 0,
            snd_wscale: 0,
            tcp_header_len: 20,
            ts_recent: 0,
            rcv_tsecr: -1,
            mtu,
            advmss: mtu - 40,
            mss_cache: TCP_MSS_DEFAULT,
            peer_mss: TCP_MSS_DEFAULT,
            init_rwnd,
            syn_tx_ns: -1,
        }
    }
}

record! {
    /// `sk.rcv`: tcp_sock, receive half.
    pub struct RcvState {
        pub irs: i64,
        pub rcv_nxt: i64,
        pub copied_seq: i64,
        pub rcv_wup: i64,
        pub rcv_wnd: i64,
        pub window_clamp: i64,
        pub rcv_ssthresh: i64,
        pub rcvlowat: i64,
        /// -1 before 6.6 (no scaling_ratio), else the era's initial ratio.
        pub scaling_ratio: i64,
        pub last_seg_size: i64,
        pub rcvq_space: i64,
        pub rcvq_seq: i64,
        pub rcvq_time: i64,
        pub rcv_rtt_us8: i64,
        pub rcv_rtt_seq: i64,
        pub rcv_rtt_time: i64,
        pub rcv_rtt_last_tsecr: i64,
        pub pred_ok: bool,
        pub last_oow_ack_ns: i64,
        /// SACK blocks [start, end] to report.
        pub selective_acks: Vec<(i64, i64)>,
        pub dsack: Option<(i64, i64)>,
        pub rcv_shutdown: bool,
        pub bytes_received: i64,
        pub read_untraced: i64,
        /// See socket.py `on_peer_release()`: "infinite" (1 << 62) until the peer reports.
        pub peer_released: i64,
        /// Highest right edge ever advertised (7.1, 0e24d17bd966; 0 before 7.1).
        pub rcv_mwnd_seq: i64,
    }
}

impl RcvState {
    /// socket.py `_init_receive_state`, receive half; `scaling_ratio` is the era's
    /// `initial_scaling_ratio()`.
    pub fn new(scaling_ratio: i64) -> Self {
        RcvState {
            irs: 0,
            rcv_nxt: 0,
            copied_seq: 0,
            rcv_wup: 0,
            rcv_wnd: 0,
            window_clamp: 0,
            rcv_ssthresh: 0,
            rcvlowat: 1,
            scaling_ratio,
            last_seg_size: 0,
            rcvq_space: 0,
            rcvq_seq: 0,
            rcvq_time: 0,
            rcv_rtt_us8: 0,
            rcv_rtt_seq: 0,
            rcv_rtt_time: 0,
            rcv_rtt_last_tsecr: -1,
            pred_ok: false,
            last_oow_ack_ns: -1_000_000_000_000,
            selective_acks: Vec::new(),
            dsack: None,
            rcv_shutdown: false,
            bytes_received: 0,
            read_untraced: 0,
            peer_released: 1 << 62,
            rcv_mwnd_seq: 0,
        }
    }
}

record! {
    /// `sk.mem`: struct sock receive memory + queues.
    pub struct MemState {
        pub sk_rcvbuf: i64,
        pub sk_rmem_alloc: i64,
        pub sk_forward_alloc: i64,
        /// sk_wmem_queued as last charged to sk_forward_alloc.
        pub wmem_charged: i64,
        pub rcvbuf_locked: bool,
        pub receive_queue: VecDeque<Skb>,
        pub ofo_queue: Vec<Skb>,
        /// Payload bytes rewritten by tcp_collapse, ever.
        pub collapsed_bytes: i64,
        pub collapses: i64,
        /// Modelled time spent collapsing (cost model).
        pub collapse_ns_total: i64,
        pub collapse_ns_max: i64,
        /// sk->sk_bypass_prot_mem [6.19, 7c268eaeec63]: opted out of the protocol's global
        /// memory accounting, from net.core.bypass_prot_mem at socket(2). Only the flag is
        /// modelled: its effect on the host's TCP memory pool belongs to the host model.
        pub sk_bypass_prot_mem: bool,
        /// The socket owned by the user (sk_lock.owned; src/backlog.rs): the application's
        /// recvmsg/sendmsg holds the socket until this time (ns; 0 = not owned).
        pub owned_until: i64,
        /// The truesize of the skbs parked in its backlog meanwhile (sk_backlog.len,
        /// counted by tcp_space()).
        pub sk_backlog_len: i64,
    }
}

impl MemState {
    /// socket.py `_init_receive_state`, memory part: sk_rcvbuf from tcp_rmem[1]
    /// (tcp_init_sock()).
    pub fn new(sysctl: &Sysctls) -> Self {
        MemState {
            sk_rcvbuf: sysctl.tcp_rmem.1,
            sk_rmem_alloc: 0,
            sk_forward_alloc: 0,
            wmem_charged: 0,
            rcvbuf_locked: false,
            receive_queue: VecDeque::new(),
            ofo_queue: Vec::new(),
            collapsed_bytes: 0,
            collapses: 0,
            collapse_ns_total: 0,
            collapse_ns_max: 0,
            sk_bypass_prot_mem: sysctl.patched("bypass_prot_mem").unwrap_or(0) != 0,
            owned_until: 0,
            sk_backlog_len: 0,
        }
    }
}

record! {
    /// `sk.ack`: inet_connection_sock.icsk_ack + delack / compressed-SACK timers.
    pub struct AckState {
        pub ack_pending: i64,
        pub ack_quick: i64,
        pub ack_ato: i64,
        pub ack_lrcvtime: i64,
        pub ack_pingpong: i64,
        /// When the delayed-ACK timer runs (ns; 0 = not armed).
        pub delack_deadline: i64,
        /// With a kernel tick: the expiry it was armed for (jiffies).
        pub delack_expires: i64,
        pub ack_rcv_mss: i64,
        pub dup_ack_counter: i64,
        pub comp_rcv_nxt: i64,
        pub compressed_ack: i64,
        pub comp_sack_deadline: i64,
        pub lsndtime: i64,
    }
}

impl AckState {
    /// ack.py `_init_ack_state`.
    pub fn new() -> Self {
        AckState {
            ack_pending: 0,
            ack_quick: 0,
            ack_ato: 0,
            ack_lrcvtime: 0,
            ack_pingpong: 0,
            delack_deadline: 0,
            delack_expires: 0,
            ack_rcv_mss: 536,
            dup_ack_counter: 0,
            comp_rcv_nxt: -1,
            compressed_ack: 0,
            comp_sack_deadline: 0,
            lsndtime: 0,
        }
    }
}

impl Default for AckState {
    fn default() -> Self {
        AckState::new()
    }
}

record! {
    /// `sk.snd`: tcp_sock send half + icsk retransmit state.
    pub struct SndState {
        pub iss: i64,
        pub snd_una: i64,
        pub snd_nxt: i64,
        pub write_seq: i64,
        pub snd_wnd: i64,
        pub snd_wl1: i64,
        pub max_window: i64,
        pub bytes_acked: i64,
        pub initcwnd: i64,
        pub snd_cwnd: i64,
        pub snd_ssthresh: i64,
        pub cwnd_cnt: i64,
        /// tp->is_cwnd_limited.
        pub cwnd_limited: bool,
        /// tp->max_packets_out.
        pub max_packets_out: i64,
        /// tp->cwnd_usage_seq.
        pub cwnd_usage_seq: i64,
        pub srtt_us8: i64,
        pub mdev_us: i64,
        pub rto: i64,
        pub rtx_queue: VecDeque<RtxEntry>,
        /// Lengths of the unsent skbs, in order.
        pub write_queue: VecDeque<i64>,
        /// End of the last small segment sent.
        pub snd_sml: i64,
        /// The path hands the peer a multi-segment skb whole (TSO on loopback / a direct
        /// veth pair: Device::gso_whole); else software GSO cuts it into MSS-sized wire
        /// segments.
        pub gso_whole: bool,
        /// sk_pacing_rate, bytes/s; -1: ~0UL (unlimited).
        pub pacing_rate: i64,
        /// tcp_min_rtt(); 0: no sample yet.
        pub min_rtt_us: i64,
        /// tcp_wstamp_ns: when data was last sent.
        pub wstamp_ns: i64,
        /// ICSK_TIME_LOSS_PROBE armed until then (ns).
        pub tlp_deadline: i64,
        /// snd_nxt when the last probe went out; 0: none.
        pub tlp_high_seq: i64,
        /// That probe was a retransmission.
        pub tlp_retrans: bool,
        pub lost_out: i64,
        pub rto_deadline: i64,
        pub probe_deadline: i64,
        pub backoff: i64,
        pub retransmits: i64,
        pub probes_out: i64,
        pub retrans_stamp: i64,
        pub rcv_tstamp: i64,
        pub dupacks: i64,
        pub high_seq: i64,
        pub in_recovery: bool,
        /// TCP_CA_Loss (after an RTO), not Recovery.
        pub in_loss: bool,
        /// tp->sacked_out: segments SACKed, not yet cumulatively acked (recovery.rs).
        pub sacked_out: i64,
        /// tcp_highest_sack_seq(): end of the highest SACKed segment; 0: none.
        pub highest_sack: i64,
        /// tp->reord_seen: a SACK or ACK showed reordering.
        pub reord_seen: bool,
        /// tp->reordering: tcp_init_sock()'s net.ipv4.tcp_reordering, grown by
        /// tcp_check_sack_reordering().
        pub reordering: i64,
        /// tp->rack.mstamp: send time of the latest delivered segment (ns).
        pub rack_mstamp: i64,
        /// tp->rack.end_seq.
        pub rack_end_seq: i64,
        /// tp->rack.rtt_us.
        pub rack_rtt_us: i64,
        /// tp->rack.advanced.
        pub rack_advanced: bool,
        /// ICSK_TIME_REO_TIMEOUT armed until then (ns).
        pub reo_deadline: i64,
        /// tp->prior_cwnd: cwnd when the reduction began (PRR).
        pub prior_cwnd: i64,
        /// tp->prr_delivered.
        pub prr_delivered: i64,
        /// tp->prr_out.
        pub prr_out: i64,
        pub rtx_next: i64,
        pub sk_sndbuf: i64,
        /// SOCK_NOSPACE: a write found the send buffer full.
        pub sock_nospace: bool,
        pub nodelay: bool,
        pub fin_queued: bool,
        pub fin_sent: bool,
        pub snd_shutdown: bool,
        /// struct bictcp, CUBIC's icsk_ca_priv [tcp_cubic.c] (src/cong/cubic.rs); Reno leaves
        /// it at zero. ca_last_time, ca_epoch_start in clock ticks (tcp_jiffies32);
        /// ca_round_start, ca_last_ack in tcp_mstamp us; delays in us.
        pub ca_cnt: i64,
        /// W_max.
        pub ca_last_max_cwnd: i64,
        pub ca_last_cwnd: i64,
        pub ca_last_time: i64,
        /// bic_origin_point.
        pub ca_origin_point: i64,
        /// bic_K, in 2^-10 s.
        pub ca_k: i64,
        pub ca_delay_min: i64,
        pub ca_epoch_start: i64,
        pub ca_ack_cnt: i64,
        /// The TCP-friendly (Reno) estimate.
        pub ca_tcp_cwnd: i64,
        pub ca_sample_cnt: i64,
        /// HyStart found the exit.
        pub ca_found: bool,
        pub ca_round_start: i64,
        pub ca_end_seq: i64,
        pub ca_last_ack: i64,
        pub ca_curr_rtt: i64,
    }
}

impl SndState {
    /// sender.py `_init_send_state`: sk_sndbuf from tcp_wmem[1].
    pub fn new(initcwnd: i64, nodelay: bool, sysctl: &Sysctls) -> Self {
        SndState {
            iss: 0,
            snd_una: 0,
            snd_nxt: 0,
            write_seq: 0,
            snd_wnd: 0,
            snd_wl1: 0,
            max_window: 0,
            bytes_acked: 0,
            initcwnd,
            snd_cwnd: initcwnd,
            snd_ssthresh: INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            srtt_us8: 0,
            mdev_us: 0,
            rto: TCP_TIMEOUT_INIT_NS,
            rtx_queue: VecDeque::new(),
            write_queue: VecDeque::new(),
            snd_sml: 0,
            gso_whole: false,
            pacing_rate: -1,
            min_rtt_us: 0,
            wstamp_ns: 0,
            tlp_deadline: 0,
            tlp_high_seq: 0,
            tlp_retrans: false,
            lost_out: 0,
            rto_deadline: 0,
            probe_deadline: 0,
            backoff: 0,
            retransmits: 0,
            probes_out: 0,
            retrans_stamp: 0,
            rcv_tstamp: 0,
            dupacks: 0,
            high_seq: 0,
            in_recovery: false,
            in_loss: false,
            sacked_out: 0,
            highest_sack: 0,
            reord_seen: false,
            reordering: TCP_REORDERING,
            rack_mstamp: 0,
            rack_end_seq: 0,
            rack_rtt_us: 0,
            rack_advanced: false,
            reo_deadline: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            rtx_next: 0,
            sk_sndbuf: sysctl.tcp_wmem.1,
            sock_nospace: false,
            nodelay,
            fin_queued: false,
            fin_sent: false,
            snd_shutdown: false,
            ca_cnt: 0,
            ca_last_max_cwnd: 0,
            ca_last_cwnd: 0,
            ca_last_time: 0,
            ca_origin_point: 0,
            ca_k: 0,
            ca_delay_min: 0,
            ca_epoch_start: 0,
            ca_ack_cnt: 0,
            ca_tcp_cwnd: 0,
            ca_sample_cnt: 0,
            ca_found: false,
            ca_round_start: 0,
            ca_end_seq: 0,
            ca_last_ack: 0,
            ca_curr_rtt: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_round_trip() {
        for s in TcpState::ALL {
            assert_eq!(TcpState::from_name(s.as_str()), Some(s));
        }
        assert!(TcpState::Established.synchronized() && TcpState::TimeWait.synchronized());
        assert!(!TcpState::SynRecv.synchronized());
        assert_eq!(TcpState::from_name("established"), None);
    }

    #[test]
    fn field_lists_match_the_spec() {
        assert_eq!(ConnState::FIELDS.len(), 15);
        assert_eq!(RcvState::FIELDS.len(), 26);
        // + sk_lock.owned (owned_until) and sk_backlog.len (src/backlog.rs)
        assert_eq!(MemState::FIELDS.len(), 14);
        assert_eq!(AckState::FIELDS.len(), 13);
        // 45 + the SACK scoreboard, RACK, PRR (11) + struct bictcp (16) + tp->reordering and
        // SOCK_NOSPACE (the send buffer, 2) + the path's GSO delivery (gso_whole, 1)
        assert_eq!(SndState::FIELDS.len(), 75);
        let c = ConnState::new(1500, 0);
        assert_eq!(c.fields().len(), ConnState::FIELDS.len());
        assert_eq!(c.advmss, 1460);
    }

    #[test]
    fn initial_buffers_follow_the_sysctls() {
        let s = Sysctls::default();
        assert_eq!(MemState::new(&s).sk_rcvbuf, 131072);
        let snd = SndState::new(10, true, &s);
        assert_eq!(
            (snd.sk_sndbuf, snd.snd_cwnd, snd.rto),
            (16384, 10, 1_000_000_000)
        );
        assert_eq!(snd.snd_ssthresh, INFINITE_SSTHRESH);
    }
}
