//! Linux 6.19 as its stable series runs it from 6.19.7 on (models/linux_6_19.py).
//!
//! What 6.19 changed on the receive path (Eric Dumazet's November-2025 net-next series, merged
//! for 6.19; patch mails and netdev post-receive logs read, tcp_input.c of 6.19.10 read for
//! tcp_rcvbuf_grow()):
//! * ecfea98b7d0d "tcp: add net.ipv4.tcp_rcvbuf_low_rtt" (default 1000 us): tcp_rcvbuf_grow()
//!   adds, instead of the slow-start term 2 * rcvwin * (new - old) / old, only
//!   rcvwin * rtt / tcp_rcvbuf_low_rtt when the receiver's RTT estimate is below the sysctl:
//!   data-centre flows keep a small sk_rcvbuf. The slow-start term itself is now computed as
//!   (2 * rcvwin) * (new - old) / old (one division, not (rcvwin * (new - old) / old) * 2).
//!   The out-of-order path (tcp_data_queue_ofo() -> tcp_rcvbuf_grow(rcvq_space.space)) takes
//!   the low-RTT branch too: there new == old, so 6.18 added nothing and 6.19 adds
//!   rcvwin * rtt / tcp_rcvbuf_low_rtt.
//! * 6d5dea68246e "tcp: tcp_moderate_rcvbuf is only used in rx path": moves the sysctl into the
//!   netns_ipv4 RX cache-line group. No behaviour changes: nothing to model.
//! * 416dd649f3aa "tcp: add net.ipv4.tcp_comp_sack_rtt_percent" (default 33, range 1-1000):
//!   the SACK-compression timer waits that percentage of the RTT (was 5 %), still capped by
//!   tcp_comp_sack_delay_ns (1 ms). The kernel computes (rtt_us8 + rtt_us8 / 4) * percent ns.
//! * 7c268eaeec63 / b46ab63181ff (net.core.bypass_prot_mem, sk->sk_bypass_prot_mem): the flag
//!   is recorded (sk.mem.sk_bypass_prot_mem) and the host's pool honours it (src/memory.rs,
//!   src/protmem.rs: no charge, no pressure for such a socket).
//!
//! Admission: 6.19.0-6.19.6 test rmem + skb->len <= sk_rcvbuf before queueing (as
//! linux-6.18.0); 6.19.7 took 026dfef287c0 and tests rmem <= sk_rcvbuf again, which this
//! profile inherits from linux-6.18 (6.18.44).

use crate::arith::py_floor_div;
use crate::kernel::Kernel;
use crate::models::linux_6_18::Linux618;
use crate::socket::TcpSocket;
use crate::sysctl::{SysctlSpec, Sysctls};

/// The sysctls 6.19 adds besides tcp_rcvbuf_low_rtt: name, default, the range the kernel
/// accepts (net/ipv4/sysctl_net_ipv4.c, net/core/sysctl_net_core.c [6.19]).
pub const ERA_SYSCTLS: [SysctlSpec; 2] = [
    SysctlSpec {
        name: "tcp_comp_sack_rtt_percent",
        default: 33,
        lo: 1,
        hi: 1000,
        doc: "% of the RTT compressed SACKs wait (416dd649f3aa)",
    },
    SysctlSpec {
        name: "bypass_prot_mem",
        default: 0,
        lo: 0,
        hi: 1,
        doc: "new sockets opt out of the protocol's global memory accounting (b46ab63181ff)",
    },
];

/// Linux 6.19.7+: low-RTT DRS damping, tunable SACK-compression delay.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux619;

impl Kernel for Linux619 {
    fn base(&self) -> &dyn Kernel {
        &Linux618
    }

    fn class_name(&self) -> &'static str {
        "Linux619"
    }

    fn release(&self) -> &'static str {
        "6.19"
    }

    fn sysctls(&self) -> Vec<&'static str> {
        let mut s = Linux618.sysctls();
        s.extend([
            "tcp_rcvbuf_low_rtt",
            "tcp_comp_sack_rtt_percent",
            "bypass_prot_mem",
        ]);
        s
    }

    /// 6.19's new sysctls at their defaults (tcp_rcvbuf_low_rtt is a field of every era's
    /// record already, as 1000).
    fn default_sysctls(&self) -> Sysctls {
        Linux618.default_sysctls().with_specs(&ERA_SYSCTLS)
    }

    /// tcp_rcvbuf_grow() [6.19, ecfea98b7d0d]: below tcp_rcvbuf_low_rtt the window grows
    /// by rcvwin * rtt / tcp_rcvbuf_low_rtt; otherwise 2 * rcvwin * (new - old) / old.
    fn rcvbuf_grow_term(&self, sk: &TcpSocket, newval: i64, oldval: i64) -> i64 {
        let rcvwin = newval << 1;
        let rtt_us = sk.rcv.rcv_rtt_us8 >> 3;
        let threshold = sk.sysctl.tcp_rcvbuf_low_rtt;
        if rtt_us < threshold {
            return py_floor_div(rcvwin * rtt_us, threshold);
        }
        if oldval != 0 {
            py_floor_div((rcvwin << 1) * (newval - oldval), oldval)
        } else {
            0
        }
    }

    /// __tcp_ack_snd_check() [6.19, 416dd649f3aa]: tcp_comp_sack_rtt_percent of the RTT,
    /// (rtt_us8 + rtt_us8 / 4) * percent ns, at most tcp_comp_sack_delay_ns.
    fn comp_sack_delay_ns(&self, sk: &TcpSocket, rtt_us8: i64) -> i64 {
        let s = &sk.sysctl;
        let percent = s.patched("tcp_comp_sack_rtt_percent").unwrap_or(33);
        s.tcp_comp_sack_delay_ns
            .min((rtt_us8 + (rtt_us8 >> 2)) * percent)
    }
}
