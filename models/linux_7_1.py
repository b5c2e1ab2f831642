"""Linux 7.1: receive-side RFC 7323 window retraction (Simon Baatz's series).

0e24d17bd966 "tcp: implement RFC 7323 window retraction receiver requirements" (net-next,
merged for 7.1; the v3 patch mail read): RFC 7323 section 2.4 lets a receiver retract its
window, but it must still accept what the sender sent into any window it advertised. The
socket now remembers the highest right edge it ever advertised, tp->rcv_mwnd_seq:
* set to rcv_wup + rcv_wnd at connect (tcp_connect_init), on the SYN-ACK
  (tcp_rcv_synsent_state_process), for children (tcp_create_openreq_child), Fast Open
  children and TCP_REPAIR_WINDOW;
* raised (never lowered) in tcp_select_window() each time a window is stored, the
  zero-window (memory squeeze) branch included (tcp_update_max_rcv_wnd_seq).
* tcp_sequence() checks a segment's end against rcv_nxt + tcp_max_receive_window() (the
  distance to rcv_mwnd_seq, at least 0) instead of the live window; the FIN allowance still
  uses the live window: a segment whose data ends inside the *live* window is accepted
  although its FIN lies beyond.
* tcp_data_queue() is unchanged: in-order data at a zero live window is still dropped
  (TCPZeroWindowDrop) and data starting beyond the live window still takes the
  TCP_OVERWINDOW drop, which e2b9c52a2b00 (same series) now counts as BeyondWindow.
Selftests added: tcp_rcv_wnd_shrink_allowed.pkt, tcp_rcv_wnd_shrink_nomem.pkt (and the
series' tcp_rcv_neg_window.pkt). The release is inferred from the net-next merge date
(±1 release, UNVERIFIED).

tcpsim keeps rcv_mwnd_seq in sk.rcv.rcv_mwnd_seq. It is raised where tcp_select_window()
stores a window (advertise_window, nomem_window); the handshake initialisations all set it to
the live right edge rcv_wup + rcv_wnd, which tcp_max_receive_window() here takes as a floor,
so they need no hook of their own.

Relation to `--policy rfc7323-retraction` (models/patches/rfc7323_retraction.py, the series
as posted, applied to an older kernel): the same rcv_mwnd_seq tracking and the same
BeyondWindow counting; one difference -- the patch extends the FIN allowance to the maximum
window (data fitting rcv_mwnd_seq with a FIN one byte beyond is accepted), while 7.1 keeps
it at the live window (such a segment is then accepted only into an empty receive queue,
else dropped as TCP_INVALID_END_SEQUENCE). tests/models/test_new_eras.py shows both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.segment import FIN, Segment
from tcpsim.models.linux_7_0 import Linux70
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class Linux71(Linux70):
    """Linux 7.1: tcp_sequence() honours the largest window ever advertised."""

    RELEASE = "7.1"

    def advertise_window(self, sk: TcpSocket) -> int:
        """tcp_select_window() [7.1]: store the window, then tcp_update_max_rcv_wnd_seq()."""
        raw = super().advertise_window(sk)
        _update_max_rcv_wnd_seq(sk)
        return raw

    def nomem_window(self, sk: TcpSocket) -> int:
        """tcp_select_window() NOMEM branch [7.1]: the stored zero updates rcv_mwnd_seq too
        (it only moves when rcv_nxt has passed every edge advertised)."""
        raw = super().nomem_window(sk)
        _update_max_rcv_wnd_seq(sk)
        return raw

    def sequence_window(self, sk: TcpSocket) -> int:
        """tcp_max_receive_window() [include/net/tcp.h, 7.1]: rcv_mwnd_seq - rcv_nxt, at
        least 0 (the handshake's rcv_wup + rcv_wnd as the floor of rcv_mwnd_seq)."""
        rcv = sk.rcv
        return max(0, max(rcv.rcv_mwnd_seq, rcv.rcv_wup + rcv.rcv_wnd) - rcv.rcv_nxt)

    def end_beyond_window(self, sk: TcpSocket, seg: Segment, right: int) -> bool:
        """Models tcp_sequence()'s end check [7.1, 0e24d17bd966]: `right` is the largest
        edge advertised (sequence_window); a segment ending past it is still in the window
        when it ends, FIN byte left out, within the live window (the FIN allowance keeps
        the live edge). The rest of tcp_sequence() -- a segment starting beyond, or ending
        beyond while data is queued, is BeyondWindow -- is 6.17's."""
        fin = 1 if seg.flags & FIN else 0
        return seg.end_seq > right and seg.end_seq - fin > sk.rcv.rcv_nxt + sk.receive_window()

    def overwindow_drop(self, sk: TcpSocket) -> None:
        """tcp_data_queue() TCP_OVERWINDOW [7.1, e2b9c52a2b00]: counted as BeyondWindow."""
        sk.mib.BeyondWindow += 1


def _update_max_rcv_wnd_seq(sk: TcpSocket) -> None:
    """tcp_update_max_rcv_wnd_seq() [include/net/tcp.h, 7.1]: raise rcv_mwnd_seq to the
    right edge just stored."""
    rcv = sk.rcv
    rcv.rcv_mwnd_seq = max(rcv.rcv_mwnd_seq, rcv.rcv_wup + rcv.rcv_wnd)


PROFILE = Profile("linux-7.1", Linux71,
                  "7.1: RFC 7323 receive-side retraction -- data accepted up to the largest "
                  "right edge ever advertised (rcv_mwnd_seq), BeyondWindow for over-window drops")
