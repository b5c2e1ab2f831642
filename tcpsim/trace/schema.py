"""The trace schema shared by simulated runs, real-kernel captures and importers.

One row per event at one socket. Field names follow the kernel (`struct tcp_sock`, `struct
sock`) so a row can be held against `ss -tmi`, bpftrace output or `nstat`. Integers are bytes,
sequence numbers (relative to the peer's ISN, not wrapped) and nanoseconds.

A value that a source cannot know is written as -1 (integers) or "" (strings); readers must
treat -1 as "unknown", never as a measurement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tcpsim.core.segment import Segment

# (name, arrow type, meaning)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("t_ns", "int64", "simulated (or capture-relative) time, nanoseconds"),
    ("sock", "string", "which endpoint: 'rcv' (the receiver under study) or 'snd' (its peer)"),
    ("event", "string", "rx | tx | read | write | timer | drop | state | collapse | prune | autotune | window"),
    ("detail", "string", "what happened: queued, coalesced, ofo, probe, rto, clamp_window, want zero, ..."),
    ("seq", "int64", "segment sequence number (rx/tx/drop), else -1"),
    ("end_seq", "int64", "segment end sequence (seq + len + SYN + FIN), else -1"),
    ("len", "int64", "payload bytes of the segment, or bytes read/written"),
    ("truesize", "int64", "skb truesize charged for a received segment, else -1"),
    ("flags", "string", "TCP flags of the segment, e.g. 'A', 'PA', 'SA', 'FA'"),
    ("ack_seq", "int64", "acknowledgment number carried by the segment, else -1"),
    ("win_raw", "int64", "16-bit window field on the wire, else -1"),
    ("win_scaled", "int64", "window in bytes (win_raw << scale), else -1"),
    ("sk_rmem_alloc", "int64", "bytes of truesize charged to the receive side (skmem r)"),
    ("sk_rcvbuf", "int64", "receive buffer limit (skmem rb)"),
    ("rcv_nxt", "int64", "next sequence expected"),
    ("copied_seq", "int64", "first sequence not yet read by the application"),
    ("rcv_wup", "int64", "rcv_nxt when the last window was advertised"),
    ("rcv_wnd", "int64", "last advertised window, bytes"),
    ("rcv_ssthresh", "int64", "soft limit of the advertised window"),
    ("window_clamp", "int64", "hard limit of the advertised window"),
    ("rcv_mss", "int64", "receiver's estimate of the peer's MSS (icsk_ack.rcv_mss)"),
    ("scaling_ratio", "int64", "len/truesize ratio x256 (6.6+), -1 before 6.6"),
    ("rcvq_space", "int64", "rcvq_space.space, the DRS baseline"),
    ("rcv_rtt_us", "int64", "receiver RTT estimate, microseconds (rcv_rtt_est.rtt_us >> 3)"),
    ("recv_q", "int64", "bytes queued and not read (rcv_nxt - copied_seq)"),
    ("rcvq_len", "int64", "skbs in sk_receive_queue"),
    ("ofoq_len", "int64", "skbs in the out-of-order queue"),
    ("snd_una", "int64", "sender: oldest unacknowledged sequence"),
    ("snd_nxt", "int64", "sender: next sequence to send"),
    ("snd_wnd", "int64", "sender: peer's advertised window, bytes"),
    ("snd_cwnd", "int64", "sender: congestion window, segments"),
    ("drop_reason", "string", "kernel drop reason (skb:kfree_skb) for a dropped segment, else ''"),
    ("collapse_ns", "int64", "collapse rows: modelled time the collapse took (cost model), else -1"),
)

COLUMN_NAMES: tuple[str, ...] = tuple(name for name, _, _ in COLUMNS)
# Columns added after traces were already recorded: readers fill them with -1 when absent.
OPTIONAL_COLUMNS: frozenset[str] = frozenset({"collapse_ns"})
INT_COLUMNS: frozenset[str] = frozenset(n for n, t, _ in COLUMNS if t == "int64")
STR_COLUMNS: frozenset[str] = frozenset(n for n, t, _ in COLUMNS if t == "string")

# Metadata keys stored in the Parquet file's key-value metadata (all values are JSON strings).
META_KEYS: tuple[str, ...] = (
    "source",       # "tcpsim" | "capture" | "import:<format>"
    "profile",      # tcpsim profile name, or kernel release for captures
    "scenario",     # the scenario, as JSON
    "sysctls",      # effective receiver sysctls, as JSON {name: value}
    "counters",     # final nstat counters of the receiver, as JSON {TcpExtX: n}
    "summary",      # run summary, as JSON
)

# -- the events the core emits ------------------------------------------------------------------
#
# The socket reports each event to its sink as one flat tuple, a `TraceEvent`, built by
# TcpSocket.trace() [tcpsim/core/socket.py] from its state after the event; a recorder turns
# it into a row of COLUMNS without looking at the socket. The segment travels as the object
# (the recorder takes seq, flags, window, ... from it); `win_scale` is the shift that turns
# its window field into bytes (0 for a SYN: the recorder decides); the other integers are
# the columns of the same name. Field i of an event is EVENT_FIELDS[i].
EVENT_FIELDS: tuple[str, ...] = (
    "t_ns", "sock", "event", "detail", "seg", "truesize", "drop_reason", "len", "collapse_ns",
    "win_scale",
    # the socket's state after the event: columns of the same name, in this order
    "sk_rmem_alloc", "sk_rcvbuf", "rcv_nxt", "copied_seq", "rcv_wup", "rcv_wnd",
    "rcv_ssthresh", "window_clamp", "rcv_mss", "scaling_ratio", "rcvq_space", "rcv_rtt_us",
    "recv_q", "rcvq_len", "ofoq_len", "snd_una", "snd_nxt", "snd_wnd", "snd_cwnd",
)
# Where the socket's state starts in an event: EVENT_FIELDS[EV_STATE:] are int columns.
EV_STATE: int = EVENT_FIELDS.index("sk_rmem_alloc")
STATE_COLUMNS: tuple[str, ...] = EVENT_FIELDS[EV_STATE:]
# A flat tuple in EVENT_FIELDS order: (t_ns, sock, event, detail, seg, truesize, drop_reason,
# len, collapse_ns, win_scale, *the STATE_COLUMNS values).
TraceEvent = tuple[int, str, str, str, "Segment | None", int, str, int, int, int, *tuple[int, ...]]
