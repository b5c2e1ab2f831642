"""Kernel policies: every decision point of the receive path, declared once.

Theory of operation
-------------------
The core (tcpsim/core) is the mechanism of a TCP socket: queues, sequence numbers, timers,
counters. Wherever Linux releases differ -- or a patch makes them differ -- the core does not
decide by itself: it asks the *policy* object it holds in `sk.k`. Each such question is a
*decision point*. `KernelPolicy` below declares every one of them, once: its name, its typed
signature, the kernel function it models (`file:function [version]`) and its kind.

* A **decision** returns a value the core acts on: how large a window to offer, whether a
  segment is acceptable, how long a timer runs. Some also do the bookkeeping the modelled
  kernel function does on the way (a counter, rcv_wnd), exactly where the kernel does it.
* A **procedure** returns nothing and changes socket state: raise rcv_ssthresh, resize
  sk_rcvbuf, leave quick-ack mode.
* A **constant of the era** is a fact of a release: a class attribute (`RMEM2_DEFAULT`,
  `PINGPONG_THRESH`) or a method without a socket argument that reports one
  (`default_sysctls()`, `pingpong_thresh()`).

Eras. `models/linux_5_15.py` defines `Linux515(KernelPolicy)` and implements every point as
5.15 does it -- hooks only later kernels use included, with 5.15's answer. Each later era
subclasses the one before and overrides only what that release changed, so the class body of
`Linux66` in models/linux_6_6.py *is* what 6.6 changed. `tcpsim profiles show NAME` lists every
point with the class that defines it for that profile; docs/profiles.md is generated from the
same declaration.

Patches. A patch is a mixin class (normally a subclass of `Patch`) overriding one or a few
points. Applying it to a profile builds `class Linux66+MyPatch(MyPatch, Linux66)`: the patch
comes first in the method resolution order, so its method is the one called, and
`super().point(...)` inside it reaches the unpatched kernel's method:

    class ShrinkWindow(Patch):
        name = "shrink-window"
        def shrink_allowed(self, sk: TcpSocket) -> bool:
            return sk.conn.rcv_wscale != 0          # super().shrink_allowed(sk) = the kernel's

Loading a patch checks it against this declaration (tcpsim/catalog.py): every public method
must be a declared point taking the declared parameters, and a patch is applied at most once.
A patch may add sysctls (`new_sysctls`) and nstat counters (`counters`) of its own.

A *profile* names a kernel class with a one-line summary; with patches applied it also knows
the sysctls and counters they add.
"""

from __future__ import annotations

import enum
import functools
import inspect
from abc import ABC, abstractmethod
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Callable, TypeVar, get_type_hints

from tcpsim.answers import checked_method
from tcpsim.core.mib import declare_counter
from tcpsim.core.sysctl import SysctlSpec, Sysctls, declare_patch_sysctl

if TYPE_CHECKING:
    from tcpsim.core.segment import Segment
    from tcpsim.core.skb import Skb
    from tcpsim.core.socket import TcpSocket


class Kind(enum.Enum):
    """What a decision point is (see the module docstring)."""

    DECISION = "decision"
    PROCEDURE = "procedure"
    CONSTANT = "constant"


@dataclass(frozen=True)
class Constant:
    """Marks a class attribute of `KernelPolicy` as a constant of the era."""

    models: str


_F = TypeVar("_F", bound=Callable[..., Any])


def _mark(kind: Kind, models: str) -> Callable[[_F], _F]:
    def mark(fn: _F) -> _F:
        setattr(fn, "__decision_point__", (kind, models))
        return fn
    return mark


def decision(models: str) -> Callable[[_F], _F]:
    """Declare a decision point that returns a value; `models` is `file:function [version]`."""
    return _mark(Kind.DECISION, models)


def procedure(models: str) -> Callable[[_F], _F]:
    """Declare a decision point that changes socket state and returns nothing."""
    return _mark(Kind.PROCEDURE, models)


def era_constant(models: str) -> Callable[[_F], _F]:
    """Declare a method without a socket argument that reports a fact of the release."""
    return _mark(Kind.CONSTANT, models)


