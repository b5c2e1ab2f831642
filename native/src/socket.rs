//! TcpSocket: one endpoint of a TCP connection as a sans-IO state machine.
//!
//! Mirrors tcpsim/core/socket.py `TcpSocket`: the socket's parts, its construction, the
//! opening (connect/listen, SYN, SYN-ACK, the handshake ACK and its RTT sample), close,
//! segment dispatch, timers and trace events. The other rooms are `impl TcpSocket` blocks
//! in their own files: memory.rs, receive.rs, ack.rs, sender.rs.
//!
//! Events come in as method calls with the current time `now` (integer ns); actions come
//! out as state the caller drains (`take_outbox()`, `next_deadline()`, `take_events()`).
//! The trace sink of the Python socket is a list of `TraceEvent`s here, recorded only when
//! `tracing` is on (the Python socket records only with a sink).

use std::borrow::Cow;
use std::sync::Arc;

use crate::arith::floor_div;
use crate::clock::{clock_for, Clock};
use crate::constants::{
    NS_PER_MS, NS_PER_US, TCP_ATO_MIN_NS, TCP_HEADER_TS, TCP_INIT_CWND, TCP_MIN_MSS,
    TCP_MSS_DEFAULT, TCP_TIMEOUT_INIT_NS,
};
use crate::devices::{device, Device};
use crate::kcall;
use crate::kernel::{KernelRef, KernelSpares};
use crate::memcg::MemcgHandle;
use crate::mib::Mib;
use crate::protmem::{ProtoHandle, ProtoMemory};
use crate::segment::{Segment, ACK, RST, SYN};
use crate::state::{AckState, ConnState, MemState, RcvState, SndState, TcpState};
use crate::sysctl::Sysctls;

/// The keyword arguments of Python's `TcpSocket(...)` beyond the kernel, sysctls and device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketParams {
    pub name: String,
    pub mtu: i64,
    pub initcwnd: i64,
    pub nodelay: bool,
    pub init_rwnd: i64,
    /// CONFIG_HZ of the kernel's tick; 0 = the exact clock.
    pub hz: i64,
}

impl Default for SocketParams {
    fn default() -> Self {
        SocketParams {
            name: "rcv".to_string(),
            mtu: 1500,
            initcwnd: crate::constants::TCP_INIT_CWND,
            nodelay: true,
            init_rwnd: 0,
            hz: 0,
        }
    }
}

/// One TCP endpoint: the five state records plus the sans-IO surface and injected parts.
pub struct TcpSocket {
    pub name: String,
    /// The kernel era's decisions, with the profile's patches (Python: the policy object
    /// `k`). An `Arc` so that a decision taking `&mut TcpSocket` is called on a second
    /// handle, lent by the socket (`kcall!(sk.point(..))`, `lend_k`): see src/kernel.rs.
    pub k: KernelRef,
    /// Handles on `k` to lend (`lend_k`).
    k_spares: KernelSpares,
    /// Shared by the sockets built from one configuration (a host's flows of a class):
    /// read-only while a run goes; a change makes the socket its own copy.
    pub sysctl: Arc<Sysctls>,
    /// The ingress device that builds our skbs: read-only, shared by the sockets built from
    /// one configuration (a host's flows of a class), so its bytes are not copied into every
    /// socket and the device a host's skbs are built by stays in the caches.
    pub dev: Arc<Device>,
    /// The host's TCP pool the socket charges its pages to (a private one unless a host
    /// shares one with `set_proto`), and the CPU whose per-CPU counter takes them.
    pub proto: ProtoHandle,
    pub cpu: usize,
    /// The memory cgroup the socket belongs to (src/memcg.rs), None for none.
    pub memcg: Option<MemcgHandle>,
    /// The socket's counters. Behind a box: an event bumps a few of the ~45 (Simulation
    /// prefetches the lines they are on: Flow::prefetch_queues), and every byte kept in the
    /// socket itself is read from memory at each event on a host of thousands of connections.
    pub mib: Box<Mib>,
    pub clock: Box<dyn Clock + Send + Sync>,
    pub now: i64,
    pub tcp_mstamp: i64,
    pub outbox: Vec<Segment>,
    pub readable: bool,
    pub writable: bool,
    pub error: String,
    pub accepted: bool,
    pub eof: bool,
    pub conn: ConnState,
    pub rcv: RcvState,
    pub mem: MemState,
    pub ack: AckState,
    pub snd: SndState,
    /// The socket backlog (src/backlog.rs): the parked (segment, skb) pairs,
    /// __release_sock() running, TCP_ACK_DEFERRED.
    pub backlog: Vec<crate::backlog::Parked>,
    pub releasing: bool,
    pub ack_deferred: bool,
    /// Record trace events (the Python socket's sink is set).
    pub tracing: bool,
    /// Events recorded since the last `take_events()`.
    pub events: Vec<TraceEvent>,
}

