"""One endpoint of a capture as a real process in its namespace: socket, app loop, sampler.

    python -m tcpsim.capture.endpoint {sender|receiver} --config JSON

The config (JSON) holds: role ("listen" | "connect"), addr, port, peer_addr, peer_port,
so_rcvbuf, nodelay, cc, cpu, rt (SCHED_FIFO priority, 0 = leave as is), app (the normalised
[writer] or [reader] table), sample_ns and out (a directory). The process prints "listening" (listen role) and "connected" on stdout,
runs the app loop until SIGTERM, then writes `<side>_events.csv` (t_ns,kind,n) and
`<side>_samples.csv` (SO_MEMINFO + TCP_INFO + window_clamp + FIONREAD every sample_ns).
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

from tcpsim.capture import apps
from tcpsim.capture.sockinfo import sample
from tcpsim.workload import App

SAMPLE_KEYS = ("sk_rmem_alloc", "sk_rcvbuf", "sk_drops", "sk_backlog", "tcpi_rcv_ssthresh",
               "window_clamp", "tcpi_rcv_wnd", "tcpi_rcv_space", "tcpi_rcv_mss", "tcpi_rcv_rtt",
               "tcpi_bytes_received", "tcpi_bytes_acked", "tcpi_snd_cwnd", "tcpi_snd_wnd",
               "tcpi_unacked", "tcpi_rcv_wscale", "tcpi_snd_wscale", "tcpi_advmss", "inq")


def inq(sock: socket.socket) -> int:
    """Bytes queued and not yet read (FIONREAD = rcv_nxt - copied_seq)."""
    buf = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return struct.unpack("i", buf)[0]


def open_socket(cfg: dict[str, Any]) -> socket.socket:
    """Listen-and-accept or connect, per cfg; options that must precede the handshake first."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if cfg.get("so_rcvbuf"):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(cfg["so_rcvbuf"]))
    if cfg.get("cc"):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cfg["cc"].encode())
    s.bind((cfg["addr"], int(cfg["port"])))
    if cfg["role"] == "listen":
        s.listen(1)
        print("listening", flush=True)
        conn, _ = s.accept()
        s.close()
    else:
        deadline = time.monotonic() + 10
        while True:
            try:
                s.connect((cfg["peer_addr"], int(cfg["peer_port"])))
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        conn = s
    if cfg.get("nodelay", True):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    print("connected", flush=True)
    return conn


def sampler(sock: socket.socket, every_ns: int, stop: threading.Event,
            rows: list[list[int]]) -> None:
    """Append one sample row every ``every_ns`` until stopped."""
    t = time.monotonic_ns()
    while not stop.is_set():
        try:
            d = sample(sock)
            d["inq"] = inq(sock)
        except OSError:
            return
        rows.append([time.monotonic_ns()] + [int(d.get(k, -1)) for k in SAMPLE_KEYS])
        t += every_ns
        stop.wait(max(0.0, (t - time.monotonic_ns()) / 1e9))


def app_loop(side: str, app: dict[str, Any]):
    """The writer (sender side) or reader (receiver side) loop for an App record (App.as_dict())."""
    make = apps.make_writer if side == "sender" else apps.make_reader
    return make(App(**app))


def write_outputs(out: Path, side: str, log: apps.Log, samples: list[list[int]]) -> None:
    with open(out / f"{side}_events.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_ns", "kind", "n"])
        w.writerows(log)
    with open(out / f"{side}_samples.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_ns", *SAMPLE_KEYS])
        w.writerows(samples)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("side", choices=("sender", "receiver"))
    ap.add_argument("--config", required=True, help="JSON text")
    args = ap.parse_args(argv)
    cfg = json.loads(args.config)
    if cfg.get("cpu", -1) >= 0:
        os.sched_setaffinity(0, {int(cfg["cpu"])})
    if cfg.get("rt", 0) > 0:   # before the threads start: they inherit the policy
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(cfg["rt"])))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    sock = open_socket(cfg)
    log: apps.Log = [(time.monotonic_ns(), "connected", 0)]
    samples: list[list[int]] = []
    th = threading.Thread(target=sampler, args=(sock, int(cfg.get("sample_ns", 10**7)), stop, samples),
                          daemon=True)
    th.start()
    loop = app_loop(args.side, cfg["app"])
    worker = threading.Thread(target=loop, args=(sock, stop, log), daemon=True)
    worker.start()
    while not stop.is_set():
        stop.wait(0.2)
    worker.join(2)
    th.join(2)
    try:  # one last sample, after the app stopped
        d = sample(sock)
        d["inq"] = inq(sock)
        samples.append([time.monotonic_ns()] + [int(d.get(k, -1)) for k in SAMPLE_KEYS])
    except OSError:
        pass
    write_outputs(Path(cfg["out"]), args.side, log, samples)
    sock.close()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
