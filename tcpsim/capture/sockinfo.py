"""Socket-level samples: SO_MEMINFO, TCP_INFO (6.18 layout prefix) and TCP_WINDOW_CLAMP."""

from __future__ import annotations

import socket
import struct

SO_MEMINFO = 55
TCP_WINDOW_CLAMP = 10
MEMINFO_FIELDS = ("rmem_alloc", "rcvbuf", "wmem_alloc", "sndbuf", "fwd_alloc", "wmem_queued",
                  "optmem", "backlog", "drops")

# (name, struct format, offset) of the struct tcp_info fields we use (include/uapi/linux/tcp.h).
_TCP_INFO = (
    ("state", "B", 0), ("ca_state", "B", 1), ("retransmits", "B", 2), ("probes", "B", 3),
    ("backoff", "B", 4), ("options", "B", 5), ("wscale", "B", 6),
    ("rto", "I", 8), ("ato", "I", 12), ("snd_mss", "I", 16), ("rcv_mss", "I", 20),
    ("unacked", "I", 24), ("lost", "I", 32), ("retrans", "I", 36),
    ("last_data_recv", "I", 52), ("pmtu", "I", 60), ("rcv_ssthresh", "I", 64), ("rtt", "I", 68),
    ("snd_ssthresh", "I", 76), ("snd_cwnd", "I", 80), ("advmss", "I", 84),
    ("rcv_rtt", "I", 92), ("rcv_space", "I", 96), ("total_retrans", "I", 100),
    ("bytes_acked", "Q", 120), ("bytes_received", "Q", 128), ("segs_out", "I", 136),
    ("segs_in", "I", 140), ("notsent_bytes", "I", 144), ("data_segs_in", "I", 152),
    ("data_segs_out", "I", 156), ("bytes_sent", "Q", 200), ("rcv_ooopack", "I", 224),
    ("snd_wnd", "I", 228), ("rcv_wnd", "I", 232),
)
TCP_INFO_LEN = 236


def meminfo(sock: socket.socket) -> dict[str, int]:
    """SO_MEMINFO: the `skmem` of `ss -m` (r=rmem_alloc, rb=rcvbuf, d=drops, ...)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 4 * len(MEMINFO_FIELDS))
    return dict(zip(MEMINFO_FIELDS, struct.unpack(f"={len(MEMINFO_FIELDS)}I", raw)))


def parse_tcp_info(raw: bytes) -> dict[str, int]:
    """Decode the fields we use from a TCP_INFO buffer; missing tail fields become -1."""
    out: dict[str, int] = {}
    for name, fmt, off in _TCP_INFO:
        size = struct.calcsize(fmt)
        out[name] = struct.unpack_from("=" + fmt, raw, off)[0] if off + size <= len(raw) else -1
    ws = out.pop("wscale")
    out["snd_wscale"], out["rcv_wscale"] = ws & 0x0F, ws >> 4
    return out


def tcp_info(sock: socket.socket) -> dict[str, int]:
    """TCP_INFO of a connected socket (includes tcpi_rcv_wnd on >= 6.2)."""
    return parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256))


def window_clamp(sock: socket.socket) -> int:
    """tp->window_clamp, via getsockopt(TCP_WINDOW_CLAMP)."""
    return sock.getsockopt(socket.IPPROTO_TCP, TCP_WINDOW_CLAMP)


def sample(sock: socket.socket) -> dict[str, int]:
    """One combined sample (meminfo + tcp_info + window_clamp)."""
    d = {f"sk_{k}": v for k, v in meminfo(sock).items()}
    d.update({f"tcpi_{k}": v for k, v in tcp_info(sock).items()})
    d["window_clamp"] = window_clamp(sock)
    return d
