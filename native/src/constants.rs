//! Kernel constants the receive path depends on (x86-64, HZ=1000, 64-byte cache lines).
//!
//! Mirrors tcpsim/core/constants.py. Times are integer nanoseconds; a jiffy is 1 ms. Sizes are
//! bytes. Values cite include/net/tcp.h and include/linux/skbuff.h unless noted.

pub const NS_PER_US: i64 = 1_000;
pub const NS_PER_MS: i64 = 1_000_000;
pub const NS_PER_S: i64 = 1_000_000_000;
/// HZ=1000.
pub const JIFFY_NS: i64 = NS_PER_MS;

pub const PAGE_SIZE: i64 = 4096;
/// SKB_DATA_ALIGN(sizeof(struct sk_buff)) (224 on 6.18, aligned to 256).
pub const SKB_STRUCT: i64 = 256;
/// SKB_DATA_ALIGN(sizeof(struct skb_shared_info)).
pub const SKB_SHINFO: i64 = 320;
/// SKB_TRUESIZE(x) = x + 576.
pub const SKB_OVERHEAD: i64 = SKB_STRUCT + SKB_SHINFO;
pub const MAX_SKB_FRAGS: i64 = 17;
/// MAX_TCP_HEADER [include/net/tcp.h]: L1_CACHE_ALIGN(128 + MAX_HEADER), a build-config value:
/// 192 on the reference 6.18 kernel, as measured on it (constants.py).
pub const MAX_TCP_HEADER: i64 = 192;
/// SKB_MAX_ORDER(0, 0): payload of a linear skb built in one page by tcp_collapse().
pub const COLLAPSE_CHUNK: i64 = PAGE_SIZE - SKB_SHINFO;
pub const SKB_WITH_OVERHEAD_PAGE: i64 = PAGE_SIZE - SKB_SHINFO;
/// PAGE_SIZE << SKB_FRAG_PAGE_ORDER [include/linux/skbuff.h]: the compound page
/// skb_page_frag_refill() gives a writer's page frag (sk_page_frag()), which tcp_sendmsg()
/// copies the byte stream into.
pub const SKB_FRAG_PAGE_SIZE: i64 = 8 * PAGE_SIZE;

pub const MAX_TCP_WINDOW: i64 = 32767;
pub const TCP_MAX_WSCALE: i64 = 14;
pub const TCP_MIN_MSS: i64 = 88;
pub const TCP_MSS_DEFAULT: i64 = 536;
pub const TCP_INIT_CWND: i64 = 10;
/// net.ipv4.tcp_reordering: tp->reordering at tcp_init_sock().
pub const TCP_REORDERING: i64 = 3;
/// net.ipv4.tcp_max_reordering.
pub const TCP_MAX_REORDERING: i64 = 300;
pub const TCP_MAX_QUICKACKS: i64 = 16;
/// Bytes of the aligned timestamp option.
pub const TCP_HEADER_TS: i64 = 12;

pub const TCP_DELACK_MAX_NS: i64 = 200 * NS_PER_MS;
pub const TCP_DELACK_MIN_NS: i64 = 40 * NS_PER_MS;
/// HZ / 2 jiffies: the ceiling tcp_send_delayed_ack() puts on ato.
pub const HZ_HALF_NS: i64 = 500 * NS_PER_MS;
pub const TCP_ATO_MIN_NS: i64 = 40 * NS_PER_MS;
pub const TCP_RTO_MIN_NS: i64 = 200 * NS_PER_MS;
pub const TCP_RTO_MAX_NS: i64 = 120 * NS_PER_S;
pub const TCP_TIMEOUT_INIT_NS: i64 = NS_PER_S;
/// net.ipv4.tcp_syn_retries default.
pub const TCP_SYN_RETRIES: i64 = 6;
/// net.ipv4.tcp_synack_retries default.
pub const TCP_SYNACK_RETRIES: i64 = 5;
pub const TCP_RESOURCE_PROBE_INTERVAL_NS: i64 = 500 * NS_PER_MS;

// icsk_ack.pending bits (include/net/inet_connection_sock.h: enum inet_csk_ack_state_t)
pub const ICSK_ACK_SCHED: i64 = 1;
pub const ICSK_ACK_TIMER: i64 = 2;
pub const ICSK_ACK_PUSHED: i64 = 4;
pub const ICSK_ACK_PUSHED2: i64 = 8;
pub const ICSK_ACK_NOW: i64 = 16;
pub const ICSK_ACK_NOMEM: i64 = 32;