/// A trace string (event, detail, drop reason): a literal of the model, borrowed for free,
/// or one a Python patch passed (`sk.trace`), owned. A traced run records millions of
/// events; copying their literals into Strings was a third of the trace's cost.
pub type TraceStr = Cow<'static, str>;

/// The optional columns of Python's `TcpSocket.trace(event, detail, seg=None, truesize=-1,
/// reason="", length=-1, cost=-1)`, with the same defaults.
#[derive(Debug, Clone)]
pub struct TraceArgs<'a> {
    pub seg: Option<&'a Segment>,
    pub truesize: i64,
    pub reason: TraceStr,
    pub length: i64,
    pub cost: i64,
}

impl Default for TraceArgs<'_> {
    fn default() -> Self {
        TraceArgs {
            seg: None,
            truesize: -1,
            reason: Cow::Borrowed(""),
            length: -1,
            cost: -1,
        }
    }
}

/// The socket's state in a trace event: the STATE_COLUMNS of tcpsim/trace/schema.py, in
/// order (sk_rmem_alloc .. snd_cwnd).
pub const STATE_COLUMNS: usize = 19;

/// One trace event, the fields of schema.py `EVENT_FIELDS` in order: (t_ns, sock, event,
/// detail, seg, truesize, drop_reason, len, collapse_ns, win_scale, *state columns).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEvent {
    pub t_ns: i64,
    pub event: TraceStr,
    pub detail: TraceStr,
    pub seg: Option<Segment>,
    pub truesize: i64,
    pub drop_reason: TraceStr,
    pub len: i64,
    pub collapse_ns: i64,
    pub win_scale: i64,
    pub state: [i64; STATE_COLUMNS],
}

impl TcpSocket {
    /// A closed socket, as `TcpSocket(kernel, sysctl, device, name=, mtu=, initcwnd=,
    /// nodelay=, init_rwnd=, hz=)` builds it; `dev` None is veth. Errors name a bad HZ.
    pub fn new(
        k: KernelRef,
        sysctl: impl Into<Arc<Sysctls>>,
        dev: Option<Arc<Device>>,
        p: &SocketParams,
    ) -> Result<Self, String> {
        let sysctl: Arc<Sysctls> = sysctl.into();
        let dev = match dev {
            Some(d) => d,
            None => Arc::new(device("veth")?),
        };
        let scaling_ratio = k.initial_scaling_ratio();
        let counters: Vec<&'static str> = k.counters().iter().map(|&(n, _)| n).collect();
        // tcp_init_sock() -> sk_sockets_allocated_inc(): a private pool built from the
        // socket's sysctls, so a single connection behaves as on a host of its own
        let proto = ProtoMemory::handle(sysctl.tcp_mem, 1, sysctl.mem_pcpu_rsv);
        proto.sockets_allocated_add(0, 1);
        Ok(TcpSocket {
            proto,
            cpu: 0,
            memcg: None,
            name: p.name.clone(),
            clock: clock_for(p.hz)?,
            conn: ConnState::new(p.mtu, p.init_rwnd),
            rcv: RcvState::new(scaling_ratio),
            mem: MemState::new(&sysctl),
            ack: AckState::new(),
            snd: SndState::new(p.initcwnd, p.nodelay, &sysctl),
            k,
            k_spares: KernelSpares::default(),
            sysctl,
            dev,
            mib: Box::new(Mib::with_counters(&counters)),
            now: 0,
            tcp_mstamp: 0,
            outbox: Vec::new(),
            readable: false,
            writable: false,
            error: String::new(),
            accepted: true,
            eof: false,
            backlog: Vec::new(),
            releasing: false,
            ack_deferred: false,
            tracing: false,
            events: Vec::new(),
        })
    }
}

impl TcpSocket {
    /// The kernel, lent for a decision point that takes the socket mutably (`k.point(self,
    /// ..)` with `self.k` borrowed would borrow the socket twice): a spare handle when one
    /// is kept, a clone of `k` otherwise. Give it back with `give_k` (one not given back is
    /// dropped: correct, only slower); `kcall!` is the one-line form.
    #[inline]
    pub fn lend_k(&mut self) -> KernelRef {
        match self.k_spares.take() {
            Some(k) if Arc::ptr_eq(&k, &self.k) => k,
            _ => Arc::clone(&self.k),
        }
    }

    /// Take back a handle `lend_k` lent (kept as a spare while it is still the socket's
    /// kernel).
    #[inline]
    pub fn give_k(&mut self, k: KernelRef) {
        if Arc::ptr_eq(&k, &self.k) {
            self.k_spares.put(k);
        }
    }

