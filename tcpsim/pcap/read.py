"""A capture file -> the TCP segments in it, decoded with dpkt.

Reads classic pcap (micro- or nanosecond) and pcapng, as tcpdump and Wireshark write them,
with the link types a Linux capture has: Ethernet (with 802.1Q / QinQ VLAN tags), Linux
cooked SLL (`tcpdump -i any` before libpcap 1.10) and SLL2 (after), raw IP, IPv4, IPv6 and
BSD loopback. A snaplen that cut the payload is fine -- the payload length comes from the IP
header, never from the captured bytes -- but one that cut a TCP header is not: the window
and options are what tcpsim needs.

Every problem is one `PcapError` naming the file, what is wrong and what to do.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import struct

import dpkt

from tcpsim.capture.wire import Packet
from tcpsim.pcap import PcapError

# link types (https://www.tcpdump.org/linktypes.html) and what decodes them
LINKTYPE_NAMES = {0: "BSD loopback", 1: "Ethernet", 12: "raw IP", 14: "raw IP", 101: "raw IP",
                  108: "OpenBSD loopback", 113: "Linux cooked (SLL)",
                  276: "Linux cooked v2 (SLL2)", 228: "IPv4", 229: "IPv6"}
RAW_IP = frozenset({12, 14, 101, 228, 229})
MIN_SNAPLEN = 128     # Ethernet + VLAN + IPv6 + a TCP header with 40 bytes of options


WireSegment = Packet
"""One TCP segment as captured (tcpsim.capture.wire.Packet: addresses, header fields,
options, payload length)."""


@dataclass
class Capture:
    """The TCP segments of a file and what else it held."""

    path: str
    linktype: int
    segments: list[WireSegment]
    frames: int
    other: Counter          # non-TCP frames by kind ("UDP", "ARP", "IPv4 proto 1", ...)
    # (address, port) -> Counter of "out" / "in": the direction the link layer recorded for
    # the frames that endpoint sent (Linux cooked SLL/SLL2 only: `tcpdump -i any`)
    directions: dict = field(default_factory=dict)
    options_cut: int = 0    # TCP segments (not SYNs) whose options the snaplen cut


def read_capture(path: str | Path) -> Capture:
    """Decode every frame of a pcap/pcapng file; TCP segments in file order."""
    p = Path(path)
    where = str(p)
    if not p.is_file():
        raise PcapError(where, None, "no such file", "check the path")
    with _open_file(p) as f:
        reader = _open(f, where)
        linktype = reader.datalink()
        if linktype not in LINKTYPE_NAMES:
            raise PcapError(where, None, f"link type {linktype} is not one tcpsim reads",
                            "capture on an Ethernet, loopback or 'any' interface, or convert with "
                            "`editcap -T ether` / `tshark -r FILE -w OUT -F pcap`; link types read: "
                            + ", ".join(sorted(set(LINKTYPE_NAMES.values()))))
        segs: list[WireSegment] = []
        other: Counter = Counter()
        dirs: dict = {}
        n = 0
        fast = FAST_OFFSET.get(linktype)
        classic = isinstance(reader, dpkt.pcap.Reader) and f.seekable()
        if classic and fast is not None:
            segs, n = _classic_bulk(f, where, fast, linktype, reader.snaplen, other, dirs)
            return _capture(where, linktype, segs, n, other, dirs)
        records: Any = _classic_records(f, where) if classic else (
            (_ns(ts), buf) for ts, buf in reader)
        while True:
            try:
                t_ns, buf = next(records)
            except StopIteration:
                break
            except (dpkt.UnpackError, ValueError, OverflowError):
                _truncated(where, n)
            n += 1
            try:
                seg = None
                if fast is not None:
                    seg = fast_decode(t_ns, buf, fast)
                if seg is None:
                    seg = decode(t_ns, buf, linktype, where, n, reader.snaplen, other, dirs)
            except PcapError:
                # a packet cut short by the end of the file is that, not a small snaplen
                if isinstance(reader, dpkt.pcap.Reader) and f.seekable():
                    _check_last_record(f, p, n, where)
                raise
            if seg is not None:
                segs.append(seg)
        if isinstance(reader, dpkt.pcap.Reader) and not classic:
            _check_last_record(f, p, n, where)
    return _capture(where, linktype, segs, n, other, dirs)


def _capture(where: str, linktype: int, segs: list[WireSegment], n: int, other: Counter,
             dirs: dict) -> Capture:
    cut = other.pop(OPTIONS_CUT, 0)
    if not segs:
        seen = ", ".join(f"{k} x{v}" for k, v in other.most_common(4)) or "no frames"
        raise PcapError(where, None, f"no TCP segments in {n} frames ({seen})",
                        "capture the TCP connection itself, e.g. tcpdump -i IFACE -w FILE "
                        "'tcp port PORT'")
    return Capture(where, linktype, segs, n, other, dirs, cut)


# where the IPv4 header starts in a frame of the link types decode_fast() reads
FAST_OFFSET = {1: 14, 12: 0, 14: 0, 101: 0, 228: 0}
_IP4 = struct.Struct(">BBHHHBBH4s4s")
_TCP = struct.Struct(">HHIIBBHHH")


def fast_decode(t_ns: int, buf: bytes, off: int) -> WireSegment | None:
    """The common frame -- untagged Ethernet (or raw) IPv4, unfragmented TCP, its header and
    options whole -- decoded with struct, five times faster than dpkt; None for anything
    else, which decode() then reads (and judges)."""
    if off == 14 and buf[12:14] != b"\x08\x00":
        return None
    if len(buf) < off + 40:
        return None
    vhl, _, total, _, frag, _, proto, _, src, dst = _IP4.unpack_from(buf, off)
    if vhl >> 4 != 4 or proto != 6 or frag & 0x3FFF:
        return None
    ihl = (vhl & 15) * 4
    t = off + ihl
    if len(buf) < t + 20:
        return None
    sport, dport, seq, ack, doff_b, flags, win, _, _ = _TCP.unpack_from(buf, t)
    doff = (doff_b >> 4) * 4
    if doff < 20 or len(buf) < t + doff:
        return None                     # options cut by the snaplen: decode() says so
    mss = wscale = tsval = tsecr = -1
    sack_ok = False
    sacks: list[tuple[int, int]] = []
    o, end = t + 20, t + doff
    while o < end:
        kind = buf[o]
        if kind == 0:
            break
        if kind == 1:
            o += 1
            continue
        if o + 1 >= end or buf[o + 1] < 2 or o + buf[o + 1] > end:
            break                       # cut short: the kernel stops there too
        ln = buf[o + 1]
        if kind == 2 and ln == 4:
            mss = int.from_bytes(buf[o + 2:o + 4], "big")
        elif kind == 3 and ln == 3:
            wscale = buf[o + 2]
        elif kind == 4:
            sack_ok = True
        elif kind == 8 and ln == 10:
            tsval = int.from_bytes(buf[o + 2:o + 6], "big")
            tsecr = int.from_bytes(buf[o + 6:o + 10], "big")
        elif kind == 5 and (ln - 2) % 8 == 0:
            sacks += [(int.from_bytes(buf[i:i + 4], "big"), int.from_bytes(buf[i + 4:i + 8], "big"))
                      for i in range(o + 2, o + ln, 8)]
        o += ln
    payload = max(0, total - ihl - doff) if total > 0 else len(buf) - end
    return WireSegment(t_ns, _addr4(src), sport, _addr4(dst), dport, seq, ack, flags, win, payload,
                       mss=mss, wscale=wscale, tsval=tsval, sack_ok=sack_ok, tsecr=tsecr,
                       sacks=tuple(sacks))


def _classic_bulk(f: BinaryIO, where: str, off: int, linktype: int, snaplen: int,
                  other: Counter, dirs: dict) -> tuple[list[WireSegment], int]:
    """The segments of a classic pcap file of a link type fast_decode() reads, and its frame
    count: the record headers walked once, then the common frame -- `off` bytes of link
    header, IPv4 without options, unfragmented TCP with no options or with only the timestamp
    option (NOP, NOP, TS: every data segment and plain ACK of a Linux connection) -- decoded
    for all frames at once with numpy (a 5-second 1 Gbit/s capture has 400 000 of them: 2.5 s
    frame by frame); every other frame goes through fast_decode()/decode() as before, in file
    order, so the first frame in error is the one reported, and a record cut by the end of
    the file is reported after the complete ones (as _classic_records() does)."""
    import numpy as np
    f.seek(0)
    data = f.read()
    endian, unit = _MAGIC.get(data[:4], ("<", 1000))
    caplen_at = struct.Struct(endian + "I").unpack_from
    starts: list[int] = []
    pos, size, cut = 24, len(data), False
    while pos < size:
        if pos + 16 > size:
            cut = True
            break
        c = caplen_at(data, pos + 8)[0]
        if pos + 16 + c > size:
            cut = True
            break
        starts.append(pos)
        pos += 16 + c
    n = len(starts)
    # padded: the gathers of a frame too short to decode here read the file's first bytes
    # instead (masked out), which must exist however small the file
    buf = np.frombuffer(data + bytes(64), dtype=np.uint8)
    hdr = np.asarray(starts, dtype=np.int64)
    dt = np.dtype(endian + "u4")

    def u32(o: Any) -> Any:            # a record header's field, in the file's byte order
        return buf[o[:, None] + np.arange(4)].copy().view(dt).ravel().astype(np.int64)

    def be(o: Any, width: int) -> Any:  # a big-endian field of `width` bytes at o
        v = np.zeros(len(o), dtype=np.int64)
        for i in range(width):
            v = (v << 8) | buf[o + i]
        return v

    sec, frac, caplen = u32(hdr), u32(hdr + 4), u32(hdr + 8)
    t_ns = sec * 1_000_000_000 + frac * unit
    frame = hdr + 16
    ok = caplen >= off + 20 + 20 + 12
    ip = frame + off
    safe = np.where(ok, ip, 0)           # gathers of frames too short read offset 0 instead
    if off == 14:
        ok &= (buf[np.maximum(safe - 2, 0)] == 8) & (buf[np.maximum(safe - 1, 0)] == 0)
    total = be(safe + 2, 2)
    ok &= (buf[safe] == 0x45) & (buf[safe + 9] == 6) & ((be(safe + 6, 2) & 0x3FFF) == 0) \
        & (total > 0)
    tcp = safe + 20
    doff = (buf[tcp + 12] >> 4).astype(np.int64) * 4
    ts = (doff == 32) & (buf[tcp + 20] == 1) & (buf[tcp + 21] == 1) & (buf[tcp + 22] == 8) \
        & (buf[tcp + 23] == 10)
    ok &= ((doff == 20) | ts) & (caplen >= off + 20 + doff)
    tsval = np.where(ts, be(tcp + 24, 4), -1)
    tsecr = np.where(ts, be(tcp + 28, 4), -1)
    payload = np.maximum(0, total - 20 - doff)
    src, dst = be(safe + 12, 4), be(safe + 16, 4)
    names = {a: _addr4(int(a).to_bytes(4, "big")) for a in np.unique(np.concatenate(
        (src[ok], dst[ok]))).tolist()}
    idx = np.flatnonzero(ok)
    cols = [x[idx].tolist() for x in (t_ns, src, be(tcp, 2), dst, be(tcp + 2, 2), be(tcp + 4, 4),
                                      be(tcp + 8, 4), buf[tcp + 13].astype(np.int64),
                                      be(tcp + 14, 2), payload, tsval, tsecr)]
    out: list[WireSegment | None] = [None] * n
    for i, t, a, sp, b, dp, sq, ak, fl, w, pl, tv, te in zip(idx.tolist(), *cols):
        out[i] = WireSegment(t, names[a], sp, names[b], dp, sq, ak, fl, w, pl, tsval=tv, tsecr=te)
    t_all = t_ns.tolist()
    for i in np.flatnonzero(~ok).tolist():
        s0, c = starts[i] + 16, int(caplen[i])
        fr = data[s0:s0 + c]
        seg = fast_decode(t_all[i], fr, off)
        out[i] = seg if seg is not None else decode(t_all[i], fr, linktype, where, i + 1,
                                                    snaplen, other, dirs)
    if cut:
        _truncated(where, n)
    return [x for x in out if x is not None], n


GZIP_MAGIC = b"\x1f\x8b"
OPTIONS_CUT = "TCP options cut by the snaplen"


def _open_file(p: Path) -> Any:
    """The file, decompressed when gzipped (`tcpdump -w - | gzip`, `FILE.pcap.gz`)."""
    with p.open("rb") as f:
        gz = f.read(2) == GZIP_MAGIC
    if gz:
        import gzip
        import io
        with gzip.open(p, "rb") as g:
            try:
                return io.BytesIO(g.read())
            except (OSError, EOFError):
                raise PcapError(str(p), None, "a gzip file cut short or corrupt",
                                "gunzip -c FILE > dump.pcap to see what is left, or copy it again"
                                ) from None
    return p.open("rb")


_MAGIC = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\x4d\x3c\xb2\xa1": ("<", 1),
          b"\xa1\xb2\xc3\xd4": (">", 1000), b"\xa1\xb2\x3c\x4d": (">", 1)}


def _classic_records(f: BinaryIO, where: str) -> Any:
    """(t_ns, frame) of a classic pcap file, read with struct from its record headers (dpkt's
    reader builds an object per record, and returns a record cut short by the end of the file
    silently): a record whose header or data the file cuts is reported as that."""
    f.seek(0)
    endian, unit = _MAGIC.get(f.read(24)[:4], ("<", 1000))
    rec = struct.Struct(endian + "IIII")
    n = 0
    while True:
        hdr = f.read(16)
        if not hdr:
            return
        if len(hdr) < 16:
            _truncated(where, n)
        sec, frac, caplen, _ = rec.unpack(hdr)
        buf = f.read(caplen)
        if len(buf) < caplen:
            _truncated(where, n)
        n += 1
        yield sec * 1_000_000_000 + frac * unit, buf


def _open(f: BinaryIO, where: str) -> Any:
    try:
        return dpkt.pcap.UniversalReader(f)
    except (ValueError, dpkt.UnpackError) as exc:
        head = str(exc).splitlines()[0][:80]
        raise PcapError(where, None, f"not a pcap or pcapng file ({head})",
                        "give a file written by tcpdump -w or Wireshark (File > Save As pcap/pcapng)"
                        ) from None


def _ns(ts: Any) -> int:
    """dpkt's timestamp (float seconds, or Decimal for nanosecond files) as integer ns."""
    from decimal import Decimal
    if isinstance(ts, Decimal):
        return int(ts * 1_000_000_000)
    return int(round(ts * 1_000_000)) * 1000