/// Every constant above by its Python name, for the differential test against constants.py.
pub const ALL: &[(&str, i64)] = &[
    ("NS_PER_US", NS_PER_US),
    ("NS_PER_MS", NS_PER_MS),
    ("NS_PER_S", NS_PER_S),
    ("JIFFY_NS", JIFFY_NS),
    ("PAGE_SIZE", PAGE_SIZE),
    ("SKB_STRUCT", SKB_STRUCT),
    ("SKB_SHINFO", SKB_SHINFO),
    ("SKB_OVERHEAD", SKB_OVERHEAD),
    ("MAX_SKB_FRAGS", MAX_SKB_FRAGS),
    ("MAX_TCP_HEADER", MAX_TCP_HEADER),
    ("COLLAPSE_CHUNK", COLLAPSE_CHUNK),
    ("SKB_WITH_OVERHEAD_PAGE", SKB_WITH_OVERHEAD_PAGE),
    ("SKB_FRAG_PAGE_SIZE", SKB_FRAG_PAGE_SIZE),
    ("MAX_TCP_WINDOW", MAX_TCP_WINDOW),
    ("TCP_MAX_WSCALE", TCP_MAX_WSCALE),
    ("TCP_MIN_MSS", TCP_MIN_MSS),
    ("TCP_MSS_DEFAULT", TCP_MSS_DEFAULT),
    ("TCP_INIT_CWND", TCP_INIT_CWND),
    ("TCP_REORDERING", TCP_REORDERING),
    ("TCP_MAX_REORDERING", TCP_MAX_REORDERING),
    ("TCP_MAX_QUICKACKS", TCP_MAX_QUICKACKS),
    ("TCP_HEADER_TS", TCP_HEADER_TS),
    ("TCP_DELACK_MAX_NS", TCP_DELACK_MAX_NS),
    ("TCP_DELACK_MIN_NS", TCP_DELACK_MIN_NS),
    ("HZ_HALF_NS", HZ_HALF_NS),
    ("TCP_ATO_MIN_NS", TCP_ATO_MIN_NS),
    ("TCP_RTO_MIN_NS", TCP_RTO_MIN_NS),
    ("TCP_RTO_MAX_NS", TCP_RTO_MAX_NS),
    ("TCP_TIMEOUT_INIT_NS", TCP_TIMEOUT_INIT_NS),
    ("TCP_SYN_RETRIES", TCP_SYN_RETRIES),
    ("TCP_SYNACK_RETRIES", TCP_SYNACK_RETRIES),
    (
        "TCP_RESOURCE_PROBE_INTERVAL_NS",
        TCP_RESOURCE_PROBE_INTERVAL_NS,
    ),
    ("ICSK_ACK_SCHED", ICSK_ACK_SCHED),
    ("ICSK_ACK_TIMER", ICSK_ACK_TIMER),
    ("ICSK_ACK_PUSHED", ICSK_ACK_PUSHED),
    ("ICSK_ACK_PUSHED2", ICSK_ACK_PUSHED2),
    ("ICSK_ACK_NOW", ICSK_ACK_NOW),
    ("ICSK_ACK_NOMEM", ICSK_ACK_NOMEM),
];

/// SKB_TRUESIZE(x) [include/linux/skbuff.h]: data area plus struct sk_buff and shinfo.
pub const fn skb_truesize(x: i64) -> i64 {
    x + SKB_OVERHEAD
}

const KMALLOC_BUCKETS: [i64; 11] = [32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192];

/// Size of the kmalloc bucket that serves an n-byte request (ksize()).
pub fn kmalloc_size(n: i64) -> i64 {
    if let Some(&b) = KMALLOC_BUCKETS.iter().find(|&&b| n <= b) {
        return b;
    }
    // large kmalloc: whole pages, power-of-two orders
    let mut size = PAGE_SIZE;
    while size < n {
        size *= 2;
    }
    size
}

/// SKB_DATA_ALIGN: round up to the 64-byte cache line.
pub fn data_align(n: i64) -> i64 {
    (n + 63) & !63
}

/// ALIGN(x, unit) for a power-of-two unit.
/// roundup_pow_of_two() [include/linux/log2.h] of a positive n (constants.py).
pub fn roundup_pow_of_two(n: i64) -> i64 {
    1 << crate::arith::bit_length(n - 1)
}

pub fn align_up(x: i64, unit: i64) -> i64 {
    (x + unit - 1) & !(unit - 1)
}

/// round_down(x, unit) for a power-of-two unit (also correct for negative x).
pub fn round_down(x: i64, unit: i64) -> i64 {
    x & !(unit - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truesize_and_buckets() {
        assert_eq!(skb_truesize(256), 832);
        assert_eq!(kmalloc_size(1), 32);
        assert_eq!(kmalloc_size(97), 128);
        assert_eq!(kmalloc_size(8192), 8192);
        assert_eq!(kmalloc_size(8193), 16384);
        assert_eq!(COLLAPSE_CHUNK, 3776);
    }

    #[test]
    fn alignment() {
        assert_eq!(data_align(0), 0);
        assert_eq!(data_align(1), 64);
        assert_eq!(data_align(64), 64);
        assert_eq!(align_up(4097, 4096), 8192);
        assert_eq!(round_down(-1, 4096), -4096);
        assert_eq!(round_down(4095, 4096), 0);
    }
}