    /// Charge this socket's memory to the pool `proto` (shared by a host's sockets) on the
    /// CPU `cpu` from now on: the socket leaves its pool's `sockets_allocated` for the new
    /// one's, and the pages it holds move with it. Err for a CPU the pool does not have.
    pub fn set_proto(&mut self, proto: ProtoHandle, cpu: usize) -> Result<(), String> {
        if cpu >= proto.ncpus {
            return Err(format!(
                "set_proto: cpu {cpu} is not one of the pool's {} CPUs",
                proto.ncpus
            ));
        }
        let pages = self.charged_pages();
        self.proto.memory_allocated_sub(self.cpu, pages);
        self.proto.sockets_allocated_add(self.cpu, -1);
        proto.sockets_allocated_add(cpu, 1);
        proto.memory_allocated_add(cpu, pages);
        self.proto = proto;
        self.cpu = cpu;
        Ok(())
    }

    /// Make this socket belong to the memory cgroup `memcg` (socket.py `set_memcg`): as
    /// inet_csk_accept() does for an accepted socket [net/ipv4/inet_connection_sock.c,
    /// 6.1-6.18] -- mem_cgroup_sk_alloc(), then the pages it already holds charged with
    /// __GFP_NOFAIL.
    pub fn set_memcg(&mut self, memcg: MemcgHandle) {
        let pages = self.charged_pages();
        if pages != 0 {
            memcg.charge_skmem(pages, self.now, true, true);
        }
        self.memcg = Some(memcg);
    }

    /// The socket is destroyed (socket.py `release_memory`): the memory part of
    /// inet_csk_destroy_sock() / tcp_v4_destroy_sock() -- queues purged, every page back to
    /// the pool (__sk_mem_reduce_allocated, which may end the host's pressure), the socket out
    /// of sockets_allocated. Call once; the socket is not used afterwards.
    pub fn release_memory(&mut self, now: i64) {
        self.set_clock(now);
        let pages = self.charged_pages();
        self.mem.receive_queue.clear();
        self.mem.ofo_queue.clear();
        self.mem.sk_rmem_alloc = 0;
        self.mem.sk_forward_alloc = 0;
        self.mem.wmem_charged = 0;
        self.mem_reduce_allocated(pages);
        self.proto.sockets_allocated_add(self.cpu, -1);
    }

    // -- socket options -------------------------------------------------------------------

    /// setsockopt(SO_RCVBUF): rcvbuf = 2 * min(val, rmem_max), locked against autotuning.
    /// Models sk_setsockopt() -> __sock_set_rcvbuf() [net/core/sock.c].
    pub fn set_rcvbuf(&mut self, val: i64) {
        let val = val.min(self.sysctl.rmem_max);
        self.mem.sk_rcvbuf = (val * 2).max(4608); // SOCK_MIN_RCVBUF
        self.mem.rcvbuf_locked = true;
        if self.conn.state.synchronized() {
            kcall!(self.on_rcvbuf_set());
        }
    }

    /// setsockopt(TCP_WINDOW_CLAMP) -> tcp_set_window_clamp() [tcp.c].
    pub fn set_window_clamp(&mut self, val: i64) {
        kcall!(self.set_window_clamp(val));
    }

    // -- opening --------------------------------------------------------------------------

    /// Passive open: wait for a SYN.
    pub fn listen(&mut self) {
        self.conn.state = TcpState::Listen;
    }

    /// Active open: models tcp_connect_init() + tcp_connect() [tcp_output.c].
    pub fn connect(&mut self, now: i64) {
        self.set_clock(now);
        self.conn.state = TcpState::SynSent;
        self.conn.wscale_ok = self.sysctl.tcp_window_scaling != 0;
        let clamp = self.rcv.window_clamp;
        if self.mem.rcvbuf_locked && (clamp > self.full_space() || clamp == 0) {
            self.rcv.window_clamp = self.full_space();
        }
        let space = self.full_space();
        kcall!(self.select_initial_window(space, self.conn.advmss));
        kcall!(self.init_rcv_ssthresh());
        let snd = &mut self.snd;
        snd.iss = 0;
        snd.snd_una = 0;
        snd.snd_nxt = 1;
        snd.write_seq = 1;
        let syn = self.make_syn();
        self.emit(syn, false);
        self.conn.syn_tx_ns = self.now; // the SYN skb's send time
        self.snd.rto = TCP_TIMEOUT_INIT_NS;
        self.snd.rto_deadline = self.reset_xmit_timer(self.snd.rto);
    }

    /// LISTEN + SYN: models tcp_openreq_init_rwin() and tcp_make_synack().
    fn on_syn(&mut self, seg: &Segment) {
        self.learn_options(seg);
        let rcv = &mut self.rcv;
        rcv.irs = seg.seq;
        rcv.rcv_nxt = seg.seq + 1;
        rcv.copied_seq = seg.seq + 1;
        rcv.rcv_wup = seg.seq + 1;
        let mss = self.conn.advmss - if self.conn.ts_ok { TCP_HEADER_TS } else { 0 };
        let full = self.full_space();
        if self.mem.rcvbuf_locked && (self.rcv.window_clamp > full || self.rcv.window_clamp == 0) {
            self.rcv.window_clamp = full;
        }
        let space = self.full_space();
        kcall!(self.select_initial_window(space, mss));
        kcall!(self.init_rcv_ssthresh());
        if !self.conn.wscale_ok {
            self.conn.rcv_wscale = 0;
        }
        let snd = &mut self.snd;
        snd.iss = 0;
        snd.snd_una = 0;
        snd.retransmits = 0; // a new request
        snd.snd_nxt = 1;
        snd.write_seq = 1;
        self.conn.state = TcpState::SynRecv;
        let synack = self.make_synack();
        self.emit(synack, false);
        self.conn.syn_tx_ns = self.now; // tcp_rsk(req)->snt_synack
        self.snd.rto = TCP_TIMEOUT_INIT_NS;
        self.snd.rto_deadline = self.reset_xmit_timer(self.snd.rto);
    }

