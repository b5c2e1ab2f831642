"""TcpSocket: one endpoint of a TCP connection as a sans-IO state machine.

Theory of operation
-------------------
Events come in as method calls, each with the current time `now` (integer ns):

    connect(now) / listen()          open actively / passively
    on_segment(now, seg)             a segment arrived from the link
    read(now, n) -> bytes read       the application called recv()
    write(now, n) -> bytes accepted  the application called send()
    on_timer(now)                    the earliest deadline in `next_deadline()` has passed

Actions come out as state the caller drains, never as I/O:

    outbox              segments to put on the link, in order
    next_deadline()     when on_timer() must be called next (0 = no timer armed)
    readable / writable the application should be woken to read / write
    error               set once the connection has died (ETIMEDOUT, ECONNRESET)
    sink.record(...)    one trace row per event (an injected recorder; may be a no-op)

Nothing here knows about simpy, files or clocks. The kernel's decisions (window selection,
admission, autotuning, ...) are delegated to `self.k`, the policy object of a kernel profile
(see tcpsim/policy.py and models/); this module and its mixins hold the mechanics.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from tcpsim.core.ack import AckMixin
from tcpsim.core.constants import (
    JIFFY_NS, NS_PER_MS, NS_PER_US, TCP_ATO_MIN_NS, TCP_HEADER_TS, TCP_INIT_CWND, TCP_MIN_MSS,
    TCP_MSS_DEFAULT, TCP_TIMEOUT_INIT_NS,
)
from tcpsim.core.devices import Device, LocalSender
from tcpsim.core.jiffies import JiffyClock
from tcpsim.core.memory import MemoryMixin
from tcpsim.core.mib import Mib
from tcpsim.core.receiver import ReceiveMixin
from tcpsim.core.segment import ACK, RST, SYN, Segment
from tcpsim.core.sender import SendMixin
from tcpsim.core.skb import Skb
from tcpsim.core.sysctl import Sysctls

CLOSED, LISTEN, SYN_SENT, SYN_RECV, ESTABLISHED = "CLOSED", "LISTEN", "SYN_SENT", "SYN_RECV", "ESTABLISHED"
CLOSE_WAIT, FIN_WAIT1, FIN_WAIT2, LAST_ACK, CLOSING, TIME_WAIT = (
    "CLOSE_WAIT", "FIN_WAIT1", "FIN_WAIT2", "LAST_ACK", "CLOSING", "TIME_WAIT")
_UNARMED = 1 << 62                  # sorts after every real deadline (ns)
SYNCHRONIZED = frozenset({ESTABLISHED, CLOSE_WAIT, FIN_WAIT1, FIN_WAIT2, LAST_ACK, CLOSING, TIME_WAIT})


class TraceSink(Protocol):
    """Where the socket reports trace rows; see tcpsim/trace/recorder.py."""

    def record(self, sk: "TcpSocket", event: str, detail: str, seg: Segment | None = None,
               truesize: int = -1, reason: str = "", length: int = -1, cost: int = -1) -> None: ...


class NullSink:
    """A sink that keeps nothing."""

    def record(self, *args: Any, **kwargs: Any) -> None:
        return None


class TcpSocket(MemoryMixin, ReceiveMixin, AckMixin, SendMixin):
    """One TCP endpoint: receive half, ACK machinery and send half share one state record,
    as in `struct tcp_sock`."""

    __slots__ = (
        "name", "k", "sysctl", "dev", "sink", "mib", "state", "now", "tcp_mstamp",
        "outbox", "readable", "writable", "error", "accepted", "eof",
        # options negotiated
        "wscale_ok", "sack_ok", "ts_ok", "rcv_wscale", "snd_wscale", "tcp_header_len",
        "ts_recent", "rcv_tsecr", "mtu", "advmss", "mss_cache", "peer_mss", "init_rwnd",
        "syn_tx_ns",
        # receive half (struct tcp_sock / struct sock names)
        "irs", "rcv_nxt", "copied_seq", "rcv_wup", "rcv_wnd", "window_clamp", "rcv_ssthresh",
        "sk_rcvbuf", "sk_rmem_alloc", "sk_forward_alloc", "rcvbuf_locked", "rcvlowat",
        "receive_queue", "ofo_queue", "scaling_ratio", "last_seg_size",
        "rcvq_space", "rcvq_seq", "rcvq_time", "rcv_rtt_us8", "rcv_rtt_seq", "rcv_rtt_time",
        "rcv_rtt_last_tsecr", "pred_ok", "last_oow_ack_ns", "selective_acks", "dsack",
        "rcv_shutdown", "memory_pressure", "bytes_received", "read_untraced", "peer_released",
        "collapsed_bytes", "collapse_ns_total", "collapse_ns_max", "collapses",
        # ACK state (icsk_ack)
        "ack_pending", "ack_quick", "ack_ato", "ack_lrcvtime", "ack_pingpong",
        "delack_deadline", "ack_rcv_mss", "dup_ack_counter", "comp_rcv_nxt", "compressed_ack",
        "comp_sack_deadline", "lsndtime", "delack_expires",
        # the kernel's tick clock (None: tcpsim's default 1 ms clock with exact timers)
        "jc",
        # send half
        "iss", "snd_una", "snd_nxt", "write_seq", "snd_wnd", "snd_wl1", "max_window",
        "bytes_acked", "snd_cwnd", "snd_ssthresh", "cwnd_cnt", "srtt_us8", "mdev_us", "rto",
        "rtx_queue", "rto_deadline", "probe_deadline", "backoff", "retransmits", "probes_out",
        "retrans_stamp", "rcv_tstamp", "dupacks", "high_seq", "in_recovery", "in_loss", "rtx_next",
        "sk_sndbuf", "nodelay", "initcwnd", "fin_queued", "fin_sent", "snd_shutdown",
        "cwnd_limited", "max_packets_out", "cwnd_usage_seq", "lost_out", "write_queue", "snd_sml",
        "pacing_rate", "min_rtt_us", "wstamp_ns", "tlp_deadline", "tlp_high_seq", "tlp_retrans",
    )

    def __init__(self, kernel: Any, sysctl: Sysctls | None = None, device: Device | None = None,
                 *, name: str = "rcv", sink: TraceSink | None = None, mtu: int = 1500,
                 initcwnd: int = TCP_INIT_CWND, nodelay: bool = True, init_rwnd: int = 0,
                 hz: int = 0) -> None:
        self.name = name
        # hz = 0: the model's historic clock (1 ms jiffies for the ACK timing, timers fire at
        # their exact deadline); else a kernel built with CONFIG_HZ = hz, timer wheel included
        # (tcpsim/core/jiffies.py).
        self.jc = JiffyClock(hz) if hz else None
        self.k = kernel
        self.sysctl = sysctl or kernel.default_sysctls()
        self.dev = device or LocalSender()
        self.sink = sink or NullSink()
        self.mib = Mib()
        self.state = CLOSED
        self.now = 0
        self.tcp_mstamp = 0
        self.outbox: list[Segment] = []
        self.readable = False
        self.writable = False
        self.error = ""
        self.accepted = True
        self.eof = False
        self.mtu = mtu
        self.advmss = mtu - 40
        self.mss_cache = TCP_MSS_DEFAULT
        self.peer_mss = TCP_MSS_DEFAULT
        self.init_rwnd = init_rwnd
        self.wscale_ok = self.sack_ok = self.ts_ok = False
        self.rcv_wscale = self.snd_wscale = 0
        self.tcp_header_len = 20
        self.ts_recent = 0
        self.rcv_tsecr = -1
        self.syn_tx_ns = -1         # when our SYN / SYN-ACK went out (the handshake's RTT)
        self._init_receive_state()
        self._init_ack_state()
        self._init_send_state(initcwnd, nodelay)

    def _init_receive_state(self) -> None:
        s = self.sysctl
        self.irs = 0
        self.rcv_nxt = self.copied_seq = self.rcv_wup = 0
        self.rcv_wnd = 0
        self.window_clamp = 0
        self.rcv_ssthresh = 0
        self.sk_rcvbuf = s.tcp_rmem[1]          # tcp_init_sock()
        self.sk_rmem_alloc = 0
        self.sk_forward_alloc = 0
        self.rcvbuf_locked = False
        self.rcvlowat = 1
        self.receive_queue: deque[Skb] = deque()
        self.ofo_queue: list[Skb] = []
        self.scaling_ratio = self.k.initial_scaling_ratio()
        self.last_seg_size = 0
        self.rcvq_space = 0
        self.rcvq_seq = 0
        self.rcvq_time = 0
        self.rcv_rtt_us8 = 0
        self.rcv_rtt_seq = 0
        self.rcv_rtt_time = 0
        self.rcv_rtt_last_tsecr = -1
        self.pred_ok = False
        self.last_oow_ack_ns = -(10 ** 12)
        self.selective_acks: list[list[int]] = []
        self.dsack: tuple[int, int] | None = None
        self.rcv_shutdown = False
        self.memory_pressure = False
        self.bytes_received = 0
        self.read_untraced = 0
        self.peer_released = 1 << 62     # see on_peer_release()
        self.collapsed_bytes = 0           # payload bytes rewritten by tcp_collapse, ever
        self.collapses = 0
        self.collapse_ns_total = 0         # modelled time spent collapsing (cost model)
        self.collapse_ns_max = 0

    # -- socket options ---------------------------------------------------------------------

    def set_rcvbuf(self, val: int) -> None:
        """setsockopt(SO_RCVBUF): rcvbuf = 2 * min(val, rmem_max), locked against autotuning.
        Models sk_setsockopt() -> __sock_set_rcvbuf() [net/core/sock.c]."""
        val = min(val, self.sysctl.rmem_max)
        self.sk_rcvbuf = max(val * 2, 4608)        # SOCK_MIN_RCVBUF
        self.rcvbuf_locked = True
        if self.state in SYNCHRONIZED:
            self.k.on_rcvbuf_set(self)

    def set_window_clamp(self, val: int) -> None:
        """setsockopt(TCP_WINDOW_CLAMP) -> tcp_set_window_clamp() [tcp.c]."""
        self.k.set_window_clamp(self, val)

    # -- opening ----------------------------------------------------------------------------

    def listen(self) -> None:
        """Passive open: wait for a SYN."""
        self.state = LISTEN

    def connect(self, now: int) -> None:
        """Active open: models tcp_connect_init() + tcp_connect() [tcp_output.c]."""
        self._clock(now)
        self.state = SYN_SENT
        s = self.sysctl
        self.wscale_ok = bool(s.tcp_window_scaling)
        if self.rcvbuf_locked and (self.window_clamp > self.full_space() or self.window_clamp == 0):
            self.window_clamp = self.full_space()
        self.k.select_initial_window(self, self.full_space(), self.advmss)
        self.k.init_rcv_ssthresh(self)
        self.iss = self.snd_una = 0
        self.snd_nxt = self.write_seq = 1
        self._emit(self.make_syn())
        self.syn_tx_ns = self.now                   # the SYN skb's send time
        self.rto = TCP_TIMEOUT_INIT_NS
        self.rto_deadline = self.reset_xmit_timer(self.rto)

    def _on_syn(self, seg: Segment) -> None:
        """LISTEN + SYN: models tcp_openreq_init_rwin() and tcp_make_synack()."""
        s = self.sysctl
        self._learn_options(seg)
        self.irs = seg.seq
        self.rcv_nxt = self.copied_seq = self.rcv_wup = seg.seq + 1
        mss = self.advmss - (TCP_HEADER_TS if self.ts_ok else 0)
        full = self.full_space()
        if self.rcvbuf_locked and (self.window_clamp > full or self.window_clamp == 0):
            self.window_clamp = full
        self.k.select_initial_window(self, self.full_space(), mss)
        self.k.init_rcv_ssthresh(self)
        if not self.wscale_ok:
            self.rcv_wscale = 0
        self.iss = 0
        self.snd_una = 0
        self.retransmits = 0                        # a new request
        self.snd_nxt = self.write_seq = 1
        self.state = SYN_RECV
        self._emit(self.make_synack())
        self.syn_tx_ns = self.now                   # tcp_rsk(req)->snt_synack
        self.rto = TCP_TIMEOUT_INIT_NS
        self.rto_deadline = self.reset_xmit_timer(self.rto)

    def close(self, now: int) -> None:
        """close(): models tcp_close() [tcp.c]. Data received and not read (a FIN aside)
        turns it into an abort: the socket goes to CLOSE and tcp_send_active_reset() sends
        RST|ACK at snd_nxt (TCPAbortOnClose). Before the connection exists there is nothing
        to send. Otherwise a FIN follows the data, as for shutdown(SHUT_WR); what the orphaned
        socket does afterwards (FIN_WAIT2 timeout, reset on new data) is not modelled."""
        self._clock(now)
        if self.state in (CLOSED, LISTEN, SYN_SENT):
            self._closed()
            return
        unread = self.rcv_nxt - self.copied_seq - (1 if self.rcv_shutdown else 0)
        if unread > 0:
            self.mib.TCPAbortOnClose += 1
            self._closed()
            self._emit(self.make_segment(self.snd_nxt, 0, RST | ACK))
            return
        self.shutdown_write(now)

    def _closed(self) -> None:
        """tcp_set_state(TCP_CLOSE) without an error for the application: timers off."""
        self.state = CLOSED
        self.rto_deadline = self.probe_deadline = self.delack_deadline = 0
        self.comp_sack_deadline = self.tlp_deadline = 0

    def make_syn(self) -> Segment:
        """Our SYN (tcp_connect() [tcp_output.c]), first or retransmitted."""
        s = self.sysctl
        return Segment(self.iss, 0, SYN, 0, min(self.rcv_wnd, 65535), mss=self.advmss,
                       wscale=self.rcv_wscale if s.tcp_window_scaling else -1,
                       sack_ok=bool(s.tcp_sack), tsval=self._tsval() if s.tcp_timestamps else -1,
                       tsecr=0 if s.tcp_timestamps else -1)

    def make_synack(self) -> Segment:
        """Our SYN-ACK (tcp_make_synack() [tcp_output.c]), first or retransmitted."""
        return Segment(self.iss, 0, SYN | ACK, self.rcv_nxt, min(self.rcv_wnd, 65535),
                       mss=self.advmss, wscale=self.rcv_wscale if self.wscale_ok else -1,
                       sack_ok=self.sack_ok, tsval=self._tsval() if self.ts_ok else -1,
                       tsecr=self.ts_recent if self.ts_ok else -1)

    def _learn_options(self, seg: Segment) -> None:
        """Options of a SYN / SYN-ACK: what both sides agreed on."""
        s = self.sysctl
        self.wscale_ok = seg.wscale >= 0 and bool(s.tcp_window_scaling)
        self.snd_wscale = min(seg.wscale, 14) if self.wscale_ok else 0
        self.sack_ok = seg.sack_ok and bool(s.tcp_sack)
        self.ts_ok = seg.tsval >= 0 and bool(s.tcp_timestamps)
        if self.ts_ok:
            self.ts_recent = seg.tsval
        self.peer_mss = seg.mss or TCP_MSS_DEFAULT

    def _on_synack(self, seg: Segment) -> None:
        """SYN_SENT + SYN-ACK: models tcp_rcv_synsent_state_process() + tcp_finish_connect()."""
        if not seg.flags & ACK or seg.ack != self.snd_nxt:
            return
        self._learn_options(seg)
        if not self.wscale_ok:
            self.rcv_wscale = 0
            self.window_clamp = min(self.window_clamp, 65535)
        self.irs = seg.seq
        self.rcv_nxt = self.copied_seq = self.rcv_wup = seg.seq + 1
        self.snd_una = seg.ack
        self.snd_wnd = seg.win                      # SYN-ACK window is never scaled
        self.snd_wl1 = seg.seq
        self.max_window = self.snd_wnd
        self.rto_deadline = 0
        self._handshake_rtt(seg)
        self._established(active=True)
        # tcp_ack()'s tcp_cong_control() set the pacing rate before tcp_init_transfer():
        # with tcp_init_sock()'s cwnd, and the MSS of tcp_connect_init() (the same here)
        self._update_pacing_rate(TCP_INIT_CWND)
        self.send_ack()

    def _on_handshake_ack(self, seg: Segment) -> bool:
        """SYN_RECV + ACK of our SYN-ACK: the child socket is established."""
        if not seg.flags & ACK or seg.ack != self.snd_nxt:
            return False
        self.snd_una = seg.ack
        self.snd_wnd = seg.win << self.snd_wscale
        self.snd_wl1 = seg.seq
        self.max_window = self.snd_wnd
        self.rto_deadline = 0
        self._handshake_rtt(seg)
        self._established(active=False)
        self._update_pacing_rate()                  # tcp_rcv_state_process(), TCP_SYN_RECV
        return True

    def _handshake_rtt(self, seg: Segment) -> None:
        """The handshake's RTT sample, taken before the connection is established: the
        active side's tcp_ack() acks the SYN and tcp_clean_rtx_queue() times it from the
        SYN's send time; the passive side's tcp_check_req() runs tcp_synack_rtt_meas()
        from the SYN-ACK's (tcp_minisocks.c). A retransmitted handshake segment gives no
        such sample (Karn); then only the timestamp echo can, in tcp_ack_update_rtt()
        [tcp_input.c]. So `ss -ti` shows an rtt, and the RTO, the loss probe, TSO sizing
        and deferral work from it, before the first data is acknowledged."""
        if self.srtt_us8:
            return
        if not self.retransmits and self.syn_tx_ns >= 0:
            sample = max(1, (self.now - self.syn_tx_ns) // NS_PER_US)
        elif self.ts_ok and seg.tsecr > 0 and self._tsval() >= seg.tsecr:
            sample = max(self._tsval() - seg.tsecr, 1) * 1000     # tcp_rtt_tsopt_us()
        else:
            return
        self._rtt_estimator(sample)

    def _established(self, active: bool) -> None:
        """Models tcp_finish_connect()/tcp_init_transfer(): MSS, buffers, timers.
        With timestamps advmss loses the option's 12 bytes on both sides (the passive side
        too: its rcv_ssthresh grows by 2 * 1448 per segment, measured on 6.18 in
        docs/validation.md)."""
        if self.ts_ok:
            self.tcp_header_len = 32
            self.advmss -= TCP_HEADER_TS
        self.mss_cache = min(self.peer_mss, self.mtu - 40) - (TCP_HEADER_TS if self.ts_ok else 0)
        self.ack_rcv_mss = max(TCP_MIN_MSS, min(self.advmss, self.mss_cache, self.rcv_wnd // 2,
                                                TCP_MSS_DEFAULT))  # tcp_initialize_rcv_mss()
        self.state = ESTABLISHED
        self.retransmits = 0                        # the handshake's, counted for Karn only
        self.rcvq_time = self.tcp_mstamp
        self.rcvq_seq = self.copied_seq
        self.k.init_buffer_space(self)
        self.sndbuf_expand()
        jc = self.jc
        self.ack_lrcvtime = self.now if jc is None else jc.tick_ns(jc.jiffies(self.now))
        self.rcv_tstamp = self.now
        self.writable = True

    # -- segment arrival --------------------------------------------------------------------

    def on_segment(self, now: int, seg: Segment) -> None:
        """A segment arrived from the link."""
        self._clock(now)
        state = self.state
        if state in SYNCHRONIZED:
            self.rcv_established(seg)
        elif state == LISTEN:
            if seg.flags & SYN and not seg.flags & (ACK | RST):
                self._on_syn(seg)
        elif state == SYN_SENT:
            if seg.flags & SYN:
                self._on_synack(seg)
        elif state == SYN_RECV:
            if seg.flags & RST:
                self.state = LISTEN
            elif seg.flags & SYN and not seg.flags & ACK:
                self.resend_synack()                # the peer's SYN again: our SYN-ACK was lost
            elif self._on_handshake_ack(seg) and (seg.len or seg.flags & 1):
                self.rcv_established(seg)

    def on_peer_release(self, seq: int) -> None:
        """The peer freed its copies of our received data below `seq` (it processed an
        ACK). On veth/loopback the receiver's skb shares its head with the sender's
        retransmit-queue skb, and skb_try_coalesce() refuses a cloned skb: only once the
        sender lets go can data be coalesced into it. Devices that build their own skbs
        never call this (peer_released stays infinite)."""
        self.peer_released = seq

    def on_timer(self, now: int) -> None:
        """Run every timer whose deadline has passed (delayed ACK, loss probe, RTO,
        persist)."""
        self._clock(now)
        if self.delack_deadline and self.delack_deadline <= now:
            self.delack_deadline = 0
            self.delack_timer()
        if self.comp_sack_deadline and self.comp_sack_deadline <= now:
            self.comp_sack_deadline = 0
            self.compressed_ack_timer()
        if self.tlp_deadline and self.tlp_deadline <= now:
            self.tlp_deadline = 0
            self.send_loss_probe()
        if self.rto_deadline and self.rto_deadline <= now:
            self.rto_deadline = 0
            self.tlp_deadline = 0
            self.retransmit_timer()
        if self.probe_deadline and self.probe_deadline <= now:
            self.probe_deadline = 0
            self.probe_timer()

    def next_deadline(self) -> int:
        """Earliest armed timer, or 0 when none is armed (a deadline of 0 is unarmed)."""
        d = 0
        for t in (self.delack_deadline, self.comp_sack_deadline, self.tlp_deadline,
                  self.rto_deadline, self.probe_deadline):
            if t and (not d or t < d):
                d = t
        return d

    def reset_xmit_timer(self, when_ns: int) -> int:
        """When an icsk timer armed now for `when_ns` runs (inet_csk_reset_xmit_timer ->
        sk_reset_timer(jiffies + when)): now + when with the default clock; with a kernel
        tick, the timer wheel's bucket (JiffyClock.arm). `when_ns` is a whole number of
        jiffies there (rto, probe0 backoff, TCP_TIMEOUT_INIT)."""
        jc = self.jc
        if jc is None:
            return self.now + when_ns
        return jc.arm(self.now, jc.to_jiffies(when_ns))[1]

    def jiffies_up(self, d_ns: int) -> int:
        """A duration rounded up to whole jiffies of this kernel's tick, in ns
        (usecs_to_jiffies() and back): 1 ms jiffies with the default clock."""
        jc = self.jc
        if jc is None:
            return -(-d_ns // JIFFY_NS) * JIFFY_NS
        return jc.tick_ns(jc.usecs_to_jiffies(-(-d_ns // NS_PER_US)))

    # -- helpers ----------------------------------------------------------------------------

    def _clock(self, now: int) -> None:
        self.now = now
        self.tcp_mstamp = now // NS_PER_US

    def _tsval(self) -> int:
        """TCP timestamp clock: milliseconds (tcp_time_stamp_ms) [6.x], offset by one so
        that a timestamp is never 0 (which Linux reads as 'no echo')."""
        return self.now // NS_PER_MS + 1

    def _emit(self, seg: Segment) -> None:
        seg.tx_ns = self.now
        self.outbox.append(seg)
        self.sink.record(self, "tx", "", seg)

    def abort(self, err: str) -> None:
        """The connection dies (tcp_write_err / tcp_reset): no more segments, timers off."""
        self.error = err
        self._closed()
        self.readable = self.writable = True
        self.sink.record(self, "state", err)

    def take_outbox(self) -> list[Segment]:
        """Hand the queued segments to the caller (drains the outbox)."""
        out = self.outbox
        self.outbox = []
        return out

    def recv_q(self) -> int:
        """Bytes queued and not read (Recv-Q in ss)."""
        return self.rcv_nxt - self.copied_seq

    def ato_min(self) -> int:
        return TCP_ATO_MIN_NS

    def ss_line(self) -> str:
        """An `ss -tmi`-style snapshot of this socket."""
        rtt = self.rcv_rtt_us8 / 8000
        srtt = self.srtt_us8 / 8000
        return (f"{self.state} Recv-Q {self.recv_q()} Send-Q {self.write_seq - self.snd_una} "
                f"skmem:(r{self.sk_rmem_alloc},rb{self.sk_rcvbuf},t0,tb{self.sk_sndbuf},"
                f"f{self.sk_forward_alloc}) wscale:{self.snd_wscale},{self.rcv_wscale} "
                f"rtt:{srtt:.3f} rto:{self.rto // NS_PER_MS} mss:{self.mss_cache} "
                f"rcvmss:{self.ack_rcv_mss} advmss:{self.advmss} cwnd:{self.snd_cwnd} "
                f"bytes_received:{self.bytes_received} rcv_rtt:{rtt:.3f} "
                f"rcv_space:{self.rcvq_space} rcv_ssthresh:{self.rcv_ssthresh} "
                f"rcv_wnd:{self.rcv_wnd} window_clamp:{self.window_clamp}")
