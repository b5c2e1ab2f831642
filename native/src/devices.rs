//! Ingress devices: how the skb of an arriving segment is laid out and what it costs.
//!
//! Mirrors tcpsim/core/devices.py. The same 1448-byte segment costs different memory
//! depending on the device that built its skb, and the layout decides how cheaply it
//! coalesces (skb_try_coalesce() [net/core/skbuff.c]):
//!
//! * a payload in page fragments coalesces by moving fragment descriptors and charges
//!   `truesize - SKB_TRUESIZE(head)` (the fragment memory);
//! * a payload in a page-fragment head is stolen as one more fragment and charges
//!   `truesize - sizeof(sk_buff)`;
//! * a payload that fits the tail skb's linear tailroom is copied and charges nothing.
//!
//! Header sizes: a segment on the wire carries `HDR` bytes of Ethernet + IPv4 + TCP(+timestamps).

use crate::arith::ceil_div;
use crate::constants::{
    data_align, kmalloc_size, skb_truesize, MAX_TCP_HEADER, PAGE_SIZE, SKB_FRAG_PAGE_SIZE,
    SKB_SHINFO, SKB_STRUCT,
};
use crate::skb::{Layout, Skb};

pub const ETH_HLEN: i64 = 14;
pub const IP_HLEN: i64 = 20;
pub const NET_SKB_PAD: i64 = 64;

/// The constants above by their Python names, for the differential test.
pub const ALL: &[(&str, i64)] = &[
    ("ETH_HLEN", ETH_HLEN),
    ("IP_HLEN", IP_HLEN),
    ("NET_SKB_PAD", NET_SKB_PAD),
];

/// SKB_SMALL_HEAD_CACHE_SIZE's data area (the small-head kmem cache, 256 bytes here).
pub const SKB_SMALL_HEAD: i64 = 256;

/// The buffer strategies, as scenarios spell them.
pub const STRATEGIES: &[&str] = &["sender", "tun", "page-frag", "page", "kmalloc"];
const NIC: &[&str] = &["page-frag", "page", "kmalloc"];
const ATTRS: &[&str] = &[
    "buf",
    "mtu",
    "rx_copybreak",
    "gro",
    "head",
    "shared",
    "tso",
    "reuse",
];
const FLAGS: &[&str] = &["gro", "shared", "tso", "reuse"];

/// (data area, truesize, head_frag) of netdev_alloc_skb(dev, length).
///
/// Models `__netdev_alloc_skb()` [net/core/skbuff.c, 6.18]: the request grows by NET_SKB_PAD;
/// a request that fits the small-head cache, or exceeds SKB_WITH_OVERHEAD(PAGE_SIZE), goes
/// to `__alloc_skb()` (kmalloc: the data area is the size class -- kmalloc_size_roundup()
/// [mm/slab_common.c, 6.18] -- less the shared info); anything between is carved from the
/// per-CPU page-fragment cache as SKB_HEAD_ALIGN(len) bytes and build_skb()'d (head_frag).
/// truesize = SKB_TRUESIZE(data area) in every branch (`__finalize_skb_around()`).
pub fn netdev_alloc_skb(length: i64) -> (i64, i64, bool) {
    let want = length + NET_SKB_PAD;
    if want <= SKB_SMALL_HEAD {
        return (SKB_SMALL_HEAD, skb_truesize(SKB_SMALL_HEAD), false);
    }
    if want > PAGE_SIZE - SKB_SHINFO {
        let end = kmalloc_size(data_align(want) + SKB_SHINFO) - SKB_SHINFO;
        return (end, skb_truesize(end), false);
    }
    let end = data_align(want);
    (end, skb_truesize(end), true)
}

/// An ingress device described by its buffer strategy (Python: `Device`).
///
/// `buf`: bytes per receive buffer (page-frag: the fragment size; kmalloc: the length asked
/// of netdev_alloc_skb). `head`, `shared`, `tso`: the sender strategy's kmalloc'd header area,
/// whether the skb is a clone of the sender's, and whether the sending device takes
/// multi-segment skbs whole. `reuse`: the receiver's frees of the sender's pages are
/// immediate (reader and writer on one CPU), so the writer reuses a page the reader emptied
/// from its start; off, they wait in skb_attempt_defer_free() for the writer's next
/// transmission (pagefrag.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    pub name: String,
    pub strategy: String,
    pub buf: i64,
    pub mtu: i64,
    pub rx_copybreak: i64,
    pub gro: bool,
    pub head: i64,
    pub shared: bool,
    pub tso: bool,
    pub reuse: bool,
    /// TCP header with the timestamp option.
    pub tcp_hlen: i64,
}