    /// close(): models tcp_close() [tcp.c]. Data received and not read (a FIN aside) turns
    /// it into an abort: CLOSE and tcp_send_active_reset() sends RST|ACK at snd_nxt
    /// (TCPAbortOnClose). Before the connection exists there is nothing to send. Otherwise
    /// a FIN follows the data, as for shutdown(SHUT_WR).
    pub fn close(&mut self, now: i64) {
        self.set_clock(now);
        if matches!(
            self.conn.state,
            TcpState::Closed | TcpState::Listen | TcpState::SynSent
        ) {
            self.closed();
            return;
        }
        let rcv = &self.rcv;
        let unread = rcv.rcv_nxt - rcv.copied_seq - i64::from(rcv.rcv_shutdown);
        if unread > 0 {
            self.mib.TCPAbortOnClose += 1;
            self.closed();
            let seg = self.make_segment(self.snd.snd_nxt, 0, RST | ACK);
            self.emit(seg, false);
            return;
        }
        self.shutdown_write(now);
    }

    /// socket.py `destroy`: the socket is freed with its connection (a host's churn):
    /// tcp_done() -> inet_csk_destroy_sock() [net/ipv4/inet_connection_sock.c] ->
    /// sk_stream_kill_queues() [net/core/stream.c]. CLOSE, timers off, the queues purged
    /// and every page back in the pool (release_all); the applications see `error`
    /// "closed" and stop. No segment is sent.
    pub fn destroy(&mut self, now: i64) {
        self.set_clock(now);
        self.release_all();
        self.error = "closed".to_string();
        self.closed();
        self.readable = true;
        self.writable = true;
        self.trace("state", "closed", TraceArgs::default());
    }

    /// tcp_set_state(TCP_CLOSE) without an error for the application: timers off.
    fn closed(&mut self) {
        self.conn.state = TcpState::Closed;
        self.snd.rto_deadline = 0;
        self.snd.probe_deadline = 0;
        self.ack.delack_deadline = 0;
        self.ack.comp_sack_deadline = 0;
        self.snd.tlp_deadline = 0;
    }

    /// Our SYN (tcp_connect() [tcp_output.c]), first or retransmitted.
    pub fn make_syn(&self) -> Segment {
        let s = &self.sysctl;
        let mut seg = Segment::new(self.snd.iss, 0, SYN, 0, self.rcv.rcv_wnd.min(65535));
        seg.mss = self.conn.advmss;
        seg.wscale = if s.tcp_window_scaling != 0 {
            self.conn.rcv_wscale
        } else {
            -1
        };
        seg.sack_ok = s.tcp_sack != 0;
        seg.tsval = if s.tcp_timestamps != 0 {
            self.tsval()
        } else {
            -1
        };
        seg.tsecr = if s.tcp_timestamps != 0 { 0 } else { -1 };
        seg
    }

    /// Our SYN-ACK (tcp_make_synack() [tcp_output.c]), first or retransmitted.
    pub fn make_synack(&self) -> Segment {
        let conn = &self.conn;
        let mut seg = Segment::new(
            self.snd.iss,
            0,
            SYN | ACK,
            self.rcv.rcv_nxt,
            self.rcv.rcv_wnd.min(65535),
        );
        seg.mss = conn.advmss;
        seg.wscale = if conn.wscale_ok { conn.rcv_wscale } else { -1 };
        seg.sack_ok = conn.sack_ok;
        seg.tsval = if conn.ts_ok { self.tsval() } else { -1 };
        seg.tsecr = if conn.ts_ok { conn.ts_recent } else { -1 };
        seg
    }

    /// Options of a SYN / SYN-ACK: what both sides agreed on.
    fn learn_options(&mut self, seg: &Segment) {
        let s = &self.sysctl;
        let conn = &mut self.conn;
        conn.wscale_ok = seg.wscale >= 0 && s.tcp_window_scaling != 0;
        conn.snd_wscale = if conn.wscale_ok {
            seg.wscale.min(14)
        } else {
            0
        };
        conn.sack_ok = seg.sack_ok && s.tcp_sack != 0;
        conn.ts_ok = seg.tsval >= 0 && s.tcp_timestamps != 0;
        if conn.ts_ok {
            conn.ts_recent = seg.tsval;
        }
        conn.peer_mss = if seg.mss != 0 {
            seg.mss
        } else {
            TCP_MSS_DEFAULT
        };
    }

