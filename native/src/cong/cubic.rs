//! CUBIC with HyStart, the kernel's default congestion control (net/ipv4/tcp_cubic.c;
//! tcpsim/core/cong/cubic.py, whose module docstring describes the algorithm).
//!
//! No floating point, as in the kernel: the cube root is a table lookup and one Newton step,
//! time is in BICTCP_HZ units (1/1024 s) from the socket's jiffies (its clock's ticks),
//! HyStart runs on tcp_mstamp microseconds. The era differences are the decision points
//! `hystart_ack_delay` and `hystart_round_reset_first` (src/kernel.rs).

use crate::cong::{tcp_cong_avoid_ai, tcp_slow_start, CA_EVENT_TX_START, TCP_CA_LOSS};
use crate::constants::NS_PER_S;
use crate::socket::TcpSocket;

pub const BICTCP_BETA_SCALE: i64 = 1024;
/// Time unit of the curve: 2^-10 s.
pub const BICTCP_HZ: i64 = 10;
/// beta = 717/1024 ~ 0.7.
pub const BETA: i64 = 717;
pub const BIC_SCALE: i64 = 41;
pub const HYSTART_LOW_WINDOW: i64 = 16;
pub const HYSTART_ACK_DELTA_US: i64 = 2000;
pub const HYSTART_MIN_SAMPLES: i64 = 8;
pub const HYSTART_DELAY_MIN_US: i64 = 4000;
pub const HYSTART_DELAY_MAX_US: i64 = 16000;
/// cubictcp_register(): 8 * (1024 + beta) / 3 / (1024 - beta) = 15.
pub const BETA_SCALE: i64 = 8 * (BICTCP_BETA_SCALE + BETA) / 3 / (BICTCP_BETA_SCALE - BETA);
/// bic_scale * 10 = 410.
pub const CUBE_RTT_SCALE: u64 = (BIC_SCALE * 10) as u64;
/// 2^40 / 410.
pub const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE as u64 * 10);
const U32: i64 = 0xFFFF_FFFF;
/// cubic_root()'s first guesses: v[x] ~ cbrt(x << 18), for x < 64.
const CBRT_TABLE: [u64; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164, 168,
    170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209, 211, 213,
    215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240, 242, 244, 245,
    246, 248, 250, 251, 252, 254,
];

