"""Lockstep differential testing: two engines, the same steps, the same state after each.

The receiver rules of tests/receiver_rules.py (the ones the receiver state machine checks
invariants with) drive a *reference* socket -- the Python model -- and a *candidate* socket
with identical steps: the connection opened as client or server with drawn tcp_rmem,
SO_RCVBUF and window scaling; segments in order, out of order, duplicate, partly old,
oversize, probes, FIN; reads; timers; SO_RCVBUF; TCP_WINDOW_CLAMP; time passing; and here the
application holding the socket (arrivals to the backlog, tcpsim/core/backlog.py). After every
step (and after every timer run inside one) the two must agree on:

    snapshot()          every field of every state record, both queues skb by skb, the
                        MIB, the socket flags (tcpsim/core/snapshot.py)
    proto.snapshot()    the TCP pool the socket charges (tcpsim/core/protmem.py)
    the outbox          every segment sent, every field and option
    take_events()       the trace events, field by field
    next_deadline()     and what read() returned

A divergence fails with Hypothesis's shrunk program and the first path that differs,
e.g. `rcv.rcv_wnd: python 65535, native 65280`. One machine per profile x
tcp_shrink_window x device; `machine_for(..., patches=(Cls,))` applies a user's Python patch
to both sockets (test_native_py_patch.py).

The candidate is the native socket (tcpsim._native.TcpSocket), or the engine named by
TCPSIM_LOCKSTEP_CANDIDATE ("native" | "python"). While the extension has no TcpSocket the
native runs skip saying so (under CI a missing extension fails, tests/native/conftest.py).
The machine itself is proved here without the native class: Python against Python agrees,
and a planted one-byte change of one decision point is found and shrunk.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import rule, run_state_machine_as_test

from tcpsim.catalog import builtin_profiles
from tcpsim.core.segment import Segment
from tcpsim.core.snapshot import first_difference
from tcpsim.core.socket import EventBuffer
from tcpsim.engines import native_available
from tcpsim.policy import Patch
from tcpsim.trace.schema import EVENT_FIELDS

from harness import established
from receiver_rules import DEVICES, PROFILES, ReceiverRules, checked
from strategies import rx_hold_us

CANDIDATE_ENV = "TCPSIM_LOCKSTEP_CANDIDATE"


def segment_dict(seg: Segment | None) -> dict[str, Any] | None:
    """Every header field and option of a segment (its slots), plain data."""
    if seg is None:
        return None
    return {name: _plain(getattr(seg, name)) for name in Segment.__slots__}


def _plain(v: Any) -> Any:
    return [_plain(x) for x in v] if isinstance(v, (list, tuple)) else v


def event_dict(event: tuple) -> dict[str, Any]:
    """One trace event keyed by EVENT_FIELDS, its segment as a dict."""
    out = dict(zip(EVENT_FIELDS, event, strict=True))
    out["seg"] = segment_dict(out["seg"])
    return out


class Diverged(AssertionError):
    """The candidate engine left the reference: the message names the first differing path."""


class LockstepMachine(ReceiverRules):
    """A Python reference socket and a candidate socket driven by the same rules."""

    CANDIDATE: str | type = "native"       # an engine name, or a Python patch class
    PATCHES: tuple[type, ...] = ()          # user Python patches applied on both sides

    # -- the two sockets -------------------------------------------------------------------------

    def _label(self) -> str:
        c = self.CANDIDATE
        return c if isinstance(c, str) else f"python+{c.name}"

    def open_socket(self, role, sysctl, so_rcvbuf):
        common = dict(sysctl=sysctl, dev=self.DEVICE, so_rcvbuf=so_rcvbuf, role=role,
                      patches=self.PATCHES)
        self.peer = established(self.PROFILE, sink=EventBuffer(), **common)
        self.sk = self.peer.sk
        c = self.CANDIDATE
        if c == "native":
            self.cand_peer = established(self.PROFILE, engine="native", **common)
        else:
            common["patches"] = self.PATCHES + (() if isinstance(c, str) else (c,))
            self.cand_peer = established(self.PROFILE, sink=EventBuffer(), **common)
        self.cand = self.cand_peer.sk
        self.out_ref, self.out_cand = list(self.peer.acks), list(self.cand_peer.acks)
        self.ret_ref: list[int] = []
        self.ret_cand: list[int] = []

    def _take(self) -> None:
        self.out_ref += self.peer.take()
        self.out_cand += self.cand_peer.take()

    # -- what the rules do -----------------------------------------------------------------------

    def deliver(self, seg: Segment) -> None:
        twin = Segment(seg.seq, seg.len, seg.flags, seg.ack, seg.win, mss=seg.mss,
                       wscale=seg.wscale, sack_ok=seg.sack_ok, tsval=seg.tsval, tsecr=seg.tsecr,
                       sacks=seg.sacks, gso_size=seg.gso_size)
        self.sk.on_segment(self.now, seg)
        self.cand.on_segment(self.now, twin)
        self._take()

    def do_read(self, n):
        self.ret_ref.append(self.sk.read(self.now, n))
        self.ret_cand.append(self.cand.read(self.now, n))
        self._take()

    def do_set_rcvbuf(self, val):
        self.sk.set_rcvbuf(val)
        self.cand.set_rcvbuf(val)
        self._take()

    def do_set_window_clamp(self, val):
        self.sk.set_window_clamp(val)
        self.cand.set_window_clamp(val)
        self._take()

    def fire(self, at: int) -> None:
        self.now = max(self.now, at)
        self.sk.on_timer(self.now)
        self.cand.on_timer(self.now)
        self._take()
        self.verify_invariants()          # a multi-timer step is compared timer by timer

    # -- the comparison ------------------------------------------------------------------------------

    def observed(self, sk: Any, outbox: list[Segment], returned: list[int]) -> dict[str, Any]:
        """Everything one engine showed since the last comparison, as plain data."""
        return {
            "snapshot": sk.snapshot(),
            "proto": sk.proto.snapshot(),       # the socket's TCP pool (core/protmem.py)
            "outbox": [segment_dict(s) for s in outbox],
            "events": [event_dict(e) for e in sk.take_events()],
            "next_deadline": sk.next_deadline(),
            "read": list(returned),
        }

    def verify_invariants(self) -> None:
        ref = self.observed(self.sk, self.out_ref, self.ret_ref)
        cand = self.observed(self.cand, self.out_cand, self.ret_cand)
        self.out_ref, self.out_cand, self.ret_ref, self.ret_cand = [], [], [], []
        found = first_difference(ref, cand)
        if found:
            path, want, got = found
            path = path.removeprefix("snapshot.")
            raise Diverged(f"{path}: python {want!r}, {self._label()} {got!r}")


class OwnedLockstepMachine(LockstepMachine):
    """The lockstep machine with the application holding the socket too (the planted
    divergence's proof keeps the plain machine: its shrunk program is asserted)."""

    @rule(us=rx_hold_us)
    @checked
    def hold(self, us):
        """The application holds the socket `us` microseconds from now (recvmsg/sendmsg):
        segments delivered meanwhile go to the backlog, processed at the release."""
        self.sk.hold(self.now, us * 1000)
        self.cand.hold(self.now, us * 1000)
        self._take()


def machine_for(profile: str, shrink: int, dev: str, candidate: str | type,
                patches: tuple[type, ...] = ()) -> type:
    """The lockstep machine of one configuration (its name heads the printed program);
    `patches`: user Python patch classes applied to both sockets."""
    tag = candidate if isinstance(candidate, str) else "planted"
    tag += "".join(f"_{p.__name__}" for p in patches)
    name = (f"Lockstep_{tag}_{profile.replace('-', '_').replace('.', '_')}_shrink{shrink}_"
            f"{dev.replace('-', '_')}")
    base = OwnedLockstepMachine if isinstance(candidate, str) else LockstepMachine
    return type(name, (base,),
                {"PROFILE": profile, "SHRINK": shrink, "DEVICE": dev, "CANDIDATE": candidate,
                 "PATCHES": patches})


CONFIGS = [pytest.param(p, s, d, id=f"{p}-shrink{s}-{d}") for p, s in PROFILES for d in DEVICES]


def every_configuration() -> list[tuple[str, int]]:
    """Every built-in profile with tcp_shrink_window 0, and 1 where the profile has the sysctl;
    the default suite's PROFILES first (a run cut short has covered them)."""
    out = list(PROFILES)
    for name, prof in builtin_profiles().items():
        shrinks = (0, 1) if "tcp_shrink_window" in prof.known_sysctls() else (0,)
        out += [(name, s) for s in shrinks if (name, s) not in PROFILES]
    return out


# the default suite runs the PROFILES sample; the explore run every profile x shrink x device
EXPLORE_CONFIGS = [pytest.param(p, s, d, id=f"{p}-shrink{s}-{d}")
                   for p, s in every_configuration() for d in DEVICES]

LOCKSTEP = settings(max_examples=20, stateful_step_count=30, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])
EXPLORE = settings(max_examples=500, stateful_step_count=100, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow])


