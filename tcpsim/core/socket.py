"""TcpSocket: one endpoint of a TCP connection as a sans-IO state machine.

Theory of operation
-------------------
Events come in as method calls, each with the current time `now` (integer ns):

    connect(now) / listen()          open actively / passively
    on_segment(now, seg)             a segment arrived from the link
    read(now, n) -> bytes read       the application called recv()
    write(now, n) -> bytes accepted  the application called send()
    hold(now, ns)                    the call just made holds the socket for ns more
                                     (socket owned by user: arrivals go to the backlog,
                                     tcpsim/core/backlog.py)
    on_timer(now)                    the earliest deadline in `next_deadline()` has passed

Actions come out as state the caller drains, never as I/O:

    take_outbox()       segments to put on the link, in order (drains them)
    next_deadline()     when on_timer() must be called next (0 = no timer armed)
    recv_q()            bytes received and not yet read (ss's Recv-Q)
    snapshot()          every field of every state record, the queues, MIB, flags (plain
                        data, the same dict the native engine returns: core/snapshot.py)
    take_events()       the events recorded since the last call, when the sink is an
                        EventBuffer (drains them)
    conn.state          the connection state, a TcpState (tcpsim/core/state.py)
    readable / writable the application should be woken to read / write
    error               set once the connection has died (ETIMEDOUT, ECONNRESET)
    sink.record(event)  one TraceEvent per event (a flat tuple, tcpsim/trace/schema.py), to
                        an injected recorder; no sink, no events

Nothing here knows about simpy, files or clocks. The kernel's decisions (window selection,
admission, autotuning, ...) are delegated to `self.k`, the policy object of a kernel profile
(see tcpsim/policy.py and models/); this module and its mixins hold the mechanics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from tcpsim.core.ack import AckMixin
from tcpsim.core.backlog import BacklogMixin
from tcpsim.core.constants import (
    NS_PER_MS, NS_PER_US, TCP_ATO_MIN_NS, TCP_HEADER_TS, TCP_INIT_CWND, TCP_MIN_MSS,
    TCP_MSS_DEFAULT, TCP_TIMEOUT_INIT_NS,
)
from tcpsim.core.devices import Device, LocalSender
from tcpsim.core.clock import Clock, make_clock
from tcpsim.core.cong import CongestionOps, ca_ops
from tcpsim.core.memory import MemoryMixin
from tcpsim.core.mib import Mib
from tcpsim.core.pagefrag import PageFrag
from tcpsim.core.memcg import MemCgroup
from tcpsim.core.protmem import ProtoMemory
from tcpsim.core.receiver import ReceiveMixin
from tcpsim.core.recovery import RecoveryMixin
from tcpsim.core.segment import ACK, RST, SYN, Segment
from tcpsim.core.sender import SendMixin
from tcpsim.core.state import (
    CLOSED, ESTABLISHED, LISTEN, SYN_RECV, SYN_SENT, SYNCHRONIZED, AckState, ConnState, MemState,
    RcvState, SndState, TcpState, initial_state,
)
from tcpsim.core.sysctl import Sysctls

if TYPE_CHECKING:
    from tcpsim.core.skb import Skb
    from tcpsim.policy import KernelPolicy
    from tcpsim.trace.schema import TraceEvent




class TraceSink(Protocol):
    """Where the socket reports its events; see tcpsim/trace/recorder.py."""

    def wants(self, sock: str) -> bool:
        """Whether the events of the socket named `sock` are wanted (asked once, when the
        socket is made: a socket whose events nobody wants builds none)."""

    def record(self, event: TraceEvent) -> None:
        """One event: a flat tuple in EVENT_FIELDS order (tcpsim/trace/schema.py)."""


class EventBuffer:
    """A trace sink that keeps every event of its socket until `TcpSocket.take_events()`
    drains them (the pull form of the sink, which the native socket offers too)."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []

    def wants(self, sock: str) -> bool:
        return True

    def record(self, event: TraceEvent) -> None:
        self.events.append(event)

    def take(self) -> list[TraceEvent]:
        out, self.events = self.events, []
        return out


