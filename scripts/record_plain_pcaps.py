"""Record small real captures with plain tcpdump and plain socket programs (not tcpsim's
capture tool), each with the settings that made it in a JSON file beside it.

    sudo flock /work/wt/kernel.lock python3 scripts/record_plain_pcaps.py OUTDIR [NAME ...]

Each capture runs in namespaces this script creates and deletes: either one namespace whose
loopback carries the connection (MTU 1500), or two namespaces joined by a veth pair (an
optional tbf qdisc on the sender's end). A server program reads with the named pattern, a
client writes as fast as it can (or periodically); tcpdump runs in the receiver's namespace
on the receiver's interface, `-s 96` (the headers with every option; the payload is not
needed and would make the files large) and the file is gzipped.

The JSON beside each capture (`NAME.truth.json`) holds the truth a replay must not be given:
reader, writer, the receiver namespace's sysctls, offloads, qdisc, kernel release and HZ.
Tests read it only to check what the fit found (tests/pcap/test_real_captures.py).

The root namespace's global `net.ipv4.tcp_mem` is checked against its default before each
capture (another experiment may lower it briefly); nothing global is changed.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

TCP_MEM_DEFAULT = "287901\t383868\t575802"
PORT = 5001
SNAPLEN = 96


@dataclass
class Spec:
    """One capture: the path, the applications and the receiver's settings."""

    name: str
    path: str                       # "lo" | "veth"
    reader: str                     # periodic:BYTES/MS | never | fast | oscillating:B/MS1/MS2/HALF_MS
    writer: str = "bulk"            # bulk | periodic:BYTES/MS
    seconds: float = 2.0
    limit_bytes: int = 0            # the writer stops after this many bytes (0: no limit)
    offloads: bool = False          # TSO/GSO/GRO left on (True) or turned off
    shrink: int = 0
    tbf_kbit: int = 0               # tbf rate on the sender's egress (veth only)
    rcvbuf: int = 0                 # the server's SO_RCVBUF (0: autotuned)
    sysctl: dict[str, str] = field(default_factory=dict)


SPECS = [
    Spec("lo-periodic-4096-10ms", "lo", "periodic:4096/10"),
    Spec("lo-periodic-4096-10ms-shrink1", "lo", "periodic:4096/10", shrink=1),
    Spec("lo-tso-periodic-4096-10ms", "lo", "periodic:4096/10", offloads=True, seconds=1.0),
    Spec("veth-periodic-1448-1ms", "veth", "periodic:1448/1", seconds=1.5),
    Spec("veth-never", "veth", "never", seconds=1.0),
    Spec("veth-fast", "veth", "fast", seconds=1.0, limit_bytes=1_500_000,
         writer="periodic:14480/1"),
    Spec("veth-oscillating", "veth", "oscillating:4096/2/20/250", seconds=2.0),
    Spec("veth-tbf-periodic", "veth", "periodic:8192/2", tbf_kbit=40_000, seconds=1.5),
    Spec("veth-periodic-small-writes-shrink1", "veth", "periodic:1000/1",
         writer="periodic:1448/1", shrink=1, seconds=2.0),
    Spec("veth-gso-fast", "veth", "fast", offloads=True, seconds=1.0, limit_bytes=1_000_000),
]

RCV_SYSCTLS = {"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_adv_win_scale": "1",
               "net.ipv4.tcp_moderate_rcvbuf": "1"}


def sh(*argv: str, check: bool = True) -> str:
    return subprocess.run(argv, check=check, capture_output=True, text=True).stdout


def nsx(ns: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv]


def check_tcp_mem() -> None:
    now = Path("/proc/sys/net/ipv4/tcp_mem").read_text().strip()
    if now.split() != TCP_MEM_DEFAULT.split():
        raise SystemExit(f"net.ipv4.tcp_mem is {now!r}, not its default {TCP_MEM_DEFAULT!r}: "
                         "another experiment holds it; run inside flock /work/wt/kernel.lock")


def offloads(ns: str, dev: str, on: bool) -> None:
    state = "on" if on else "off"
    subprocess.run(nsx(ns, "ethtool", "-K", dev, "tso", state, "gso", state, "gro", state),
                   capture_output=True)


def setup(spec: Spec, tag: str) -> tuple[str, str, str, str]:
    """Namespaces and interfaces: (receiver ns, sender ns, receiver address, capture iface)."""
    rcv = f"fitr{tag}"
    if spec.path == "lo":
        sh("ip", "netns", "add", rcv)
        sh(*nsx(rcv, "ip", "link", "set", "lo", "mtu", "1500", "up"))
        offloads(rcv, "lo", spec.offloads)
        return rcv, rcv, "127.0.0.1", "lo"
    snd = f"fits{tag}"
    sh("ip", "netns", "add", rcv)
    sh("ip", "netns", "add", snd)
    sh("ip", "link", "add", f"fr{tag}", "netns", rcv, "type", "veth", "peer", "name", f"fs{tag}",
       "netns", snd)
    for ns, dev, addr in ((rcv, f"fr{tag}", "10.99.0.2/24"), (snd, f"fs{tag}", "10.99.0.1/24")):
        sh(*nsx(ns, "ip", "addr", "add", addr, "dev", dev))
        sh(*nsx(ns, "ip", "link", "set", dev, "mtu", "1500", "up"))
        sh(*nsx(ns, "ip", "link", "set", "lo", "up"))
        offloads(ns, dev, spec.offloads)
    if spec.tbf_kbit:
        sh(*nsx(snd, "tc", "qdisc", "add", "dev", f"fs{tag}", "root", "tbf", "rate",
                f"{spec.tbf_kbit}kbit", "burst", "16kb", "latency", "20ms"))
    return rcv, snd, "10.99.0.2", f"fr{tag}"


