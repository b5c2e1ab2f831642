//! The kernel's decision points, declared once: the Rust twin of tcpsim/policy.py.
//!
//! `Kernel` declares every decision point of `KernelPolicy` under the same name with the same
//! parameters (constants of the era as methods without a socket). Eras and patches implement
//! it; the socket holds the composed kernel as `sk.k` ([`KernelRef`]).
//!
//! # How the Python class hierarchy maps onto the trait
//!
//! * **The era underneath** (`super()`): every implementation names the kernel it builds on
//!   with [`Kernel::base`]. A default method of this trait *asks the era underneath*, so an
//!   era or a patch overrides exactly the points its Python class overrides and inherits the
//!   rest, including what eras between it and 5.15 changed (Python's MRO). `Linux515`
//!   (src/models/linux_5_15.rs) defines every point, as models/linux_5_15.py does, and is the
//!   bottom of every chain. (So the trait's defaults give 5.15 behaviour only through
//!   Linux515: a default that *was* 5.15's body could not let 6.8 inherit 6.6's override.)
//! * **`self.point(sk, ...)` inside a method** (Python's late binding: a patch's override is
//!   seen by the era's own methods): written `sk.k.point(sk, ...)`, i.e. through the socket's
//!   composed kernel, never `self.point(...)`. Points that take `&mut TcpSocket` are called on
//!   a handle the socket lends, `kcall!(sk.point(...))` or `let k = sk.lend_k(); k.point(sk,
//!   ...); sk.give_k(k)`, which avoids borrowing `sk` twice without touching the `Arc`'s
//!   count ([`KernelSpares`]).
//! * **Constants of the era** (`RELEASE`, `RMEM2_DEFAULT`, ...) are methods without a socket;
//!   an era that changes one also overrides the sk-less methods that read it (there is no
//!   socket to reach the composed kernel through): e.g. 6.8 changes `default_scaling_ratio`
//!   and with it `initial_scaling_ratio`. Python's `PINGPONG_THRESH` attribute and its
//!   `pingpong_thresh()` method are one fact and one method here.
//! * **Read-only decisions** take `&TcpSocket`, everything that writes (procedures, decisions
//!   that count or store on the way) `&mut TcpSocket`.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::memory::Tail;
use crate::segment::Segment;
use crate::skb::Skb;
use crate::socket::TcpSocket;
use crate::sysctl::{SysctlSpec, Sysctls};

/// The socket's handle on its composed kernel (era + patches), shared by every socket of a
/// host's class: a kernel object keeps no per-socket state (what a patch tracks per socket,
/// such as rfc7323-retraction's rcv_mwnd_seq, lives in the socket's state).
pub type KernelRef = Arc<dyn Kernel>;

/// How many handles on its kernel a socket keeps to lend: as deep as calls of decision
/// points that take the socket mutably nest (a deeper call clones the `Arc`: correct, slower).
/// The deepest nesting measured is 4 (the `tcpsim bench` cases and a host of the seed mix);
/// every spare is 16 bytes of each socket, which a host of thousands of connections reads
/// from memory.
const SPARES: usize = 4;

/// Spare handles on a socket's kernel, lent to the decision points that take the socket
/// mutably (`TcpSocket::lend_k`, `kcall!`): lending one is a move. A clone of the `Arc` per
/// call, as before, was a locked increment and a locked decrement of its count, ~10-15 ns a
/// pair on the development machine: ten to twenty per simulated packet made them a third to
/// half of the engine's cycles.
#[derive(Default)]
pub struct KernelSpares {
    refs: [Option<KernelRef>; SPARES],
    n: usize,
}

impl KernelSpares {
    /// A spare handle, None when all are lent.
    #[inline]
    pub fn take(&mut self) -> Option<KernelRef> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        self.refs[self.n].take()
    }

    /// Keep `k` to lend again (dropped when the spares are full).
    #[inline]
    pub fn put(&mut self, k: KernelRef) {
        if self.n < SPARES {
            self.refs[self.n] = Some(k);
            self.n += 1;
        }
    }
}

