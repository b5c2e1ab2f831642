"""`tcpsim capture`: run a scenario's workload over the real kernel and write a Parquet trace.

    capture(scenario, out_dir, duration_s=None, use_bpftrace=True) -> Path

Needs root, `ip`, `ethtool`, `tcpdump`, `iptables-legacy` (for a delay) and optionally
`bpftrace`. Without bpftrace the trace has no 'rx' rows (no per-segment kernel state): only the
wire, the socket samples, the app logs and the counters; metadata summary says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tcpsim.capture import nstat, parquet_out, trace_build as tb, wakeups, wire
from tcpsim.capture.hostload import HostLoad, HostLoadRunner
from tcpsim.capture.kconfig import kernel_hz
from tcpsim.capture.netns import Topology, python_env, run, tbf_params, topology
from tcpsim.capture.placement import (
    ENDPOINT_RT_PRIO, SENDER_CPU, Placement, add_placement_options, placement_error, placement_of,
)
from tcpsim.capture.probe import BpfProbe, TRACEFS, available as bpf_available
from tcpsim.capture.probe_csv import drop_reason_names
from tcpsim.capture.recorder import WireRecorder
from tcpsim.capture.spec import CaptureSpec, parse

RCV_PORT = 46000
SND_PORT = 5001
# The sender's congestion control, set per socket (a non-root namespace may not select a
# restricted default, capturing.md): CUBIC, the kernel's default.
SENDER_CC = "cubic"


def _expect(proc: subprocess.Popen[bytes], word: str, timeout: float) -> None:
    """Wait for a line ``word`` on the process's stdout."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([proc.stdout], [], [], 0.1)
        if r:
            line = proc.stdout.readline().decode().strip()
            if line == word:
                return
            if not line and proc.poll() is not None:
                break
    raise RuntimeError(f"endpoint did not say {word!r} (exit {proc.poll()})")


def endpoint_configs(spec: CaptureSpec, topo: Topology, raw: Path,
                     where: Placement = Placement()) -> tuple[dict, dict]:
    """(sender config, receiver config) for tcpsim.capture.endpoint, pinned as ``where``
    says."""
    rcv_listens = spec.role == "server"
    rt = ENDPOINT_RT_PRIO if where.rt else 0
    snd = {"role": "connect" if rcv_listens else "listen", "addr": topo.snd_addr,
           "port": 0 if rcv_listens else SND_PORT, "peer_addr": topo.rcv_addr,
           "peer_port": RCV_PORT, "nodelay": spec.nodelay, "cc": SENDER_CC, "cpu": where.cpu,
           "rt": rt, "app": spec.writer.as_dict(), "sample_ns": 10_000_000, "out": str(raw)}
    rcv = {"role": "listen" if rcv_listens else "connect", "addr": topo.rcv_addr,
           "port": RCV_PORT, "peer_addr": topo.snd_addr, "peer_port": SND_PORT,
           "so_rcvbuf": spec.so_rcvbuf, "cpu": where.receiver_cpu, "rt": rt,
           "app": spec.reader.as_dict(), "sample_ns": 10_000_000, "out": str(raw)}
    return snd, rcv


def configure(spec: CaptureSpec, topo: Topology) -> None:
    """Receiver sysctls (inside its namespace) and the sender's initcwnd (a host route)."""
    for name, value in spec.sysctls.items():
        topo.sysctl(topo.rcv, name, value)
    route = ["ip", "-n", topo.snd, "route", "add", f"{topo.rcv_addr}/32", "dev", "veth0"]
    if topo.routed:
        route += ["via", "10.77.1.2"]
    run(route + ["initcwnd", str(spec.initcwnd)])


def read_csv_ints(path: Path) -> list[dict[str, int]]:
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    head = lines[0].split(",")
    return [dict(zip(head, map(int, ln.split(",")))) for ln in lines[1:] if ln]


def read_events(path: Path) -> list[tuple[int, str, int]]:
    if not path.exists():
        return []
    out = []
    for ln in path.read_text().splitlines()[1:]:
        t, kind, n = ln.split(",")
        out.append((int(t), kind, int(n)))
    return out


