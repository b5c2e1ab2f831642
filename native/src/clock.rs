//! The kernel's tick clock (jiffies) and the timer wheel, behind one `Clock` interface.
//!
//! Mirrors tcpsim/core/clock.py (`JiffyClock`) and the model's default clock (`ExactClock`), which the
//! Python socket selects with `hz = 0` (1 ms jiffies for the ACK timing,
//! timers fire at their exact deadline; socket.py `reset_xmit_timer`/`jiffies_up`, ack.py,
//! sender.py `_rtt_estimator`, receiver.py `_drop_unacceptable`). Here that default is
//! `ExactClock`; a kernel built with CONFIG_HZ = hz is `JiffyClock`.
//!
//! Linux counts coarse time in jiffies, 1/HZ s each. The TCP code that works in jiffies and
//! that the model follows: delayed ACKs (icsk_ack.ato and its update in
//! tcp_event_data_recv() [tcp_input.c], tcp_send_delayed_ack() [tcp_output.c]); the
//! retransmission timer (icsk_rto = usecs_to_jiffies(srtt/8 + rttvar), __tcp_set_rto
//! [include/net/tcp.h]); every icsk timer armed by sk_reset_timer() at `jiffies + when`
//! (inet_csk_reset_xmit_timer [include/net/inet_connection_sock.h]) on the timer wheel; and
//! tcp_invalid_ratelimit (tcp_oow_rate_limited [tcp_input.c]).
//!
//! The timer wheel (kernel/time/timer.c, calc_wheel_index/calc_index [6.18]) files a timer
//! that expires `delta = expires - clk` jiffies from now in level n, where level n holds
//! deltas from 63 << 3(n-1) (level 0: below 63) and has a granularity of 8^n jiffies; the
//! bucket's expiry is the next multiple of the granularity *strictly after* `expires`. Ticks
//! are placed at whole multiples of 1/HZ from time 0 of the run.

use crate::arith::{ceil_div, mul_ceil_div, mul_floor_div};
use crate::constants::{JIFFY_NS, NS_PER_MS, NS_PER_S, NS_PER_US};

/// The CONFIG_HZ choices of kernel/Kconfig.hz.
pub const VALID_HZ: [i64; 4] = [100, 250, 300, 1000];
/// 8 buckets of level n make one of level n + 1.
const LVL_CLK_SHIFT: i64 = 3;
/// Levels for HZ > 100 (8 at HZ = 100: irrelevant here).
const LVL_DEPTH: i64 = 9;

/// How the socket turns durations into timer expiries: the one interface of the model's two
/// clocks (the Python socket's `jc is None` / `jc` branches).
pub trait Clock {
    /// CONFIG_HZ of the modelled kernel; 0 for the exact clock (Python's `hz=0`).
    fn hz(&self) -> i64;

    /// The jiffy clock, when the algorithms must work in whole jiffies (ack.py's
    /// `_ato_update_jiffies`, `_send_delayed_ack_jiffies`); None for the exact clock.
    fn jiffy(&self) -> Option<&JiffyClock>;

    /// When an icsk timer armed now for `when_ns` runs (inet_csk_reset_xmit_timer ->
    /// sk_reset_timer(jiffies + when)). Models socket.py `reset_xmit_timer`.
    fn reset_xmit_timer(&self, now_ns: i64, when_ns: i64) -> i64;

    /// A duration rounded up to whole jiffies of this clock, in ns (usecs_to_jiffies() and
    /// back). Models socket.py `jiffies_up`.
    fn jiffies_up(&self, d_ns: i64) -> i64;

    /// icsk_rto from `srtt/8 + rttvar` in microseconds, before the TCP_RTO_MAX clamp
    /// (__tcp_set_rto [include/net/tcp.h]); sender.py `_rtt_estimator`.
    fn rto_ns(&self, us: i64) -> i64;

    /// Has less than `limit_ns` elapsed from `since_ns` to `now_ns`, counted as the kernel
    /// counts it (tcp_oow_rate_limited [tcp_input.c]: elapsed tcp_jiffies32 against
    /// usecs_to_jiffies of the limit)? receiver.py `_drop_unacceptable`.
    fn within(&self, since_ns: i64, now_ns: i64, limit_ns: i64) -> bool;

