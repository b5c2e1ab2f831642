"""The writer's page frag: where a sender's bytes lie in memory, hence how many page
fragments each of its segments holds.

tcp_sendmsg_locked() [net/ipv4/tcp.c, 6.18] copies a write into the task's page frag
(sk_page_frag(): current->task_frag) chunk by chunk -- a chunk ends at the write's end, at
the skb's size goal or at the page's end -- and appends each chunk to the skb as a fragment,
extending the last fragment when the chunk continues it on the same page. Before each chunk
sk_page_frag_refill() -> skb_page_frag_refill() [net/core/sock.c, 6.18] decides where it goes:

* a page nothing else references any more (page count 1: the frag's own) is reused from
  offset 0;
* else the page is kept while at least 32 bytes (sk_page_frag_refill()'s `sz`) are left;
* else a new SKB_FRAG_PAGE_SIZE (32 KiB) page, from offset 0.

The model takes a new page only when the last is full: the 32-byte rule leaves the end of
a page unused where a chunk ends less than 32 bytes before it, and where a chunk ends is
where the application's writes and the skbs' size goal end -- which a capture's replay does
not know (its writer feeds write what each segment or burst carried). Modelled, it moved
veth-oscillating's fit from 0.980 to 0.841 (the same unknowns; the replay's per-segment
writes ended chunks where the kernel's 64 KiB writes did not) and shifted one skb boundary
in 14 of the golden runs; so it is left out (UNVERIFIED on the kernel either way).

On a local pair (veth, loopback) the receiver's skbs hold the sender's pages until they are
read and freed, so a page is free only when the sender has every byte acknowledged (its
retransmit queue empty) *and* the receiver has read and freed every skb. When the reader
frees them is the one thing the wire cannot show: tcp_recvmsg() frees a read skb through
skb_attempt_defer_free() [net/core/skbuff.c, 6.18], which on another CPU than the one that
allocated it (the writer's: tcp_sendmsg(), or skb_segment() in its transmit) only queues it
for that CPU, freed at its next NET_RX softirq (skb_defer_free_flush() in net_rx_action()
[net/core/dev.c]) -- which a veth/loopback writer runs when it next transmits, after that
write's copy. So:

    deferred  (default) a page the reader emptied is free only when the writer has
              transmitted since the reader's last free (writer and reader on different
              CPUs): with one write per transmission it never is
    reuse     the reader's frees are immediate (writer and reader on one CPU): a page the
              reader emptied restarts at offset 0 at the writer's next write

(`Device.reuse`, the device spec's `reuse=on`; `tcpsim replay --fit` fits it.) Measured on
6.18 over veth (docs/kernel-measurements.md, E13): with the reader emptying the queue before
the third write, the later two-fragment segments lay 2896 B further on than a stream laid
out from its first byte.

The layout is kept as the stream positions where a new page piece starts (`breaks`): a
segment [seq, seq + len) holds one fragment plus one per break strictly inside it
(skb_segment() gives each wire segment the fragments of its range; skb_try_coalesce() then
fits one segment fewer into a receiver skb of MAX_SKB_FRAGS). Not modelled: an order-3
allocation that fails and falls back to one 4 KiB page; a collapsed receive queue (copies,
tcp_collapse()) still counts as holding the pages.
"""

from __future__ import annotations

from collections import deque

from tcpsim.core.constants import SKB_FRAG_PAGE_SIZE



class PageFrag:
    """One writer's page frag (struct page_frag) and the layout of its unacknowledged bytes."""

    __slots__ = ("offset", "breaks", "reuse", "peer_holds", "peer_freed_ns")

    def __init__(self) -> None:
        self.offset = -1                   # in the current page; -1: no page yet
        self.breaks: deque[int] = deque()  # seqs where a page piece starts, ascending
        self.reuse = False                 # the reader's frees are immediate (see above)
        self.peer_holds = False            # the receiver holds skbs (queued, backlog, ofo)
        self.peer_freed_ns = -1            # when the receiver last let go of all of them

    def page_free(self, idle: bool, last_tx_ns: int) -> bool:
        """skb_page_frag_refill()'s page_ref_count() == 1: nothing but the frag references
        the current page -- the sender `idle` (every byte written acknowledged), the
        receiver holding no skb, and (unless `reuse`) its last free flushed by a
        transmission of the writer's since (`last_tx_ns`)."""
        if self.offset < 0 or not idle or self.peer_holds:
            return False
        return self.reuse or self.peer_freed_ns < last_tx_ns

    def copy(self, seq: int, n: int, free: bool) -> None:
        """Lay out one chunk of a write, [seq, seq + n) (a chunk: what one skb takes of a
        write). `free`: the page is free at the chunk's refill (page_free(); only the
        first chunk of a write can find it so -- the first appends a reference)."""
        size = SKB_FRAG_PAGE_SIZE
        while n > 0:
            if free or self.offset < 0 or self.offset >= size:
                self.offset = 0                      # reused from its start, or a new page
                if not self.breaks or self.breaks[-1] != seq:
                    self.breaks.append(seq)
                free = False
            c = min(n, size - self.offset)
            self.offset += c
            seq += c
            n -= c

    def frags(self, seq: int, length: int) -> int:
        """Page fragments of the sender's bytes [seq, seq + length): one, plus one per page
        piece starting inside."""
        if length <= 0:
            return 0
        # the breaks are ascending and a new segment lies at the stream's end: walk back from
        # the newest until a break at or before seq (only a retransmission walks further)
        end = seq + length
        n = 1
        for b in reversed(self.breaks):
            if b <= seq:
                break
            if b < end:
                n += 1
        return n

    def release(self, una: int) -> None:
        """Forget breaks no unacknowledged segment can start after (at or below snd_una;
        the newest is kept: the current page's)."""
        b = self.breaks
        while len(b) > 1 and b[1] <= una:
            b.popleft()

    def on_peer(self, holds: bool, now: int) -> None:
        """The receiver's queues went from empty to holding skbs or back (`now`: when)."""
        if self.peer_holds and not holds:
            self.peer_freed_ns = now
        self.peer_holds = holds
