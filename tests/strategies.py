"""Hypothesis strategies shared by the test suite.

Each area keeps its strategies in its own clearly marked section; append new sections below.
"""

from __future__ import annotations

from hypothesis import strategies as st

# =========================================================================== packetdrill
# Strategies for tcpsim.packetdrill (tests/packetdrill/test_pd_*.py): syntax-tree
# values that render to valid script lines, and segments as the simulator would send them.

from tcpsim.packetdrill.ast import (  # noqa: E402
    ACK, ANY, FIN, PSH, RST, SYN, URG, Direction, Eol, Mss, Nop, Sack, SackOK, TcpPacket,
    Timestamp, TimeKind, Timing, WScale, options_size,
)

U16, U32 = 0xFFFF, 0xFFFF_FFFF

pd_flags = st.sets(st.sampled_from([SYN, FIN, RST, PSH, ACK, URG])).map(sum)

pd_sack_blocks = st.lists(
    st.tuples(st.integers(0, U32), st.integers(0, U32)), min_size=1, max_size=4,
).map(tuple)

pd_option = st.one_of(
    st.just(Nop()), st.just(Eol()), st.just(SackOK()),
    st.builds(Mss, st.integers(0, U16)),
    st.builds(WScale, st.integers(0, 14)),
    st.builds(Timestamp, st.integers(0, U32), st.integers(0, U32)),
    st.builds(Sack, pd_sack_blocks),
)


def _pad(options: list) -> tuple:
    """Append NOPs up to a multiple of 4 bytes, as a valid script must."""
    return tuple(options) + (Nop(),) * (-options_size(tuple(options)) % 4)


pd_options = st.lists(pd_option, max_size=5).map(_pad).filter(lambda o: options_size(o) <= 40)


@st.composite
def pd_packets(draw, direction: Direction | None = None) -> TcpPacket:
    """A TCP packet line that the parser accepts (inbound ones give `win`, no wildcards)."""
    direction = direction or draw(st.sampled_from(Direction))
    outbound = direction is Direction.OUTBOUND
    length = draw(st.integers(0, U16))
    seq = draw(st.integers(0, U32 - length))
    plain = st.integers(0, U32)
    ack = draw(st.one_of(st.none(), plain, st.just(ANY)) if outbound
               else st.one_of(st.none(), plain))
    win = draw(st.one_of(st.none(), st.integers(0, U16), st.just(ANY)) if outbound
               else st.integers(0, U16))
    urg = draw(st.one_of(st.none(), st.integers(0, U16)))
    options = draw(st.one_of(pd_options, st.just(ANY)) if outbound else pd_options)
    return TcpPacket(direction, draw(pd_flags), seq, length, ack, win, urg, options)


pd_usecs = st.integers(0, 10**8)


@st.composite
def pd_timings(draw, outbound: bool) -> Timing:
    """An event time stamp valid for an outbound packet (any kind) or other events."""
    kinds = list(TimeKind) if outbound else [TimeKind.ABSOLUTE, TimeKind.RELATIVE]
    kind = draw(st.sampled_from(kinds))
    if kind is TimeKind.ANY:
        return Timing(kind)
    start = draw(pd_usecs)
    end = start + draw(pd_usecs) if kind in (TimeKind.ABSOLUTE_RANGE,
                                              TimeKind.RELATIVE_RANGE) else None
    return Timing(kind, start, end)


@st.composite
def pd_segments(draw):
    """An outbound `Segment` whose options fit in a TCP header."""
    from tcpsim.core.segment import Segment

    flags = draw(pd_flags)
    syn = bool(flags & SYN)
    has_ts = draw(st.booleans())
    sack_limit = 0 if syn else (3 if has_ts else 4)
    length = draw(st.integers(0, U16))
    return Segment(
        draw(st.integers(0, U32 - length)), length, flags,
        draw(st.integers(0, U32)) if flags & ACK else 0, draw(st.integers(0, U16)),
        mss=draw(st.integers(1, U16)) if syn and draw(st.booleans()) else 0,
        wscale=draw(st.integers(0, 14)) if syn and draw(st.booleans()) else -1,
        sack_ok=syn and draw(st.booleans()),
        tsval=draw(st.integers(0, U32)) if has_ts else -1,
        tsecr=draw(st.integers(0, U32)) if has_ts else -1,
        sacks=tuple(draw(st.lists(st.tuples(st.integers(0, U32), st.integers(0, U32)),
                                  max_size=sack_limit))),
    )


