"""One end of an scp-over-ssh-like TCP connection: a single-threaded poll loop shaped like
OpenSSH's, for scripts/ntb_veth_capture.py (runs inside a network namespace, root only).

What it keeps of OpenSSH (SSH-2):
* one thread, one poll() over the connection; the socket is non-blocking;
* the connection is polled for input on every pass (OpenSSH's server and client loops ask
  for POLLIN on the connection unconditionally) -- or, with ``read=relay``, not while the
  end's own output is stuck (the stronger coupling the model's ``relay`` reader has);
* the channel is packed into CHANNEL_DATA packets of at most ``pkt`` bytes (32 KiB) while
  the peer's channel window allows and while little is queued for the socket (OpenSSH's
  "not very much data to write": 128 KiB);
* the receiving end of the channel sends a WINDOW_ADJUST for what it consumed once its
  window is half used (``chanwin``, OpenSSH's session window: 2 MiB; 0 = no channel window);
* each message is framed like an SSH-2 packet: length, type, payload, padding to 16 bytes
  and a 16-byte MAC -- a WINDOW_ADJUST or a 20-byte message is a 48-byte packet;
* ``hello=N``: both ends first exchange one N-byte message and wait for the peer's, like
  the key exchange that starts every ssh connection (KEXINIT and the DH messages are
  several hundred bytes to a few KiB).
* ``delay=MS``: the end starts its loop MS milliseconds after the connection is set up
  (scp's copy begins after ssh's own set-up; at least one millisecond lets the peer take a
  receiver-RTT sample from the first data's echoed timestamp, tcp_rcv_rtt_measure_ts()).

Arguments are key=value: role=srv|cli host port dur bulk=0|1 small_ms small_len chanwin pkt
read=always|relay hello delay rcvbuf sndbuf (rcvbuf/sndbuf: setsockopt before connect/listen, which
locks the buffer and shrinks the window scale). Prints one JSON line of counters at the end.
"""

import json
import os
import select
import socket
import struct
import sys
import time

MSG_DATA, MSG_ADJUST, MSG_IGNORE = 94, 93, 2


def frame(kind: int, payload_len: int, val: int | None = None) -> bytearray:
    """An SSH-2-shaped packet of ``payload_len`` payload bytes; ``val`` (or the payload
    length) is carried in its first four payload bytes."""
    body = 1 + payload_len
    pad = 16 - (4 + body) % 16
    if pad < 4:
        pad += 16
    total = 4 + body + pad + 16
    b = bytearray(struct.pack("!IB", total - 4, kind) + bytes(total - 5))
    struct.pack_into("!I", b, 5, payload_len if val is None else val)
    return b


def _socket(a: dict[str, str]) -> socket.socket:
    s = socket.socket()
    if "rcvbuf" in a:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(a["rcvbuf"]))
    if "sndbuf" in a:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(a["sndbuf"]))
    return s


def _connect(a: dict[str, str]) -> socket.socket:
    if a["role"] == "srv":
        ls = _socket(a)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((a["host"], int(a["port"])))
        ls.listen(1)
        s, _ = ls.accept()
    else:
        s = _socket(a)
        s.connect((a["host"], int(a["port"])))
    s.setblocking(False)
    return s


def _hello(s: socket.socket, size: int) -> None:
    """Send one ``size``-byte message and wait for the peer's (the key exchange)."""
    out = frame(MSG_IGNORE, size)
    want, got = len(out), bytearray()
    while len(got) < want or out:
        if out:
            try:
                del out[:s.send(out)]
            except BlockingIOError:
                pass
        try:
            got += s.recv(65536)
        except BlockingIOError:
            time.sleep(0.001)