def _truncated(where: str, complete: int) -> None:
    raise PcapError(where, None, f"the file ends in the middle of packet {complete + 1} (the capture "
                    "was cut short, e.g. copied while tcpdump was writing or tcpdump killed)",
                    f"keep the {complete} complete packets: editcap -r {where} fixed.pcap "
                    f"1-{max(complete, 1)}, or copy the file again after tcpdump exits")


def _check_last_record(f: BinaryIO, p: Path, n: int, where: str) -> None:
    """dpkt's classic reader returns a short last record silently: re-read its header."""
    f.seek(0, 2)
    size = f.tell()
    f.seek(0)
    magic = dpkt.pcap.FileHdr(f.read(dpkt.pcap.FileHdr.__hdr_len__)).magic
    hdr_cls = dpkt.pcap.MAGIC_TO_PKT_HDR[magic]
    off = dpkt.pcap.FileHdr.__hdr_len__
    for i in range(n):
        f.seek(off)
        raw = f.read(hdr_cls.__hdr_len__)
        if len(raw) < hdr_cls.__hdr_len__:
            _truncated(where, i)
        off += hdr_cls.__hdr_len__ + hdr_cls(raw).caplen
        if off > size:
            _truncated(where, i)


SLL_OUTGOING = 4          # Linux cooked capture's packet type of a frame this host sent