/// `kcall!(sk.point(args..))` is `sk.k.point(sk, args..)` for a decision point that takes the
/// socket mutably: called on the kernel `sk` lends (`TcpSocket::lend_k`), given back after.
#[macro_export]
macro_rules! kcall {
    ($sk:ident . $point:ident ( $($arg:expr),* $(,)? )) => {{
        let k = $sk.lend_k();
        let r = k.$point($sk, $($arg),*);
        $sk.give_k(k);
        r
    }};
}

/// Every decision point of the receive path (and the few of the send path tcpsim models).
///
/// Default methods ask [`Kernel::base`], the era underneath; see the module documentation.
pub trait Kernel: Send + Sync {
    /// The kernel this one builds on: what Python's `super()` reaches. Linux 5.15 defines
    /// every point and has none.
    fn base(&self) -> &dyn Kernel;

    /// A name for messages and `profiles show`: the era or patch class ("Linux66",
    /// "CollapseMaxBytes").
    fn class_name(&self) -> &'static str;

    // -- what the applied patches add (Python's Profile.counters() / new_sysctls()) -------

    /// The nstat counters the applied patches declare ({name: meaning}, Python's
    /// `Patch.counters`), in the order the patches were applied; none for a bare era.
    fn counters(&self) -> Vec<(&'static str, &'static str)> {
        self.base().counters()
    }

    /// The sysctls only the applied patches have (Python's `Patch.new_sysctls`).
    fn new_sysctls(&self) -> Vec<SysctlSpec> {
        self.base().new_sysctls()
    }

