"""The socket owned by the user, and its backlog (TcpSocket mixin).

While an application is inside recvmsg() or sendmsg() it holds the socket (lock_sock(): the
socket is "owned by user"). A segment that arrives meanwhile is not processed: tcp_v4_rcv()
[net/ipv4/tcp_ipv4.c, 6.18] hands it to tcp_add_backlog(), which parks it in the socket's
backlog, coalesced into the backlog's tail skb when it can be. release_sock() [net/core/
sock.c] -> __release_sock() then feeds the parked skbs, in order, to tcp_v4_do_rcv() -- the
same processing as in softirq, one skb (one ACK decision) per merged skb -- and
tcp_release_cb() [net/ipv4/tcp_output.c] runs what was deferred meanwhile.

On one host (veth, loopback) this is what makes a slow reader's window differ from a
segment-by-segment model: the ACK a read sends (tcp_cleanup_rbuf()) reaches the sender, and
the sender's burst reaches the receiver, before that read has released the socket, so the
burst is processed as one skb of 8--16 segments (docs/bring-your-own-capture.md, "When
nothing fits"). The sender has the same: ACKs arriving while its writer is in sendmsg() are
merged, and its congestion window grows by a whole burst per merged ACK.

How long a call holds the socket is an application-timing field (`owns_socket` of a reader
or writer, tcpsim/workload.py): the engine calls `hold(now, ns)` after a read or write that
moved data. 0 (the default) never owns the socket, and nothing here runs.

Modelled: tcp_add_backlog()'s coalescing rules (contiguous, ACK on both, no SYN/RST/URG,
the same ECE/CWR/AE bits, identical TCP options -- here the timestamp pair and SACK blocks --
and skb_try_coalesce() succeeding: fragments, clones), the kept ACK/window (the newer one),
the ORed flags, the largest segment size as the merged skb's gso_size; the limit
(2 * sk_rcvbuf + sk_sndbuf / 2 + 64 KiB, 6.18: a skb is dropped, TcpExtTCPBacklogDrop, when
sk_backlog.len + sk_rmem_alloc exceeds it, for every profile: see backlog_limit);
sk_backlog.len in tcp_space() until the end of __release_sock(); the ACK deferred to
tcp_release_cb() (__tcp_ack_snd_check() [net/ipv4/tcp_input.c, 6.18], under
net.ipv4.tcp_backlog_ack_defer: the kernel has it from 6.7, the profiles from
linux-6.8 on) and timers that fell due while owned run at release (tcp_delack_timer(),
tcp_write_timer() defer to tcp_release_cb()).
Not modelled: the PFMEMALLOC drop, checksum errors, DSCP differences (the model has none),
a second owner queuing behind the first (a hold that overlaps another extends it), and a
recvmsg that wants more than it has copied processing the backlog inside the call
(__sk_flush_backlog() in tcp_recvmsg_locked() [net/ipv4/tcp.c]) to copy on: the model's read
is one instant, and what arrives during its hold waits for the release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.constants import ICSK_ACK_SCHED
from tcpsim.core.memory import skb_condense, skb_try_coalesce
from tcpsim.core.segment import ACK, AE, CWR, ECE, RST, SYN, URG, Segment
from tcpsim.core.state import SYNCHRONIZED

if TYPE_CHECKING:
    from tcpsim.core.skb import Skb
    from tcpsim.core.socket import TcpSocket

# tcp_add_backlog(): neither skb may carry these, and both must carry ACK
_NO_COALESCE = SYN | RST | URG
# ... and these must be equal in both
_SAME_ECN = ECE | CWR | AE


class BacklogMixin:
    """Socket ownership and the backlog of TcpSocket."""

    __slots__ = ()

    def hold(self: TcpSocket, now: int, hold_ns: int) -> None:
        """The application holds the socket (lock_sock() in recvmsg/sendmsg) from `now` for
        `hold_ns`: segments arriving before now + hold_ns go to the backlog, processed when
        the hold ends (release_sock()). A hold that overlaps the current one extends it."""
        if hold_ns <= 0:
            return
        self.release_due(now)
        mem = self.mem
        mem.owned_until = max(mem.owned_until, now + hold_ns)

    def release_due(self: TcpSocket, now: int) -> None:
        """Run release_sock() if the hold has ended by `now` (called at every event)."""
        until = self.mem.owned_until
        if until and until <= now:
            self._clock(now)
            self.release_sock()

    def backlog_wanted(self: TcpSocket, seg: Segment) -> bool:
        """tcp_v4_rcv(): an established socket owned by the user takes `seg` in its
        backlog."""
        return self.mem.owned_until > self.now and self.conn.state in SYNCHRONIZED

    def add_backlog(self: TcpSocket, seg: Segment) -> None:
        """tcp_add_backlog() [net/ipv4/tcp_ipv4.c, 6.18]: coalesce `seg`'s skb into the
        backlog's tail (no limit: the tail's fragments bound it), else append it unless the
        backlog and the receive queue already hold more than the limit."""
        mem = self.mem
        skb = self.segment_skb(seg)
        skb_condense(skb, self.rcv.peer_released)
        q = self.backlog
        if q:
            tseg, tskb = q[-1]
            if backlog_may_merge(tseg, seg):
                delta = skb_try_coalesce(tskb, skb, self.rcv.peer_released)
                if delta >= 0:
                    q[-1] = (merged_segment(tseg, seg), tskb)
                    mem.sk_backlog_len += delta
                    self.mib.TCPBacklogCoalesce += 1
                    self.trace("backlog", "coalesced", seg, skb.truesize)
                    return
        if mem.sk_backlog_len + mem.sk_rmem_alloc > self.backlog_limit():
            self.mib.TCPBacklogDrop += 1             # sk_add_backlog(): sk_rcvqueues_full()
            self.trace("drop", "backlog full", seg, skb.truesize, reason="SOCKET_BACKLOG")
            return
        q.append((seg, skb))
        mem.sk_backlog_len += skb.truesize
        self.trace("backlog", "queued", seg, skb.truesize)

    def backlog_limit(self: TcpSocket) -> int:
        """tcp_add_backlog()'s limit [net/ipv4/tcp_ipv4.c, 6.18]: twice sk_rcvbuf, half
        sk_sndbuf, and 64 KiB of headroom for the owner's pruning. The doubling is
        ec00ed472bdb ("tcp: avoid premature drops in tcp_add_backlog()", 6.10), taken into
        the stable trees in June 2024 (its 5.10 stable review mail, 064/317): every profile
        here models a stable release after it, so the limit is the same for all. A point
        release before it (linux-6.1.59, linux-6.18.0 is after) had sk_rcvbuf + sk_sndbuf / 2
        + 64 KiB: not modelled (UNVERIFIED which point releases carry it)."""
        return min(2 * self.mem.sk_rcvbuf + self.snd.sk_sndbuf // 2 + 65536, 0xFFFFFFFF)

    def release_sock(self: TcpSocket) -> None:
        """release_sock() [net/core/sock.c, 6.18]: __release_sock() processes the backlog's
        skbs in order (tcp_v4_do_rcv(): tcp_rcv_established() with each skb as parked,
        merged) with the socket still owned -- sk_backlog.len counts in tcp_space() until
        the last one is done -- then tcp_release_cb() [tcp_output.c, 6.18] runs a delayed-ACK
        timer that fell due meanwhile (tcp_delack_timer() deferred it) and sends the ACK
        __tcp_ack_snd_check() deferred, if one is still scheduled."""
        mem, ack = self.mem, self.ack
        q = self.backlog
        empty: list[tuple[Segment, Skb]] = []
        self.backlog = empty
        self.releasing = True
        for seg, skb in q:
            if self.conn.state not in SYNCHRONIZED:
                break
            self.rcv_established(seg, skb)
        self.releasing = False
        mem.sk_backlog_len = 0
        mem.owned_until = 0
        if ack.delack_deadline and ack.delack_deadline <= self.now:
            ack.delack_deadline = 0
            self.delack_timer()
        if self.ack_deferred:                        # TCP_ACK_DEFERRED
            self.ack_deferred = False
            if ack.ack_pending & ICSK_ACK_SCHED:
                self.send_ack()

    def defer_ack(self: TcpSocket) -> bool:
        """__tcp_ack_snd_check() [net/ipv4/tcp_input.c, 6.7+]: an ACK due now while
        __release_sock() runs is deferred to tcp_release_cb() (one ACK after the whole
        backlog) when the kernel has net.ipv4.tcp_backlog_ack_defer and it is on."""
        if (self.releasing and "tcp_backlog_ack_defer" in self.k.SYSCTLS
                and self.sysctl.tcp_backlog_ack_defer):
            self.ack_deferred = True
            return True
        return False


def backlog_may_merge(tail: Segment, seg: Segment) -> bool:
    """tcp_add_backlog()'s header tests [net/ipv4/tcp_ipv4.c, 6.18]: `seg` continues the
    tail, neither has SYN, RST or URG, both have ACK, their ECE/CWR/AE bits agree and their
    options are identical (the same timestamp pair, the same SACK blocks)."""
    return (tail.end_seq == seg.seq
            and not (tail.flags | seg.flags) & _NO_COALESCE
            and bool(tail.flags & seg.flags & ACK)
            and not (tail.flags ^ seg.flags) & _SAME_ECN
            and tail.tsval == seg.tsval and tail.tsecr == seg.tsecr
            and tail.sacks == seg.sacks)


def merged_segment(tail: Segment, seg: Segment) -> Segment:
    """The backlog tail's header after tcp_add_backlog() merged `seg` into it: the end
    moves on, the ACK and window are the newer ACK's (not one that is before the tail's),
    the flags are ORed, and the segment size carried is the larger of the two (gso_size:
    "we only need to carry mss max value")."""
    newer = seg.ack - tail.ack >= 0
    m = Segment(tail.seq, tail.len + seg.len, tail.flags | seg.flags,
                seg.ack if newer else tail.ack, seg.win if newer else tail.win,
                tsval=tail.tsval, tsecr=tail.tsecr, sacks=tail.sacks,
                gso_size=max(tail.gso_size or tail.len, seg.gso_size or seg.len))
    m.tx_ns = tail.tx_ns
    m.tx_segs = max(tail.tx_segs, seg.tx_segs)
    m.frags = tail.frags + seg.frags
    return m