class KernelPolicy(ABC):
    """Every decision point of the receive path (and the few of the send path tcpsim models).

    Implemented in full by `models.linux_5_15.Linux515`; later eras override. Docstrings here
    say what the point decides; each era's method says how that release decides it.
    """

    # -- constants of the era ----------------------------------------------------------------

    RELEASE: Annotated[str, Constant("Makefile:VERSION.PATCHLEVEL")]
    SYSCTLS: Annotated[frozenset[str], Constant("net/ipv4/sysctl_net_ipv4.c:ipv4_net_table")]
    RMEM2_DEFAULT: Annotated[int, Constant("net/ipv4/tcp_ipv4.c:tcp_sk_init (tcp_rmem[2])")]
    PINGPONG_THRESH: Annotated[int, Constant("include/net/inet_connection_sock.h:TCP_PINGPONG_THRESH")]
    DEFAULT_SCALING_RATIO: Annotated[int, Constant("include/net/tcp.h:tcp_scaling_ratio_init [6.6]")]
    COLLAPSE_NS_PER_BYTE: Annotated[float, Constant("tcp_input.c:tcp_collapse (cost model)")]
    COLLAPSE_NS_FIXED: Annotated[int, Constant("tcp_input.c:tcp_collapse (cost model)")]
    MEMCG_SOFTIRQ_ATOMIC: Annotated[bool, Constant("include/net/sock.h:gfp_memcg_charge")]

    @abstractmethod
    @era_constant("net/ipv4/tcp_ipv4.c:tcp_sk_init")
    def default_sysctls(self) -> Sysctls:
        """The sysctl defaults of this kernel."""

    @abstractmethod
    @era_constant("include/net/tcp.h:tcp_scaling_ratio_init [6.6]")
    def initial_scaling_ratio(self) -> int:
        """scaling_ratio before any segment is measured (-1: the era has none)."""

    @abstractmethod
    @era_constant("include/net/inet_connection_sock.h:inet_csk_in_pingpong_mode")
    def pingpong_thresh(self) -> int:
        """How many quick data exchanges make a connection interactive."""

    # -- memory <-> window --------------------------------------------------------------------

    @abstractmethod
    @decision("include/net/tcp.h:tcp_win_from_space [5.15]")
    def win_from_space(self, sk: TcpSocket, space: int) -> int:
        """The window a memory budget (bytes of truesize) is worth."""

    @abstractmethod
    @decision("include/net/tcp.h:tcp_space_from_win [6.6]")
    def space_from_win(self, sk: TcpSocket, win: int) -> int:
        """The memory budget a window needs (inverse of win_from_space)."""

    # -- handshake and socket options ----------------------------------------------------------

    @abstractmethod
    @decision("tcp_output.c:tcp_select_initial_window [5.15]")
    def initial_rcv_wnd(self, sk: TcpSocket, space: int) -> int:
        """The initial rcv_wnd for an initial space (the 64 KiB cap, v4.19 .. 6.9)."""

    @abstractmethod
    @procedure("tcp_output.c:tcp_select_initial_window [5.15]")
    def select_initial_window(self, sk: TcpSocket, space: int, mss: int) -> None:
        """Set rcv_wnd, rcv_wscale and window_clamp at the handshake."""

    @abstractmethod
    @procedure("tcp_output.c:tcp_connect_init [5.15]")
    def init_rcv_ssthresh(self, sk: TcpSocket) -> None:
        """Set the initial rcv_ssthresh."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_init_buffer_space [5.15]")
    def init_buffer_space(self, sk: TcpSocket) -> None:
        """Set window_clamp, rcv_ssthresh and the DRS baseline once established."""

    @abstractmethod
    @procedure("tcp.c:tcp_set_window_clamp [5.15]")
    def set_window_clamp(self, sk: TcpSocket, val: int) -> None:
        """TCP_WINDOW_CLAMP (and later kernels' own clamp updates)."""

    @abstractmethod
    @procedure("net/core/sock.c:sock_setsockopt SO_RCVBUF [5.15]")
    def on_rcvbuf_set(self, sk: TcpSocket) -> None:
        """What else follows SO_RCVBUF on an open socket."""

    # -- receiver RTT -------------------------------------------------------------------------

    @abstractmethod
    @procedure("tcp_input.c:tcp_rcv_rtt_update [5.15]")
    def rcv_rtt_update(self, sk: TcpSocket, sample_us: int, win_dep: bool) -> None:
        """Fold one receiver-RTT sample into rcv_rtt_us8."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_rcv_rtt_measure [5.15]")
    def rcv_rtt_measure(self, sk: TcpSocket) -> None:
        """Receiver RTT without timestamps: one window of data per sample."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_rcv_rtt_measure_ts [5.15]")
    def rcv_rtt_measure_ts(self, sk: TcpSocket, seg: Segment) -> None:
        """Receiver RTT from the echoed timestamp of a data segment."""

    @abstractmethod
    @decision("tcp_input.c:tcp_rtt_tsopt_us [5.15]")
    def ts_rtt_sample_us(self, delta_ms: int) -> int:
        """A timestamp difference (ms) as an RTT sample in us; -1 = no sample."""

    # -- rcv_mss and scaling_ratio ------------------------------------------------------------

    @abstractmethod
    @procedure("tcp_input.c:tcp_measure_rcv_mss [5.15]")
    def measure_rcv_mss(self, sk: TcpSocket, seg: Segment, skb: Skb) -> None:
        """Learn the peer's segment size from an in-order segment."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_measure_rcv_mss [6.6]")
    def on_rcv_mss_change(self, sk: TcpSocket, seg: Segment, skb: Skb) -> None:
        """What a segment that changes rcv_mss teaches besides (scaling_ratio, 6.6+)."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_measure_rcv_mss [6.11]")
    def on_scaling_ratio_change(self, sk: TcpSocket) -> None:
        """What follows a change of the measured scaling_ratio."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_data_queue_ofo [6.17]")
    def ofo_measure_rcv_mss(self, sk: TcpSocket, seg: Segment, skb: Skb) -> None:
        """Whether out-of-order data updates rcv_mss."""

    # -- window growth and selection ----------------------------------------------------------

    @abstractmethod
    @procedure("tcp_input.c:tcp_grow_window [5.15]")
    def grow_window(self, sk: TcpSocket, skb: Skb, adjust: bool, seg: Segment) -> None:
        """Raise rcv_ssthresh for a segment whose payload is worth its memory."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_grow_window [5.15] (memory pressure)")
    def grow_under_pressure(self, sk: TcpSocket) -> None:
        """What tcp_grow_window() does under memory pressure."""

    @abstractmethod
    @procedure("include/net/tcp.h:tcp_adjust_rcv_ssthresh [5.15]")
    def pressure_adjust(self, sk: TcpSocket) -> None:
        """Lower rcv_ssthresh under memory pressure."""

    @abstractmethod
    @decision("tcp_output.c:__tcp_select_window [6.5] (tcp_shrink_window)")
    def shrink_allowed(self, sk: TcpSocket) -> bool:
        """May the offered window retract?"""

    @abstractmethod
    @decision("tcp_output.c:__tcp_select_window [5.15]")
    def select_window(self, sk: TcpSocket) -> int:
        """The window memory allows, in bytes, before the never-shrink rule."""

    @abstractmethod
    @decision("tcp_output.c:tcp_select_window [5.15]")
    def advertise_window(self, sk: TcpSocket) -> int:
        """The raw 16-bit window field of the next segment (stores rcv_wnd, rcv_wup)."""

    @abstractmethod
    @decision("tcp_output.c:tcp_select_window [6.6] (ICSK_ACK_NOMEM)")
    def nomem_window(self, sk: TcpSocket) -> int:
        """The window field of the ACK a memory drop asks for."""

    # -- sequence checks and admission --------------------------------------------------------

    @abstractmethod
    @decision("tcp_input.c:tcp_sequence [5.15]")
    def tcp_sequence(self, sk: TcpSocket, seg: Segment) -> str:
        """Is the segment acceptable? A drop reason, or '' when it is."""

    @abstractmethod
    @decision("include/net/tcp.h:tcp_receive_window [5.15]")
    def sequence_window(self, sk: TcpSocket) -> int:
        """The window tcp_sequence() checks a segment against."""

    @abstractmethod
    @decision("tcp_input.c:tcp_sequence [6.17] (beyond window)")
    def end_beyond_window(self, sk: TcpSocket, seg: Segment, right: int) -> bool:
        """Does the segment end past the right edge `right`?"""

    @abstractmethod
    @procedure("tcp_input.c:tcp_data_queue [5.15] (TCP_OVERWINDOW)")
    def overwindow_drop(self, sk: TcpSocket) -> None:
        """Bookkeeping of a segment dropped for starting beyond the window."""

    @abstractmethod
    @decision("tcp_input.c:tcp_data_queue [5.15] (zero window)")
    def zero_window_accepts(self, sk: TcpSocket, seg: Segment) -> bool:
        """Is this in-order segment accepted although the window is zero?"""

    @abstractmethod
    @decision("tcp_input.c:tcp_can_ingest [6.17]")
    def can_ingest(self, sk: TcpSocket, skb: Skb) -> bool:
        """Does the skb fit the receive budget now?"""

    @abstractmethod
    @decision("tcp_input.c:tcp_data_queue [5.15] (in-order memory check)")
    def admit_in_order(self, sk: TcpSocket, skb: Skb) -> bool:
        """May an in-order skb be queued (charging its memory)?"""

    @abstractmethod
    @decision("tcp_input.c:tcp_try_rmem_schedule [5.15]")
    def try_rmem_schedule(self, sk: TcpSocket, skb: Skb, size: int) -> bool:
        """Find `size` bytes of receive memory, pruning if needed."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_clamp_window [5.15]")
    def clamp_window(self, sk: TcpSocket) -> None:
        """Raise sk_rcvbuf to the memory in use, or cut rcv_ssthresh."""

    @abstractmethod
    @decision("tcp_input.c:tcp_prune_queue [5.15]")
    def prune_queue(self, sk: TcpSocket, skb: Skb) -> int:
        """Make room for the skb: 0 on success, -1 (RcvPruned) when still over budget."""

    @abstractmethod
    @decision("tcp_input.c:tcp_prune_queue [5.15] (when to clamp)")
    def needs_clamp(self, sk: TcpSocket, skb: Skb) -> bool:
        """Does tcp_prune_queue() call tcp_clamp_window()?"""

    @abstractmethod
    @procedure("tcp_input.c:tcp_collapse_ofo_queue, tcp_collapse [5.15]")
    def collapse(self, sk: TcpSocket, skb: Skb) -> None:
        """The collapse step of tcp_prune_queue()."""

    @abstractmethod
    @decision("tcp_input.c:tcp_collapse (cost model)")
    def collapse_cost_ns(self, sk: TcpSocket, copied: int) -> int:
        """How long a collapse rewriting `copied` payload bytes takes, in ns."""

    @abstractmethod
    @decision("tcp_input.c:tcp_prune_ofo_queue [5.15]")
    def prune_ofo_queue(self, sk: TcpSocket, skb: Skb) -> bool:
        """Drop out-of-order data to make room; True when it pruned."""

    @abstractmethod
    @decision("tcp_input.c:tcp_prune_ofo_queue [6.2] (stop test)")
    def ofo_prune_done(self, sk: TcpSocket, dropped: Skb) -> bool:
        """May tcp_prune_ofo_queue() stop after dropping `dropped`?"""

    @abstractmethod
    @decision("tcp_input.c:tcp_try_coalesce [5.15]")
    def try_coalesce(self, sk: TcpSocket, to: Skb, frm: Skb) -> bool:
        """Merge `frm` into the queued skb `to`?"""

    @abstractmethod
    @decision("tcp_input.c:tcp_ofo_queue [5.15] (D-SACK)")
    def ofo_dsack(self, sk: TcpSocket, skb: Skb, dsack_high: int) -> tuple[int, int]:
        """D-SACK for an OFO skb now in order: (D-SACK end, new dsack_high)."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_data_queue_ofo [6.18] (tcp_rcvbuf_grow)")
    def ofo_rcvbuf_grow(self, sk: TcpSocket) -> None:
        """Whether out-of-order data grows sk_rcvbuf."""

    # -- receive buffer autotuning (DRS) ------------------------------------------------------

    @abstractmethod
    @decision("tcp_input.c:tcp_rcv_space_adjust [5.15] (once per RTT)")
    def rcv_space_gate_us(self, sk: TcpSocket) -> int:
        """Earliest tcp_mstamp (us) at which DRS acts, -1 when it cannot yet."""

    @abstractmethod
    @decision("tcp_input.c:tcp_rcv_space_adjust [5.15] (copied)")
    def rcv_space_copied(self, sk: TcpSocket, copied_seq: int, rcvq_seq: int) -> int:
        """Bytes DRS credits to this RTT."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_rcv_space_adjust [5.15]")
    def rcv_space_adjust(self, sk: TcpSocket) -> None:
        """Receive buffer autotuning, once per receiver RTT."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_rcv_space_adjust [5.15] (sizing)")
    def grow_rcvbuf(self, sk: TcpSocket, copied: int) -> None:
        """Size sk_rcvbuf for `copied` bytes per RTT (before 6.16)."""

    @abstractmethod
    @procedure("tcp_input.c:tcp_rcvbuf_grow [6.16]")
    def rcvbuf_grow(self, sk: TcpSocket, newval: int) -> None:
        """Size sk_rcvbuf for `newval` bytes per RTT (6.16+)."""

    @abstractmethod
    @decision("tcp_input.c:tcp_rcvbuf_grow [6.18] (growth term)")
    def rcvbuf_grow_term(self, sk: TcpSocket, newval: int, oldval: int) -> int:
        """The slow-start growth term tcp_rcvbuf_grow() adds to the window."""

    # -- ACKs ---------------------------------------------------------------------------------

    @abstractmethod
    @decision("tcp_output.c:tcp_send_delayed_ack [5.15] (icsk_delack_max)")
    def delack_max(self, sk: TcpSocket) -> int:
        """The delayed-ACK timeout cap, in ns."""

    @abstractmethod
    @decision("tcp_input.c:__tcp_ack_snd_check [5.15] (SACK compression timer)")
    def comp_sack_delay_ns(self, sk: TcpSocket, rtt_us8: int) -> int:
        """How long compressed SACKs wait (ns), for an RTT estimate rtt_us8 (us << 3)."""

    @abstractmethod
    @procedure("tcp_output.c:tcp_dec_quickack_mode [5.15]")
    def dec_quickack_mode(self, sk: TcpSocket) -> None:
        """Use up quick ACKs as ACKs are sent."""

    # -- sender side --------------------------------------------------------------------------

    @abstractmethod
    @decision("tcp_input.c:tcp_may_update_window [5.15]")
    def may_update_window(self, sk: TcpSocket, seg: Segment, ack: int, nwin: int) -> bool:
        """Does this ACK update the sender's snd_wnd?"""

    @abstractmethod
    @decision("tcp_timer.c:tcp_retransmit_timer [5.15] (tcp_rtx_probe0_timed_out)")
    def rtx_probe0_timed_out(self, sk: TcpSocket) -> bool:
        """Give up a zero-window retransmission?"""

    @abstractmethod
    @procedure("tcp_output.c:tcp_grow_skb [6.10]")
    def grow_skb(self, sk: TcpSocket, q: deque[int], missing: int) -> None:
        """Let the head of the write queue take `missing` bytes from the next skb."""

    @abstractmethod
    @decision("tcp_output.c:tcp_tso_autosize [5.18] (min_rtt term)")
    def tso_rtt_bytes(self, sk: TcpSocket) -> int:
        """Bytes the min_rtt term adds to the TSO size."""

    @abstractmethod
    @decision("tcp_output.c:tcp_event_new_data_sent [5.18] (tcp_check_space)")
    def new_data_checks_space(self, sk: TcpSocket) -> bool:
        """Does sending new data run tcp_check_space() (the send buffer's growth)?"""

    @abstractmethod
    @decision("tcp_output.c:tcp_tso_should_defer [5.15] (next-ACK test)")
    def tso_defer_ack_window(self, sk: TcpSocket, srtt_ns: int) -> int:
        """How soon (ns) the next ACK must be due for a TSO skb to wait."""

    @abstractmethod
    @decision("tcp_output.c:tcp_schedule_loss_probe [5.15]")
    def loss_probe_timeout(self, sk: TcpSocket) -> int:
        """The tail-loss-probe timeout, in ns."""

    # -- congestion control (tcpsim/core/cong) ----------------------------------------------

    @abstractmethod
    @decision("tcp_cubic.c:hystart_ack_delay [5.15]")
    def hystart_ack_delay(self, sk: TcpSocket) -> int:
        """HyStart's ACK-train allowance (us) for ACKs delayed by GSO-sized bursts."""

    @abstractmethod
    @decision("tcp_cubic.c:hystart_update [6.14] (round reset before the low-window test)")
    def hystart_round_reset_first(self, sk: TcpSocket) -> bool:
        """Does HyStart track its rounds below hystart_low_window too?"""