    /// Existing sysctls the applied patches make available (Python's `Patch.sysctls`).
    fn extra_sysctls(&self) -> Vec<&'static str> {
        self.base().extra_sysctls()
    }

    // -- constants of the era ------------------------------------------------------------

    /// RELEASE [Makefile:VERSION.PATCHLEVEL]: "5.15", "6.6", ...
    fn release(&self) -> &'static str {
        self.base().release()
    }

    /// SYSCTLS [net/ipv4/sysctl_net_ipv4.c:ipv4_net_table]: the sysctls this kernel has.
    fn sysctls(&self) -> Vec<&'static str> {
        self.base().sysctls()
    }

    /// RMEM2_DEFAULT [net/ipv4/tcp_ipv4.c:tcp_sk_init (tcp_rmem[2])].
    fn rmem2_default(&self) -> i64 {
        self.base().rmem2_default()
    }

    /// PINGPONG_THRESH / pingpong_thresh()
    /// [include/net/inet_connection_sock.h:inet_csk_in_pingpong_mode]: how many quick data
    /// exchanges make a connection interactive.
    fn pingpong_thresh(&self) -> i64 {
        self.base().pingpong_thresh()
    }

    /// MEMCG_SOFTIRQ_ATOMIC [include/net/sock.h:gfp_memcg_charge]: whether a socket's memcg
    /// charge from softirq is GFP_ATOMIC (cgroup v2 forces it past memory.max; memcg.rs).
    fn memcg_softirq_atomic(&self) -> bool {
        self.base().memcg_softirq_atomic()
    }

    /// DEFAULT_SCALING_RATIO [include/net/tcp.h:tcp_scaling_ratio_init [6.6]] (-1: none).
    fn default_scaling_ratio(&self) -> i64 {
        self.base().default_scaling_ratio()
    }

    /// COLLAPSE_NS_PER_BYTE [tcp_input.c:tcp_collapse (cost model)]: a float in Python too.
    fn collapse_ns_per_byte(&self) -> f64 {
        self.base().collapse_ns_per_byte()
    }

    /// COLLAPSE_NS_FIXED [tcp_input.c:tcp_collapse (cost model)].
    fn collapse_ns_fixed(&self) -> i64 {
        self.base().collapse_ns_fixed()
    }

    /// The sysctl defaults of this kernel [net/ipv4/tcp_ipv4.c:tcp_sk_init].
    fn default_sysctls(&self) -> Sysctls {
        self.base().default_sysctls()
    }

    /// scaling_ratio before any segment is measured (-1: the era has none)
    /// [include/net/tcp.h:tcp_scaling_ratio_init [6.6]].
    fn initial_scaling_ratio(&self) -> i64 {
        self.base().initial_scaling_ratio()
    }

    // -- memory <-> window ---------------------------------------------------------------

    /// The window a memory budget (bytes of truesize) is worth
    /// [include/net/tcp.h:tcp_win_from_space [5.15]].
    fn win_from_space(&self, sk: &TcpSocket, space: i64) -> i64 {
        self.base().win_from_space(sk, space)
    }

    /// The memory budget a window needs (inverse of win_from_space)
    /// [include/net/tcp.h:tcp_space_from_win [6.6]].
    fn space_from_win(&self, sk: &TcpSocket, win: i64) -> i64 {
        self.base().space_from_win(sk, win)
    }

    // -- handshake and socket options ----------------------------------------------------

    /// The initial rcv_wnd for an initial space (the 64 KiB cap, v4.19 .. 6.9)
    /// [tcp_output.c:tcp_select_initial_window [5.15]].
    fn initial_rcv_wnd(&self, sk: &TcpSocket, space: i64) -> i64 {
        self.base().initial_rcv_wnd(sk, space)
    }

    /// Set rcv_wnd, rcv_wscale and window_clamp at the handshake
    /// [tcp_output.c:tcp_select_initial_window [5.15]].
    fn select_initial_window(&self, sk: &mut TcpSocket, space: i64, mss: i64) {
        self.base().select_initial_window(sk, space, mss)
    }

    /// Set the initial rcv_ssthresh [tcp_output.c:tcp_connect_init [5.15]].
    fn init_rcv_ssthresh(&self, sk: &mut TcpSocket) {
        self.base().init_rcv_ssthresh(sk)
    }

    /// Set window_clamp, rcv_ssthresh and the DRS baseline once established
    /// [tcp_input.c:tcp_init_buffer_space [5.15]].
    fn init_buffer_space(&self, sk: &mut TcpSocket) {
        self.base().init_buffer_space(sk)
    }

    /// TCP_WINDOW_CLAMP (and later kernels' own clamp updates) [tcp.c:tcp_set_window_clamp].
    fn set_window_clamp(&self, sk: &mut TcpSocket, val: i64) {
        self.base().set_window_clamp(sk, val)
    }

    /// What else follows SO_RCVBUF on an open socket [net/core/sock.c:sock_setsockopt].
    fn on_rcvbuf_set(&self, sk: &mut TcpSocket) {
        self.base().on_rcvbuf_set(sk)
    }

    // -- receiver RTT --------------------------------------------------------------------

    /// Fold one receiver-RTT sample into rcv_rtt_us8 [tcp_input.c:tcp_rcv_rtt_update].
    fn rcv_rtt_update(&self, sk: &mut TcpSocket, sample_us: i64, win_dep: bool) {
        self.base().rcv_rtt_update(sk, sample_us, win_dep)
    }

    /// Receiver RTT without timestamps: one window of data per sample
    /// [tcp_input.c:tcp_rcv_rtt_measure].
    fn rcv_rtt_measure(&self, sk: &mut TcpSocket) {
        self.base().rcv_rtt_measure(sk)
    }

    /// Receiver RTT from the echoed timestamp of a data segment
    /// [tcp_input.c:tcp_rcv_rtt_measure_ts].
    fn rcv_rtt_measure_ts(&self, sk: &mut TcpSocket, seg: &Segment) {
        self.base().rcv_rtt_measure_ts(sk, seg)
    }

    /// A timestamp difference (ms) as an RTT sample in us; -1 = no sample
    /// [tcp_input.c:tcp_rtt_tsopt_us].
    fn ts_rtt_sample_us(&self, delta_ms: i64) -> i64 {
        self.base().ts_rtt_sample_us(delta_ms)
    }

    // -- rcv_mss and scaling_ratio -------------------------------------------------------

    /// Learn the peer's segment size from an in-order segment
    /// [tcp_input.c:tcp_measure_rcv_mss [5.15]].
    fn measure_rcv_mss(&self, sk: &mut TcpSocket, seg: &Segment, skb: &Skb) {
        self.base().measure_rcv_mss(sk, seg, skb)
    }

    /// What a segment that changes rcv_mss teaches besides (scaling_ratio, 6.6+)
    /// [tcp_input.c:tcp_measure_rcv_mss [6.6]].
    fn on_rcv_mss_change(&self, sk: &mut TcpSocket, seg: &Segment, skb: &Skb) {
        self.base().on_rcv_mss_change(sk, seg, skb)
    }

    /// What follows a change of the measured scaling_ratio
    /// [tcp_input.c:tcp_measure_rcv_mss [6.11]].
    fn on_scaling_ratio_change(&self, sk: &mut TcpSocket) {
        self.base().on_scaling_ratio_change(sk)
    }

    /// Whether out-of-order data updates rcv_mss [tcp_input.c:tcp_data_queue_ofo [6.17]].
    fn ofo_measure_rcv_mss(&self, sk: &mut TcpSocket, seg: &Segment, skb: &Skb) {
        self.base().ofo_measure_rcv_mss(sk, seg, skb)
    }

    // -- window growth and selection -----------------------------------------------------

    /// Raise rcv_ssthresh for a segment whose payload is worth its memory
    /// [tcp_input.c:tcp_grow_window [5.15]].
    fn grow_window(&self, sk: &mut TcpSocket, skb: &Skb, adjust: bool, seg: &Segment) {
        self.base().grow_window(sk, skb, adjust, seg)
    }

    /// What tcp_grow_window() does under memory pressure [tcp_input.c:tcp_grow_window].
    fn grow_under_pressure(&self, sk: &mut TcpSocket) {
        self.base().grow_under_pressure(sk)
    }

    /// Lower rcv_ssthresh under memory pressure [include/net/tcp.h:tcp_adjust_rcv_ssthresh].
    fn pressure_adjust(&self, sk: &mut TcpSocket) {
        self.base().pressure_adjust(sk)
    }

    /// May the offered window retract? [tcp_output.c:__tcp_select_window [6.5]].
    fn shrink_allowed(&self, sk: &TcpSocket) -> bool {
        self.base().shrink_allowed(sk)
    }

    /// The window memory allows, in bytes, before the never-shrink rule
    /// [tcp_output.c:__tcp_select_window [5.15]].
    fn select_window(&self, sk: &mut TcpSocket) -> i64 {
        self.base().select_window(sk)
    }

    /// The raw 16-bit window field of the next segment (stores rcv_wnd, rcv_wup)
    /// [tcp_output.c:tcp_select_window [5.15]].
    fn advertise_window(&self, sk: &mut TcpSocket) -> i64 {
        self.base().advertise_window(sk)
    }

    /// The window field of the ACK a memory drop asks for
    /// [tcp_output.c:tcp_select_window [6.6] (ICSK_ACK_NOMEM)].
    fn nomem_window(&self, sk: &mut TcpSocket) -> i64 {
        self.base().nomem_window(sk)
    }

    // -- sequence checks and admission ---------------------------------------------------

    /// Is the segment acceptable? A drop reason, or "" when it is
    /// [tcp_input.c:tcp_sequence [5.15]].
    fn tcp_sequence(&self, sk: &mut TcpSocket, seg: &Segment) -> &'static str {
        self.base().tcp_sequence(sk, seg)
    }

    /// The window tcp_sequence() checks a segment against
    /// [include/net/tcp.h:tcp_receive_window [5.15]].
    fn sequence_window(&self, sk: &TcpSocket) -> i64 {
        self.base().sequence_window(sk)
    }

    /// Does the segment end past the right edge `right`? [tcp_input.c:tcp_sequence [6.17]].
    fn end_beyond_window(&self, sk: &TcpSocket, seg: &Segment, right: i64) -> bool {
        self.base().end_beyond_window(sk, seg, right)
    }

    /// Bookkeeping of a segment dropped for starting beyond the window
    /// [tcp_input.c:tcp_data_queue [5.15] (TCP_OVERWINDOW)].
    fn overwindow_drop(&self, sk: &mut TcpSocket) {
        self.base().overwindow_drop(sk)
    }

    /// Is this in-order segment accepted although the window is zero?
    /// [tcp_input.c:tcp_data_queue [5.15] (zero window)].
    fn zero_window_accepts(&self, sk: &TcpSocket, seg: &Segment) -> bool {
        self.base().zero_window_accepts(sk, seg)
    }

    /// Does the skb fit the receive budget now? [tcp_input.c:tcp_can_ingest [6.17]].
    fn can_ingest(&self, sk: &TcpSocket, skb: &Skb) -> bool {
        self.base().can_ingest(sk, skb)
    }

    /// May an in-order skb be queued (charging its memory)?
    /// [tcp_input.c:tcp_data_queue [5.15] (in-order memory check)].
    fn admit_in_order(&self, sk: &mut TcpSocket, skb: &Skb) -> bool {
        self.base().admit_in_order(sk, skb)
    }

    /// Find `size` bytes of receive memory, pruning if needed
    /// [tcp_input.c:tcp_try_rmem_schedule [5.15]].
    fn try_rmem_schedule(&self, sk: &mut TcpSocket, skb: &Skb, size: i64) -> bool {
        self.base().try_rmem_schedule(sk, skb, size)
    }

    /// Raise sk_rcvbuf to the memory in use, or cut rcv_ssthresh
    /// [tcp_input.c:tcp_clamp_window [5.15]].
    fn clamp_window(&self, sk: &mut TcpSocket) {
        self.base().clamp_window(sk)
    }

    /// Make room for the skb: 0 on success, -1 (RcvPruned) when still over budget
    /// [tcp_input.c:tcp_prune_queue [5.15]].
    fn prune_queue(&self, sk: &mut TcpSocket, skb: &Skb) -> i64 {
        self.base().prune_queue(sk, skb)
    }

    /// Does tcp_prune_queue() call tcp_clamp_window()? [tcp_input.c:tcp_prune_queue].
    fn needs_clamp(&self, sk: &TcpSocket, skb: &Skb) -> bool {
        self.base().needs_clamp(sk, skb)
    }

    /// The collapse step of tcp_prune_queue()
    /// [tcp_input.c:tcp_collapse_ofo_queue, tcp_collapse [5.15]].
    fn collapse(&self, sk: &mut TcpSocket, skb: &Skb) {
        self.base().collapse(sk, skb)
    }

    /// How long a collapse rewriting `copied` payload bytes takes, in ns
    /// [tcp_input.c:tcp_collapse (cost model)].
    fn collapse_cost_ns(&self, sk: &TcpSocket, copied: i64) -> i64 {
        self.base().collapse_cost_ns(sk, copied)
    }

    /// Drop out-of-order data to make room; true when it pruned
    /// [tcp_input.c:tcp_prune_ofo_queue [5.15]].
    fn prune_ofo_queue(&self, sk: &mut TcpSocket, skb: &Skb) -> bool {
        self.base().prune_ofo_queue(sk, skb)
    }

    /// May tcp_prune_ofo_queue() stop after dropping `dropped`?
    /// [tcp_input.c:tcp_prune_ofo_queue [6.2] (stop test)].
    fn ofo_prune_done(&self, sk: &TcpSocket, dropped: &Skb) -> bool {
        self.base().ofo_prune_done(sk, dropped)
    }

    /// Merge `frm` into the queued skb `to` (the tail of the receive or OFO queue)?
    /// [tcp_input.c:tcp_try_coalesce [5.15]].
    fn try_coalesce(&self, sk: &mut TcpSocket, to: Tail, frm: &Skb) -> bool {
        self.base().try_coalesce(sk, to, frm)
    }

    /// D-SACK for an OFO skb now in order: (D-SACK end, new dsack_high)
    /// [tcp_input.c:tcp_ofo_queue [5.15] (D-SACK)].
    fn ofo_dsack(&self, sk: &TcpSocket, skb: &Skb, dsack_high: i64) -> (i64, i64) {
        self.base().ofo_dsack(sk, skb, dsack_high)
    }

    /// Whether out-of-order data grows sk_rcvbuf
    /// [tcp_input.c:tcp_data_queue_ofo [6.18] (tcp_rcvbuf_grow)].
    fn ofo_rcvbuf_grow(&self, sk: &mut TcpSocket) {
        self.base().ofo_rcvbuf_grow(sk)
    }

    // -- receive buffer autotuning (DRS) -------------------------------------------------

    /// Earliest tcp_mstamp (us) at which DRS acts, -1 when it cannot yet
    /// [tcp_input.c:tcp_rcv_space_adjust [5.15] (once per RTT)].
    fn rcv_space_gate_us(&self, sk: &TcpSocket) -> i64 {
        self.base().rcv_space_gate_us(sk)
    }

    /// Bytes DRS credits to this RTT [tcp_input.c:tcp_rcv_space_adjust [5.15] (copied)].
    fn rcv_space_copied(&self, sk: &TcpSocket, copied_seq: i64, rcvq_seq: i64) -> i64 {
        self.base().rcv_space_copied(sk, copied_seq, rcvq_seq)
    }

    /// Receive buffer autotuning, once per receiver RTT
    /// [tcp_input.c:tcp_rcv_space_adjust [5.15]].
    fn rcv_space_adjust(&self, sk: &mut TcpSocket) {
        self.base().rcv_space_adjust(sk)
    }

    /// Size sk_rcvbuf for `copied` bytes per RTT (before 6.16)
    /// [tcp_input.c:tcp_rcv_space_adjust [5.15] (sizing)].
    fn grow_rcvbuf(&self, sk: &mut TcpSocket, copied: i64) {
        self.base().grow_rcvbuf(sk, copied)
    }

    /// Size sk_rcvbuf for `newval` bytes per RTT (6.16+) [tcp_input.c:tcp_rcvbuf_grow [6.16]].
    fn rcvbuf_grow(&self, sk: &mut TcpSocket, newval: i64) {
        self.base().rcvbuf_grow(sk, newval)
    }

    /// The slow-start growth term tcp_rcvbuf_grow() adds to the window
    /// [tcp_input.c:tcp_rcvbuf_grow [6.18] (growth term)].
    fn rcvbuf_grow_term(&self, sk: &TcpSocket, newval: i64, oldval: i64) -> i64 {
        self.base().rcvbuf_grow_term(sk, newval, oldval)
    }

    // -- ACKs ----------------------------------------------------------------------------

    /// How long compressed SACKs wait (ns), for an RTT estimate rtt_us8 (us << 3)
    /// [tcp_input.c:__tcp_ack_snd_check [5.15] (SACK compression timer)].
    fn comp_sack_delay_ns(&self, sk: &TcpSocket, rtt_us8: i64) -> i64 {
        self.base().comp_sack_delay_ns(sk, rtt_us8)
    }

    /// The delayed-ACK timeout cap, in ns
    /// [tcp_output.c:tcp_send_delayed_ack [5.15] (icsk_delack_max)].
    fn delack_max(&self, sk: &TcpSocket) -> i64 {
        self.base().delack_max(sk)
    }

    /// Use up quick ACKs as ACKs are sent [tcp_output.c:tcp_dec_quickack_mode [5.15]].
    fn dec_quickack_mode(&self, sk: &mut TcpSocket) {
        self.base().dec_quickack_mode(sk)
    }

    // -- sender side ---------------------------------------------------------------------

    /// Does this ACK update the sender's snd_wnd? [tcp_input.c:tcp_may_update_window [5.15]].
    fn may_update_window(&self, sk: &TcpSocket, seg: &Segment, ack: i64, nwin: i64) -> bool {
        self.base().may_update_window(sk, seg, ack, nwin)
    }

    /// Give up a zero-window retransmission?
    /// [tcp_timer.c:tcp_retransmit_timer [5.15] (tcp_rtx_probe0_timed_out)].
    fn rtx_probe0_timed_out(&self, sk: &TcpSocket) -> bool {
        self.base().rtx_probe0_timed_out(sk)
    }

    /// Let the head of the write queue take `missing` bytes from the next skb
    /// [tcp_output.c:tcp_grow_skb [6.10]]. `q` is the socket's write queue, taken out of
    /// `sk.snd` by the caller for the call (`std::mem::take`), as Rust cannot lend it twice.
    fn grow_skb(&self, sk: &TcpSocket, q: &mut VecDeque<i64>, missing: i64) {
        self.base().grow_skb(sk, q, missing)
    }

    /// Bytes the min_rtt term adds to the TSO size
    /// [tcp_output.c:tcp_tso_autosize [5.18] (min_rtt term)].
    fn tso_rtt_bytes(&self, sk: &TcpSocket) -> i64 {
        self.base().tso_rtt_bytes(sk)
    }

    /// Does sending new data run tcp_check_space() (the send buffer's growth)?
    /// [tcp_output.c:tcp_event_new_data_sent [5.18] (tcp_check_space)].
    fn new_data_checks_space(&self, sk: &TcpSocket) -> bool {
        self.base().new_data_checks_space(sk)
    }

    /// How soon (ns) the next ACK must be due for a TSO skb to wait
    /// [tcp_output.c:tcp_tso_should_defer [5.15] (next-ACK test)].
    fn tso_defer_ack_window(&self, sk: &TcpSocket, srtt_ns: i64) -> i64 {
        self.base().tso_defer_ack_window(sk, srtt_ns)
    }

    /// The tail-loss-probe timeout, in ns [tcp_output.c:tcp_schedule_loss_probe [5.15]].
    fn loss_probe_timeout(&self, sk: &TcpSocket) -> i64 {
        self.base().loss_probe_timeout(sk)
    }

    /// HyStart's ACK-train allowance (us) for ACKs delayed by GSO-sized bursts
    /// [tcp_cubic.c:hystart_ack_delay [5.15]].
    fn hystart_ack_delay(&self, sk: &TcpSocket) -> i64 {
        self.base().hystart_ack_delay(sk)
    }

    /// Does HyStart track its rounds below hystart_low_window too?
    /// [tcp_cubic.c:hystart_update [6.14] (round reset before the low-window test)].
    fn hystart_round_reset_first(&self, sk: &TcpSocket) -> bool {
        self.base().hystart_round_reset_first(sk)
    }
}

