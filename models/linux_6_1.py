"""Linux 6.1 LTS as the seeds ran it (6.1.14, Cloudflare's 2023 reproducers).

Receive-path changes since 5.15 that a simulation can see: drop reasons on the data path
(skb:kfree_skb shows PROTO_MEM, TCP_ZEROWINDOW, ...), which tcpsim reports for every
profile; nothing else. The window never shrinks: there is no tcp_shrink_window yet (see
linux_6_1_59.py, or apply `--policy shrink-window`).

The host's TCP pool: 3cd3399dd7a8 "net: implement per-cpu reserves for memory_allocated"
(6.0) charges a socket's pages to a per-CPU counter first, flushed into the global
tcp_memory_allocated at +-SK_MEMORY_PCPU_RESERVE (1 MB of pages) -- not tunable until 6.9's
net.core.mem_pcpu_rsv (core/protmem.py).

On the sending side: 65466904b015 "tcp: adjust TSO packet sizes based on min_rtt" (5.18)
makes TSO skbs larger on short paths; 4bfe744ff164 "tcp: fix potential xmit stalls caused
by TCP_NOTSENT_LOWAT" (5.18) runs tcp_check_space() -- and so the send buffer's growth --
after every skb of new data sent, not only after the push that follows an ACK.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tcpsim.core.protmem import SK_MEMORY_PCPU_RESERVE
from tcpsim.core.sender import SK_GSO_MAX_SIZE, TCP_TSO_RTT_LOG
from tcpsim.models.linux_5_15 import Linux515, _ack_delay
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket
    from tcpsim.core.sysctl import Sysctls


class Linux61(Linux515):
    """Linux 6.1.14: 5.15's receive path."""

    RELEASE = "6.1"
    # "net-memcg: avoid stalls when under memory pressure" (6.1-rc3): gfp_memcg_charge() is
    # GFP_ATOMIC in softirq, so cgroup v2 forces the receive path's charges past memory.max
    MEMCG_SOFTIRQ_ATOMIC = True

    def default_sysctls(self) -> Sysctls:
        """Per-CPU reserves of the TCP pool (6.0+): SK_MEMORY_PCPU_RESERVE pages a CPU."""
        return replace(super().default_sysctls(), mem_pcpu_rsv=SK_MEMORY_PCPU_RESERVE)

    def tso_rtt_bytes(self, sk: TcpSocket) -> int:
        """tcp_tso_autosize() [tcp_output.c, 5.18+]: add gso_max_size >> (min_rtt_us >>
        tcp_tso_rtt_log) to the pacing rate's share -- the whole GSO size below 512 us of
        min RTT, half of it below 1 ms, ... (nothing before the first RTT sample)."""
        if not sk.snd.min_rtt_us:
            return 0
        r = sk.snd.min_rtt_us >> TCP_TSO_RTT_LOG
        return SK_GSO_MAX_SIZE >> r if r < 32 else 0

    def new_data_checks_space(self, sk: TcpSocket) -> bool:
        """tcp_event_new_data_sent() [tcp_output.c, 5.18+, 4bfe744ff164]: tcp_check_space()
        after every skb of new data, so a writer waiting for room may get it (and the
        buffer grow, while the flight is still below cwnd) as the push goes on."""
        return True

    def hystart_ack_delay(self, sk: TcpSocket) -> int:
        """hystart_ack_delay() [tcp_cubic.c, 5.19+]: "tcp_cubic: make hystart_ack_delay()
        aware of BIG TCP" (Eric Dumazet, 2022) uses the socket's sk_gso_max_size, 64 KiB
        less MAX_TCP_HEADER + 1 on a legacy-GSO device, where 5.15 has GSO_MAX_SIZE."""
        return _ack_delay(sk, SK_GSO_MAX_SIZE)


PROFILE = Profile("linux-6.1", Linux61,
                  "6.1.14 (the seeds' kernel): adv_win_scale windows, never-shrink windows")
