"""RFC 7323 receiver-side window retraction (Simon Baatz, net-next 2026): rcv_mwnd_seq.

RFC 7323 §2.4 lets a receiver retract (shrink) its window but requires it to accept data
that the sender sent into any window previously advertised. Linux's tcp_shrink_window (6.5)
retracts without that tolerance: tcp_sequence() checks against the current window, so a
sender that used the old window is dropped as beyond-window. The series tracks the maximum
right edge ever advertised (tp->rcv_mwnd_seq) and makes tcp_sequence() accept segments up to
it (tcp_max_receive_window()); tcp_data_queue() still drops in-order data at a zero window
and out-of-order data beyond the current window, which now counts as BeyondWindow
(e2b9c52a2b00). Apply it to linux-6.17 or later (it
builds on their beyond-window checks): `--policy rfc7323-retraction`.
Tests: the kernel selftests tcp_rcv_wnd_shrink_allowed / tcp_rcv_wnd_shrink_nomem.

Upstream: merged for 7.1 as 0e24d17bd966 + e2b9c52a2b00, modelled by the linux-7.1 profile
(models/linux_7_1.py). The same rcv_mwnd_seq tracking and BeyondWindow counting, one
difference: this patch (the series as posted) lets a FIN one byte past the largest
advertised edge through, where 7.1 checks the FIN against the live window (such a segment
then goes only into an empty receive queue). Use the patch to see the idea on an older
kernel; use -p linux-7.1 for what 7.1 does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.policy import Patch

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class Rfc7323Retraction(Patch):
    """tcp_sequence() accepts up to the largest right edge ever advertised."""

    name = "rfc7323-retraction"
    summary = "2026 upstream series: accept data up to the max advertised right edge (rcv_mwnd_seq)"

    def advertise_window(self, sk: TcpSocket) -> int:
        """tcp_select_window() then rcv_mwnd_seq = max(rcv_mwnd_seq, rcv_wup + rcv_wnd), kept
        in the socket (sk.rcv.rcv_mwnd_seq, where 7.1 keeps it): a policy object may serve
        many sockets (a host's class shares one)."""
        raw = super().advertise_window(sk)
        sk.rcv.rcv_mwnd_seq = max(sk.rcv.rcv_mwnd_seq, sk.rcv.rcv_wup + sk.rcv.rcv_wnd)
        return raw

    def overwindow_drop(self, sk: TcpSocket) -> None:
        """e2b9c52a2b00: TCP_OVERWINDOW drops count as BeyondWindow too."""
        sk.mib.BeyondWindow += 1

    def sequence_window(self, sk: TcpSocket) -> int:
        """tcp_max_receive_window(): from rcv_nxt to the largest right edge advertised."""
        right = max(sk.rcv.rcv_mwnd_seq, sk.rcv.rcv_wup + sk.rcv.rcv_wnd)
        return max(0, right - sk.rcv.rcv_nxt)


PATCH = Rfc7323Retraction