@dataclass(frozen=True)
class DecisionPoint:
    """One declared point: what `profiles show`, docgen and the patch loader read."""

    name: str
    kind: Kind
    models: str                 # the kernel function modelled: file:function [version]
    summary: str                # what the point decides
    signature: str              # "(sk: TcpSocket, space: int) -> int", or ": int" (attribute)
    params: tuple[str, ...]     # parameter names after self; () for an attribute
    is_method: bool

    @property
    def returns(self) -> str:
        """The declared return type ("int", "bool", "None", ...; "" for an attribute)."""
        return self.signature.rpartition(" -> ")[2] if self.is_method else ""


def _declare() -> dict[str, DecisionPoint]:
    """Read the points off KernelPolicy, in declaration order."""
    points: dict[str, DecisionPoint] = {}
    hints = get_type_hints(KernelPolicy, include_extras=True)
    for name in KernelPolicy.__annotations__:
        marker = next(m for m in hints[name].__metadata__ if isinstance(m, Constant))
        tp = hints[name].__origin__
        points[name] = DecisionPoint(name, Kind.CONSTANT, marker.models, "the era's value",
                                     f": {tp.__name__ if isinstance(tp, type) else tp}", (), False)
    for name, fn in vars(KernelPolicy).items():
        mark = getattr(fn, "__decision_point__", None)
        if mark is None:
            continue
        sig = inspect.signature(fn)
        params = tuple(sig.parameters)[1:]
        text = str(sig).replace("'", "").replace("self, ", "", 1).replace("(self)", "()", 1)
        doc = " ".join((fn.__doc__ or "").split())
        points[name] = DecisionPoint(name, mark[0], mark[1], doc, text, params, True)
    return points