impl Device {
    /// A device of `strategy` with every other field at its default.
    pub fn of(name: &str, strategy: &str) -> Self {
        Device {
            name: name.to_string(),
            strategy: strategy.to_string(),
            buf: 0,
            mtu: 0,
            rx_copybreak: 0,
            gro: true,
            head: 256,
            shared: false,
            tso: true,
            reuse: false,
            tcp_hlen: 32,
        }
    }

    /// The profile's name, as `tcpsim run --device` spells it.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn attr(&self, attr: &str) -> String {
        let flag = |b: bool| if b { "on" } else { "off" }.to_string();
        match attr {
            "buf" => self.buf.to_string(),
            "mtu" => self.mtu.to_string(),
            "rx_copybreak" => self.rx_copybreak.to_string(),
            "gro" => flag(self.gro),
            "head" => self.head.to_string(),
            "shared" => flag(self.shared),
            "reuse" => flag(self.reuse),
            _ => flag(self.tso),
        }
    }

    /// The canonical spec string: `strategy[:key=value,...]` with the non-default keys.
    pub fn spec(&self) -> String {
        let d = Device::of("", &self.strategy);
        let parts: Vec<String> = ATTRS
            .iter()
            .filter(|a| self.attr(a) != d.attr(a))
            .map(|a| format!("{a}={}", self.attr(a)))
            .collect();
        if parts.is_empty() {
            self.strategy.clone()
        } else {
            format!("{}:{}", self.strategy, parts.join(","))
        }
    }

    /// The sending end hands the receiver a multi-segment skb whole: one GSO skb per
    /// transmission (gso_size = MSS), admitted, coalesced, acknowledged and read as one skb.
    ///
    /// A local pair with TSO on (`shared` and `tso`: `loopback`, `veth-direct`): the
    /// device advertises TSO/GSO, so validate_xmit_skb() [net/core/dev.c, 6.18] leaves the
    /// GSO skb alone and loopback_xmit() [drivers/net/loopback.c] / veth_xmit()
    /// [drivers/net/veth.c] pass it to the peer's netif_rx() as it is. Measured over lo,
    /// 6.18, tcp:tcp_probe (docs/kernel-measurements.md, E7): at MTU 1500, 60-64 KB skbs;
    /// at MTU 65536, the 80 kB RPCs of `rpc-loopback` arrive as 65483 + 14517 B. With
    /// `tso` off (the capture tool's `ethtool -K lo tso off gso off`) software GSO cuts it
    /// into MSS-sized wire segments. Not modelled: the `veth` preset (a forwarding hop,
    /// the capture tool's veth with offloads off) stays MSS-sized; a rate-limited link
    /// (tbf) carries MSS-sized segments (tbf_segment() would cut a GSO skb above its
    /// max_size). devices.py `Device.gso_whole`.
    pub fn gso_whole(&self) -> bool {
        self.strategy == "sender" && self.shared && self.tso
    }

    /// The skb this device builds for an arriving segment of `length` payload bytes
    /// (`gso_size`: the per-frame payload of a GSO train, 0 = one frame; `tx_segs`: the
    /// segment count of the sender's skb it was sent from, 0 = unknown; `frags`: the page
    /// fragments of its payload in the sender's memory, 0 = unknown).
    pub fn make_skb(
        &self,
        seq: i64,
        length: i64,
        fin: bool,
        gso_size: i64,
        tx_segs: i64,
        frags: i64,
    ) -> Skb {
        match self.strategy.as_str() {
            "sender" => return self.sender_skb(seq, length, fin, tx_segs, frags),
            "tun" => return self.tun_skb(seq, length, fin),
            _ => {}
        }
        let frame = ETH_HLEN + IP_HLEN + self.tcp_hlen + length;
        if frame < self.rx_copybreak {
            return self.copied_skb(seq, length, fin, frame);
        }
        if self.strategy == "kmalloc" {
            return self.linear_skb(seq, length, fin, frame, gso_size);
        }
        self.page_frag_skb(seq, length, fin, frame, gso_size)
    }

    /// veth / loopback: the receiver gets the sender's own skb (TSO/GSO/GRO off).
    ///
    /// tcp_sendmsg() builds a small kmalloc'd head for the headers (`head` bytes of data area,
    /// SKB_TRUESIZE(head) with the struct overhead) and copies the payload into page fragments,
    /// so truesize = len + SKB_TRUESIZE(head) and a coalesce charges exactly `len`.
    /// Measured on 6.18 over veth: truesize = len + 832 and 17 segments per skb
    /// (docs/kernel-measurements.md, E1, E4) -- 16 when one of them crosses a page of the
    /// writer's page frag and so holds two fragments: `frags`, as the model's sender laid its
    /// bytes out (pagefrag.rs), or `sender_frags` for a segment from elsewhere. `shared`: the
    /// receiver's skb is a clone of the
    /// sender's retransmit-queue skb; skb_try_coalesce() refuses a cloned skb. Only a
    /// one-segment skb reaches the receiver as that clone (tcp_transmit_skb() [tcp_output.c,
    /// 6.18] clones what it sends); a multi-segment (GSO) skb is cut by skb_segment()
    /// [net/core/skbuff.c, 6.18] into fresh skbs when the device does not take it whole
    /// (`tso` off: software GSO), so there `tx_segs` > 1 is never a clone.
    fn sender_skb(&self, seq: i64, length: i64, fin: bool, tx_segs: i64, frags: i64) -> Skb {
        let layout = Layout {
            head: self.head,
            nfrags: if frags > 0 {
                frags
            } else {
                sender_frags(seq, length)
            },
            tailroom: (self.head - MAX_TCP_HEADER).max(0),
            ..Layout::default()
        };
        let mut skb = Skb::new(seq, length, skb_truesize(self.head) + length, layout, fin);
        if self.shared && (self.tso || tx_segs <= 1) {
            skb.cloned_until = seq + length + i64::from(fin);
        }
        skb
    }

    /// tun/tap (packetdrill's device): headers and payload copied into a linear kmalloc head.
    ///
    /// tun_get_user() -> alloc_skb_with_frags(): up to SKB_MAX_HEAD(pad) bytes go in the linear
    /// head (kmalloc bucket), the rest in page fragments of up to order 3. The linear skb keeps
    /// its kmalloc slack as tailroom, so a small follow-up segment may coalesce for free.
    fn tun_skb(&self, seq: i64, length: i64, fin: bool) -> Skb {
        let wire = IP_HLEN + self.tcp_hlen + length;
        let good_linear = PAGE_SIZE - NET_SKB_PAD - SKB_SHINFO;
        let linear = wire.min(good_linear);
        let head_alloc = kmalloc_size(data_align(NET_SKB_PAD + linear) + SKB_SHINFO);
        let end_offset = head_alloc - SKB_SHINFO;
        let mut truesize = skb_truesize(end_offset);
        let mut rest = wire - linear;
        let mut nfrags = 0;
        while rest > 0 {
            let npages = ceil_div(rest, PAGE_SIZE);
            let mut order = 3;
            while order > 0 && npages < (1 << order) {
                order -= 1;
            }
            truesize += PAGE_SIZE << order;
            rest -= rest.min(PAGE_SIZE << order);
            nfrags += 1;
        }
        let layout = Layout {
            head: end_offset,
            linear: length.min(linear - IP_HLEN - self.tcp_hlen).max(0),
            nfrags,
            head_frag: false,
            tailroom: end_offset - NET_SKB_PAD - linear,
        };
        Skb::new(seq, length, truesize, layout, fin)
    }

    /// A NIC that DMAs each frame into a `buf`-byte page fragment and build_skb()s around it.
    ///
    /// truesize = buf + sizeof(sk_buff): 2304 for 2 KiB half-page buffers, 4352 for a full page.
    /// The payload sits in the (page-fragment) head: coalescing steals the head as a fragment.
    /// A longer segment takes one more buffer (a fragment) per buffer-full (multi-buffer
    /// frames; GRO merges a train's frames the same way, skb_gro_receive() [net/core/gro.c]).
    /// With GRO off each further frame is its own skb: one more sk_buff per extra frame.
    fn page_frag_skb(&self, seq: i64, length: i64, fin: bool, frame: i64, gso: i64) -> Skb {
        let buf = self.buf;
        let per_frame = buf - SKB_SHINFO - NET_SKB_PAD;
        let head = buf - SKB_SHINFO;
        if frame <= per_frame {
            let layout = Layout {
                head,
                linear: length,
                nfrags: 0,
                head_frag: true,
                tailroom: per_frame - frame,
            };
            return Skb::new(seq, length, buf + SKB_STRUCT, layout, fin);
        }
        // jumbo/GRO: head buffer plus one buffer per extra frame-full of payload
        let extra = ceil_div(frame - per_frame, per_frame);
        let mut truesize = (1 + extra) * buf + SKB_STRUCT;
        if !self.gro {
            truesize += extra_frames(length, gso) * SKB_STRUCT;
        }
        let layout = Layout {
            head,
            linear: length.min(per_frame),
            nfrags: extra,
            head_frag: true,
            tailroom: 0,
        };
        Skb::new(seq, length, truesize, layout, fin)
    }

    /// A NIC that posts netdev_alloc_skb(`buf`) per frame and hands it up as it is (no
    /// copybreak: ntb_netdev before its 2026 fix). A GSO train of N frames costs N buffers
    /// (GRO chains linear heads on the frag_list, summing their truesize).
    fn linear_skb(&self, seq: i64, length: i64, fin: bool, frame: i64, gso: i64) -> Skb {
        let (end, one, head_frag) = netdev_alloc_skb(self.buf);
        let frames = 1 + extra_frames(length, gso);
        let tailroom = if frames == 1 {
            (end - NET_SKB_PAD - frame).max(0)
        } else {
            0
        };
        let layout = Layout {
            head: end,
            linear: length,
            nfrags: frames - 1,
            head_frag,
            tailroom,
        };
        Skb::new(seq, length, frames * one, layout, fin)
    }

    /// rx_copybreak: a frame shorter than the copybreak is copied into a new
    /// netdev_alloc_skb(frame) (right-sized) and the receive buffer is reused.
    fn copied_skb(&self, seq: i64, length: i64, fin: bool, frame: i64) -> Skb {
        let (end, truesize, head_frag) = netdev_alloc_skb(frame);
        let layout = Layout {
            head: end,
            linear: length,
            nfrags: 0,
            head_frag,
            tailroom: end - NET_SKB_PAD - frame,
        };
        Skb::new(seq, length, truesize, layout, fin)
    }

    fn set(&mut self, attr: &str, v: i64) {
        match attr {
            "buf" => self.buf = v,
            "mtu" => self.mtu = v,
            "rx_copybreak" => self.rx_copybreak = v,
            "gro" => self.gro = v != 0,
            "head" => self.head = v,
            "shared" => self.shared = v != 0,
            "reuse" => self.reuse = v != 0,
            _ => self.tso = v != 0,
        }
    }
}

