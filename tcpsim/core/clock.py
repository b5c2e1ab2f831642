"""The socket's clock: how the kernel's coarse time (jiffies) and its timers are modelled.

One interface, `Clock`, two implementations injected into the socket as `sk.clock`:

* `ExactClock` (the default, no CONFIG_HZ given): tcpsim's historic clock. The ACK timing
  counts 1 ms jiffies (ato, its inter-arrival update, the delayed-ACK timer are kept in ns
  and rounded to the millisecond where the kernel reads jiffies), and every timer fires at
  its exact deadline (no timer wheel).
* `JiffyClock(hz)`: a kernel built with CONFIG_HZ = hz, timer wheel included (below).

The core never asks which one it has: it computes in the clock's *ticks* (jiffies for
JiffyClock, nanoseconds for ExactClock) through the interface's conversions, so each
kernel function is written once.

The kernel's tick clock (jiffies) and the timer wheel, for a kernel built with CONFIG_HZ.

Linux counts coarse time in jiffies, 1/HZ s each (CONFIG_HZ: 1000 on Fedora/RHEL kernels,
250 on Debian/Ubuntu and on the development machine, 300 and 100 on some others). The TCP
code that works in jiffies and that the model follows:

* delayed ACKs: icsk_ack.ato, its update from the inter-arrival time in
  tcp_event_data_recv() [tcp_input.c], the RTT bound (usecs_to_jiffies of srtt) and the
  "pending timer expires within ato/4: send now" test of tcp_send_delayed_ack()
  [tcp_output.c], the doubling in tcp_delack_timer_handler() [tcp_timer.c], and the
  ping-pong test of tcp_event_data_sent() [tcp_output.c];
* the retransmission timer: icsk_rto = usecs_to_jiffies(srtt/8 + rttvar), rounded *up*
  to a whole jiffy (__tcp_set_rto, include/net/tcp.h), TCP_RTO_MIN = HZ/5;
* every icsk timer (delayed ACK, retransmit, persist): armed by sk_reset_timer() at
  `jiffies + when` (inet_csk_reset_xmit_timer, include/net/inet_connection_sock.h) on the
  timer wheel;
* tcp_invalid_ratelimit (tcp_oow_rate_limited [tcp_input.c]): elapsed tcp_jiffies32.

What stays microsecond/nanosecond based and does *not* use this clock: tcp_mstamp and
everything built on it (receive-side RTT, tcp_rcv_space_adjust / DRS, srtt itself), the
TCP timestamp option clock (milliseconds from tcp_clock_ns), and the compressed-SACK timer
(an hrtimer). The constants the model keeps in ns (TCP_ATO_MIN = 40 ms, TCP_DELACK_MAX =
200 ms, TCP_RTO_MIN = 200 ms, ...) are whole jiffies at HZ = 100, 250, 300 and 1000.

The timer wheel (kernel/time/timer.c, calc_wheel_index/calc_index [6.18]) files a timer
that expires `delta = expires - clk` jiffies from now in level n, where level n holds deltas
from 63 << 3(n-1) (level 0: below 63) and has a granularity of 8^n jiffies; the bucket's
expiry is the next multiple of the granularity *strictly after* `expires` (so that a timer
armed late in a tick never fires early). The timer runs on the tick that reaches the bucket
expiry: at level 0 one jiffy after `expires`, at level 1 (63 to 503 jiffies ahead: a
200 ms RTO at HZ = 1000) up to 8 jiffies after it. The timer keeps `expires` as requested;
code that looks at a pending timer's expiry (tcp_send_delayed_ack via icsk_delack_timeout)
sees that value, not the bucket's.

Ticks are placed at whole multiples of 1/HZ from time 0 of the run: the real tick's phase
against the traffic is not recorded anywhere (a trace's clock is not the tick's), so it
is one of the things a replay cannot reproduce exactly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from tcpsim.core.constants import (
    HZ_HALF_NS, NS_PER_MS, NS_PER_S, NS_PER_US, TCP_ATO_MIN_NS, TCP_DELACK_MAX_NS, TCP_DELACK_MIN_NS,
)

VALID_HZ = (100, 250, 300, 1000)   # the CONFIG_HZ choices of kernel/Kconfig.hz
_LVL_CLK_SHIFT = 3                  # 8 buckets of level n make one of level n + 1
_LVL_DEPTH = 9                      # levels for HZ > 100 (8 at HZ = 100: irrelevant here)


class Clock(ABC):
    """What the socket asks of time beyond `now` (ns). A *tick* is the clock's unit:
    a jiffy (JiffyClock) or a nanosecond (ExactClock). Integers throughout."""

    __slots__ = ()
    hz: int                          # CONFIG_HZ; 0 for the exact clock
    # The ACK timing's constants in ticks (to_ticks() of each), worked out once per clock:
    # the delayed-ACK code reads them for every data segment.
    ato_min_ticks: int               # TCP_ATO_MIN
    delack_min_ticks: int            # TCP_DELACK_MIN
    delack_max_ticks: int            # TCP_DELACK_MAX
    hz_half_ticks: int               # HZ / 2, tcp_send_delayed_ack()'s ceiling on ato

    @abstractmethod
    def ticks(self, t_ns: int) -> int:
        """The jiffies counter at time t, in ticks (ExactClock: t floored to 1 ms)."""

    @abstractmethod
    def stamp(self, t_ns: int) -> int:
        """tcp_jiffies32 at time t as the socket stores it in a time field (ns): the start
        of the current jiffy (ExactClock: t itself)."""

    @abstractmethod
    def stamp_ticks(self, t_ns: int) -> int:
        """A stored time field (ns, see stamp()) in ticks."""

    @abstractmethod
    def to_ticks(self, d_ns: int) -> int:
        """A duration kept in ns that is a whole number of jiffies, in ticks."""

    @abstractmethod
    def usecs_to_ticks(self, us: int) -> int:
        """usecs_to_jiffies() [include/linux/jiffies.h]: rounds up."""

    @abstractmethod
    def ticks_ns(self, ticks: int) -> int:
        """Ticks back to ns (the first nanosecond of that jiffy)."""

    @abstractmethod
    def timer_ns(self, expires: int, clk: int) -> int:
        """When a timer armed on tick `clk` to expire on tick `expires` runs (ns): the timer
        wheel's bucket (JiffyClock) or the expiry itself (ExactClock)."""

    @abstractmethod
    def reset_timer(self, now_ns: int, when_ns: int) -> int:
        """sk_reset_timer(jiffies + when) for an icsk timer armed now: when it runs (ns).
        `when_ns` is a whole number of jiffies (rto, probe0 backoff, TCP_TIMEOUT_INIT)."""

    @abstractmethod
    def jiffies_up(self, d_ns: int) -> int:
        """A duration rounded up to whole jiffies, in ns (usecs_to_jiffies() and back)."""

    # -- the delayed-ACK code's reads, one call each (it runs for every data segment) ------------

    def ato_sample(self, now_ns: int, ato_ns: int, lrcvtime_ns: int) -> tuple[int, int, int]:
        """What the ato update of tcp_event_data_recv() reads and writes, in one call:
        (tcp_jiffies32 now as the new lrcvtime stores it, in ns; ato in ticks; the ticks
        elapsed since the old lrcvtime)."""
        nj = self.ticks(now_ns)
        return self.ticks_ns(nj), self.to_ticks(ato_ns), nj - self.stamp_ticks(lrcvtime_ns)

    def delack_ticks(self, now_ns: int, ato_ns: int, srtt_us: int,
                     delack_max_ns: int) -> tuple[int, int, int, int]:
        """What tcp_send_delayed_ack() reads, in ticks, in one call: (jiffies now, ato,
        usecs_to_jiffies(srtt), the profile's delack_max)."""
        return (self.ticks(now_ns), self.to_ticks(ato_ns), self.usecs_to_ticks(srtt_us),
                self.to_ticks(delack_max_ns))