def run_workload(spec: CaptureSpec, topo: Topology, raw: Path, duration_s: float,
                 where: Placement = Placement()) -> int:
    """Start both endpoints (listener first), run for ``duration_s``, stop them; return t0."""
    snd_cfg, rcv_cfg = endpoint_configs(spec, topo, raw, where)
    env = python_env()
    first, second = (("receiver", rcv_cfg), ("sender", snd_cfg)) if rcv_cfg["role"] == "listen" \
        else (("sender", snd_cfg), ("receiver", rcv_cfg))
    procs = []
    for side, cfg in (first, second):
        ns = topo.rcv if side == "receiver" else topo.snd
        p = topo.spawn(ns, [sys.executable, "-m", "tcpsim.capture.endpoint", side,
                            "--config", json.dumps(cfg)], stdout=subprocess.PIPE, env=env)
        procs.append(p)
        if cfg["role"] == "listen":
            _expect(p, "listening", 10)
    for p in procs:
        _expect(p, "connected", 10)
    t0 = time.monotonic_ns()
    time.sleep(duration_s)
    # stop the sender first and let the last segments and ACKs land, then the receiver, whose
    # final sample then agrees with the wire and the probe
    sender = procs[0] if first[0] == "sender" else procs[1]
    receiver = procs[1] if sender is procs[0] else procs[0]
    settle = max(0.3, 3 * (spec.delay_ab_ns + spec.delay_ba_ns) / 1e9)
    for p, wait_after in ((sender, settle), (receiver, 0.0)):
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        topo.procs.remove(p)
        time.sleep(wait_after)
    return t0


def capture(scenario: dict[str, Any] | str | Path, out_dir: str | Path,
            duration_s: float | None = None, use_bpftrace: bool = True,
            probe_every: int = 1, cpu: int = SENDER_CPU, tbf_burst: int = 0,
            tbf_limit: int = 0, host_load: HostLoad | None = None,
            reader_cpu: int = -1, rt: bool = False) -> Path:
    """Run the scenario over the real kernel; return the Parquet trace path.

    ``probe_every`` > 1 traces only every Nth segment (bulk at high rates: full tracing makes
    the 2 vCPUs the bottleneck); 'rx' rows then carry no detail. ``cpu``, ``reader_cpu``,
    ``rt``: where the processes run (Placement; parallel captures use different CPUs),
    recorded in the summary as 'placement'; with a reader on its own CPU the ACKs leave from
    two CPUs, so their order is also recorded where the sender receives them ('ack_order').
    ``tbf_burst`` / ``tbf_limit``: the token bucket's burst and byte limit when the scenario
    has a link rate (0 = netns.tbf_params' defaults); recorded in the summary as 'link_qdisc'.
    ``host_load``: competing processes on ``cpu`` for the whole capture (started before the
    namespaces are made, stopped after the workload; tcpsim.capture.hostload), recorded with
    the CPU share they got in the summary as 'host_load'.
    The raw outputs (``<out>/<name>.raw``: pcap, probe CSV, app logs with their wakeups)
    stay beside the trace.
    """
    spec = parse(scenario)
    out = Path(out_dir)
    raw = out / f"{spec.name}.raw"
    raw.mkdir(parents=True, exist_ok=True)
    duration = duration_s if duration_s is not None else spec.duration_ns / 1e9
    use_bpf = use_bpftrace and bpf_available()
    load_before = os.getloadavg()          # the machine's load shapes the apps' wakeup latency
    where = Placement(cpu=cpu, reader_cpu=reader_cpu, rt=rt)
    loader = HostLoadRunner(host_load, cpu, raw / "host_load").start() if host_load else None
    try:
        rows, summary, meta_parts = _capture_run(spec, raw, duration, use_bpf, probe_every, where,
                                                 tbf_burst, tbf_limit)
    finally:
        load_stats = loader.stop() if loader else None
    if load_stats is not None:
        summary["host_load"] = load_stats
    summary["loadavg"] = {"start": [round(x, 2) for x in load_before],
                          "end": [round(x, 2) for x in os.getloadavg()]}
    return _write_capture(spec, out, rows, summary, *meta_parts)


