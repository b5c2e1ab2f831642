//! Cloudflare's tcp_collapse_max_bytes (out of tree, 2022): no collapse above a threshold
//! (models/patches/collapse_max_bytes.py).
//!
//! "tcp: Add a sysctl to skip tcp collapse processing when the receive buffer is full"
//! (mfreemon@cloudflare.com, 2022-03-01; reconstructed in receive-path.md §11.2). Collapsing
//! copies the whole queue into fresh linear skbs -- a latency spike proportional to the bytes
//! queued (about 2 ms for 6 MiB). With the sysctl set, tcp_prune_queue() collapses only while
//! sk_rmem_alloc is below it; above it the incoming segment is usually dropped instead
//! (RcvPruned), and the tracepoint tcp:tcp_collapse_max_bytes_exceeded fires.
//! Cloudflare's production value: 6 MiB (the default of this patch; set 0 for stock behaviour).

use crate::kernel::Kernel;
use crate::patches::PatchInfo;
use crate::skb::Skb;
use crate::socket::TcpSocket;
use crate::socket::TraceArgs;
use crate::sysctl::SysctlSpec;

pub const TCP_COLLAPSE_MAX_BYTES: SysctlSpec = SysctlSpec {
    name: "tcp_collapse_max_bytes",
    default: 6 << 20,
    lo: 0,
    hi: (1 << 31) - 1,
    doc: "collapse only while sk_rmem_alloc is below it; 0 = always",
};

pub const EXCEEDED: &str = "TCPCollapseMaxBytesExceeded";

/// Skip tcp_collapse_ofo_queue()/tcp_collapse() above net.ipv4.tcp_collapse_max_bytes.
pub struct CollapseMaxBytes {
    base: Box<dyn Kernel>,
}

pub const PATCH: PatchInfo = PatchInfo {
    name: "collapse-max-bytes",
    summary: "Cloudflare's tcp_collapse_max_bytes: drop instead of collapsing big queues (6 MiB)",
    class_name: "CollapseMaxBytes",
    apply: |base| Box::new(CollapseMaxBytes { base }),
};

impl Kernel for CollapseMaxBytes {
    fn base(&self) -> &dyn Kernel {
        &*self.base
    }

    fn class_name(&self) -> &'static str {
        PATCH.class_name
    }

    fn counters(&self) -> Vec<(&'static str, &'static str)> {
        let mut c = self.base.counters();
        c.push((
            EXCEEDED,
            "collapse skipped above tcp_collapse_max_bytes (Cloudflare patch)",
        ));
        c
    }

    fn new_sysctls(&self) -> Vec<SysctlSpec> {
        let mut s = self.base.new_sysctls();
        s.push(TCP_COLLAPSE_MAX_BYTES);
        s
    }

    /// tcp_prune_queue() with the patch: collapse only below the threshold.
    fn collapse(&self, sk: &mut TcpSocket, skb: &Skb) {
        let limit = sk
            .sysctl
            .patched(TCP_COLLAPSE_MAX_BYTES.name)
            .expect("the patch's sysctl is set on its sockets (Kernel::new_sysctls)");
        if limit != 0 && sk.mem.sk_rmem_alloc > limit {
            sk.mib.bump(EXCEEDED);
            sk.trace(
                "collapse",
                "skipped: tcp_collapse_max_bytes exceeded",
                TraceArgs::default(),
            );
            return;
        }
        self.base.collapse(sk, skb)
    }
}
