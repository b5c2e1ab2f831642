"""Linux 5.15 LTS: the base receive path every later profile builds on.

Every decision point of tcpsim/policy.py is defined here, as 5.15 does it; later eras
(linux_6_1.py, linux_6_6.py, ...) subclass and override only what they changed. Each
method's docstring names the kernel function it models [net/ipv4/tcp_input.c unless noted].

Era facts: memory -> window uses tcp_adv_win_scale (default 1 = 50 %); the initial rcv_wnd
is capped at 64 KiB; tcp_rmem[2] defaults to 6 MiB; in-order admission tests
`rmem > rcvbuf` before adding (so the queue can overshoot by one skb) and an empty receive
queue always accepts; the window never shrinks (no tcp_shrink_window).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.constants import (
    ICSK_ACK_PUSHED, ICSK_ACK_PUSHED2, MAX_TCP_WINDOW, NS_PER_US, TCP_ATO_MIN_NS,
    TCP_DELACK_MAX_NS, TCP_INIT_CWND, TCP_MIN_MSS, TCP_MSS_DEFAULT, TCP_RTO_MAX_NS,
    TCP_RTO_MIN_NS, TCP_TIMEOUT_INIT_NS, align_up, round_down, skb_truesize,
)
from tcpsim.core.segment import FIN, PSH, SYN, URG, Segment
from tcpsim.core.skb import Skb
from tcpsim.core.state import CLOSED
from tcpsim.core.sysctl import Sysctls
from tcpsim.policy import KernelPolicy

if TYPE_CHECKING:
    from collections import deque

    from tcpsim.core.socket import TcpSocket

MIB = 1024 * 1024
MAX_TCP_HEADER = 320          # L1_CACHE_ALIGN(128 + MAX_HEADER) on x86-64
TCP_REMNANT = FIN | URG | SYN | PSH
SOCK_MIN_RCVBUF = 4608


class Linux515(KernelPolicy):
    """Linux 5.15: adv_win_scale windows, classic DRS, never-shrink windows."""

    RELEASE = "5.15"
    RMEM2_DEFAULT = 6 * MIB
    PINGPONG_THRESH = 3
    DEFAULT_SCALING_RATIO = -1      # no scaling_ratio before 6.6 (reported as -1)
    # gfp_memcg_charge() [include/net/sock.h]: a socket's memcg charge from softirq is
    # GFP_NOWAIT in 5.15 as released -- over cgroup v2's memory.max it fails (core/memcg.py)
    MEMCG_SOFTIRQ_ATOMIC = False
    SYSCTLS = frozenset({
        "tcp_rmem", "tcp_wmem", "tcp_adv_win_scale", "tcp_app_win", "tcp_moderate_rcvbuf",
        "tcp_timestamps", "tcp_window_scaling", "tcp_sack", "tcp_retries2",
        "tcp_invalid_ratelimit", "tcp_workaround_signed_windows", "tcp_comp_sack_nr",
        "tcp_comp_sack_delay_ns", "rmem_max", "wmem_max",
        "tcp_congestion_control", "tcp_notsent_lowat", "tcp_slow_start_after_idle",
        "tcp_mem",
    })

    # -- profile-level facts ------------------------------------------------------------------

    def default_sysctls(self) -> Sysctls:
        """No per-CPU reserve of the TCP pool before 6.0: every page a socket charges goes
        to tcp_memory_allocated at once (sk_memory_allocated_add() [include/net/sock.h,
        5.15] is an atomic add), which `mem_pcpu_rsv = 0` models (core/protmem.py)."""
        return Sysctls(tcp_rmem=(4096, 131072, self.RMEM2_DEFAULT), mem_pcpu_rsv=0)

    def initial_scaling_ratio(self) -> int:
        """No scaling_ratio before 6.6 (reported as -1)."""
        return -1

    def pingpong_thresh(self) -> int:
        """TCP_PINGPONG_THRESH: data sent within ato of data received this many times
        makes the connection interactive (delayed ACKs are then not inflated)."""
        return self.PINGPONG_THRESH

    def delack_max(self, sk: TcpSocket) -> int:
        """icsk_delack_max: the delayed-ACK timeout cap (TCP_DELACK_MAX)."""
        return TCP_DELACK_MAX_NS

    def comp_sack_delay_ns(self, sk: TcpSocket, rtt_us8: int) -> int:
        """__tcp_ack_snd_check() [tcp_input.c, 5.15 .. 6.18]: compressed SACKs wait 5 % of
        the RTT (the smaller of the receiver's estimate and srtt), at most
        tcp_comp_sack_delay_ns."""
        return min(sk.sysctl.tcp_comp_sack_delay_ns, (rtt_us8 >> 3) * 1000 // 20)

    # -- memory <-> window -----------------------------------------------------------------------

    def win_from_space(self, sk: TcpSocket, space: int) -> int:
        """Models tcp_win_from_space() [include/net/tcp.h, 5.15]: tcp_adv_win_scale."""
        a = sk.sysctl.tcp_adv_win_scale
        return space >> -a if a <= 0 else space - (space >> a)

    def space_from_win(self, sk: TcpSocket, win: int) -> int:
        """Inverse of win_from_space (only used by 6.6+ DRS; kept for symmetry)."""
        a = sk.sysctl.tcp_adv_win_scale
        return win << -a if a <= 0 else (win << a) // ((1 << a) - 1)

    # -- handshake --------------------------------------------------------------------------------

    def initial_rcv_wnd(self, sk: TcpSocket, space: int) -> int:
        """The initial rcv_wnd: capped at 64 KiB (a337531b942b, v4.19 .. 6.9)."""
        return min(space, 65535)

    def select_initial_window(self, sk: TcpSocket, space: int, mss: int) -> None:
        """Models tcp_select_initial_window() [tcp_output.c]: rcv_wnd, window_clamp and
        the window scale chosen from the largest buffer the socket could ever use."""
        s = sk.sysctl
        space = max(space, 0)
        clamp = sk.rcv.window_clamp or (65535 << 14)
        space = min(space, clamp)
        if space > mss:
            space = space // mss * mss
        if s.tcp_workaround_signed_windows:
            rcv_wnd = min(space, MAX_TCP_WINDOW)
        else:
            rcv_wnd = self.initial_rcv_wnd(sk, space)
        if sk.conn.init_rwnd:
            rcv_wnd = min(rcv_wnd, sk.conn.init_rwnd * mss)
        wscale = 0
        if sk.conn.wscale_ok:
            biggest = min(max(space, s.tcp_rmem[2], s.rmem_max), clamp)
            wscale = max(0, min(14, biggest.bit_length() - 1 - 15))
        sk.rcv.rcv_wnd = rcv_wnd
        sk.conn.rcv_wscale = wscale
        sk.rcv.window_clamp = min(65535 << wscale, clamp)

    def init_rcv_ssthresh(self, sk: TcpSocket) -> None:
        """tcp_connect_init() / tcp_openreq_init_rwin(): rcv_ssthresh starts at rcv_wnd."""
        sk.rcv.rcv_ssthresh = sk.rcv.rcv_wnd

    def init_buffer_space(self, sk: TcpSocket) -> None:
        """Models tcp_init_buffer_space(): window_clamp = full space less one segment
        (tcp_app_win), rcv_ssthresh bounded by it, DRS baseline = min(.., 10 * advmss)."""
        app_win = sk.sysctl.tcp_app_win
        advmss = sk.conn.advmss
        maxwin = sk.full_space()
        if sk.rcv.window_clamp >= maxwin:
            sk.rcv.window_clamp = maxwin
            if app_win and maxwin > 4 * advmss:
                sk.rcv.window_clamp = max(maxwin - (maxwin >> app_win), 4 * advmss)
        if app_win and sk.rcv.window_clamp > 2 * advmss and sk.rcv.window_clamp + advmss > maxwin:
            sk.rcv.window_clamp = max(2 * advmss, maxwin - advmss)
        sk.rcv.rcv_ssthresh = min(sk.rcv.rcv_ssthresh, sk.rcv.window_clamp)
        sk.rcv.rcvq_space = min(sk.rcv.rcv_ssthresh, sk.rcv.rcv_wnd, TCP_INIT_CWND * advmss)

    # -- socket options ---------------------------------------------------------------------------

    def set_window_clamp(self, sk: TcpSocket, val: int) -> None:
        """TCP_WINDOW_CLAMP [tcp.c, 5.15]: only the clamp changes."""
        if val == 0:
            if sk.conn.state == CLOSED:
                sk.rcv.window_clamp = 0
            return
        sk.rcv.window_clamp = max(val, SOCK_MIN_RCVBUF // 2)

    def on_rcvbuf_set(self, sk: TcpSocket) -> None:
        """SO_RCVBUF on an open socket: only sk_rcvbuf changes."""

    # -- receiver RTT -----------------------------------------------------------------------------

    def rcv_rtt_update(self, sk: TcpSocket, sample_us: int, win_dep: bool) -> None:
        """Models tcp_rcv_rtt_update(): EWMA 1/8 (timestamps) or min-only (window)."""
        est = sk.rcv.rcv_rtt_us8
        if est:
            if not win_dep:
                est += sample_us - (est >> 3)
            elif sample_us << 3 < est:
                est = sample_us << 3
        else:
            est = sample_us << 3
        sk.rcv.rcv_rtt_us8 = est

    def rcv_rtt_measure(self, sk: TcpSocket) -> None:
        """Models tcp_rcv_rtt_measure(): one window's worth of data per sample (no TS)."""
        if sk.rcv.rcv_rtt_time:
            if sk.rcv.rcv_nxt < sk.rcv.rcv_rtt_seq:
                return
            self.rcv_rtt_update(sk, sk.tcp_mstamp - sk.rcv.rcv_rtt_time, True)
        sk.rcv.rcv_rtt_seq = sk.rcv.rcv_nxt + sk.rcv.rcv_wnd
        sk.rcv.rcv_rtt_time = sk.tcp_mstamp

    def rcv_rtt_measure_ts(self, sk: TcpSocket, seg: Segment) -> None:
        """Models tcp_rcv_rtt_measure_ts() [5.15]: sample = now - echoed timestamp, once
        per new echo, from full-sized segments; 0 ms counts as 1 ms."""
        conn, rcv = sk.conn, sk.rcv
        tsecr = conn.rcv_tsecr
        if not conn.ts_ok or tsecr <= 0 or tsecr == rcv.rcv_rtt_last_tsecr:
            return
        rcv.rcv_rtt_last_tsecr = tsecr
        if seg.len >= sk.ack.ack_rcv_mss:
            sample = self.ts_rtt_sample_us(sk._tsval() - tsecr)
            if sample >= 0:
                self.rcv_rtt_update(sk, sample, False)

    def ts_rtt_sample_us(self, delta_ms: int) -> int:
        """tcp_rtt_tsopt_us() [5.15]: a 0 ms difference counts as 1 ms; -1 = no sample."""
        return max(delta_ms, 1) * 1000 if delta_ms >= 0 else -1

    # -- rcv_mss -----------------------------------------------------------------------------------

    def measure_rcv_mss(self, sk: TcpSocket, seg: Segment, skb: Skb) -> None:
        """Models tcp_measure_rcv_mss() [5.15]: learn the peer's segment size; mark small
        pushed segments (ICSK_ACK_PUSHED/PUSHED2) for the read-side ACK rule."""
        rcv, ack = sk.rcv, sk.ack
        lss = rcv.last_seg_size
        rcv.last_seg_size = 0
        length = seg.gso_size or seg.len
        if length >= ack.ack_rcv_mss:
            if length != ack.ack_rcv_mss:
                self.on_rcv_mss_change(sk, seg, skb)
            ack.ack_rcv_mss = min(length, sk.conn.advmss)
            return
        length += sk.conn.tcp_header_len
        if length >= TCP_MSS_DEFAULT + 20 or (
                length >= TCP_MIN_MSS + 20 and not seg.flags & TCP_REMNANT):
            length -= sk.conn.tcp_header_len
            sk.rcv.last_seg_size = length
            if length == lss:
                sk.ack.ack_rcv_mss = length
                return
        if sk.ack.ack_pending & ICSK_ACK_PUSHED:
            sk.ack.ack_pending |= ICSK_ACK_PUSHED2
        sk.ack.ack_pending |= ICSK_ACK_PUSHED

    def on_rcv_mss_change(self, sk: TcpSocket, seg: Segment, skb: Skb) -> None:
        """What a segment that changes rcv_mss teaches besides (6.6: scaling_ratio)."""

    def on_scaling_ratio_change(self, sk: TcpSocket) -> None:
        """No scaling_ratio before 6.6, so nothing follows a change of it."""

    def ofo_measure_rcv_mss(self, sk: TcpSocket, seg: Segment, skb: Skb) -> None:
        """Out-of-order data does not update rcv_mss before 6.17."""

    # -- window growth and selection ----------------------------------------------------------------

    def grow_window(self, sk: TcpSocket, skb: Skb, adjust: bool, seg: Segment) -> None:
        """Models tcp_grow_window(): raise rcv_ssthresh by two MSS (or 2*len) per segment
        whose payload is worth its memory; bloated skbs only while rcv_ssthresh is small."""
        rcv = sk.rcv
        room = min(rcv.window_clamp, sk.tcp_space()) - rcv.rcv_ssthresh
        if room <= 0:
            return
        if sk.under_memory_pressure():
            self.grow_under_pressure(sk)
            return
        truesize = skb.truesize
        if adjust and skb.linear == 0:
            truesize -= skb_truesize(skb.head)
            if truesize < skb.len:
                truesize = skb.truesize
        if self.win_from_space(sk, truesize) <= skb.len:
            incr = 2 * sk.conn.advmss
        else:
            incr = self._grow_window_bloated(sk, truesize, skb.len)
        if incr:
            incr = max(incr, 2 * skb.len)
            rcv.rcv_ssthresh += min(room, incr)
            sk.ack.ack_quick |= 1

    def _grow_window_bloated(self, sk: TcpSocket, truesize: int, length: int) -> int:
        """Models __tcp_grow_window(): the worse the len/truesize ratio, the lower the
        rcv_ssthresh up to which a bloated skb may still grow the window."""
        t = self.win_from_space(sk, truesize) >> 1
        w = self.win_from_space(sk, sk.sysctl.tcp_rmem[2]) >> 1
        while sk.rcv.rcv_ssthresh <= w:
            if t <= length:
                return 2 * sk.ack.ack_rcv_mss
            t >>= 1
            w >>= 1
        return 0

    def grow_under_pressure(self, sk: TcpSocket) -> None:
        """tcp_grow_window() under memory pressure [5.15]: no growth, nothing else."""

    def pressure_adjust(self, sk: TcpSocket) -> None:
        """Under memory pressure [5.15]: rcv_ssthresh = min(rcv_ssthresh, 4 * advmss)."""
        sk.rcv.rcv_ssthresh = min(sk.rcv.rcv_ssthresh, 4 * sk.conn.advmss)

    def shrink_allowed(self, sk: TcpSocket) -> bool:
        """May the window retract? Never before 6.5 (no tcp_shrink_window)."""
        return False

    def nomem_window(self, sk: TcpSocket) -> int:
        """The window of the ACK a memory drop asks for (ICSK_ACK_NOMEM, 6.6): 5.15 drops
        silently and never asks; a patch that sets the flag gets 6.6's zero, not stored."""
        return 0

    def select_window(self, sk: TcpSocket) -> int:
        """Models __tcp_select_window(): the window memory allows, in bytes, before the
        never-shrink rule. Zero when free space is below max(rcv_mss, full/16) and below
        half of the full window; otherwise bounded by rcv_ssthresh and rounded up to the
        window-scale unit so scaling cannot hide it."""
        rcv = sk.rcv
        mss = sk.ack.ack_rcv_mss
        free = sk.tcp_space()
        allowed = sk.full_space()
        full = min(rcv.window_clamp, allowed)
        if mss > full:
            mss = full
            if mss <= 0:
                return 0
        wscale = sk.conn.rcv_wscale
        unit = 1 << wscale
        if self.shrink_allowed(sk):
            return self._select_window_shrink(sk, free, allowed, full, mss, unit)
        if free < full >> 1:
            sk.ack.ack_quick = 0
            if sk.under_memory_pressure():
                self.pressure_adjust(sk)
            free = round_down(free, unit)
            if free < allowed >> 4 or free < mss:
                return 0
        if free > rcv.rcv_ssthresh:
            free = rcv.rcv_ssthresh
        if wscale:
            return align_up(free, unit)
        window = rcv.rcv_wnd
        if window <= free - mss or window > free:
            window = free // mss * mss
        elif mss == full and free > window + (full >> 1):
            window = free
        return window

    def _select_window_shrink(self, sk: TcpSocket, free: int, allowed: int, full: int,
                              mss: int, unit: int) -> int:
        """The tcp_shrink_window=1 branch of __tcp_select_window() (b650d953cd39): free
        space rounded *down* to the scale unit; rcv_ssthresh rounded up (a soft limit)."""
        free = round_down(free, unit)
        if free < full >> 1:
            sk.ack.ack_quick = 0
            if sk.under_memory_pressure():
                self.pressure_adjust(sk)
            if free < allowed >> 4 or free < mss or free < unit:
                return 0
        if free > sk.rcv.rcv_ssthresh:
            free = align_up(sk.rcv.rcv_ssthresh, unit)
        return free

    def advertise_window(self, sk: TcpSocket) -> int:
        """Models tcp_select_window() [tcp_output.c]: the raw 16-bit window for the next
        segment. Never shrinks the offered window: a smaller result is replaced by the
        current right edge rounded up to the scale unit (TCPWantZeroWindowAdv when that
        hides a zero). Updates rcv_wnd / rcv_wup and the zero-window MIBs."""
        old = sk.rcv.rcv_wnd
        cur = sk.receive_window()
        new = self.select_window(sk)
        if new < cur and not self.shrink_allowed(sk):
            if new == 0:
                sk.mib.TCPWantZeroWindowAdv += 1
                sk.trace("window", "want zero (never-shrink kept it open)")
            new = align_up(cur, 1 << sk.conn.rcv_wscale)
        return self._store_window(sk, old, new)

    def _store_window(self, sk: TcpSocket, old: int, new: int) -> int:
        """The common tail of tcp_select_window(): store, cap, scale, count."""
        rcv = sk.rcv
        wscale = sk.conn.rcv_wscale
        rcv.rcv_wnd = new
        rcv.rcv_wup = rcv.rcv_nxt
        if not wscale and sk.sysctl.tcp_workaround_signed_windows:
            new = min(new, MAX_TCP_WINDOW)
        else:
            new = min(new, 65535 << wscale)
        new >>= wscale
        if new == 0:
            rcv.pred_ok = False
            if old:
                sk.mib.TCPToZeroWindowAdv += 1
        elif old == 0:
            sk.mib.TCPFromZeroWindowAdv += 1
        return new

    # -- sequence checks and admission ----------------------------------------------------------

    def tcp_sequence(self, sk: TcpSocket, seg: Segment) -> str:
        """Models tcp_sequence() [<= 6.16]: acceptable unless wholly before rcv_wup or
        starting beyond the window. Returns a drop reason, or '' when acceptable."""
        if seg.end_seq < sk.rcv.rcv_wup:
            return "TCP_OLD_SEQUENCE"
        if seg.seq > sk.rcv.rcv_nxt + self.sequence_window(sk):
            return "TCP_INVALID_SEQUENCE"
        return ""

    def sequence_window(self, sk: TcpSocket) -> int:
        """The window tcp_sequence() checks against: tcp_receive_window(), what the peer may
        still send according to our last advertisement."""
        return sk.receive_window()

    def overwindow_drop(self, sk: TcpSocket) -> None:
        """tcp_data_queue() drops a segment that starts beyond the window
        (TCP_OVERWINDOW): no counter of its own."""

    def end_beyond_window(self, sk: TcpSocket, seg: Segment, right: int) -> bool:
        """Before 6.17 only a segment's start is checked against the window: its end never
        makes it unacceptable."""
        return False

    def zero_window_accepts(self, sk: TcpSocket, seg: Segment) -> bool:
        """In-order data at a zero window is dropped (TCPZeroWindowDrop), FIN included."""
        return False

    def can_ingest(self, sk: TcpSocket, skb: Skb) -> bool:
        """The 'does it fit now?' test of admission and pruning [<= 6.16]."""
        return sk.mem.sk_rmem_alloc <= sk.mem.sk_rcvbuf

    def admit_in_order(self, sk: TcpSocket, skb: Skb) -> bool:
        """The memory step of tcp_data_queue()'s in-order branch [5.15, 6.1]: an empty
        receive queue always accepts (sk_forced_mem_schedule); otherwise
        tcp_try_rmem_schedule() decides and a failure drops silently (TCPRcvQDrop)."""
        if not sk.mem.receive_queue:
            sk.forced_mem_schedule(skb.truesize)
            return True
        return self.try_rmem_schedule(sk, skb, skb.truesize)

    def try_rmem_schedule(self, sk: TcpSocket, skb: Skb, size: int) -> bool:
        """Models tcp_try_rmem_schedule() [5.15-6.16]: over budget (rmem > rcvbuf) ->
        prune the queue, then prune the OFO queue until the quota can be had."""
        if not self.can_ingest(sk, skb) or not sk.rmem_schedule(size):
            if self.prune_queue(sk, skb) < 0:
                return False
            while not sk.rmem_schedule(size):
                if not self.prune_ofo_queue(sk, skb):
                    return False
        return True

    def clamp_window(self, sk: TcpSocket) -> None:
        """Models tcp_clamp_window(): leave quick-ack mode; raise sk_rcvbuf to the memory
        in use (up to tcp_rmem[2]) unless locked, under pressure (the host's or its
        memcg's) or with the host's pool at tcp_mem[0] or more -- the ratchet behind
        Cloudflare's unbounded buffers; if still over, rcv_ssthresh falls to 2 * advmss."""
        sk.ack.ack_quick = 0
        rmem2 = sk.sysctl.tcp_rmem[2]
        proto = sk.proto
        if (sk.mem.sk_rcvbuf < rmem2 and not sk.mem.rcvbuf_locked
                and proto.memory_pressure < 0 and proto.allocated < proto.tcp_mem[0]
                and not sk.memcg_pressure()):
            raised = min(sk.mem.sk_rmem_alloc, rmem2)
            if raised != sk.mem.sk_rcvbuf:
                sk.mem.sk_rcvbuf = raised
                sk.trace("autotune", "clamp_window")
        if sk.mem.sk_rmem_alloc > sk.mem.sk_rcvbuf:
            sk.rcv.rcv_ssthresh = min(sk.rcv.window_clamp, 2 * sk.conn.advmss)

    def prune_queue(self, sk: TcpSocket, skb: Skb) -> int:
        """Models tcp_prune_queue() [5.15, 6.1]: clamp the window, collapse the OFO and
        receive queues, prune the OFO queue; -1 (RcvPruned) when still over budget."""
        sk.mib.PruneCalled += 1
        sk.trace("prune", "", truesize=skb.truesize)
        if self.needs_clamp(sk, skb):
            self.clamp_window(sk)
        elif sk.under_memory_pressure():
            self.pressure_adjust(sk)
        if self.can_ingest(sk, skb):
            return 0
        self.collapse(sk, skb)
        if self.can_ingest(sk, skb):
            return 0
        self.prune_ofo_queue(sk, skb)
        if self.can_ingest(sk, skb):
            return 0
        sk.mib.RcvPruned += 1
        sk.rcv.pred_ok = False
        return -1

    def needs_clamp(self, sk: TcpSocket, skb: Skb) -> bool:
        """When tcp_prune_queue() calls tcp_clamp_window() [5.15]: rmem >= rcvbuf."""
        return sk.mem.sk_rmem_alloc >= sk.mem.sk_rcvbuf

    def collapse(self, sk: TcpSocket, skb: Skb) -> None:
        """The collapse step of tcp_prune_queue(): OFO queue, then the receive queue. Each
        collapse that rewrites data is charged a modelled duration (collapse_cost_ns)."""
        copied = sk.mem.collapsed_bytes
        rmem = sk.mem.sk_rmem_alloc
        sk.collapse_ofo_queue()
        sk.collapse_receive_queue()
        copied = sk.mem.collapsed_bytes - copied
        if copied:
            cost = self.collapse_cost_ns(sk, copied)
            sk.mem.collapses += 1
            sk.mem.collapse_ns_total += cost
            sk.mem.collapse_ns_max = max(sk.mem.collapse_ns_max, cost)
            sk.trace("collapse", f"freed {rmem - sk.mem.sk_rmem_alloc}", length=copied,
                     cost=cost)

    COLLAPSE_NS_PER_BYTE = 0.32
    COLLAPSE_NS_FIXED = 2000

    def collapse_cost_ns(self, sk: TcpSocket, copied: int) -> int:
        """How long tcp_collapse() runs for `copied` payload bytes rewritten: linear in the
        bytes, calibrated to Cloudflare's figures (a 6 MiB collapse takes about 2 ms; the
        170 MiB queues of their adv_win_scale +2 runs gave 32-64 ms spikes). A CPU, not a
        kernel, property: override it in a policy to model another machine."""
        return int(self.COLLAPSE_NS_FIXED + copied * self.COLLAPSE_NS_PER_BYTE)

    def prune_ofo_queue(self, sk: TcpSocket, skb: Skb) -> bool:
        """Models tcp_prune_ofo_queue() [5.15, 6.1]: drop OFO skbs from the highest
        sequence down, rcvbuf/8 at a time, until back under budget. OfoPruned counts
        every call on a non-empty queue."""
        ofo = sk.mem.ofo_queue
        if not ofo:
            return False
        sk.mib.OfoPruned += 1
        goal = sk.mem.sk_rcvbuf >> 3
        while ofo:
            dropped = sk.ofo_drop_last()
            goal -= dropped.truesize
            sk.trace("drop", "ofo prune", truesize=dropped.truesize,
                     reason="TCP_OFO_QUEUE_PRUNE")
            if not ofo or goal <= 0:
                if self.can_ingest(sk, skb) and not sk.under_memory_pressure():
                    break
                goal = sk.mem.sk_rcvbuf >> 3
        sk.rcv.selective_acks = []
        return True

    def try_coalesce(self, sk: TcpSocket, to: Skb, frm: Skb) -> bool:
        """Models tcp_try_coalesce(): merge into the previous skb, charging only the
        delta, with no receive-buffer check at all."""
        return sk.coalesce_into(to, frm)

    def ofo_dsack(self, sk: TcpSocket, skb: Skb, dsack_high: int) -> tuple[int, int]:
        """tcp_ofo_queue() [<= 6.16]: an OFO skb starting below dsack_high (where the new
        in-order data ended) is D-SACKed up to dsack_high -- more than was duplicated --
        and dsack_high drops to the skb's end. Returns (D-SACK end, new dsack_high)."""
        return dsack_high, min(dsack_high, skb.end_seq)

    def ofo_rcvbuf_grow(self, sk: TcpSocket) -> None:
        """Out-of-order data does not grow sk_rcvbuf before 6.18."""

    def ofo_prune_done(self, sk: TcpSocket, dropped: Skb) -> bool:
        """The stop test of tcp_prune_ofo_queue() [5.15]: back under budget (rmem <=
        rcvbuf, as can_ingest() tests it; 5.15's prune_ofo_queue() applies it inline)."""
        return self.can_ingest(sk, dropped)

    # -- receive buffer autotuning (DRS) -----------------------------------------------------------

    def rcv_space_gate_us(self, sk: TcpSocket) -> int:
        """Earliest tcp_mstamp (us) at which rcv_space_adjust() acts, -1 when it cannot
        (no receiver RTT yet). Used to skip idle reads exactly."""
        if sk.rcv.rcv_rtt_us8 == 0:
            return -1
        return sk.rcv.rcvq_time + (sk.rcv.rcv_rtt_us8 >> 3)

    def rcv_space_copied(self, sk: TcpSocket, copied_seq: int, rcvq_seq: int) -> int:
        """Bytes DRS credits to this RTT when the reader has reached copied_seq."""
        return copied_seq - rcvq_seq

    def rcv_space_adjust(self, sk: TcpSocket) -> None:
        """Models tcp_rcv_space_adjust() [5.15, 6.1]: once per receiver RTT, if the
        application read more than last time, size sk_rcvbuf for twice that plus a
        16-segment cushion and a growth term, at a per-segment memory cost."""
        now = sk.tcp_mstamp
        gate = self.rcv_space_gate_us(sk)
        if gate < 0 or now < gate:
            return
        copied = self.rcv_space_copied(sk, sk.rcv.copied_seq, sk.rcv.rcvq_seq)
        if copied > sk.rcv.rcvq_space:
            if sk.sysctl.tcp_moderate_rcvbuf and not sk.mem.rcvbuf_locked:
                self.grow_rcvbuf(sk, copied)
            sk.rcv.rcvq_space = copied
        sk.rcv.rcvq_seq = sk.rcv.copied_seq
        sk.rcv.rcvq_time = now

    def grow_rcvbuf(self, sk: TcpSocket, copied: int) -> None:
        """The sizing step of tcp_rcv_space_adjust() [5.15, 6.1]."""
        advmss = sk.conn.advmss
        rcvwin = (copied << 1) + 16 * advmss
        grow = rcvwin * (copied - sk.rcv.rcvq_space) // sk.rcv.rcvq_space
        rcvwin += grow << 1
        rcvmem = skb_truesize(advmss + MAX_TCP_HEADER)
        while self.win_from_space(sk, rcvmem) < advmss:
            rcvmem += 128
        rcvbuf = min(rcvwin // advmss * rcvmem, sk.sysctl.tcp_rmem[2])
        if rcvbuf > sk.mem.sk_rcvbuf:
            sk.mem.sk_rcvbuf = rcvbuf
            sk.rcv.window_clamp = self.win_from_space(sk, rcvbuf)
            sk.trace("autotune", "rcvbuf_grow")

    def rcvbuf_grow(self, sk: TcpSocket, newval: int) -> None:
        """tcp_rcvbuf_grow() does not exist before 6.16."""

    def rcvbuf_grow_term(self, sk: TcpSocket, newval: int, oldval: int) -> int:
        """No tcp_rcvbuf_grow() before 6.16, so no growth term (6.18 brings one back)."""
        return 0

    # -- ACK details ----------------------------------------------------------------------------------

    def dec_quickack_mode(self, sk: TcpSocket) -> None:
        """Models tcp_dec_quickack_mode() [5.15]: one quick ACK used per segment sent."""
        if sk.ack.ack_quick:
            if sk.ack.ack_quick <= 1:
                sk.ack.ack_quick = 0
                sk.ack.ack_ato = TCP_ATO_MIN_NS
            else:
                sk.ack.ack_quick -= 1

    # -- sender side ----------------------------------------------------------------------------------

    def may_update_window(self, sk: TcpSocket, seg: Segment, ack: int, nwin: int) -> bool:
        """Models tcp_may_update_window() [5.15]: a newer ACK or segment, or the same one
        with a larger window."""
        snd = sk.snd
        return (ack > snd.snd_una or seg.seq > snd.snd_wl1
                or (seg.seq == snd.snd_wl1 and nwin > snd.snd_wnd))

    def rtx_probe0_timed_out(self, sk: TcpSocket) -> bool:
        """Zero window with data in flight [tcp_retransmit_timer, 5.15]: give up when
        nothing was heard from the peer for TCP_RTO_MAX (120 s)."""
        return sk.now - sk.snd.rcv_tstamp > TCP_RTO_MAX_NS

    def grow_skb(self, sk: TcpSocket, q: deque[int], missing: int) -> None:
        """tcp_grow_skb() does not exist before 6.10: tcp_write_xmit() sends the head skb
        of the write queue as it is, however short (see linux_6_10.py)."""

    def tso_rtt_bytes(self, sk: TcpSocket) -> int:
        """tcp_tso_autosize() [tcp_output.c, 5.15]: the TSO size is the pacing rate's 1 ms
        share only; the min_rtt bonus came in 5.18 (see linux_6_1.py)."""
        return 0

    def new_data_checks_space(self, sk: TcpSocket) -> bool:
        """tcp_event_new_data_sent() [tcp_output.c, 5.15]: no tcp_check_space(); the send
        buffer grows (tcp_new_space()) only after an ACK, once the push that follows it is
        done (tcp_data_snd_check()) -- not while that push fills cwnd. 4bfe744ff164 added
        the call in 5.18 (see linux_6_1.py)."""
        return False

    def tso_defer_ack_window(self, sk: TcpSocket, srtt_ns: int) -> int:
        """tcp_tso_should_defer() [tcp_output.c, 5.15]: defer only if the oldest unacked
        segment went out at least half an srtt ago (srtt_us >> 4 whole microseconds), i.e.
        its ACK is due within that: returns how soon (ns) the next ACK must be due."""
        return srtt_ns - ((sk.snd.srtt_us8 >> 4) * NS_PER_US)

    def loss_probe_timeout(self, sk: TcpSocket) -> int:
        """tcp_schedule_loss_probe() [tcp_output.c, 5.15]: the probe timeout, in whole
        jiffies (ns): 2 * srtt converted to jiffies (rounded up), plus TCP_RTO_MIN when a
        single segment is out (the peer may be delaying its ACK) or TCP_TIMEOUT_MIN (two
        jiffies) otherwise; TCP_TIMEOUT_INIT (1 s) before any RTT sample. (Stable trees
        that took 1c2709cfff1d have 6.7's rule, see linux_6_8.py.)"""
        if not sk.snd.srtt_us8:
            return TCP_TIMEOUT_INIT_NS
        floor = TCP_RTO_MIN_NS if len(sk.snd.rtx_queue) == 1 else sk.clock.jiffies_up(1) * 2
        return sk.clock.jiffies_up((sk.snd.srtt_us8 >> 2) * NS_PER_US) + floor

    def hystart_ack_delay(self, sk: TcpSocket) -> int:
        """hystart_ack_delay() [tcp_cubic.c, 5.15]: the time four GSO_MAX_SIZE (64 KiB)
        bursts take at the pacing rate, at most 1 ms; 0 without a pacing rate. The model's
        rate is ~0UL (-1) until the first RTT sample: the allowance is then 0."""
        return _ack_delay(sk, GSO_MAX_SIZE)

    def hystart_round_reset_first(self, sk: TcpSocket) -> bool:
        """cubictcp_acked() [tcp_cubic.c, 5.15]: HyStart runs only from a cwnd of
        hystart_low_window (16) up, its round bookkeeping included (changed in 6.14). As
        5.15.y has it, with 4e1fddc98d25 (v5.16, backported): the round ends when snd_una
        passes end_seq, in hystart_update()."""
        return False


GSO_MAX_SIZE = 65536                 # GSO_MAX_SIZE of 5.15 (GSO_LEGACY_MAX_SIZE from 5.19)


def _ack_delay(sk: TcpSocket, gso_bytes: int) -> int:
    """min(USEC_PER_MSEC, gso_bytes * 4 * USEC_PER_SEC / sk_pacing_rate), 0 when the rate
    is 0, for hystart_ack_delay()."""
    rate = sk.snd.pacing_rate
    if rate <= 0:
        return 0                     # no rate, or ~0UL (-1 here): the quotient is 0
    return min(1000, gso_bytes * 4 * 1_000_000 // rate)


from tcpsim.policy import Profile  # noqa: E402  (kept last: the class above is the point of this file)

PROFILE = Profile("linux-5.15", Linux515,
                  "5.15 LTS: adv_win_scale windows, classic DRS, never-shrink windows")
