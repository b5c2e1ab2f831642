"""Linux 6.19 as its stable series runs it from 6.19.7 on.

What 6.19 changed on the receive path (Eric Dumazet's November-2025 net-next series, merged
for 6.19; patch mails and netdev post-receive logs read, tcp_input.c of 6.19.10 read for
tcp_rcvbuf_grow()):
* ecfea98b7d0d "tcp: add net.ipv4.tcp_rcvbuf_low_rtt" (default 1000 us): tcp_rcvbuf_grow()
  adds, instead of the slow-start term 2 * rcvwin * (new - old) / old, only
  rcvwin * rtt / tcp_rcvbuf_low_rtt when the receiver's RTT estimate is below the sysctl:
  data-centre flows keep a small sk_rcvbuf. The slow-start term itself is now computed as
  (2 * rcvwin) * (new - old) / old (one division, not (rcvwin * (new - old) / old) * 2).
  The out-of-order path (tcp_data_queue_ofo() -> tcp_rcvbuf_grow(rcvq_space.space)) takes
  the low-RTT branch too: there new == old, so 6.18 added nothing and 6.19 adds
  rcvwin * rtt / tcp_rcvbuf_low_rtt.
* 6d5dea68246e "tcp: tcp_moderate_rcvbuf is only used in rx path": moves the sysctl into the
  netns_ipv4 RX cache-line group (the series' cover letter: "minor and moves
  tcp_moderate_rcvbuf in appropriate group"). No behaviour changes: nothing to model.
* 416dd649f3aa "tcp: add net.ipv4.tcp_comp_sack_rtt_percent" (default 33, range 1-1000):
  the SACK-compression timer waits that percentage of the RTT (was 5 %), still capped by
  tcp_comp_sack_delay_ns (1 ms). The kernel computes (rtt_us8 + rtt_us8 / 4) * percent ns.
  (A follow-up lowered tcp_comp_sack_slack_ns from 100 to 10 us; tcpsim has no timer slack.)
* 7c268eaeec63 / b46ab63181ff "net: Allow opt-out from global protocol memory accounting",
  "net: Introduce net.core.bypass_prot_mem sysctl" (Kuniyuki Iwashima, Oct 2025): a socket
  created while net.core.bypass_prot_mem = 1 (or flagged by a BPF_CGROUP_INET_SOCK_CREATE
  program) has sk->sk_bypass_prot_mem set, inherited by its children, and is not charged to
  the protocol's memory_allocated nor held back by tcp_mem pressure. tcpsim records the
  flag (sk.mem.sk_bypass_prot_mem, from the sysctl), and the host's pool honours it
  (core/protmem.py, core/memory.py: no charge, no pressure for such a socket).

Admission: 6.19.0-6.19.6 test rmem + skb->len <= sk_rcvbuf before queueing (as
linux-6.18.0); 6.19.7 took 026dfef287c0 (stable review of 2026-03-10 read) and tests
rmem <= sk_rcvbuf again, which this profile inherits from linux-6.18 (6.18.44).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.sysctl import SysctlSpec, Sysctls
from tcpsim.models.linux_6_18 import Linux618
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


# The sysctls 6.19 adds besides tcp_rcvbuf_low_rtt: name, default, the range the kernel
# accepts (net/ipv4/sysctl_net_ipv4.c, net/core/sysctl_net_core.c [6.19]).
ERA_SYSCTLS = (
    SysctlSpec("tcp_comp_sack_rtt_percent", 33, 1, 1000,
               "% of the RTT compressed SACKs wait (416dd649f3aa)"),
    SysctlSpec("bypass_prot_mem", 0, 0, 1,
               "new sockets opt out of the protocol's global memory accounting (b46ab63181ff)"),
)


class Linux619(Linux618):
    """Linux 6.19.7+: low-RTT DRS damping, tunable SACK-compression delay."""

    RELEASE = "6.19"
    SYSCTLS = Linux618.SYSCTLS | {"tcp_rcvbuf_low_rtt", "tcp_comp_sack_rtt_percent",
                                  "bypass_prot_mem"}

    def default_sysctls(self) -> Sysctls:
        """6.19's new sysctls at their defaults (tcp_rcvbuf_low_rtt is a field of every
        era's record already, as 1000)."""
        return super().default_sysctls().with_specs(ERA_SYSCTLS)

    def rcvbuf_grow_term(self, sk: TcpSocket, newval: int, oldval: int) -> int:
        """tcp_rcvbuf_grow() [6.19, ecfea98b7d0d]: below tcp_rcvbuf_low_rtt the window grows
        by rcvwin * rtt / tcp_rcvbuf_low_rtt; otherwise 2 * rcvwin * (new - old) / old."""
        rcvwin = newval << 1
        rtt_us = sk.rcv.rcv_rtt_us8 >> 3
        threshold = sk.sysctl.tcp_rcvbuf_low_rtt
        if rtt_us < threshold:
            return rcvwin * rtt_us // threshold
        return (rcvwin << 1) * (newval - oldval) // oldval if oldval else 0

    def comp_sack_delay_ns(self, sk: TcpSocket, rtt_us8: int) -> int:
        """__tcp_ack_snd_check() [6.19, 416dd649f3aa]: tcp_comp_sack_rtt_percent of the RTT,
        (rtt_us8 + rtt_us8 / 4) * percent ns, at most tcp_comp_sack_delay_ns."""
        s = sk.sysctl
        return min(s.tcp_comp_sack_delay_ns, (rtt_us8 + (rtt_us8 >> 2)) * s.tcp_comp_sack_rtt_percent)


PROFILE = Profile("linux-6.19", Linux619,
                  "6.19.7+: tcp_rcvbuf_low_rtt DRS damping, tcp_comp_sack_rtt_percent (33 %), "
                  "bypass_prot_mem flag; 6.18's admission revert")
