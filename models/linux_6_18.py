"""Linux 6.18 as the development machines run it (6.18.44).

What 6.18 changed on top of 6.17 (autumn-2025 fixes), and what its stable series took back:
* admission: 6.18.0 tested rmem + skb->len <= rcvbuf ("tcp: use skb->len instead of
  skb->truesize in tcp_can_ingest()"); 026dfef287c0 "tcp: give up on stronger sk_rcvbuf
  checks (for now)" (net 2026-02-28, mainline 7.0-rc) returned to rmem <= rcvbuf; the
  6.18.y series took it in 6.18.17 (its release announcement lists it), so this profile models
  6.18.17 and later, and linux-6.18.0 models 6.18.0-6.18.16. 6.18.44
  measured: 787 PruneCalled and 0 RcvPruned while tcp_clamp_window() dragged rcvbuf up
  (docs/kernel-measurements.md, E5), which only the reverted test allows.
* aa251c84636c "tcp: fix too slow tcp_rcvbuf_grow() action": the slow-start growth term
  2 * rcvwin * (new - old) / old is back in tcp_rcvbuf_grow().
* out-of-order segments grow sk_rcvbuf (tcp_data_queue_ofo() calls tcp_rcvbuf_grow() with
  the unchanged baseline, so the OFO span is budgeted) once the socket is accepted.
* a bare FIN is accepted at a zero window, and a segment whose data fits but whose FIN lies
  just past the window is not "beyond window".
* sender: 295ce1eb36ae "tcp: fix tcp_tso_should_defer() vs large RTT" (Oct 2025, 6.18-rc2;
  also taken by the 5.4 ... 6.17 stable trees): a TSO skb waits for a bigger window only if
  the next ACK is due within min(srtt / 2, 1 ms), not srtt / 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.segment import FIN, Segment
from tcpsim.core.skb import Skb
from tcpsim.models.linux_6_17 import Linux617
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class Linux618(Linux617):
    """Linux 6.18.y: proportional DRS growth, OFO-driven growth, plain admission."""

    RELEASE = "6.18"

    def can_ingest(self, sk: TcpSocket, skb: Skb) -> bool:
        """Models tcp_can_ingest() [6.18.y after 026dfef287c0]: rmem <= rcvbuf, tested
        before queueing (tcp_prune_queue() still clamps whenever this fails)."""
        return sk.mem.sk_rmem_alloc <= sk.mem.sk_rcvbuf

    def rcvbuf_grow_term(self, sk: TcpSocket, newval: int, oldval: int) -> int:
        """aa251c84636c: let the sender double its rate, 2 * rcvwin * (new - old) / old."""
        rcvwin = newval << 1
        return (rcvwin * (newval - oldval) // oldval) << 1 if oldval else 0

    def ofo_rcvbuf_grow(self, sk: TcpSocket) -> None:
        """tcp_data_queue_ofo() [6.18]: tcp_rcvbuf_grow(rcvq_space.space) for accepted
        sockets, so the receive buffer covers the out-of-order span."""
        if sk.accepted:
            self.rcvbuf_grow(sk, sk.rcv.rcvq_space)

    def zero_window_accepts(self, sk: TcpSocket, seg: Segment) -> bool:
        """A bare FIN is accepted even at a zero window."""
        return seg.len == 0 and bool(seg.flags & FIN)

    def end_beyond_window(self, sk: TcpSocket, seg: Segment, right: int) -> bool:
        """FIN allowance: only the data must fit."""
        return seg.seq + seg.len > right

    def tso_defer_ack_window(self, sk: TcpSocket, srtt_ns: int) -> int:
        """tcp_tso_should_defer() [tcp_output.c, 6.18, 295ce1eb]: defer only if the next
        ACK (the oldest unacked segment's send time + srtt) is due within min(srtt / 2,
        1 ms): with a long RTT a smooth ACK clock beats bigger TSO packets."""
        return min(srtt_ns >> 1, NS_PER_MS)


PROFILE = Profile("linux-6.18", Linux618,
                  "6.18.44 (development machines): proportional DRS growth, OFO-driven buffer "
                  "growth, 6.17's stricter admission given up")