# =========================================================================== receiver state machine
# Strategies for tests/core/test_receiver_state_machine.py: the arguments of the rules that
# drive one receiving TcpSocket (segment sizes and offsets, reads, socket options, time).
# Sizes cluster where the receive path changes behaviour: tiny segments (bloated truesize,
# tailroom coalescing), MSS-sized ones, GRO aggregates and segments larger than the window.

rx_mss = 1448                                            # the harness peer: MSS 1460 - TS option

rx_segment_length = st.one_of(
    st.integers(1, 64),                                  # tiny writes (Cloudflare 2023)
    st.sampled_from([100, 536, 1000, rx_mss - 1, rx_mss, rx_mss + 1, 2 * rx_mss]),
    st.integers(1, 4 * rx_mss),
)

rx_oversize_length = st.one_of(
    st.sampled_from([16 * rx_mss, 45 * rx_mss, 65535]),
    st.integers(4 * rx_mss, 65535),
)

rx_gso_size = st.sampled_from([0, rx_mss])               # 0: one wire segment, else a GRO aggregate

rx_gap = st.one_of(                                      # bytes between rcv_nxt and an OFO segment
    st.integers(1, 4 * rx_mss),
    st.sampled_from([rx_mss, 2 * rx_mss, 10 * rx_mss]),
    st.integers(1, 200_000),
)

rx_back = st.one_of(st.integers(1, 64), st.integers(1, 4 * rx_mss))   # bytes below rcv_nxt

rx_read_size = st.one_of(
    st.just(0), st.integers(1, 100), st.sampled_from([rx_mss, 4096, 65536]),
    st.integers(1, 1 << 20),
)

rx_so_rcvbuf = st.one_of(                                # setsockopt(SO_RCVBUF) value (doubled)
    st.sampled_from([1, 2304, 4096, 8192, 16384, 65536, 1 << 20]),
    st.integers(1, 1 << 19),
)

rx_window_clamp = st.one_of(                             # setsockopt(TCP_WINDOW_CLAMP) value
    st.sampled_from([0, 1, 2304, rx_mss, 8192, 65535, 1 << 20]),
    st.integers(0, 1 << 21),
)

# how long the application holds the socket (us; tcpsim/core/backlog.py): below a
# millisecond, so time_passes releases it
rx_hold_us = st.one_of(st.integers(1, 100), st.integers(1, 999))
rx_elapsed_ms = st.one_of(st.integers(0, 5), st.integers(0, 250), st.sampled_from([40, 200, 1000]))

rx_tcp_mem = st.sampled_from([                           # net.ipv4.tcp_mem: the socket's pool
    None, None,                                          # the profile's default: never reached
    (4, 8, 16),                                          # pressure within a few segments
    (16, 24, 32),
])
rx_tcp_rmem = st.sampled_from([                          # net.ipv4.tcp_rmem at connect time
    None,                                                # the profile's default
    (4096, 8192, 65536),                                 # small, autotuned (wscale 2: rmem_max)
    (4096, 16384, 32 << 20),                             # small start, large max: wscale 10
    (4096, 131072, 256 << 20),                           # wscale 13 (16 KiB scale unit)
])

rx_handshake_rcvbuf = st.sampled_from([0, 0, 2304, 8192, 32768])   # SO_RCVBUF before connect


# =========================================================================== native engine
# Strategies for the differential tests of tcpsim._native against the Python model
# (tests/native/): inputs of the leaf rooms, weighted towards their edges.

nat_payload = st.one_of(                                 # segment payload sizes (bytes)
    st.sampled_from([0, 1, 536, 1448, 1460, 3776, 4096, 8948, 32768, 65535]),
    st.integers(0, 70_000),
)

nat_seq = st.integers(0, 1 << 40)                       # model sequence numbers (unbounded)

nat_hz = st.sampled_from([0, 100, 250, 300, 1000])      # 0: the exact clock

nat_time_ns = st.one_of(                                 # instants of a run (ns)
    st.integers(0, 10_000 * 1_000_000),
    st.integers(0, 10**15),
    st.sampled_from([0, 1, 999_999, 1_000_000, 3_333_333, 3_333_334, 4_000_000]),
)

