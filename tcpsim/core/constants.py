"""Kernel constants the receive path depends on (x86-64, HZ=1000, 64-byte cache lines).

Times are integer nanoseconds; a jiffy is 1 ms. Sizes are bytes. Values cite
include/net/tcp.h and include/linux/skbuff.h unless noted.
"""

from __future__ import annotations

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000
JIFFY_NS = NS_PER_MS  # HZ=1000

PAGE_SIZE = 4096
SKB_STRUCT = 256          # SKB_DATA_ALIGN(sizeof(struct sk_buff)) (224 on 6.18, aligned to 256)
SKB_SHINFO = 320          # SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
SKB_OVERHEAD = SKB_STRUCT + SKB_SHINFO  # SKB_TRUESIZE(x) = x + 576
MAX_SKB_FRAGS = 17
# MAX_TCP_HEADER [include/net/tcp.h]: L1_CACHE_ALIGN(128 + MAX_HEADER), a build-config value:
# 192 on the reference 6.18 kernel (6.18.44-fc: MAX_HEADER 32), as measured on it -- its
# tcp_sndbuf_expand() steps to the next power of two at mss_clamp 1537, 3585 and 7681
# (MAX_TCP_HEADER + SKB_SHINFO = 512), and its small-head skb is 832 (devices.py); 320 on
# distribution kernels with tunnels and wireless configured (MAX_HEADER 176).
MAX_TCP_HEADER = 192
# SKB_MAX_ORDER(0, 0): payload of a linear skb built in one page by tcp_collapse().
COLLAPSE_CHUNK = PAGE_SIZE - SKB_SHINFO  # 3776
SKB_WITH_OVERHEAD_PAGE = PAGE_SIZE - SKB_SHINFO
# PAGE_SIZE << SKB_FRAG_PAGE_ORDER [include/linux/skbuff.h]: the compound page
# skb_page_frag_refill() gives a writer's page frag (sk_page_frag()), which tcp_sendmsg()
# copies the byte stream into.
SKB_FRAG_PAGE_SIZE = 8 * PAGE_SIZE

MAX_TCP_WINDOW = 32767
TCP_MAX_WSCALE = 14
TCP_MIN_MSS = 88
TCP_MSS_DEFAULT = 536
TCP_INIT_CWND = 10
TCP_REORDERING = 3        # net.ipv4.tcp_reordering: tp->reordering at tcp_init_sock()
TCP_MAX_REORDERING = 300  # net.ipv4.tcp_max_reordering
TCP_MAX_QUICKACKS = 16
TCP_HEADER_TS = 12        # bytes of the aligned timestamp option

TCP_DELACK_MAX_NS = 200 * NS_PER_MS
TCP_DELACK_MIN_NS = 40 * NS_PER_MS
HZ_HALF_NS = 500 * NS_PER_MS             # HZ / 2 jiffies: tcp_send_delayed_ack()'s ceiling on ato
TCP_ATO_MIN_NS = 40 * NS_PER_MS
TCP_RTO_MIN_NS = 200 * NS_PER_MS
TCP_RTO_MAX_NS = 120 * NS_PER_S
TCP_TIMEOUT_INIT_NS = 1 * NS_PER_S
TCP_SYN_RETRIES = 6          # net.ipv4.tcp_syn_retries default
TCP_SYNACK_RETRIES = 5       # net.ipv4.tcp_synack_retries default
TCP_RESOURCE_PROBE_INTERVAL_NS = 500 * NS_PER_MS

# icsk_ack.pending bits (include/net/inet_connection_sock.h: enum inet_csk_ack_state_t)
ICSK_ACK_SCHED = 1
ICSK_ACK_TIMER = 2
ICSK_ACK_PUSHED = 4
ICSK_ACK_PUSHED2 = 8
ICSK_ACK_NOW = 16
ICSK_ACK_NOMEM = 32


def skb_truesize(x: int) -> int:
    """SKB_TRUESIZE(x) [include/linux/skbuff.h]: data area plus struct sk_buff and shinfo."""
    return x + SKB_OVERHEAD


_KMALLOC_BUCKETS = (32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192)


def kmalloc_size(n: int) -> int:
    """Size of the kmalloc bucket that serves an n-byte request (ksize())."""
    for b in _KMALLOC_BUCKETS:
        if n <= b:
            return b
    # large kmalloc: whole pages, power-of-two orders
    size = PAGE_SIZE
    while size < n:
        size *= 2
    return size


def roundup_pow_of_two(n: int) -> int:
    """roundup_pow_of_two() [include/linux/log2.h] of a positive n."""
    return 1 << (n - 1).bit_length()


def data_align(n: int) -> int:
    """SKB_DATA_ALIGN: round up to the 64-byte cache line."""
    return (n + 63) & ~63


def align_up(x: int, unit: int) -> int:
    """ALIGN(x, unit) for a power-of-two unit."""
    return (x + unit - 1) & ~(unit - 1)


def round_down(x: int, unit: int) -> int:
    """round_down(x, unit) for a power-of-two unit (also correct for negative x)."""
    return x & ~(unit - 1)
