"""Python patches for the parity suite and the cost of a Python patch (issue #13).

`ShrinkWindowTwin` is the built-in `shrink-window` patch (models/patches/shrink_window.py)
written as a user would, overriding the same one decision point: on the native engine its
run gives the built-in's trace (benchmarks/py_patch_cost.py checks that, then times both).
`Everything` exercises what a Python patch may do on either engine -- `super()`, its own
counter bumped from a read-only point, its own sysctl, a constant of the era, a point
without a socket argument, writes from a procedure -- for benchmarks/parity.py.
"""

from tcpsim.core.sysctl import SysctlSpec


class ShrinkWindowTwin:
    """tcp_shrink_window=1 on a kernel without the sysctl, as the built-in patch does it."""

    name = "shrink-window-twin"

    def shrink_allowed(self, sk):
        """Models the test in `tcp_select_window()` [tcp_output.c, 6.5]: retract with window
        scaling (the built-in also reads tcp_shrink_window, which it defaults to 1)."""
        return sk.conn.rcv_wscale != 0


class Everything:
    """A test patch touching every kind of decision point a patch may override."""

    name = "everything"
    counters = {"TCPEverythingShrinkAsked": "shrink_allowed() calls (test patch)"}
    new_sysctls = (SysctlSpec("tcp_everything_half_grow", default=1, lo=0, hi=1),)
    PINGPONG_THRESH = 2

    def shrink_allowed(self, sk):
        sk.mib.TCPEverythingShrinkAsked += 1
        return super().shrink_allowed(sk) or sk.rcv.rcv_wnd > 8 * sk.ack.ack_rcv_mss

    def grow_window(self, sk, skb, adjust, seg):
        before = sk.rcv.rcv_ssthresh
        super().grow_window(sk, skb, adjust, seg)
        if sk.sysctl.tcp_everything_half_grow and sk.rcv.rcv_ssthresh > before:
            sk.rcv.rcv_ssthresh = before + (sk.rcv.rcv_ssthresh - before) // 2

    def ts_rtt_sample_us(self, delta_ms):
        return super().ts_rtt_sample_us(delta_ms) + 100