# the trace metadata's parts made inside the namespaces: (sysctls read, receiver counters)
_MetaParts = tuple[dict[str, Any], dict[str, int]]


def _capture_run(spec: CaptureSpec, raw: Path, duration: float, use_bpf: bool,
                 probe_every: int, where: Placement, tbf_burst: int,
                 tbf_limit: int) -> tuple[list[tb.Row], dict[str, Any], _MetaParts]:
    """The capture proper: namespaces, workload, probe, counters; (rows, summary, the parts
    of the trace's metadata)."""
    probe = None
    pcap = raw / "wire.pcap"
    with topology(delay_ns=spec.delay_ab_ns, delay_ba_ns=spec.delay_ba_ns, mtu=spec.mtu,
                  rate_bps=spec.rate_bps, queue_limit=spec.queue_limit, loss=spec.loss,
                  tag=f"c{os.getpid()}", delay_stats=raw / "delay.json", delay_cpu=where.cpu,
                  tbf_burst=tbf_burst, tbf_limit=tbf_limit) as topo:
        configure(spec, topo)
        sysctls = {k: topo.read_sysctl(topo.rcv, k) for k in _sysctl_names(spec)}
        sender_sysctls = {k: topo.read_sysctl(topo.snd, k) for k in SENDER_SYSCTLS}
        before = nstat.read_counters(lambda a: topo.sh(topo.rcv, a))
        snd_before = nstat.read_counters(lambda a: topo.sh(topo.snd, a))
        if use_bpf:
            probe = BpfProbe(RCV_PORT, RCV_PORT, raw / "probe.csv", every=probe_every,
                             netns=topo.rcv).start()
        try:
            realtime_offset = time.time_ns() - time.monotonic_ns()
            recorders = [WireRecorder(topo, pcap, RCV_PORT)]
            if where.reader_cpu >= 0:
                recorders.append(WireRecorder(topo, raw / ACK_PCAP, RCV_PORT, ns=topo.snd,
                                              expr=f"tcp src port {RCV_PORT}"))
            with contextlib.ExitStack() as stack:
                for rec in recorders:
                    stack.enter_context(rec)
                t0 = run_workload(spec, topo, raw, duration, where)
        finally:
            records = probe.stop() if probe else None
        after = nstat.read_counters(lambda a: topo.sh(topo.rcv, a))
        snd_after = nstat.read_counters(lambda a: topo.sh(topo.snd, a))
        qdisc = _qdisc_stats(topo, spec) if spec.rate_bps else None
    counters = {k: v for k, v in nstat.diff(before, after).items() if k.startswith("TcpExt")}
    sender_counters = {k: v for k, v in nstat.diff(snd_before, snd_after).items()
                       if k.startswith("Tcp")}
    rows, summary = assemble(raw, pcap, records, t0, realtime_offset, probe_every)
    summary.update({"duration_s": duration, "bpftrace": bool(records), "probe_every": probe_every,
                    "rx_state": "before the segment (tcp:tcp_probe)" if records else
                    "no per-segment kernel state (bpftrace not used)",
                    "delay": _delay_stats(raw), "cpu": where.cpu,
                    "placement": where.as_dict(),
                    "tcpdump_dropped": {"receiver": recorders[0].dropped,
                                        **({"sender_acks": recorders[1].dropped}
                                           if len(recorders) > 1 else {})},
                    "sender": {"congestion_control": SENDER_CC, "sysctls": sender_sysctls,
                               "counters": sender_counters},
                    "wakeups": wakeups.summary(raw, records, probe_every, RCV_PORT)})
    if qdisc is not None:
        summary["link_qdisc"] = qdisc
    if (raw / ACK_PCAP).exists() and pcap.exists():
        summary["ack_order"] = wire.ack_order(wire.read_pcap(pcap), wire.read_pcap(raw / ACK_PCAP),
                                              RCV_PORT)
    return rows, summary, (sysctls, counters)


