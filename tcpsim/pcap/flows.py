"""The TCP connections of a capture, and picking one (`--flow`).

A connection is the set of segments between two endpoints (address, port), both directions.
Its receiver -- the side tcpsim studies -- is the one that received more payload bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tcpsim.pcap import PcapError
from tcpsim.pcap.read import Capture, WireSegment

Endpoint = tuple[str, int]


def show(ep: Endpoint) -> str:
    """'10.0.0.1:5201', '[2001:db8::1]:5201'."""
    addr, port = ep
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


@dataclass
class Connection:
    """The segments of one connection, in capture order."""

    ends: tuple[Endpoint, Endpoint]          # as first seen: (source, destination)
    segments: list[WireSegment] = field(default_factory=list)

    @property
    def payload_to(self) -> dict[Endpoint, int]:
        a, b = self.ends
        to_a = sum(s.payload for s in self.segments if s.dport == a[1] and s.dst == a[0])
        return {a: to_a} if a == b else {a: to_a, b: sum(s.payload for s in self.segments) - to_a}

    @property
    def receiver(self) -> Endpoint:
        """The endpoint that received more payload (ties: the one that sent the first SYN);
        computed once per segment count (a connection is built, then read)."""
        key = len(self.segments)
        cached = self.__dict__.get("_receiver")
        if cached is not None and cached[0] == key:
            return cached[1]
        r = self._receiver_of()
        self.__dict__["_receiver"] = (key, r)
        return r

    def _receiver_of(self) -> Endpoint:
        got = self.payload_to
        a, b = self.ends
        if got[a] != got[b]:
            return a if got[a] > got[b] else b
        syn = next((s for s in self.segments if s.flags & 0x02 and not s.flags & 0x10), None)
        return syn.a if syn else a

    @property
    def sender(self) -> Endpoint:
        r = self.receiver
        return self.ends[1] if r == self.ends[0] else self.ends[0]

    def line(self, i: int) -> str:
        """One line of the listing: endpoints, packets, bytes, duration, how to pick it."""
        segs = self.segments
        dur = (segs[-1].t_ns - segs[0].t_ns) / 1e9
        got = self.payload_to
        snd, rcv = self.sender, self.receiver
        syn = "" if any(s.flags & 0x02 for s in segs) else "  (no handshake)"
        return (f"  {i}. {show(snd)} -> {show(rcv)}  {len(segs)} packets, {got[rcv]} bytes "
                f"({got[snd]} back), {dur:.3f} s  --flow {show(rcv)}{syn}")


def connections(cap: Capture) -> list[Connection]:
    """Group the capture's segments by connection (a new SYN on the same four-tuple after a
    FIN or RST starts a new one), in order of first appearance."""
    open_: dict[frozenset, Connection] = {}
    done: dict[frozenset, bool] = {}
    out: list[Connection] = []
    keys: dict[tuple[str, int, str, int], frozenset] = {}    # four-tuple -> either direction
    for s in cap.segments:
        four = (s.src, s.sport, s.dst, s.dport)
        key = keys.get(four)
        if key is None:
            key = keys[four] = frozenset((s.a, s.b))
        conn = open_.get(key)
        if conn is not None and done.get(key) and s.flags & 0x02 and not s.flags & 0x10:
            conn = None
        if conn is None:
            conn = Connection((s.a, s.b))
            open_[key] = conn
            done[key] = False
            out.append(conn)
        if s.flags & 0x05:          # FIN or RST
            done[key] = True
        conn.segments.append(s)
    return out


def parse_flow(spec: str) -> tuple[str | None, int]:
    """'PORT', 'ADDR:PORT' or '[V6ADDR]:PORT' -> (address or None, port)."""
    text = spec.strip()
    addr: str | None = None
    port = text
    if text.startswith("["):
        addr, _, port = text[1:].partition("]")
        port = port.lstrip(":")
    elif text.count(":") == 1:
        addr, _, port = text.partition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise PcapError("--flow", None, f"{spec!r} is not PORT, ADDR:PORT or [V6ADDR]:PORT",
                        "copy a --flow value from the listing of the capture's connections")
    return addr or None, int(port)


def choose(conns: list[Connection], flow: str | None, where: str) -> Connection:
    """The connection `flow` names; with several and none named, a PcapError that lists them
    (the CLI prints the listing itself; see listing())."""
    if flow is None:
        if len(conns) == 1:
            return conns[0]
        raise TooManyFlows(conns)
    addr, port = parse_flow(flow)
    hits = [c for c in conns
            if any(ep[1] == port and (addr is None or ep[0] == addr) for ep in c.ends)]
    if not hits:
        raise PcapError(where, None, f"no connection has the endpoint {flow}",
                        "give --flow with a value from the listing (run without --flow to see it)")
    if len(hits) > 1:
        # a receiver endpoint is preferred: a server port is shared by several connections
        rcv = [c for c in hits if c.receiver[1] == port and (addr is None or c.receiver[0] == addr)]
        if len(rcv) == 1:
            return rcv[0]
        raise PcapError(where, None, f"--flow {flow} matches {len(hits)} connections",
                        "give the endpoint that is unique to one (its other port, as in the listing)")
    return hits[0]


class TooManyFlows(Exception):
    """Several connections and no --flow: the caller lists them and asks."""

    def __init__(self, conns: list[Connection]) -> None:
        super().__init__(f"{len(conns)} TCP connections")
        self.conns = conns


def listing(conns: list[Connection]) -> list[str]:
    """The lines that list the connections (sender -> receiver)."""
    return [c.line(i) for i, c in enumerate(conns, start=1)]