    /// The jiffies counter at time t, in ticks (ExactClock: t floored to 1 ms). clock.py
    /// `Clock.ticks`.
    fn ticks(&self, t_ns: i64) -> i64;

    /// tcp_jiffies32 at time t as the socket stores it in a time field (ns): the start of
    /// the current jiffy (ExactClock: t itself). clock.py `Clock.stamp`.
    fn stamp(&self, t_ns: i64) -> i64;

    /// A stored time field (ns, see stamp()) in ticks. clock.py `Clock.stamp_ticks`.
    fn stamp_ticks(&self, t_ns: i64) -> i64;

    /// A duration kept in ns that is a whole number of jiffies, in ticks.
    fn to_ticks(&self, d_ns: i64) -> i64;

    /// usecs_to_jiffies() [include/linux/jiffies.h]: rounds up.
    fn usecs_to_ticks(&self, us: i64) -> i64;

    /// Ticks back to ns (the first nanosecond of that jiffy).
    fn ticks_ns(&self, ticks: i64) -> i64;

    /// When a timer armed on tick `clk` to expire on tick `expires` runs (ns): the timer
    /// wheel's bucket (JiffyClock) or the expiry itself (ExactClock).
    fn timer_ns(&self, expires: i64, clk: i64) -> i64;

    /// sk_reset_timer(jiffies + when) for an icsk timer armed now: when it runs (ns).
    fn reset_timer(&self, now_ns: i64, when_ns: i64) -> i64 {
        self.reset_xmit_timer(now_ns, when_ns)
    }

    /// What the ato update of tcp_event_data_recv() reads and writes, in one call:
    /// (tcp_jiffies32 now as the new lrcvtime stores it, in ns; ato in ticks; the ticks
    /// elapsed since the old lrcvtime). clock.py `Clock.ato_sample`.
    fn ato_sample(&self, now_ns: i64, ato_ns: i64, lrcvtime_ns: i64) -> (i64, i64, i64) {
        let nj = self.ticks(now_ns);
        (
            self.ticks_ns(nj),
            self.to_ticks(ato_ns),
            nj - self.stamp_ticks(lrcvtime_ns),
        )
    }

    /// What tcp_send_delayed_ack() reads, in ticks, in one call: (jiffies now, ato,
    /// usecs_to_jiffies(srtt), the profile's delack_max). clock.py `Clock.delack_ticks`.
    fn delack_ticks(
        &self,
        now_ns: i64,
        ato_ns: i64,
        srtt_us: i64,
        delack_max_ns: i64,
    ) -> (i64, i64, i64, i64) {
        (
            self.ticks(now_ns),
            self.to_ticks(ato_ns),
            self.usecs_to_ticks(srtt_us),
            self.to_ticks(delack_max_ns),
        )
    }
}

/// The model's historic clock (Python `hz = 0`): 1 ms jiffies for the ACK timing, and timers
/// that fire at their exact deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExactClock;

impl Clock for ExactClock {
    fn hz(&self) -> i64 {
        0
    }

    fn jiffy(&self) -> Option<&JiffyClock> {
        None
    }

    fn reset_xmit_timer(&self, now_ns: i64, when_ns: i64) -> i64 {
        now_ns + when_ns
    }

    fn jiffies_up(&self, d_ns: i64) -> i64 {
        ceil_div(d_ns, JIFFY_NS) * JIFFY_NS
    }

    fn rto_ns(&self, us: i64) -> i64 {
        us * NS_PER_US
    }

    fn within(&self, since_ns: i64, now_ns: i64, limit_ns: i64) -> bool {
        now_ns - since_ns < limit_ns
    }

    fn ticks(&self, t_ns: i64) -> i64 {
        t_ns - t_ns.rem_euclid(NS_PER_MS)
    }

    fn stamp(&self, t_ns: i64) -> i64 {
        t_ns
    }

    fn stamp_ticks(&self, t_ns: i64) -> i64 {
        t_ns
    }

    fn to_ticks(&self, d_ns: i64) -> i64 {
        d_ns
    }

    fn usecs_to_ticks(&self, us: i64) -> i64 {
        us * NS_PER_US
    }