/// Frames of a GSO train beyond the first (0 for a single-frame segment).
fn extra_frames(length: i64, gso: i64) -> i64 {
    if gso > 0 {
        (ceil_div(length, gso) - 1).max(0)
    } else {
        0
    }
}

fn local(name: &str, shared: bool) -> Device {
    Device {
        shared,
        ..Device::of(name, "sender")
    }
}

fn nic(name: &str, buf: i64) -> Device {
    let strategy = if buf == PAGE_SIZE {
        "page"
    } else {
        "page-frag"
    };
    Device {
        buf,
        ..Device::of(name, strategy)
    }
}

/// Page fragments holding the payload [seq, seq + length) in the sender's skb.
///
/// tcp_sendmsg_locked() [tcp.c, 6.18] copies the byte stream into the writer's page frag
/// (sk_page_frag(): the task's, refilled by skb_page_frag_refill() [net/core/sock.c] with
/// SKB_FRAG_PAGE_SIZE compound pages) and appends each copy as a fragment, extending the last
/// one when it continues it on the same page. The pages stay referenced while the receiver
/// holds their data, so the stream is laid out page after page: a segment whose bytes cross a
/// page boundary holds two fragments, and skb_try_coalesce() then fits one segment fewer into
/// a receiver skb (16 instead of 17 of 1448 bytes; measured, 6.18 over veth: the 1 B/ms reader
/// of the seed reproducer frees 17, then 16, then 16 segments' skbs at 24.6, 47.8 and 71.0 s).
/// The stream offset is seq - 1 (the model's ISS is 0). This is the layout of a segment that
/// does not say its own (`Segment::frags` 0: not from the model's sender); the model's sender
/// keeps the writer's page frag itself, with the restart this layout leaves out (a page nobody
/// references any more reused from its start): pagefrag.rs.
pub fn sender_frags(seq: i64, length: i64) -> i64 {
    if length <= 0 {
        return 0;
    }
    let off = (seq - 1).max(0);
    (off + length - 1) / SKB_FRAG_PAGE_SIZE - off / SKB_FRAG_PAGE_SIZE + 1
}

