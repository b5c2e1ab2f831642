//! Linux 6.1 LTS as the seeds ran it (6.1.14, Cloudflare's 2023 reproducers)
//! (models/linux_6_1.py).
//!
//! Receive-path changes since 5.15 that a simulation can see: drop reasons on the data path
//! (skb:kfree_skb shows PROTO_MEM, TCP_ZEROWINDOW, ...), which tcpsim reports for every
//! profile; nothing else. The window never shrinks: there is no tcp_shrink_window yet (see
//! linux_6_1_59.rs, or apply `--policy shrink-window`).
//!
//! The host's TCP pool: 3cd3399dd7a8 "net: implement per-cpu reserves for memory_allocated"
//! (6.0) charges a socket's pages to a per-CPU counter first, flushed into the global
//! tcp_memory_allocated at +-SK_MEMORY_PCPU_RESERVE (1 MB of pages) -- not tunable until
//! 6.9's net.core.mem_pcpu_rsv (src/protmem.rs).
//!
//! On the sending side: 65466904b015 "tcp: adjust TSO packet sizes based on min_rtt" (5.18)
//! makes TSO skbs larger on short paths.

use crate::kernel::Kernel;
use crate::models::linux_5_15::{ack_delay, Linux515};
use crate::protmem::SK_MEMORY_PCPU_RESERVE;
use crate::sender::{SK_GSO_MAX_SIZE, TCP_TSO_RTT_LOG};
use crate::socket::TcpSocket;
use crate::sysctl::Sysctls;

/// Linux 6.1.14: 5.15's receive path.
#[derive(Debug, Clone, Copy, Default)]
pub struct Linux61;

impl Kernel for Linux61 {
    fn base(&self) -> &dyn Kernel {
        &Linux515
    }

    fn class_name(&self) -> &'static str {
        "Linux61"
    }

    fn release(&self) -> &'static str {
        "6.1"
    }

    /// "net-memcg: avoid stalls when under memory pressure" (6.1-rc3): gfp_memcg_charge() is
    /// GFP_ATOMIC in softirq, so cgroup v2 forces the receive path's charges past memory.max.
    fn memcg_softirq_atomic(&self) -> bool {
        true
    }

    /// Per-CPU reserves of the TCP pool (6.0+): SK_MEMORY_PCPU_RESERVE pages a CPU.
    fn default_sysctls(&self) -> Sysctls {
        Sysctls {
            tcp_rmem: (4096, 131072, self.rmem2_default()),
            mem_pcpu_rsv: SK_MEMORY_PCPU_RESERVE,
            ..Sysctls::default()
        }
    }

    /// tcp_tso_autosize() [tcp_output.c, 5.18+]: add gso_max_size >> (min_rtt_us >>
    /// tcp_tso_rtt_log) to the pacing rate's share -- the whole GSO size below 512 us of
    /// min RTT, half of it below 1 ms, ... (nothing before the first RTT sample).
    fn tso_rtt_bytes(&self, sk: &TcpSocket) -> i64 {
        if sk.snd.min_rtt_us == 0 {
            return 0;
        }
        let r = sk.snd.min_rtt_us >> TCP_TSO_RTT_LOG;
        if r < 32 {
            SK_GSO_MAX_SIZE >> r
        } else {
            0
        }
    }

    /// tcp_event_new_data_sent() [tcp_output.c, 5.18+, 4bfe744ff164]: tcp_check_space()
    /// after every skb of new data (see linux_6_1.py).
    fn new_data_checks_space(&self, _sk: &TcpSocket) -> bool {
        true
    }

    /// hystart_ack_delay() [tcp_cubic.c, 5.19+]: "tcp_cubic: make hystart_ack_delay() aware
    /// of BIG TCP" (Eric Dumazet, 2022) uses the socket's sk_gso_max_size, 64 KiB less
    /// MAX_TCP_HEADER + 1 on a legacy-GSO device, where 5.15 has GSO_MAX_SIZE.
    fn hystart_ack_delay(&self, sk: &TcpSocket) -> i64 {
        ack_delay(sk, SK_GSO_MAX_SIZE)
    }
}
