"""Constant one-way delay with NFQUEUE: accept each queued packet exactly `delay` after arrival.

Pure-Python nfnetlink_queue client (no libnetfilter_queue). Packets stay in the kernel; only
their ids (copy mode META) reach us. The delay is constant, so packets leave in arrival order and
one batch verdict (NFQNL_MSG_VERDICT_BATCH, "accept every id <= n") releases all that are due.

Run inside the router namespace: ``python -m tcpsim.capture.nfq_delay --delay-ns 10000000``.
Prints "bound" once ready. On SIGTERM/SIGINT it accepts what is left, unbinds and (with
``--stats``) writes JSON with the number of packets and the lateness distribution (ns).
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import select
import signal
import socket
import struct
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 1, 2, 3
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN = 1, 2, 3
NFQNL_CFG_CMD_BIND, NFQNL_CFG_CMD_UNBIND = 1, 2
NFQNL_COPY_META = 1
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NETLINK_NO_ENOBUFS = 5
SOL_NETLINK = 270


def nla(attr_type: int, payload: bytes) -> bytes:
    """One netlink attribute, padded to 4 bytes."""
    length = 4 + len(payload)
    return struct.pack("=HH", length, attr_type) + payload + b"\0" * ((4 - length % 4) % 4)


def nfq_msg(msg_type: int, queue: int, attrs: bytes, seq: int, flags: int = NLM_F_REQUEST) -> bytes:
    """An nfnetlink message: nlmsghdr + nfgenmsg(AF_UNSPEC, v0, queue) + attributes."""
    body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(queue)) + attrs
    return struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg_type, flags,
                       seq, 0) + body


def parse_packet_ids(data: bytes) -> list[int]:
    """Packet ids of every NFQNL_MSG_PACKET in a netlink datagram; raises on NLMSG_ERROR != 0."""
    ids: list[int] = []
    off = 0
    while off + 16 <= len(data):
        length, mtype, _flags, _seq, _pid = struct.unpack_from("=IHHII", data, off)
        if length < 16:
            break
        if mtype == NLMSG_ERROR:
            (err,) = struct.unpack_from("=i", data, off + 16)
            if err != 0:
                raise OSError(-err, "nfnetlink error")
        elif mtype == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
            a = off + 20
            end = off + length
            while a + 4 <= end:
                alen, atype = struct.unpack_from("=HH", data, a)
                if alen < 4:
                    break
                if atype & 0x7FFF == NFQA_PACKET_HDR:
                    ids.append(struct.unpack_from("!I", data, a + 4)[0])
                a += (alen + 3) & ~3
        off += (length + 3) & ~3
    return ids


class Delayer:
    """Binds one NFQUEUE and releases packets `delay_ns` after they were queued."""

    def __init__(self, queue: int, delay_ns: int) -> None:
        self.queue, self.delay_ns = queue, delay_ns
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
        self.sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
        self.sock.bind((0, 0))
        self.seq = 0
        self.pending: collections.deque[tuple[int, int]] = collections.deque()
        self.lateness: list[int] = []
        self.max_pending = 0

    def _config(self, attrs: bytes) -> None:
        self.seq += 1
        self.sock.send(nfq_msg(NFQNL_MSG_CONFIG, self.queue, attrs, self.seq,
                               NLM_F_REQUEST | NLM_F_ACK))
        parse_packet_ids(self.sock.recv(65536))

    def bind(self) -> None:
        self._config(nla(NFQA_CFG_CMD, struct.pack("!BBH", NFQNL_CFG_CMD_BIND, 0, 0)))
        self._config(nla(NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)))
        self._config(nla(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", 65536)))

    def unbind(self) -> None:
        self._config(nla(NFQA_CFG_CMD, struct.pack("!BBH", NFQNL_CFG_CMD_UNBIND, 0, 0)))

    def _accept_upto(self, pkt_id: int) -> None:
        self.seq += 1
        self.sock.send(nfq_msg(NFQNL_MSG_VERDICT_BATCH, self.queue,
                               nla(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, pkt_id)),
                               self.seq))

    def release_due(self, now: int) -> None:
        last = -1
        while self.pending and self.pending[0][1] <= now:
            pkt_id, due = self.pending.popleft()
            self.lateness.append(now - due)
            last = pkt_id
        if last >= 0:
            self._accept_upto(last)

    def run(self, stop: list[bool]) -> None:
        while not stop[0]:
            self.release_due(time.monotonic_ns())
            timeout = 0.1
            if self.pending:
                timeout = max(0.0, (self.pending[0][1] - time.monotonic_ns()) / 1e9)
            ready, _, _ = select.select([self.sock], [], [], timeout)  # microsecond resolution
            if ready:
                while True:
                    try:
                        data = self.sock.recv(1 << 16, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        break
                    t = time.monotonic_ns()
                    for pkt_id in parse_packet_ids(data):
                        self.pending.append((pkt_id, t + self.delay_ns))
                self.max_pending = max(self.max_pending, len(self.pending))
        # flush: accept everything still held
        if self.pending:
            self._accept_upto(self.pending[-1][0])
            self.pending.clear()

    def stats(self) -> dict[str, object]:
        lat = sorted(self.lateness)
        n = len(lat)
        pct = lambda q: lat[min(n - 1, int(q * n))] if n else -1  # noqa: E731
        return {"delay_ns": self.delay_ns, "packets": n, "max_pending": self.max_pending,
                "lateness_ns": {"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99),
                                "p999": pct(0.999), "max": lat[-1] if n else -1,
                                "mean": sum(lat) // n if n else -1}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--queue", type=int, default=0)
    ap.add_argument("--delay-ns", type=int, required=True)
    ap.add_argument("--cpu", type=int, default=-1)
    ap.add_argument("--stats", default="")
    ap.add_argument("--rt", type=int, default=10, help="SCHED_FIFO priority (0: leave as is)")
    args = ap.parse_args()
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    if args.rt > 0:
        try:  # real-time priority keeps the lateness tail short while the CPU is busy
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.rt))
        except OSError:
            pass
    stop = [False]

    def _stop(signum, frame):
        stop[0] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    gc.disable()  # a collection pause would show up as lateness
    d = Delayer(args.queue, args.delay_ns)
    d.bind()
    print("bound", flush=True)
    try:
        d.run(stop)
    finally:
        try:
            d.unbind()
        except OSError:
            pass
        if args.stats:
            with open(args.stats, "w") as f:
                json.dump(d.stats(), f)


if __name__ == "__main__":
    main()