/// Every preset, in the order of Python's `DEVICES`.
pub fn devices() -> Vec<Device> {
    vec![
        local("veth", false),
        local("veth-direct", true),
        local("loopback", true),
        Device::of("tun", "tun"),
        nic("nic-2k", 2048),
        nic("nic-4k", 4096),
    ]
}

fn unknown(name: &str) -> String {
    let names: Vec<String> = devices().iter().map(|d| d.name.clone()).collect();
    format!(
        "unknown device '{name}'; choose one of: {}",
        names.join(", ")
    )
}

/// Python `build()`: a device from a strategy (or preset) and field values, validated; named
/// by its spec string. `fields` are (attr, value) with gro/shared/tso/reuse as 0/1.
pub fn build(strategy: &str, fields: &[(String, i64)], where_: &str) -> Result<Device, String> {
    let presets = devices();
    let base = if let Some(p) = presets.iter().find(|d| d.name == strategy) {
        if fields.is_empty() {
            return Ok(p.clone());
        }
        p.clone()
    } else if STRATEGIES.contains(&strategy) {
        let mut d = Device::of(strategy, strategy);
        if strategy == "page" {
            d.buf = PAGE_SIZE;
        }
        d
    } else {
        return Err(unknown(strategy));
    };
    let mut dev = base;
    for (key, v) in fields {
        let attr = if key == "copybreak" {
            "rx_copybreak"
        } else {
            key.as_str()
        };
        if !ATTRS.contains(&attr) {
            return Err(format!(
                "{where_}.{key}: unknown field; allowed: preset, strategy, {}",
                ATTRS.join(", ")
            ));
        }
        dev.set(attr, *v);
    }
    if dev.strategy == "kmalloc" && dev.buf == 0 {
        if dev.mtu == 0 {
            return Err(format!(
                "{where_}.buf: required for the kmalloc strategy when no mtu is given"
            ));
        }
        dev.buf = dev.mtu + ETH_HLEN;
    }
    check(&dev, where_)?;
    dev.name = dev.spec();
    Ok(dev)
}