/// cubic_root() [tcp_cubic.c, 5.15]: the integer cube root of a 64-bit value, within about
/// 0.2 %: below 64 from the table; else the table's guess for the top six bits, shifted to
/// the value's magnitude, then one Newton-Raphson step, the / 3 done as * 341 >> 10.
pub fn cubic_root(a: u64) -> i64 {
    let m32 = U32 as u64;
    let b = 64 - a.leading_zeros() as u64; // fls64()
    if b < 7 {
        return ((CBRT_TABLE[a as usize] + 35) >> 6) as i64;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = a >> (b * 3);
    let x = (((CBRT_TABLE[shift as usize] + 10) << b) & m32) >> 6;
    let x = (2 * x + ((a / (x * (x - 1))) & m32)) & m32;
    (((x * 341) & m32) >> 10) as i64
}

/// Ticks per second of the socket's jiffies (HZ; the exact clock's ticks are ns).
fn hz(sk: &TcpSocket) -> i64 {
    match sk.clock.hz() {
        0 => NS_PER_S,
        h => h,
    }
}

/// tcp_jiffies32, in the socket clock's ticks.
fn jiffies(sk: &TcpSocket) -> i64 {
    sk.clock.ticks(sk.now)
}

/// bictcp_reset() [tcp_cubic.c, 5.15]: forget the curve and W_max, HyStart's `found`
/// included.
pub fn reset(sk: &mut TcpSocket) {
    let snd = &mut sk.snd;
    snd.ca_cnt = 0;
    snd.ca_last_max_cwnd = 0;
    snd.ca_last_cwnd = 0;
    snd.ca_last_time = 0;
    snd.ca_origin_point = 0;
    snd.ca_k = 0;
    snd.ca_delay_min = 0;
    snd.ca_epoch_start = 0;
    snd.ca_ack_cnt = 0;
    snd.ca_tcp_cwnd = 0;
    snd.ca_sample_cnt = 0;
    snd.ca_found = false;
}

/// bictcp_hystart_reset() [tcp_cubic.c, 5.15]: a new HyStart round starts now and ends when
/// snd_una passes today's snd_nxt; its minimum RTT starts at ~0U.
pub fn hystart_reset(sk: &mut TcpSocket) {
    let now = sk.tcp_mstamp;
    let snd = &mut sk.snd;
    snd.ca_round_start = now;
    snd.ca_last_ack = now;
    snd.ca_end_seq = snd.snd_nxt;
    snd.ca_curr_rtt = U32;
    snd.ca_sample_cnt = 0;
}

/// cubictcp_init() [tcp_cubic.c, 5.15]: reset, HyStart on (initial_ssthresh unused).
pub fn init(sk: &mut TcpSocket) {
    reset(sk);
    hystart_reset(sk);
}

/// cubictcp_recalc_ssthresh() [tcp_cubic.c, 5.15]: the epoch ends; W_max is the cwnd at the
/// loss, or, with fast convergence, (1 + beta) / 2 of it when this loss came below the
/// previous W_max; ssthresh = beta * cwnd.
pub fn ssthresh(sk: &mut TcpSocket) -> i64 {
    let snd = &mut sk.snd;
    let cwnd = snd.snd_cwnd;
    snd.ca_epoch_start = 0;
    snd.ca_last_max_cwnd = if cwnd < snd.ca_last_max_cwnd {
        (cwnd * (BICTCP_BETA_SCALE + BETA)) / (2 * BICTCP_BETA_SCALE)
    } else {
        cwnd
    };
    ((cwnd * BETA) / BICTCP_BETA_SCALE).max(2)
}

/// cubictcp_cong_avoid() [tcp_cubic.c, 5.15]: only while cwnd-limited; slow start below
/// ssthresh (tcp_slow_start), what is left of `acked` grows cwnd by one segment per ca_cnt
/// acked (tcp_cong_avoid_ai) after bictcp_update() set ca_cnt.
pub fn cong_avoid(sk: &mut TcpSocket, acked: i64) {
    if !sk.is_cwnd_limited() {
        return;
    }
    let mut acked = acked;
    if sk.snd.snd_cwnd < sk.snd.snd_ssthresh {
        acked = tcp_slow_start(sk, acked);
        if acked == 0 {
            return;
        }
    }
    let cwnd = sk.snd.snd_cwnd;
    update(sk, cwnd, acked);
    let cnt = sk.snd.ca_cnt;
    tcp_cong_avoid_ai(sk, cnt, acked);
}

/// bictcp_update() [tcp_cubic.c, 5.15]: ca_cnt, the segments to ack per cwnd step (see
/// cubic.py `Cubic.update`).
pub fn update(sk: &mut TcpSocket, cwnd: i64, acked: i64) {
    let hz = hz(sk);
    let now = jiffies(sk);
    let snd = &mut sk.snd;
    snd.ca_ack_cnt += acked;
    if snd.ca_last_cwnd == cwnd && now - snd.ca_last_time <= hz / 32 {
        return;
    }
    if !(snd.ca_epoch_start != 0 && now == snd.ca_last_time) {
        curve(sk, cwnd, acked, now, hz);
    }
    friendliness(sk, cwnd);
    sk.snd.ca_cnt = sk.snd.ca_cnt.max(2);
}

/// bictcp_update()'s cubic function: ca_cnt from the curve's target.
fn curve(sk: &mut TcpSocket, cwnd: i64, acked: i64, now: i64, hz: i64) {
    let delay_ticks = sk.clock.usecs_to_ticks(sk.snd.ca_delay_min);
    let snd = &mut sk.snd;
    snd.ca_last_cwnd = cwnd;
    snd.ca_last_time = now;
    if snd.ca_epoch_start == 0 {
        snd.ca_epoch_start = now;
        snd.ca_ack_cnt = acked;
        snd.ca_tcp_cwnd = cwnd;
        if snd.ca_last_max_cwnd <= cwnd {
            snd.ca_k = 0;
            snd.ca_origin_point = cwnd;
        } else {
            let diff = (snd.ca_last_max_cwnd - cwnd) as u64;
            snd.ca_k = cubic_root(CUBE_FACTOR.wrapping_mul(diff));
            snd.ca_origin_point = snd.ca_last_max_cwnd;
        }
    }
    let t = ((now - snd.ca_epoch_start + delay_ticks) << BICTCP_HZ) / hz;
    let offs = if t < snd.ca_k {
        snd.ca_k - t
    } else {
        t - snd.ca_k
    } as u64;
    let cube = CUBE_RTT_SCALE
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        .wrapping_mul(offs);
    let delta = ((cube >> (10 + 3 * BICTCP_HZ)) as i64) & U32;
    let target = if t < snd.ca_k {
        (snd.ca_origin_point - delta) & U32
    } else {
        (snd.ca_origin_point + delta) & U32
    };
    snd.ca_cnt = if target > cwnd {
        cwnd / (target - cwnd)
    } else {
        100 * cwnd
    };
    if snd.ca_last_max_cwnd == 0 && snd.ca_cnt > 20 {
        snd.ca_cnt = 20;
    }
}

/// bictcp_update()'s tcp_friendliness part: the emulated Reno window caps ca_cnt.
fn friendliness(sk: &mut TcpSocket, cwnd: i64) {
    let snd = &mut sk.snd;
    let delta = (cwnd * BETA_SCALE) >> 3;
    if delta != 0 && snd.ca_ack_cnt > delta {
        let steps = (snd.ca_ack_cnt - 1) / delta; // the kernel's subtract-while loop
        snd.ca_ack_cnt -= steps * delta;
        snd.ca_tcp_cwnd += steps;
    }
    if snd.ca_tcp_cwnd > cwnd {
        let max_cnt = cwnd / (snd.ca_tcp_cwnd - cwnd);
        if snd.ca_cnt > max_cnt {
            snd.ca_cnt = max_cnt;
        }
    }
}

/// cubictcp_state() [tcp_cubic.c, 5.15]: entering TCP_CA_Loss forgets everything and starts
/// a new HyStart round.
pub fn set_state(sk: &mut TcpSocket, state: i64) {
    if state == TCP_CA_LOSS {
        reset(sk);
        hystart_reset(sk);
    }
}

/// cubictcp_cwnd_event() [tcp_cubic.c, 5.15], CA_EVENT_TX_START: the idle time (since
/// lsndtime, in jiffies) is added to epoch_start, never beyond now.
pub fn cwnd_event(sk: &mut TcpSocket, event: i64) {
    if event != CA_EVENT_TX_START {
        return;
    }
    let now = jiffies(sk);
    let delta = now - sk.clock.ticks(sk.ack.lsndtime);
    let snd = &mut sk.snd;
    if snd.ca_epoch_start != 0 && delta > 0 {
        snd.ca_epoch_start = (snd.ca_epoch_start + delta).min(now);
    }
}

/// cubictcp_acked() [tcp_cubic.c, 5.15]: no samples within a second of an epoch's start;
/// delay_min is the smallest RTT seen; in slow start without an exit found, HyStart looks at
/// the sample (from a cwnd of 16 up, or at every cwnd since 6.14).
pub fn pkts_acked(sk: &mut TcpSocket, rtt_us: i64) {
    if sk.snd.ca_epoch_start != 0 && jiffies(sk) - sk.snd.ca_epoch_start < hz(sk) {
        return;
    }
    let delay = if rtt_us == 0 { 1 } else { rtt_us };
    let snd = &mut sk.snd;
    if snd.ca_delay_min == 0 || snd.ca_delay_min > delay {
        snd.ca_delay_min = delay;
    }
    if snd.ca_found || snd.snd_cwnd >= snd.snd_ssthresh {
        return;
    }
    if sk.snd.snd_cwnd >= HYSTART_LOW_WINDOW || sk.k.hystart_round_reset_first(sk) {
        hystart_update(sk, delay);
    }
}

/// hystart_update() [tcp_cubic.c, 5.15]: leave slow start (ssthresh = cwnd) on a long ACK
/// train or a rising RTT (see cubic.py `Cubic.hystart_update`).
pub fn hystart_update(sk: &mut TcpSocket, delay: i64) {
    if sk.snd.snd_una > sk.snd.ca_end_seq {
        hystart_reset(sk);
    }
    if sk.snd.snd_cwnd < HYSTART_LOW_WINDOW {
        return; // 6.14+: the round reset runs first
    }
    let now = sk.tcp_mstamp;
    if now - sk.snd.ca_last_ack <= HYSTART_ACK_DELTA_US {
        sk.snd.ca_last_ack = now;
        let threshold = (sk.snd.ca_delay_min + sk.k.hystart_ack_delay(sk)) >> 1; // SK_PACING_NONE
        if now - sk.snd.ca_round_start > threshold {
            sk.snd.ca_found = true;
            sk.snd.snd_ssthresh = sk.snd.snd_cwnd;
        }
    }
    let snd = &mut sk.snd;
    if snd.ca_curr_rtt > delay {
        snd.ca_curr_rtt = delay;
    }
    if snd.ca_sample_cnt < HYSTART_MIN_SAMPLES {
        snd.ca_sample_cnt += 1;
    } else if snd.ca_curr_rtt
        > snd.ca_delay_min
            + (snd.ca_delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US)
    {
        snd.ca_found = true;
        snd.snd_ssthresh = snd.snd_cwnd;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cube_root_is_within_the_kernel_bound() {
        assert_eq!(cubic_root(0), 0);
        assert_eq!(cubic_root(27), 3);
        assert_eq!(cubic_root(1_000_000), 100);
        for a in [64u64, 1000, 123_456_789, 1 << 40, u64::MAX >> 4] {
            let exact = (a as f64).cbrt();
            let got = cubic_root(a) as f64;
            assert!((got - exact).abs() / exact < 0.01, "{a}: {got} vs {exact}");
        }
    }

    #[test]
    fn scale_factors() {
        assert_eq!(BETA_SCALE, 15);
        assert_eq!(CUBE_FACTOR, (1u64 << 40) / 410);
    }
}
