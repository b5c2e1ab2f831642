"""A bare host for the pool tests: N loopback connection pairs whose sockets all charge one
ProtoMemory, stepped by a minimal event loop (segments delivered after a fixed one-way
delay, timers at their deadlines, writers writing whenever the socket takes bytes,
receivers that never read). Not an engine -- the host engine is tcpsim's, this only drives
sockets so the pool tests can hold the model against the kernel's loopback measurement
(tests/fixtures/host/stuck-40, recorded by tcpsim.capture.host)."""

from __future__ import annotations

import heapq
from typing import Any

from tcpsim.catalog import get_profile
from tcpsim.core.constants import NS_PER_MS, NS_PER_US
from tcpsim.core.protmem import ProtoMemory
from tcpsim.engines import make_socket


def run_host(conns: int, seconds: float = 4.0, *, tcp_mem=(200, 400, 600), ncpus: int = 2,
             pcpu_rsv: int | None = None, profile: str = "linux-6.18", write: int = 1448,
             engine: str = "python", delay_ns: int = 20 * NS_PER_US) -> dict[str, Any]:
    """Run the host; the pool's record, every socket's counters summed, and the pool's
    global counter sampled every 100 ms (what /proc/net/sockstat shows)."""
    prof = get_profile(profile)
    sysctls = prof.default_sysctls().with_overrides({"net.ipv4.tcp_mem": list(tcp_mem)})
    rsv = sysctls.mem_pcpu_rsv if pcpu_rsv is None else pcpu_rsv
    pool = (ProtoMemory(tcp_mem, ncpus, rsv) if engine == "python"
            else __import__("tcpsim._native", fromlist=["ProtoMemory"]).ProtoMemory(
                tuple(tcp_mem), ncpus, rsv))
    pairs = []
    for i in range(conns):
        cli = make_socket(engine, prof, sysctls, "loopback", name=f"c{i}", mtu=65536)
        srv = make_socket(engine, prof, sysctls, "loopback", name=f"s{i}", mtu=65536)
        cli.set_proto(pool, 0)                 # one writer process: its CPU does the work
        srv.set_proto(pool, 0)
        pairs.append((cli, srv))
    events: list[tuple[int, int, int, Any]] = []   # (time, order, pair*2+side, segment)
    order = 0
    now = 0

    def flush(i: int) -> None:
        nonlocal order
        cli, srv = pairs[i]
        for side, sk in ((0, cli), (1, srv)):
            for seg in sk.take_outbox():
                order += 1
                heapq.heappush(events, (now + delay_ns, order, 2 * i + (1 - side), seg))

    for i, (cli, srv) in enumerate(pairs):
        srv.listen()
        cli.connect(now)
        flush(i)
    end = int(seconds * 1000) * NS_PER_MS
    samples = []
    next_sample = 0
    step = 500 * NS_PER_US                      # the writer's loop period
    next_write = 0
    while now < end:
        deadlines = [d for cli, srv in pairs for d in (cli.next_deadline(), srv.next_deadline())
                     if d]
        t = min([end, next_write, next_sample] + deadlines + ([events[0][0]] if events else []))
        now = max(now, t)
        if now >= next_sample:
            samples.append((now // NS_PER_MS, pool.snapshot()["allocated"]))
            next_sample += 100 * NS_PER_MS
        while events and events[0][0] <= now:
            _, _, dest, seg = heapq.heappop(events)
            sk = pairs[dest // 2][dest % 2]
            sk.on_segment(now, seg)
            flush(dest // 2)
        for i, (cli, srv) in enumerate(pairs):
            for sk in (cli, srv):
                d = sk.next_deadline()
                if d and d <= now:
                    sk.on_timer(now)
                    flush(i)
        if now >= next_write:
            for i, (cli, _) in enumerate(pairs):
                if cli.snapshot()["sock"]["state"] == "ESTABLISHED":
                    while cli.write(now, write) > 0:
                        pass
                    flush(i)
            next_write += step
    counters: dict[str, int] = {}
    for cli, srv in pairs:
        for sk in (cli, srv):
            for k, v in sk.snapshot()["mib"].items():
                counters[k] = counters.get(k, 0) + v
    return {"pool": pool.snapshot(), "counters": counters, "samples": samples,
            "peak_mem": max(m for _, m in samples),
            "sockets": [sk.snapshot() for pair in pairs for sk in pair]}
