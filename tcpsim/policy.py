"""Kernel profiles and patches: the kernel's decision points as overridable methods.

A *kernel policy* is a class whose methods are the decision points of the receive path
(window selection, admission, pruning, autotuning, ...). The core (tcpsim/core) calls them
through `sk.k`; it never decides those things itself.

Kernel eras are subclasses: `models/linux_6_6.py` defines `Linux66(Linux61)` and overrides
exactly what 6.6 changed, so "what 6.6 changed" is that one class. A *patch* is a mixin
class overriding one or two decision points; applying it to a profile puts it first in the
method resolution order, so `super()` reaches the unpatched kernel:

    class ShrinkWindow(Patch):
        name = "shrink-window"
        def advertise_window(self, sk): ...

A *profile* names a kernel class with a one-line summary and the sysctls that exist on it.

Decision points (method names; the kernel function each models is in its docstring):

    truesize / devices    tcpsim.core.devices (per ingress device, not per kernel)
    try_coalesce          tcp_try_coalesce
    win_from_space        tcp_win_from_space (adv_win_scale, then scaling_ratio)
    select_window         __tcp_select_window (the raw window, no never-shrink rule)
    advertise_window      tcp_select_window (never-shrink rule, NOMEM zero window, MIBs)
    grow_window           tcp_grow_window
    clamp_window          tcp_clamp_window
    admit_in_order        the memory check of tcp_data_queue's in-order branch
    try_rmem_schedule     tcp_try_rmem_schedule
    prune_queue           tcp_prune_queue
    prune_ofo_queue       tcp_prune_ofo_queue
    rcv_space_adjust      tcp_rcv_space_adjust (DRS)
    measure_rcv_mss       tcp_measure_rcv_mss (+ scaling_ratio sampling, 6.6+)
    rcv_rtt_measure(_ts)  tcp_rcv_rtt_measure / tcp_rcv_rtt_measure_ts
    tcp_sequence          tcp_sequence (+ 6.17 beyond-window rule)
    select_initial_window tcp_select_initial_window
    init_buffer_space     tcp_init_buffer_space
    dec_quickack_mode     tcp_dec_quickack_mode
    rtx_probe0_timed_out  the zero-window retransmission give-up rule
    grow_skb              tcp_grow_skb (6.10+)
    tso_rtt_bytes         the min_rtt term of tcp_tso_autosize (5.18+)
    tso_defer_ack_window  the next-ACK test of tcp_tso_should_defer (295ce1eb, 6.18)
    loss_probe_timeout    the probe timeout of tcp_schedule_loss_probe (1c2709cfff1d, 6.7)
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from tcpsim.core.sysctl import Sysctls

DECISION_POINTS: tuple[str, ...] = (
    "try_coalesce", "win_from_space", "space_from_win", "select_window", "advertise_window",
    "grow_window", "clamp_window", "admit_in_order", "try_rmem_schedule", "prune_queue",
    "prune_ofo_queue", "rcv_space_adjust", "rcvbuf_grow", "ofo_rcvbuf_grow", "measure_rcv_mss",
    "ofo_measure_rcv_mss", "rcv_rtt_measure", "rcv_rtt_measure_ts", "tcp_sequence",
    "zero_window_accepts", "select_initial_window", "init_rcv_ssthresh", "init_buffer_space",
    "dec_quickack_mode", "pingpong_thresh", "delack_max", "may_update_window",
    "rtx_probe0_timed_out", "set_window_clamp", "on_rcvbuf_set", "ofo_dsack",
    "sequence_window", "overwindow_drop", "grow_skb", "tso_rtt_bytes", "tso_defer_ack_window",
    "loss_probe_timeout",
)


class Patch:
    """Base of patches: a mixin that overrides decision points of any compatible kernel.

    `name` is what users type (`--policy shrink-window`); `summary` is one line for
    listings; `requires` names a method the base kernel must have (compatibility check).
    """

    name: str = ""
    summary: str = ""
    sysctls: frozenset[str] = frozenset()   # sysctls the patch adds (e.g. tcp_collapse_max_bytes)


@dataclass(frozen=True)
class Profile:
    """A selectable kernel: a policy class, a one-line summary, its sysctl defaults."""

    name: str
    kernel: type
    summary: str
    patches: tuple[type, ...] = ()
    extra_sysctls: frozenset[str] = field(default_factory=frozenset)

    def policy(self) -> Any:
        """A fresh policy object for one socket (patches first in the MRO)."""
        cls = self.kernel
        if self.patches:
            cls = type(f"{cls.__name__}+" + "+".join(p.__name__ for p in self.patches),
                       (*reversed(self.patches), cls), {})
        return cls()

    def with_patches(self, *patches: type) -> "Profile":
        """This profile with patches applied (later patches override earlier ones)."""
        names = "+".join(getattr(p, "name", "") or p.__name__ for p in patches)
        extra = self.extra_sysctls.union(*(getattr(p, "sysctls", frozenset()) for p in patches))
        return Profile(f"{self.name}+{names}", self.kernel, self.summary,
                       self.patches + tuple(patches), frozenset(extra))

    def default_sysctls(self) -> Sysctls:
        """The kernel's defaults, as the patches change them."""
        return self.policy().default_sysctls()

    def known_sysctls(self) -> frozenset[str]:
        return self.kernel.SYSCTLS | self.extra_sysctls

    def decision_points(self) -> list[tuple[str, str]]:
        """(decision point, class that defines it) in this profile, for `profiles show`."""
        cls = type(self.policy())
        out = []
        for name in DECISION_POINTS:
            for klass in cls.__mro__:
                if name in vars(klass):
                    out.append((name, klass.__qualname__))
                    break
        return out

    def source_of(self, point: str) -> str:
        """The source of one decision point as this profile resolves it."""
        return inspect.getsource(getattr(type(self.policy()), point))
