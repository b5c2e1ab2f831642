"""Ground-truth measurements of this machine's kernel receive path (docs/kernel-measurements.md).

Run as root:  ``python scripts/measure.py [--out docs/measurements] [--only e1,e3]``

Every experiment builds its own namespaces (tcpsim.capture.netns) and tears them down. E1-E3 and
E6 create the sockets in-process with setns() (the sockets stay in their namespaces), so one
Python process drives both ends with exact sequencing; E4/E5 are scenarios run with the capture
tool (endpoints as processes, 20 ms RTT through the NFQUEUE delay). Raw outputs go to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tcpsim.capture import apps, nstat, wire
from tcpsim.capture.capture import capture
from tcpsim.capture.netns import SND_PORT, Topology, connect_pair, in_netns, topology
from tcpsim.capture.probe import BpfProbe, available as bpf_available
from tcpsim.capture.recorder import WireRecorder
from tcpsim.capture.sockinfo import meminfo, sample, tcp_info

ALL_CPUS = set(range(os.cpu_count() or 1))


def pin(cpu: int | None) -> None:
    """Pin the calling thread to ``cpu`` (None: all CPUs)."""
    os.sched_setaffinity(0, ALL_CPUS if cpu is None else {cpu})


def tcp_sysctls(topo: Topology, ns: str) -> dict[str, str]:
    """All net.ipv4.tcp_* and net.core.[rw]mem_* sysctls of a namespace."""
    out = {}
    for line in topo.sh(ns, ["sysctl", "-a"], check=False).splitlines():
        k, _, v = line.partition(" = ")
        if k.startswith(("net.ipv4.tcp_", "net.core.rmem", "net.core.wmem")):
            out[k] = " ".join(v.split())
    return out


def ss(topo: Topology, ns: str) -> str:
    return topo.sh(ns, ["ss", "-tmino"], check=False)


def _wait_bytes(r: socket.socket, target: int, timeout: float = 1.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if tcp_info(r)["bytes_received"] >= target:
            return True
        time.sleep(0.0005)
    return False


# ---------------------------------------------------------------------------------------------
def e1_truesize(out: Path, sizes=(1, 4, 100, 536, 1000, 1448), nseg: int = 40) -> dict[str, Any]:
    """Per-segment rmem charge (new skb vs coalesced) and the frag limit, never-reading receiver."""
    rows: list[dict[str, Any]] = []
    base = 41000
    with topology(tag=f"e1{os.getpid()}") as topo:
        probe = BpfProbe(base, base + len(sizes), out / "e1_probe.csv") if bpf_available() else None
        if probe:
            probe.start()
        try:
            for i, size in enumerate(sizes):
                s, r = connect_pair(topo, base + i)
                time.sleep(0.05)
                pin(0)
                got = 0
                for k in range(nseg):
                    before = meminfo(r)
                    s.send(b"a" * size)
                    got += size
                    ok = _wait_bytes(r, got)
                    time.sleep(0.003)
                    after = meminfo(r)
                    rows.append({"size": size, "k": k, "ok": ok,
                                 "rmem_before": before["rmem_alloc"],
                                 "rmem_after": after["rmem_alloc"],
                                 "delta": after["rmem_alloc"] - before["rmem_alloc"],
                                 "rcvbuf": after["rcvbuf"], "drops": after["drops"]})
                    if not ok:
                        break
                pin(None)
                s.close()
                r.close()
        finally:
            parsed = probe.stop() if probe else {"probe": []}
    # join the probe's view: the state *before* segment k+1 shows qlen after segment k
    by_port: dict[int, list[dict[str, int]]] = {}
    for p in parsed["probe"]:
        if p["skb_len"] > 0:
            by_port.setdefault(p["sport"], []).append(p)
    for i, size in enumerate(sizes):
        segs = by_port.get(base + i, [])
        mine = [row for row in rows if row["size"] == size]
        for k, row in enumerate(mine):
            row["truesize"] = segs[k]["truesize"] if k < len(segs) else -1
            row["skb_data_len"] = segs[k]["skb_data_len"] if k < len(segs) else -1
            row["qlen_after"] = segs[k + 1]["rcvq_len"] if k + 1 < len(segs) else -1
    with open(out / "e1_truesize.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    summary: dict[str, Any] = {}
    for size in sizes:
        mine = [row for row in rows if row["size"] == size and row["ok"]]
        deltas = [row["delta"] for row in mine]
        new = [row["delta"] for row in mine if row.get("qlen_after", -1) >= 0 and
               (row is mine[0] or row["qlen_after"] > mine[mine.index(row) - 1].get("qlen_after", 0))]
        qlens = [row.get("qlen_after", -1) for row in mine]
        summary[str(size)] = {"deltas": deltas, "truesize": [row.get("truesize") for row in mine],
                              "qlen_after": qlens, "new_skb_deltas": new}
    (out / "e1_summary.json").write_text(json.dumps(summary, indent=1))
    return summary


# ---------------------------------------------------------------------------------------------
def _bulk_never(topo: Topology, port: int, rcvbuf: int | None, seconds: float, out: Path,
                label: str) -> dict[str, Any]:
    pcap = out / f"{label}.pcap"
    before = nstat.read_counters(lambda a: topo.sh(topo.rcv, a))
    samples: list[dict[str, Any]] = []
    with WireRecorder(topo, pcap, port):
        s, r = connect_pair(topo, port, rcvbuf=rcvbuf)
        stop = threading.Event()
        log: apps.Log = []

        def writer() -> None:
            pin(0)
            apps.bulk_writer(s, stop, log)

        th = threading.Thread(target=writer)
        t0 = time.monotonic_ns()
        th.start()
        while time.monotonic_ns() - t0 < seconds * 1e9:
            d = sample(r)
            d["t_ms"] = (time.monotonic_ns() - t0) // 10**6
            samples.append(d)
            time.sleep(0.05)
        final = sample(r)
        ss_text = ss(topo, topo.rcv)
        stop.set()
        th.join()
    after = nstat.read_counters(lambda a: topo.sh(topo.rcv, a))
    flow = wire.build_flow(wire.read_pcap(pcap), port)
    acks = wire.ack_windows(flow, flow.packets[0].t_ns if flow.packets else 0)
    pcap.unlink()
    with open(out / f"{label}_acks.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_us", "flags", "ack_seq", "win_raw", "win_scaled"])
        for a in acks:
            w.writerow([int(a["t_ns"]) // 1000, a["flags"], a["ack_seq"], a["win_raw"], a["win_scaled"]])
    s.close()
    r.close()
    res = {"final": final, "ss": ss_text, "counters": {k: v for k, v in nstat.diff(before, after).items()
                                                       if k.startswith("TcpExt")},
           "window_summary": wire.window_summary(acks),
           "wscale": flow.wscale.get(True, -1),
           "max_rmem_seen": max(x["sk_rmem_alloc"] for x in samples),
           "bytes_written": sum(n for _, k, n in log if k == "write")}
    return res


def e2_rcvbuf(out: Path, seconds: float = 4.0) -> dict[str, Any]:
    """Bulk sender into a never-reading receiver, with SO_RCVBUF=32768 and with defaults."""
    res = {}
    with topology(tag=f"e2{os.getpid()}") as topo:
        res["sysctls"] = {k: v for k, v in tcp_sysctls(topo, topo.rcv).items()
                          if k in ("net.ipv4.tcp_rmem", "net.core.rmem_max", "net.ipv4.tcp_wmem")}
        res["so_rcvbuf_32768"] = _bulk_never(topo, 42000, 32768, seconds, out, "e2_rcvbuf32k")
        res["default"] = _bulk_never(topo, 42001, None, seconds, out, "e2_default")
    (out / "e2_rcvbuf.json").write_text(json.dumps(res, indent=1))
    return res


# ---------------------------------------------------------------------------------------------
def e3_handshake(out: Path) -> dict[str, Any]:
    """SYN/SYN-ACK windows, wscale and initial receiver state for several tcp_rmem[2]."""
    res: dict[str, Any] = {}
    base = 43000
    cases = [(m, role) for m in (6, 8, 32, 256) for role in ("client", "server")]
    with topology(tag=f"e3{os.getpid()}") as topo:
        res["rmem_max_ns"] = topo.read_sysctl(topo.rcv, "net.core.rmem_max")
        probe = BpfProbe(base, base + len(cases), out / "e3_probe.csv") if bpf_available() else None
        if probe:
            probe.start()
        try:
            for i, (mib, role) in enumerate(cases):
                port = base + i
                topo.sysctl(topo.rcv, "net.ipv4.tcp_rmem", (4096, 131072, mib << 20))
                pcap = out / f"e3_{i}.pcap"
                with WireRecorder(topo, pcap, port):
                    s, r = connect_pair(topo, port, role=role)
                    time.sleep(0.05)
                    init = sample(r)
                    s.send(b"a" * 1448)   # one full segment: the probe shows the state before it
                    _wait_bytes(r, 1448)
                    time.sleep(0.05)
                    after1 = sample(r)
                    s.close()
                    r.close()
                flow = wire.build_flow(wire.read_pcap(pcap), port)
                pcap.unlink()
                syns = [{"from": "rcv" if flow.from_rcv(p) else "snd", "flags": wire.flags_str(p.flags),
                         "win": p.win, "wscale": p.wscale, "mss": p.mss} for p in flow.packets
                        if p.flags & 0x02]
                first_ack = next((p.win for p in flow.packets if flow.from_rcv(p) and not p.flags & 0x02), -1)
                res[f"{mib}MiB/{role}"] = {"port": port, "syn": syns, "first_rcv_ack_win_raw": first_ack,
                                           "initial": init, "after_one_segment": after1}
        finally:
            parsed = probe.stop() if probe else {"probe": []}
    for key, v in res.items():
        if isinstance(v, dict) and "port" in v:
            ps = [p for p in parsed["probe"] if p["sport"] == v["port"]]
            v["probe_first"] = ps[0] if ps else None
            v["probe_all"] = ps[:3]
    (out / "e3_handshake.json").write_text(json.dumps(res, indent=1))
    return res


# ---------------------------------------------------------------------------------------------
def scenario_run(out: Path, label: str, scenario: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Run a scenario with the capture tool (no bpftrace) and keep a small text digest:
    receiver samples every second, ACK windows (thinned), counters, delay lateness."""
    with tempfile.TemporaryDirectory() as tmp:
        table = pq.read_table(capture(dict(scenario, name=label), tmp, seconds, use_bpftrace=False))
    meta = {k.decode(): json.loads(v) for k, v in table.schema.metadata.items()}
    rows = table.to_pylist()
    samples = [r for r in rows if (r["sock"], r["event"], r["detail"]) == ("rcv", "state", "sample")]
    acks = [r for r in rows if (r["sock"], r["event"]) == ("rcv", "tx")]
    with open(out / f"{label}_samples.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s", "sk_rmem_alloc", "sk_rcvbuf", "rcv_ssthresh", "window_clamp", "rcv_wnd",
                    "rcvq_space", "bytes_received", "recv_q"])
        next_t = 0
        for r in samples:
            if r["t_ns"] >= next_t or r is samples[-1]:
                w.writerow([round(r["t_ns"] / 1e9, 3), r["sk_rmem_alloc"], r["sk_rcvbuf"],
                            r["rcv_ssthresh"], r["window_clamp"], r["rcv_wnd"], r["rcvq_space"],
                            r["rcv_nxt"] - 1, r["recv_q"]])
                next_t = max(next_t + 10**9, r["t_ns"])
    with open(out / f"{label}_acks.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_us", "flags", "ack_seq", "win_raw", "win_scaled"])
        prev = None
        for n, a in enumerate(acks):   # the first 50, every 200th, and every zero/non-zero change
            if n < 50 or n % 200 == 0 or (a["win_scaled"] == 0) != prev:
                w.writerow([a["t_ns"] // 1000, a["flags"], a["ack_seq"], a["win_raw"], a["win_scaled"]])
            prev = a["win_scaled"] == 0
    writes = [r for r in rows if (r["sock"], r["event"]) == ("snd", "write")]
    res = {"label": label, "scenario": meta["scenario"], "sysctls": meta["sysctls"],
           "counters": meta["counters"], "summary": meta["summary"],
           "writes": sum(1 for r in writes if r["detail"] == ""),
           "writes_blocked": sum(1 for r in writes if r["detail"] == "blocked"),
           "bytes_read": sum(r["len"] for r in rows if (r["sock"], r["event"]) == ("rcv", "read")),
           "final": samples[-1] if samples else None}
    (out / f"{label}.json").write_text(json.dumps(res, indent=1))
    return res


def _reproducer(rmem_max: int, shrink: int, writer: dict, reader: dict, nodelay: bool) -> dict:
    return {"sysctl": {"net.ipv4.tcp_rmem": [4096, 131072, rmem_max],
                       "net.ipv4.tcp_shrink_window": shrink,
                       "net.ipv4.tcp_adv_win_scale": -2},    # as in the blog; no effect >= 6.6
            "link": {"rtt": "20ms"}, "receiver": {"role": "client"},
            "sender": {"nodelay": nodelay}, "writer": writer, "reader": reader}


def e4_never_reads(out: Path, seconds: float = 30) -> list[dict]:
    """Cloudflare's "reader never reads": 4 B every 1 ms, tcp_rmem max 8 MiB, shrink 0 and 1."""
    return [scenario_run(out, f"e4_never_shrink{sh}",
                         _reproducer(8388608, sh, {"kind": "periodic", "bytes": 4, "every": "1ms"},
                                     {"kind": "never"}, True), seconds) for sh in (0, 1)]


def e5_unbounded(out: Path, seconds: float = 60) -> list[dict]:
    """The original reproducer: 1448 B every 1 ms, reader 1 B every 1 ms, max 256 MiB."""
    return [scenario_run(out, f"e5_slowread_shrink{sh}",
                         _reproducer(268435456, sh, {"kind": "periodic", "bytes": 1448, "every": "1ms"},
                                     {"kind": "periodic", "bytes": 1, "every": "1ms"}, False), seconds)
            for sh in (0, 1)]


# ---------------------------------------------------------------------------------------------
def e6_growth(out: Path, nseg: int = 60) -> dict[str, Any]:
    """scaling_ratio after the first full-size segments; rcv_ssthresh over a bulk start."""
    port = 45000
    with topology(tag=f"e6{os.getpid()}") as topo:
        with BpfProbe(port, port, out / "e6_probe_raw.txt") as probe:
            s, r = connect_pair(topo, port)
            stop = threading.Event()
            rlog: apps.Log = []
            wlog: apps.Log = []

            def writer() -> None:
                pin(0)
                apps.bulk_writer(s, stop, wlog)

            ths = [threading.Thread(target=writer),
                   threading.Thread(target=apps.fast_reader, args=(r, stop, rlog))]
            for th in ths:
                th.start()
            time.sleep(1.0)
            stop.set()
            for th in ths:
                th.join()
            final = sample(r)
            s.close()
            r.close()
        parsed = probe.stop()
    segs = [p for p in parsed["probe"]]
    (out / "e6_probe_raw.txt").unlink(missing_ok=True)
    keep = ("t_ns", "seq", "end_seq", "skb_len", "truesize", "rcv_nxt", "copied_seq", "rcv_wnd",
            "rcv_ssthresh", "window_clamp", "rcv_mss", "scaling_ratio", "rcvq_space",
            "sk_rmem_alloc", "sk_rcvbuf", "rcvq_len", "advmss", "rcv_wscale")
    with open(out / "e6_growth.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keep)
        for p in segs[:nseg]:
            w.writerow([p[k] for k in keep])
    grows = parsed["grow"][:20]
    res = {"first": segs[:nseg], "grow": grows, "final": final, "n_probe": len(segs)}
    (out / "e6_growth.json").write_text(json.dumps({"grow": grows, "final": final,
                                                    "n_probe": len(segs)}, indent=1))
    return res


EXPERIMENTS = {"e1": e1_truesize, "e2": e2_rcvbuf, "e3": e3_handshake, "e4": e4_never_reads,
               "e5": e5_unbounded, "e6": e6_growth}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/measurements")
    ap.add_argument("--only", default=",".join(EXPERIMENTS))
    ap.add_argument("--seconds", type=float, default=0, help="override e4/e5 durations")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.only.split(","):
        t = time.monotonic()
        fn = EXPERIMENTS[name]
        if args.seconds and name in ("e4", "e5"):
            fn(out, seconds=args.seconds)
        else:
            fn(out)
        print(f"{name} done in {time.monotonic() - t:.1f}s", flush=True)


if __name__ == "__main__":
    main()
