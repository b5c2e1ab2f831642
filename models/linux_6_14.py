"""Linux 6.14 (and the 6.11 change before it).

* from 6.11 (Subash Abhinov Kasiviswanathan / Sean Tranchetti): when the measured
  scaling_ratio changes, window_clamp follows tcp_win_from_space(sk_rcvbuf) -- also for
  SO_RCVBUF-locked sockets -- and the DRS baseline is capped to it.
* 25c1a9ca53db "tcp_cubic: fix incorrect HyStart round start detection" (v6.14): HyStart's
  rounds are reset below hystart_low_window too.
* 8c670bdfa58e "tcp: correct handling of extreme memory squeeze" (Jon Maloy, v6.14): the
  zero window advertised after a memory drop is stored (rcv_wnd = 0, rcv_wup = rcv_nxt), so a
  later read reliably sends the window update.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.models.linux_6_10 import Linux610
from tcpsim.policy import Profile
from tcpsim.core.state import CLOSED

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class Linux614(Linux610):
    """Linux 6.14: clamp follows the ratio; NOMEM zero window stored."""

    RELEASE = "6.14"

    def on_scaling_ratio_change(self, sk: TcpSocket) -> None:
        """tcp_measure_rcv_mss() [6.11+]: window_clamp = W(sk_rcvbuf), DRS baseline capped."""
        self.set_window_clamp(sk, self.win_from_space(sk, sk.mem.sk_rcvbuf))
        if sk.rcv.window_clamp < sk.rcv.rcvq_space:
            sk.rcv.rcvq_space = sk.rcv.window_clamp

    def hystart_round_reset_first(self, sk: TcpSocket) -> bool:
        """hystart_update() [tcp_cubic.c, 6.14]: 25c1a9ca53db "tcp_cubic: fix incorrect
        HyStart round start detection" (Mahdi Arghavani, 2025) moves the hystart_low_window
        test after the round reset, so rounds are tracked from the first ACK and not from
        the one that finds cwnd >= 16. Also in stable trees (5.15.179 and later); the
        5.15 .. 6.10 profiles model the mainline releases without it."""
        return True

    def set_window_clamp(self, sk: TcpSocket, val: int) -> None:
        """Models tcp_set_window_clamp() [6.x]: lowering the clamp lowers rcv_ssthresh;
        raising it lets rcv_ssthresh follow up to rcv_wnd."""
        if val == 0:
            if sk.conn.state == CLOSED:
                sk.rcv.window_clamp = 0
            return
        old = sk.rcv.window_clamp
        new = max(val, 4608 // 2)
        if new == old:
            return
        sk.rcv.window_clamp = new
        if new < old:
            sk.rcv.rcv_ssthresh = min(sk.rcv.rcv_ssthresh, new)
        else:
            sk.rcv.rcv_ssthresh = max(min(sk.rcv.rcv_wnd, new), sk.rcv.rcv_ssthresh)

    def nomem_window(self, sk: TcpSocket) -> int:
        """tcp_select_window() NOMEM branch [6.14+]: store the zero."""
        sk.rcv.pred_ok = False
        sk.rcv.rcv_wnd = 0
        sk.rcv.rcv_wup = sk.rcv.rcv_nxt
        return 0


PROFILE = Profile("linux-6.14", Linux614,
                  "6.14: window_clamp follows scaling_ratio (6.11), memory-squeeze zero window stored")
