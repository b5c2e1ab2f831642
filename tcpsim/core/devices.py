"""Ingress devices: how the skb of an arriving segment is laid out and what it costs.

The same 1448-byte segment costs different memory depending on the device that built its skb,
and the layout decides how cheaply it coalesces (skb_try_coalesce() [net/core/skbuff.c]):

* a payload in page fragments coalesces by moving fragment descriptors and charges
  `truesize - SKB_TRUESIZE(head)` (the fragment memory);
* a payload in a page-fragment head is stolen as one more fragment and charges
  `truesize - sizeof(sk_buff)`;
* a payload that fits the tail skb's linear tailroom is copied and charges nothing.

A device is data: a buffer *strategy* and its parameters (`Device`). The strategies:

    sender      veth / loopback: the receiver gets the sender's own skb (a small kmalloc'd
                head, payload in page fragments)
    tun         tun/tap: headers and payload copied into a linear kmalloc head, the rest in
                page fragments (alloc_skb_with_frags)
    page-frag   a NIC that DMAs each frame into a `buf`-byte page fragment (page_pool style)
                and build_skb()s around it
    page        the same with a full page per frame (`buf` = PAGE_SIZE)
    kmalloc     a NIC that posts one linear buffer per frame, netdev_alloc_skb(`buf`): above
                a page the data area is a kmalloc object of the next size class (ntb_netdev
                at a 64 KiB MTU: 128 KiB per frame, however small the frame)

Beside the strategy: `rx_copybreak` (a frame shorter than this is copied into a right-sized
skb, as e1000/igb/ntb_netdev do), `gro` (frames of one GSO train merged into one skb) and the
interface `mtu` (0: the link's). The six built-ins (`DEVICES`) are named presets. A device
other than a preset is named by its spec string, `strategy:key=value,...` (`Device.spec`,
parsed by `device()`), which is what a scenario stores and what the native engine parses.

Header sizes: a segment on the wire carries Ethernet + IPv4 + TCP(+timestamps) headers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tcpsim.core.constants import (
    MAX_TCP_HEADER, PAGE_SIZE, SKB_FRAG_PAGE_SIZE, SKB_SHINFO, SKB_STRUCT, data_align, kmalloc_size, skb_truesize,
)
from tcpsim.core.skb import Skb

ETH_HLEN = 14
IP_HLEN = 20
NET_SKB_PAD = 64
# SKB_SMALL_HEAD_CACHE_SIZE [net/core/skbuff.c, 6.18]: SKB_HEAD_ALIGN(MAX_TCP_HEADER), the
# small-head kmem cache; its data area is 256 bytes here (the 832 = 256 + 576 measured in E1).
SKB_SMALL_HEAD = 256

STRATEGIES = ("sender", "tun", "page-frag", "page", "kmalloc")
_NIC = ("page-frag", "page", "kmalloc")
_ATTRS = ("buf", "mtu", "rx_copybreak", "gro", "head", "shared", "tso", "reuse")
_FLAGS = ("gro", "shared", "tso", "reuse")
# the fields a [...device] table may give besides preset/strategy (copybreak: rx_copybreak)
FIELDS = (*_ATTRS, "copybreak")


def netdev_alloc_skb(length: int) -> tuple[int, int, bool]:
    """(data area, truesize, head_frag) of netdev_alloc_skb(dev, length).

    Models `__netdev_alloc_skb()` [net/core/skbuff.c, 6.18]: the request grows by NET_SKB_PAD;
    a request that fits the small-head cache, or exceeds SKB_WITH_OVERHEAD(PAGE_SIZE), goes
    to `__alloc_skb()` (kmalloc: the data area is the size class -- kmalloc_size_roundup()
    [mm/slab_common.c, 6.18], powers of two with the 96/192 classes -- less the shared info);
    anything between is carved from the per-CPU page-fragment cache as
    SKB_HEAD_ALIGN(len) bytes and build_skb()'d (head_frag). truesize = SKB_TRUESIZE(data
    area) in every branch (`__finalize_skb_around()`).
    """
    want = length + NET_SKB_PAD
    if want <= SKB_SMALL_HEAD:
        return SKB_SMALL_HEAD, skb_truesize(SKB_SMALL_HEAD), False
    if want > PAGE_SIZE - SKB_SHINFO:
        end = kmalloc_size(data_align(want) + SKB_SHINFO) - SKB_SHINFO
        return end, skb_truesize(end), False
    end = data_align(want)
    return end, skb_truesize(end), True


@dataclass(frozen=True, slots=True)
class Device:
    """An ingress device described by its buffer strategy (see the module docstring).

    `buf`: bytes per receive buffer (page-frag: the fragment size; kmalloc: the length asked
    of netdev_alloc_skb, 0 = mtu + ETH_HLEN). `head`, `shared`, `tso`: the sender strategy's
    kmalloc'd header area, whether the skb is a clone of the sender's, and whether the sending
    device takes multi-segment skbs whole (see `sender_skb`). `reuse`: the receiver's frees
    of the sender's pages are immediate (reader and writer on one CPU), so the writer reuses
    a page the reader emptied from its start; off, they wait in skb_attempt_defer_free() for
    the writer's next transmission (tcpsim/core/pagefrag.py).
    """

    name: str = "veth"
    strategy: str = "sender"
    buf: int = 0
    mtu: int = 0
    rx_copybreak: int = 0
    gro: bool = True
    head: int = 256
    shared: bool = False
    tso: bool = True
    reuse: bool = False
    tcp_hlen: int = 32  # TCP header with the timestamp option

    @property
    def spec(self) -> str:
        """The canonical spec string: `strategy[:key=value,...]` with the non-default keys."""
        d = Device(strategy=self.strategy)
        parts = []
        for attr in _ATTRS:
            v = getattr(self, attr)
            if v != getattr(d, attr):
                parts.append(f"{attr}={('on' if v else 'off') if isinstance(v, bool) else v}")
        return self.strategy + (":" + ",".join(parts) if parts else "")

    @property
    def gso_whole(self) -> bool:
        """The sending end hands the receiver a multi-segment skb whole: one GSO skb per
        transmission (gso_size = MSS), admitted, coalesced, acknowledged and read as one skb.

        A local pair with TSO on (`shared` and `tso`: `loopback`, `veth-direct`): the
        device advertises TSO/GSO, so validate_xmit_skb() [net/core/dev.c, 6.18] leaves the
        GSO skb alone and loopback_xmit() [drivers/net/loopback.c] / veth_xmit()
        [drivers/net/veth.c] pass it to the peer's netif_rx() as it is. Measured over lo,
        6.18, tcp:tcp_probe (docs/kernel-measurements.md, E7): at MTU 1500, 60-64 KB skbs;
        at MTU 65536, the 80 kB RPCs of `rpc-loopback` arrive as 65483 + 14517 B. With
        `tso` off (the capture tool's `ethtool -K lo tso off gso off`) software GSO cuts it
        into MSS-sized wire segments. Not modelled: the `veth` preset (a forwarding hop,
        the capture tool's veth with offloads off) stays MSS-sized; a rate-limited link
        (tbf) carries MSS-sized segments (tbf_segment() would cut a GSO skb above its
        max_size)."""
        return self.strategy == "sender" and self.shared and self.tso

    def make_skb(self, seq: int, length: int, fin: bool, gso_size: int = 0,
                 tx_segs: int = 0, frags: int = 0) -> Skb:
        """The skb this device builds for an arriving segment of `length` payload bytes
        (`gso_size`: the per-frame payload of a GSO train, 0 = one frame; `tx_segs`: the
        segment count of the sender's skb it was sent from, 0 = unknown; `frags`: the page
        fragments of its payload in the sender's memory, 0 = unknown)."""
        if self.strategy == "sender":
            return self.sender_skb(seq, length, fin, tx_segs, frags)
        if self.strategy == "tun":
            return self.tun_skb(seq, length, fin)
        frame = ETH_HLEN + IP_HLEN + self.tcp_hlen + length
        if frame < self.rx_copybreak:
            return self.copied_skb(seq, length, fin, frame)
        if self.strategy == "kmalloc":
            return self.linear_skb(seq, length, fin, frame, gso_size)
        return self.page_frag_skb(seq, length, fin, frame, gso_size)

    def sender_skb(self, seq: int, length: int, fin: bool, tx_segs: int = 0,
                   frags: int = 0) -> Skb:
        """veth / loopback: the receiver gets the sender's own skb (TSO/GSO/GRO off).

        tcp_sendmsg() builds a small kmalloc'd head for the headers (`head` bytes of data area,
        SKB_TRUESIZE(head) with the struct overhead) and copies the payload into page fragments,
        so truesize = len + SKB_TRUESIZE(head) and a coalesce charges exactly `len`.
        Measured on 6.18 over veth: truesize = len + 832 and 17 segments per skb
        (docs/kernel-measurements.md, E1, E4) -- 16 when one of them crosses a page of the
        writer's page frag and so holds two fragments: `frags`, as the model's sender laid
        its bytes out (tcpsim/core/pagefrag.py), or `sender_frags` for a segment from
        elsewhere.

        `shared`: the receiver's skb is a clone of the sender's retransmit-queue skb (a veth pair
        or loopback with both ends on one host and no forwarding hop). skb_try_coalesce() refuses
        a cloned skb, so nothing coalesces into it until the sender frees its copy on ACK -- with
        delayed ACKs most small segments then become new skbs (measured, E1). A forwarding hop
        (the capture's delay router) gives the receiver private skbs: coalescing as usual (E4).
        Only a one-segment skb reaches the receiver as that clone: tcp_transmit_skb()
        [tcp_output.c, 6.18] clones the skb it sends, and a device without TSO gets it whole
        only when it is one segment; a multi-segment (GSO) skb is cut by skb_segment()
        [net/core/skbuff.c, 6.18] (validate_xmit_skb() [net/core/dev.c]) into freshly
        allocated skbs that share the payload pages but are not clones -- so a bulk sender's
        segments coalesce on a shared device too (measured: veth-periodic-1448-1ms in
        tests/fixtures/pcaps, whose closed window stays shut for ~14 reads of 1448 B, one
        17-fragment skb; docs/bring-your-own-capture.md). `tx_segs` > 1 marks such a segment.
        `tso` (on by default, as veth and loopback come up): the sending device takes a
        multi-segment skb whole, so the receiver's skb is that clone (rpc-loopback's 64 KB
        loopback); `tso=off` (`ethtool -K lo tso off gso off`, the plain captures): software
        GSO, so only one-segment skbs arrive as clones.
        """
        skb = Skb(seq, length, skb_truesize(self.head) + length, head=self.head, linear=0,
                  nfrags=frags or sender_frags(seq, length), fin=fin,
                  tailroom=max(0, self.head - MAX_TCP_HEADER))
        if self.shared and (self.tso or tx_segs <= 1):
            skb.cloned_until = seq + length + (1 if fin else 0)
        return skb

    def tun_skb(self, seq: int, length: int, fin: bool) -> Skb:
        """tun/tap (packetdrill's device): headers and payload copied into a linear kmalloc head.

        tun_get_user() -> alloc_skb_with_frags(): up to SKB_MAX_HEAD(pad) bytes go in the linear
        head (kmalloc bucket), the rest in page fragments of up to order 3. The linear skb keeps
        its kmalloc slack as tailroom, so a small follow-up segment may coalesce for free.
        """
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

    def page_frag_skb(self, seq: int, length: int, fin: bool, frame: int,
                      gso_size: int) -> Skb:
        """A NIC that DMAs each frame into a `buf`-byte page fragment and build_skb()s around it.

        truesize = buf + sizeof(sk_buff): 2304 for 2 KiB half-page buffers, 4352 for a full page.
        The payload sits in the (page-fragment) head: coalescing steals the head as a fragment.
        A segment longer than one buffer holds takes one more buffer (a fragment) per
        buffer-full (multi-buffer frames; GRO merges a train's frames the same way,
        skb_gro_receive() [net/core/gro.c]). With GRO off each further frame is its own skb:
        the queue entry is charged one more sk_buff per frame beyond the first.
        """
        buf = self.buf
        per_frame = buf - SKB_SHINFO - NET_SKB_PAD
        head = buf - SKB_SHINFO
        if frame <= per_frame:
            return Skb(seq, length, buf + SKB_STRUCT, head=head, linear=length, nfrags=0,
                       head_frag=True, tailroom=per_frame - frame, fin=fin)
        # jumbo/GRO: head buffer plus one buffer per extra frame-full of payload
        extra = -(-(frame - per_frame) // per_frame)
        truesize = (1 + extra) * buf + SKB_STRUCT
        if not self.gro:
            truesize += self._extra_frames(length, gso_size) * SKB_STRUCT
        return Skb(seq, length, truesize, head=head,
                   linear=min(length, per_frame), nfrags=extra, head_frag=True, fin=fin)

    def linear_skb(self, seq: int, length: int, fin: bool, frame: int, gso_size: int) -> Skb:
        """A NIC that posts netdev_alloc_skb(`buf`) per frame and hands it up as it is (no
        copybreak: ntb_netdev before its 2026 fix). The data area and truesize follow
        `netdev_alloc_skb()`; the frame's unused space is tailroom. A GSO train of N frames
        arrives as N such buffers: GRO chains linear heads on the frag_list
        (skb_gro_receive()), summing their truesize, which is also what N separate skbs cost.
        """
        end, one, head_frag = netdev_alloc_skb(self.buf)
        frames = 1 + self._extra_frames(length, gso_size)
        tailroom = max(0, end - NET_SKB_PAD - frame) if frames == 1 else 0
        return Skb(seq, length, frames * one, head=end, linear=length, nfrags=frames - 1,
                   head_frag=head_frag, tailroom=tailroom, fin=fin)

    def copied_skb(self, seq: int, length: int, fin: bool, frame: int) -> Skb:
        """rx_copybreak: a frame shorter than the copybreak is copied into a new
        netdev_alloc_skb(frame) (right-sized) and the receive buffer is reused."""
        end, truesize, head_frag = netdev_alloc_skb(frame)
        return Skb(seq, length, truesize, head=end, linear=length, nfrags=0,
                   head_frag=head_frag, tailroom=end - NET_SKB_PAD - frame, fin=fin)

    def _extra_frames(self, length: int, gso_size: int) -> int:
        """Frames of a GSO train beyond the first (0 for a single-frame segment)."""
        return max(0, -(-length // gso_size) - 1) if gso_size else 0


def sender_frags(seq: int, length: int) -> int:
    """Page fragments holding the payload [seq, seq + length) in the sender's skb.

    tcp_sendmsg_locked() [tcp.c, 6.18] copies the byte stream into the writer's page frag
    (sk_page_frag(): the task's, refilled by skb_page_frag_refill() [net/core/sock.c] with
    SKB_FRAG_PAGE_SIZE compound pages) and appends each copy as a fragment, extending the last
    one when it continues it on the same page. The pages stay referenced while the receiver
    holds their data, so the stream is laid out page after page: a segment whose bytes cross
    a page boundary holds two fragments, and skb_try_coalesce() then fits one segment fewer
    into a receiver skb (16 instead of 17 of 1448 bytes; measured, 6.18 over veth: the 1 B/ms
    reader of the seed reproducer frees 17, then 16, then 16 segments' skbs at 24.6, 47.8
    and 71.0 s). The stream offset is seq - 1 (the model's ISS is 0). This is the layout of
    a segment that does not say its own (`Segment.frags` 0: not from the model's sender);
    the model's sender keeps the writer's page frag itself, with the restart this layout
    leaves out (a page nobody references any more reused from its start):
    tcpsim/core/pagefrag.py."""
    if length <= 0:
        return 0
    off = max(0, seq - 1)
    return (off + length - 1) // SKB_FRAG_PAGE_SIZE - off // SKB_FRAG_PAGE_SIZE + 1


def LocalSender(name: str = "veth", head: int = 256, shared: bool = False) -> Device:
    """The sender strategy (veth / loopback): see `Device.sender_skb`."""
    return Device(name, "sender", head=head, shared=shared)


def PageNic(name: str = "nic-2k", buf: int = 2048) -> Device:
    """The page-fragment strategy with `buf`-byte buffers: see `Device.page_frag_skb`."""
    return Device(name, "page-frag" if buf != PAGE_SIZE else "page", buf=buf)


def Tun() -> Device:
    """The tun strategy: see `Device.tun_skb`."""
    return Device("tun", "tun")


DEVICES: dict[str, Device] = {
    "veth": LocalSender("veth"),
    "veth-direct": LocalSender("veth-direct", shared=True),
    "loopback": LocalSender("loopback", shared=True),
    "tun": Tun(),
    "nic-2k": PageNic("nic-2k", 2048),
    "nic-4k": PageNic("nic-4k", 4096),
}


def _unknown(name: str) -> ValueError:
    return ValueError(f"unknown device {name!r}; choose one of: {', '.join(DEVICES)}")


def build(strategy: str, fields: dict[str, object], link_mtu: int = 0,
          where: str = "device") -> Device:
    """A Device from a strategy (or preset name) and field values, validated.

    `fields` keys: buf, mtu, rx_copybreak (or copybreak), gro, head, shared, tso, reuse --
    byte counts, and bools for gro/shared/tso/reuse. `link_mtu`: the MTU of the link the device sits on
    (0: unknown), the default for `mtu`. A preset with no fields is the preset; anything else is named by
    its spec string. Errors are one-line ValueErrors naming `where.field`.
    """
    if strategy in DEVICES:
        base = DEVICES[strategy]
    elif strategy in STRATEGIES:
        base = Device(strategy, strategy, buf=PAGE_SIZE if strategy == "page" else 0)
    else:
        raise ValueError(f"{where}.strategy: unknown strategy {strategy!r}; choose one of: "
                         f"{', '.join(STRATEGIES)} (or a preset: {', '.join(DEVICES)})")
    if not fields and strategy in DEVICES:
        return base
    values: dict[str, object] = {}
    for key, v in fields.items():
        attr = "rx_copybreak" if key == "copybreak" else key
        if attr not in _ATTRS:
            raise ValueError(f"{where}.{key}: unknown field; allowed: preset, strategy, "
                             + ", ".join(_ATTRS))
        want_bool = attr in _FLAGS
        if want_bool != isinstance(v, bool) or not isinstance(v, int) or v < 0:
            kind = "true or false" if want_bool else "a byte count >= 0"
            raise ValueError(f"{where}.{key}: expected {kind}, got {v!r}")
        values[attr] = v
    dev = replace(base, **values)               # type: ignore[arg-type]
    if dev.mtu and link_mtu and dev.mtu != link_mtu:
        raise ValueError(f"{where}.mtu: {dev.mtu} differs from the link's mtu {link_mtu}; "
                         "set link.mtu (or leave the device's mtu out)")
    if dev.strategy in _NIC and not dev.mtu:
        dev = replace(dev, mtu=link_mtu)
    if dev.strategy == "kmalloc" and not dev.buf:
        if not dev.mtu:
            raise ValueError(f"{where}.buf: required for the kmalloc strategy when no mtu "
                             "is given")
        dev = replace(dev, buf=dev.mtu + ETH_HLEN)
    check(dev, where)
    return replace(dev, name=dev.spec)


def check(dev: Device, where: str = "device") -> None:
    """The description's own consistency; one-line ValueErrors naming `where.field`."""
    if dev.strategy not in _NIC:
        for attr in ("buf", "rx_copybreak", "mtu"):
            if getattr(dev, attr):
                raise ValueError(f"{where}.{attr}: the {dev.strategy} strategy has no receive "
                                 "buffers; use strategy page-frag, page or kmalloc")
        if dev.strategy == "tun" and (dev.shared or dev.head != 256 or not dev.tso
                                      or dev.reuse):
            raise ValueError(f"{where}: head, shared, tso and reuse belong to the sender "
                             "strategy")
        return
    if dev.shared or dev.head != 256 or not dev.tso or dev.reuse:
        raise ValueError(f"{where}: head, shared, tso and reuse belong to the sender strategy")
    if dev.strategy == "page" and dev.buf != PAGE_SIZE:
        raise ValueError(f"{where}.buf: the page strategy uses one {PAGE_SIZE}-byte page per "
                         f"frame; use page-frag for {dev.buf}-byte buffers")
    frame = dev.mtu + ETH_HLEN if dev.mtu else 0
    if dev.strategy == "kmalloc" and frame and dev.buf < frame:
        raise ValueError(f"{where}.buf: {dev.buf} bytes is smaller than a frame at mtu "
                         f"{dev.mtu} ({frame} with the Ethernet header); raise buf or "
                         "lower the mtu")
    least = SKB_SHINFO + NET_SKB_PAD + ETH_HLEN + IP_HLEN + dev.tcp_hlen + 1
    if dev.strategy == "page-frag" and not least <= dev.buf <= PAGE_SIZE:
        raise ValueError(f"{where}.buf: a page fragment holds {least}..{PAGE_SIZE} bytes "
                         f"(a frame beside the skb_shared_info and NET_SKB_PAD), got {dev.buf}")
    if dev.rx_copybreak > dev.buf:
        raise ValueError(f"{where}.rx_copybreak: {dev.rx_copybreak} is larger than the "
                         f"{dev.buf}-byte receive buffer; use at most the buffer size")


def parse_spec(spec: str) -> Device:
    """`strategy[:key=value,...]` (or `preset:...`) -> Device; one-line ValueError if not."""
    base, _, rest = spec.partition(":")
    if base not in DEVICES and base not in STRATEGIES:
        raise _unknown(spec)
    fields: dict[str, object] = {}
    for item in filter(None, rest.split(",")):
        key, eq, val = item.partition("=")
        if key in _FLAGS and eq and val in ("on", "off"):
            fields[key] = val == "on"
        elif key not in _FLAGS and eq and val.isdigit():
            fields[key] = int(val)
        else:
            raise ValueError(f"device {spec!r}: expected key=number (or gro/shared/tso/reuse=on|off), "
                             f"got {item!r}")
    return build(base, fields, where=f"device {spec!r}")


def device(name: str) -> Device:
    """Look up an ingress device by preset name (see DEVICES) or spec string (`Device.spec`)."""
    dev = DEVICES.get(name)
    if dev is not None:
        return dev
    if ":" not in name and name not in STRATEGIES:
        raise _unknown(name)
    return parse_spec(name)
