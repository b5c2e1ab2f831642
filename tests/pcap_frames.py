"""Small captures written with dpkt for the pcap tests: one TCP connection (handshake, data,
a zero window, a window update, a retransmission), framed in any link type."""

from __future__ import annotations

import io
import socket
import struct
from pathlib import Path

import dpkt

SND = ("10.1.0.1", 5001)
RCV = ("10.1.0.2", 40000)
SND6 = ("2001:db8::1", 5001)
RCV6 = ("2001:db8::2", 40000)
ISN_S, ISN_R = 1000, 5000000


def tcp(sport: int, dport: int, seq: int, ack: int, flags: int, win: int, payload: int = 0,
        opts: bytes = b"") -> dpkt.tcp.TCP:
    t = dpkt.tcp.TCP(sport=sport, dport=dport, seq=seq % (1 << 32), ack=ack % (1 << 32),
                     flags=flags, win=win, opts=opts, data=b"x" * payload)
    t.off = (20 + len(opts)) // 4
    return t


def syn_opts(mss: int, wscale: int) -> bytes:
    return (struct.pack(">BBH", 2, 4, mss) + b"\x04\x02" + struct.pack(">BBII", 8, 10, 1, 0)
            + b"\x01" + struct.pack(">BBB", 3, 3, wscale))


TS = struct.pack(">BBBBII", 1, 1, 8, 10, 7, 7)


def connection(handshake: bool = True, v6: bool = False, rcv_port: int = 40000,
               t0: float = 1.0) -> list[tuple[float, dpkt.tcp.TCP, bool]]:
    """(time s, TCP segment, sent by the receiver?) of one connection in which the receiver
    (the client, window scale 7) gets 5 x 1024 B up to its right edge, shrinks the window
    once by 128 B, closes it, reopens it; the sender retransmits one segment and probes.
    RTT 10 ms, captured at the receiver."""
    S, R, A, P = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH
    out: list[tuple[float, dpkt.tcp.TCP, bool]] = []
    sp, rp = SND[1], rcv_port
    if handshake:
        out.append((t0, tcp(rp, sp, ISN_R, 0, S, 64240, opts=syn_opts(1460, 7)), True))
        out.append((t0 + 0.010, tcp(sp, rp, ISN_S, ISN_R + 1, S | R, 65160,
                                    opts=syn_opts(1460, 9)), False))
        out.append((t0 + 0.010, tcp(rp, sp, ISN_R + 1, ISN_S + 1, A, 40, opts=TS), True))
    t = t0 + 0.020
    seq = ISN_S + 1
    for i in range(5):
        out.append((t + i * 0.001, tcp(sp, rp, seq, ISN_R + 1, A | P, 501, 1024, TS), False))
        seq += 1024
        win = [32, 24, 16, 7, 0][i]                      # x 128 bytes
        out.append((t + i * 0.001 + 0.0001, tcp(rp, sp, ISN_R + 1, seq, A, win, opts=TS), True))
    # a retransmission of the last segment, then a probe, then a window update
    out.append((t + 0.010, tcp(sp, rp, seq - 1024, ISN_R + 1, A | P, 501, 1024, TS), False))
    out.append((t + 0.200, tcp(sp, rp, seq - 1, ISN_R + 1, A, 501, 0, TS), False))
    out.append((t + 0.300, tcp(rp, sp, ISN_R + 1, seq, A, 40, opts=TS), True))
    return out


def ip_packet(seg: dpkt.tcp.TCP, from_rcv: bool, v6: bool) -> dpkt.Packet:
    s, r = (SND6, RCV6) if v6 else (SND, RCV)
    src, dst = (r[0], s[0]) if from_rcv else (s[0], r[0])
    if v6:
        return dpkt.ip6.IP6(src=socket.inet_pton(socket.AF_INET6, src),
                            dst=socket.inet_pton(socket.AF_INET6, dst), nxt=6, hlim=64,
                            plen=len(seg), data=seg)
    pkt = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=6, data=seg)
    return pkt


def frame(seg: dpkt.tcp.TCP, from_rcv: bool, linktype: int, v6: bool = False,
          vlan: bool = False) -> bytes:
    ip = bytes(ip_packet(seg, from_rcv, v6))
    etype = dpkt.ethernet.ETH_TYPE_IP6 if v6 else dpkt.ethernet.ETH_TYPE_IP
    if linktype == dpkt.pcap.DLT_EN10MB:
        mac = b"\x02\x00\x00\x00\x00\x01", b"\x02\x00\x00\x00\x00\x02"
        if vlan:
            tag = struct.pack(">HH", 100, etype)
            return mac[0] + mac[1] + struct.pack(">H", 0x8100) + tag + ip
        return mac[0] + mac[1] + struct.pack(">H", etype) + ip
    if linktype == dpkt.pcap.DLT_LINUX_SLL:
        return bytes(dpkt.sll.SLL(type=4 if from_rcv else 0, ethtype=etype, data=ip))
    if linktype == dpkt.pcap.DLT_LINUX_SLL2:
        return bytes(dpkt.sll2.SLL2(ethtype=etype, type=4 if from_rcv else 0, data=ip))
    return ip                                             # raw IP


def write_pcap(path: Path, frames: list[tuple[float, bytes]], linktype: int = 1,
               snaplen: int = 65535, ng: bool = False) -> Path:
    with path.open("wb") as f:
        if ng:
            w = dpkt.pcapng.Writer(f, snaplen=snaplen, linktype=linktype)
        else:
            w = dpkt.pcap.Writer(f, snaplen=snaplen, linktype=linktype)
        for ts, buf in frames:
            w.writepkt(buf[:snaplen], ts=ts)
    return path


def capture(path: Path, linktype: int = 1, v6: bool = False, vlan: bool = False,
            snaplen: int = 65535, ng: bool = False, handshake: bool = True,
            extra: list[tuple[float, bytes]] | None = None) -> Path:
    """Write the connection as a capture file."""
    frames = [(t, frame(seg, mine, linktype, v6, vlan)) for t, seg, mine in connection(handshake, v6)]
    return write_pcap(path, sorted(frames + (extra or []), key=lambda f: f[0]), linktype,
                      snaplen, ng)


# Runs (not captures) the pcap tests export and read back
ZERO_WINDOW_RUN = "seed-rcvbuf32k-fill"      # zero windows within its first seconds
SLOW_READER = """
name = "slow-reader"
description = "a writer faster than its reader: zero windows and window updates"
profile = "linux-6.18"
duration = "1s"
[link]
rtt = "2ms"
[writer]
kind = "periodic"
bytes = 14480
every = "1ms"
[reader]
kind = "periodic"
bytes = 2000
every = "1ms"
"""