nat_duration_ns = st.one_of(                             # timer lengths (ns), whole ms mostly
    st.integers(0, 130_000).map(lambda ms: ms * 1_000_000),
    st.integers(0, 10**12),
)

nat_jiffies = st.one_of(st.integers(-1000, 1000), st.integers(0, 1 << 40))

nat_u32 = st.integers(0, 0xFFFF_FFFF)


@st.composite
def nat_u32_near_wrap(draw) -> tuple[int, int]:
    """Two 32-bit sequence numbers, often on either side of the wrap or half a circle apart."""
    a = draw(st.one_of(nat_u32, st.integers(0xFFFF_FF00, 0xFFFF_FFFF), st.integers(0, 0xFF)))
    d = draw(st.one_of(st.integers(-300, 300), st.sampled_from([1 << 31, (1 << 31) - 1,
                                                               (1 << 31) + 1]), nat_u32))
    return a, (a + d) % (1 << 32)


nat_flags = st.integers(0, 0x3F)

nat_sacks = st.lists(st.tuples(nat_seq, nat_seq), max_size=4)

nat_segment_kwargs = st.fixed_dictionaries({                # Segment(...) keyword options
    "mss": st.one_of(st.just(0), st.integers(1, 65535)),
    "wscale": st.integers(-1, 14),
    "sack_ok": st.booleans(),
    "tsval": st.one_of(st.just(-1), nat_u32),
    "tsecr": st.one_of(st.just(-1), nat_u32),
    "sacks": nat_sacks.map(tuple),
    "gso_size": st.one_of(st.just(0), st.integers(1, 9000)),
})

nat_triple = st.tuples(st.integers(1, 1 << 16), st.integers(1, 1 << 22),
                       st.integers(1, 1 << 28)).map(lambda t: tuple(sorted(t)))

nat_mem_ops = st.lists(st.one_of(                           # memory-room operations, in order
    st.tuples(st.just("coalesce"), st.tuples(st.sampled_from(["receive", "ofo"]),
                                             st.sampled_from([0, 0, 0, 1]), nat_payload)),
    st.tuples(st.sampled_from(["collapse_receive", "collapse_ofo", "drop_last"]), st.just(0)),
    st.tuples(st.just("index"), st.integers(-100, 100_000)),
    st.tuples(st.just("read"), st.integers(0, 20_000)),
    st.tuples(st.sampled_from(["rmem_schedule", "charge", "uncharge"]), st.integers(0, 70_000)),
), max_size=12)

# -- kernel decision points (tests/native/test_native_kernel.py) ------------------------------

nat_bytes = st.one_of(st.integers(-70_000, 70_000), st.integers(0, 1 << 31),   # byte counts
                      st.sampled_from([0, 1, 536, 1448, 1460, 65535, 65536, 131072, 6 << 20]))

