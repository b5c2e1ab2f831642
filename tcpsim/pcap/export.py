"""A simulated run's packets as a pcap file, as a capture on the receiver's interface shows them.

`PcapTap` is handed to the engine (`Simulation(tap=...)`), which calls it with every
segment that reaches the receiver and every segment the receiver sends, at that instant --
both directions as seen at the receiver, a lost segment never. The tap only encodes: an
Ethernet / IPv4 / TCP frame with the segment's flags, sequence and acknowledgment numbers,
window field and options (MSS, window scale, SACK-permitted, SACK blocks, timestamps), built
with dpkt. Payload bytes are not stored: each frame is cut after its TCP header (as `tcpdump
-s 128` would), its IP total length telling the payload's size, so Wireshark's TCP analysis
(zero window, window full, window update, retransmission, keep-alive / probe) works on it
and a long run stays small. TCP checksums are correct for an all-zero payload.

The receiver is 10.0.0.2, its peer 10.0.0.1; the client (the side that connects) uses port
40000, the server 5001. Sequence numbers are the model's (from each side's ISN) plus a fixed
offset per side; timestamps are nanosecond pcap, from simulated time 0.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path
from typing import BinaryIO

import dpkt

from tcpsim.core.segment import Segment

RCV_ADDR, SND_ADDR = "10.0.0.2", "10.0.0.1"
CLIENT_PORT, SERVER_PORT = 40000, 5001
ISN_BASE = {True: 0x2000_0000, False: 0x6000_0000}      # sent by the receiver? -> offset
MAC = {True: b"\x02\x00\x00\x00\x00\x02", False: b"\x02\x00\x00\x00\x00\x01"}
SNAPLEN = 128
WRAP = 1 << 32


class PcapTap:
    """Writes the segments the engine shows it to a nanosecond pcap file."""

    def __init__(self, path: str | Path, receiver_role: str = "client") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: BinaryIO = self.path.open("wb")
        self._w = dpkt.pcap.Writer(self._f, snaplen=SNAPLEN, linktype=dpkt.pcap.DLT_EN10MB,
                                   nano=True)
        client_is_rcv = receiver_role == "client"
        self.port = {True: CLIENT_PORT if client_is_rcv else SERVER_PORT,
                     False: SERVER_PORT if client_is_rcv else CLIENT_PORT}
        self.addr = {True: socket.inet_aton(RCV_ADDR), False: socket.inet_aton(SND_ADDR)}
        self.packets = 0

    def segment(self, t_ns: int, from_rcv: bool, seg: Segment) -> None:
        """One segment at the receiver: arriving (from_rcv False) or leaving (True)."""
        for piece in _wire_pieces(seg):
            frame, orig = self.frame(from_rcv, piece)
            hdr = self._w._pack_hdr(t_ns // 1_000_000_000, t_ns % 1_000_000_000, len(frame), orig)
            self._f.write(hdr + frame)
            self.packets += 1

    def frame(self, from_rcv: bool, seg: Segment) -> tuple[bytes, int]:
        """(captured bytes, length on the wire) of one segment."""
        src, dst = self.addr[from_rcv], self.addr[not from_rcv]
        tcp = dpkt.tcp.TCP(sport=self.port[from_rcv], dport=self.port[not from_rcv],
                           seq=(seg.seq + ISN_BASE[from_rcv]) % WRAP,
                           ack=(seg.ack + ISN_BASE[not from_rcv]) % WRAP if seg.flags & 0x10 else 0,
                           flags=seg.flags, win=seg.win & 0xFFFF)
        tcp.opts = _options(seg, ISN_BASE[not from_rcv])
        tcp.off = (20 + len(tcp.opts)) // 4
        tcp_len = 20 + len(tcp.opts) + seg.len
        pseudo = struct.pack(">4s4sxBH", src, dst, 6, tcp_len)
        tcp.sum = dpkt.in_cksum(pseudo + bytes(tcp))
        ip = dpkt.ip.IP(src=src, dst=dst, p=6, ttl=64, data=tcp)
        ip.len = 20 + tcp_len
        ip.sum = dpkt.in_cksum(ip.pack_hdr())
        head = ip.pack_hdr() + bytes(tcp)
        eth = dpkt.ethernet.Ethernet(src=MAC[from_rcv], dst=MAC[not from_rcv],
                                     type=dpkt.ethernet.ETH_TYPE_IP)
        frame = eth.pack_hdr() + head
        return frame, len(frame) + seg.len

    def close(self) -> None:
        self._f.close()


def _wire_pieces(seg: Segment) -> list[Segment]:
    """The segment, or its wire-sized pieces when a GRO aggregate exceeds an IP packet."""
    if not seg.gso_size or seg.len <= 65000:
        return [seg]
    out = []
    for off in range(0, seg.len, seg.gso_size):
        n = min(seg.gso_size, seg.len - off)
        last = off + n >= seg.len
        out.append(Segment(seg.seq + off, n, seg.flags if last else seg.flags & ~0x09, seg.ack,
                           seg.win, tsval=seg.tsval, tsecr=seg.tsecr, sacks=seg.sacks))
    return out


def _options(seg: Segment, peer_base: int) -> bytes:
    """The TCP options of a segment, padded to 32 bits (Linux's order: MSS, SACK-permitted
    with timestamps, window scale; NOPs before timestamps and SACK blocks)."""
    out = b""
    if seg.mss:
        out += struct.pack(">BBH", 2, 4, seg.mss)
    if seg.sack_ok and seg.tsval >= 0:
        out += struct.pack(">BB", 4, 2) + _ts(seg)
    elif seg.tsval >= 0:
        out += b"\x01\x01" + _ts(seg)
    elif seg.sack_ok:
        out += b"\x01\x01\x04\x02"
    if seg.wscale >= 0:
        out += b"\x01" + struct.pack(">BBB", 3, 3, seg.wscale)
    if seg.sacks:
        blocks = seg.sacks[:4 if seg.tsval < 0 else 3]
        out += b"\x01\x01" + struct.pack(">BB", 5, 2 + 8 * len(blocks))
        for a, b in blocks:
            out += struct.pack(">II", (a + peer_base) % WRAP, (b + peer_base) % WRAP)
    return out + b"\x00" * (-len(out) % 4)


def _ts(seg: Segment) -> bytes:
    return struct.pack(">BBII", 8, 10, seg.tsval % WRAP, max(seg.tsecr, 0) % WRAP)


def variant_path(out: Path, label: str, index: int) -> Path:
    """The pcap of one variant of `tcpsim compare --pcap OUT`: OUT's name plus the variant."""
    slug = "".join(ch if ch.isalnum() or ch in ".-" else "-" for ch in label).strip("-")
    slug = "-".join(p for p in slug.split("-") if p) or f"variant{index}"
    return out.with_name(f"{out.stem}-{index}-{slug}{out.suffix or '.pcap'}")
