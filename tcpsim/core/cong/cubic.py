"""CUBIC with HyStart, the kernel's default congestion control (net/ipv4/tcp_cubic.c).

Described from tcp_cubic.c as 5.15 ... 6.18 have it (read at 6.6 with its `__bpf_kfunc`
markers; the era differences are the kernel policy's decision points `hystart_ack_delay`
and `hystart_round_reset_first`). No floating point, as in the kernel: the cube root is a
table lookup and one Newton step, time is in BICTCP_HZ units (1/1024 s) derived from the
socket's jiffies (its clock's ticks), HyStart runs on tcp_mstamp microseconds.

The curve: after a loss at window W_max the window is cut to beta = 717/1024 of it and then
follows W(t) = C * (t - K)^3 + W_max with C = 0.4 (bic_scale 41 / 1024 * 10) and K the time
at which the curve is back at W_max; a TCP-friendly estimate (Reno's growth with the same
beta) wins where it is ahead. Module parameters at their defaults: fast_convergence 1,
beta 717, initial_ssthresh 0, bic_scale 41, tcp_friendliness 1, hystart 1, hystart_detect 3
(ACK train and delay), hystart_low_window 16, hystart_ack_delta_us 2000.

HyStart's rounds across the eras: before 4e1fddc98d25 "tcp_cubic: fix spurious Hystart ACK
train detections for not-cwnd-limited flows" (Eric Dumazet, Nov 2021, v5.16; in 5.15.y stable)
the round was reset in cubictcp_cong_avoid() on an ACK beyond end_seq; since then in
hystart_update() once snd_una passes end_seq, only from hystart_low_window up; since 6.14
(25c1a9ca53db) at any cwnd. The model's 5.15 profile has the 2021 fix (as 5.15.y does); plain
5.15.0's cong_avoid reset is NOT modelled.

Not modelled: the MIB counters TCPHystartTrain*/TCPHystartDelay* (UNVERIFIED whether adding
them to the model's counter set changes recorded traces; left out), pacing-aware HyStart
(sk_pacing_status is SK_PACING_NONE: no fq qdisc, no SO_MAX_PACING_RATE in the model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tcpsim.core.cong import CA_EVENT_TX_START, TCP_CA_LOSS, CongestionOps, tcp_cong_avoid_ai, tcp_slow_start
from tcpsim.core.constants import NS_PER_S

if TYPE_CHECKING:
    from tcpsim.core.socket import TcpSocket

BICTCP_BETA_SCALE = 1024
BICTCP_HZ = 10                                 # time unit of the curve: 2^-10 s
BETA = 717                                     # beta = 717/1024 ~ 0.7
BIC_SCALE = 41
HYSTART_LOW_WINDOW = 16
HYSTART_ACK_DELTA_US = 2000
HYSTART_MIN_SAMPLES = 8
HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US = 4000, 16000
# cubictcp_register(): the precomputed scale factors
BETA_SCALE = 8 * (BICTCP_BETA_SCALE + BETA) // 3 // (BICTCP_BETA_SCALE - BETA)   # 15
CUBE_RTT_SCALE = BIC_SCALE * 10                                                   # 410
CUBE_FACTOR = (1 << (10 + 3 * BICTCP_HZ)) // (BIC_SCALE * 10)                     # 2^40 / 410
U32, U64 = (1 << 32) - 1, (1 << 64) - 1
# cubic_root()'s first guesses: v[x] ~ cbrt(x << 18), for x < 64
CBRT_TABLE = (
    0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156,
    157, 161, 164, 168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199,
    200, 202, 204, 206, 209, 211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229,
    231, 232, 234, 236, 237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
)


def cubic_root(a: int) -> int:
    """cubic_root() [tcp_cubic.c, 5.15]: the integer cube root of a 64-bit value, within
    about 0.2 %: below 64 straight from the table; else the table's guess for the top six
    bits, shifted to the value's magnitude (b = fls64 * 84 / 256 - 1 ~ fls64 / 3), then one
    Newton-Raphson step x = (2x + a / (x (x - 1))) / 3, the / 3 done as * 341 >> 10."""
    b = a.bit_length()                                     # fls64()
    if b < 7:
        return (CBRT_TABLE[a] + 35) >> 6
    b = ((b * 84) >> 8) - 1
    shift = a >> (b * 3)
    x = (((CBRT_TABLE[shift] + 10) << b) & U32) >> 6
    x = (2 * x + (a // (x * (x - 1)) & U32)) & U32
    return ((x * 341) & U32) >> 10


def _hz(sk: TcpSocket) -> int:
    """Ticks per second of the socket's jiffies (HZ; the exact clock's ticks are ns)."""
    return sk.clock.hz or NS_PER_S


def _jiffies(sk: TcpSocket) -> int:
    """tcp_jiffies32, in the socket clock's ticks."""
    return sk.clock.ticks(sk.now)