class End:
    """The state of one end: its queued output, its parse buffer, both channel windows."""

    def __init__(self, a: dict[str, str]) -> None:
        self.chanwin = int(a.get("chanwin", 2 << 20))
        self.pkt = int(a.get("pkt", 32768))
        self.bulk = a.get("bulk", "0") == "1"
        self.small_len = int(a.get("small_len", 20))
        self.relay = a.get("read", "always") == "relay"
        self.outmax = int(a.get("outmax", 128 << 10))
        self.out, self.inb = bytearray(), bytearray()
        self.rwin = self.chanwin or 1 << 62      # the peer's window for our channel data
        self.lwin, self.consumed = self.chanwin, 0
        self.blocked = False                     # our last send() left output queued
        self.st = dict(role=a["role"], sent_data=0, recv_data=0, recv_small=0, sent_small=0,
                       adjusts=0, timeline=[])

    def pack(self) -> None:
        """Channel -> packets while the peer's window allows and little is queued."""
        while self.bulk and self.rwin > 0 and len(self.out) < self.outmax:
            n = min(self.pkt, self.rwin)
            self.out += frame(MSG_DATA, n)
            self.rwin -= n if self.chanwin else 0
            self.st["sent_data"] += n

    def small(self) -> None:
        self.out += frame(MSG_IGNORE, self.small_len)
        self.st["sent_small"] += 1

    def send(self, s: socket.socket) -> bool:
        """One non-blocking send; False when the peer has gone."""
        try:
            del self.out[:s.send(self.out[:1 << 18])]
        except BlockingIOError:
            pass
        except ConnectionError:
            return False
        self.blocked = bool(self.out)
        return True

    def parse(self) -> None:
        while len(self.inb) >= 9:
            ln, kind = struct.unpack_from("!IB", self.inb)
            if len(self.inb) < ln + 4:
                return
            val = struct.unpack_from("!I", self.inb, 5)[0]
            del self.inb[:ln + 4]
            if kind == MSG_DATA:
                self.st["recv_data"] += val
                self._consumed(val)
            else:
                self.rwin += val if kind == MSG_ADJUST and self.chanwin else 0
                self.st["recv_small"] += 1

    def _consumed(self, n: int) -> None:
        if not self.chanwin:
            return
        self.consumed += n
        self.lwin -= n
        if self.lwin < self.chanwin // 2:
            self.out += frame(MSG_ADJUST, 8, self.consumed)
            self.st["adjusts"] += 1
            self.lwin += self.consumed
            self.consumed = 0


def main() -> None:
    a = dict(x.split("=", 1) for x in sys.argv[1:])
    dur = float(a.get("dur", 10))
    small_iv = float(a.get("small_ms", 0)) / 1000.0
    s = _connect(a)
    if int(a.get("hello", 0)):
        _hello(s, int(a["hello"]))
    if float(a.get("delay", 0)):
        time.sleep(float(a["delay"]) / 1000.0)
    end = End(a)
    t0 = time.monotonic()
    next_small = t0 + small_iv if small_iv else None
    mark = (t0, 0, 0)
    while (now := time.monotonic()) - t0 < dur:
        if now - mark[0] >= 0.5:
            st = end.st
            st["timeline"].append([round(now - t0, 2), st["sent_data"] - mark[1],
                                   st["recv_data"] - mark[2]])
            mark = (now, st["sent_data"], st["recv_data"])
        end.pack()
        if next_small is not None and now >= next_small:
            end.small()
            next_small += small_iv
        ev = (0 if end.relay and end.blocked else select.POLLIN) | (select.POLLOUT if end.out else 0)
        p = select.poll()
        p.register(s, ev)
        timeout = 50 if next_small is None else max(0, min(50, int((next_small - now) * 1000)))
        for _, e in p.poll(timeout):
            if e & select.POLLOUT and not end.send(s):
                dur = 0
            if e & (select.POLLIN | select.POLLHUP | select.POLLERR):
                try:
                    d = s.recv(1 << 18)
                except BlockingIOError:
                    continue
                except ConnectionError:
                    d = b""
                if not d:
                    dur = 0
                end.inb += d
        if end.out and not end.send(s):
            break
        end.parse()
    end.st["elapsed"] = round(time.monotonic() - t0, 2)
    print(json.dumps(end.st), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