# the receiver's ACKs as the sender's veth sees them (recorded when they leave from two CPUs)
ACK_PCAP = "acks_at_sender.pcap"


def _write_capture(spec: CaptureSpec, out: Path, rows: list[tb.Row], summary: dict[str, Any],
                   sysctls: dict[str, Any], counters: dict[str, int]) -> Path:
    """The trace's metadata (raw/meta.json too) and the Parquet trace; its path."""
    raw = out / f"{spec.name}.raw"
    hz, hz_source = kernel_hz()
    if hz is None:
        print(f"capture: the kernel's CONFIG_HZ is {hz_source}; the trace records it as unknown "
              "(replay it with tcpsim validate --hz N)", file=sys.stderr)
    meta = {"source": "capture", "profile": f"linux-{platform.release()}",
            "kernel_hz": hz, "kernel_hz_source": hz_source,
            "scenario": spec.raw, "sysctls": sysctls, "counters": counters, "summary": summary}
    (raw / "meta.json").write_text(json.dumps(meta, indent=1, default=str))
    path = out / f"{spec.name}.parquet"
    return parquet_out.write(tb.sort_rows(rows), path, meta)


def assemble(raw: Path, pcap: Path, records: dict | None, t0: int, realtime_offset: int,
             probe_every: int = 1) -> tuple[list[tb.Row], dict[str, Any]]:
    """All rows of the trace plus a summary with the cross-checks."""
    flow = wire.build_flow(wire.read_pcap(pcap), RCV_PORT) if pcap.exists() else None
    rows: list[tb.Row] = []
    summary: dict[str, Any] = {}
    if flow and flow.packets:
        # pcap time (realtime) -> monotonic -> relative to t0
        wrows = wire.rows(flow)
        rows += tb.wire_rows(wrows, -realtime_offset - t0)
        summary["wire"] = wire.window_summary([r for r in wrows if r["sock"] == "rcv"])
        data_end = [r["end_seq"] for r in wrows if r["sock"] == "snd" and r["len"]]
        summary["wire_bytes"] = max(data_end, default=1) - 1
    rcv_samples = read_csv_ints(raw / "receiver_samples.csv")
    snd_samples = read_csv_ints(raw / "sender_samples.csv")
    rows += tb.sample_rows(rcv_samples, "rcv", t0) + tb.sample_rows(snd_samples, "snd", t0)
    rows += tb.app_rows(read_events(raw / "sender_events.csv"), "snd", t0)
    rows += tb.app_rows(read_events(raw / "receiver_events.csv"), "rcv", t0)
    if rcv_samples:
        summary["tcpi_bytes_received"] = rcv_samples[-1]["tcpi_bytes_received"]
        summary["max_rmem"] = max(s["sk_rmem_alloc"] for s in rcv_samples)
        summary["max_rcvbuf"] = max(s["sk_rcvbuf"] for s in rcv_samples)
    if records:
        probes = [p for p in records["probe"] if p["sport"] == RCV_PORT]
        peer_isn = flow.isn.get(False) if flow else None
        own_isn = flow.isn.get(True) if flow else None
        if peer_isn is None and probes:
            first = next((p for p in probes if p["data_len"] > 0), probes[0])
            peer_isn = (first["seq"] - 1) % tb.U32
        rx = tb.probe_rows(probes, peer_isn or 0, own_isn, t0, consecutive=probe_every == 1)
        rows += rx
        rows += tb.drop_rows(records["drop"], _drop_reasons(), t0)
        rows += tb.state_rows(records["grow"], records["adjust"], t0)
        summary["probe_rows"] = len(rx)
        summary["probe_last_rcv_nxt"] = max((r["end_seq"] for r in rx if r["len"] > 0), default=1) - 1
        if flow and probe_every == 1:
            summary["window_check"] = window_check(rx, [r for r in rows if r["event"] == "tx"
                                                        and r["sock"] == "rcv"])
    return rows, summary


