"""Congestion control: the sender's pluggable algorithm, one small interface.

Models `struct tcp_congestion_ops` [include/net/tcp.h] and its registry [tcp_cong.c]: the
sender calls the socket's algorithm (`sk.ca`, chosen by `net.ipv4.tcp_congestion_control`
when the socket is built, tcp_assign_congestion_control()) at the kernel's hooks:

    init(sk)                 tcp_init_congestion_control(), when the connection is set up
    ssthresh(sk) -> int      the new slow-start threshold on a loss or a reduction
    cong_avoid(sk, acked)    cwnd growth on an ACK of new data (tcp_cong_avoid())
    pkts_acked(sk, rtt_us)   an RTT sample of the ACK (struct ack_sample's rtt_us)
    cwnd_event(sk, event)    CA_EVENT_TX_START (sending after the flight drained), ...
    set_state(sk, state)     tcp_set_ca_state(): only entering TCP_CA_Loss is reported
    sndbuf_expand(sk) -> int tcp_sndbuf_expand()'s factor: 2 when NULL (Reno, CUBIC; bbr's
                             3 is not modelled: the model has no bbr)

`undo_cwnd` is not part of the model: the sender has no undo (no DSACK/timestamp undo).
The algorithms' private state (struct bictcp, icsk_ca_priv) is kept in the sender's record
(`SndState.ca_*`), so snapshots and the lockstep tests see it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

# enum tcp_ca_event [include/net/tcp.h] (the ones the model raises)
CA_EVENT_TX_START = 0          # first transmit when no packets in flight
CA_EVENT_CWND_RESTART = 1      # congestion window restart after idle
# enum tcp_ca_state [include/net/tcp.h]
TCP_CA_OPEN, TCP_CA_DISORDER, TCP_CA_CWR, TCP_CA_RECOVERY, TCP_CA_LOSS = range(5)


class CongestionOps:
    """`struct tcp_congestion_ops`: the hooks the sender calls. The defaults do nothing,
    as an algorithm that leaves a hook NULL."""

    name = ""

    def init(self, sk: TcpSocket) -> None:
        """tcp_init_congestion_control(): the algorithm's private state for a new flow."""

    def ssthresh(self, sk: TcpSocket) -> int:
        """The slow-start threshold after a loss or a cwnd reduction."""
        raise NotImplementedError

    def loss_ssthresh(self, sk: TcpSocket) -> int:
        """The slow-start threshold tcp_enter_loss() sets (the RTO); ssthresh() unless the
        algorithm's model says otherwise."""
        return self.ssthresh(sk)

    def cong_avoid(self, sk: TcpSocket, acked: int) -> None:
        """Grow cwnd on an ACK that acknowledged `acked` segments."""
        raise NotImplementedError

    def pkts_acked(self, sk: TcpSocket, rtt_us: int) -> None:
        """An ACK's RTT sample (us; the kernel skips samples < 0, the model sends none)."""

    def cwnd_event(self, sk: TcpSocket, event: int) -> None:
        """tcp_ca_event(): CA_EVENT_TX_START, CA_EVENT_CWND_RESTART."""

    def set_state(self, sk: TcpSocket, state: int) -> None:
        """tcp_set_ca_state(): the socket enters ca_state `state`."""

    def sndbuf_expand(self, sk: TcpSocket) -> int:
        """The send buffer's windows per cwnd in tcp_sndbuf_expand() [tcp_input.c, 6.18]:
        2 when the algorithm leaves the hook NULL (Reno, CUBIC: fast recovery needs about
        1.7); bbr_sndbuf_expand() [tcp_bbr.c] would give 3."""
        return 2


def tcp_slow_start(sk: TcpSocket, acked: int) -> int:
    """tcp_slow_start() [tcp_cong.c, 5.15]: cwnd grows by the segments acked, up to
    ssthresh; returns the acked segments left over for congestion avoidance."""
    snd = sk.snd
    cwnd = min(snd.snd_cwnd + acked, snd.snd_ssthresh)
    acked -= cwnd - snd.snd_cwnd
    snd.snd_cwnd = cwnd
    return acked


def tcp_cong_avoid_ai(sk: TcpSocket, w: int, acked: int) -> None:
    """tcp_cong_avoid_ai() [tcp_cong.c, 5.15]: one more segment of cwnd per `w` segments
    acked (snd_cwnd_cnt counts them; a stale count >= w first pays one segment)."""
    snd = sk.snd
    if snd.cwnd_cnt >= w:
        snd.cwnd_cnt = 0
        snd.snd_cwnd += 1
    snd.cwnd_cnt += acked
    if snd.cwnd_cnt >= w:
        delta = snd.cwnd_cnt // w
        snd.cwnd_cnt -= delta * w
        snd.snd_cwnd += delta


def ca_ops(name: str) -> CongestionOps:
    """The registered algorithm `name` (tcp_ca_find()); KeyError when none has that name
    (the sysctl's validation refuses such a name before a socket is built)."""
    from tcpsim.core.cong.cubic import CUBIC
    from tcpsim.core.cong.reno import RENO
    return {"reno": RENO, "cubic": CUBIC}[name]


CA_NAMES = ("cubic", "reno")   # tcp_available_congestion_control of the model
