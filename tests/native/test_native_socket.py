"""The native socket (tcpsim._native.TcpSocket) against the Python socket, step by step.

Both sockets get the same events -- the handshake of tests/harness.py `established()`
(either role), then in-order data, out-of-order data, duplicates, reads, timers, writes and
ACKs -- and after every step every field of every state record, both queues skb by skb, the
MIB counters, the socket's surface, the segments sent (with options and send time) and the
trace events must be identical. The first difference fails the test with the step and the
field.
"""

from __future__ import annotations

from typing import Any

import pytest

from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.devices import device
from tcpsim.core.segment import ACK, FIN, PSH, RST, SYN, Segment
from tcpsim.core.socket import TcpSocket
from tcpsim.catalog import get_profile

from tests.native.native_compare import RECORDS, plain

PROFILES = ("linux-5.15", "linux-6.1", "linux-6.6", "linux-6.8", "linux-6.10", "linux-6.18")


def py_snapshot(sk: TcpSocket) -> dict[str, Any]:
    """The Python socket's state in the layout of the native `snapshot()`."""
    out: dict[str, Any] = {r: {n: plain(getattr(getattr(sk, r), n))
                               for n in type(getattr(sk, r)).__slots__} for r in RECORDS}
    out["mib"] = {n: getattr(sk.mib, n) for n in _counters()}
    out["sock"] = {"state": str(sk.conn.state), "now": sk.now, "tcp_mstamp": sk.tcp_mstamp,
                   "readable": sk.readable, "writable": sk.writable, "error": sk.error,
                   "eof": sk.eof, "accepted": sk.accepted, "next_deadline": sk.next_deadline()}
    return out


def _counters() -> list[str]:
    from tcpsim.core.mib import COUNTERS
    return list(COUNTERS)


def seg_fields(seg: Segment | None) -> Any:
    if seg is None:
        return None
    return (repr(seg), seg.tx_ns, seg.gso_size)


def event_fields(ev: tuple) -> tuple:
    return ev[:4] + (seg_fields(ev[4]),) + tuple(ev[5:])