def window_check(rx: list[tb.Row], acks: list[tb.Row]) -> dict[str, int]:
    """How often the window of the last ACK on the wire before a segment equals the kernel's
    rcv_wnd that tcp_probe shows for that segment (ACKs in flight make a few differ)."""
    acks = sorted((a for a in acks if "S" not in a["flags"]), key=lambda a: a["t_ns"])
    i, last, match, mismatch = 0, None, 0, 0
    for r in sorted(rx, key=lambda r: r["t_ns"]):
        while i < len(acks) and acks[i]["t_ns"] <= r["t_ns"]:
            last = acks[i]
            i += 1
        if last is None:
            continue
        if last["win_scaled"] == r["rcv_wnd"]:
            match += 1
        else:
            mismatch += 1
    return {"match": match, "mismatch": mismatch}


def _drop_reasons() -> dict[int, str]:
    fmt = TRACEFS / "events/skb/kfree_skb/format"
    return drop_reason_names(fmt.read_text()) if fmt.exists() else {}


def _delay_stats(raw: Path) -> dict[str, Any]:
    out = {}
    for name in ("delay.json", "delay.ba.json"):
        p = raw / name
        if p.exists():
            out[name] = json.loads(p.read_text())
    return out


SENDER_SYSCTLS = ("net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control",
                  "net.ipv4.tcp_notsent_lowat", "net.ipv4.tcp_slow_start_after_idle",
                  "net.core.wmem_max", "net.ipv4.tcp_shrink_window")


def _qdisc_stats(topo: Topology, spec: CaptureSpec) -> dict[str, Any]:
    """The tbf bottleneck's parameters and its data-direction counters (`tc -s -j`)."""
    burst, limit = tbf_params(topo, spec.mtu)
    out: dict[str, Any] = {"kind": "tbf", "rate_bps": spec.rate_bps, "burst": burst,
                           "limit": limit}
    text = topo.sh(topo.rtr, ["tc", "-s", "-j", "qdisc", "show", "dev", "vr"], check=False)
    try:
        q = next(q for q in json.loads(text) if q.get("kind") == "tbf")
        out.update({k: q[k] for k in ("bytes", "packets", "drops", "overlimits", "requeues")
                    if k in q})
    except (ValueError, StopIteration):
        out["stats"] = "unreadable"
    return out


def _sysctl_names(spec: CaptureSpec) -> list[str]:
    base = ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max",
            "net.ipv4.tcp_shrink_window", "net.ipv4.tcp_moderate_rcvbuf",
            "net.ipv4.tcp_adv_win_scale", "net.ipv4.tcp_app_win", "net.ipv4.tcp_timestamps",
            "net.ipv4.tcp_window_scaling", "net.ipv4.tcp_sack", "net.ipv4.tcp_mem"]
    return list(dict.fromkeys(base + list(spec.sysctls)))


def main(argv: list[str] | None = None) -> None:
    import argparse

    from tcpsim.units import seconds_option
    ap = argparse.ArgumentParser(description="Capture a scenario over the real kernel.")
    ap.add_argument("scenario", help="scenario TOML file")
    ap.add_argument("--out", default="captures")
    ap.add_argument("--duration", type=seconds_option("--duration"), default=None,
                    help='e.g. "30s" or 30 (default: the scenario\'s)')
    ap.add_argument("--no-bpftrace", action="store_true")
    ap.add_argument("--probe-every", type=int, default=1, help="trace every Nth segment")
    add_placement_options(ap)
    ap.add_argument("--tbf-burst", type=int, default=0, help="tbf burst, bytes")
    ap.add_argument("--tbf-limit", type=int, default=0, help="tbf queue limit, bytes")
    args = ap.parse_args(argv)
    where = placement_of(args)
    if error := placement_error(where, os.cpu_count() or 1):
        ap.error(error)
    print(capture(args.scenario, args.out, args.duration, not args.no_bpftrace, args.probe_every,
                  where.cpu, args.tbf_burst, args.tbf_limit, reader_cpu=where.reader_cpu,
                  rt=where.rt))


if __name__ == "__main__":
    main()
