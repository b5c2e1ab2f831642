"""ntb_netdev's receive charging on the real kernel, over veth (root; docs/ntb-jumbo-rx.md).

ntb_netdev (before its rx_copybreak fix) received every frame into a linear
``netdev_alloc_skb(mtu + ETH_HLEN)`` -- a 128 KiB kmalloc at its 64 KiB MTU -- so a 48-byte
message was charged a truesize of about 131 KB. This script gives veth the same charging and
runs scp-over-ssh-like ends over it (scripts/ntb_sshlike.py), to see whether the real kernel
deadlocks the way the incident report says.

How the charging is made
------------------------
A tc ingress program (direct-action, written here in LLVM IR and built with ``llc``; no
clang needed) grows each skb's head to a 128 KiB kmalloc object: ``bpf_skb_change_tail`` up
and back (the head becomes a 16 KiB object: linearised, with tailroom), then
``bpf_skb_change_head`` three times (2048, 64, 64 bytes; each forces ``pskb_expand_head``,
and each reallocation fills the next kmalloc size class, so 16K -> 32K -> 64K -> 128K). The
bytes pushed in front of the Ethernet header are dropped again when cls_bpf pulls
``skb->mac_len`` after the program. The BPF helpers refuse to make a non-GSO skb longer than
``SKB_MAX_ALLOC`` (about 16 KiB) [net/core/filter.c, 6.18], which is why the head is grown in
steps; a GSO skb is grown in one ``bpf_skb_change_head(65000)``; a non-GSO frame longer than
12000 bytes is only linearised (``bpf_skb_pull_data``: a 64 KiB head for a 32 KiB frame).
Frames shorter than the copybreak are left alone (the fixed driver's right-sized copy).

``pskb_expand_head()`` [net/core/skbuff.c, 6.18] adds the growth to ``skb->truesize`` only
for an skb without a socket, and veth keeps the sending socket on the skb it forwards. So the
two ends talk through a router namespace: IP forwarding orphans the skb (``ip_rcv_core``),
and the programs sit on the ingress of the two end hosts' devices (both hosts had ntb).

    A (10.77.1.1) vA --- rA  R  rB --- vB (10.77.2.2) B        MTU 65535 (veth's maximum)

Usage (root; needs ip, tc with libbpf, llc):
    python3 scripts/ntb_veth_capture.py check             # one 48-byte message: skmem r
    python3 scripts/ntb_veth_capture.py matrix --runs 4   # the variants of the doc's table
Every namespace is deleted on every exit path (also on SIGTERM/SIGINT).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
ENDPOINT = HERE / "ntb_sshlike.py"
PORT = 5022
TOOLS = ("ip", "tc", "llc", "ss", "ethtool")

# bpf_skb_change_tail = 38, bpf_skb_pull_data = 39, bpf_skb_change_head = 43 (uapi bpf.h);
# __sk_buff: len at 0, gso_segs at 164.
PROGRAM_IR = """
target datalayout = "e-m:e-p:64:64-i64:64-i128:128-n32:64-S128"
target triple = "bpfel"

@_license = global [4 x i8] c"GPL\\00", section "license", align 1
@llvm.used = appending global [2 x i8*] [i8* getelementptr inbounds ([4 x i8], [4 x i8]* @_license, i32 0, i32 0), i8* bitcast (i32 (i8*)* @ntb_rx to i8*)], section "llvm.metadata"

