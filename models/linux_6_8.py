"""Linux 6.8: the default scaling_ratio goes from 25 % to 50 %.

697a6c8cec03 "tcp: increase the default TCP scaling ratio" (Hechao Li, 2024; also backported
to 6.6.y stable): before any segment is measured the ratio is 128/256, so the initial windows
are back to ~64 KiB (64240 / 65160 on the wire) instead of 6.6.0's ~32 KiB.

Sender: 1c2709cfff1d "tcp: fix excessive TLP and RACK timeouts from HZ rounding" (6.7; in
the 4.19+ stable trees too) adds the loss probe's 2 ms floor in microseconds before the
conversion to jiffies (the same as 5.15's two jiffies at HZ=1000, less at HZ=250).

Socket backlog: 133c4c0d3717 "tcp: defer regular ACK while processing socket backlog" (6.7)
adds net.ipv4.tcp_backlog_ack_defer (default 1): an ACK due while the socket is owned by the
user waits for tcp_release_cb() [tcp_output.c, 6.7+] (__tcp_ack_snd_check [tcp_input.c]).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.constants import NS_PER_US, TCP_RTO_MIN_NS, TCP_TIMEOUT_INIT_NS
from tcpsim.models.linux_6_6 import Linux66
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class Linux68(Linux66):
    """Linux 6.8: 6.6 with the 50 % default scaling_ratio."""

    RELEASE = "6.8"
    DEFAULT_SCALING_RATIO = 128     # 1 << (TCP_RMEM_TO_WIN_SCALE - 1)
    SYSCTLS = Linux66.SYSCTLS | {"tcp_backlog_ack_defer"}   # 6.7

    def loss_probe_timeout(self, sk: TcpSocket) -> int:
        """tcp_schedule_loss_probe() [tcp_output.c, 6.7+]: 2 * srtt plus tcp_rto_min (one
        segment out) or TCP_TIMEOUT_MIN_US (2 ms), summed in microseconds, then rounded up
        to whole jiffies; TCP_TIMEOUT_INIT before any RTT sample."""
        snd = sk.snd
        if not snd.srtt_us8:
            return TCP_TIMEOUT_INIT_NS
        floor = TCP_RTO_MIN_NS if len(snd.rtx_queue) == 1 else 2000 * NS_PER_US
        return sk.clock.jiffies_up((snd.srtt_us8 >> 2) * NS_PER_US + floor)


PROFILE = Profile("linux-6.8", Linux68, "6.8: scaling_ratio default raised to 50 %")
