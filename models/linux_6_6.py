"""Linux 6.6 LTS: windows from a measured len/truesize ratio, zero windows on memory pressure.

What 6.6 changed in the receive path (commits cited in receive-path.md §12):
* from 6.5: net.ipv4.tcp_shrink_window (b650d953cd39, Cloudflare's patch upstream; default 0).
* dfa2f0483360 "tcp: get rid of sysctl_tcp_adv_win_scale": memory <-> window uses
  `scaling_ratio` (len/truesize x 256), sampled from a segment that changes rcv_mss; the
  default before any sample is 65 (~25 %) -- 6.6.0 to 6.8 shipped the small ~32 KiB initial
  windows this gives. tcp_adv_win_scale is kept but has no effect. DRS sizes sk_rcvbuf as
  tcp_space_from_win(rcvwin) instead of a per-segment memory estimate.
* e2142825c120 (tcp-oom-probe): an in-order segment dropped for lack of memory schedules an
  immediate ACK advertising a zero window (ICSK_ACK_NOMEM), not a silent drop; with an empty
  queue the segment is forced in. 6.6 does not store that zero in rcv_wnd (fixed in 6.14).
* 800a666141de: a zero window on a duplicate ACK updates the sender's snd_wnd.
* e89688e3e978: a zero-window retransmission gives up only after 2 x TCP_RTO_MAX without
  an ACK and 2 x TCP_RTO_MAX of retransmitting.
* since 6.2: tcp_prune_ofo_queue() stops at the incoming segment's sequence and counts
  OfoPruned only when it dropped something.
* quick-ack mode is left one step per ACK actually owed (Neal Cardwell, 2023).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.constants import (
    ICSK_ACK_NOMEM, ICSK_ACK_NOW, ICSK_ACK_PUSHED, ICSK_ACK_SCHED, TCP_ATO_MIN_NS,
    TCP_RTO_MAX_NS,
)
from tcpsim.core.segment import PSH, Segment
from tcpsim.core.skb import Skb
from tcpsim.models.linux_6_1 import Linux61
from tcpsim.models.patches.shrink_window import ShrinkWindowSysctl
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

TCP_RMEM_TO_WIN_SCALE = 8


class Linux66(ShrinkWindowSysctl, Linux61):
    """Linux 6.6: scaling_ratio windows (25 % default), NOMEM zero-window ACKs."""

    RELEASE = "6.6"
    SYSCTLS = Linux61.SYSCTLS | {"tcp_shrink_window"}
    DEFAULT_SCALING_RATIO = 65      # (1200 << 8) / SKB_TRUESIZE(4096)

    def initial_scaling_ratio(self) -> int:
        """tcp_scaling_ratio_init(): the ratio assumed before any segment is measured."""
        return self.DEFAULT_SCALING_RATIO

    def win_from_space(self, sk: TcpSocket, space: int) -> int:
        """Models __tcp_win_from_space() [include/net/tcp.h, 6.6]: space * ratio / 256."""
        return (space * sk.rcv.scaling_ratio) >> TCP_RMEM_TO_WIN_SCALE

    def space_from_win(self, sk: TcpSocket, win: int) -> int:
        """Models __tcp_space_from_win(): win * 256 / ratio."""
        return (win << TCP_RMEM_TO_WIN_SCALE) // sk.rcv.scaling_ratio

    def on_rcv_mss_change(self, sk: TcpSocket, seg: Segment, skb: Skb) -> None:
        """tcp_measure_rcv_mss() [6.6]: re-sample scaling_ratio from this one skb, only
        when rcv_mss is about to change (a steady stream of equal segments never does)."""
        old = sk.rcv.scaling_ratio
        sk.rcv.scaling_ratio = max((skb.len << TCP_RMEM_TO_WIN_SCALE) // skb.truesize, 1)
        if sk.rcv.scaling_ratio != old:
            self.on_scaling_ratio_change(sk)
        if seg.flags & PSH:
            sk.ack.ack_pending |= ICSK_ACK_PUSHED

    def on_scaling_ratio_change(self, sk: TcpSocket) -> None:
        """Nothing follows a ratio change in 6.6 (window_clamp does from 6.11)."""

    def grow_under_pressure(self, sk: TcpSocket) -> None:
        """tcp_grow_window() under pressure [6.x]: tcp_adjust_rcv_ssthresh()."""
        self.pressure_adjust(sk)

    def admit_in_order(self, sk: TcpSocket, skb: Skb) -> bool:
        """tcp_data_queue() in-order memory step [6.6, e2142825c120]: on failure ask for an
        immediate zero-window ACK; drop only if other data is queued, else force it in."""
        if self.try_rmem_schedule(sk, skb, skb.truesize):
            return True
        sk.ack.ack_pending |= ICSK_ACK_NOMEM | ICSK_ACK_NOW | ICSK_ACK_SCHED
        sk.data_ready()
        if sk.mem.receive_queue and skb.len:
            return False
        sk.forced_mem_schedule(skb.truesize)
        return True

    def advertise_window(self, sk: TcpSocket) -> int:
        """tcp_select_window() [6.6]: after a memory drop advertise 0 at once."""
        if sk.ack.ack_pending & ICSK_ACK_NOMEM:
            return self.nomem_window(sk)
        return super().advertise_window(sk)

    def nomem_window(self, sk: TcpSocket) -> int:
        """6.6-6.13: the zero is advertised but not stored in rcv_wnd (the deadlock Jon
        Maloy fixed in 6.14: the read-side window update may then never fire)."""
        return 0

    def dec_quickack_mode(self, sk: TcpSocket) -> None:
        """tcp_dec_quickack_mode() [6.6]: count only ACKs of new data actually owed."""
        ack = sk.ack
        if ack.ack_quick:
            pkts = 1 if ack.ack_pending & ICSK_ACK_SCHED else 0
            if pkts >= ack.ack_quick:
                ack.ack_quick = 0
                ack.ack_ato = TCP_ATO_MIN_NS
            else:
                ack.ack_quick -= pkts

    def prune_ofo_queue(self, sk: TcpSocket, skb: Skb) -> bool:
        """tcp_prune_ofo_queue() [6.2+]: never drop OFO data below the incoming segment;
        OfoPruned and the SACK reset only when something was dropped."""
        ofo = sk.mem.ofo_queue
        pruned = False
        goal = sk.mem.sk_rcvbuf >> 3
        while ofo and not skb.seq > ofo[-1].seq:
            dropped = sk.ofo_drop_last()
            pruned = True
            goal -= dropped.truesize
            sk.trace("drop", "ofo prune", truesize=dropped.truesize,
                     reason="TCP_OFO_QUEUE_PRUNE")
            if not ofo or goal <= 0:
                if self.ofo_prune_done(sk, dropped) and not sk.under_memory_pressure():
                    break
                goal = sk.mem.sk_rcvbuf >> 3
        if pruned:
            sk.mib.OfoPruned += 1
            sk.rcv.selective_acks = []
        return pruned

    def ofo_prune_done(self, sk: TcpSocket, dropped: Skb) -> bool:
        """The stop test inside tcp_prune_ofo_queue() [6.2-6.16]: rmem <= rcvbuf."""
        return sk.mem.sk_rmem_alloc <= sk.mem.sk_rcvbuf

    def grow_rcvbuf(self, sk: TcpSocket, copied: int) -> None:
        """tcp_rcv_space_adjust() sizing [6.6-6.15]: memory = tcp_space_from_win(rcvwin)."""
        advmss = sk.conn.advmss
        rcvwin = (copied << 1) + 16 * advmss
        grow = rcvwin * (copied - sk.rcv.rcvq_space) // sk.rcv.rcvq_space
        rcvwin += grow << 1
        rcvbuf = min(self.space_from_win(sk, rcvwin), sk.sysctl.tcp_rmem[2])
        if rcvbuf > sk.mem.sk_rcvbuf:
            sk.mem.sk_rcvbuf = rcvbuf
            sk.rcv.window_clamp = self.win_from_space(sk, rcvbuf)
            sk.trace("autotune", "rcvbuf_grow")

    def may_update_window(self, sk: TcpSocket, seg: Segment, ack: int, nwin: int) -> bool:
        """tcp_may_update_window() [6.6, 800a666141de]: a zero window always counts."""
        return (ack > sk.snd.snd_una or seg.seq > sk.snd.snd_wl1
                or (seg.seq == sk.snd.snd_wl1 and (nwin > sk.snd.snd_wnd or nwin == 0)))

    def rtx_probe0_timed_out(self, sk: TcpSocket) -> bool:
        """tcp_rtx_probe0_timed_out() [6.6]: no ACK for 2 x TCP_RTO_MAX and retransmitting
        for 2 x TCP_RTO_MAX."""
        timeout = 2 * TCP_RTO_MAX_NS
        if sk.now - sk.snd.rcv_tstamp <= timeout:
            return False
        return sk.now - sk.snd.retrans_stamp > timeout


PROFILE = Profile("linux-6.6", Linux66,
                  "6.6 LTS: scaling_ratio windows with the 25 % default, NOMEM zero-window ACKs")