/// Python `check()`: the description's own consistency, one line naming `where_.field`.
pub fn check(dev: &Device, where_: &str) -> Result<(), String> {
    let s = dev.strategy.as_str();
    if !NIC.contains(&s) {
        for (attr, v) in [
            ("buf", dev.buf),
            ("rx_copybreak", dev.rx_copybreak),
            ("mtu", dev.mtu),
        ] {
            if v != 0 {
                return Err(format!(
                    "{where_}.{attr}: the {s} strategy has no receive buffers; use strategy page-frag, page or kmalloc"
                ));
            }
        }
        if s == "tun" && (dev.shared || dev.head != 256 || !dev.tso || dev.reuse) {
            return Err(format!(
                "{where_}: head, shared, tso and reuse belong to the sender strategy"
            ));
        }
        return Ok(());
    }
    if dev.shared || dev.head != 256 || !dev.tso || dev.reuse {
        return Err(format!(
            "{where_}: head, shared, tso and reuse belong to the sender strategy"
        ));
    }
    if s == "page" && dev.buf != PAGE_SIZE {
        return Err(format!(
            "{where_}.buf: the page strategy uses one {PAGE_SIZE}-byte page per frame; use page-frag for {}-byte buffers",
            dev.buf
        ));
    }
    let frame = if dev.mtu != 0 { dev.mtu + ETH_HLEN } else { 0 };
    if s == "kmalloc" && frame != 0 && dev.buf < frame {
        return Err(format!(
            "{where_}.buf: {} bytes is smaller than a frame at mtu {} ({frame} with the Ethernet header); raise buf or lower the mtu",
            dev.buf, dev.mtu
        ));
    }
    let least = SKB_SHINFO + NET_SKB_PAD + ETH_HLEN + IP_HLEN + dev.tcp_hlen + 1;
    if s == "page-frag" && !(least <= dev.buf && dev.buf <= PAGE_SIZE) {
        return Err(format!(
            "{where_}.buf: a page fragment holds {least}..{PAGE_SIZE} bytes (a frame beside the skb_shared_info and NET_SKB_PAD), got {}",
            dev.buf
        ));
    }
    if dev.rx_copybreak > dev.buf {
        return Err(format!(
            "{where_}.rx_copybreak: {} is larger than the {}-byte receive buffer; use at most the buffer size",
            dev.rx_copybreak, dev.buf
        ));
    }
    Ok(())
}

