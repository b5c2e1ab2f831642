"""Your host's application timing: measure it, or build it from a capture run, as a preset.

    tcpsim timing measure NAME [--seconds 60] [--period 1ms]
    tcpsim timing fit NAME RUN_DIR [RUN_DIR ...]
    tcpsim timing list

A timing preset (tcpsim.app_latency.HOSTS, `[timing] host = "NAME"`, `--timing NAME`) is the
wakeup lateness of a periodic writer and a periodic reader in wakeup order, which the model
replays in blocks (tcpsim.app_latency.BlockSequence). The shipped ones were captured on the
development VM; the outcome of a slow-reader workload moves by an order of magnitude between a
loaded and a quiet host (docs/app-latency.md), so a user measures their own:

* `measure` (no root): two processes at once -- a periodic writer and a periodic reader as
  tcpsim's capture applications are (an absolute grid of `period`, CLOCK_MONOTONIC, sleep to
  the next tick, then send()/recv() on a connected socket pair) -- log how late each tick
  ran (the ticks they slept into, tcpsim.capture.wakeups.timer_lateness), kept as stretches
  of STRETCH wakeups that a run's seed picks among; then a third measures a blocking
  reader's wakeup (recv() return minus the peer's send(), a byte at a time, kept in the
  preset's provenance: the model's blocking reader draws from the shipped table);
* `fit`: the same sequences from the application logs of `tcpsim capture` runs kept with
  their raw folders (`<side>_events.csv`), one sequence per run.

The preset is a file app_latency_blocks-NAME.json.gz (the document scripts/app_latency_blocks.py --json writes, read by app_latency.load_blocks like a shipped preset) in the
user's timing folder (TCPSIM_TIMING_DIR, default ~/.local/share/tcpsim/timing), found by
tcpsim.app_latency.user_hosts() at start-up. What it cannot know: the production host's load
at the time that mattered -- it measures this machine, now, under whatever else runs.
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
import platform
import socket
import time
from multiprocessing import get_context
from pathlib import Path
from typing import Any

BLOCK = 5000                   # wakeups per replayed block (the shipped presets')
UNIT_NS = 1000                 # sequences stored in microseconds
MIN_WAKEUPS = 1000
STRETCH = 2 * BLOCK            # a measurement is kept as stretches of this many wakeups
BLOCKING_S = 5.0               # the blocking reader's measurement (after the periodic pair)


class TimingError(ValueError):
    """A bad name, folder or run: one line naming it and the fix."""


def timing_dir() -> Path:
    """Where user presets live."""
    env = os.environ.get("TCPSIM_TIMING_DIR")
    return Path(env) if env else Path.home() / ".local" / "share" / "tcpsim" / "timing"


def preset_path(name: str, folder: Path | None = None) -> Path:
    return (folder or timing_dir()) / f"app_latency_blocks-{name}.json.gz"


def check_name(name: str) -> str:
    from tcpsim.app_latency import EXACT
    ok = name and all(c.isalnum() or c in "-_." for c in name) and name != EXACT
    if not ok or name.startswith("dev-vm-"):
        raise TimingError(f"timing preset name {name!r}: use letters, digits, '-', '_' or '.', "
                          "not 'exact' nor a shipped preset's dev-vm-* name")
    return name


# -- measuring -----------------------------------------------------------------------------------

def _periodic(kind: str, seconds: float, period_ns: int, fd: int, q: Any) -> None:
    """A periodic application on an absolute grid: sleep to each tick, then send() or recv()
    (non-blocking); log (t_call, 'wake', t_due) as tcpsim.capture.apps does."""
    sock = socket.socket(fileno=fd)
    sock.setblocking(False)
    events: list[tuple[int, str, int]] = []
    start = time.monotonic_ns()
    due = start + period_ns
    end = start + int(seconds * 1e9)
    buf = b"x" * 64
    while due < end:
        now = time.monotonic_ns()
        if due > now:
            time.sleep((due - now) / 1e9)
        t = time.monotonic_ns()
        events.append((t, "wake", due))
        try:
            if kind == "writer":
                sock.send(buf)
            else:
                sock.recv(4096)
        except (BlockingIOError, OSError):
            pass
        events.append((time.monotonic_ns(), "done", 0))
        due += period_ns
        while due < time.monotonic_ns() - period_ns:      # keep the grid, as the apps do
            due += period_ns
    from tcpsim.capture.wakeups import timer_lateness
    q.put((kind, timer_lateness(events)))


def _blocking(seconds: float, q: Any) -> None:
    """recv() wakeup: a peer sends one byte every ~2 ms; the reader blocks in recv()."""
    a, b = socket.socketpair()
    out: list[int] = []
    end = time.monotonic() + seconds
    import threading
    sent: list[int] = []

    def peer() -> None:
        while time.monotonic() < end:
            time.sleep(0.002)
            sent.append(time.monotonic_ns())
            a.send(b"x")
        a.close()

    th = threading.Thread(target=peer, daemon=True)
    th.start()
    while True:
        data = b.recv(1)
        t = time.monotonic_ns()
        if not data:
            break
        if sent:
            out.append(t - sent[-1])
    th.join()
    q.put(("blocking", out))


def measure(name: str, seconds: float = 60.0, period_ns: int = 1_000_000,
            folder: Path | None = None) -> Path:
    """Measure this host and write the preset NAME; returns its path.

    The periodic writer and reader run together (as a workload's do), alone: the blocking
    reader's measurement (provenance only) comes after them, so its wakeups every 2 ms do
    not compete with theirs. The sequences are kept as stretches of STRETCH wakeups, each a
    "capture" of the preset: a run picks one stretch by its seed and starts its first block
    there (tcpsim.app_latency.pick_capture) -- so the seeds of a reproducer sample the whole
    measurement, not only its first seconds, which decided every seed's outcome when the
    preset was one sequence (the reproducer's first zero window comes within the first
    block: docs/app-latency.md, "Your own host")."""
    check_name(name)
    if seconds * 1e9 / period_ns < MIN_WAKEUPS:
        raise TimingError(f"--seconds {seconds:g} at a {period_ns / 1e6:g} ms period gives fewer "
                          f"than {MIN_WAKEUPS} wakeups; measure longer")
    ctx = get_context("fork")          # the children inherit the socket pair
    q = ctx.Queue()
    w, r = socket.socketpair()
    procs = [ctx.Process(target=_periodic, args=("writer", seconds, period_ns, w.fileno(), q)),
             ctx.Process(target=_periodic, args=("reader", seconds, period_ns, r.fileno(), q))]
    load0 = os.getloadavg()
    for p in procs:
        p.start()
    got = dict(q.get(timeout=seconds + 60) for _ in procs)
    for p in procs:
        p.join(timeout=10)
    w.close()
    r.close()
    load1 = os.getloadavg()
    blocking_s = min(BLOCKING_S, seconds)
    b = ctx.Process(target=_blocking, args=(blocking_s, q))
    b.start()
    got.update([q.get(timeout=blocking_s + 60)])
    b.join(timeout=10)
    n = min(len(got["writer"]), len(got["reader"]))
    cuts = [i * STRETCH for i in range(max(1, n // STRETCH))] + [n]
    parts = {k: [got[role][a:b] for a, b in zip(cuts, cuts[1:])]
             for k, role in (("periodic_writer", "writer"), ("periodic_reader", "reader"))}
    method = (f"tcpsim timing measure: a periodic writer and reader (Python processes, an "
              f"absolute {period_ns / 1e6:g} ms grid, sleep then send()/recv() on a socket "
              f"pair) for {seconds:g} s at once, nothing else of the measurement running; "
              "lateness = CLOCK_MONOTONIC after the sleep minus the tick's due time, ticks "
              f"slept into only; kept as stretches of {STRETCH} wakeups (one 'capture' each); a "
              f"blocking reader's recv() wakeup after its peer's send() for {blocking_s:g} s "
              "after them (provenance only)")
    captures = [{"run": "timing measure", "stretch": i, "wakeups": [a, b], "seconds": seconds,
                 "period_ns": period_ns} for i, (a, b) in enumerate(zip(cuts, cuts[1:]))]
    captures[0].update({"loadavg": {"start": list(load0), "end": list(load1)},
                        "blocking_reader": _describe(got["blocking"])})
    first = {k: v[0] for k, v in parts.items()}
    more = {k: v[1:] for k, v in parts.items()}
    return write_preset(name, first, captures, method, folder, more)


def _describe(values: list[int]) -> dict[str, Any]:
    from tcpsim.capture.wakeups import describe
    return describe(values) if values else {"n": 0}


def write_preset(name: str, seqs: dict[str, list[int]], captures: list[dict[str, Any]],
                 method: str, folder: Path | None = None,
                 more: dict[str, list[list[int]]] | None = None) -> Path:
    """The preset file in the JSON format load_blocks reads (tcpsim.app_latency.load_blocks)."""
    from tcpsim.capture.wakeups import burstiness
    sequences: dict[str, list[list[int]]] = {k: [] for k in seqs}
    for k, v in seqs.items():
        sequences[k].append([(x + UNIT_NS // 2) // UNIT_NS for x in v])
    for k, extra in (more or {}).items():
        sequences.setdefault(k, []).extend([(x + UNIT_NS // 2) // UNIT_NS for x in s] for s in extra)
    short = min(len(s) for v in sequences.values() for s in v)
    if short < MIN_WAKEUPS:
        raise TimingError(f"only {short} wakeups in a sequence: at least {MIN_WAKEUPS} are needed")
    raw = {k: [v, *(more or {}).get(k, [])] for k, v in seqs.items()}
    for i, c in enumerate(captures):          # each capture's own sequences' burstiness
        for k, per in raw.items():
            if k not in c and i < len(per) and len(per[i]) >= 2000:
                c[k] = burstiness(per[i])
    doc = {"about": f"Application wakeup lateness of host preset {name!r}, in wakeup order; "
                    "drawn by tcpsim.app_latency.BlockSequence",
           "machine": {"release": platform.release(), "cpus": os.cpu_count(),
                       "node": platform.node()},
           "made": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "method": method, "unit_ns": UNIT_NS, "block_wakeups": min(BLOCK, short),
           "captures": captures, "sequences": sequences}
    path = preset_path(name, folder)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(json.dumps(doc).encode(), mtime=0))
    return path


# -- from capture runs ---------------------------------------------------------------------------

SIDES = (("sender", "writer"), ("receiver", "reader"))


def fit(name: str, runs: list[Path], folder: Path | None = None) -> Path:
    """A preset from kept `tcpsim capture` runs (raw folders holding meta.json and the
    endpoints' `<side>_events.csv`): each run's periodic writer and reader lateness."""
    from tcpsim.capture.wakeups import read_events, timer_lateness
    check_name(name)
    raws: list[Path] = []
    for r in runs:
        r = Path(r)
        if (r / "meta.json").is_file():
            raws.append(r)
        else:
            raws += sorted(p for p in r.glob("**/*.raw") if (p / "meta.json").is_file())
    if not raws:
        raise TimingError(f"{', '.join(map(str, runs))}: no capture run folder (a '<name>.raw' "
                          "with meta.json and <side>_events.csv; keep them with tcpsim capture)")
    got: dict[str, list[list[int]]] = {}
    captures = []
    for raw in raws:
        meta = json.loads((raw / "meta.json").read_text())
        sc = meta.get("scenario") or {}
        seqs = {}
        for side, role in SIDES:
            if (sc.get(role) or {}).get("kind") == "periodic":
                seqs[f"periodic_{role}"] = timer_lateness(read_events(raw / f"{side}_events.csv"))
        if set(seqs) != {"periodic_writer", "periodic_reader"} or min(map(len, seqs.values())) < MIN_WAKEUPS:
            continue
        captures.append({"run": str(raw), "profile": meta.get("profile", ""),
                         "loadavg": (meta.get("summary") or {}).get("loadavg")})
        for k, v in seqs.items():
            got.setdefault(k, []).append(v)
    if not got:
        raise TimingError(f"no run in {', '.join(map(str, runs))} has a periodic writer and a "
                          f"periodic reader with {MIN_WAKEUPS}+ wakeups each (the preset holds both)")
    first = {k: v[0] for k, v in got.items()}
    more = {k: v[1:] for k, v in got.items()}
    return write_preset(name, first, captures, "tcpsim timing fit: the periodic writer's and "
                        "reader's timer lateness from tcpsim capture runs' application logs "
                        "(tcpsim.capture.wakeups.timer_lateness), one sequence per run",
                        folder, more)


def summary(path: Path) -> dict[str, Any]:
    """What a preset file holds, for `timing list` / after `measure`."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    out: dict[str, Any] = {"file": str(path), "made": doc.get("made"),
                           "machine": doc.get("machine")}
    unit = doc["unit_ns"]
    for k, seqs in doc["sequences"].items():
        allv = sorted(x * unit for s in seqs for x in s)
        n = len(allv)
        out[k] = {"wakeups": n, "p50_us": allv[n // 2] / 1e3, "p99_us": allv[int(n * 0.99)] / 1e3,
                  "late_2ms_per_1000": 1000 * sum(1 for x in allv if x > 2_000_000) / max(1, n)}
    return out
