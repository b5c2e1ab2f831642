"""The scenario's writer and reader kinds as loops over a real socket.

Each loop runs until ``stop`` is set and appends (t_ns, kind, nbytes) to ``log``; times come
from time.monotonic_ns(). Ticks are scheduled on an absolute grid so they do not drift; a
tick that finds nothing to do (reader: nothing queued; writer: send buffer full) does nothing.

Besides the 'write'/'read' rows the loops log their wakeups, for the application-latency
calibration (docs/app-latency.md): a timer-driven loop logs (t_call, "wake", t_due) just
before its send()/recv() call (t_call - t_due is how late the process ran), and the blocking
reader logs (t_enter, "wait", 0) just before it blocks in recv().
"""

from __future__ import annotations

import select
import socket
import struct
import threading
import time
from typing import Callable

from tcpsim.workload import App

Log = list[tuple[int, str, int]]


def _sleep_until(t_ns: int, stop: threading.Event) -> bool:
    """Sleep until monotonic time ``t_ns``; False if stopped meanwhile."""
    while not stop.is_set():
        left = t_ns - time.monotonic_ns()
        if left <= 0:
            return True
        time.sleep(min(left / 1e9, 0.05))
    return False


def periodic_writer(sock: socket.socket, nbytes: int, every_ns: int, stop: threading.Event,
                    log: Log) -> None:
    """Every ``every_ns`` write ``nbytes``; a write the send buffer cannot take (wholly) is not
    dropped but continued at the next tick, and no new write starts meanwhile."""
    sock.setblocking(False)
    payload = b"a" * nbytes
    left = 0                      # bytes of the current write still to go
    t = time.monotonic_ns()
    while _sleep_until(t, stop):
        if left == 0:
            left = nbytes
        log.append((time.monotonic_ns(), "wake", t))
        try:
            n = sock.send(payload[:left])
            left -= n
            log.append((time.monotonic_ns(), "write", n))
        except BlockingIOError:
            log.append((time.monotonic_ns(), "write_blocked", 0))
        except OSError:
            return
        t += every_ns


def bulk_writer(sock: socket.socket, stop: threading.Event, log: Log, chunk: int = 65536) -> None:
    """Write ``chunk``-sized buffers whenever the send buffer has room."""
    sock.setblocking(False)
    payload = b"a" * chunk
    while not stop.is_set():
        _, w, _ = select.select([], [sock], [], 0.05)
        if not w:
            continue
        try:
            n = sock.send(payload)
            log.append((time.monotonic_ns(), "write", n))
        except BlockingIOError:
            pass
        except OSError:
            return


def never_reader(sock: socket.socket, stop: threading.Event, log: Log) -> None:
    """Never reads."""
    stop.wait()


def periodic_reader(sock: socket.socket, nbytes: int, every_ns: int, stop: threading.Event,
                    log: Log) -> None:
    """Every ``every_ns`` read up to ``nbytes`` (nothing queued: nothing read)."""
    t = time.monotonic_ns()
    while _sleep_until(t, stop) and _tick_read(sock, nbytes, t, log):
        t += every_ns


def _tick_read(sock: socket.socket, nbytes: int, tick: int, log: Log) -> bool:
    """One wake-up of a ticking reader (due at ``tick``): log it, read up to ``nbytes``
    without blocking. False once the peer has closed or the socket failed."""
    log.append((time.monotonic_ns(), "wake", tick))
    try:
        n = len(sock.recv(nbytes, socket.MSG_DONTWAIT))
    except BlockingIOError:
        return True
    except OSError:
        return False
    log.append((time.monotonic_ns(), "read", n))
    return n != 0


def fast_reader(sock: socket.socket, stop: threading.Event, log: Log, nbytes: int = 1 << 20) -> None:
    """Read everything as soon as the socket wakes us."""
    while not stop.is_set():
        r, _, _ = select.select([sock], [], [], 0.05)
        if not r:
            continue
        try:
            n = len(sock.recv(nbytes, socket.MSG_DONTWAIT))
        except BlockingIOError:
            continue
        except OSError:
            return
        log.append((time.monotonic_ns(), "read", n))
        if n == 0:
            return


