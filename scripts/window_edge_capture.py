"""Where a 6.18 kernel's first window ends, on the wire (root; docs/ntb-jumbo-rx.md).

Two questions the ntb experiment left open, asked of the real kernel over the veth pair of
scripts/ntb_veth_capture.py (end A -- router -- end B, every device at one MTU; below 65535
without TSO/GSO), with tcpdump on B's device:

* ``edge``: a bulk sender (A) and a receiver (B) that reads only after ``late`` seconds. How
  does A fill B's first window when the window is not a whole number of MSS -- does the last
  segment stop at the last full MSS, or is a partial one sent up to the right edge
  (tcp_mss_split_point / tcp_nagle_check [tcp_output.c, 6.18])? With and without
  TCP_NODELAY, with B as the client (A learns the window from B's scaled ACK) or as the
  server (A learns it from the SYN-ACK, which carries the initial window unscaled: a
  multiple of the MSS).
* ``nomem``: the same with ntb's receive charging at B (a 128 KiB kmalloc per frame, the tc
  program of ntb_veth_capture.py) and a locked ``SO_RCVBUF`` at B. Does the advertised right
  edge (ack + window << wscale) go backwards under tcp_shrink_window = 0 when a segment is
  dropped for memory (the ICSK_ACK_NOMEM branch of tcp_select_window)?

Usage (root; ip, tc with libbpf, llc, ethtool, tcpdump):
    flock /tmp/tcpsim-capture.lock python3 scripts/window_edge_capture.py [--json OUT]
Prints, per variant, the data segments B received before its first read and the right edges
B advertised. Every namespace is deleted on every exit path.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ntb_veth_capture import Net, build_program, network  # noqa: E402

PORT = 5031
B_IP = "10.77.2.2"
A_IP = "10.77.1.1"

# One end of the connection, run inside its namespace: argv = role (srv|cli), job
# (send|recv), late (s), nodelay (0|1), rcvbuf (0 = not set), dur (s).
END = r"""
import socket, sys, time
role, job, late, nodelay, rcvbuf, dur = sys.argv[1:7]
late, dur = float(late), float(dur)
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
if int(rcvbuf):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(rcvbuf))
if role == "srv":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("%(B)s" if job == "recv" else "%(A)s", %(P)d)); s.listen(1)
    c, _ = s.accept()
else:
    time.sleep(0.3)
    s.connect(("%(A)s" if job == "recv" else "%(B)s", %(P)d)); c = s
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(nodelay))
t0 = time.monotonic()
if job == "send":
    c.settimeout(0.05)
    buf = bytes(65536)
    while time.monotonic() - t0 < dur:
        try:
            c.send(buf)
        except (socket.timeout, BlockingIOError):
            pass
else:
    time.sleep(late)
    c.settimeout(0.05)
    while time.monotonic() - t0 < dur:
        try:
            c.recv(1 << 20)
        except socket.timeout:
            pass
print("ok")
""" % {"A": A_IP, "B": B_IP, "P": PORT}

LINE = re.compile(r"^(\d+\.\d+) IP (\S+) > (\S+): Flags \[([^\]]*)\](?:, seq (\d+)(?::(\d+))?)?"
                  r"(?:, ack (\d+))?(?:, win (\d+))?(?:, options \[([^\]]*)\])?, length (\d+)")


def parse(text: str) -> list[dict]:
    """tcpdump -n -S -tt lines as dicts: t, src, flags, seq, end, ack, win, wscale, len."""
    rows = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        ws = re.search(r"wscale (\d+)", m[9] or "")
        rows.append({"t": float(m[1]), "src": m[2].rsplit(".", 1)[0], "flags": m[4],
                     "seq": int(m[5]) if m[5] else None, "end": int(m[6]) if m[6] else None,
                     "ack": int(m[7]) if m[7] else None, "win": int(m[8]) if m[8] else None,
                     "wscale": int(ws[1]) if ws else None, "len": int(m[10])})
    return rows


def summarise(rows: list[dict], late: float) -> dict:
    """What A sent before B's first read (relative sequence numbers: 1 is A's first data
    byte) against the right edge B had advertised by then (ack + window << wscale), and
    every time B's advertised right edge went backwards."""
    syn_a = next(r for r in rows if "S" in r["flags"] and r["src"] == A_IP)
    syn_b = next(r for r in rows if "S" in r["flags"] and r["src"] == B_IP)
    isn, t0 = syn_a["seq"], syn_a["t"]
    wscale = syn_b["wscale"] or 0
    edge = 0
    mss = max((r["len"] for r in rows if r["src"] == A_IP), default=0)
    partial, retreats, last_end, timeline = [], [], 0, []
    for r in rows:
        if r["t"] - t0 >= late:
            break
        if len(timeline) < 16:
            timeline.append((round((r["t"] - t0) * 1e3, 3), "A" if r["src"] == A_IP else "B",
                             r["flags"], None if r["seq"] is None else (r["seq"] - (
                                 isn if r["src"] == A_IP else syn_b["seq"])) & 0xFFFFFFFF,
                             r["len"], None if r["ack"] is None else (r["ack"] - (
                                 isn if r["src"] == B_IP else syn_b["seq"])) & 0xFFFFFFFF,
                             r["win"]))
        if r["src"] == B_IP and r["ack"] is not None:
            ack = (r["ack"] - isn) & 0xFFFFFFFF
            new = ack + (r["win"] << (0 if "S" in r["flags"] else wscale))
            if edge and new < edge:
                retreats.append({"t_ms": round((r["t"] - t0) * 1e3, 3), "ack": ack,
                                 "win": new - ack, "edge_from": edge, "edge_to": new})
            edge = new
        elif r["src"] == A_IP and r["len"]:
            seq = (r["seq"] - isn) & 0xFFFFFFFF
            end = seq + r["len"]
            last_end = max(last_end, end)
            if r["len"] < mss:
                partial.append({"t_ms": round((r["t"] - t0) * 1e3, 3), "seq": seq,
                                "len": r["len"], "end": end, "b_edge": edge})
    return {"wscale_b": wscale, "mss": mss, "sent_before_read": last_end - 1,
            "b_edge_at_read": edge, "partial_segments": partial[:12],
            "partial_count": len(partial), "b_edge_retreats": retreats[:6],
            "b_edge_retreat_count": len(retreats), "timeline": timeline}


