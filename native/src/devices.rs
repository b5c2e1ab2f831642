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
use crate::constants::{data_align, kmalloc_size, skb_truesize, PAGE_SIZE, SKB_SHINFO, SKB_STRUCT};
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

/// veth / loopback: the receiver gets the sender's own skb (TSO/GSO/GRO off).
///
/// tcp_sendmsg() builds a small kmalloc'd head for the headers (`head` bytes of data area,
/// SKB_TRUESIZE(head) with the struct overhead) and copies the payload into page fragments,
/// so truesize = len + SKB_TRUESIZE(head) and a coalesce charges exactly `len`.
/// Measured on 6.18 over veth: truesize = len + 832 and 17 segments per skb
/// (docs/kernel-measurements.md, E1, E4).
///
/// `shared`: the receiver's skb is a clone of the sender's retransmit-queue skb (a veth pair
/// or loopback with both ends on one host and no forwarding hop). skb_try_coalesce() refuses
/// a cloned skb, so nothing coalesces into it until the sender frees its copy on ACK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSender {
    pub name: String,
    pub head: i64,
    pub shared: bool,
}

impl LocalSender {
    pub fn make_skb(&self, seq: i64, length: i64, fin: bool) -> Skb {
        let nfrags = if length == 0 {
            0
        } else {
            1 + (length - 1) / (8 * PAGE_SIZE)
        };
        let layout = Layout {
            head: self.head,
            nfrags,
            ..Layout::default()
        };
        let mut skb = Skb::new(seq, length, skb_truesize(self.head) + length, layout, fin);
        if self.shared {
            skb.cloned_until = seq + length + i64::from(fin);
        }
        skb
    }
}

/// tun/tap (packetdrill's device): headers and payload copied into a linear kmalloc head.
///
/// tun_get_user() -> alloc_skb_with_frags(): up to SKB_MAX_HEAD(pad) bytes go in the linear
/// head (kmalloc bucket), the rest in page fragments of up to order 3. The linear skb keeps
/// its kmalloc slack as tailroom, so a small follow-up segment may coalesce for free.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tun {
    pub name: String,
    /// TCP header with the timestamp option.
    pub tcp_hlen: i64,
}

impl Tun {
    pub fn make_skb(&self, seq: i64, length: i64, fin: bool) -> Skb {
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
}

/// A NIC that DMAs each frame into a `buf`-byte page fragment and build_skb()s around it.
///
/// truesize = buf + sizeof(sk_buff): 2304 for 2 KiB half-page buffers, 4352 for a full page.
/// The payload sits in the (page-fragment) head: coalescing steals the head as a fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageNic {
    pub name: String,
    pub buf: i64,
    pub tcp_hlen: i64,
}

impl PageNic {
    pub fn make_skb(&self, seq: i64, length: i64, fin: bool) -> Skb {
        let frame = ETH_HLEN + IP_HLEN + self.tcp_hlen + length;
        let per_frame = self.buf - SKB_SHINFO - NET_SKB_PAD;
        let head = self.buf - SKB_SHINFO;
        if frame <= per_frame {
            let layout = Layout {
                head,
                linear: length,
                nfrags: 0,
                head_frag: true,
                tailroom: per_frame - frame,
            };
            return Skb::new(seq, length, self.buf + SKB_STRUCT, layout, fin);
        }
        // jumbo/GRO: head buffer plus one buffer per extra frame-full of payload
        let extra = ceil_div(frame - per_frame, per_frame);
        let layout = Layout {
            head,
            linear: length.min(per_frame),
            nfrags: extra,
            head_frag: true,
            tailroom: 0,
        };
        Skb::new(
            seq,
            length,
            (1 + extra) * self.buf + SKB_STRUCT,
            layout,
            fin,
        )
    }
}

/// An ingress device profile (Python: `Device = LocalSender | Tun | PageNic`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Device {
    LocalSender(LocalSender),
    Tun(Tun),
    PageNic(PageNic),
}

impl Device {
    /// The profile's name, as `tcpsim run --device` spells it.
    pub fn name(&self) -> &str {
        match self {
            Device::LocalSender(d) => &d.name,
            Device::Tun(d) => &d.name,
            Device::PageNic(d) => &d.name,
        }
    }

    /// The skb this device builds for an arriving segment of `length` payload bytes.
    /// (`gso_size` is accepted by the Python method and unused by every device; it is not
    /// carried here.)
    pub fn make_skb(&self, seq: i64, length: i64, fin: bool) -> Skb {
        match self {
            Device::LocalSender(d) => d.make_skb(seq, length, fin),
            Device::Tun(d) => d.make_skb(seq, length, fin),
            Device::PageNic(d) => d.make_skb(seq, length, fin),
        }
    }
}

fn local(name: &str, shared: bool) -> Device {
    Device::LocalSender(LocalSender {
        name: name.to_string(),
        head: 256,
        shared,
    })
}

fn nic(name: &str, buf: i64) -> Device {
    Device::PageNic(PageNic {
        name: name.to_string(),
        buf,
        tcp_hlen: 32,
    })
}

/// Every ingress device profile, in the order of Python's `DEVICES`.
pub fn devices() -> Vec<Device> {
    vec![
        local("veth", false),
        local("veth-direct", true),
        local("loopback", true),
        Device::Tun(Tun {
            name: "tun".to_string(),
            tcp_hlen: 32,
        }),
        nic("nic-2k", 2048),
        nic("nic-4k", 4096),
    ]
}

/// Look up an ingress device profile by name (see `devices()`); the error names the choices.
pub fn device(name: &str) -> Result<Device, String> {
    let all = devices();
    if let Some(d) = all.iter().find(|d| d.name() == name) {
        return Ok(d.clone());
    }
    let names: Vec<&str> = all.iter().map(Device::name).collect();
    Err(format!(
        "unknown device '{name}'; choose one of: {}",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn veth_charges_len_plus_832() {
        let skb = device("veth").unwrap().make_skb(1, 1448, false);
        assert_eq!(
            (skb.truesize, skb.nfrags, skb.cloned_until),
            (1448 + 832, 1, 0)
        );
        let shared = device("loopback").unwrap().make_skb(1, 1448, true);
        assert_eq!(shared.cloned_until, 1450);
    }

    #[test]
    fn nic_truesize_is_buffer_plus_struct() {
        assert_eq!(
            device("nic-2k").unwrap().make_skb(0, 1448, false).truesize,
            2304
        );
        assert_eq!(
            device("nic-4k").unwrap().make_skb(0, 1448, false).truesize,
            4352
        );
        let jumbo = device("nic-2k").unwrap().make_skb(0, 9000, false);
        assert!(jumbo.nfrags > 0 && jumbo.head_frag);
    }

    #[test]
    fn tun_keeps_kmalloc_slack_as_tailroom() {
        let skb = device("tun").unwrap().make_skb(0, 100, false);
        // 52 header bytes + 100: data_align(64 + 152) + 320 = 576 -> the 1024-byte bucket
        assert_eq!(
            (skb.head, skb.linear, skb.tailroom, skb.nfrags),
            (704, 100, 488, 0)
        );
        assert_eq!(skb.truesize, 704 + 576);
    }

    #[test]
    fn unknown_device_names_the_choices() {
        let err = device("eth0").unwrap_err();
        assert!(err.contains("'eth0'") && err.contains("veth, veth-direct"));
    }
}