class ExactClock(Clock):
    """tcpsim's default clock: 1 ms jiffies for the ACK timing, timers at their exact
    deadline, the RTO to the microsecond."""

    __slots__ = ()
    hz = 0
    ato_min_ticks = TCP_ATO_MIN_NS
    delack_min_ticks = TCP_DELACK_MIN_NS
    delack_max_ticks = TCP_DELACK_MAX_NS
    hz_half_ticks = HZ_HALF_NS

    def __repr__(self) -> str:
        return "ExactClock()"

    def ticks(self, t_ns: int) -> int:
        return t_ns - t_ns % NS_PER_MS

    def stamp(self, t_ns: int) -> int:
        return t_ns

    def stamp_ticks(self, t_ns: int) -> int:
        return t_ns

    def to_ticks(self, d_ns: int) -> int:
        return d_ns

    def usecs_to_ticks(self, us: int) -> int:
        return us * NS_PER_US

    def ticks_ns(self, ticks: int) -> int:
        return ticks

    def timer_ns(self, expires: int, clk: int) -> int:
        return expires

    def reset_timer(self, now_ns: int, when_ns: int) -> int:
        return now_ns + when_ns

    def jiffies_up(self, d_ns: int) -> int:
        return -(-d_ns // NS_PER_MS) * NS_PER_MS

    # the generic forms above with the conversions written out (ticks are ns here)

    def ato_sample(self, now_ns: int, ato_ns: int, lrcvtime_ns: int) -> tuple[int, int, int]:
        nj = now_ns - now_ns % NS_PER_MS
        return nj, ato_ns, nj - lrcvtime_ns

    def delack_ticks(self, now_ns: int, ato_ns: int, srtt_us: int,
                     delack_max_ns: int) -> tuple[int, int, int, int]:
        return now_ns - now_ns % NS_PER_MS, ato_ns, srtt_us * NS_PER_US, delack_max_ns


class JiffyClock(Clock):
    """Jiffies of a kernel with CONFIG_HZ = hz, and where its timer wheel fires timers.
    Integer arithmetic throughout (at HZ = 300 a jiffy is 3 333 333.3 ns)."""

    __slots__ = ("hz", "ato_min_ticks", "delack_min_ticks", "delack_max_ticks", "hz_half_ticks")

    def __init__(self, hz: int) -> None:
        if hz not in VALID_HZ:
            raise ValueError(f"HZ must be one of {', '.join(map(str, VALID_HZ))}, got {hz!r}")
        self.hz = hz
        self.ato_min_ticks = self.to_ticks(TCP_ATO_MIN_NS)
        self.delack_min_ticks = self.to_ticks(TCP_DELACK_MIN_NS)
        self.delack_max_ticks = self.to_ticks(TCP_DELACK_MAX_NS)
        self.hz_half_ticks = self.to_ticks(HZ_HALF_NS)

    def __repr__(self) -> str:
        return f"JiffyClock(hz={self.hz})"

    def jiffies(self, t_ns: int) -> int:
        """The jiffies count at time t (ticks at whole multiples of 1/HZ from 0)."""
        return t_ns * self.hz // NS_PER_S

    def tick_ns(self, j: int) -> int:
        """The first nanosecond of jiffy j: when the tick that starts it happens."""
        return -(-j * NS_PER_S // self.hz)

    def to_jiffies(self, d_ns: int) -> int:
        """A duration the model keeps in ns that is a whole number of jiffies -> that number
        (rounded to the nearest, so that tick_ns() of it comes back exactly)."""
        return (d_ns * self.hz + NS_PER_S // 2) // NS_PER_S

    def usecs_to_jiffies(self, us: int) -> int:
        """usecs_to_jiffies() [include/linux/jiffies.h]: rounds up."""
        return -(-us * self.hz // 1_000_000)

    def bucket_expiry(self, expires: int, clk: int) -> int:
        """The jiffy on which the timer wheel runs a timer armed at `clk` for `expires`
        (calc_wheel_index + calc_index [kernel/time/timer.c, 6.18])."""
        delta = expires - clk
        if delta < 0:
            return clk                                  # already due: the current bucket
        lvl = 0
        while lvl < _LVL_DEPTH - 1 and delta >= (63 << (_LVL_CLK_SHIFT * lvl)):
            lvl += 1
        shift = _LVL_CLK_SHIFT * lvl
        return ((expires >> shift) + 1) << shift

    # -- the Clock interface -----------------------------------------------------------------

    def ticks(self, t_ns: int) -> int:
        return t_ns * self.hz // NS_PER_S

    def stamp(self, t_ns: int) -> int:
        return self.tick_ns(self.jiffies(t_ns))

    def stamp_ticks(self, t_ns: int) -> int:
        return t_ns * self.hz // NS_PER_S

    def to_ticks(self, d_ns: int) -> int:
        return self.to_jiffies(d_ns)

    def usecs_to_ticks(self, us: int) -> int:
        return -(-us * self.hz // 1_000_000)

    def ticks_ns(self, ticks: int) -> int:
        return -(-ticks * NS_PER_S // self.hz)

    def timer_ns(self, expires: int, clk: int) -> int:
        return self.tick_ns(self.bucket_expiry(expires, clk))

    def reset_timer(self, now_ns: int, when_ns: int) -> int:
        return self.arm(now_ns, self.to_jiffies(when_ns))[1]

    def jiffies_up(self, d_ns: int) -> int:
        return self.tick_ns(self.usecs_to_jiffies(-(-d_ns // NS_PER_US)))

    # -- the wheel ---------------------------------------------------------------------------

    def arm(self, now_ns: int, when_j: int) -> tuple[int, int]:
        """sk_reset_timer(jiffies + when): (the expiry the timer records, in jiffies; the time
        in ns at which the wheel runs it)."""
        clk = now_ns * self.hz // NS_PER_S
        expires = clk + when_j
        return expires, self.tick_ns(self.bucket_expiry(expires, clk))


def make_clock(hz: int) -> Clock:
    """The clock of a socket: JiffyClock(hz) for a CONFIG_HZ, else (hz = 0) ExactClock."""
    return JiffyClock(hz) if hz else ExactClock()


def parse_hz(value: object, where: str = "hz") -> int:
    """A CONFIG_HZ value from a scenario, option or trace -> int; ValueError naming `where`
    and the fix otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{where}: expected the kernel's CONFIG_HZ, one of "
                         f"{', '.join(map(str, VALID_HZ))}, got {value!r}")
    try:
        hz = int(str(value).strip())
    except ValueError:
        hz = -1
    if hz not in VALID_HZ:
        raise ValueError(f"{where}: {value!r} is not a kernel tick rate; write one of "
                         f"{', '.join(map(str, VALID_HZ))} (the CONFIG_HZ of the kernel to model: "
                         f"zcat /proc/config.gz | grep 'CONFIG_HZ=')")
    return hz
