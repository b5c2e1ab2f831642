"""Push the real kernel's TCP pool into pressure and record what it does (root only).

    flock /work/wt/kernel.lock python3 scripts/host_memory_capture.py \
        [--tcp-mem "200 400 600"] [--pcpu-rsv N] [--conns 40] [--seconds 4] [--write 1448]
        [--out X.json]

In a network namespace of its own (so the counters are the experiment's alone), N loopback
connections whose receivers never read are written to in `--write`-byte chunks for
`--seconds`, while /proc/net/sockstat (`TCP: inuse .. mem N`, the host's
tcp_memory_allocated in pages) and the namespace's TcpExt counters are sampled every 100 ms.
`net.ipv4.tcp_mem` (and net.core.mem_pcpu_rsv, when --pcpu-rsv is given) is global, not per
namespace: the script saves it, changes it only for the run, and restores it on every way out (normal end, exception, SIGINT/SIGTERM). Wrap it in
`flock /work/wt/kernel.lock` so no other experiment measures the kernel meanwhile.

Prints (and writes to --out) one JSON document: the settings, the samples, and a summary
-- pressure entries, TCPRcvQDrop, PruneCalled, peak sockstat mem, the pressure onset time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TCP_MEM = Path("/proc/sys/net/ipv4/tcp_mem")
PCPU_RSV = Path("/proc/sys/net/core/mem_pcpu_rsv")
NETNS = "tcpsim-hostmem"
COUNTERS = ("TCPMemoryPressures", "TCPMemoryPressuresChrono", "TCPRcvQDrop", "PruneCalled",
            "RcvPruned", "TCPOFODrop", "TCPRcvCollapsed", "TCPAbortOnMemory",
            "TCPWantZeroWindowAdv", "TCPToZeroWindowAdv")


def sockstat() -> dict[str, int]:
    """The TCP line of /proc/net/sockstat: inuse, orphan, tw, alloc, mem (pages)."""
    for line in Path("/proc/net/sockstat").read_text().splitlines():
        if line.startswith("TCP:"):
            f = line.split()[1:]
            return {f[i]: int(f[i + 1]) for i in range(0, len(f) - 1, 2)}
    return {}


def tcpext() -> dict[str, int]:
    """The TcpExt counters of /proc/net/netstat (this namespace's)."""
    lines = Path("/proc/net/netstat").read_text().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return dict(zip(names.split()[1:], map(int, values.split()[1:])))
    return {}


def inner(conns: int, seconds: float, write: int) -> dict[str, Any]:
    """The experiment, run inside the namespace: returns samples and the counters' deltas."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    before = sockstat().get("mem", 0)            # the host's other TCP memory
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(conns)
    port = srv.getsockname()[1]
    clients, accepted = [], []
    for _ in range(conns):
        c = socket.create_connection(("127.0.0.1", port))
        c.setblocking(False)
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        clients.append(c)
        accepted.append(srv.accept()[0])          # kept open, never read
    base = tcpext()
    chunk = b"x" * write
    samples: list[dict[str, Any]] = []
    t0 = time.monotonic()
    next_sample = t0
    written = [0] * conns
    while True:
        now = time.monotonic()
        if now >= next_sample:
            ext = tcpext()
            samples.append({"t": round(now - t0, 3), **sockstat(),
                            **{k: ext.get(k, 0) - base.get(k, 0) for k in COUNTERS}})
            next_sample += 0.1
        if now - t0 >= seconds:
            break
        for i, c in enumerate(clients):
            try:
                written[i] += c.send(chunk)
            except BlockingIOError:
                pass
        time.sleep(0.0005)
    ext = tcpext()
    final = {k: ext.get(k, 0) - base.get(k, 0) for k in COUNTERS}
    peak = max(s.get("mem", 0) for s in samples)
    onset = next((s["t"] for s in samples if s["TCPMemoryPressures"] > 0), None)
    for s in clients + accepted + [srv]:
        s.close()
    return {"samples": samples, "counters": final, "written": written,
            "summary": {"pressures": final["TCPMemoryPressures"],
                        "rcvq_drops": final["TCPRcvQDrop"],
                        "prune_called": final["PruneCalled"],
                        "peak_sockstat_mem": peak, "pressure_onset_s": onset,
                        "sockstat_mem_before": before,
                        "bytes_written": sum(written)}}


def outer(a: argparse.Namespace) -> int:
    """Save tcp_mem, make the namespace, run the inner experiment in it, restore all."""
    saved = TCP_MEM.read_text().strip()
    saved_rsv = PCPU_RSV.read_text().strip() if PCPU_RSV.exists() else None

    def restore(*_: Any) -> None:
        TCP_MEM.write_text(saved)
        if saved_rsv is not None:
            PCPU_RSV.write_text(saved_rsv)
        subprocess.run(["ip", "netns", "del", NETNS], stderr=subprocess.DEVNULL)

    def on_signal(signum: int, _frame: Any) -> None:
        restore()
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    subprocess.run(["ip", "netns", "del", NETNS], stderr=subprocess.DEVNULL)
    subprocess.run(["ip", "netns", "add", NETNS], check=True)
    try:
        TCP_MEM.write_text(a.tcp_mem)
        if a.pcpu_rsv is not None:
            PCPU_RSV.write_text(str(a.pcpu_rsv))
        proc = subprocess.run(["ip", "netns", "exec", NETNS, sys.executable, __file__,
                               "--inner", "--conns", str(a.conns), "--seconds", str(a.seconds),
                               "--write", str(a.write)],
                              capture_output=True, text=True, timeout=a.seconds + 60)
    finally:
        restore()
    if proc.returncode != 0:
        print(f"host_memory_capture: error: the experiment failed: {proc.stderr.strip()}",
              file=sys.stderr)
        return 1
    doc = json.loads(proc.stdout)
    doc["settings"] = {"tcp_mem": a.tcp_mem, "conns": a.conns, "seconds": a.seconds,
                       "write": a.write, "ncpus": os.cpu_count(), "kernel": os.uname().release,
                       "mem_pcpu_rsv": a.pcpu_rsv if a.pcpu_rsv is not None else saved_rsv}
    text = json.dumps(doc, indent=1)
    if a.out:
        Path(a.out).write_text(text)
    print(json.dumps({"settings": doc["settings"], "summary": doc["summary"]}, indent=1))
    return 0


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tcp-mem", default="200 400 600", help="net.ipv4.tcp_mem for the run (pages)")
    ap.add_argument("--conns", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--write", type=int, default=1448, help="bytes per send()")
    ap.add_argument("--pcpu-rsv", type=int,
                    help="net.core.mem_pcpu_rsv for the run (pages, >= 256; restored after)")
    ap.add_argument("--out", help="write the whole record (samples included) here")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.inner:
        print(json.dumps(inner(a.conns, a.seconds, a.write)))
        return 0
    if os.geteuid() != 0:
        print("host_memory_capture: error: needs root (it sets net.ipv4.tcp_mem and makes "
              "a network namespace); run it as root under flock /work/wt/kernel.lock",
              file=sys.stderr)
        return 1
    return outer(a)


if __name__ == "__main__":
    sys.exit(main())