define i32 @ntb_rx(i8* %ctx) section "classifier" {
entry:
  %lenp = bitcast i8* %ctx to i32*
  %len = load i32, i32* %lenp, align 4
  %gsop8 = getelementptr i8, i8* %ctx, i64 164
  %gsop = bitcast i8* %gsop8 to i32*
  %gso = load i32, i32* %gsop, align 4
  %small = icmp ult i32 %len, COPYBREAK
  br i1 %small, label %out, label %charge
charge:
  %isgso = icmp ugt i32 %gso, 1
  br i1 %isgso, label %gsopath, label %lin
gsopath:
  %ch = inttoptr i64 43 to i64 (i8*, i32, i64)*
  %r0 = call i64 %ch(i8* %ctx, i32 GSOHEAD, i64 0)
  br label %out
lin:
  %fits = icmp ule i32 %len, 12000
  br i1 %fits, label %steps, label %big
steps:
  %ct = inttoptr i64 38 to i64 (i8*, i32, i64)*
  %r1 = call i64 %ct(i8* %ctx, i32 15000, i64 0)
  %r2 = call i64 %ct(i8* %ctx, i32 %len, i64 0)
  %ch2 = inttoptr i64 43 to i64 (i8*, i32, i64)*
  %r3 = call i64 %ch2(i8* %ctx, i32 2048, i64 0)
  %r4 = call i64 %ch2(i8* %ctx, i32 64, i64 0)
  %r6 = call i64 %ch2(i8* %ctx, i32 64, i64 0)
  br label %out
big:
  %pd = inttoptr i64 39 to i64 (i8*, i32)*
  %r5 = call i64 %pd(i8* %ctx, i32 %len)
  br label %out
out:
  ret i32 0
}
"""

# A GSO skb of two 32 KiB segments was two frames, 2 x 131328, on ntb: a 256 KiB head on top
# of its page fragments (len/truesize 65496/~327000) brackets that from below, a 128 KiB
# head (65496/~197000) from above; ntb's own ratio (32768/131328) lies between.
GSO_HEAD = 196000

NSTAT_KEYS = ("TCPToZeroWindowAdv", "TCPWantZeroWindowAdv", "TCPFromZeroWindowAdv",
              "TCPWinProbe", "PruneCalled", "RcvPruned", "TCPRcvQDrop", "TCPRcvCollapsed",
              "TCPZeroWindowDrop", "TCPRcvCoalesce", "RetransSegs", "TCPBacklogDrop",
              "TCPOFOQueue", "TCPOFODrop", "TCPRcvQDrop", "TCPHPHits")


def sh(*cmd: str, check: bool = True) -> str:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    return p.stdout


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def build_program(copybreak: int, workdir: Path, gso_head: int = GSO_HEAD) -> Path:
    """Compile the charging program; frames shorter than ``copybreak`` are not charged, a
    GSO skb's head grows by ``gso_head`` bytes."""
    ll = workdir / f"ntb_rx_{copybreak}_{gso_head}.ll"
    obj = ll.with_suffix(".o")
    ll.write_text(PROGRAM_IR.replace("COPYBREAK", str(copybreak)).replace("GSOHEAD", str(gso_head)))
    sh("llc", "-march=bpfel", "-filetype=obj", "-o", str(obj), str(ll))
    return obj