    /// SYN_SENT + SYN-ACK: models tcp_rcv_synsent_state_process() + tcp_finish_connect().
    fn on_synack(&mut self, seg: &Segment) {
        if seg.flags & ACK == 0 || seg.ack != self.snd.snd_nxt {
            return;
        }
        self.learn_options(seg);
        if !self.conn.wscale_ok {
            self.conn.rcv_wscale = 0;
            self.rcv.window_clamp = self.rcv.window_clamp.min(65535);
        }
        let rcv = &mut self.rcv;
        rcv.irs = seg.seq;
        rcv.rcv_nxt = seg.seq + 1;
        rcv.copied_seq = seg.seq + 1;
        rcv.rcv_wup = seg.seq + 1;
        self.mib.TCPDelivered += 1; // tcp_clean_rtx_queue() acked the SYN
        let snd = &mut self.snd;
        snd.snd_una = seg.ack;
        snd.snd_wnd = seg.win; // SYN-ACK window is never scaled
        snd.snd_wl1 = seg.seq;
        snd.max_window = snd.snd_wnd;
        snd.rto_deadline = 0;
        self.handshake_rtt(seg);
        self.established(true);
        // tcp_ack()'s tcp_cong_control() set the pacing rate before tcp_init_transfer():
        // with tcp_init_sock()'s cwnd, and the MSS of tcp_connect_init() (the same here)
        self.update_pacing_rate(TCP_INIT_CWND);
        self.send_ack();
    }

    /// SYN_RECV + ACK of our SYN-ACK: the child socket is established.
    fn on_handshake_ack(&mut self, seg: &Segment) -> bool {
        if seg.flags & ACK == 0 || seg.ack != self.snd.snd_nxt {
            return false;
        }
        if seg.end_seq() == seg.seq {
            self.mib.TCPPureAcks += 1; // tcp_ack(FLAG_SLOWPATH) of SYN_RECV
        }
        let snd = &mut self.snd;
        snd.snd_una = seg.ack;
        snd.snd_wnd = seg.win << self.conn.snd_wscale;
        snd.snd_wl1 = seg.seq;
        snd.max_window = snd.snd_wnd;
        snd.rto_deadline = 0;
        self.handshake_rtt(seg);
        self.established(false);
        self.update_pacing_rate(0); // tcp_rcv_state_process(), TCP_SYN_RECV
        true
    }

    /// The handshake's RTT sample, taken before the connection is established (socket.py
    /// `_handshake_rtt`): the active side's tcp_clean_rtx_queue() times the SYN, the
    /// passive side's tcp_synack_rtt_meas() the SYN-ACK (tcp_minisocks.c); after a
    /// retransmission only the timestamp echo can (tcp_ack_update_rtt() [tcp_input.c]).
    fn handshake_rtt(&mut self, seg: &Segment) {
        if self.snd.srtt_us8 != 0 {
            return;
        }
        let conn = &self.conn;
        let sample = if self.snd.retransmits == 0 && conn.syn_tx_ns >= 0 {
            floor_div(self.now - conn.syn_tx_ns, NS_PER_US).max(1)
        } else if conn.ts_ok && self.tsopt_rtt_us(seg.tsecr) > 0 {
            self.tsopt_rtt_us(seg.tsecr)
        } else {
            return;
        };
        self.rtt_estimator(sample);
    }

    /// Models the sender's RTTM sample from a timestamp echo, tcp_rtt_tsopt_us(tp, 1)
    /// [tcp_input.c, 6.16+; 5.15-6.15 without the argument, the same rule] (socket.py
    /// `tsopt_rtt_us`): now minus the echoed TSval, 0 ms counting as 1 ms, in us; -1 when
    /// the segment echoes nothing (`tsecr` <= 0) or a time ahead of ours.
    pub fn tsopt_rtt_us(&self, tsecr: i64) -> i64 {
        if tsecr <= 0 {
            return -1;
        }
        let delta = self.tsval() - tsecr;
        if delta >= 0 {
            delta.max(1) * 1000
        } else {
            -1
        }
    }

