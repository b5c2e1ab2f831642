"""The simulated machine a script drives: sockets, file descriptors, the tun capture, timers.

One `TcpSocket` per connection. A listening socket and the connection it accepts are the same
object: it goes LISTEN -> SYN_RECV -> ESTABLISHED, and `accept()` only adds a second fd for it
(with `sk.accepted` False until then, which 6.18's OFO buffer growth looks at). The socket of
the most recent `socket()` call is the *socket under test*, as in packetdrill: inbound
segments go to it, and outbound segments of any other socket are discarded when a script
line asks for the next outbound packet (packetdrill's sniffer only matches the socket under
test's 4-tuple).

Outbound segments are captured with their send time in the order the sockets emit them.
Timers of every socket run: `fire_timers(limit)` runs the earliest due deadline at or before
`limit` and reports whether it did.

Where no socket takes an inbound segment (the socket under test was reset, or never
opened), the host answers as tcp_v4_rcv() does for a segment without a socket
(tcp_v4_send_reset(), RFC 9293 section 3.10.7.1): a RST whose seq is the segment's ACK
number, or a RST+ACK acknowledging the segment when it carries no ACK. An ACK to a listening
socket gets the same reset (tcp_rcv_state_process() in LISTEN). That lookup is outside
`TcpSocket`, which only models one socket.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from tcpsim.core.segment import ACK, FIN, RST, SYN, Segment
from tcpsim.core.socket import TcpSocket
from tcpsim.core.state import CLOSED, LISTEN
from tcpsim.core.sysctl import Sysctls
from tcpsim.engines import make_socket

from .tsmap import TimestampMap


class HarnessError(RuntimeError):
    """The simulation cannot go on (a timer that never advances, ...)."""


@dataclass(slots=True)
class Sent:
    """A segment seen on the tun device: when it left and which socket sent it."""

    seg: Segment
    usecs: int
    sk: TcpSocket | None


class Endpoint:
    """What a file descriptor refers to."""

    __slots__ = ("sk", "listener", "nonblocking", "inq")

    def __init__(self, sk: TcpSocket, *, listener: bool = False) -> None:
        self.sk = sk
        self.listener = listener      # the listening fd (accept()'s argument)
        self.nonblocking = False      # O_NONBLOCK
        self.inq = False              # TCP_INQ


class Host:
    """The network namespace packetdrill runs the script in, simulated."""

    STUCK_LIMIT = 10_000

    def __init__(self, profile: Any, sysctls: Sysctls, device: Any, sink: Any = None,
                 engine: str = "python") -> None:
        self.engine = engine
        self.profile = profile
        self.sysctls = sysctls
        self.device = device
        self.sink = sink
        self.sockets: list[TcpSocket] = []
        self.fds: dict[int, Endpoint] = {}
        self.under_test: TcpSocket | None = None
        self.captured: deque[Sent] = deque()
        self.now_ns = 0
        self.notes: list[str] = []
        self._ts_maps: dict[int, TimestampMap] = {}
        self._stuck = (0, 0)

    # -- sockets and fds ----------------------------------------------------------------------

    def new_socket(self) -> TcpSocket:
        """socket(): a fresh TcpSocket (tcp_init_sock reads tcp_rmem/tcp_wmem now); Nagle on
        as for any new socket. It becomes the socket under test."""
        extra = {"sink": self.sink} if self.engine == "python" else {}
        sk = make_socket(self.engine, self.profile, self.sysctls, self.device,
                         name=f"sk{len(self.sockets)}", nodelay=False, **extra)
        self.sockets.append(sk)
        self.under_test = sk
        return sk

    def ts_map(self, sk: TcpSocket | None) -> TimestampMap | None:
        if sk is None:
            return None
        return self._ts_maps.setdefault(id(sk), TimestampMap())

    def set_sysctls(self, sysctls: Sysctls) -> None:
        """A sysctl changed: the kernel reads them live, so every socket sees the new set."""
        self.sysctls = sysctls
        for sk in self.sockets:
            sk.sysctl = sysctls

    def counters(self) -> dict[str, int]:
        """The namespace's SNMP counters: the sum over every socket."""
        total: dict[str, int] = {}
        for sk in self.sockets:
            for name, value in sk.mib.as_nstat(self.profile.counters()).items():
                total[name] = total.get(name, 0) + value
        return total

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -- the link ------------------------------------------------------------------------------

    def inject(self, seg: Segment) -> None:
        """An inbound segment from the tun device."""
        sk = self.under_test
        if sk is None or sk.conn.state == CLOSED:
            self._no_socket(seg, sk)
            return
        if sk.conn.state == LISTEN and seg.flags & ACK and not seg.flags & RST:
            self._no_socket(seg, sk)       # tcp_rcv_state_process(LISTEN): an ACK is reset
            return
        sk.on_segment(self.now_ns, seg)
        self.collect()

    def _no_socket(self, seg: Segment, sk: TcpSocket | None) -> None:
        if seg.flags & RST:
            return
        if seg.flags & ACK:
            rst = Segment(seg.ack, 0, RST)
        else:
            syn_fin = (1 if seg.flags & SYN else 0) + (1 if seg.flags & FIN else 0)
            rst = Segment(0, 0, RST | ACK, seg.seq + seg.len + syn_fin)
        rst.tx_ns = self.now_ns
        self.note("an inbound segment found no socket and was answered with a RST "
                  "(tcp_v4_send_reset, done by the interpreter's host)")
        self.captured.append(Sent(rst, self.now_ns // 1000, sk))

    def collect(self) -> None:
        """Move every socket's outbox onto the capture, in send-time order."""
        batch: list[Sent] = []
        for sk in self.sockets:
            batch.extend(Sent(seg, seg.tx_ns // 1000, sk) for seg in sk.take_outbox())
        batch.sort(key=lambda s: s.seg.tx_ns)
        self.captured.extend(batch)

    def pop_capture(self) -> Sent | None:
        """The next captured segment of the socket under test; others are discarded."""
        while self.captured:
            sent = self.captured.popleft()
            if sent.sk is self.under_test:
                return sent
        return None

    # -- time ----------------------------------------------------------------------------------

    def next_deadline(self) -> int:
        best = 0
        for sk in self.sockets:
            d = sk.next_deadline()
            if d and (best == 0 or d < best):
                best = d
        return best

    def fire_timers(self, limit_ns: int) -> bool:
        """Run the earliest timer due at or before `limit_ns`; False when there is none."""
        d = self.next_deadline()
        if not d or d > limit_ns:
            return False
        self.now_ns = max(self.now_ns, d)
        count = self._stuck[1] + 1 if self._stuck[0] == self.now_ns else 1
        self._stuck = (self.now_ns, count)
        if count > self.STUCK_LIMIT:
            raise HarnessError(f"a socket timer at {self.now_ns} ns keeps firing without "
                               "moving its deadline")
        for sk in self.sockets:
            due = sk.next_deadline()
            if due and due <= self.now_ns:
                sk.on_timer(self.now_ns)
        self.collect()
        return True