def network_layer(buf: bytes, linktype: int) -> tuple[Any, str, int]:
    """The IP packet of a frame (or what is there instead), a name for it and the link
    layer's packet type (SLL/SLL2; -1 for other link types)."""
    if linktype == 1:
        eth = dpkt.ethernet.Ethernet(buf)
        return eth.data, _ethtype_name(eth), -1
    if linktype == 113:
        sll = dpkt.sll.SLL(buf)
        return sll.data, f"ethertype 0x{sll.ethtype:04x}", sll.type
    if linktype == 276:
        sll2 = dpkt.sll2.SLL2(buf)
        return sll2.data, f"ethertype 0x{sll2.ethtype:04x}", sll2.type
    if linktype in (0, 108):
        lo = dpkt.loopback.Loopback(buf)
        return lo.data, "loopback", -1
    # raw IP: the version nibble says which
    if buf and buf[0] >> 4 == 4:
        return dpkt.ip.IP(buf), "IPv4", -1
    if buf and buf[0] >> 4 == 6:
        return dpkt.ip6.IP6(buf), "IPv6", -1
    return buf, "not IP", -1


def _ethtype_name(eth: Any) -> str:
    return f"ethertype 0x{getattr(eth, '_next_type', eth.type):04x}"


def decode(t_ns: int, buf: bytes, linktype: int, where: str, n: int, snaplen: int,
           other: Counter, dirs: dict | None = None) -> WireSegment | None:
    """One frame -> a WireSegment, None for non-TCP (counted in `other`); a PcapError when the
    snaplen cut the IP or TCP header, or a SYN's options. `dirs` collects the link layer's
    direction of each sending endpoint's frames (Capture.directions)."""
    try:
        ip, kind, pkttype = network_layer(buf, linktype)
    except (dpkt.UnpackError, ValueError):
        _cut(where, n, len(buf), snaplen)
    if isinstance(ip, dpkt.ip.IP):
        proto, hdr_len = ip.p, ip.hl * 4
        total = ip.len
        if ip.offset:
            other["IPv4 fragment"] += 1
            return None
        src, dst = _addr4(ip.src), _addr4(ip.dst)
        ip_payload = total - hdr_len
    elif isinstance(ip, dpkt.ip6.IP6):
        proto = ip.p
        ext = sum(len(bytes(h)) for h in ip.all_extension_headers)
        src, dst = _addr6(ip.src), _addr6(ip.dst)
        ip_payload = ip.plen - ext
    else:
        if kind in ("ethertype 0x0800", "ethertype 0x86dd", "IPv4", "IPv6"):
            _cut(where, n, len(buf), snaplen)
        other[{"ethertype 0x0806": "ARP"}.get(kind, kind)] += 1
        return None
    tcp = ip.data
    if proto != 6:
        other[{17: "UDP", 1: "ICMP", 58: "ICMPv6"}.get(proto, f"IP proto {proto}")] += 1
        return None
    if not isinstance(tcp, dpkt.tcp.TCP):
        _cut(where, n, len(buf), snaplen)
    if dirs is not None and pkttype >= 0:
        dirs.setdefault((src, tcp.sport), Counter())["out" if pkttype == SLL_OUTGOING else "in"] += 1
    doff = tcp.off * 4
    mss = wscale = tsval = tsecr = -1
    sack_ok = False
    sacks: list[tuple[int, int]] = []
    try:
        opts = dpkt.tcp.parse_opts(tcp.opts)
    except (dpkt.UnpackError, ValueError, IndexError):
        opts = []
    for opt in opts:
        if opt is None:          # dpkt's mark of an option cut short: the kernel stops there too
            break                # (tcp_parse_options() [tcp_input.c]: opsize past the end)
        kind_, data = opt
        if kind_ == dpkt.tcp.TCP_OPT_MSS and len(data) == 2:
            mss = int.from_bytes(data, "big")
        elif kind_ == dpkt.tcp.TCP_OPT_WSCALE and len(data) == 1:
            wscale = data[0]
        elif kind_ == dpkt.tcp.TCP_OPT_SACKOK:
            sack_ok = True
        elif kind_ == dpkt.tcp.TCP_OPT_TIMESTAMP and len(data) == 8:
            tsval, tsecr = int.from_bytes(data[:4], "big"), int.from_bytes(data[4:], "big")
        elif kind_ == dpkt.tcp.TCP_OPT_SACK and len(data) % 8 == 0:
            sacks += [(int.from_bytes(data[i:i + 4], "big"), int.from_bytes(data[i + 4:i + 8], "big"))
                      for i in range(0, len(data), 8)]
    if len(tcp.opts) < doff - 20:
        # the snaplen ended inside the options: what is missing is unknown, not absent
        if tcp.flags & 0x02:
            raise PcapError(where, None, f"packet {n}: the SYN's TCP options are cut by the snaplen "
                            f"(snaplen {snaplen}: {len(tcp.opts)} of {doff - 20} option bytes "
                            "captured), so its window scale and MSS are unknown and every window "
                            "would be misread",
                            "capture again with whole packets: tcpdump -s 0 (or at least -s "
                            f"{MIN_SNAPLEN})")
        other[OPTIONS_CUT] += 1
    payload = max(0, ip_payload - doff) if ip_payload > 0 else len(tcp.data)
    return WireSegment(t_ns, src, tcp.sport, dst, tcp.dport, tcp.seq, tcp.ack, tcp.flags, tcp.win,
                       payload, mss=mss, wscale=wscale, tsval=tsval, sack_ok=sack_ok, tsecr=tsecr,
                       sacks=tuple(sacks))


def _cut(where: str, n: int, caplen: int, snaplen: int) -> None:
    raise PcapError(where, None, f"packet {n}: only {caplen} bytes captured, which cuts its IP or "
                    f"TCP header (snaplen {snaplen})",
                    f"capture again with a snaplen of at least {MIN_SNAPLEN} (tcpdump -s "
                    f"{MIN_SNAPLEN}, or -s 0 for whole packets)")


@lru_cache(maxsize=1024)
def _addr4(raw: bytes) -> str:
    import socket
    return socket.inet_ntop(socket.AF_INET, raw)


def _addr6(raw: bytes) -> str:
    import socket
    return socket.inet_ntop(socket.AF_INET6, raw)
