"""Receive-memory accounting and the mechanics the prune policies use.

`sk_rmem_alloc` is the sum of the truesize of every skb charged to the socket;
`sk_forward_alloc` is the page-granular quota charged against the protocol's memory pool.
This module holds the mechanics (charging, freeing, coalescing, collapsing, dropping OFO
skbs); *when* to use them is decided by the kernel policies in models/.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from tcpsim.core.constants import (
    COLLAPSE_CHUNK, MAX_SKB_FRAGS, PAGE_SIZE, SKB_SHINFO, SKB_STRUCT, SKB_WITH_OVERHEAD_PAGE,
    data_align, kmalloc_size, skb_truesize,
)
from tcpsim.core.skb import Skb

# the kinds of __sk_mem_schedule() [include/net/sock.h]
SK_MEM_SEND = 0
SK_MEM_RECV = 1
# SOCK_MIN_SNDBUF [include/net/sock.h]: 2 * TCP_SKB_MIN_TRUESIZE (2048 + the sk_buff)
SOCK_MIN_SNDBUF = 2 * (2048 + SKB_STRUCT)

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket


class MemoryMixin:
    """Memory accounting of TcpSocket (split out for reading; state lives in socket.py)."""

    __slots__ = ()

    # -- sk_rmem_schedule / skb_set_owner_r / sock_rfree -----------------------------------

    def charged_pages(self: TcpSocket) -> int:
        """Pages this socket holds in its pool: its forward-alloc quota and what the receive
        and send queues charged to it (always whole pages: the quota is taken and given
        back in pages) -- sk_forward_alloc + sk_rmem_alloc + sk_wmem_queued, in pages."""
        mem = self.mem
        return (mem.sk_forward_alloc + mem.sk_rmem_alloc + mem.wmem_charged) // PAGE_SIZE

    def rmem_schedule(self: TcpSocket, size: int) -> bool:
        """Models `sk_rmem_schedule()` [include/net/sock.h, 5.15-6.18]: make `size` bytes
        of quota available -- at once if sk_forward_alloc covers them, else by taking
        whole pages from the host's pool (`__sk_mem_schedule`, SK_MEM_RECV), which may
        refuse them under tcp_mem (pfmemalloc emergency skbs are not modelled)."""
        need = size - self.mem.sk_forward_alloc
        return need <= 0 or self.mem_schedule(need, SK_MEM_RECV)

    def mem_schedule(self: TcpSocket, size: int, kind: int) -> bool:
        """Models `__sk_mem_schedule()` [net/core/sock.c, 5.15-6.18]: add the pages that
        cover `size` to sk_forward_alloc and raise the pool by them; take them back if
        the pool refuses."""
        amt = -(-size // PAGE_SIZE)                 # sk_mem_pages()
        self.mem.sk_forward_alloc += amt * PAGE_SIZE
        if self.mem_raise_allocated(size, amt, kind):
            return True
        self.mem.sk_forward_alloc -= amt * PAGE_SIZE
        return False

    def mem_raise_allocated(self: TcpSocket, size: int, amt: int, kind: int) -> bool:
        """Models `__sk_mem_raise_allocated()` [net/core/sock.c, 5.15-6.18]: add `amt` pages
        to the pool and, for a socket of a memory cgroup, charge them to it
        (mem_cgroup_charge_skmem(), core/memcg.py: a refusal goes straight to the refusal
        below, past every tcp_mem rule); then, with `allocated` the global counter (per-CPU
        reserves not included): at most tcp_mem[0] -> leave pressure, granted; above
        tcp_mem[1] -> enter pressure; above tcp_mem[2] -> refused. Otherwise granted while
        this socket is under its guaranteed minimum (receive: sk_rmem_alloc < tcp_rmem[0];
        send: sk_wmem_queued < tcp_wmem[0]), while the host is not under pressure, or while
        its fair share holds (sockets_allocated as percpu_counter_read_positive() sees it
        x this socket's pages -- queues and forward alloc, the new pages included -- <
        tcp_mem[2]). A refused send charge moderates
        sk_sndbuf and is granted anyway when the send queue is at its (new) sndbuf (the memcg
        charged with __GFP_NOFAIL if it had refused); a refusal takes the pages back out of
        the pool and the memcg."""
        mem = self.mem
        memcg = self.memcg
        if mem.sk_bypass_prot_mem:          # 6.19: outside the protocol's accounting
            if memcg is None or memcg.charge_skmem(amt, self.now, False, kind == SK_MEM_SEND):
                return True
            return self._mem_suppress(size, amt, kind, False, False)
        proto = self.proto
        proto.memory_allocated_add(self.cpu, amt)
        if memcg is not None:
            if not memcg.charge_skmem(amt, self.now, False, kind == SK_MEM_SEND):
                return self._mem_suppress(size, amt, kind, True, False)
        allocated = proto.allocated
        lo, press, hi = proto.tcp_mem
        if allocated <= lo:
            proto.leave_pressure(self.now)
            return True
        if allocated > press:
            proto.enter_pressure(self.now)
        if allocated <= hi:
            if kind == SK_MEM_RECV:
                if mem.sk_rmem_alloc < self.sysctl.tcp_rmem[0]:
                    return True
            elif mem.wmem_charged < self.sysctl.tcp_wmem[0]:
                return True
            if not proto.under_pressure():
                return True
            own = -(-(mem.wmem_charged + mem.sk_rmem_alloc + mem.sk_forward_alloc) // PAGE_SIZE)
            if hi > proto.sockets_allocated_read_positive() * own:
                return True
        return self._mem_suppress(size, amt, kind, True, memcg is not None)

    def _mem_suppress(self: TcpSocket, size: int, amt: int, kind: int, pooled: bool,
                      charged: bool) -> bool:
        """`suppress_allocation` of __sk_mem_raise_allocated(): a send charge moderates
        sk_sndbuf and is granted when the send queue is at its sndbuf (a memcg that refused
        charged with __GFP_NOFAIL); else the pages leave the pool (`pooled`) and the memcg
        (`charged`), and the charge is refused."""
        memcg = self.memcg
        if kind == SK_MEM_SEND:
            self.moderate_sndbuf()
            if self.mem.wmem_charged + size >= self.snd.sk_sndbuf:
                if memcg is not None and not charged:
                    memcg.charge_skmem(amt, self.now, True, True)
                return True
        if pooled:
            self.proto.memory_allocated_sub(self.cpu, amt)
        if charged and memcg is not None:
            memcg.uncharge_skmem(amt)
        return False

    def forced_mem_schedule(self: TcpSocket, size: int) -> None:
        """Models `sk_forced_mem_schedule()` [net/ipv4/tcp_output.c, 5.15-6.18]: cover
        `size` with whole pages charged to the pool without any limit and without
        touching the pressure state -- how tcp_data_queue() admits an in-order segment to
        an empty receive queue, and why a host's pool can sit above tcp_mem[2]. A socket's
        memcg is charged with __GFP_NOFAIL (past its limit too)."""
        need = size - self.mem.sk_forward_alloc
        if need > 0:
            amt = -(-need // PAGE_SIZE)
            self.mem.sk_forward_alloc += amt * PAGE_SIZE
            if not self.mem.sk_bypass_prot_mem:
                self.proto.memory_allocated_add(self.cpu, amt)
            if self.memcg is not None:      # __GFP_NOFAIL: past memory.max / the tcp limit
                self.memcg.charge_skmem(amt, self.now, True, False)

    def moderate_sndbuf(self: TcpSocket) -> None:
        """Models `sk_stream_moderate_sndbuf()` [include/net/sock.h]: a refused send charge
        cuts sk_sndbuf to half the queued bytes (not below SOCK_MIN_SNDBUF; SO_SNDBUF
        locks are not modelled)."""
        snd = self.snd
        snd.sk_sndbuf = max(min(snd.sk_sndbuf, self.mem.wmem_charged >> 1), SOCK_MIN_SNDBUF)

    def wmem_settle(self: TcpSocket) -> None:
        """Models the send queue's share of the socket's one memory quota: every skb
        tcp_sendmsg_locked() queues is charged to `sk_forward_alloc` with its truesize
        (sk_wmem_schedule() + sk_mem_charge(), whole pages from the pool when short), and
        tcp_wmem_free_skb() gives it back when the ACK frees the skb (sk_mem_uncharge(),
        which reclaims whole pages) [net/ipv4/tcp.c, include/net/sock.h, 6.18]. Run when an
        event has changed `sk_wmem_queued`: the charges in between sum to the same, and
        `sk_forward_alloc` ends as the kernel's, the part of a page the send and receive
        queues leave over. That part is what tcp_rcv_established()'s fast path compares an
        arriving skb's truesize with -- at a bulk sender, the send queue decides it.

        The pages come from the host's pool (`__sk_mem_schedule`, SK_MEM_SEND). A refusal
        cannot take back bytes the writer already queued here: the model charges them
        anyway (as sk_forced_mem_schedule() does for the first skb of an empty queue and
        tcp_wmem_schedule() up to tcp_wmem[0]), and the refusal's moderated sk_sndbuf is
        what holds the writer back afterwards."""
        mem = self.mem
        queued = self.wmem_queued()
        delta = queued - mem.wmem_charged
        if delta > 0:
            need = delta - mem.sk_forward_alloc
            if need > 0 and not self.mem_schedule(need, SK_MEM_SEND):
                self.forced_mem_schedule(delta)
            mem.sk_forward_alloc -= delta
        elif delta < 0:
            self.mem_reclaim(-delta)
        mem.wmem_charged = queued

    def mem_reclaim(self: TcpSocket, size: int) -> None:
        """Models `sk_mem_uncharge()` + `sk_mem_reclaim()` [include/net/sock.h, 6.x]:
        give `size` back to the quota and return its whole pages to the pool
        (`__sk_mem_reclaim`), keeping less than one page."""
        mem = self.mem
        fwd = mem.sk_forward_alloc + size
        if fwd >= PAGE_SIZE:
            self.mem_reduce_allocated(fwd // PAGE_SIZE)
            fwd &= PAGE_SIZE - 1
        mem.sk_forward_alloc = fwd

    def mem_reduce_allocated(self: TcpSocket, pages: int) -> None:
        """Models `__sk_mem_reduce_allocated()` [net/core/sock.c, 6.x]: give `pages` back
        to the pool (and uncharge them from the socket's memcg, mem_cgroup_uncharge_skmem());
        leave pressure once the global counter is below tcp_mem[0]."""
        if self.memcg is not None:
            self.memcg.uncharge_skmem(pages)
        if self.mem.sk_bypass_prot_mem:
            return
        proto = self.proto
        proto.memory_allocated_sub(self.cpu, pages)
        if proto.memory_pressure >= 0 and proto.allocated < proto.tcp_mem[0]:
            proto.leave_pressure(self.now)

    def under_memory_pressure(self: TcpSocket) -> bool:
        """Models `tcp_under_memory_pressure()` [include/net/tcp.h]: the socket's memcg is
        under socket pressure (mem_cgroup_under_socket_pressure()), or the host's pool is
        (never for a 6.19 socket that bypasses it)."""
        return ((self.proto.memory_pressure >= 0 and not self.mem.sk_bypass_prot_mem)
                or self.memcg_pressure())

    def memcg_pressure(self: TcpSocket) -> bool:
        """tcp_under_memory_pressure()'s memcg term alone: the socket's memory cgroup is
        under socket pressure (False without one)."""
        memcg = self.memcg
        return memcg is not None and memcg.tcpmem_pressure

    def release_all(self: TcpSocket) -> None:
        """The socket is freed: sk_stream_kill_queues() [net/core/stream.c] purges its
        receive, out-of-order and write queues and sk_mem_reclaim_final()
        [include/net/sock.h] gives back the rest of its quota -- every page it held goes
        back to its pool (charged_pages), and the pool counts one socket less
        (sk_sockets_allocated_dec, tcp_v4_destroy_sock)."""
        mem = self.mem
        self.mem_reduce_allocated(self.charged_pages())
        self.proto.sockets_allocated_add(self.cpu, -1)
        mem.receive_queue.clear()
        mem.ofo_queue.clear()
        mem.sk_rmem_alloc = mem.sk_forward_alloc = mem.wmem_charged = 0

    def charge(self: TcpSocket, size: int) -> None:
        """skb_set_owner_r() / the coalesce delta: rmem += size, quota -= size."""
        self.mem.sk_rmem_alloc += size
        self.mem.sk_forward_alloc -= size

    def uncharge(self: TcpSocket, size: int) -> None:
        """Models `sock_rfree()` + `sk_mem_uncharge()` [6.x]: give back `size` and reclaim
        whole pages of quota, keeping less than one page (sk_mem_reclaim)."""
        self.mem.sk_rmem_alloc -= size
        self.mem_reclaim(size)

    # -- tcp_try_coalesce / skb_try_coalesce --------------------------------------------

    def coalesce_into(self: TcpSocket, to: Skb, frm: Skb) -> bool:
        """Models `tcp_try_coalesce()` + `skb_try_coalesce()`: merge `frm` into `to`.

        Charges only the delta (no rcvbuf check: coalescing never consults sk_rcvbuf).
        Returns False when the skbs cannot be merged (gap, FIN, fragment limit).
        """
        delta = skb_try_coalesce(to, frm, self.rcv.peer_released)
        if delta < 0:
            return False
        self.charge(delta)
        self.mib.TCPRcvCoalesce += 1
        return True

    # -- tcp_collapse / tcp_collapse_ofo_queue -------------------------------------------

    def collapse_receive_queue(self: TcpSocket) -> None:
        """Models `tcp_collapse()` over sk_receive_queue, range [copied_seq, rcv_nxt)."""
        mem = self.mem
        if mem.receive_queue:
            q = list(mem.receive_queue)
            q = self._collapse(q, 0, len(q), self.rcv.copied_seq, self.rcv.rcv_nxt)
            mem.receive_queue.clear()
            mem.receive_queue.extend(q)

    def collapse_ofo_queue(self: TcpSocket) -> None:
        """Models `tcp_collapse_ofo_queue()`: collapse each contiguous OFO range that holds
        more than one skb or at least a page of payload; give up once the tiny ranges skipped
        add up to more than rcvbuf/8."""
        ofo = self.mem.ofo_queue
        i = 0
        sum_tiny = 0
        while i < len(ofo):
            head = i
            start, end = ofo[i].seq, ofo[i].end_seq
            range_truesize = ofo[i].truesize
            j = i + 1
            while j < len(ofo) and not ofo[j].seq > end and not ofo[j].end_seq < start:
                range_truesize += ofo[j].truesize
                start = min(start, ofo[j].seq)
                end = max(end, ofo[j].end_seq)
                j += 1
            if range_truesize != ofo[head].truesize or end - start >= SKB_WITH_OVERHEAD_PAGE:
                before = len(ofo)
                ofo[:] = self._collapse(ofo, head, j, start, end)
                j -= before - len(ofo)
            else:
                sum_tiny += range_truesize
                if sum_tiny > self.mem.sk_rcvbuf >> 3:
                    return
            i = j

    def _collapse(self: TcpSocket, q: list[Skb], head: int, tail: int,
                  start: int, end: int) -> list[Skb]:
        """Models `tcp_collapse()` on q[head:tail]: copy the payload of bloated skbs into
        fresh linear skbs of up to one page and free the originals (TCPRcvCollapsed)."""
        i = head
        while i < tail:
            skb = q[i]
            if not start < skb.end_seq:          # no new bits: free it
                self._free_collapsed(skb)
                del q[i]
                tail -= 1
                continue
            if not skb.fin and (self.k.win_from_space(self, skb.truesize) > skb.len
                                or skb.seq < start):
                break
            if i + 1 < tail and skb.end_seq != q[i + 1].seq:
                break
            start = skb.end_seq                   # decided to skip this one
            i += 1
        if i >= tail or q[i].fin:
            return q
        out = q[:i]
        rest_i = i
        while start < end:
            copy = min(COLLAPSE_CHUNK, end - start)
            alloc = kmalloc_size(data_align(copy) + SKB_SHINFO)
            nskb = Skb(start, 0, skb_truesize(alloc - SKB_SHINFO), head=alloc - SKB_SHINFO,
                       linear=0, nfrags=0, tailroom=alloc - SKB_SHINFO)
            self.charge(nskb.truesize)
            out.append(nskb)
            while copy > 0:
                skb = q[rest_i]
                size = skb.end_seq - start - (1 if skb.fin else 0)
                if size > 0:
                    size = min(copy, size)
                    self.mem.collapsed_bytes += size
                    nskb.len += size
                    nskb.linear += size
                    nskb.end_seq += size
                    nskb.tailroom -= size
                    copy -= size
                    start += size
                if not start < skb.end_seq - (1 if skb.fin else 0):
                    self._free_collapsed(skb)
                    rest_i += 1
                    if rest_i >= tail or q[rest_i].fin:
                        return out + q[rest_i:]
        return out + q[rest_i:]

    def _free_collapsed(self: TcpSocket, skb: Skb) -> None:
        """tcp_collapse_one(): free a source skb whose payload was copied."""
        self.uncharge(skb.truesize)
        self.mib.TCPRcvCollapsed += 1

    # -- OFO queue helpers -----------------------------------------------------------------

    def ofo_drop_last(self: TcpSocket) -> Skb:
        """Drop the highest-sequence OFO skb (tcp_prune_ofo_queue's unit of work)."""
        skb = self.mem.ofo_queue.pop()
        self.uncharge(skb.truesize)
        return skb

    def ofo_index(self: TcpSocket, seq: int) -> int:
        """Index of the first OFO skb whose seq >= `seq`."""
        return bisect_left([s.seq for s in self.mem.ofo_queue], seq)


def skb_condense(skb: Skb, peer_released: int) -> None:
    """skb_condense() [net/core/skbuff.c, 6.18], as tcp_add_backlog() and
    tcp_data_queue_ofo() [tcp_input.c] run it on an skb about to be parked: a payload in page
    fragments that fits the linear tailroom is pulled into the head (the fragments freed) and
    truesize becomes the head's alone -- unless the skb is still cloned (the sender's
    retransmit-queue copy not yet freed, `cloned_until`). On a local pair the tailroom is what
    a sender's small head leaves after MAX_TCP_HEADER (64 B): a segment of 64 B or less that
    software GSO cut (a window edge's tail) becomes a linear skb, whose kmalloc'd head
    skb_try_coalesce() cannot steal -- it stays an skb of its own (832 B for its few bytes;
    measured: veth-periodic-small-writes-shrink1, docs/bring-your-own-capture.md)."""
    data = skb.len - skb.linear
    if not data or skb.nfrags == 0 or data > skb.tailroom or skb.cloned_until > peer_released:
        return
    skb.linear += data
    skb.tailroom -= data
    skb.nfrags = 0
    skb.truesize = skb_truesize(skb.head)


def skb_try_coalesce(to: Skb, frm: Skb, peer_released: int) -> int:
    """skb_try_coalesce() [net/core/skbuff.c] on the skbs alone: merge `frm` into `to` and
    return the truesize delta to charge, or -1 when they cannot be merged (gap, FIN, a `to`
    still shared with the sender -- cloned until the peer released `to.cloned_until` -- or
    the fragment limit). Used by the receive queue (tcp_try_coalesce) and the socket
    backlog (tcp_add_backlog, tcpsim/core/backlog.py)."""
    if frm.seq != to.end_seq or to.fin or to.cloned_until > peer_released:
        return -1
    length = frm.len
    if length <= to.tailroom and to.nfrags == 0:
        delta = 0                              # copied into the linear tail: free
        to.tailroom -= length
        to.linear += length
    elif frm.linear:
        # payload in the head: steal it as one more fragment if it is a page fragment
        if to.nfrags + frm.nfrags >= MAX_SKB_FRAGS or not frm.head_frag:
            return -1
        delta = frm.truesize - SKB_STRUCT
        to.nfrags += frm.nfrags + 1
    else:
        # payload in page fragments: move the descriptors, keep their memory
        if to.nfrags + frm.nfrags > MAX_SKB_FRAGS:
            return -1
        delta = frm.truesize - skb_truesize(frm.head)
        to.nfrags += frm.nfrags
    to.len += length
    to.end_seq = frm.end_seq
    to.fin = frm.fin
    to.truesize += delta
    return delta