POINTS: dict[str, DecisionPoint] = _declare()
DECISION_POINTS: tuple[str, ...] = tuple(POINTS)
# attributes of a patch class that describe the patch (not decision points)
PATCH_ATTRIBUTES = frozenset({"name", "summary", "sysctls", "new_sysctls", "counters"})


@dataclass(frozen=True)
class Resolved:
    """A decision point as one profile resolves it."""

    point: DecisionPoint
    owner: str                  # qualified name of the class that defines it
    changed: bool               # defined by the profile's own era (or mixin) or a patch
    value: object               # constants: the value; methods: None


if TYPE_CHECKING:
    # For the type checker a patch is a policy: its `super().point(...)` calls reach the
    # kernel underneath, whose signatures KernelPolicy declares. At run time a patch is a
    # plain mixin put before the era in the MRO (Profile.policy()).
    _PatchBase = KernelPolicy
else:
    _PatchBase = object


class Patch(_PatchBase):
    """Base of patches: a mixin that overrides decision points of any compatible kernel.

    `name` is what users type (`--policy shrink-window`); `summary` is one line for listings;
    `sysctls` names existing sysctls the patch makes available on kernels that lack them;
    `new_sysctls` declares sysctls only the patch has (name, default, range); `counters`
    declares nstat counters it adds ({name: meaning}), bumped as `sk.mib.<name> += 1`.
    """

    name: str = ""
    summary: str = ""
    sysctls: frozenset[str] = frozenset()
    new_sysctls: tuple[SysctlSpec, ...] = ()
    counters: dict[str, str] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declare_additions(cls)