/// Python `parse_spec()`: `strategy[:key=value,...]` (or `preset:...`) -> Device.
pub fn parse_spec(spec: &str) -> Result<Device, String> {
    let (base, rest) = spec.split_once(':').unwrap_or((spec, ""));
    if !STRATEGIES.contains(&base) && !devices().iter().any(|d| d.name == base) {
        return Err(unknown(spec));
    }
    let mut fields = Vec::new();
    for item in rest.split(',').filter(|i| !i.is_empty()) {
        let (key, val) = item.split_once('=').unwrap_or((item, ""));
        let flag = FLAGS.contains(&key);
        let number = !val.is_empty() && val.bytes().all(|b| b.is_ascii_digit());
        let v = match (flag, val) {
            (true, "on") => 1,
            (true, "off") => 0,
            (false, _) if number && item.contains('=') => val
                .parse::<i64>()
                .map_err(|_| format!("device '{spec}': {key} is out of range"))?,
            _ => {
                return Err(format!(
                    "device '{spec}': expected key=number (or gro/shared/tso/reuse=on|off), got '{item}'"
                ))
            }
        };
        fields.push((key.to_string(), v));
    }
    build(base, &fields, &format!("device '{spec}'"))
}

/// Look up an ingress device by preset name (see `devices()`) or spec string
/// (`Device::spec`); the error names the presets.
pub fn device(name: &str) -> Result<Device, String> {
    if let Some(d) = devices().into_iter().find(|d| d.name == name) {
        return Ok(d);
    }
    if !name.contains(':') && !STRATEGIES.contains(&name) {
        return Err(unknown(name));
    }
    parse_spec(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sender_frags_follow_the_writers_32k_pages() {
        for (seq, len, frags) in [
            (1, 1448, 1),
            (31857, 1448, 2),
            (32769 - 1448, 1448, 1),
            (32769, 1448, 1),
            (32768, 2, 2),
            (1, 65536, 2),
            (2, 65536, 3),
            (1, 0, 0),
        ] {
            assert_eq!(sender_frags(seq, len), frags, "seq {seq} len {len}");
            assert_eq!(
                device("veth")
                    .unwrap()
                    .make_skb(seq, len, false, 0, 0, 0)
                    .nfrags,
                frags
            );
        }
    }

    #[test]
    fn veth_charges_len_plus_832() {
        let skb = device("veth").unwrap().make_skb(1, 1448, false, 0, 0, 0);
        assert_eq!(
            (skb.truesize, skb.nfrags, skb.cloned_until),
            (1448 + 832, 1, 0)
        );
        let shared = device("loopback").unwrap().make_skb(1, 1448, true, 0, 0, 0);
        assert_eq!(shared.cloned_until, 1450);
    }

    #[test]
    fn without_tso_only_a_one_segment_skb_is_a_clone() {
        let lo = device("loopback").unwrap();
        assert_eq!(lo.make_skb(1, 1448, false, 0, 22, 0).cloned_until, 1449);
        let soft = device("loopback:tso=off").unwrap();
        assert_eq!(soft.spec(), "sender:shared=on,tso=off");
        assert_eq!(soft.make_skb(1, 1448, false, 0, 22, 0).cloned_until, 0);
        assert_eq!(soft.make_skb(1, 1448, false, 0, 1, 0).cloned_until, 1449);
        assert_eq!(soft.make_skb(1, 1448, false, 0, 0, 0).cloned_until, 1449);
        assert!(device("tun:tso=off").is_err());
    }

    #[test]
    fn nic_truesize_is_buffer_plus_struct() {
        assert_eq!(
            device("nic-2k")
                .unwrap()
                .make_skb(0, 1448, false, 0, 0, 0)
                .truesize,
            2304
        );
        assert_eq!(
            device("nic-4k")
                .unwrap()
                .make_skb(0, 1448, false, 0, 0, 0)
                .truesize,
            4352
        );
        let jumbo = device("nic-2k").unwrap().make_skb(0, 9000, false, 0, 0, 0);
        assert!(jumbo.nfrags > 0 && jumbo.head_frag);
    }

    #[test]
    fn tun_keeps_kmalloc_slack_as_tailroom() {
        let skb = device("tun").unwrap().make_skb(0, 100, false, 0, 0, 0);
        // 52 header bytes + 100: data_align(64 + 152) + 320 = 576 -> the 1024-byte bucket
        assert_eq!(
            (skb.head, skb.linear, skb.tailroom, skb.nfrags),
            (704, 100, 488, 0)
        );
        assert_eq!(skb.truesize, 704 + 576);
    }

    #[test]
    fn presets_spell_their_strategy() {
        let specs: Vec<String> = devices().iter().map(Device::spec).collect();
        assert_eq!(
            specs,
            [
                "sender",
                "sender:shared=on",
                "sender:shared=on",
                "tun",
                "page-frag:buf=2048",
                "page:buf=4096"
            ]
        );
        assert_eq!(
            device("page:buf=4096")
                .unwrap()
                .make_skb(0, 1448, false, 0, 0, 0)
                .truesize,
            4352
        );
    }

    #[test]
    fn kmalloc_buffer_costs_its_size_class_and_copybreak_rescues_small_frames() {
        // ntb_netdev at a 64 KiB MTU: netdev_alloc_skb(65550) is a 128 KiB kmalloc object
        let ntb = device("kmalloc:mtu=65536").unwrap();
        assert_eq!(ntb.name, "kmalloc:buf=65550,mtu=65536");
        assert_eq!(
            ntb.make_skb(0, 0, false, 0, 0, 0).truesize,
            131072 - 320 + 576
        );
        let cb = device("kmalloc:mtu=65536,rx_copybreak=256").unwrap();
        let ack = cb.make_skb(0, 0, false, 0, 0, 0);
        assert_eq!((ack.truesize, ack.head, ack.tailroom), (832, 256, 126));
        assert_eq!(cb.make_skb(0, 1448, false, 0, 0, 0).truesize, 131328);
        // between the small-head cache and a page: a page fragment, head_frag
        assert_eq!(netdev_alloc_skb(1000), (1088, 1088 + 576, true));
    }

    #[test]
    fn bad_descriptions_say_what_to_change() {
        let small = device("kmalloc:buf=1500,mtu=9000").unwrap_err();
        assert!(small.contains(".buf: 1500 bytes is smaller than a frame at mtu 9000"));
        let cb = device("page-frag:buf=2048,rx_copybreak=4000").unwrap_err();
        assert!(cb.contains(".rx_copybreak: 4000 is larger than the 2048-byte"));
        assert!(device("sender:rx_copybreak=3").is_err());
        assert!(device("kmalloc:buf=x")
            .unwrap_err()
            .contains("expected key=number"));
    }

    #[test]
    fn unknown_device_names_the_choices() {
        let err = device("eth0").unwrap_err();
        assert!(err.contains("'eth0'") && err.contains("veth, veth-direct"));
    }
}
