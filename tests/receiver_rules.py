"""The events a receiving socket can see, as Hypothesis rules shared by two machines.

`ReceiverRules` holds the peer's byte stream (the byte at sequence s is "s", so only the
ranges sent and the FIN's place are remembered) and every rule: the set-up (role, tcp_rmem,
window scaling, SO_RCVBUF before connect), segments in order / out of order / beyond the
window / duplicate / partly old / oversize / probes / FIN, reads, SO_RCVBUF,
TCP_WINDOW_CLAMP, timers and time passing. Rules read the socket `self.sk` (the Python
reference) to choose what to send; a subclass says what a step does and checks it:

    open_socket(role, sysctl, so_rcvbuf)   build the socket(s); set self.peer and self.sk
    deliver(seg)                           a segment arrives
    do_read(n) / do_set_rcvbuf(v) / do_set_window_clamp(v) / fire(at)
    verify_invariants()                    after every step (see `checked`)

tests/core/test_receiver_state_machine.py checks invariants of one socket with them;
tests/native/test_lockstep.py drives a reference and a candidate socket in lockstep.
"""

from __future__ import annotations

import functools

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.segment import ACK, FIN, PSH, Segment
from tcpsim.catalog import get_profile

from strategies import (
    rx_back, rx_elapsed_ms, rx_gap, rx_gso_size, rx_handshake_rcvbuf, rx_mss, rx_oversize_length,
    rx_read_size, rx_segment_length, rx_so_rcvbuf, rx_tcp_mem, rx_tcp_rmem, rx_window_clamp,
)

# (profile, net.ipv4.tcp_shrink_window). linux-6.1 is 6.1.14, which has no such sysctl (it
# never shrinks); its shrink=1 configuration is linux-6.1.59, the stable backport of it.
PROFILES = (("linux-6.1", 0), ("linux-6.1.59", 1), ("linux-6.6", 0), ("linux-6.6", 1),
            ("linux-6.18", 0), ("linux-6.18", 1), ("linux-6.19", 0), ("linux-7.1", 1))
DEVICES = ("veth", "nic-2k", "tun")


class Intervals:
    """A set of sequence numbers as sorted disjoint [start, end) ranges."""

    def __init__(self) -> None:
        self.r: list[list[int]] = []

    def add(self, s: int, e: int) -> None:
        if s >= e:
            return
        out = []
        for a, b in self.r:
            if b < s or e < a:
                out.append([a, b])
            else:
                s, e = min(a, s), max(b, e)
        out.append([s, e])
        out.sort()
        self.r = out

    def covers(self, s: int, e: int) -> bool:
        return s >= e or any(a <= s and e <= b for a, b in self.r)


def checked(step):
    """A rule that is followed by every invariant check (instead of @invariant, so that the
    program Hypothesis prints on failure lists only the events)."""

    @functools.wraps(step)
    def run(self, **kwargs):
        step(self, **kwargs)
        self.verify_invariants()

    return run


def sysctls_for(profile: str, shrink: int, tcp_rmem, window_scaling: int,
                tcp_mem=None) -> dict:
    """The sysctl overrides of one drawn connection (tcp_shrink_window where it exists)."""
    sysctl = {"net.ipv4.tcp_window_scaling": window_scaling}
    if "tcp_shrink_window" in get_profile(profile).known_sysctls():
        sysctl["net.ipv4.tcp_shrink_window"] = shrink
    else:
        assert not shrink, f"{profile} has no tcp_shrink_window"
    if tcp_rmem:
        sysctl["net.ipv4.tcp_rmem"] = list(tcp_rmem)
    if tcp_mem:                       # a tiny pool: pressure, refusals, forced charges
        sysctl["net.ipv4.tcp_mem"] = list(tcp_mem)
    return sysctl


