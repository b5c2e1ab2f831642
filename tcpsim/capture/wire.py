"""The wire as the receiver's veth saw it: a pcap reader and advertised-window extraction.

`tcpdump -w` (nanosecond precision) runs in the receiver namespace; this module parses the pcap
(Ethernet/IPv4/TCP only, no dependency) into `Packet`s, unwraps sequence numbers relative to
each side's ISN, and scales the window field with the scale negotiated in the handshake.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

_FLAGS = ((0x02, "S"), (0x01, "F"), (0x04, "R"), (0x08, "P"), (0x10, "A"), (0x20, "U"))


def flags_str(bits: int) -> str:
    """Kernel-trace style flag letters, e.g. 'SA', 'PA', 'A'."""
    return "".join(ch for bit, ch in _FLAGS if bits & bit)


@dataclass(slots=True, unsafe_hash=True)
class Packet:
    """One TCP packet: raw header fields, options and payload length. Hashable by value;
    treat it as immutable (dataclasses.replace for a changed copy). Not declared frozen: a
    frozen dataclass's __init__ sets each field through object.__setattr__, 2.5x slower --
    a second of the import of a 400 000-packet capture."""

    t_ns: int
    src: str
    sport: int
    dst: str
    dport: int
    seq: int
    ack: int
    flags: int
    win: int
    payload: int
    mss: int = -1
    wscale: int = -1
    tsval: int = -1
    # read by tcpsim.pcap.read (dpkt) only; this module's own parser leaves them unset
    sack_ok: bool = False
    tsecr: int = -1
    sacks: tuple[tuple[int, int], ...] = ()

    @property
    def a(self) -> tuple[str, int]:
        """The sending endpoint (address, port)."""
        return (self.src, self.sport)

    @property
    def b(self) -> tuple[str, int]:
        """The receiving endpoint."""
        return (self.dst, self.dport)


def _parse_options(opts: bytes) -> tuple[int, int, int]:
    mss = wscale = tsval = -1
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        ln = opts[i + 1]
        if kind == 2 and ln == 4:
            mss = struct.unpack_from("!H", opts, i + 2)[0]
        elif kind == 3 and ln == 3:
            wscale = opts[i + 2]
        elif kind == 8 and ln == 10:
            tsval = struct.unpack_from("!I", opts, i + 2)[0]
        i += ln
    return mss, wscale, tsval


def parse_frame(t_ns: int, frame: bytes, linktype: int = 1) -> Packet | None:
    """Decode one captured frame; None if it is not TCP over IPv4."""
    off = 14 if linktype == 1 else 0
    if linktype == 1:
        if len(frame) < 14 or struct.unpack_from("!H", frame, 12)[0] != 0x0800:
            return None
    if len(frame) < off + 20 or frame[off] >> 4 != 4 or frame[off + 9] != 6:
        return None
    ihl = (frame[off] & 0x0F) * 4
    total_len = struct.unpack_from("!H", frame, off + 2)[0]
    src = ".".join(str(b) for b in frame[off + 12:off + 16])
    dst = ".".join(str(b) for b in frame[off + 16:off + 20])
    t = off + ihl
    if len(frame) < t + 20:
        return None
    sport, dport, seq, ack, doff_res, flags, win = struct.unpack_from("!HHIIBBH", frame, t)
    doff = (doff_res >> 4) * 4
    mss, wscale, tsval = _parse_options(frame[t + 20:t + doff])
    return Packet(t_ns, src, sport, dst, dport, seq, ack, flags, win,
                  total_len - ihl - doff, mss, wscale, tsval)


def read_pcap(path: Path | str) -> Iterator[Packet]:
    """Yield the TCP packets of a classic pcap file (micro- or nanosecond timestamps)."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        return
    magic = struct.unpack_from("<I", data, 0)[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    magic = struct.unpack_from(endian + "I", data, 0)[0]
    scale = 1 if magic == 0xA1B23C4D else 1000
    linktype = struct.unpack_from(endian + "I", data, 20)[0]
    off = 24
    while off + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack_from(endian + "IIII", data, off)
        off += 16
        pkt = parse_frame(sec * 1_000_000_000 + frac * scale, data[off:off + caplen], linktype)
        off += caplen
        if pkt is not None:
            yield pkt


@dataclass
class Flow:
    """One connection seen from the receiver: its packets in both directions, unwrapped."""

    rcv: tuple[str, int]
    packets: list[Packet] = field(default_factory=list)
    isn: dict[bool, int] = field(default_factory=dict)      # from_rcv -> ISN
    wscale: dict[bool, int] = field(default_factory=dict)   # from_rcv -> scale it announced

    def from_rcv(self, p: Packet) -> bool:
        return (p.src, p.sport) == self.rcv

    def scale_of(self, from_rcv: bool) -> int:
        """Shift applied to the window field of a non-SYN packet sent by that side."""
        if 0 <= self.wscale.get(True, -1) and 0 <= self.wscale.get(False, -1):
            return self.wscale[from_rcv]
        return 0


def build_flow(packets: Iterable[Packet], rcv_port: int) -> Flow:
    """Collect the packets of the connection whose receiver-side port is ``rcv_port``."""
    flow: Flow | None = None
    for p in packets:
        if rcv_port not in (p.sport, p.dport):
            continue
        if flow is None:
            rcv = (p.src, p.sport) if p.sport == rcv_port else (p.dst, p.dport)
            flow = Flow(rcv=rcv)
        side = flow.from_rcv(p)
        if p.flags & 0x02:
            flow.isn[side] = p.seq
            flow.wscale[side] = p.wscale
        flow.packets.append(p)
    return flow or Flow(rcv=("", rcv_port))


def _rel(value: int, base: int | None, last: int) -> int:
    """Sequence number relative to ``base``, unwrapped near ``last``."""
    if base is None:
        return -1
    r = (value - base) % (1 << 32)
    while r + (1 << 31) < last:
        r += 1 << 32
    return r


def rows(flow: Flow, t0_ns: int = 0) -> list[dict[str, object]]:
    """Trace rows for every packet: sock 'rcv' event 'tx' for the receiver's own packets
    (ACKs, windows), sock 'snd' event 'tx' for the peer's. seq/ack relative to each ISN."""
    out: list[dict[str, object]] = []
    last = {True: 0, False: 0}
    for p in flow.packets:
        side = flow.from_rcv(p)
        seq = _rel(p.seq, flow.isn.get(side), last[side])
        if seq >= 0:
            last[side] = max(last[side], seq)
        ack = _rel(p.ack, flow.isn.get(not side), last[not side]) if p.flags & 0x10 else -1
        syn_fin = (1 if p.flags & 0x02 else 0) + (1 if p.flags & 0x01 else 0)
        shift = 0 if p.flags & 0x02 else flow.scale_of(side)
        out.append({
            "t_ns": p.t_ns - t0_ns, "sock": "rcv" if side else "snd", "event": "tx",
            "detail": "wire", "seq": seq, "end_seq": seq + p.payload + syn_fin if seq >= 0 else -1,
            "len": p.payload, "flags": flags_str(p.flags), "ack_seq": ack,
            "win_raw": p.win, "win_scaled": p.win << shift,
        })
    return out


def ack_windows(flow: Flow, t0_ns: int = 0) -> list[dict[str, object]]:
    """The receiver's advertised windows: one row per packet the receiver sent."""
    return [r for r in rows(flow, t0_ns) if r["sock"] == "rcv"]


def window_summary(acks: list[dict[str, object]]) -> dict[str, object]:
    """Counts of zero windows, min/max scaled window and right-edge retreats (shrinks)."""
    wins = [int(r["win_scaled"]) for r in acks if "S" not in str(r["flags"])]
    zero = sum(1 for w in wins if w == 0)
    retreats, edge = 0, -1
    for r in acks:
        if "S" in str(r["flags"]) or int(r["ack_seq"]) < 0:
            continue
        right = int(r["ack_seq"]) + int(r["win_scaled"])
        if right < edge:
            retreats += 1
        edge = max(edge, right)
    return {"acks": len(wins), "zero_windows": zero, "min_win": min(wins, default=-1),
            "max_win": max(wins, default=-1), "right_edge_retreats": retreats}


def ack_order(at_receiver: Iterable[Packet], at_sender: Iterable[Packet],
              rcv_port: int) -> dict[str, int]:
    """Were the receiver's packets reordered on their way to the sender? (With the reader on
    its own CPU they leave from two CPUs, and veth queues each on its sender CPU's backlog.)

    Each packet is matched by (ack, tsval, window, flags) to its place in the receiver-side
    capture; 'reordered' counts those that reached the sender after a packet sent later,
    'ack_went_back' those whose ack number is below one the sender had already received
    (tcp_ack() then ignores them as old ACKs).
    """
    def key(p: Packet) -> tuple[int, int, int, int]:
        return (p.ack, p.tsval, p.win, p.flags)

    sent: dict[tuple[int, int, int, int], list[int]] = {}
    n_sent = 0
    for p in at_receiver:
        if p.sport == rcv_port:
            sent.setdefault(key(p), []).append(n_sent)
            n_sent += 1
    seen = reordered = unmatched = went_back = 0
    last_idx, high_ack = -1, None
    for p in at_sender:
        if p.sport != rcv_port:
            continue
        seen += 1
        places = sent.get(key(p))
        if not places:
            unmatched += 1
        else:
            idx = places.pop(0)
            if idx < last_idx:
                reordered += 1
            last_idx = max(last_idx, idx)
        if p.flags & 0x10:
            if high_ack is not None and 0 < (high_ack - p.ack) % (1 << 32) < 1 << 31:
                went_back += 1
            elif high_ack is None or (p.ack - high_ack) % (1 << 32) < 1 << 31:
                high_ack = p.ack
    return {"sent": n_sent, "seen_at_sender": seen, "reordered": reordered,
            "ack_went_back": went_back, "unmatched": unmatched}