class Cubic(CongestionOps):
    """`cubictcp` [tcp_cubic.c]: the hooks; the state is struct bictcp (SndState.ca_*)."""

    name = "cubic"

    # -- resets ----------------------------------------------------------------------------

    @staticmethod
    def reset(sk: TcpSocket) -> None:
        """bictcp_reset() [tcp_cubic.c, 5.15]: forget the curve and W_max, HyStart's
        `found` included."""
        snd = sk.snd
        snd.ca_cnt = snd.ca_last_max_cwnd = snd.ca_last_cwnd = snd.ca_last_time = 0
        snd.ca_origin_point = snd.ca_k = snd.ca_delay_min = snd.ca_epoch_start = 0
        snd.ca_ack_cnt = snd.ca_tcp_cwnd = snd.ca_sample_cnt = 0
        snd.ca_found = False

    @staticmethod
    def hystart_reset(sk: TcpSocket) -> None:
        """bictcp_hystart_reset() [tcp_cubic.c, 5.15]: a new HyStart round starts now and
        ends when snd_una passes today's snd_nxt; its minimum RTT starts at ~0U."""
        snd = sk.snd
        snd.ca_round_start = snd.ca_last_ack = sk.tcp_mstamp
        snd.ca_end_seq = snd.snd_nxt
        snd.ca_curr_rtt = U32
        snd.ca_sample_cnt = 0

    def init(self, sk: TcpSocket) -> None:
        """cubictcp_init() [tcp_cubic.c, 5.15]: reset, HyStart on (initial_ssthresh unused)."""
        self.reset(sk)
        self.hystart_reset(sk)

    # -- the hooks ---------------------------------------------------------------------------

    def ssthresh(self, sk: TcpSocket) -> int:
        """cubictcp_recalc_ssthresh() [tcp_cubic.c, 5.15]: the epoch ends; W_max is the cwnd
        at the loss, or, with fast convergence, (1 + beta) / 2 of it when this loss came
        below the previous W_max (the flow yields to newcomers); ssthresh = beta * cwnd."""
        snd = sk.snd
        cwnd = snd.snd_cwnd
        snd.ca_epoch_start = 0
        if cwnd < snd.ca_last_max_cwnd:
            snd.ca_last_max_cwnd = (cwnd * (BICTCP_BETA_SCALE + BETA)) // (2 * BICTCP_BETA_SCALE)
        else:
            snd.ca_last_max_cwnd = cwnd
        return max((cwnd * BETA) // BICTCP_BETA_SCALE, 2)

    def cong_avoid(self, sk: TcpSocket, acked: int) -> None:
        """cubictcp_cong_avoid() [tcp_cubic.c, 5.15]: only while cwnd-limited; slow start
        below ssthresh (tcp_slow_start), what is left of `acked` grows cwnd by one segment
        per ca_cnt acked (tcp_cong_avoid_ai) after bictcp_update() set ca_cnt."""
        snd = sk.snd
        if not sk.is_cwnd_limited():
            return
        if snd.snd_cwnd < snd.snd_ssthresh:
            acked = tcp_slow_start(sk, acked)
            if not acked:
                return
        self.update(sk, snd.snd_cwnd, acked)
        tcp_cong_avoid_ai(sk, snd.ca_cnt, acked)

    def update(self, sk: TcpSocket, cwnd: int, acked: int) -> None:
        """bictcp_update() [tcp_cubic.c, 5.15]: ca_cnt, the segments to ack per cwnd step.

        At most every HZ/32 while cwnd is unchanged, and the curve at most once a jiffy
        (the TCP-friendly part still runs). A new epoch (after a loss or at the first call)
        starts the curve at this cwnd: K = cbrt(cube_factor * (W_max - cwnd)) in 2^-10 s,
        origin W_max (or, above W_max, K = 0 at this cwnd). The target is the curve one
        delay_min ahead: origin -/+ C (t - K)^3, with C = 410 / 2^40 in these units; cnt is
        cwnd / (target - cwnd), 100 * cwnd when at or above it, at most 20 before any loss.
        TCP friendliness: a Reno estimate grows one segment per 15 * cwnd / 8 acked; where
        it is ahead, cnt = cwnd / (estimate - cwnd) at most. Never below 2."""
        snd = sk.snd
        hz = _hz(sk)
        now = _jiffies(sk)
        snd.ca_ack_cnt += acked
        if snd.ca_last_cwnd == cwnd and now - snd.ca_last_time <= hz // 32:
            return
        if not (snd.ca_epoch_start and now == snd.ca_last_time):
            self._curve(sk, cwnd, acked, now, hz)
        self._friendliness(sk, cwnd)
        snd.ca_cnt = max(snd.ca_cnt, 2)

    @staticmethod
    def _curve(sk: TcpSocket, cwnd: int, acked: int, now: int, hz: int) -> None:
        """bictcp_update()'s cubic function: ca_cnt from the curve's target."""
        snd = sk.snd
        snd.ca_last_cwnd = cwnd
        snd.ca_last_time = now
        if snd.ca_epoch_start == 0:
            snd.ca_epoch_start = now
            snd.ca_ack_cnt = acked
            snd.ca_tcp_cwnd = cwnd
            if snd.ca_last_max_cwnd <= cwnd:
                snd.ca_k = 0
                snd.ca_origin_point = cwnd
            else:
                snd.ca_k = cubic_root((CUBE_FACTOR * (snd.ca_last_max_cwnd - cwnd)) & U64)
                snd.ca_origin_point = snd.ca_last_max_cwnd
        t = now - snd.ca_epoch_start + sk.clock.usecs_to_ticks(snd.ca_delay_min)
        t = (t << BICTCP_HZ) // hz
        offs = snd.ca_k - t if t < snd.ca_k else t - snd.ca_k
        delta = (((CUBE_RTT_SCALE * offs * offs * offs) & U64) >> (10 + 3 * BICTCP_HZ)) & U32
        if t < snd.ca_k:
            target = (snd.ca_origin_point - delta) & U32
        else:
            target = (snd.ca_origin_point + delta) & U32
        if target > cwnd:
            snd.ca_cnt = cwnd // (target - cwnd)
        else:
            snd.ca_cnt = 100 * cwnd
        if snd.ca_last_max_cwnd == 0 and snd.ca_cnt > 20:
            snd.ca_cnt = 20

    @staticmethod
    def _friendliness(sk: TcpSocket, cwnd: int) -> None:
        """bictcp_update()'s tcp_friendliness part: the emulated Reno window caps ca_cnt."""
        snd = sk.snd
        delta = (cwnd * BETA_SCALE) >> 3
        if delta and snd.ca_ack_cnt > delta:
            steps = (snd.ca_ack_cnt - 1) // delta          # the kernel's subtract-while loop
            snd.ca_ack_cnt -= steps * delta
            snd.ca_tcp_cwnd += steps
        if snd.ca_tcp_cwnd > cwnd:
            max_cnt = cwnd // (snd.ca_tcp_cwnd - cwnd)
            if snd.ca_cnt > max_cnt:
                snd.ca_cnt = max_cnt

    def set_state(self, sk: TcpSocket, state: int) -> None:
        """cubictcp_state() [tcp_cubic.c, 5.15]: entering TCP_CA_Loss (an RTO) forgets
        everything -- the curve, W_max, delay_min, HyStart's `found` -- and starts a new
        HyStart round: the next slow start may be cut by HyStart again."""
        if state == TCP_CA_LOSS:
            self.reset(sk)
            self.hystart_reset(sk)

    def cwnd_event(self, sk: TcpSocket, event: int) -> None:
        """cubictcp_cwnd_event() [tcp_cubic.c, 5.15], CA_EVENT_TX_START (data sent with
        nothing in flight): the time the flow was idle (since lsndtime, in jiffies) is added
        to epoch_start, never beyond now, so the curve does not jump ahead by the idle time."""
        if event != CA_EVENT_TX_START:
            return
        snd = sk.snd
        now = _jiffies(sk)
        delta = now - sk.clock.ticks(sk.ack.lsndtime)
        if snd.ca_epoch_start and delta > 0:
            snd.ca_epoch_start = min(snd.ca_epoch_start + delta, now)

    def pkts_acked(self, sk: TcpSocket, rtt_us: int) -> None:
        """cubictcp_acked() [tcp_cubic.c, 5.15]: no samples within a second of an epoch's
        start (just after a loss); delay_min is the smallest RTT seen (0 counts as 1); in
        slow start, without an exit found yet, HyStart looks at the sample -- from a cwnd
        of hystart_low_window (16) up, or, since 6.14, at every cwnd for the round's
        bookkeeping (the kernel policy's `hystart_round_reset_first`)."""
        snd = sk.snd
        if snd.ca_epoch_start and _jiffies(sk) - snd.ca_epoch_start < _hz(sk):
            return
        delay = rtt_us or 1
        if snd.ca_delay_min == 0 or snd.ca_delay_min > delay:
            snd.ca_delay_min = delay
        if snd.ca_found or snd.snd_cwnd >= snd.snd_ssthresh:
            return
        if snd.snd_cwnd >= HYSTART_LOW_WINDOW or sk.k.hystart_round_reset_first(sk):
            self.hystart_update(sk, delay)

    def hystart_update(self, sk: TcpSocket, delay: int) -> None:
        """hystart_update() [tcp_cubic.c, 5.15]: leave slow start (ssthresh = cwnd) when

        * ACK train: ACKs keep coming at most hystart_ack_delta_us (2 ms) apart and the
          train since the round's start is longer than half of (delay_min +
          hystart_ack_delay): about a full window has been acked in one train; or
        * delay: after 8 samples in this round, the round's smallest RTT exceeds delay_min
          by delay_min / 8, clamped to 4..16 ms: the queue is building.

        A round ends when snd_una passes the snd_nxt of its start (bictcp_hystart_reset)."""
        snd = sk.snd
        if snd.snd_una > snd.ca_end_seq:
            self.hystart_reset(sk)
        if snd.snd_cwnd < HYSTART_LOW_WINDOW:
            return                                      # 6.14+: the round reset runs first
        now = sk.tcp_mstamp
        if now - snd.ca_last_ack <= HYSTART_ACK_DELTA_US:
            snd.ca_last_ack = now
            threshold = (snd.ca_delay_min + sk.k.hystart_ack_delay(sk)) >> 1   # SK_PACING_NONE
            if now - snd.ca_round_start > threshold:
                snd.ca_found = True
                snd.snd_ssthresh = snd.snd_cwnd
        if snd.ca_curr_rtt > delay:
            snd.ca_curr_rtt = delay
        if snd.ca_sample_cnt < HYSTART_MIN_SAMPLES:
            snd.ca_sample_cnt += 1
        elif snd.ca_curr_rtt > snd.ca_delay_min + min(max(snd.ca_delay_min >> 3,
                                                          HYSTART_DELAY_MIN_US),
                                                      HYSTART_DELAY_MAX_US):
            snd.ca_found = True
            snd.snd_ssthresh = snd.snd_cwnd


CUBIC = Cubic()
