"""Socket buffers as the receive path sees them: sequence range, payload, memory layout.

Only what changes accounting is modelled: `truesize` (the memory charged), how many page
fragments the skb holds (coalescing stops at MAX_SKB_FRAGS), whether the payload sits in a
page-fragment head that can be stolen, and the linear tailroom a small segment can be copied
into for free. See skb_try_coalesce() [net/core/skbuff.c].
"""

from __future__ import annotations


class Skb:
    """One queued socket buffer (an skb on sk_receive_queue or the out-of-order queue)."""

    __slots__ = ("seq", "end_seq", "len", "truesize", "head", "linear", "nfrags", "head_frag",
                 "tailroom", "fin", "cloned_until")

    def __init__(self, seq: int, length: int, truesize: int, *, head: int, linear: int,
                 nfrags: int, head_frag: bool = False, tailroom: int = 0,
                 fin: bool = False) -> None:
        self.seq = seq
        self.end_seq = seq + length + (1 if fin else 0)
        self.len = length
        self.truesize = truesize
        self.head = head            # size of the linear data area (skb_end_offset)
        self.linear = linear        # payload bytes in the linear head (skb_headlen after pull)
        self.nfrags = nfrags        # page fragments holding payload (skb_shinfo()->nr_frags)
        self.head_frag = head_frag  # the head is a page fragment that can be stolen
        self.tailroom = tailroom    # free bytes after the linear data (skb_tailroom)
        self.fin = fin
        # veth/loopback: the head is shared with the sender's retransmit-queue skb until the
        # sender frees it on ACK; until the peer has released everything below this
        # sequence the skb is "cloned" and nothing can be coalesced into it.
        self.cloned_until = 0

    def __repr__(self) -> str:
        return (f"Skb({self.seq}:{self.end_seq} len={self.len} truesize={self.truesize} "
                f"frags={self.nfrags}{' headfrag' if self.head_frag else ''}"
                f"{' tailroom=' + str(self.tailroom) if self.tailroom else ''}{' FIN' if self.fin else ''})")
