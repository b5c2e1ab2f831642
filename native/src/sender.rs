//! The send half's constants (tcpsim/core/sender.py, module level).
//!
//! Only the constants are here so far: the state records need INFINITE_SSTHRESH, and the
//! memory and window code will need the rest. The behaviour of sender.py (segmentation,
//! cwnd, RTO, persist probes, loss probe) is ported in a later step, as `impl TcpSocket` in
//! this file.

use crate::constants::skb_truesize;

/// snd_ssthresh before any loss (TCP_INFINITE_SSTHRESH [include/net/tcp.h]).
pub const INFINITE_SSTHRESH: i64 = 0x7FFF_FFFF;
/// Head of a sender skb (tcp_stream_alloc_skb).
pub const SND_SKB_OVERHEAD: i64 = skb_truesize(256);
/// tcp_sndbuf_expand(): roundup_pow_of_two + sk_buff.
pub const PER_MSS_MEM: i64 = 4096 + 256;
/// sk_gso_max_size of a TCP socket on a device with the legacy 64 KiB GSO limit (veth, lo):
/// the device's limit less MAX_TCP_HEADER + 1 (sk_dst_gso_max_size [net/core/sock.c]), with
/// MAX_TCP_HEADER = 320 on x86-64.
pub const SK_GSO_MAX_SIZE: i64 = 65536 - (320 + 1);
/// GSO_MAX_SEGS.
pub const SK_GSO_MAX_SEGS: i64 = 65535;
/// net.ipv4.tcp_min_tso_segs.
pub const TCP_MIN_TSO_SEGS: i64 = 2;
/// net.ipv4.tcp_tso_win_divisor.
pub const TCP_TSO_WIN_DIVISOR: i64 = 3;
/// net.ipv4.tcp_tso_rtt_log.
pub const TCP_TSO_RTT_LOG: i64 = 9;
/// net.ipv4.tcp_pacing_ss_ratio.
pub const TCP_PACING_SS_RATIO: i64 = 200;
/// net.ipv4.tcp_pacing_ca_ratio.
pub const TCP_PACING_CA_RATIO: i64 = 120;
/// sk_pacing_shift: about 1 ms of data per TSO packet.
pub const SK_PACING_SHIFT: i64 = 10;

/// Every constant above by its Python name (sender.py), for the differential test.
pub const ALL: &[(&str, i64)] = &[
    ("INFINITE_SSTHRESH", INFINITE_SSTHRESH),
    ("SND_SKB_OVERHEAD", SND_SKB_OVERHEAD),
    ("_PER_MSS_MEM", PER_MSS_MEM),
    ("SK_GSO_MAX_SIZE", SK_GSO_MAX_SIZE),
    ("SK_GSO_MAX_SEGS", SK_GSO_MAX_SEGS),
    ("TCP_MIN_TSO_SEGS", TCP_MIN_TSO_SEGS),
    ("TCP_TSO_WIN_DIVISOR", TCP_TSO_WIN_DIVISOR),
    ("TCP_TSO_RTT_LOG", TCP_TSO_RTT_LOG),
    ("TCP_PACING_SS_RATIO", TCP_PACING_SS_RATIO),
    ("TCP_PACING_CA_RATIO", TCP_PACING_CA_RATIO),
    ("SK_PACING_SHIFT", SK_PACING_SHIFT),
];
