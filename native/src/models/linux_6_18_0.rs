//! Linux 6.18.0 .. 6.18.16: 6.18 before its stable series gave up the stronger admission
//! (models/linux_6_18_0.py).
//!
//! 6.18 shipped with f017c1f768b6 "tcp: use skb->len instead of skb->truesize in
//! tcp_can_ingest()" (net-next 2025-09-30, merged for 6.18-rc1; 6.17.y took it as a stable
//! backport, reviewed 2025-10-13): the test made *before* queueing became
//! rmem + skb->len <= sk_rcvbuf (6.17.0 tested skb->truesize). Small SO_RCVBUF applications
//! and RPCs of 20-80 kB over loopback still saw spurious TCPRcvQDrop: a segment the advertised
//! window allowed was refused because it did not fit what remained of sk_rcvbuf. 026dfef287c0
//! "tcp: give up on stronger sk_rcvbuf checks (for now)" (Jakub Kicinski, net 2026-02-28,
//! mainline 7.0-rc) returned tcp_can_ingest() to rmem <= sk_rcvbuf; the 6.18.y stable series
//! took it in 6.18.17 (announcement read) and 6.19.y in 6.19.7 (stable review 2026-03-10 read).
//!
//! So this profile is linux-6.18 (6.18.44, the development machines' kernel) with the 6.18.0
//! admission test: `-p linux-6.18.0` vs `-p linux-6.18` is what the revert changes.

use crate::kernel::Kernel;
use crate::models::linux_6_18::Linux618;
use crate::skb::Skb;
use crate::socket::TcpSocket;

/// Linux 6.18.0-6.18.16: admission tests rmem + skb->len before queueing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux6180;

impl Kernel for Linux6180 {
    fn base(&self) -> &dyn Kernel {
        &Linux618
    }

    fn class_name(&self) -> &'static str {
        "Linux6180"
    }

    fn release(&self) -> &'static str {
        "6.18.0"
    }

    /// Models tcp_can_ingest() [6.18.0, f017c1f768b6]: rmem + skb->len <= sk_rcvbuf
    /// (rmem is the sum of truesizes; the incoming payload is counted, not its truesize).
    fn can_ingest(&self, sk: &TcpSocket, skb: &Skb) -> bool {
        sk.mem.sk_rmem_alloc + skb.len <= sk.mem.sk_rcvbuf
    }
}