class ListSink:
    """A trace sink that keeps the raw events (EVENT_FIELDS tuples)."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def wants(self, sock: str) -> bool:
        return True

    def record(self, event: tuple) -> None:
        self.events.append(event)


class Pair:
    """A Python and a native socket driven in lockstep."""

    def __init__(self, profile: str, dev: str = "veth", sysctl: dict | None = None,
                 hz: int = 0, patches: tuple[str, ...] = (), nodelay: bool = True,
                 mtu: int = 1500) -> None:
        prof = get_profile(profile, patches)
        sysctls = prof.default_sysctls().with_overrides(sysctl or {},
                                                        known=prof.known_sysctls())
        self.rec = ListSink()
        self.py = TcpSocket(prof.policy(), sysctls, device(dev), name="rcv", sink=self.rec,
                            hz=hz, nodelay=nodelay, mtu=mtu)
        from tcpsim import _native
        self.nat = _native.TcpSocket(profile, list(patches), sysctls.as_dict(), dev, name="rcv",
                                     hz=hz, nodelay=nodelay, mtu=mtu)
        self.steps: list[str] = []

    def do(self, what: str, *args: Any) -> Any:
        """Run method `what` on both sockets with the same arguments, then compare."""
        self.steps.append(f"{what}{args!r}")
        got_py = getattr(self.py, what)(*args)
        got_nat = getattr(self.nat, what)(*args)
        assert got_nat == got_py, f"{self._where()}: returned {got_nat!r}, python {got_py!r}"
        self.check()
        return got_py

    def segment(self, t_ns: int, seg: Segment) -> None:
        self.steps.append(f"on_segment({t_ns}, {seg!r})")
        self.py.on_segment(t_ns, seg)
        self.nat.on_segment(t_ns, seg)
        self.check()

    def _where(self) -> str:
        return "after " + " -> ".join(self.steps[-3:])

    def check(self) -> list[Segment]:
        want = py_snapshot(self.py)
        got = self.nat.snapshot()
        for part, fields in want.items():
            for name, value in fields.items():
                assert name in got[part], f"{self._where()}: native snapshot lacks {part}.{name}"
                g = got[part][name]
                assert g == value and type(g) is type(value), \
                    f"{self._where()}: {part}.{name}: native {g!r}, python {value!r}"
        for name, g in got["mib"].items():                  # the patches' counters too
            assert g == getattr(self.py.mib, name), \
                f"{self._where()}: mib.{name}: native {g!r}, python {getattr(self.py.mib, name)!r}"
        out_py = self.py.take_outbox()
        out_nat = self.nat.take_outbox()
        assert [seg_fields(s) for s in out_nat] == [seg_fields(s) for s in out_py], \
            f"{self._where()}: segments differ"
        assert self.nat.ss_line() == self.py.ss_line(), f"{self._where()}: ss_line differs"
        ev_py = [event_fields(e) for e in self.rec.events]
        self.rec.events.clear()
        ev_nat = [event_fields(e) for e in self.nat.take_events()]
        assert ev_nat == ev_py, f"{self._where()}: trace events differ"
        return out_py


def handshake(p: Pair, role: str, sack: bool = True) -> None:
    """Open the pair as `role`; `sack`: the peer offers SACK."""
    if role == "client":
        p.do("connect", 0)
        synack = Segment(0, 0, SYN | ACK, 1, 65535, mss=1460, wscale=7, sack_ok=sack, tsval=1,
                         tsecr=p.py.conn.ts_recent or 1)
        p.segment(NS_PER_MS, synack)
    else:
        p.do("listen")
        p.segment(0, Segment(0, 0, SYN, 0, 65535, mss=1460, wscale=7, sack_ok=sack, tsval=1,
                             tsecr=0))
        p.segment(NS_PER_MS, Segment(1, 0, ACK, 1, 502, tsval=2, tsecr=p.py.conn.ts_recent))


def data(seq: int, length: int, t_ms: float, flags: int = ACK | PSH, ack: int = 1) -> Segment:
    return Segment(seq, length, flags, ack, 502, tsval=int(t_ms) + 1, tsecr=1)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("role", ["client", "server"])
def test_receiver_in_order_out_of_order_reads_and_timers(native, profile, role):
    p = Pair(profile)
    handshake(p, role)
    t = 2.0
    seq = 1
    for _ in range(20):                                     # in order, reads now and then
        p.segment(int(t * NS_PER_MS), data(seq, 1448, t))
        seq += 1448
        t += 0.1
        if int(t * 10) % 3 == 0:
            p.do("read", int(t * NS_PER_MS), 3000)
    # a hole: three segments out of order, a duplicate, then the hole filled
    hole = seq
    for i in range(1, 4):
        p.segment(int(t * NS_PER_MS), data(hole + i * 1448, 1448, t))
        t += 0.05
    p.segment(int(t * NS_PER_MS), data(hole + 1448, 1448, t))           # duplicate OFO
    p.segment(int(t * NS_PER_MS), data(hole - 1448, 1448, t))           # old data
    p.segment(int(t * NS_PER_MS), data(hole, 1448, t))                  # fills the hole
    seq = hole + 4 * 1448
    # timers: the delayed ACK fires
    while p.nat.next_deadline() and p.nat.next_deadline() < int((t + 300) * NS_PER_MS):
        d = p.nat.next_deadline()
        t = d / NS_PER_MS
        p.do("on_timer", d)
    p.do("read", int(t * NS_PER_MS), 1 << 20)
    # the peer's FIN, then we read to EOF and close
    p.segment(int((t + 1) * NS_PER_MS), data(seq, 100, t + 1, flags=ACK | PSH | FIN))
    p.do("read", int((t + 2) * NS_PER_MS), 1 << 20)
    p.do("close", int((t + 3) * NS_PER_MS))


@pytest.mark.parametrize("profile", ["linux-6.1", "linux-6.18"])
@pytest.mark.parametrize("dev", ["veth", "tun", "nic-4k"])
def test_receiver_fills_a_small_buffer_without_reading(native, profile, dev):
    p = Pair(profile, dev=dev)
    p.do("set_rcvbuf", 16384)
    handshake(p, "client")
    t, seq = 2.0, 1
    for _ in range(40):
        p.segment(int(t * NS_PER_MS), data(seq, 1000, t))
        seq += 1000
        t += 0.2
    p.do("read", int(t * NS_PER_MS), 1 << 20)


@pytest.mark.parametrize("profile", ["linux-5.15", "linux-6.6", "linux-6.18"])
def test_sender_writes_and_takes_acks(native, profile):
    p = Pair(profile)
    handshake(p, "client")
    t = 2.0
    p.do("write", int(t * NS_PER_MS), 100_000)
    for _ in range(60):
        t += 1.0
        sent = p.py.snd.snd_nxt
        p.segment(int(t * NS_PER_MS), Segment(1, 0, ACK, min(sent, p.py.snd.snd_una + 2896),
                                              502, tsval=int(t) + 1, tsecr=1))
        if p.nat.next_deadline() and p.nat.next_deadline() <= int(t * NS_PER_MS):
            p.do("on_timer", int(t * NS_PER_MS))
    # the peer goes quiet: RTOs back off
    for _ in range(4):
        d = p.nat.next_deadline()
        if not d:
            break
        p.do("on_timer", d)
    p.do("shutdown_write", int((t + 1) * NS_PER_MS))


@pytest.mark.parametrize("echo", [True, False])
def test_an_ack_of_a_retransmission_is_timed_by_its_timestamp_echo(native, echo):
    """tcp_ack_update_rtt(): after RTOs the retransmitted head is acked; Karn forbids timing
    it by its send time, the echo of its TSval times it (RFC 7323) and the RTO is set afresh
    -- on both engines alike; an ACK without the option leaves the RTO backed off."""
    p = Pair("linux-6.18")
    handshake(p, "client")
    p.do("write", 2 * NS_PER_MS, 1448)
    d = 0
    while p.py.mib.TCPTimeouts < 2:                     # the loss probe, then two RTOs
        d = p.nat.next_deadline()
        p.do("on_timer", d)
    backed_off = p.py.snd.rto
    t = d + 300_000                                     # acked 0.3 ms after the last resend
    tsval, tsecr = (t // NS_PER_MS + 1, d // NS_PER_MS + 1) if echo else (-1, -1)
    p.segment(t, Segment(1, 0, ACK, 1 + 1448, 502, tsval=tsval, tsecr=tsecr))
    assert (p.py.snd.rto < backed_off) == echo


def random_program(p: Pair, rng, steps: int) -> None:
    """A seeded random mix of arrivals (in order, ahead, old, overlapping, FIN), reads,
    writes, ACKs of our data, window changes and timers; both sockets compared after each."""
    t = 2 * NS_PER_MS
    nxt = 1                                     # the peer's next new byte
    for _ in range(steps):
        t += rng.choice((0, 1000, 50_000, 200_000, NS_PER_MS, 5 * NS_PER_MS))
        r = rng.random()
        tsval = t // NS_PER_MS + 1
        una = p.py.snd.snd_una
        ack = min(p.py.snd.snd_nxt, una + rng.choice((0, 0, 1448, 2896, 10_000)))
        win = rng.choice((502, 502, 502, 64, 0)) if r < 0.95 else 502
        if r < 0.45:                                        # in order
            n = rng.choice((1, 100, 536, 1448, 1448, 2896, 8000))
            p.segment(t, Segment(nxt, n, ACK | PSH, ack, win, tsval=tsval, tsecr=1))
            nxt += n
        elif r < 0.6:                                       # ahead of a hole
            off = rng.choice((1448, 2896, 5000))
            n = rng.choice((100, 1448))
            p.segment(t, Segment(nxt + off, n, ACK, ack, win, tsval=tsval, tsecr=1))
        elif r < 0.65:                                      # old or overlapping
            back = rng.choice((100, 1448, 3000))
            p.segment(t, Segment(max(1, nxt - back), rng.choice((50, 1448)), ACK, ack, win,
                                 tsval=tsval, tsecr=1))
        elif r < 0.75:
            p.do("read", t, rng.choice((1, 1000, 4096, 65536, 1 << 20)))
        elif r < 0.8:
            p.do("write", t, rng.choice((1, 1000, 20_000, 200_000)))
        elif r < 0.88:                                      # a pure ACK of our data
            p.segment(t, Segment(nxt, 0, ACK, ack, win, tsval=tsval, tsecr=1))
        elif r < 0.97:
            d = p.nat.next_deadline()
            if d:
                t = max(t, d)
                p.do("on_timer", t)
        elif r < 0.983:
            p.segment(t, Segment(nxt, 0, ACK | FIN, ack, win, tsval=tsval, tsecr=1))
            nxt += 1
        elif r < 0.988:
            p.do("on_peer_release", nxt)
        elif r < 0.992:
            p.do("set_rcvbuf", rng.choice((8192, 65536, 1 << 20)))
        elif r < 0.995:
            p.do("shutdown_write", t)
        elif r < 0.997:
            p.do("close", t)
        elif r < 0.998:
            p.segment(t, Segment(nxt, 0, RST, 0, 0))
        else:
            p.segment(t, Segment(nxt + 1_000_000, 10, ACK, ack, win, tsval=tsval, tsecr=1))


SHRINKS = ("linux-6.6", "linux-6.8", "linux-6.10", "linux-6.18")   # have tcp_shrink_window
CONFIGS = [(prof, dev, hz, shrink) for prof in PROFILES
           for dev in ("veth", "loopback", "tun", "nic-2k")
           for hz, shrink in ((0, 0), (250, 1)) if not shrink or prof in SHRINKS]


@pytest.mark.parametrize("profile,dev,hz,shrink", CONFIGS[::3])
@pytest.mark.parametrize("seed", [1, 2])
def test_random_programs_agree(native, profile, dev, hz, shrink, seed):
    import random
    rng = random.Random(f"{profile}-{dev}-{hz}-{shrink}-{seed}")
    sysctl = {"net.ipv4.tcp_shrink_window": shrink} if shrink else {}
    p = Pair(profile, dev=dev, hz=hz, sysctl=sysctl)
    if rng.random() < 0.5:
        p.do("set_rcvbuf", rng.choice((4096, 16384, 65536)))
    handshake(p, rng.choice(("client", "server")))
    random_program(p, rng, 300)


@pytest.mark.parametrize("profile,patches", [
    ("linux-6.1", ("shrink-window",)), ("linux-6.6", ("collapse-max-bytes",)),
    ("linux-6.6", ("rfc7323-retraction",)), ("linux-6.1", ("initrwnd",)),
    ("linux-6.8", ("collapse-max-bytes", "rfc7323-retraction"))])
def test_random_programs_agree_with_patches(native, profile, patches):
    import random
    rng = random.Random(f"{profile}-{patches}")
    p = Pair(profile, dev="nic-4k", patches=patches)
    p.do("set_rcvbuf", 16384)
    handshake(p, "client")
    random_program(p, rng, 300)


@pytest.mark.parametrize("profile", PROFILES)
def test_inert_reads_agree(native, profile):
    """Time skipping: the count of inert small reads, and applying them at once."""
    p = Pair(profile)
    handshake(p, "client")
    t = 2 * NS_PER_MS
    p.segment(t, Segment(1, 60_000, ACK | PSH, 1, 502, tsval=3, tsecr=1))
    for start in (t, t + 40 * NS_PER_MS):
        count = p.do("count_inert_reads", start, 100_000, 100, 1000)
        p.do("apply_inert_reads", start, 100_000, 100, count)
        p.do("read", start + count * 100_000, 100)
