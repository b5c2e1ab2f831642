//! Linux 6.10: no 64 KiB cap on the initial rcv_wnd; the sender grows a short head skb
//! (models/linux_6_10.py).
//!
//! Jason Xing, "tcp: remove 64 KByte limit for initial tp->rcv_wnd value" (May 2024): with a
//! large tcp_rmem[1] the initial rcv_wnd -- and so rcv_ssthresh -- starts at the full initial
//! space rounded to the MSS, although the SYN still says at most 65535.
//!
//! Eric Dumazet, 8ee602c63520 "tcp: try to send bigger TSO packets" (April 2024, 6.10):
//! tcp_write_xmit() first moves bytes from the second write-queue skb into a head skb that is
//! shorter than what cwnd and tcp_tso_segs() would let it send (tcp_grow_skb), so the rest of
//! an skb split at the window edge goes out whole with the next skb's bytes.
//!
//! Adam Li, "net: make SK_MEMORY_PCPU_RESERV tunable" (posted Feb 2024, 6.9): the per-CPU
//! reserve of the TCP pool becomes net.core.mem_pcpu_rsv (default and minimum 256 pages).

use std::collections::VecDeque;

use crate::kernel::Kernel;
use crate::models::linux_6_8::Linux68;
use crate::socket::TcpSocket;

/// Linux 6.10: initial rcv_wnd no longer capped at 65535.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux610;

impl Kernel for Linux610 {
    fn base(&self) -> &dyn Kernel {
        &Linux68
    }

    fn class_name(&self) -> &'static str {
        "Linux610"
    }

    fn release(&self) -> &'static str {
        "6.10"
    }

    fn sysctls(&self) -> Vec<&'static str> {
        let mut s = Linux68.sysctls();
        s.push("mem_pcpu_rsv");
        s
    }

    /// tcp_select_initial_window() [6.10+]: rcv_wnd = space.
    fn initial_rcv_wnd(&self, _sk: &TcpSocket, space: i64) -> i64 {
        space
    }

    /// tcp_grow_skb() [tcp_output.c, 6.10+]: the head skb (q[0]) takes up to `missing`
    /// bytes -- what it lacks of min(cwnd quota, tcp_tso_segs()) MSS -- from the front of
    /// the next one (q[1]); an emptied next skb is unlinked. Only called with len(q) > 1.
    fn grow_skb(&self, _sk: &TcpSocket, q: &mut VecDeque<i64>, missing: i64) {
        let take = missing.min(q[1]);
        q[0] += take;
        if take == q[1] {
            q.remove(1);
        } else {
            q[1] -= take;
        }
    }
}