def blocking_reader(sock: socket.socket, stop: threading.Event, log: Log,
                    nbytes: int = 1 << 20, poll_ns: int = 50_000_000) -> None:
    """Sleep in a blocking recv() until data is queued, take up to ``nbytes``, repeat (a
    server's read loop). SO_RCVTIMEO (``poll_ns``) only lets the loop see ``stop``; the wait
    itself is the kernel's (sk_wait_data), with no select() in between."""
    sock.setblocking(True)
    sec, usec = divmod(poll_ns // 1000, 1_000_000)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", sec, usec))
    while not stop.is_set():
        log.append((time.monotonic_ns(), "wait", 0))
        try:
            n = len(sock.recv(nbytes))
        except (BlockingIOError, TimeoutError):
            continue
        except OSError:
            return
        log.append((time.monotonic_ns(), "read", n))
        if n == 0:
            return


def oscillating_reader(sock: socket.socket, app: App, stop: threading.Event, log: Log) -> None:
    """Periodic reader alternating between (bytes every `every`) and (bytes2 every `every2`)
    every `period` (App.rate_at)."""
    start = t = time.monotonic_ns()
    while _sleep_until(t, stop):
        nbytes, every = app.rate_at(t - start)
        if not _tick_read(sock, nbytes, t, log):
            return
        t += every


def oscil_reader(sock: socket.socket, stop: threading.Event, log: Log, fast_for_ns: int = 5 * 10**9,
                 slow_for_ns: int = 15 * 10**9, fraction: float = 0.05) -> None:
    """Cloudflare's benchmark reader: fast for 5 s, then each second read `fraction` of the best
    one-second rate seen, for 15 s; repeat."""
    best = 0
    while not stop.is_set():
        end = time.monotonic_ns() + fast_for_ns
        sec_start, sec_bytes = time.monotonic_ns(), 0
        while time.monotonic_ns() < end and not stop.is_set():
            r, _, _ = select.select([sock], [], [], 0.05)
            if r:
                try:
                    n = len(sock.recv(1 << 20, socket.MSG_DONTWAIT))
                except BlockingIOError:
                    n = 0
                if n:
                    log.append((time.monotonic_ns(), "read", n))
                sec_bytes += n
            if time.monotonic_ns() - sec_start >= 10**9:
                best = max(best, sec_bytes)
                sec_start, sec_bytes = time.monotonic_ns(), 0
        per_s = max(1, int(best * fraction))
        t = time.monotonic_ns()
        end = t + slow_for_ns
        while t < end and _sleep_until(t, stop):
            left = per_s
            while left > 0:
                try:
                    n = len(sock.recv(left, socket.MSG_DONTWAIT))
                except BlockingIOError:
                    break
                if n == 0:
                    break
                left -= n
                log.append((time.monotonic_ns(), "read", n))
            t += 10**9


Loop = Callable[[socket.socket, threading.Event, Log], None]


def _no_relay() -> Loop:
    """A relay reader reads between its own end's writes: it needs a writer at the
    receiver end, which a capture (data one way, tcpsim/capture/spec.py) does not run."""
    raise ValueError('reader.kind: "relay" needs a writer at the receiver end; a capture '
                     "sends data one way -- simulate this scenario instead")

# How each kind of tcpsim.workload runs over a real socket.
READERS: dict[str, Callable[[App], Loop]] = {
    "never": lambda a: never_reader,
    "periodic": lambda a: lambda s, st, lg: periodic_reader(s, a.bytes, a.every, st, lg),
    "fast": lambda a: lambda s, st, lg: fast_reader(s, st, lg, a.bytes),
    "blocking": lambda a: lambda s, st, lg: blocking_reader(s, st, lg, a.bytes),
    "relay": lambda a: _no_relay(),
    "oscillating": lambda a: lambda s, st, lg: oscillating_reader(s, a, st, lg),
    "oscil": lambda a: lambda s, st, lg: oscil_reader(s, st, lg, a.fast_for, a.slow_for,
                                                      a.fraction),
}
WRITERS: dict[str, Callable[[App], Loop]] = {
    "periodic": lambda a: lambda s, st, lg: periodic_writer(s, a.bytes, a.every, st, lg),
    "bulk": lambda a: lambda s, st, lg: bulk_writer(s, st, lg, a.bytes),
}


def make_reader(app: App) -> Loop:
    """The reader loop of a scenario's reader (validated by tcpsim.workload.parse_app)."""
    if app.kind not in READERS:
        raise ValueError(f"reader.kind: unknown kind {app.kind!r}")
    return READERS[app.kind](app)


def make_writer(app: App) -> Loop:
    """The writer loop of a scenario's writer (validated by tcpsim.workload.parse_app)."""
    if app.kind not in WRITERS:
        raise ValueError(f"writer.kind: unknown kind {app.kind!r}")
    return WRITERS[app.kind](app)
