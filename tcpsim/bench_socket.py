"""The socket alone, per engine: in-order segments and reads through the Python surface.

`tcpsim bench --socket` and benchmarks/native_socket.py: one established receiver per engine
(client side, timestamps, SACK, window scaling), `n` in-order 1448-byte segments 100 us
apart, each followed by a read of everything queued, the outbox drained and due timers run
-- what an engine driving the socket does per packet, minus the link. Prints microseconds of
CPU per segment for each engine and the ratio, and the native socket in a Rust-only loop
(native/src/bench.rs: the same steps with no Python between them, so the figure is the
socket's own cost; `cargo run --release --example socket_bench` measures it without Python
at all). The native socket records no trace events here: the Python socket has no sink.
A number, never pass/fail.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from tcpsim.core.constants import NS_PER_MS, NS_PER_US
from tcpsim.core.segment import ACK, PSH, SYN, Segment
from tcpsim.engines import EngineError, make_socket, native_available
from tcpsim.catalog import get_profile

MSS = 1448
GAP_NS = 100 * NS_PER_US


def open_receiver(engine: str, profile: str, device: str) -> Any:
    """An established client socket of `engine` (SYN sent, SYN-ACK taken at 1 ms)."""
    prof = get_profile(profile)
    kw = {"trace": False} if engine == "native" else {}     # the Python socket has no sink
    sk = make_socket(engine, prof, prof.default_sysctls(), device, name="rcv", **kw)
    sk.connect(0)
    sk.take_outbox()
    sk.on_segment(NS_PER_MS, Segment(0, 0, SYN | ACK, 1, 65535, mss=1460, wscale=7,
                                     sack_ok=True, tsval=1, tsecr=1))
    sk.take_outbox()
    return sk


def drive(sk: Any, n: int) -> int:
    """`n` in-order segments, each read at once; returns the bytes read."""
    now, seq, echo, got = NS_PER_MS, 1, 1, 0
    for _ in range(n):
        now += GAP_NS
        sk.on_segment(now, Segment(seq, MSS, ACK | PSH, 1, 502, tsval=now // NS_PER_MS + 1,
                                   tsecr=echo))
        seq += MSS
        got += sk.read(now, 1 << 20)
        for seg in sk.take_outbox():
            echo = seg.tsval
        deadline = sk.next_deadline()
        if deadline and deadline <= now:
            sk.on_timer(now)
            sk.take_outbox()
    return got


def time_engine(engine: str, n: int, profile: str, device: str, repeat: int) -> float:
    """Best CPU microseconds per segment over `repeat` runs of `n` segments."""
    best = float("inf")
    for _ in range(max(1, repeat)):
        sk = open_receiver(engine, profile, device)
        t0 = time.process_time()
        got = drive(sk, n)
        dt = time.process_time() - t0
        if got != n * MSS:
            raise RuntimeError(f"engine {engine}: read {got} of {n * MSS} bytes")
        best = min(best, dt)
    return best * 1e6 / n


def time_rust_loop(n: int, profile: str, device: str, repeat: int) -> float:
    """Best CPU microseconds per segment of the native socket in its Rust-only loop
    (tcpsim._native.bench_in_order: the steps of `drive` with no Python between them)."""
    from tcpsim import _native
    best = float("inf")
    for _ in range(max(1, repeat)):
        t0 = time.process_time()
        got = _native.bench_in_order(profile, device, n)
        dt = time.process_time() - t0
        if got != n * MSS:
            raise RuntimeError(f"Rust loop: read {got} of {n * MSS} bytes")
        best = min(best, dt)
    return best * 1e6 / n


def socket_benchmark(n: int = 20_000, profile: str = "linux-6.18", device: str = "veth",
                     repeat: int = 3, echo: Callable[[str], None] | None = print) -> dict:
    """µs per segment for each engine that is built, and python/native."""
    row: dict[str, Any] = {"segments": n, "profile": profile, "device": device}
    row["python_us_per_segment"] = round(time_engine("python", n, profile, device, repeat), 3)
    if echo:
        echo(f"socket alone, {n} in-order segments + reads ({profile}, {device}):")
        echo(f"  python  {row['python_us_per_segment']:9.3f} us/segment")
    if not native_available():
        row["native_us_per_segment"] = None
        if echo:
            echo("  native  native socket not built yet")
        return row
    try:
        native = time_engine("native", n, profile, device, repeat)
    except EngineError as exc:          # pragma: no cover - raced with a rebuild
        row["native_us_per_segment"] = None
        if echo:
            echo(f"  native  {exc}")
        return row
    row["native_us_per_segment"] = round(native, 3)
    row["python_over_native"] = round(row["python_us_per_segment"] / native, 1) if native else None
    if echo:
        echo(f"  native  {native:9.3f} us/segment   python/native {row['python_over_native']}x")
    from tcpsim import _native
    if not hasattr(_native, "bench_in_order"):    # an extension built before native/src/bench.rs
        row["rust_loop_us_per_segment"] = None
        return row
    # ten times the segments: the loop is fast, and a short one is mostly timer noise
    rust = time_rust_loop(10 * n, profile, device, repeat)
    row["rust_loop_us_per_segment"] = round(rust, 3)
    if echo:
        echo(f"  rust    {rust:9.3f} us/segment   (native socket, Rust-only loop)")
    return row