def one(net: Net, mtu: int, b_role: str, nodelay: int, late: float, charge: Path | None,
        rcvbuf: int, rmem_max: int, a_sysctl: dict[str, str], dur: float = 0.8) -> dict:
    net.link(mtu)
    net.charge(charge, "B")
    for n in (net.a, net.b):
        net.ns(n, "sysctl", "-qw", f"net.ipv4.tcp_rmem=4096 131072 {rmem_max}")
        net.ns(n, "sysctl", "-qw", "net.ipv4.tcp_wmem=4096 16384 4194304")
        net.ns(n, "sysctl", "-qw", "net.ipv4.tcp_shrink_window=0")
        net.ns(n, "sysctl", "-qw", "net.ipv4.tcp_autocorking=1")
    for k, v in a_sysctl.items():
        net.ns(net.a, "sysctl", "-qw", f"{k}={v}")
    before = net.netstat(net.a)
    with tempfile.NamedTemporaryFile("w+", suffix=".txt") as out:
        dump = subprocess.Popen(["ip", "netns", "exec", net.b, "tcpdump", "-i", "vB", "-n",
                                 "-S", "-tt", "-l", "-s", "128", f"tcp port {PORT}"],
                                stdout=out, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        a_role = "cli" if b_role == "srv" else "srv"
        ends = [(net.b, b_role, "recv", rcvbuf, 0), (net.a, a_role, "send", 0, nodelay)]
        if b_role == "cli":
            ends.reverse()                      # the listener first
        procs = []
        for ns, role, job, rb, nd in ends:
            procs.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, sys.executable, "-c", END, role, job, str(late),
                 str(nd), str(rb), str(dur)], stdout=subprocess.PIPE, text=True))
            time.sleep(0.1)
        for p in procs:
            p.wait(timeout=dur + 10)
        time.sleep(0.3)
        dump.terminate()
        dump.wait()
        out.seek(0)
        rows = parse(out.read())
    after = net.netstat(net.a)
    res = summarise(rows, late)
    res["a_nstat"] = {k: after.get(k, 0) - before.get(k, 0)
                      for k in ("TCPAutoCorking", "TCPWantZeroWindowAdv", "TCPToZeroWindowAdv")}
    return res


VARIANTS = {
    # name: (mtu, B's role, A's TCP_NODELAY, B's late first read, charging, B's SO_RCVBUF,
    #        tcp_rmem[2] at both ends[, A's other sysctls])
    "edge 1500, B client": (1500, "cli", 0, 0.3, False, 0, 6291456),
    "edge 1500, B client, nodelay": (1500, "cli", 1, 0.3, False, 0, 6291456),
    "edge 1500, B server": (1500, "srv", 0, 0.3, False, 0, 6291456),
    "edge 65535, B client": (65535, "cli", 0, 0.3, False, 0, 6291456),
    "edge 65535, B client, nodelay": (65535, "cli", 1, 0.3, False, 0, 6291456),
    "edge 11500, B client (the experiment's roles)": (11500, "cli", 0, 0.3, False, 0, 6291456),
    "edge 11500, B server (the kernel runs' roles)": (11500, "srv", 0, 0.3, False, 0, 6291456),
    "nomem 11500, ntb charging, SO_RCVBUF 64K at B, B client": (11500, "cli", 0, 0.3, True, 65536, 6291456),
    "nomem 11500, ntb charging, SO_RCVBUF 64K at B, B server": (11500, "srv", 0, 0.3, True, 65536, 6291456),
    # the ntb experiment's first window (ntb_veth_capture.py's tcp_rmem: window scale 10)
    "first window 11500, ntb charging, B client": (11500, "cli", 0, 0.3, True, 0, 33554432),
    "first window 11500, ntb charging, B server": (11500, "srv", 0, 0.3, True, 0, 33554432),
    "first window 11500, ntb charging, B client, no autocorking":
        (11500, "cli", 0, 0.3, True, 0, 33554432, {"net.ipv4.tcp_autocorking": "0"}),
    "first window 11500, ntb charging, B client, nodelay":
        (11500, "cli", 1, 0.3, True, 0, 33554432),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--only", action="append", choices=sorted(VARIANTS), default=None)
    args = ap.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print("uptime:", uptime)
    results = {"uptime": uptime, "kernel": subprocess.run(["uname", "-r"], capture_output=True,
                                                          text=True).stdout.strip()}
    with tempfile.TemporaryDirectory() as tmp, network() as net:
        obj = build_program(0, Path(tmp))
        for name in args.only or list(VARIANTS):
            mtu, b_role, nodelay, late, charge, rcvbuf, rmem_max, *a_sysctl = VARIANTS[name]
            res = one(net, mtu, b_role, nodelay, late, obj if charge else None, rcvbuf,
                      rmem_max, a_sysctl[0] if a_sysctl else {})
            results[name] = res
            print(f"== {name}")
            print(json.dumps(res))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