    /// Models tcp_finish_connect()/tcp_init_transfer(): MSS (tcp_sync_mss), buffers, timers. With
    /// timestamps advmss loses the option's 12 bytes on both sides (measured on 6.18 in
    /// docs/validation.md).
    fn established(&mut self, _active: bool) {
        let conn = &mut self.conn;
        if conn.ts_ok {
            conn.tcp_header_len = 32;
            conn.advmss -= TCP_HEADER_TS;
        }
        // tcp_sync_mss() [tcp_output.c]: the path's MSS, bounded to half the peer's window
        let mss = conn.peer_mss.min(conn.mtu - 40) - if conn.ts_ok { TCP_HEADER_TS } else { 0 };
        let mss = self.bound_to_half_wnd(mss);
        let conn = &mut self.conn;
        conn.mss_cache = mss;
        // tcp_initialize_rcv_mss()
        self.ack.ack_rcv_mss = conn
            .advmss
            .min(conn.mss_cache)
            .min(self.rcv.rcv_wnd.div_euclid(2))
            .clamp(TCP_MIN_MSS, TCP_MSS_DEFAULT);
        conn.state = TcpState::Established;
        self.snd.retransmits = 0; // the handshake's, counted for Karn only
        self.rcv.rcvq_time = self.tcp_mstamp;
        self.rcv.rcvq_seq = self.rcv.copied_seq;
        kcall!(self.init_buffer_space());
        self.sndbuf_expand();
        self.ca_init(); // tcp_init_congestion_control()
        self.ack.ack_lrcvtime = self.clock.stamp(self.now);
        self.snd.rcv_tstamp = self.now;
        self.writable = true;
    }

    // -- segment arrival ------------------------------------------------------------------

    /// A segment arrived from the link.
    /// While the application holds the socket, an established socket parks it in its
    /// backlog (tcp_add_backlog(), src/backlog.rs).
    pub fn on_segment(&mut self, now: i64, seg: &Segment) {
        if self.mem.owned_until != 0 {
            self.release_due(now);
        }
        self.set_clock(now);
        self.mib.TCPInSegs += 1; // tcp_v4_rcv() [tcp_ipv4.c, 6.18]: every segment
        let state = self.conn.state;
        if self.mem.owned_until != 0 && self.backlog_wanted(seg) {
            self.add_backlog(seg);
            return;
        }
        if state.synchronized() {
            self.rcv_established(seg, None);
            self.wmem_settle(); // the ACK freed sent skbs, or more were split
            return;
        }
        match state {
            TcpState::Listen if seg.flags & SYN != 0 && seg.flags & (ACK | RST) == 0 => {
                self.on_syn(seg);
            }
            TcpState::SynSent if seg.flags & SYN != 0 => self.on_synack(seg),
            TcpState::SynRecv => {
                if seg.flags & RST != 0 {
                    self.conn.state = TcpState::Listen;
                } else if seg.flags & SYN != 0 && seg.flags & ACK == 0 {
                    self.resend_synack(); // the peer's SYN again: our SYN-ACK was lost
                } else if self.on_handshake_ack(seg) && (seg.len != 0 || seg.flags & 1 != 0) {
                    self.rcv_established(seg, None);
                }
            }
            _ => {}
        }
        self.wmem_settle();
    }

    /// The peer freed its copies of our received data below `seq` (socket.py
    /// `on_peer_release`): on veth/loopback a queued skb stays cloned until then.
    pub fn on_peer_release(&mut self, seq: i64) {
        self.rcv.peer_released = seq;
    }

    /// Run every timer whose deadline has passed (delayed ACK, RACK reordering, loss probe,
    /// RTO, persist). While the application holds the socket they wait for its release
    /// (tcp_delack_timer() and tcp_write_timer() defer to tcp_release_cb()), which runs
    /// first, backlog and all.
    pub fn on_timer(&mut self, now: i64) {
        self.set_clock(now);
        if self.mem.owned_until != 0 {
            if now < self.mem.owned_until {
                return;
            }
            self.release_sock();
        }
        if self.ack.delack_deadline != 0 && self.ack.delack_deadline <= now {
            self.ack.delack_deadline = 0;
            self.delack_timer();
        }
        if self.ack.comp_sack_deadline != 0 && self.ack.comp_sack_deadline <= now {
            self.ack.comp_sack_deadline = 0;
            self.compressed_ack_timer();
        }
        if self.snd.reo_deadline != 0 && self.snd.reo_deadline <= now {
            self.snd.reo_deadline = 0;
            self.rack_reo_timeout();
        }
        if self.snd.tlp_deadline != 0 && self.snd.tlp_deadline <= now {
            self.snd.tlp_deadline = 0;
            self.send_loss_probe();
        }
        if self.snd.rto_deadline != 0 && self.snd.rto_deadline <= now {
            self.snd.rto_deadline = 0;
            self.snd.tlp_deadline = 0;
            self.retransmit_timer();
        }
        if self.snd.probe_deadline != 0 && self.snd.probe_deadline <= now {
            self.snd.probe_deadline = 0;
            self.probe_timer();
        }
        self.wmem_settle();
    }

    /// Earliest armed timer, or 0 when none is armed (a deadline of 0 is unarmed). While
    /// the application holds the socket: the release, before which no timer runs.
    pub fn next_deadline(&self) -> i64 {
        if self.mem.owned_until != 0 {
            return self.mem.owned_until;
        }
        let mut d = 0;
        for t in [
            self.ack.delack_deadline,
            self.ack.comp_sack_deadline,
            self.snd.reo_deadline,
            self.snd.tlp_deadline,
            self.snd.rto_deadline,
            self.snd.probe_deadline,
        ] {
            if t != 0 && (d == 0 || t < d) {
                d = t;
            }
        }
        d
    }

