"""Ingress devices: how the skb of an arriving segment is laid out and what it costs.

The same 1448-byte segment costs different memory depending on the device that built its skb,
and the layout decides how cheaply it coalesces (skb_try_coalesce() [net/core/skbuff.c]):

* a payload in page fragments coalesces by moving fragment descriptors and charges
  `truesize - SKB_TRUESIZE(head)` (the fragment memory);
* a payload in a page-fragment head is stolen as one more fragment and charges
  `truesize - sizeof(sk_buff)`;
* a payload that fits the tail skb's linear tailroom is copied and charges nothing.

Header sizes: a segment on the wire carries `HDR` bytes of Ethernet + IPv4 + TCP(+timestamps).
"""

from __future__ import annotations

from dataclasses import dataclass

from tcpsim.core.constants import (
    PAGE_SIZE, SKB_SHINFO, SKB_STRUCT, data_align, kmalloc_size, skb_truesize,
)
from tcpsim.core.skb import Skb

ETH_HLEN = 14
IP_HLEN = 20
NET_SKB_PAD = 64


@dataclass(frozen=True, slots=True)
class LocalSender:
    """veth / loopback: the receiver gets the sender's own skb (TSO/GSO/GRO off).

    tcp_sendmsg() builds a small kmalloc'd head for the headers (`head` bytes of data area,
    SKB_TRUESIZE(head) with the struct overhead) and copies the payload into page fragments,
    so truesize = len + SKB_TRUESIZE(head) and a coalesce charges exactly `len`.
    Measured on 6.18 over veth: truesize = len + 832 and 17 segments per skb
    (docs/kernel-measurements.md, E1, E4).

    `shared`: the receiver's skb is a clone of the sender's retransmit-queue skb (a veth pair
    or loopback with both ends on one host and no forwarding hop). skb_try_coalesce() refuses
    a cloned skb, so nothing coalesces into it until the sender frees its copy on ACK -- with
    delayed ACKs most small segments then become new skbs (measured, E1). A forwarding hop
    (the capture's delay router) gives the receiver private skbs: coalescing as usual (E4).
    """

    name: str = "veth"
    head: int = 256
    shared: bool = False

    def make_skb(self, seq: int, length: int, fin: bool, gso_size: int = 0) -> Skb:
        nfrags = 0 if length == 0 else 1 + (length - 1) // (8 * PAGE_SIZE)
        skb = Skb(seq, length, skb_truesize(self.head) + length, head=self.head, linear=0,
                  nfrags=nfrags, fin=fin)
        if self.shared:
            skb.cloned_until = seq + length + (1 if fin else 0)
        return skb


@dataclass(frozen=True, slots=True)
class Tun:
    """tun/tap (packetdrill's device): headers and payload copied into a linear kmalloc head.

    tun_get_user() -> alloc_skb_with_frags(): up to SKB_MAX_HEAD(pad) bytes go in the linear
    head (kmalloc bucket), the rest in page fragments of up to order 3. The linear skb keeps
    its kmalloc slack as tailroom, so a small follow-up segment may coalesce for free.
    """

    name: str = "tun"
    tcp_hlen: int = 32  # TCP header with the timestamp option

    def make_skb(self, seq: int, length: int, fin: bool, gso_size: int = 0) -> Skb:
        wire = IP_HLEN + self.tcp_hlen + length
        good_linear = PAGE_SIZE - NET_SKB_PAD - SKB_SHINFO
        linear = min(wire, good_linear)
        head_alloc = kmalloc_size(data_align(NET_SKB_PAD + linear) + SKB_SHINFO)
        end_offset = head_alloc - SKB_SHINFO
        truesize = skb_truesize(end_offset)
        rest = wire - linear
        nfrags = 0
        while rest > 0:
            npages = -(-rest // PAGE_SIZE)
            order = 3
            while order and npages < (1 << order):
                order -= 1
            truesize += PAGE_SIZE << order
            rest -= min(rest, PAGE_SIZE << order)
            nfrags += 1
        tailroom = end_offset - NET_SKB_PAD - linear
        payload_linear = max(0, min(length, linear - IP_HLEN - self.tcp_hlen))
        return Skb(seq, length, truesize, head=end_offset, linear=payload_linear,
                   nfrags=nfrags, tailroom=tailroom, fin=fin)


@dataclass(frozen=True, slots=True)
class PageNic:
    """A NIC that DMAs each frame into a `buf`-byte page fragment and build_skb()s around it.

    truesize = buf + sizeof(sk_buff): 2304 for 2 KiB half-page buffers, 4352 for a full page.
    The payload sits in the (page-fragment) head: coalescing steals the head as a fragment.
    """

    name: str = "nic-2k"
    buf: int = 2048
    tcp_hlen: int = 32

    def make_skb(self, seq: int, length: int, fin: bool, gso_size: int = 0) -> Skb:
        frame = ETH_HLEN + IP_HLEN + self.tcp_hlen + length
        per_frame = self.buf - SKB_SHINFO - NET_SKB_PAD
        head = self.buf - SKB_SHINFO
        if frame <= per_frame:
            return Skb(seq, length, self.buf + SKB_STRUCT, head=head, linear=length, nfrags=0,
                       head_frag=True, tailroom=per_frame - frame, fin=fin)
        # jumbo/GRO: head buffer plus one buffer per extra frame-full of payload
        extra = -(-(frame - per_frame) // per_frame)
        return Skb(seq, length, (1 + extra) * self.buf + SKB_STRUCT, head=head,
                   linear=min(length, per_frame), nfrags=extra, head_frag=True, fin=fin)


Device = LocalSender | Tun | PageNic

DEVICES: dict[str, Device] = {
    "veth": LocalSender("veth"),
    "veth-direct": LocalSender("veth-direct", shared=True),
    "loopback": LocalSender("loopback", shared=True),
    "tun": Tun(),
    "nic-2k": PageNic("nic-2k", 2048),
    "nic-4k": PageNic("nic-4k", 4096),
}


def device(name: str) -> Device:
    """Look up an ingress device profile by name (see DEVICES)."""
    try:
        return DEVICES[name]
    except KeyError:
        raise ValueError(f"unknown device {name!r}; choose one of: {', '.join(DEVICES)}") from None
