"""Linux 6.17 (with the 6.16 autotuning rewrite before it).

From 6.16 (Eric Dumazet's May-2025 series):
* tcp_rmem[2] defaults to 32 MiB (572be9bf9d0d) instead of 6 MiB.
* DRS rewritten as tcp_rcvbuf_grow() (65c5287892e9 "tcp: fix sk_rcvbuf overshoot"): the
  bytes still queued are not credited as read, and the buffer is sized for twice what was
  read in the last receiver RTT -- no 16-segment cushion, no growth term.
* the receiver RTT from timestamps seeks the minimum: smaller samples are taken at once,
  zero samples are ignored, larger ones are smoothed only while the receive queue is empty.

From 6.17 (the July-2025 series):
* 1d2fbaad7cd8 "tcp: stronger sk_rcvbuf checks": admission and pruning test
  rmem + skb->truesize <= rcvbuf *before* queueing (tcp_can_ingest), so memory-squeeze zero
  windows come much earlier; tcp_prune_queue() does nothing on empty queues.
* "do not accept packets beyond window": a segment whose end lies beyond the advertised
  window is dropped unless the receive queue is empty (BeyondWindow).
* out-of-order segments also update rcv_mss ("call tcp_measure_rcv_mss() for ooo packets").
* "tcp: fix tcp_ofo_queue() to avoid including too much DUP SACK range" (June 2025): data
  received again in order while held out of order is D-SACKed exactly, not up to the end of
  the new data (tcp_dsack_mult.pkt is its test).

Stable point: 6.17.0-6.17.2. The 6.17.y series took f017c1f768b6 ("tcp: use skb->len instead
of skb->truesize in tcp_can_ingest()", stable review of 2025-10-13, so 6.17.3 -- the release
number is inferred from the review date) and from then on admits as linux-6.18.0 does; it
ended before 026dfef287c0 (Feb 2026) could reach it (UNVERIFIED: no 6.17.y revert found).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.segment import Segment
from tcpsim.core.skb import Skb
from tcpsim.core.sysctl import Sysctls
from tcpsim.models.linux_6_14 import Linux614
from tcpsim.policy import Profile

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

MIB = 1024 * 1024


class Linux617(Linux614):
    """Linux 6.17: tcp_rcvbuf_grow() DRS, truesize admission, beyond-window drops."""

    RELEASE = "6.17"
    RMEM2_DEFAULT = 32 * MIB
    PINGPONG_THRESH = 1

    def default_sysctls(self) -> Sysctls:
        return Sysctls(tcp_rmem=(4096, 131072, self.RMEM2_DEFAULT))

    # -- 6.16: autotuning -----------------------------------------------------------------------

    def rcv_space_copied(self, sk: TcpSocket, copied_seq: int, rcvq_seq: int) -> int:
        """tcp_rcv_space_adjust() [6.16+]: bytes read this RTT minus bytes still queued."""
        return (copied_seq - rcvq_seq) - (sk.rcv.rcv_nxt - copied_seq)

    def rcv_space_adjust(self, sk: TcpSocket) -> None:
        """Models tcp_rcv_space_adjust() [6.16+]: once per receiver RTT, grow the buffer
        through tcp_rcvbuf_grow() when more was consumed than last time."""
        now = sk.tcp_mstamp
        gate = self.rcv_space_gate_us(sk)
        if gate < 0 or now < gate:
            return
        copied = self.rcv_space_copied(sk, sk.rcv.copied_seq, sk.rcv.rcvq_seq)
        if copied > sk.rcv.rcvq_space:
            self.rcvbuf_grow(sk, copied)
        sk.rcv.rcvq_seq = sk.rcv.copied_seq
        sk.rcv.rcvq_time = now

    def rcvbuf_grow(self, sk: TcpSocket, newval: int) -> None:
        """Models tcp_rcvbuf_grow() [6.16]: rcvbuf = tcp_space_from_win(2 * newval + the
        out-of-order span), capped at tcp_rmem[2]; window_clamp follows."""
        oldval = sk.rcv.rcvq_space
        sk.rcv.rcvq_space = newval
        if not sk.sysctl.tcp_moderate_rcvbuf or sk.mem.rcvbuf_locked:
            return
        rcvwin = (newval << 1) + self.rcvbuf_grow_term(sk, newval, oldval)
        if sk.mem.ofo_queue:
            rcvwin += sk.mem.ofo_queue[-1].end_seq - sk.rcv.rcv_nxt
        rcvbuf = min(self.space_from_win(sk, rcvwin), sk.sysctl.tcp_rmem[2])
        if rcvbuf > sk.mem.sk_rcvbuf:
            sk.mem.sk_rcvbuf = rcvbuf
            sk.rcv.window_clamp = self.win_from_space(sk, rcvbuf)
            sk.trace("autotune", "rcvbuf_grow")

    def rcvbuf_grow_term(self, sk: TcpSocket, newval: int, oldval: int) -> int:
        """6.16-6.17 (before aa251c84636c): no slow-start growth term."""
        return 0

    def rcv_rtt_update(self, sk: TcpSocket, sample_us: int, win_dep: bool) -> None:
        """Models tcp_rcv_rtt_update() [6.16+]: jump to smaller samples; smooth larger
        timestamp samples only while nothing is queued; ignore larger window samples."""
        old = sk.rcv.rcv_rtt_us8
        m = sample_us << 3
        if old == 0 or m < old:
            sk.rcv.rcv_rtt_us8 = m
            return
        if win_dep or sk.rcv.rcv_nxt != sk.rcv.copied_seq:
            return
        sk.rcv.rcv_rtt_us8 = old - (old >> 3) + sample_us

    def ts_rtt_sample_us(self, delta_ms: int) -> int:
        """tcp_rcv_rtt_measure_ts() [6.16+]: zero-delay samples are ignored."""
        return delta_ms * 1000 if delta_ms > 0 else -1

    # -- 6.17: admission and sequence checks -------------------------------------------------------

    def can_ingest(self, sk: TcpSocket, skb: Skb) -> bool:
        """Models tcp_can_ingest() [6.17, 1d2fbaad7cd8]: rmem + truesize <= rcvbuf."""
        return sk.mem.sk_rmem_alloc + skb.truesize <= sk.mem.sk_rcvbuf

    def needs_clamp(self, sk: TcpSocket, skb: Skb) -> bool:
        """tcp_prune_queue() [6.17+]: clamp when the incoming skb cannot be ingested."""
        return not self.can_ingest(sk, skb)

    def ofo_prune_done(self, sk: TcpSocket, dropped: Skb) -> bool:
        """The stop test inside tcp_prune_ofo_queue() [6.17+]: tcp_can_ingest() of the skb
        just dropped (as the kernel passes it)."""
        return self.can_ingest(sk, dropped)

    def prune_queue(self, sk: TcpSocket, skb: Skb) -> int:
        """tcp_prune_queue() [6.17+]: nothing to prune on empty queues."""
        if sk.mem.sk_rmem_alloc == 0:
            return -1
        return super().prune_queue(sk, skb)

    def tcp_sequence(self, sk: TcpSocket, seg: Segment) -> str:
        """Models tcp_sequence() [6.17+]: also reject a segment ending beyond the window
        unless the receive queue is empty (BeyondWindow)."""
        if seg.end_seq < sk.rcv.rcv_wup:
            return "TCP_OLD_SEQUENCE"
        right = sk.rcv.rcv_nxt + self.sequence_window(sk)
        if self.end_beyond_window(sk, seg, right):
            if seg.seq > right:
                sk.mib.BeyondWindow += 1
                return "TCP_INVALID_SEQUENCE"
            if sk.mem.receive_queue:
                sk.mib.BeyondWindow += 1
                return "TCP_INVALID_END_SEQUENCE"
        return ""

    def end_beyond_window(self, sk: TcpSocket, seg: Segment, right: int) -> bool:
        """Does the segment end past the right edge? [6.17: the FIN byte counts]."""
        return seg.end_seq > right

    def ofo_dsack(self, sk: TcpSocket, skb: Skb, dsack_high: int) -> tuple[int, int]:
        """tcp_ofo_queue() [6.17+, "tcp: fix tcp_ofo_queue() to avoid including too much DUP
        SACK range"]: D-SACK only the duplicated part, up to min(end_seq, dsack_high)."""
        return min(skb.end_seq, dsack_high), dsack_high

    def ofo_measure_rcv_mss(self, sk: TcpSocket, seg: Segment, skb: Skb) -> None:
        """tcp_data_queue_ofo() [6.17+]: out-of-order data updates rcv_mss too."""
        self.measure_rcv_mss(sk, seg, skb)


PROFILE = Profile("linux-6.17", Linux617,
                  "6.17.0-6.17.2: tcp_rcvbuf_grow() autotuning, truesize admission, "
                  "beyond-window drops, tcp_rmem[2] 32 MiB")