    fn ticks_ns(&self, ticks: i64) -> i64 {
        ticks
    }

    fn timer_ns(&self, expires: i64, _clk: i64) -> i64 {
        expires
    }
}

/// Jiffies of a kernel with CONFIG_HZ = hz, and where its timer wheel fires timers.
/// Integer arithmetic throughout (at HZ = 300 a jiffy is 3 333 333.3 ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JiffyClock {
    pub hz: i64,
}

impl JiffyClock {
    /// A clock for CONFIG_HZ = hz; the error says which values exist.
    pub fn new(hz: i64) -> Result<Self, String> {
        if !VALID_HZ.contains(&hz) {
            return Err(format!("HZ must be one of 100, 250, 300, 1000, got {hz}"));
        }
        Ok(JiffyClock { hz })
    }

    /// The jiffies count at time t (ticks at whole multiples of 1/HZ from 0).
    pub fn jiffies(&self, t_ns: i64) -> i64 {
        mul_floor_div(t_ns, self.hz, NS_PER_S)
    }

    /// The first nanosecond of jiffy j: when the tick that starts it happens.
    pub fn tick_ns(&self, j: i64) -> i64 {
        mul_ceil_div(j, NS_PER_S, self.hz)
    }

    /// A duration the model keeps in ns that is a whole number of jiffies -> that number
    /// (rounded to the nearest, so that tick_ns() of it comes back exactly).
    pub fn to_jiffies(&self, d_ns: i64) -> i64 {
        let n = d_ns as i128 * self.hz as i128 + (NS_PER_S / 2) as i128;
        i64::try_from(n.div_euclid(NS_PER_S as i128)).expect("jiffies overflowed i64")
    }

    /// usecs_to_jiffies() [include/linux/jiffies.h]: rounds up.
    pub fn usecs_to_jiffies(&self, us: i64) -> i64 {
        mul_ceil_div(us, self.hz, 1_000_000)
    }

    /// The jiffy on which the timer wheel runs a timer armed at `clk` for `expires`
    /// (calc_wheel_index + calc_index [kernel/time/timer.c, 6.18]).
    pub fn bucket_expiry(&self, expires: i64, clk: i64) -> i64 {
        let delta = expires - clk;
        if delta < 0 {
            return clk; // already due: the current bucket
        }
        let mut lvl = 0;
        while lvl < LVL_DEPTH - 1 && delta >= (63 << (LVL_CLK_SHIFT * lvl)) {
            lvl += 1;
        }
        let shift = LVL_CLK_SHIFT * lvl;
        ((expires >> shift) + 1) << shift
    }

    /// sk_reset_timer(jiffies + when): (the expiry the timer records, in jiffies; the time in
    /// ns at which the wheel runs it).
    pub fn arm(&self, now_ns: i64, when_j: i64) -> (i64, i64) {
        let clk = self.jiffies(now_ns);
        let expires = clk + when_j;
        (expires, self.tick_ns(self.bucket_expiry(expires, clk)))
    }
}

impl Clock for JiffyClock {
    fn hz(&self) -> i64 {
        self.hz
    }

    fn jiffy(&self) -> Option<&JiffyClock> {
        Some(self)
    }

    fn reset_xmit_timer(&self, now_ns: i64, when_ns: i64) -> i64 {
        self.arm(now_ns, self.to_jiffies(when_ns)).1
    }

    fn jiffies_up(&self, d_ns: i64) -> i64 {
        self.tick_ns(self.usecs_to_jiffies(ceil_div(d_ns, NS_PER_US)))
    }

    fn rto_ns(&self, us: i64) -> i64 {
        self.tick_ns(self.usecs_to_jiffies(us))
    }

    fn within(&self, since_ns: i64, now_ns: i64, limit_ns: i64) -> bool {
        self.jiffies(now_ns) - self.jiffies(since_ns)
            < self.usecs_to_jiffies(limit_ns.div_euclid(1000))
    }

    fn ticks(&self, t_ns: i64) -> i64 {
        self.jiffies(t_ns)
    }

    fn stamp(&self, t_ns: i64) -> i64 {
        self.tick_ns(self.jiffies(t_ns))
    }

