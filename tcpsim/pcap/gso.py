"""GSO/TSO/GRO super-segments: data segments on the wire larger than the MSS.

A capture taken where the stack handles whole GSO trains -- loopback or a veth pair with TSO/GSO
on, or a receiver interface with GRO -- holds segments of up to 64 KB. The receiver's TCP took
each as one skb (one arrival, one truesize, one ACK decision: tcp_rcv_established() sees the
merged skb), which tcpsim's sender, sending MSS-sized segments, does not reproduce. Such a
capture is refused with the way to capture it (offloads off, tcpdump -s 0), unless the user
asks to split them (`--split-gso`): each is cut into MSS-sized segments at its time, which is
what the receiver saw when the capture was taken next to a sender whose NIC did the
segmentation (then they are split without asking).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tcpsim.pcap.flows import Connection
from tcpsim.pcap.read import WireSegment
from tcpsim.pcap.wirelog import Handshake

TS_OPTION = 12                  # the timestamps option's bytes in every segment
PIECE_NS = 1
"""split() puts a super-segment's MSS-sized pieces this far apart in time (to keep their order);
no two captured segments are 1 ns apart (pcap stamps are microseconds; pcapng's nanoseconds do
not come that close), so a piece is known by it (`transmissions`)."""


@dataclass
class SuperSegments:
    """What the capture holds beyond the MSS."""

    mss: int                    # the sender's segment size limit (receiver's MSS option, less options)
    data_segments: int
    count: int                  # data segments larger than mss
    largest: int

    def sentence(self) -> str:
        pct = 100 * self.count / max(1, self.data_segments)
        return (f"{self.count} of {self.data_segments} data segments ({pct:.0f} %) are larger than "
                f"the MSS ({self.mss} B), up to {self.largest} B: GSO/TSO or GRO super-segments")


def sender_mss(conn: Connection, hs: Handshake) -> int | None:
    """The payload limit of the sender's segments: the receiver's MSS option less the
    timestamps option when both sides use it; None without the receiver's SYN."""
    if hs.rcv.mss <= 0:
        return None
    return hs.rcv.mss - (TS_OPTION if hs.rcv.timestamps and hs.snd.timestamps else 0)


def find(conn: Connection, hs: Handshake) -> SuperSegments | None:
    """The super-segments of the sender's data, None when there are none (or no MSS known)."""
    mss = sender_mss(conn, hs)
    if mss is None:
        return None
    snd = conn.sender
    sizes = [s.payload for s in conn.segments if s.a == snd and s.payload]
    big = [n for n in sizes if n > mss]
    if not big:
        return None
    return SuperSegments(mss, len(sizes), len(big), max(big))


def split(conn: Connection, mss: int) -> Connection:
    """The connection with every sender segment larger than `mss` cut into MSS-sized ones,
    at its time (1 ns apart, to keep their order)."""
    snd = conn.sender
    out: list[WireSegment] = []
    for s in conn.segments:
        if s.a != snd or s.payload <= mss:
            out.append(s)
            continue
        off = 0
        while off < s.payload:
            n = min(mss, s.payload - off)
            last = off + n >= s.payload
            out.append(replace(s, t_ns=s.t_ns + PIECE_NS * (off // mss),
                               seq=(s.seq + off) % (1 << 32),
                               payload=n, flags=s.flags if last else s.flags & ~0x09))
            off += n
    return Connection(conn.ends, out)


def transmissions(writes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(time, bytes) writes of the wire's data with each split super-segment's pieces (PIECE_NS
    apart) made one write again, at its first piece's time: the sender sent it as one skb, and
    written at once the model's sender does too (one GSO skb where the device passes it whole,
    a TSO local pair) -- written piece by piece it sends each piece as an skb of its own."""
    out: list[tuple[int, int]] = []
    last = None
    for t, n in writes:
        if out and last is not None and t - last == PIECE_NS:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((t, n))
        last = t
    return out