class ReceiverRules(RuleBasedStateMachine):
    """The rules; subclasses implement the steps' effects and checks (module docstring)."""

    PROFILE = "linux-6.1"
    SHRINK = 0
    DEVICE = "veth"

    def __init__(self) -> None:
        super().__init__()
        self.peer = None

    # -- what a subclass provides ----------------------------------------------------------------

    def open_socket(self, role: str, sysctl: dict, so_rcvbuf: int) -> None:
        raise NotImplementedError

    def deliver(self, seg: Segment) -> None:
        raise NotImplementedError

    def do_read(self, n: int) -> None:
        raise NotImplementedError

    def do_set_rcvbuf(self, val: int) -> None:
        raise NotImplementedError

    def do_set_window_clamp(self, val: int) -> None:
        raise NotImplementedError

    def fire(self, at: int) -> None:
        """Run the timers at `at` (not before the current time)."""
        raise NotImplementedError

    def verify_invariants(self) -> None:
        raise NotImplementedError

    # -- set-up ------------------------------------------------------------------------------------

    @initialize(role=st.sampled_from(["client", "server"]), tcp_rmem=rx_tcp_rmem,
                so_rcvbuf=rx_handshake_rcvbuf, window_scaling=st.sampled_from([1, 1, 1, 0]),
                tcp_mem=rx_tcp_mem)
    @checked
    def open_connection(self, role, tcp_rmem, so_rcvbuf, window_scaling, tcp_mem=None):
        sysctl = sysctls_for(self.PROFILE, self.SHRINK, tcp_rmem, window_scaling, tcp_mem)
        self.sent = Intervals()           # sequence ranges the peer has sent (data bytes)
        self.stream_end = 1               # one past the highest data byte sent
        self.fin_seq: int | None = None   # sequence number of the peer's FIN, once sent
        self.open_socket(role, sysctl, so_rcvbuf)
        self.now = self.peer.now

    # -- the peer ----------------------------------------------------------------------------------

    def _send(self, seq: int, length: int, flags: int = ACK | PSH, gso_size: int = 0) -> None:
        """Deliver one segment of the peer's stream starting at `seq` (clipped to the stream:
        nothing below sequence 1, nothing past the FIN; a segment reaching the FIN carries it)."""
        sk = self.sk
        seq = max(seq, 1)
        length = max(length, 0)
        if self.fin_seq is not None:
            if seq > self.fin_seq:
                return                                      # the peer has nothing there
            if seq + length >= self.fin_seq:
                length = self.fin_seq - seq
                flags |= FIN
        self.sent.add(seq, seq + length)
        self.stream_end = max(self.stream_end, seq + length)
        seg = Segment(seq, length, flags, 1, 502, tsval=self.now // NS_PER_MS + 1,
                      tsecr=self.peer.echo if sk.conn.ts_ok else -1, gso_size=gso_size)
        self.deliver(seg)

    # -- rules: segments ---------------------------------------------------------------------------

    @rule(length=rx_segment_length, push=st.booleans())
    @checked
    def data_in_order(self, length, push):
        self._send(self.sk.rcv.rcv_nxt, length, ACK | (PSH if push else 0))

    @rule(gap=rx_gap, length=rx_segment_length)
    @checked
    def data_out_of_order(self, gap, length):
        """`gap` bytes above rcv_nxt: a hole (inside or beyond the window)."""
        self._send(self.sk.rcv.rcv_nxt + gap, length)

    @rule(past_right_edge=st.integers(0, 4 * rx_mss), length=rx_segment_length)
    @checked
    def data_beyond_window(self, past_right_edge, length):
        """Starts at or past the right edge of the last advertised window."""
        sk = self.sk
        right = max(sk.rcv.rcv_wup + sk.rcv.rcv_wnd, sk.rcv.rcv_nxt)
        self._send(right + past_right_edge, length)

    @precondition(lambda self: self.sk.rcv.rcv_nxt > 1)
    @rule(back=rx_back, length=rx_segment_length)
    @checked
    def duplicate(self, back, length):
        """Old data only: `length` bytes from `back` bytes below rcv_nxt, ending by rcv_nxt."""
        sk = self.sk
        seq = max(1, sk.rcv.rcv_nxt - back)
        self._send(seq, min(length, sk.rcv.rcv_nxt - seq))

    @precondition(lambda self: self.sk.rcv.rcv_nxt > 1)
    @rule(back=rx_back, new=rx_segment_length)
    @checked
    def partial_overlap(self, back, new):
        """`back` bytes already received followed by `new` bytes that are not."""
        sk = self.sk
        seq = max(1, sk.rcv.rcv_nxt - back)
        self._send(seq, sk.rcv.rcv_nxt - seq + new)

    @rule(length=rx_oversize_length, gso_size=rx_gso_size, gap=st.sampled_from([0, 0, 1, rx_mss]))
    @checked
    def oversize_segment(self, length, gso_size, gap):
        """A GRO aggregate / jumbo segment, usually far larger than the window."""
        self._send(self.sk.rcv.rcv_nxt + gap, length, ACK | PSH, gso_size)

    @rule(kind=st.sampled_from(["zero_length_old_seq", "pure_ack", "one_new_byte"]))
    @checked
    def window_probe(self, kind):
        """Linux's zero-window probe (seq = snd_una - 1, no data), a pure ACK at rcv_nxt, or
        another stack's probe carrying one new byte."""
        sk = self.sk
        if kind == "zero_length_old_seq":
            self._send(sk.rcv.rcv_nxt - 1, 0, ACK)
        elif kind == "pure_ack":
            self._send(sk.rcv.rcv_nxt, 0, ACK)
        else:
            self._send(sk.rcv.rcv_nxt, 1, ACK | PSH)

    @rule(data_before_fin=st.one_of(st.just(0), st.integers(1, 2 * rx_mss)))
    @checked
    def fin(self, data_before_fin):
        """The peer closes after `data_before_fin` more bytes (first time: placed after
        everything it ever sent), or retransmits its FIN with that much data before it."""
        if self.fin_seq is None:
            self.fin_seq = max(self.stream_end, self.sk.rcv.rcv_nxt) + data_before_fin
        self._send(self.fin_seq - data_before_fin, data_before_fin, ACK | PSH | FIN)

    # -- rules: application, options, time ---------------------------------------------------------

    @rule(n=rx_read_size)
    @checked
    def read(self, n):
        self.do_read(n)

    @rule(val=rx_so_rcvbuf)
    @checked
    def setsockopt_so_rcvbuf(self, val):
        self.do_set_rcvbuf(val)

    @rule(val=rx_window_clamp)
    @checked
    def setsockopt_tcp_window_clamp(self, val):
        self.do_set_window_clamp(val)

    @precondition(lambda self: self.sk.next_deadline() != 0)
    @rule()
    @checked
    def timer_fires(self):
        """Jump to the earliest armed deadline and run the timers."""
        self.fire(self.sk.next_deadline())

    @rule(ms=rx_elapsed_ms)
    @checked
    def time_passes(self, ms):
        """`ms` milliseconds pass; timers that come due fire on time."""
        target = self.now + ms * NS_PER_MS
        while (d := self.sk.next_deadline()) and d <= target:
            self.fire(d)
        self.now = target