def candidate_engine() -> str:
    """The engine the lockstep runs compare with the Python model (TCPSIM_LOCKSTEP_CANDIDATE,
    default native); skips when the native socket is not built yet."""
    engine = os.environ.get(CANDIDATE_ENV, "native")
    if engine not in ("native", "python"):
        pytest.fail(f"{CANDIDATE_ENV}={engine!r}: choose native or python")
    if engine == "native" and not native_available():
        pytest.skip("tcpsim._native has no TcpSocket yet (the native socket is not built): "
                    f"nothing to compare; {CANDIDATE_ENV}=python runs the machine Python "
                    "against Python")
    return engine


@pytest.fixture
def candidate(request) -> str:
    if os.environ.get(CANDIDATE_ENV, "native") == "native":
        request.getfixturevalue("native")     # the extension itself: skip, or fail under CI
    return candidate_engine()


@pytest.mark.parametrize(("profile", "shrink", "dev"), CONFIGS)
def test_lockstep(candidate, profile, shrink, dev):
    run_state_machine_as_test(machine_for(profile, shrink, dev, candidate), settings=LOCKSTEP)


@pytest.mark.slow
@pytest.mark.parametrize(("profile", "shrink", "dev"), EXPLORE_CONFIGS)
def test_lockstep_explore(candidate, profile, shrink, dev):
    run_state_machine_as_test(machine_for(profile, shrink, dev, candidate), settings=EXPLORE)


