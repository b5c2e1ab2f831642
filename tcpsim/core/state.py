"""The state of a TCP socket as five typed records, declared and initialised here only.

`TcpSocket` (tcpsim/core/socket.py) holds one of each: `sk.conn`, `sk.rcv`, `sk.mem`,
`sk.ack`, `sk.snd`. Field names are the kernel's (and the trace columns'); each record
mirrors one kernel structure:

    ConnState  tcp_options_received, the MSS values and the connection state
    RcvState   struct tcp_sock, receive half
    MemState   struct sock receive memory and its two queues
    AckState   inet_connection_sock.icsk_ack, the delayed-ACK and compressed-SACK timers
    SndState   struct tcp_sock, send half, and the icsk retransmit state

Integers are bytes, sequence numbers (from the peer's ISN, never wrapped) and ns unless a
suffix says otherwise (`_us`, `_us8`). A timer deadline of 0 means "not armed". The Rust
port (native/src/state.rs) declares the same records with the same field names.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tcpsim.core.constants import (
    TCP_INIT_CWND, TCP_MSS_DEFAULT, TCP_REORDERING, TCP_TIMEOUT_INIT_NS,
)
from tcpsim.core.skb import Skb
from tcpsim.core.sysctl import Sysctls

INFINITE_SSTHRESH = 0x7FFFFFFF      # TCP_INFINITE_SSTHRESH [include/net/tcp.h]


class TcpState(enum.StrEnum):
    """Connection states (enum tcp_state [include/net/tcp_states.h]); the values are the
    names traces and `ss_line()` print."""

    CLOSED = "CLOSED"
    LISTEN = "LISTEN"
    SYN_SENT = "SYN_SENT"
    SYN_RECV = "SYN_RECV"
    ESTABLISHED = "ESTABLISHED"
    CLOSE_WAIT = "CLOSE_WAIT"
    FIN_WAIT1 = "FIN_WAIT1"
    FIN_WAIT2 = "FIN_WAIT2"
    LAST_ACK = "LAST_ACK"
    CLOSING = "CLOSING"
    TIME_WAIT = "TIME_WAIT"


# Module-level aliases of the members: `TcpState.CLOSED` costs a metaclass lookup on every
# use, a module global does not (the per-packet paths compare states).
CLOSED, LISTEN, SYN_SENT, SYN_RECV = (
    TcpState.CLOSED, TcpState.LISTEN, TcpState.SYN_SENT, TcpState.SYN_RECV)
ESTABLISHED, CLOSE_WAIT, FIN_WAIT1, FIN_WAIT2 = (
    TcpState.ESTABLISHED, TcpState.CLOSE_WAIT, TcpState.FIN_WAIT1, TcpState.FIN_WAIT2)
LAST_ACK, CLOSING, TIME_WAIT = TcpState.LAST_ACK, TcpState.CLOSING, TcpState.TIME_WAIT

# The states after the handshake (TCPF_* masks of the kernel's state tests).
SYNCHRONIZED = frozenset({ESTABLISHED, CLOSE_WAIT, FIN_WAIT1, FIN_WAIT2, LAST_ACK, CLOSING,
                          TIME_WAIT})
# States in which tcp_write_xmit() may send data (the model's send path).
XMIT_STATES = frozenset({ESTABLISHED, CLOSE_WAIT, FIN_WAIT1, LAST_ACK, CLOSING})
# States in which the application may queue data (tcp_sendmsg_locked()).
SEND_STATES = frozenset({ESTABLISHED, CLOSE_WAIT})
HANDSHAKE_STATES = frozenset({SYN_SENT, SYN_RECV})


@dataclass(slots=True, kw_only=True)
class ConnState:
    """Lifecycle, negotiated options and MSS values: tcp_options_received (rx_opt) and the
    MSS fields of struct tcp_sock / inet_connection_sock."""

    state: TcpState = CLOSED
    wscale_ok: bool = False
    sack_ok: bool = False
    ts_ok: bool = False
    rcv_wscale: int = 0
    snd_wscale: int = 0
    tcp_header_len: int = 20
    ts_recent: int = 0              # the peer's last TSval, echoed in our TSecr
    rcv_tsecr: int = -1             # the TSecr of the last segment received
    mtu: int = 1500
    advmss: int = 1460
    mss_cache: int = TCP_MSS_DEFAULT
    peer_mss: int = TCP_MSS_DEFAULT
    init_rwnd: int = 0              # the route's initrwnd (0: the kernel's default)
    syn_tx_ns: int = -1             # when our SYN / SYN-ACK went out (the handshake's RTT)


@dataclass(slots=True, kw_only=True)
class RcvState:
    """The receive half of struct tcp_sock: sequence space, window, autotuning (rcvq_space,
    rcv_rtt_est), SACK blocks to send."""

    irs: int = 0
    rcv_nxt: int = 0
    copied_seq: int = 0
    rcv_wup: int = 0
    rcv_wnd: int = 0
    window_clamp: int = 0
    rcv_ssthresh: int = 0
    rcvlowat: int = 1
    scaling_ratio: int              # the profile's initial_scaling_ratio()
    last_seg_size: int = 0
    rcvq_space: int = 0
    rcvq_seq: int = 0
    rcvq_time: int = 0
    rcv_rtt_us8: int = 0
    rcv_rtt_seq: int = 0
    rcv_rtt_time: int = 0
    rcv_rtt_last_tsecr: int = -1
    pred_ok: bool = False           # header prediction (tp->pred_flags != 0)
    last_oow_ack_ns: int = -(10 ** 12)
    selective_acks: list[list[int]] = field(default_factory=list)
    dsack: tuple[int, int] | None = None
    rcv_shutdown: bool = False
    bytes_received: int = 0
    read_untraced: int = 0          # bytes read since the last "read" trace row
    peer_released: int = 1 << 62    # see TcpSocket.on_peer_release()
    rcv_mwnd_seq: int = 0           # highest right edge ever advertised (7.1, 0e24d17bd966)


@dataclass(slots=True, kw_only=True)
class MemState:
    """Receive memory of struct sock (sk_rcvbuf, sk_rmem_alloc, sk_forward_alloc) and the
    two queues it pays for; the collapse counters of the cost model."""

    sk_rcvbuf: int                  # tcp_init_sock(): tcp_rmem[1]
    sk_rmem_alloc: int = 0
    sk_forward_alloc: int = 0
    wmem_charged: int = 0           # sk_wmem_queued as last charged to sk_forward_alloc
    rcvbuf_locked: bool = False     # SOCK_RCVBUF_LOCK
    receive_queue: deque[Skb] = field(default_factory=deque)
    ofo_queue: list[Skb] = field(default_factory=list)
    collapsed_bytes: int = 0        # payload bytes rewritten by tcp_collapse, ever
    collapses: int = 0
    collapse_ns_total: int = 0      # modelled time spent collapsing (cost model)
    collapse_ns_max: int = 0
    # sk->sk_bypass_prot_mem [6.19, 7c268eaeec63]: the socket opts out of the protocol's
    # global memory accounting (tcp_memory_allocated, tcp_mem pressure). Set once at
    # socket(2) from net.core.bypass_prot_mem and inherited by children. Only the flag is
    # modelled here: its effect on the host's TCP memory pool belongs to the host model.
    sk_bypass_prot_mem: bool = False
    # The socket owned by the user (sk_lock.owned; tcpsim/core/backlog.py): the application's
    # recvmsg/sendmsg holds the socket until this time (ns; 0 = not owned), and the truesize
    # of the skbs parked meanwhile in its backlog (sk_backlog.len, counted by tcp_space()).
    owned_until: int = 0
    sk_backlog_len: int = 0


@dataclass(slots=True, kw_only=True)
class AckState:
    """inet_connection_sock.icsk_ack (pending, quick, ato, lrcvtime, pingpong, rcv_mss),
    the delayed-ACK timer, the compressed-SACK hrtimer and tp->lsndtime."""

    ack_pending: int = 0
    ack_quick: int = 0
    ack_ato: int = 0
    ack_lrcvtime: int = 0
    ack_pingpong: int = 0
    delack_deadline: int = 0        # when the delayed-ACK timer runs (ns; 0 = not armed)
    delack_expires: int = 0         # the expiry it was armed for, in clock ticks (clock.py)
    ack_rcv_mss: int = 536
    dup_ack_counter: int = 0
    comp_rcv_nxt: int = -1
    compressed_ack: int = 0
    comp_sack_deadline: int = 0
    lsndtime: int = 0


@dataclass(slots=True, kw_only=True)
class SndState:
    """The send half of struct tcp_sock (sequence space, cwnd, RTT, pacing, TLP, loss
    state) and the icsk retransmit / persist timers."""

    iss: int = 0
    snd_una: int = 0
    snd_nxt: int = 0
    write_seq: int = 0
    snd_wnd: int = 0
    snd_wl1: int = 0
    max_window: int = 0
    bytes_acked: int = 0
    initcwnd: int = TCP_INIT_CWND
    snd_cwnd: int = TCP_INIT_CWND
    snd_ssthresh: int = INFINITE_SSTHRESH
    cwnd_cnt: int = 0
    cwnd_limited: bool = False      # tp->is_cwnd_limited
    max_packets_out: int = 0
    cwnd_usage_seq: int = 0
    srtt_us8: int = 0
    mdev_us: int = 0
    rto: int = TCP_TIMEOUT_INIT_NS
    # rtx_queue entries: [seq, end, last tx time, times retransmitted, lost, is FIN, sacked]
    # (sacked: the tcp_skb_cb->sacked bits SACKED_ACKED and EVER_RETRANS, recovery.py)
    rtx_queue: deque[list[int]] = field(default_factory=deque)
    write_queue: deque[int] = field(default_factory=deque)   # lengths of the unsent skbs
    snd_sml: int = 0                # end of the last small segment sent
    # the path hands the peer a multi-segment skb whole (TSO on loopback / a direct veth
    # pair: Device.gso_whole); else software GSO cuts it into MSS-sized wire segments
    gso_whole: bool = False
    pacing_rate: int = -1           # sk_pacing_rate, bytes/s; -1: ~0UL (unlimited)
    min_rtt_us: int = 0             # tcp_min_rtt(); 0: no sample yet
    wstamp_ns: int = 0              # tcp_wstamp_ns: when data was last sent
    tlp_deadline: int = 0           # ICSK_TIME_LOSS_PROBE armed until then (ns)
    tlp_high_seq: int = 0           # snd_nxt when the last probe went out; 0: none
    tlp_retrans: bool = False       # that probe was a retransmission
    lost_out: int = 0
    rto_deadline: int = 0
    probe_deadline: int = 0
    backoff: int = 0
    retransmits: int = 0
    probes_out: int = 0
    retrans_stamp: int = 0
    rcv_tstamp: int = 0
    dupacks: int = 0
    high_seq: int = 0
    in_recovery: bool = False
    in_loss: bool = False           # TCP_CA_Loss (after an RTO), not Recovery
    # the SACK scoreboard and RACK (tcpsim/core/recovery.py); NewReno leaves them at zero
    sacked_out: int = 0             # tp->sacked_out: segments SACKed, not yet cumulatively acked
    highest_sack: int = 0           # tcp_highest_sack_seq(): end of the highest SACKed; 0: none
    reord_seen: bool = False        # tp->reord_seen: a SACK or ACK showed reordering
    reordering: int = TCP_REORDERING  # tp->reordering: tcp_init_sock()'s net.ipv4.tcp_reordering
    rack_mstamp: int = 0            # tp->rack.mstamp: send time of the latest delivered (ns)
    rack_end_seq: int = 0           # tp->rack.end_seq
    rack_rtt_us: int = 0            # tp->rack.rtt_us
    rack_advanced: bool = False     # tp->rack.advanced
    reo_deadline: int = 0           # ICSK_TIME_REO_TIMEOUT armed until then (ns)
    prior_cwnd: int = 0             # tp->prior_cwnd: cwnd when the reduction began (PRR)
    prr_delivered: int = 0          # tp->prr_delivered
    prr_out: int = 0                # tp->prr_out
    rtx_next: int = 0
    sk_sndbuf: int                  # tcp_init_sock(): tcp_wmem[1]
    sock_nospace: bool = False      # SOCK_NOSPACE: a write found the send buffer full
    nodelay: bool = True
    fin_queued: bool = False
    fin_sent: bool = False
    snd_shutdown: bool = False
    # struct bictcp, CUBIC's icsk_ca_priv [tcp_cubic.c] (tcpsim/core/cong/cubic.py); Reno
    # leaves it at zero. Times: ca_last_time, ca_epoch_start in clock ticks (tcp_jiffies32);
    # ca_round_start, ca_last_ack in tcp_mstamp us; delays in us.
    ca_cnt: int = 0                 # segments acked per cwnd increment
    ca_last_max_cwnd: int = 0       # W_max
    ca_last_cwnd: int = 0
    ca_last_time: int = 0
    ca_origin_point: int = 0        # bic_origin_point
    ca_k: int = 0                   # bic_K, 2^-10 s
    ca_delay_min: int = 0
    ca_epoch_start: int = 0
    ca_ack_cnt: int = 0
    ca_tcp_cwnd: int = 0            # the TCP-friendly (Reno) estimate
    ca_sample_cnt: int = 0
    ca_found: bool = False          # HyStart found the exit
    ca_round_start: int = 0
    ca_end_seq: int = 0
    ca_last_ack: int = 0
    ca_curr_rtt: int = 0


def initial_state(kernel: Any, sysctl: Sysctls, *, mtu: int, initcwnd: int, nodelay: bool,
                  init_rwnd: int) -> tuple[ConnState, RcvState, MemState, AckState, SndState]:
    """The records of a new socket (tcp_init_sock() [tcp.c] and the route's metrics: MTU,
    initcwnd, initrwnd; TCP_NODELAY as the application sets it)."""
    return (
        ConnState(mtu=mtu, advmss=mtu - 40, init_rwnd=init_rwnd),
        RcvState(scaling_ratio=kernel.initial_scaling_ratio()),
        MemState(sk_rcvbuf=sysctl.tcp_rmem[1], sk_bypass_prot_mem=bool(getattr(sysctl, "bypass_prot_mem", 0))),
        AckState(),
        SndState(initcwnd=initcwnd, snd_cwnd=initcwnd, nodelay=nodelay,
                 sk_sndbuf=sysctl.tcp_wmem[1]),
    )