    fn stamp_ticks(&self, t_ns: i64) -> i64 {
        self.jiffies(t_ns)
    }

    fn to_ticks(&self, d_ns: i64) -> i64 {
        self.to_jiffies(d_ns)
    }

    fn usecs_to_ticks(&self, us: i64) -> i64 {
        self.usecs_to_jiffies(us)
    }

    fn ticks_ns(&self, ticks: i64) -> i64 {
        self.tick_ns(ticks)
    }

    fn timer_ns(&self, expires: i64, clk: i64) -> i64 {
        self.tick_ns(self.bucket_expiry(expires, clk))
    }
}

/// The clock a socket built with `hz` uses (Python `TcpSocket(..., hz=hz)`): 0 = exact.
pub fn clock_for(hz: i64) -> Result<Box<dyn Clock + Send + Sync>, String> {
    if hz == 0 {
        Ok(Box::new(ExactClock))
    } else {
        Ok(Box::new(JiffyClock::new(hz)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constants::NS_PER_MS;

    #[test]
    fn jiffies_and_ticks_at_every_hz() {
        for hz in VALID_HZ {
            let jc = JiffyClock::new(hz).unwrap();
            for j in [0, 1, 7, 299, 300, 12345] {
                let t = jc.tick_ns(j);
                assert_eq!(jc.jiffies(t), j);
                assert_eq!(jc.jiffies(t - 1), j - 1);
            }
            for ms in [40, 200, 500, 1000] {
                assert_eq!(jc.tick_ns(jc.to_jiffies(ms * NS_PER_MS)), ms * NS_PER_MS);
            }
        }
    }

    #[test]
    fn usecs_to_jiffies_rounds_up() {
        let jc = JiffyClock::new(250).unwrap();
        let got: Vec<i64> = [0, 1, 4000, 4001, 210_500]
            .iter()
            .map(|&u| jc.usecs_to_jiffies(u))
            .collect();
        assert_eq!(got, vec![0, 1, 1, 2, 53]);
    }

    #[test]
    fn wheel_levels() {
        let jc = JiffyClock::new(1000).unwrap();
        assert_eq!(jc.bucket_expiry(20, 10), 21);
        assert_eq!(jc.bucket_expiry(72, 10), 73);
        assert_eq!(jc.bucket_expiry(163, 100), 168);
        assert_eq!(jc.bucket_expiry(240, 40), 248);
        assert_eq!(jc.bucket_expiry(248, 40), 256);
        assert_eq!(jc.bucket_expiry(1000, 0), 1024);
        assert_eq!(jc.bucket_expiry(5, 10), 10);
    }

    #[test]
    fn first_delayed_ack_timer_as_measured_at_hz_250() {
        let jc = JiffyClock::new(250).unwrap();
        assert_eq!(jc.arm(40_800_000, 10), (20, 84 * NS_PER_MS));
        assert_eq!(
            JiffyClock::new(1000).unwrap().arm(40_800_000, 40).1,
            81 * NS_PER_MS
        );
    }

    #[test]
    fn exact_clock_fires_at_the_deadline() {
        let c = clock_for(0).unwrap();
        assert_eq!(c.hz(), 0);
        assert!(c.jiffy().is_none());
        assert_eq!(c.reset_xmit_timer(1_234_567, 200 * NS_PER_MS), 201_234_567);
        assert_eq!(c.jiffies_up(1), NS_PER_MS);
        assert_eq!(c.rto_ns(210_500), 210_500_000);
        assert!(c.within(0, 499 * NS_PER_MS, 500 * NS_PER_MS));
    }

    #[test]
    fn jiffy_clock_behind_the_trait() {
        let c = clock_for(250).unwrap();
        assert_eq!(c.hz(), 250);
        // 200 ms at HZ=250 = 50 jiffies, level 0: the bucket one jiffy later (204 ms)
        assert_eq!(c.reset_xmit_timer(0, 200 * NS_PER_MS), 204 * NS_PER_MS);
        assert_eq!(c.jiffies_up(1), 4 * NS_PER_MS);
        assert_eq!(c.rto_ns(210_500), 212 * NS_PER_MS);
        assert!(clock_for(123).is_err());
    }
}