# -- the machine, proved without the native socket ------------------------------------------------

SELF_CHECK = settings(max_examples=15, stateful_step_count=25, deadline=None, database=None,
                      suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("profile", "shrink", "dev"),
                         [pytest.param(p, s, "veth", id=f"{p}-shrink{s}") for p, s in PROFILES]
                         + [pytest.param("linux-6.18", 1, d, id=f"linux-6.18-shrink1-{d}")
                            for d in DEVICES if d != "veth"])
def test_python_agrees_with_python(profile, shrink, dev):
    """Two Python sockets never diverge: every difference the machine reports is real."""
    run_state_machine_as_test(machine_for(profile, shrink, dev, "python"), settings=SELF_CHECK)


class PlantedGrowWindow(Patch):
    """A planted divergence: tcp_grow_window() grows rcv_ssthresh one byte more."""

    name = "planted-grow-window"

    def grow_window(self, sk, skb, adjust, seg):
        before = sk.rcv.rcv_ssthresh
        super().grow_window(sk, skb, adjust, seg)
        if sk.rcv.rcv_ssthresh != before:
            sk.rcv.rcv_ssthresh += 1


# derandomized and stopped at the first failure found (report_multiple_bugs=False: otherwise
# Hypothesis keeps generating for up to 10 s of wall time after it, so under load it shrinks
# from another example); no explain phase (its coverage tracing costs
# ten times the search and the shrink together)
PLANTED = settings(max_examples=300, stateful_step_count=20, deadline=None, database=None,
                   derandomize=True, phases=[Phase.generate, Phase.shrink],
                   report_multiple_bugs=False,
                   suppress_health_check=[HealthCheck.too_slow])


def test_planted_divergence_is_found_and_shrunk():
    """A one-byte change of one decision point (grow_window) is found, named by its first
    differing path, and shrunk to the opening and at most two steps (a segment that grows
    the window, and what makes room for it to grow)."""
    cls = machine_for("linux-6.6", 0, "veth", PlantedGrowWindow)
    with pytest.raises(Diverged) as info:
        run_state_machine_as_test(cls, settings=PLANTED)
    message = str(info.value)
    program = "\n".join(getattr(info.value, "__notes__", []))
    print(f"{message}\n{program}")
    assert message.startswith("rcv.rcv_ssthresh: python "), message
    assert ", python+planted-grow-window " in message
    steps = [line.strip() for line in program.splitlines()
             if line.strip().startswith("state.") and line.strip() != "state.teardown()"]
    assert steps[0].startswith("state.open_connection("), program
    assert len(steps) <= 3, f"not shrunk:\n{program}"     # open, at most two steps