class Net:
    """The three namespaces of one run: end A, router R, end B."""

    def __init__(self, tag: str) -> None:
        self.a, self.r, self.b = (f"ntb{tag}{x}" for x in "ARB")

    def ns(self, name: str, *cmd: str, check: bool = True) -> str:
        return sh("ip", "netns", "exec", name, *cmd, check=check)

    def build(self) -> None:
        for n in (self.a, self.r, self.b):
            sh("ip", "netns", "add", n)
            sh("ip", "-n", n, "link", "set", "lo", "up")
        for end, dev, peer, net in ((self.a, "vA", "rA", "1"), (self.b, "vB", "rB", "2")):
            sh("ip", "link", "add", dev, "netns", end, "type", "veth", "peer", "name", peer,
               "netns", self.r)
            host = "1" if end == self.a else "2"
            for n, d, ip in ((end, dev, f"10.77.{net}.{host}"), (self.r, peer, f"10.77.{net}.254")):
                sh("ip", "-n", n, "link", "set", d, "mtu", "65535", "up")
                sh("ip", "-n", n, "addr", "add", f"{ip}/24", "dev", d)
            sh("ip", "-n", end, "route", "add", "default", "via", f"10.77.{net}.254")
        self.ns(self.r, "sysctl", "-qw", "net.ipv4.ip_forward=1")

    def charge(self, obj: Path | None, ends: str = "AB") -> None:
        """Put ``obj`` on the ingress of the devices of ``ends`` (None: take it off)."""
        for end, n, d in (("A", self.a, "vA"), ("B", self.b, "vB")):
            self.ns(n, "tc", "qdisc", "del", "dev", d, "clsact", check=False)
            if obj is not None and end in ends:
                self.ns(n, "tc", "qdisc", "add", "dev", d, "clsact")
                self.ns(n, "tc", "filter", "add", "dev", d, "ingress", "bpf", "da", "obj",
                        str(obj), "sec", "classifier")

    def link(self, mtu: int) -> None:
        """All four devices at ``mtu``; below 65535 also without TSO/GSO, so that every skb
        is one frame of at most an MSS (then charged exactly what ntb charged)."""
        off = "off" if mtu < 65535 else "on"
        for n, d in ((self.a, "vA"), (self.r, "rA"), (self.r, "rB"), (self.b, "vB")):
            sh("ip", "-n", n, "link", "set", d, "mtu", str(mtu))
            self.ns(n, "ethtool", "-K", d, "tso", off, "gso", off)

    def teardown(self) -> None:
        for n in (self.a, self.r, self.b):
            sh("ip", "netns", "del", n, check=False)

    def netstat(self, name: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in ("/proc/net/netstat", "/proc/net/snmp"):
            lines = self.ns(name, "cat", f).splitlines()
            for head, vals in zip(lines[::2], lines[1::2]):
                for k, v in zip(head.split()[1:], vals.split()[1:]):
                    out[k] = out.get(k, 0) + int(v) if k == "RetransSegs" else int(v)
        return out

    def ss(self, name: str) -> str:
        return self.ns(name, "ss", "-tmoiHn", "state", "established",
                       f"( sport = :{PORT} or dport = :{PORT} )").strip()


@contextlib.contextmanager
def network() -> Iterator[Net]:
    net = Net(str(os.getpid()))
    old = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

    def _stop(signum, frame):  # so that `finally` runs
        raise KeyboardInterrupt(f"signal {signum}")

    for s in old:
        signal.signal(s, _stop)
    try:
        net.build()
        yield net
    finally:
        net.teardown()
        for s, h in old.items():
            signal.signal(s, h)


def _spawn(net: Net, name: str, args: dict[str, object]) -> subprocess.Popen[str]:
    argv = [sys.executable, str(ENDPOINT), *(f"{k}={v}" for k, v in args.items())]
    return subprocess.Popen(["ip", "netns", "exec", name, *argv], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)


def one_message(net: Net, size: int = 48) -> dict[str, int]:
    """Send one ``size``-byte message A -> B that B does not read; B's skmem."""
    srv = ("import socket,time;s=socket.socket();s.bind(('10.77.2.2',5023));s.listen(1);"
           "c,_=s.accept();time.sleep(1.5)")
    cli = (f"import socket,time;c=socket.create_connection(('10.77.2.2',5023));"
           f"c.send(b'x'*{size});time.sleep(1.5)")
    procs = [subprocess.Popen(["ip", "netns", "exec", net.b, sys.executable, "-c", srv])]
    time.sleep(0.3)
    procs.append(subprocess.Popen(["ip", "netns", "exec", net.a, sys.executable, "-c", cli]))
    time.sleep(0.6)
    out = net.ns(net.b, "ss", "-tmiHn", "state", "established", "( sport = :5023 )")
    for p in procs:
        p.wait()
    m = re.search(r"skmem:\(r(\d+),rb(\d+)", out)
    if not m:
        raise RuntimeError(f"no socket in ss output: {out!r}")
    return {"r": int(m[1]), "rb": int(m[2])}


def _sample(net: Net) -> dict[str, dict[str, int | None]]:
    row: dict[str, dict[str, int | None]] = {}
    for end, name in (("A", net.a), ("B", net.b)):
        o = net.ss(name)
        f = o.split()
        vals: dict[str, int | None] = {"recvq": int(f[0]) if f else None,
                                       "sendq": int(f[1]) if f else None}
        for key, pat in (("r", r"skmem:\(r(\d+)"), ("rb", r",rb(\d+)"),
                         ("snd_wnd", r"snd_wnd:(\d+)"), ("rcv_ssthresh", r"rcv_ssthresh:(\d+)"),
                         ("rcvmss", r"rcvmss:(\d+)"), ("wscale", r"wscale:(\d+)")):
            m = re.search(pat, o)
            vals[key] = int(m[1]) if m else None
        row[end] = vals
    return row


def run(net: Net, dur: float, a_args: dict[str, object], b_args: dict[str, object]) -> dict:
    """One connection: A copies to B (bulk), B sends small messages back; both measured."""
    pre = {e: net.netstat(n) for e, n in (("A", net.a), ("B", net.b))}
    b = _spawn(net, net.b, {"role": "srv", "host": "10.77.2.2", "port": PORT, "dur": dur + 1,
                            **b_args})
    time.sleep(0.3)
    a = _spawn(net, net.a, {"role": "cli", "host": "10.77.2.2", "port": PORT, "dur": dur,
                            **a_args})
    samples, last_ss = [], {}
    t0 = time.monotonic()
    while a.poll() is None and time.monotonic() - t0 < dur + 5:
        time.sleep(0.5)
        if a.poll() is None:
            samples.append({"t": round(time.monotonic() - t0, 1), **_sample(net)})
            last_ss = {"A": net.ss(net.a), "B": net.ss(net.b)}
    ra = json.loads(a.communicate()[0] or "{}")
    rb = json.loads(b.communicate()[0] or "{}")
    post = {e: net.netstat(n) for e, n in (("A", net.a), ("B", net.b))}
    nstat = {e: {k: post[e].get(k, 0) - pre[e].get(k, 0) for k in NSTAT_KEYS
                 if post[e].get(k, 0) != pre[e].get(k, 0)} for e in pre}
    tail = [x[2] for x in rb.get("timeline", [])[-4:]]
    return {"A": ra, "B": rb, "nstat": nstat, "samples": samples, "last_ss": last_ss,
            "bulk_delivered": rb.get("recv_data", 0),
            "stalled": bool(tail) and sum(tail) < 1 << 20}


# Both ends' tcp_rmem / tcp_wmem, unless a variant says otherwise (this kernel's defaults).
SYSCTLS = {"net.ipv4.tcp_rmem": "4096 131072 33554432", "net.ipv4.tcp_wmem": "4096 16384 4194304"}
# name -> sysctls of both ends that differ from SYSCTLS
VARIANT_SYSCTLS: dict[str, dict[str, str]] = {
    "tcp_rmem max 128K": {"net.ipv4.tcp_rmem": "4096 131072 131072"},
    "tcp_rmem max 128K, copybreak 256": {"net.ipv4.tcp_rmem": "4096 131072 131072"},
    "tcp_rmem max 256K": {"net.ipv4.tcp_rmem": "4096 131072 262144"},
    "tcp_wmem max 128K": {"net.ipv4.tcp_wmem": "4096 16384 131072"},
}

# name -> MTU of every device, when not 65535 (and then no TSO/GSO: one frame per skb)
VARIANT_MTU: dict[str, int] = {
    "MTU 11500": 11500,
    "MTU 11500, copybreak 256": 11500,
    "MTU 11500, plain veth": 11500,
    "MTU 11500, B only": 11500,
    "MTU 11500, B only, copybreak 256": 11500,
    "MTU 11500, A only": 11500,
    "MTU 11500, no messages back": 11500,
    "MTU 11500, SO_RCVBUF 64K": 11500,
    "MTU 11500, SO_RCVBUF 64K, copybreak 256": 11500,
    "MTU 11500, SO_RCVBUF 64K, plain veth": 11500,
    "MTU 11500, bulk after 1.5 ms": 11500,
    "MTU 11500, bulk after 1.5 ms, copybreak 256": 11500,
    "MTU 11500, bulk after 1.5 ms, plain veth": 11500,
}

# name -> (charging: None | copybreak, A's args, B's args); A: scp source, B: scp sink
VARIANTS: dict[str, tuple[int | None, dict[str, object], dict[str, object]]] = {
    **{name: (256 if "copybreak" in name else 0, {"bulk": 1}, {"small_ms": 10})
       for name in VARIANT_SYSCTLS},
    **{name: (None if "plain" in name else 256 if "copybreak" in name else 0,
              {"bulk": 1, **({"rcvbuf": 65536} if "SO_RCVBUF" in name else {}),
               **({"delay": 1.5} if "after 1.5 ms" in name else {})},
              {"small_ms": 0 if "no messages" in name else 10,
               **({"rcvbuf": 65536} if "SO_RCVBUF" in name else {})})
       for name in VARIANT_MTU},
    "ssh, plain veth": (None, {"bulk": 1}, {"small_ms": 10}),
    "ssh": (0, {"bulk": 1}, {"small_ms": 10}),
    "ssh, copybreak 256": (256, {"bulk": 1}, {"small_ms": 10}),
    "relay readers": (0, {"bulk": 1, "read": "relay"}, {"small_ms": 10, "read": "relay"}),
    "no channel window": (0, {"bulk": 1, "chanwin": 0}, {"small_ms": 10, "chanwin": 0}),
    "600 B messages back": (0, {"bulk": 1}, {"small_ms": 10, "small_len": 600}),
    "SO_RCVBUF 64K": (0, {"bulk": 1, "rcvbuf": 65536}, {"small_ms": 10, "rcvbuf": 65536}),
    "SO_RCVBUF 64K, copybreak 256":
        (256, {"bulk": 1, "rcvbuf": 65536}, {"small_ms": 10, "rcvbuf": 65536}),
    "SO_RCVBUF 64K, plain veth": (None, {"bulk": 1, "rcvbuf": 65536}, {"small_ms": 10, "rcvbuf": 65536}),
    "1 KB hello": (0, {"bulk": 1, "hello": 1000}, {"small_ms": 10, "hello": 1000}),
    "SO_RCVBUF 64K + 1 KB hello, plain veth":
        (None, {"bulk": 1, "hello": 1000, "rcvbuf": 65536},
         {"small_ms": 10, "hello": 1000, "rcvbuf": 65536}),
    "SO_RCVBUF 64K + 1 KB hello":
        (0, {"bulk": 1, "hello": 1000, "rcvbuf": 65536},
         {"small_ms": 10, "hello": 1000, "rcvbuf": 65536}),
    "SO_RCVBUF 64K + 1 KB hello, copybreak 256":
        (256, {"bulk": 1, "hello": 1000, "rcvbuf": 65536},
         {"small_ms": 10, "hello": 1000, "rcvbuf": 65536}),
}


def _row(name: str, results: list[dict]) -> str:
    stalls = sum(r["stalled"] for r in results)
    mb = sorted(r["bulk_delivered"] >> 20 for r in results)
    def tot(end: str, key: str) -> int:
        return sum(r["nstat"][end].get(key, 0) for r in results)
    return (f"| {name} | {stalls}/{len(results)} | {mb} | "
            f"{tot('B', 'TCPToZeroWindowAdv')} / {tot('A', 'TCPToZeroWindowAdv')} | "
            f"{tot('B', 'TCPWantZeroWindowAdv')} / {tot('A', 'TCPWantZeroWindowAdv')} | "
            f"{tot('B', 'TCPRcvQDrop')} / {tot('A', 'TCPRcvQDrop')} |")


def matrix(runs: int, dur: float, names: list[str], out: Path | None) -> None:
    print("| variant | stalled runs | MiB delivered A->B per run | ToZeroWindowAdv B / A "
          "| WantZeroWindowAdv B / A | RcvQDrop B / A |\n|---|---|---|---|---|---|")
    everything = {}
    with tempfile.TemporaryDirectory() as tmp, network() as net:
        objs: dict[int, Path] = {}
        for name in names:
            cb, a_args, b_args = VARIANTS[name]
            if cb is not None and cb not in objs:
                objs[cb] = build_program(cb, Path(tmp))
            net.charge(None if cb is None else objs[cb],
                       "B" if "B only" in name else "A" if "A only" in name else "AB")
            net.link(VARIANT_MTU.get(name, 65535))
            for name_ in (net.a, net.b):
                for key, val in {**SYSCTLS, **VARIANT_SYSCTLS.get(name, {})}.items():
                    net.ns(name_, "sysctl", "-qw", f"{key}={val}")
            results = [run(net, dur, a_args, b_args) for _ in range(runs)]
            everything[name] = results
            print(_row(name, results), flush=True)
    if out:
        out.write_text(json.dumps(everything, indent=1))


def check(copybreak: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, network() as net:
        net.charge(build_program(copybreak, Path(tmp)))
        print(json.dumps(one_message(net)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="one 48-byte message, unread: B's skmem r and rb")
    c.add_argument("--copybreak", type=int, default=0)
    m = sub.add_parser("matrix", help="run the variants; print the doc's table")
    m.add_argument("--runs", type=int, default=3)
    m.add_argument("--dur", type=float, default=4.0)
    m.add_argument("--only", action="append", choices=sorted(VARIANTS), default=None)
    m.add_argument("--out", type=Path, default=None, help="all samples and counters as JSON")
    args = ap.parse_args()
    if os.geteuid() != 0 or missing_tools():
        sys.exit(f"ntb_veth_capture: error: needs root and {', '.join(TOOLS)} "
                 f"(missing: {', '.join(missing_tools()) or 'root'})")
    if args.cmd == "check":
        check(args.copybreak)
    else:
        matrix(args.runs, args.dur, args.only or list(VARIANTS), args.out)


if __name__ == "__main__":
    main()