    /// When an icsk timer armed now for `when_ns` runs (inet_csk_reset_xmit_timer ->
    /// sk_reset_timer(jiffies + when)): see Clock::reset_timer.
    pub fn reset_xmit_timer(&self, when_ns: i64) -> i64 {
        self.clock.reset_timer(self.now, when_ns)
    }

    /// A duration rounded up to whole jiffies of this kernel's tick, in ns
    /// (usecs_to_jiffies() and back): 1 ms jiffies with the default clock.
    pub fn jiffies_up(&self, d_ns: i64) -> i64 {
        self.clock.jiffies_up(d_ns)
    }

    // -- helpers --------------------------------------------------------------------------

    /// socket.py `_clock`: the event's time, and tcp_mstamp in microseconds.
    pub fn set_clock(&mut self, now: i64) {
        self.now = now;
        self.tcp_mstamp = floor_div(now, NS_PER_US);
    }

    /// TCP timestamp clock: milliseconds (tcp_time_stamp_ms) [6.x], offset by one so that a
    /// timestamp is never 0 (which Linux reads as 'no echo'). socket.py `_tsval`.
    pub fn tsval(&self) -> i64 {
        floor_div(self.now, NS_PER_MS) + 1
    }

    /// Report an event (socket.py `trace`): what happened, the segment it concerns, and the
    /// state the trace columns show after it. Recorded only while `tracing` is on.
    pub fn trace(&mut self, event: impl Into<TraceStr>, detail: impl Into<TraceStr>, x: TraceArgs) {
        if !self.tracing {
            return;
        }
        let (conn, rcv, mem, snd) = (&self.conn, &self.rcv, &self.mem, &self.snd);
        let state = [
            mem.sk_rmem_alloc,
            mem.sk_rcvbuf,
            rcv.rcv_nxt,
            rcv.copied_seq,
            rcv.rcv_wup,
            rcv.rcv_wnd,
            rcv.rcv_ssthresh,
            rcv.window_clamp,
            self.ack.ack_rcv_mss,
            rcv.scaling_ratio,
            rcv.rcvq_space,
            rcv.rcv_rtt_us8 >> 3,
            rcv.rcv_nxt - rcv.copied_seq,
            mem.receive_queue.len() as i64,
            mem.ofo_queue.len() as i64,
            snd.snd_una,
            snd.snd_nxt,
            snd.snd_wnd,
            snd.snd_cwnd,
        ];
        let event = event.into();
        self.events.push(TraceEvent {
            t_ns: self.now,
            // a byte pattern, not `==`: the string compare called memcmp on every row
            win_scale: if matches!(event.as_bytes(), b"tx") {
                conn.rcv_wscale
            } else {
                conn.snd_wscale
            },
            event,
            detail: detail.into(),
            seg: x.seg.cloned(),
            truesize: x.truesize,
            drop_reason: x.reason,
            len: x.length,
            collapse_ns: x.cost,
            state,
        });
    }

    /// `trace(event, detail, seg, truesize, reason=...)`, the receive path's form.
    pub fn trace_seg(
        &mut self,
        event: &'static str,
        detail: &'static str,
        seg: &Segment,
        truesize: i64,
        reason: &'static str,
    ) {
        self.trace(
            event,
            detail,
            TraceArgs {
                seg: Some(seg),
                truesize,
                reason: Cow::Borrowed(reason),
                ..TraceArgs::default()
            },
        );
    }

    /// socket.py `_emit`: stamp the segment and queue it for the link. TcpOutSegs counts
    /// it unless it is a retransmission (`retrans`; __tcp_transmit_skb() [tcp_output.c,
    /// 6.18]); a SYN-ACK counts every time (tcp_make_synack()).
    pub fn emit(&mut self, seg: Segment, retrans: bool) {
        if !retrans {
            self.mib.TCPOutSegs += 1;
        }
        // stamped once in the outbox: a field written just before the segment was copied
        // made the copy wait for the write (a store read back wider than it was written)
        self.outbox.push(seg);
        let last = self.outbox.len() - 1;
        self.outbox[last].tx_ns = self.now;
        if self.tracing {
            let seg = self.outbox[last].clone();
            let x = TraceArgs {
                seg: Some(&seg),
                ..TraceArgs::default()
            };
            self.trace("tx", "", x);
        }
    }

    /// The connection dies (tcp_write_err / tcp_reset): no more segments, timers off.
    pub fn abort(&mut self, err: &'static str) {
        self.error = err.to_string();
        self.closed();
        self.readable = true;
        self.writable = true;
        self.trace("state", err, TraceArgs::default());
    }

    /// Hand the queued segments to the caller, in order, and drain the outbox.
    pub fn take_outbox(&mut self) -> Vec<Segment> {
        std::mem::take(&mut self.outbox)
    }