def teardown(tag: str) -> None:
    for ns in (f"fitr{tag}", f"fits{tag}"):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def record(spec: Spec, out: Path) -> None:
    check_tcp_mem()
    tag = str(os.getpid() % 10000)
    teardown(tag)
    try:
        rcv, snd, addr, iface = setup(spec, tag)
        sysctls = dict(RCV_SYSCTLS, **{"net.ipv4.tcp_shrink_window": str(spec.shrink)},
                       **spec.sysctl)
        for k, v in sysctls.items():
            sh(*nsx(rcv, "sysctl", "-q", "-w", f"{k}={v}"))
        raw = out / f"{spec.name}.pcap"
        dump = subprocess.Popen(nsx(rcv, "tcpdump", "-i", iface, "-s", str(SNAPLEN), "-w",
                                    str(raw), "-U", f"tcp port {PORT}"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)
        me = [sys.executable, str(Path(__file__).resolve())]
        server = subprocess.Popen(nsx(rcv, *me, "--server", spec.reader, str(spec.seconds),
                                      str(spec.rcvbuf)))
        time.sleep(0.3)
        client = subprocess.Popen(nsx(snd, *me, "--client", addr, spec.writer,
                                      str(spec.seconds), str(spec.limit_bytes)))
        client.wait(timeout=spec.seconds + 30)
        server.wait(timeout=spec.seconds + 30)
        time.sleep(0.3)
        dump.send_signal(signal.SIGINT)
        dump.wait(timeout=10)
        with raw.open("rb") as f, gzip.open(str(raw) + ".gz", "wb", compresslevel=9) as g:
            shutil.copyfileobj(f, g)
        raw.unlink()
        truth = {"name": spec.name, "kernel": platform.release(), "hz": kernel_hz(),
                 "path": spec.path, "device": "loopback" if spec.path == "lo" else "veth",
                 "offloads": "on" if spec.offloads else "tso/gso/gro off", "mtu": 1500,
                 "reader": spec.reader, "writer": spec.writer, "seconds": spec.seconds,
                 "limit_bytes": spec.limit_bytes, "tbf_kbit": spec.tbf_kbit,
                 "so_rcvbuf": spec.rcvbuf or None, "receiver_role": "server",
                 "capture_at": "receiver", "snaplen": SNAPLEN, "sysctl": sysctls,
                 "tcpdump": dump.stderr.read().decode().strip().splitlines()[-3:] if dump.stderr else []}
        (out / f"{spec.name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(f"{spec.name}: {os.path.getsize(str(raw) + '.gz')} bytes", flush=True)
    finally:
        teardown(tag)


def kernel_hz() -> int | None:
    cfg = Path(f"/boot/config-{platform.release()}")
    if cfg.is_file():
        for line in cfg.read_text().splitlines():
            if line.startswith("CONFIG_HZ="):
                return int(line.split("=")[1])
    return None


# -- the two socket programs -------------------------------------------------------------------

def server(reader: str, seconds: float, rcvbuf: int) -> None:
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if rcvbuf:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    ls.bind(("0.0.0.0", PORT))
    ls.listen(1)
    c, _ = ls.accept()
    start = time.monotonic()
    end = start + seconds
    kind, _, args = reader.partition(":")
    if kind == "never":
        time.sleep(max(0.0, end - time.monotonic()))
    elif kind == "fast":
        c.settimeout(max(0.1, end - time.monotonic()))
        try:
            while time.monotonic() < end and c.recv(1 << 20):
                pass
        except (socket.timeout, OSError):
            pass
    else:
        parts = [int(x) for x in args.split("/")]
        nbytes, periods = parts[0], parts[1:]
        half = periods[2] / 1000 if kind == "oscillating" else 0.0
        tick = start
        while True:
            period = periods[0]
            if kind == "oscillating" and int((tick - start) / half) % 2:
                period = periods[1]
            tick += period / 1000
            if tick >= end:
                break
            time.sleep(max(0.0, tick - time.monotonic()))
            try:
                c.recv(nbytes, socket.MSG_DONTWAIT)
            except BlockingIOError:
                pass
    c.close()
    ls.close()


def client(addr: str, writer: str, seconds: float, limit: int) -> None:
    s = socket.create_connection((addr, PORT))
    s.settimeout(0.05)
    end = time.monotonic() + seconds
    sent = 0
    kind, _, args = writer.partition(":")
    if kind == "periodic":
        nbytes, ms = (int(x) for x in args.split("/"))
        buf, tick, pending = b"x" * nbytes, time.monotonic(), 0
        while time.monotonic() < end and (not limit or sent < limit):
            tick += ms / 1000
            time.sleep(max(0.0, tick - time.monotonic()))
            pending += nbytes
            try:
                n = s.send(buf[:min(pending, nbytes)], socket.MSG_DONTWAIT)
                pending -= n
                sent += n
            except (BlockingIOError, socket.timeout):
                pass
            except OSError:
                break
    else:
        chunk = b"x" * 65536
        while time.monotonic() < end and (not limit or sent < limit):
            try:
                sent += s.send(chunk)
            except socket.timeout:
                pass
            except OSError:          # the server closed with data unread: a reset
                break
    time.sleep(max(0.0, end - time.monotonic()))
    s.close()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--server":
        server(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        client(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
        return
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    want = set(sys.argv[2:])
    for spec in SPECS:
        if not want or spec.name in want:
            record(spec, out)


if __name__ == "__main__":
    main()