nat_kernel_fields = st.fixed_dictionaries({                 # socket fields the decisions read
    "now": st.integers(0, 1 << 42), "tcp_mstamp": st.integers(0, 1 << 32),
    "accepted": st.booleans(),
    "conn.state": st.sampled_from(["CLOSED", "ESTABLISHED", "SYN_SENT"]),
    "conn.wscale_ok": st.booleans(), "conn.ts_ok": st.booleans(),
    "conn.rcv_wscale": st.integers(0, 14), "conn.advmss": st.integers(88, 9000),
    "conn.init_rwnd": st.one_of(st.just(0), st.integers(1, 2000)),
    "conn.tcp_header_len": st.sampled_from([20, 32]),
    "rcv.rcv_nxt": st.integers(0, 1 << 33), "rcv.copied_seq": st.integers(0, 1 << 33),
    "rcv.rcv_wup": st.integers(0, 1 << 33), "rcv.rcv_wnd": st.integers(0, 1 << 30),
    "rcv.window_clamp": st.one_of(st.just(0), st.integers(1, 1 << 30)),
    "rcv.rcv_ssthresh": st.integers(0, 1 << 30), "rcv.scaling_ratio": st.integers(1, 256),
    "rcv.last_seg_size": st.integers(0, 9000), "rcv.rcvq_space": st.integers(1, 1 << 26),
    "rcv.rcvq_seq": st.integers(0, 1 << 33), "rcv.rcvq_time": st.integers(0, 1 << 32),
    "rcv.rcv_rtt_us8": st.one_of(st.just(0), st.integers(1, 1 << 28)),
    "rcv.rcv_rtt_seq": st.integers(0, 1 << 33), "rcv.rcv_mwnd_seq": st.integers(0, 1 << 33),
    "rcv.rcv_rtt_time": st.one_of(st.just(0), st.integers(1, 1 << 32)),
    "rcv.rcv_rtt_last_tsecr": st.integers(-1, 1 << 20), "conn.rcv_tsecr": st.integers(-1, 1 << 20),
    "mem.sk_rcvbuf": st.integers(0, 1 << 28), "mem.sk_rmem_alloc": st.integers(0, 1 << 28),
    "proto.memory_pressure": st.sampled_from([-1, -1, 0, 7_000_000]),  # the host's pool
    "proto.allocated": st.sampled_from([0, 199, 200, 5000]),
    "mem.rcvbuf_locked": st.booleans(),
    "ack.ack_pending": st.integers(0, 63), "ack.ack_quick": st.integers(0, 16),
    "ack.ack_ato": st.integers(0, 200_000_000), "ack.ack_rcv_mss": st.integers(1, 9000),
    "snd.snd_una": st.integers(0, 1 << 33), "snd.snd_wl1": st.integers(0, 1 << 33),
    "snd.snd_wnd": st.integers(0, 1 << 30), "snd.srtt_us8": st.integers(0, 1 << 30),
    "snd.min_rtt_us": st.integers(0, 1 << 24), "snd.rcv_tstamp": st.integers(0, 1 << 42),
    "snd.retrans_stamp": st.integers(0, 1 << 42),
})

nat_kernel_sysctls = st.fixed_dictionaries({                # sysctls the decisions read
    "tcp_adv_win_scale": st.integers(-31, 31), "tcp_app_win": st.integers(0, 31),
    "tcp_rmem": nat_triple, "rmem_max": st.integers(1, 1 << 31),
    "tcp_moderate_rcvbuf": st.integers(0, 1), "tcp_shrink_window": st.integers(0, 1),
    "tcp_workaround_signed_windows": st.integers(0, 1),
    "tcp_mem": st.sampled_from([(200, 400, 600), (287901, 383868, 575802)]),
    "tcp_rcvbuf_low_rtt": st.integers(0, 5000),
    "tcp_comp_sack_delay_ns": st.integers(0, 1 << 32),
})

nat_kernel_args = st.fixed_dictionaries({                   # decision arguments, by parameter
    "space": nat_bytes, "win": st.integers(-(1 << 31), 1 << 31), "mss": st.integers(1, 9000),
    "val": nat_bytes, "sample_us": st.integers(0, 1 << 26), "win_dep": st.integers(0, 1),
    "delta_ms": st.integers(-1000, 100_000), "right": st.integers(0, 1 << 33),
    "copied": st.integers(0, 1 << 26), "dsack_high": st.integers(0, 1 << 33),
    "copied_seq": st.integers(0, 1 << 33), "rcvq_seq": st.integers(0, 1 << 33),
    "newval": st.integers(-(1 << 26), 1 << 26), "oldval": st.integers(-(1 << 26), 1 << 26),
    "ack": st.integers(0, 1 << 33), "nwin": st.integers(0, 1 << 30),
    "srtt_ns": st.integers(0, 1 << 40), "rtt_us8": st.integers(0, 1 << 30),
    "seg_seq": st.integers(0, 1 << 33), "seg_len": st.integers(0, 70_000),
    "seg_flags": nat_flags, "seg_gso_size": st.one_of(st.just(0), st.integers(1, 9000)),
    "skb_seq": st.integers(0, 1 << 33), "skb_len": st.integers(0, 70_000),
    "skb_truesize": st.integers(1, 1 << 18), "skb_fin": st.integers(0, 1),
    "adjust": st.integers(0, 1), "missing": st.integers(0, 70_000),
    "q0": st.integers(1, 70_000), "q1": st.integers(1, 70_000), "q2": st.integers(1, 70_000),
})


# =========================================================================== search spaces
# Workloads of a `tcpsim search` space for property tests: the strategy `tcpsim search`
# itself uses with optimiser = "hypothesis" (defined once, in tcpsim.searching.strategy).

from tcpsim.searching.strategy import search_workloads  # noqa: E402,F401