    /// Hand the recorded trace events to the caller and drain them.
    pub fn take_events(&mut self) -> Vec<TraceEvent> {
        std::mem::take(&mut self.events)
    }

    /// Bytes queued and not read (Recv-Q in ss).
    pub fn recv_q(&self) -> i64 {
        self.rcv.rcv_nxt - self.rcv.copied_seq
    }

    /// TCP_ATO_MIN.
    pub fn ato_min(&self) -> i64 {
        TCP_ATO_MIN_NS
    }

    /// An `ss -tmi`-style snapshot of this socket (socket.py `ss_line`).
    pub fn ss_line(&self) -> String {
        let (conn, rcv, mem, snd) = (&self.conn, &self.rcv, &self.mem, &self.snd);
        let rtt = rcv.rcv_rtt_us8 as f64 / 8000.0;
        let srtt = snd.srtt_us8 as f64 / 8000.0;
        format!(
            "{} Recv-Q {} Send-Q {} skmem:(r{},rb{},t0,tb{},f{}) wscale:{},{} rtt:{:.3} rto:{} \
             mss:{} rcvmss:{} advmss:{} cwnd:{} bytes_received:{} rcv_rtt:{:.3} rcv_space:{} \
             rcv_ssthresh:{} rcv_wnd:{} window_clamp:{}",
            conn.state,
            self.recv_q(),
            snd.write_seq - snd.snd_una,
            mem.sk_rmem_alloc,
            mem.sk_rcvbuf,
            snd.sk_sndbuf,
            mem.sk_forward_alloc,
            conn.snd_wscale,
            conn.rcv_wscale,
            srtt,
            floor_div(snd.rto, NS_PER_MS),
            conn.mss_cache,
            self.ack.ack_rcv_mss,
            conn.advmss,
            snd.snd_cwnd,
            rcv.bytes_received,
            rtt,
            rcv.rcvq_space,
            rcv.rcv_ssthresh,
            rcv.rcv_wnd,
            rcv.window_clamp,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::kernel_for;

    #[test]
    fn a_new_socket_takes_the_eras_scaling_ratio() {
        let p = SocketParams::default();
        let sk = TcpSocket::new(
            kernel_for("linux-6.6").unwrap(),
            Sysctls::default(),
            None,
            &p,
        )
        .unwrap();
        assert_eq!(sk.rcv.scaling_ratio, 65);
        assert_eq!(sk.dev.name(), "veth");
        let old = TcpSocket::new(
            kernel_for("linux-5.15").unwrap(),
            Sysctls::default(),
            None,
            &p,
        )
        .unwrap();
        assert_eq!(old.rcv.scaling_ratio, -1);
        assert_eq!(old.k.win_from_space(&old, 4096), 2048);
        assert_eq!(sk.k.win_from_space(&sk, 4096), 1040);
    }

    #[test]
    fn a_bad_hz_is_refused() {
        let p = SocketParams {
            hz: 123,
            ..SocketParams::default()
        };
        let k = kernel_for("linux-6.1").unwrap();
        assert!(TcpSocket::new(k, Sysctls::default(), None, &p).is_err());
    }

    fn synack() -> Segment {
        crate::bench::peer_synack(true)
    }

    #[test]
    fn a_client_opens_receives_and_acks_as_the_python_model_does() {
        // values from the Python socket (tests/native/test_native_socket.py drives both)
        let k = kernel_for("linux-6.18").unwrap();
        let sysctl = k.default_sysctls();
        let mut sk = TcpSocket::new(k, sysctl, None, &SocketParams::default()).unwrap();
        sk.tracing = true;
        sk.connect(0);
        let syn = sk.take_outbox();
        assert_eq!(syn.len(), 1);
        assert_eq!(syn[0].flags, SYN);
        sk.on_segment(1_000_000, &synack());
        assert_eq!(sk.conn.state, TcpState::Established);
        let ack = sk.take_outbox();
        assert_eq!(
            ack[0].to_string(),
            "Segment(A 1:1(0) ack 1 win 63 <TS val 2 ecr 1>)"
        );
        for i in 0..3 {
            let mut d = Segment::new(1 + i * 1448, 1448, ACK | crate::segment::PSH, 1, 502);
            d.tsval = 3 + i;
            d.tsecr = 1;
            sk.on_segment((2 + i) * 1_000_000, &d);
        }
        let acks: Vec<String> = sk.take_outbox().iter().map(|s| s.to_string()).collect();
        assert_eq!(
            acks[2],
            "Segment(A 1:1(0) ack 4345 win 72 <TS val 5 ecr 5>)"
        );
        assert_eq!((sk.rcv.rcv_nxt, sk.rcv.rcv_wnd), (4345, 73728));
        assert_eq!(sk.mem.receive_queue.len(), 1);
        assert_eq!(sk.read(5_000_000, 10_000), 4344);
        assert!(sk.mem.receive_queue.is_empty());
        assert!(sk.take_events().iter().any(|e| e.event == "read"));
    }
}