class TcpSocket(MemoryMixin, ReceiveMixin, AckMixin, SendMixin, RecoveryMixin, BacklogMixin):
    """One TCP endpoint: receive half, ACK machinery and send half share one state record,
    as in `struct tcp_sock`."""

    __slots__ = (
        "name", "k", "sysctl", "dev", "sink", "mib", "now", "tcp_mstamp",
        "outbox", "readable", "writable", "error", "accepted", "eof",
        # the state records (tcpsim/core/state.py)
        "conn", "rcv", "mem", "ack", "snd",
        # the kernel's tick clock (tcpsim/core/clock.py)
        "clock",
        # the congestion control, net.ipv4.tcp_congestion_control (tcpsim/core/cong)
        "ca",
        # the host's TCP pool (tcpsim/core/protmem.py) and the CPU charging it
        "proto", "cpu", "memcg",
        # the socket backlog (tcpsim/core/backlog.py): the parked (segment, skb) pairs,
        # __release_sock() running, TCP_ACK_DEFERRED
        "backlog", "releasing", "ack_deferred",
        # the writer's page frag (tcpsim/core/pagefrag.py)
        "pfrag",
    )
    name: str
    k: KernelPolicy                     # the profile's policy: an era, patches first
    sysctl: Sysctls
    dev: Device
    sink: TraceSink | None
    mib: Mib
    now: int
    tcp_mstamp: int
    outbox: list[Segment]
    readable: bool
    writable: bool
    error: str
    accepted: bool
    eof: bool
    conn: ConnState
    rcv: RcvState
    mem: MemState
    ack: AckState
    snd: SndState
    clock: Clock
    ca: CongestionOps
    proto: ProtoMemory
    cpu: int
    memcg: MemCgroup | None
    backlog: list[tuple[Segment, Skb]]
    releasing: bool
    ack_deferred: bool
    pfrag: PageFrag

    def __init__(self, kernel: Any, sysctl: Sysctls | None = None, device: Device | None = None,
                 *, name: str = "rcv", sink: TraceSink | None = None, mtu: int = 1500,
                 initcwnd: int = TCP_INIT_CWND, nodelay: bool = True, init_rwnd: int = 0,
                 hz: int = 0, clock: Clock | None = None) -> None:
        self.name = name
        # hz = 0: the model's historic clock (1 ms jiffies for the ACK timing, timers fire at
        # their exact deadline); else a kernel built with CONFIG_HZ = hz, timer wheel included
        # (tcpsim/core/clock.py). A clock given explicitly wins.
        self.clock = clock or make_clock(hz)
        self.k = kernel
        self.sysctl = sysctl or kernel.default_sysctls()
        self.ca = ca_ops(self.sysctl.tcp_congestion_control)   # tcp_assign_congestion_control()
        self.dev = device or LocalSender()
        self.sink = sink if sink is not None and sink.wants(name) else None
        self.mib = Mib()
        self.now = 0
        self.tcp_mstamp = 0
        self.outbox = []
        self.readable = False
        self.writable = False
        self.error = ""
        self.accepted = True
        self.eof = False
        self.conn, self.rcv, self.mem, self.ack, self.snd = initial_state(
            kernel, self.sysctl, mtu=mtu, initcwnd=initcwnd, nodelay=nodelay,
            init_rwnd=init_rwnd)
        # tcp_init_sock() -> sk_sockets_allocated_inc(): a private pool built from the
        # socket's sysctls, so a single connection behaves as on a host of its own
        self.proto = ProtoMemory(self.sysctl.tcp_mem, 1, self.sysctl.mem_pcpu_rsv)
        self.cpu = 0
        self.proto.sockets_allocated_add(self.cpu, 1)
        self.memcg = None                 # no memory cgroup: the host's own sockets get one
        self.backlog = []
        self.releasing = False
        self.ack_deferred = False
        self.pfrag = PageFrag()

    def set_proto(self, proto: ProtoMemory, cpu: int = 0) -> None:
        """Charge this socket's memory to the pool `proto` (shared by a host's sockets) on
        the CPU `cpu` from now on: the socket leaves its pool's `sockets_allocated` for the
        new one's, and the pages it holds move with it."""
        if not 0 <= cpu < proto.ncpus:
            raise ValueError(f"set_proto: cpu {cpu} is not one of the pool's "
                             f"{proto.ncpus} CPUs")
        pages = self.charged_pages()
        self.proto.memory_allocated_sub(self.cpu, pages)
        self.proto.sockets_allocated_add(self.cpu, -1)
        proto.sockets_allocated_add(cpu, 1)
        proto.memory_allocated_add(cpu, pages)
        self.proto, self.cpu = proto, cpu

    def set_memcg(self, memcg: MemCgroup) -> None:
        """Make this socket belong to the memory cgroup `memcg` (core/memcg.py): as
        inet_csk_accept() does for an accepted socket [net/ipv4/inet_connection_sock.c,
        6.1-6.18] -- mem_cgroup_sk_alloc(), then the pages it already holds charged with
        __GFP_NOFAIL."""
        self.memcg = memcg
        pages = self.charged_pages()
        if pages:
            memcg.charge_skmem(pages, self.now, nofail=True, blocking=True)

    def release_memory(self, now: int) -> None:
        """The socket is destroyed: models the memory part of inet_csk_destroy_sock() /
        tcp_v4_destroy_sock() [net/ipv4/inet_connection_sock.c, tcp_ipv4.c]: its queues are
        purged (sk_stream_kill_queues, tcp_write_queue_purge, the OFO queue), every page it
        held goes back to the pool (__sk_mem_reduce_allocated, which may end the host's
        pressure) and it leaves sockets_allocated. For a host's churn: call once, when the
        connection is gone for good; the socket is not used afterwards."""
        self._clock(now)
        pages = self.charged_pages()
        mem = self.mem
        mem.receive_queue.clear()
        mem.ofo_queue.clear()
        mem.sk_rmem_alloc = mem.sk_forward_alloc = mem.wmem_charged = 0
        self.mem_reduce_allocated(pages)
        self.proto.sockets_allocated_add(self.cpu, -1)

    # -- socket options ---------------------------------------------------------------------

    def set_rcvbuf(self, val: int) -> None:
        """setsockopt(SO_RCVBUF): rcvbuf = 2 * min(val, rmem_max), locked against autotuning.
        Models sk_setsockopt() -> __sock_set_rcvbuf() [net/core/sock.c]."""
        val = min(val, self.sysctl.rmem_max)
        self.mem.sk_rcvbuf = max(val * 2, 4608)        # SOCK_MIN_RCVBUF
        self.mem.rcvbuf_locked = True
        if self.conn.state in SYNCHRONIZED:
            self.k.on_rcvbuf_set(self)

    def set_window_clamp(self, val: int) -> None:
        """setsockopt(TCP_WINDOW_CLAMP) -> tcp_set_window_clamp() [tcp.c]."""
        self.k.set_window_clamp(self, val)

    # -- opening ----------------------------------------------------------------------------

    def listen(self) -> None:
        """Passive open: wait for a SYN."""
        self.conn.state = LISTEN

    def connect(self, now: int) -> None:
        """Active open: models tcp_connect_init() + tcp_connect() [tcp_output.c]."""
        conn, rcv, snd = self.conn, self.rcv, self.snd
        self._clock(now)
        conn.state = SYN_SENT
        s = self.sysctl
        conn.wscale_ok = bool(s.tcp_window_scaling)
        clamp = rcv.window_clamp
        if self.mem.rcvbuf_locked and (clamp > self.full_space() or clamp == 0):
            rcv.window_clamp = self.full_space()
        self.k.select_initial_window(self, self.full_space(), conn.advmss)
        self.k.init_rcv_ssthresh(self)
        snd.iss = snd.snd_una = 0
        snd.snd_nxt = snd.write_seq = 1
        self._emit(self.make_syn())
        conn.syn_tx_ns = self.now                   # the SYN skb's send time
        snd.rto = TCP_TIMEOUT_INIT_NS
        snd.rto_deadline = self.reset_xmit_timer(snd.rto)

    def _on_syn(self, seg: Segment) -> None:
        """LISTEN + SYN: models tcp_openreq_init_rwin() and tcp_make_synack()."""
        conn, rcv, snd = self.conn, self.rcv, self.snd
        s = self.sysctl
        self._learn_options(seg)
        rcv.irs = seg.seq
        rcv.rcv_nxt = rcv.copied_seq = rcv.rcv_wup = seg.seq + 1
        mss = conn.advmss - (TCP_HEADER_TS if conn.ts_ok else 0)
        full = self.full_space()
        if self.mem.rcvbuf_locked and (rcv.window_clamp > full or rcv.window_clamp == 0):
            rcv.window_clamp = full
        self.k.select_initial_window(self, self.full_space(), mss)
        self.k.init_rcv_ssthresh(self)
        if not conn.wscale_ok:
            conn.rcv_wscale = 0
        snd.iss = 0
        snd.snd_una = 0
        snd.retransmits = 0                        # a new request
        snd.snd_nxt = snd.write_seq = 1
        conn.state = SYN_RECV
        self._emit(self.make_synack())
        conn.syn_tx_ns = self.now                   # tcp_rsk(req)->snt_synack
        snd.rto = TCP_TIMEOUT_INIT_NS
        snd.rto_deadline = self.reset_xmit_timer(snd.rto)

    def close(self, now: int) -> None:
        """close(): models tcp_close() [tcp.c]. Data received and not read (a FIN aside)
        turns it into an abort: the socket goes to CLOSE and tcp_send_active_reset() sends
        RST|ACK at snd_nxt (TCPAbortOnClose). Before the connection exists there is nothing
        to send. Otherwise a FIN follows the data, as for shutdown(SHUT_WR); what the orphaned
        socket does afterwards (FIN_WAIT2 timeout, reset on new data) is not modelled."""
        rcv = self.rcv
        self._clock(now)
        if self.conn.state in (CLOSED, LISTEN, SYN_SENT):
            self._closed()
            return
        unread = rcv.rcv_nxt - rcv.copied_seq - (1 if rcv.rcv_shutdown else 0)
        if unread > 0:
            self.mib.TCPAbortOnClose += 1
            self._closed()
            self._emit(self.make_segment(self.snd.snd_nxt, 0, RST | ACK))
            return
        self.shutdown_write(now)

    def destroy(self, now: int) -> None:
        """The socket is freed with its connection (a host's churn, tcpsim/host/plan.py):
        tcp_done() -> inet_csk_destroy_sock() [net/ipv4/inet_connection_sock.c] ->
        sk_stream_kill_queues() [net/core/stream.c]. CLOSE, timers off, the queues purged
        and every page the socket held back in its pool (release_all), so a host's pool no
        longer counts it; the applications see `error` "closed" and stop. No segment is
        sent: both ends go at once."""
        self._clock(now)
        self.release_all()
        self.error = "closed"
        self._closed()
        self.readable = self.writable = True
        self.trace("state", "closed")

    def _closed(self) -> None:
        """tcp_set_state(TCP_CLOSE) without an error for the application: timers off."""
        snd = self.snd
        self.conn.state = CLOSED
        snd.rto_deadline = snd.probe_deadline = self.ack.delack_deadline = 0
        self.ack.comp_sack_deadline = snd.tlp_deadline = 0

    def make_syn(self) -> Segment:
        """Our SYN (tcp_connect() [tcp_output.c]), first or retransmitted."""
        s = self.sysctl
        return Segment(self.snd.iss, 0, SYN, 0, min(self.rcv.rcv_wnd, 65535), mss=self.conn.advmss,
                       wscale=self.conn.rcv_wscale if s.tcp_window_scaling else -1,
                       sack_ok=bool(s.tcp_sack), tsval=self._tsval() if s.tcp_timestamps else -1,
                       tsecr=0 if s.tcp_timestamps else -1)

    def make_synack(self) -> Segment:
        """Our SYN-ACK (tcp_make_synack() [tcp_output.c]), first or retransmitted."""
        conn = self.conn
        return Segment(self.snd.iss, 0, SYN | ACK, self.rcv.rcv_nxt, min(self.rcv.rcv_wnd, 65535),
                       mss=conn.advmss, wscale=conn.rcv_wscale if conn.wscale_ok else -1,
                       sack_ok=conn.sack_ok, tsval=self._tsval() if conn.ts_ok else -1,
                       tsecr=conn.ts_recent if conn.ts_ok else -1)

    def _learn_options(self, seg: Segment) -> None:
        """Options of a SYN / SYN-ACK: what both sides agreed on."""
        conn = self.conn
        s = self.sysctl
        conn.wscale_ok = seg.wscale >= 0 and bool(s.tcp_window_scaling)
        conn.snd_wscale = min(seg.wscale, 14) if conn.wscale_ok else 0
        conn.sack_ok = seg.sack_ok and bool(s.tcp_sack)
        conn.ts_ok = seg.tsval >= 0 and bool(s.tcp_timestamps)
        if conn.ts_ok:
            conn.ts_recent = seg.tsval
        conn.peer_mss = seg.mss or TCP_MSS_DEFAULT

    def _on_synack(self, seg: Segment) -> None:
        """SYN_SENT + SYN-ACK: models tcp_rcv_synsent_state_process() + tcp_finish_connect()."""
        rcv, snd = self.rcv, self.snd
        if not seg.flags & ACK or seg.ack != snd.snd_nxt:
            return
        self._learn_options(seg)
        if not self.conn.wscale_ok:
            self.conn.rcv_wscale = 0
            rcv.window_clamp = min(rcv.window_clamp, 65535)
        rcv.irs = seg.seq
        rcv.rcv_nxt = rcv.copied_seq = rcv.rcv_wup = seg.seq + 1
        snd.snd_una = seg.ack
        self.mib.TCPDelivered += 1                 # tcp_clean_rtx_queue() acked the SYN
        snd.snd_wnd = seg.win                      # SYN-ACK window is never scaled
        snd.snd_wl1 = seg.seq
        snd.max_window = snd.snd_wnd
        snd.rto_deadline = 0
        self._handshake_rtt(seg)
        self._established(active=True)
        # tcp_ack()'s tcp_cong_control() set the pacing rate before tcp_init_transfer():
        # with tcp_init_sock()'s cwnd, and the MSS of tcp_connect_init() (the same here)
        self._update_pacing_rate(TCP_INIT_CWND)
        self.send_ack()

    def _on_handshake_ack(self, seg: Segment) -> bool:
        """SYN_RECV + ACK of our SYN-ACK: the child socket is established."""
        snd = self.snd
        if not seg.flags & ACK or seg.ack != snd.snd_nxt:
            return False
        if seg.end_seq == seg.seq:
            self.mib.TCPPureAcks += 1               # tcp_ack(FLAG_SLOWPATH) of SYN_RECV
        snd.snd_una = seg.ack
        snd.snd_wnd = seg.win << self.conn.snd_wscale
        snd.snd_wl1 = seg.seq
        snd.max_window = snd.snd_wnd
        snd.rto_deadline = 0
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
        conn = self.conn
        if self.snd.srtt_us8:
            return
        if not self.snd.retransmits and conn.syn_tx_ns >= 0:
            sample = max(1, (self.now - conn.syn_tx_ns) // NS_PER_US)
        elif conn.ts_ok and (ts := self.tsopt_rtt_us(seg.tsecr)) > 0:
            sample = ts
        else:
            return
        self._rtt_estimator(sample)

    def tsopt_rtt_us(self, tsecr: int) -> int:
        """Models the sender's RTTM sample from a timestamp echo, tcp_rtt_tsopt_us(tp, 1)
        [tcp_input.c, 6.16+; 5.15-6.15 without the argument, the same rule]: now minus the
        echoed TSval, a 0 ms difference counting as 1 ms, in us; -1 when the segment echoes
        nothing (`tsecr` <= 0: no option, or 0, which Linux reads as no echo) or a time
        ahead of ours. (The receiver's tcp_rcv_rtt_measure_ts() is the profile's
        ts_rtt_sample_us: 6.16 stopped counting 0 ms as 1 there, not here.)"""
        if tsecr <= 0:
            return -1
        delta = self._tsval() - tsecr
        return max(delta, 1) * 1000 if delta >= 0 else -1

    def _established(self, active: bool) -> None:
        """Models tcp_finish_connect()/tcp_init_transfer(): MSS (tcp_sync_mss), buffers, timers.
        With timestamps advmss loses the option's 12 bytes on both sides (the passive side
        too: its rcv_ssthresh grows by 2 * 1448 per segment, measured on 6.18 in
        docs/validation.md)."""
        conn, rcv = self.conn, self.rcv
        if conn.ts_ok:
            conn.tcp_header_len = 32
            conn.advmss -= TCP_HEADER_TS
        # tcp_sync_mss() [tcp_output.c]: the path's MSS, bounded to half the peer's window
        # as it stands now (the SYN-ACK's, or the handshake ACK's scaled; max_window)
        conn.mss_cache = self.bound_to_half_wnd(
            min(conn.peer_mss, conn.mtu - 40) - (TCP_HEADER_TS if conn.ts_ok else 0))
        self.ack.ack_rcv_mss = max(TCP_MIN_MSS, min(conn.advmss, conn.mss_cache, rcv.rcv_wnd // 2,
                                                TCP_MSS_DEFAULT))  # tcp_initialize_rcv_mss()
        conn.state = ESTABLISHED
        self.snd.retransmits = 0                        # the handshake's, counted for Karn only
        rcv.rcvq_time = self.tcp_mstamp
        rcv.rcvq_seq = rcv.copied_seq
        self.k.init_buffer_space(self)
        self.sndbuf_expand()
        self.ca.init(self)                              # tcp_init_congestion_control()
        self.ack.ack_lrcvtime = self.clock.stamp(self.now)
        self.snd.rcv_tstamp = self.now
        self.writable = True

    # -- segment arrival --------------------------------------------------------------------

    def on_segment(self, now: int, seg: Segment) -> None:
        """A segment arrived from the link. Counted in TcpInSegs as tcp_v4_rcv() [tcp_ipv4.c,
        6.18] counts every segment it is handed, before the socket looks at it. While the
        application holds the socket, an established socket parks it in its backlog
        (tcp_add_backlog(), tcpsim/core/backlog.py)."""
        if self.mem.owned_until:
            self.release_due(now)
        self._clock(now)
        self.mib.TCPInSegs += 1
        state = self.conn.state
        if self.mem.owned_until and self.backlog_wanted(seg):
            self.add_backlog(seg)
            return
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
                self.conn.state = LISTEN
            elif seg.flags & SYN and not seg.flags & ACK:
                self.resend_synack()                # the peer's SYN again: our SYN-ACK was lost
            elif self._on_handshake_ack(seg) and (seg.len or seg.flags & 1):
                self.rcv_established(seg)
        self.wmem_settle()                  # the ACK freed sent skbs, or more were split

    def on_peer_release(self, seq: int) -> None:
        """The peer freed its copies of our received data below `seq` (it processed an
        ACK). On veth/loopback the receiver's skb shares its head with the sender's
        retransmit-queue skb, and skb_try_coalesce() refuses a cloned skb: only once the
        sender lets go can data be coalesced into it. Devices that build their own skbs
        never call this (peer_released stays infinite)."""
        self.rcv.peer_released = seq

    def on_peer_pages(self, holds: bool, now: int) -> None:
        """The peer's receive side went from holding none of our data's skbs to holding
        some, or back (`now`: when). On veth/loopback its skbs reference our writer's pages
        (tcpsim/core/pagefrag.py): a page is reused from its start only once they are all
        freed. Devices that build their own skbs never call this."""
        pf = self.pfrag
        if holds != pf.peer_holds:
            pf.on_peer(holds, now)

    def holds_pages(self) -> bool:
        """Any received skb still allocated -- queued in order or out of order
        (sk_rmem_alloc), or in the backlog -- hence, on a local pair, a reference to the
        sender's pages (see on_peer_pages())."""
        mem = self.mem
        return bool(mem.sk_rmem_alloc or mem.sk_backlog_len)

    def on_timer(self, now: int) -> None:
        """Run every timer whose deadline has passed (delayed ACK, RACK reordering, loss
        probe, RTO, persist). While the application holds the socket they wait for its
        release (tcp_delack_timer() and tcp_write_timer() defer to tcp_release_cb()), which
        runs first, backlog and all."""
        ack, snd = self.ack, self.snd
        self._clock(now)
        if self.mem.owned_until:
            if now < self.mem.owned_until:
                return
            self.release_sock()
        if ack.delack_deadline and ack.delack_deadline <= now:
            ack.delack_deadline = 0
            self.delack_timer()
        if ack.comp_sack_deadline and ack.comp_sack_deadline <= now:
            ack.comp_sack_deadline = 0
            self.compressed_ack_timer()
        if snd.reo_deadline and snd.reo_deadline <= now:
            snd.reo_deadline = 0
            self.rack_reo_timeout()
        if snd.tlp_deadline and snd.tlp_deadline <= now:
            snd.tlp_deadline = 0
            self.send_loss_probe()
        if snd.rto_deadline and snd.rto_deadline <= now:
            snd.rto_deadline = 0
            snd.tlp_deadline = 0
            self.retransmit_timer()
        if snd.probe_deadline and snd.probe_deadline <= now:
            snd.probe_deadline = 0
            self.probe_timer()
        self.wmem_settle()

    def next_deadline(self) -> int:
        """Earliest armed timer, or 0 when none is armed (a deadline of 0 is unarmed). While
        the application holds the socket: the release, before which no timer runs."""
        if self.mem.owned_until:
            return self.mem.owned_until
        ack, snd = self.ack, self.snd
        d = 0
        for t in (ack.delack_deadline, ack.comp_sack_deadline, snd.reo_deadline,
                  snd.tlp_deadline, snd.rto_deadline, snd.probe_deadline):
            if t and (not d or t < d):
                d = t
        return d

    def reset_xmit_timer(self, when_ns: int) -> int:
        """When an icsk timer armed now for `when_ns` runs (inet_csk_reset_xmit_timer ->
        sk_reset_timer(jiffies + when)): see Clock.reset_timer."""
        return self.clock.reset_timer(self.now, when_ns)

    def jiffies_up(self, d_ns: int) -> int:
        """A duration rounded up to whole jiffies of this kernel's tick, in ns
        (usecs_to_jiffies() and back): 1 ms jiffies with the default clock."""
        return self.clock.jiffies_up(d_ns)

    # -- helpers ----------------------------------------------------------------------------

    def _clock(self, now: int) -> None:
        self.now = now
        self.tcp_mstamp = now // NS_PER_US

    def _tsval(self) -> int:
        """TCP timestamp clock: milliseconds (tcp_time_stamp_ms) [6.x], offset by one so
        that a timestamp is never 0 (which Linux reads as 'no echo')."""
        return self.now // NS_PER_MS + 1

    def trace(self, event: str, detail: str, seg: Segment | None = None, truesize: int = -1,
              reason: str = "", length: int = -1, cost: int = -1) -> None:
        """Report an event to the sink as a TraceEvent (EVENT_FIELDS of
        tcpsim/trace/schema.py): what happened, the segment it concerns, and the state the
        trace columns show after it. The recorder reads nothing else."""
        sink = self.sink
        if sink is None:
            return
        conn, rcv, mem, snd = self.conn, self.rcv, self.mem, self.snd
        rcv_nxt, copied_seq = rcv.rcv_nxt, rcv.copied_seq
        sink.record((
            self.now, self.name, event, detail, seg, truesize, reason, length, cost,
            conn.rcv_wscale if event == "tx" else conn.snd_wscale,
            mem.sk_rmem_alloc, mem.sk_rcvbuf, rcv_nxt, copied_seq, rcv.rcv_wup, rcv.rcv_wnd,
            rcv.rcv_ssthresh, rcv.window_clamp, self.ack.ack_rcv_mss, rcv.scaling_ratio,
            rcv.rcvq_space, rcv.rcv_rtt_us8 >> 3, rcv_nxt - copied_seq,
            len(mem.receive_queue), len(mem.ofo_queue),
            snd.snd_una, snd.snd_nxt, snd.snd_wnd, snd.snd_cwnd,
        ))

    def _emit(self, seg: Segment, retrans: bool = False) -> None:
        """Put `seg` on the link. TcpOutSegs counts it unless it is a retransmission:
        __tcp_transmit_skb() [tcp_output.c, 6.18] counts a segment that ends beyond snd_nxt
        or holds no sequence space, so a resent segment of data, SYN or FIN is not counted;
        a SYN-ACK is, every time tcp_make_synack() builds one (`retrans` False)."""
        if not retrans:
            self.mib.TCPOutSegs += 1
        seg.tx_ns = self.now
        self.outbox.append(seg)
        self.trace("tx", "", seg)

    def abort(self, err: str) -> None:
        """The connection dies (tcp_write_err / tcp_reset): no more segments, timers off."""
        self.error = err
        self._closed()
        self.readable = self.writable = True
        self.trace("state", err)

    def take_outbox(self) -> list[Segment]:
        """Hand the queued segments to the caller, in order, and drain the outbox."""
        out = self.outbox
        self.outbox = []
        return out

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every field of every state record, both receive queues skb by skb, the
        retransmit/write queues, the MIB and the socket flags, as plain data (the dict the
        native socket's snapshot() returns too; see tcpsim/core/snapshot.py)."""
        from tcpsim.core.snapshot import snapshot
        return snapshot(self)

    def take_events(self) -> list[TraceEvent]:
        """The trace events recorded since the last call (EVENT_FIELDS tuples), drained.
        Needs an EventBuffer as the sink; any other sink receives the events itself."""
        sink = self.sink
        if not isinstance(sink, EventBuffer):
            raise RuntimeError("take_events() needs the socket built with sink=EventBuffer() "
                               "(tcpsim.core.socket); this socket's events go to its own sink")
        return sink.take()

    @property
    def state(self) -> str:
        """The connection state's name (conn.state as a str, as the native socket reports)."""
        return str(self.conn.state.value)

    def recv_q(self) -> int:
        """Bytes queued and not read (Recv-Q in ss)."""
        rcv = self.rcv
        return rcv.rcv_nxt - rcv.copied_seq

    def ato_min(self) -> int:
        return TCP_ATO_MIN_NS

    def ss_line(self) -> str:
        """An `ss -tmi`-style snapshot of this socket."""
        conn, rcv, mem, snd = self.conn, self.rcv, self.mem, self.snd
        rtt = rcv.rcv_rtt_us8 / 8000
        srtt = snd.srtt_us8 / 8000
        return (f"{conn.state} Recv-Q {self.recv_q()} Send-Q {snd.write_seq - snd.snd_una} "
                f"skmem:(r{mem.sk_rmem_alloc},rb{mem.sk_rcvbuf},t0,tb{snd.sk_sndbuf},"
                f"f{mem.sk_forward_alloc}) wscale:{conn.snd_wscale},{conn.rcv_wscale} "
                f"rtt:{srtt:.3f} rto:{snd.rto // NS_PER_MS} mss:{conn.mss_cache} "
                f"rcvmss:{self.ack.ack_rcv_mss} advmss:{conn.advmss} cwnd:{snd.snd_cwnd} "
                f"bytes_received:{rcv.bytes_received} rcv_rtt:{rtt:.3f} "
                f"rcv_space:{rcv.rcvq_space} rcv_ssthresh:{rcv.rcv_ssthresh} "
                f"rcv_wnd:{rcv.rcv_wnd} window_clamp:{rcv.window_clamp}")