/// The names of the declared points, in tcpsim/policy.py's order (DECISION_POINTS): constants
/// first, then the methods. A test holds this list to the Python declaration.
pub const DECISION_POINTS: &[&str] = &[
    "RELEASE",
    "SYSCTLS",
    "RMEM2_DEFAULT",
    "PINGPONG_THRESH",
    "DEFAULT_SCALING_RATIO",
    "COLLAPSE_NS_PER_BYTE",
    "COLLAPSE_NS_FIXED",
    "default_sysctls",
    "initial_scaling_ratio",
    "pingpong_thresh",
    "win_from_space",
    "space_from_win",
    "initial_rcv_wnd",
    "select_initial_window",
    "init_rcv_ssthresh",
    "init_buffer_space",
    "set_window_clamp",
    "on_rcvbuf_set",
    "rcv_rtt_update",
    "rcv_rtt_measure",
    "rcv_rtt_measure_ts",
    "ts_rtt_sample_us",
    "measure_rcv_mss",
    "on_rcv_mss_change",
    "on_scaling_ratio_change",
    "ofo_measure_rcv_mss",
    "grow_window",
    "grow_under_pressure",
    "pressure_adjust",
    "shrink_allowed",
    "select_window",
    "advertise_window",
    "nomem_window",
    "tcp_sequence",
    "sequence_window",
    "end_beyond_window",
    "overwindow_drop",
    "zero_window_accepts",
    "can_ingest",
    "admit_in_order",
    "try_rmem_schedule",
    "clamp_window",
    "prune_queue",
    "needs_clamp",
    "collapse",
    "collapse_cost_ns",
    "prune_ofo_queue",
    "ofo_prune_done",
    "try_coalesce",
    "ofo_dsack",
    "ofo_rcvbuf_grow",
    "rcv_space_gate_us",
    "rcv_space_copied",
    "rcv_space_adjust",
    "grow_rcvbuf",
    "rcvbuf_grow",
    "rcvbuf_grow_term",
    "comp_sack_delay_ns",
    "delack_max",
    "dec_quickack_mode",
    "may_update_window",
    "rtx_probe0_timed_out",
    "grow_skb",
    "tso_rtt_bytes",
    "new_data_checks_space",
    "tso_defer_ack_window",
    "loss_probe_timeout",
    "hystart_ack_delay",
    "hystart_round_reset_first",
];