def declare_additions(patch: type) -> None:
    """Make the counters and sysctls a patch class declares known (a patch need not derive
    from Patch: the loader calls this for every patch it applies)."""
    for counter, meaning in vars(patch).get("counters", {}).items():
        declare_counter(counter, meaning)
    for spec in vars(patch).get("new_sysctls", ()):
        declare_patch_sysctl(spec.name, patch_label(patch))


def patch_label(patch: type) -> str:
    """What a patch is called in profile names and messages."""
    return str(getattr(patch, "name", "") or patch.__name__)


def own_classes(cls: type, base: type | None = None) -> list[type]:
    """The classes `cls` brings in itself or through its mixins: its MRO before `base` (the
    era it builds on; default its last base) -- what that era or patch changed."""
    if base is None:
        last = cls.__bases__[-1] if cls.__bases__ else object
        base = object if last in (Patch, KernelPolicy) else last
    mro = cls.__mro__
    stop = mro.index(base) if base in mro else len(mro)
    return [k for k in mro[:stop] if k not in (Patch, KernelPolicy, ABC, object)]


def overrides(cls: type, base: type | None = None) -> list[str]:
    """Declared points the class (with its mixins) defines, in declaration order."""
    names = {n for k in own_classes(cls, base) for n in vars(k)}
    return [p for p in DECISION_POINTS if p in names]


@dataclass(frozen=True)
class Profile:
    """A selectable kernel: a policy class, a one-line summary, the patches applied."""

    name: str
    kernel: type[KernelPolicy]
    summary: str
    patches: tuple[type, ...] = ()
    extra_sysctls: frozenset[str] = field(default_factory=frozenset)

    def policy_class(self) -> type[KernelPolicy]:
        """The kernel class with the patches first in the MRO (later patches first)."""
        if not self.patches:
            return self.kernel
        name = f"{self.kernel.__name__}+" + "+".join(p.__name__ for p in self.patches)
        return type(name, (*reversed(self.patches), self.kernel), {})

    def policy(self) -> KernelPolicy:
        """A fresh policy object for one socket. The methods of patches from outside the
        package have their answers and socket writes checked (tcpsim/answers.py); the
        built-in eras and patches run as they are."""
        if not self.patches or all(trusted(p) for p in self.patches):
            return self.policy_class()()
        return _checked_class(self)()

    def with_patches(self, *patches: type) -> Profile:
        """This profile with patches applied (later patches override earlier ones)."""
        names = "+".join(patch_label(p) for p in patches)
        extra = self.extra_sysctls.union(*(getattr(p, "sysctls", frozenset()) for p in patches),
                                         *({s.name for s in getattr(p, "new_sysctls", ())}
                                           for p in patches))
        return Profile(f"{self.name}+{names}", self.kernel, self.summary,
                       self.patches + tuple(patches), frozenset(extra))

    def new_sysctls(self) -> tuple[SysctlSpec, ...]:
        """The sysctls the applied patches add."""
        return tuple(s for p in self.patches for s in getattr(p, "new_sysctls", ()))

    def counters(self) -> tuple[str, ...]:
        """The nstat counters the applied patches add (shown even at zero)."""
        return tuple(c for p in self.patches for c in getattr(p, "counters", {}))

    def default_sysctls(self) -> Sysctls:
        """The kernel's defaults, as the patches change them, with the patches' sysctls."""
        return self.policy().default_sysctls().with_specs(self.new_sysctls())

    def known_sysctls(self) -> frozenset[str]:
        known: frozenset[str] = self.kernel.SYSCTLS
        return known | self.extra_sysctls

    def changed_here(self) -> list[str]:
        """The points this profile's own era class (with its mixins) and its patches define:
        what this kernel and these patches change."""
        names = set(overrides(self.kernel))
        for patch in self.patches:
            names.update(overrides(patch, object))
        return [p for p in DECISION_POINTS if p in names]

    def decision_points(self) -> list[Resolved]:
        """Every declared point, the class that defines it in this profile, and whether this
        profile's era or patches changed it -- what `profiles show` prints."""
        cls = self.policy_class()
        changed = set(self.changed_here())
        out = []
        for name, point in POINTS.items():
            owner = next(k for k in cls.__mro__ if name in vars(k))
            out.append(Resolved(point, owner.__qualname__, name in changed,
                                getattr(cls, name) if not point.is_method else None))
        return out

    def source_of(self, point: str) -> str:
        """The source of one decision point as this profile resolves it."""
        return inspect.getsource(getattr(self.policy_class(), point))


def trusted(patch: type) -> bool:
    """Whether `patch` ships with tcpsim (tcpsim/models): its answers are not checked."""
    return patch.__module__.startswith("tcpsim.models.")


@functools.lru_cache(maxsize=None)
def _checked(patch: type) -> type:
    """`patch` with each decision point it defines checked (tcpsim/answers.py), as a
    subclass in its place (its own `super()` calls reach what they would)."""
    attrs: dict[str, Any] = {}
    for klass in own_classes(patch, object):
        for name, fn in vars(klass).items():
            point = POINTS.get(name)
            if point is None or not point.is_method or name in attrs or not inspect.isfunction(fn):
                continue
            attrs[name] = checked_method(getattr(patch, name), name, point.returns)
    return type(patch.__name__, (patch,), attrs)


@functools.lru_cache(maxsize=None)
def _checked_class(profile: Profile) -> type[KernelPolicy]:
    """Profile.policy_class() with the untrusted patches checked."""
    patches = [p if trusted(p) else _checked(p) for p in profile.patches]
    name = f"{profile.kernel.__name__}+" + "+".join(p.__name__ for p in profile.patches)
    return type(name, (*reversed(patches), profile.kernel), {})

