"""Replay a recorded trace's workload in the simulator.

What is taken from the trace:

* the scenario from its metadata (sysctls as read back on the real receiver, not the file's);
* the link: each direction's configured delay plus the delay program's median lateness
  (`summary.delay`), so a 0.5 ms delay that really took 0.66 ms is replayed as 0.66 ms;
* the kernel's tick: CONFIG_HZ as the capture recorded it (`kernel_hz` in the metadata, or
  `hz` in the fixture folder's manifest.json; see capture_hz()), so the delayed-ACK and
  retransmission timers run on the same jiffies as the captured kernel's;
* the ingress device: `veth` when a router namespace forwards the traffic (delay, rate or
  loss: the receiver's skbs are private), `veth-direct` for a bare veth pair;
* the applications' clocks: a periodic writer ticks at the times of the trace's `write` rows
  (blocked ticks included); a bulk writer writes a fresh chunk at the time of each logged
  write (its send() returns; the capture logs no failed ones), the first one moved back to
  when its data started to leave (`bulk_write_ticks`); a periodic/oscillating reader at the times of its `read` rows
  plus the grid slots no logged read took (the capture logs only reads that found data; see
  `reader_ticks`); a fast reader at its logged reads (the real one is a process that takes
  its time to wake up, the model's would read the instant data arrives). At each tick the
  scenario's application logic runs against the *model's* socket -- a writer continues a
  partial write, a reader asks for its `bytes` (fast: its cap) -- so the model is driven by
  the real timing, not by the kernel's results. A bulk writer without write rows is the
  model's own, started at the trace's start (it writes whenever the socket has room).

Time: the model's connect() is at 0. The trace is aligned on the SYN seen on the receiver's
wire (client receiver: the SYN it sent; server receiver: the SYN it got, `delay_ab` after it
left), so `model time = trace time + shift`.

Uses only the public pieces of tcpsim.engine.simulation.Simulation: it builds one, replaces
its `writer` / `reader` with the replay applications below and runs it. On the native
engine (the default where built) the same applications are native/src/engine/replay.rs,
given the plan's ticks; both engines give the same trace and scores.
"""

from __future__ import annotations

import bisect
import re
import statistics
from dataclasses import dataclass, field, replace
from typing import Any

from tcpsim import interrupt
from tcpsim.validate.trace import TraceView
from tcpsim.core.sysctl import short_name
from tcpsim.engine.scheduler import READER, WRITER
from tcpsim.engine.simulation import Connection, RunResult, Simulation
from tcpsim.catalog import builtin_profiles, get_profile
from tcpsim.scenario import Link, Scenario, ScenarioError, scenario_from_dict
from tcpsim.trace.recorder import MemoryRecorder
from tcpsim.workload import READER_KINDS, WRITER_KINDS, App

DEFAULT_PROFILE = "linux-6.18"
# the kinds (tcpsim.workload) whose ticks the replay takes from the trace's rows: every
# writer; every reader that reads (a `never` reader has no reads to replay)
CLOCKED_WRITERS = tuple(WRITER_KINDS)
CLOCKED_READERS = tuple(k for k in READER_KINDS if k != "never")


class ReplayError(ValueError):
    """A trace that cannot be replayed (no scenario, no handshake, ...), with what to fix."""


@dataclass
class ReplayPlan:
    """Everything a replay needs, decided from the trace before anything runs."""

    scenario: Scenario
    profile: str
    policies: tuple[str, ...]
    shift_ns: int                     # model time = trace time + shift_ns
    end_ns: int                       # end of the comparison, trace axis
    write_ticks: list[tuple[int, int]] | None    # (model time, bytes the kernel accepted)
    read_ticks: list[tuple[int, int, int]] | None  # (model time, bytes asked, kernel got or -1)
    link: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    hz: dict[str, Any] = field(default_factory=dict)   # {"hz": 250 or None, "source": "..."}
    schedule: bool = False            # write_ticks are byte counts to write as given (ScheduleWriter)
    read_owns: int = 0                # ns each read_ticks recv() that moved data holds the socket


@dataclass
class ReplayResult:
    """The model's run: summary, counters, its trace, and how the app replay went."""

    plan: ReplayPlan
    result: RunResult
    columns: dict[str, list]
    write_ticks: int = 0
    write_size_mismatch: int = 0      # ticks where the model accepted other bytes than the kernel
    read_ticks: int = 0
    read_size_mismatch: int = 0


# -- the plan -----------------------------------------------------------------------------------

def matching_profile(kernel_profile: str) -> tuple[str, str]:
    """The built-in profile for a captured kernel release ('linux-6.18.44-x' -> 'linux-6.18'),
    and a note when it is only the nearest older one."""
    names = list(builtin_profiles())
    m = re.match(r"linux-(\d+)\.(\d+)", kernel_profile or "")
    if not m:
        return DEFAULT_PROFILE, f"profile {kernel_profile!r} unknown: replayed under {DEFAULT_PROFILE}"
    want = (int(m.group(1)), int(m.group(2)))
    exact = f"linux-{want[0]}.{want[1]}"
    if exact in names:
        return exact, ""
    older = []
    for n in names:
        mm = re.fullmatch(r"linux-(\d+)\.(\d+)", n)
        if mm and (int(mm.group(1)), int(mm.group(2))) <= want:
            older.append(((int(mm.group(1)), int(mm.group(2))), n))
    if older:
        best = max(older)[1]
        return best, f"no profile for {exact}: replayed under {best}, the nearest older one"
    return DEFAULT_PROFILE, f"no profile for {exact}: replayed under {DEFAULT_PROFILE}"


def replay_sysctls(sysctls: dict[str, Any], known: frozenset[str]) -> tuple[dict[str, Any], list[str]]:
    """The captured receiver sysctls (strings as read back) as model overrides."""
    out: dict[str, Any] = {}
    skipped = []
    for name, value in (sysctls or {}).items():
        short = short_name(name)
        text = " ".join(str(value).split()) if not isinstance(value, (list, tuple)) else value
        if text in ("", None):
            continue
        if short not in known:
            skipped.append(name)
            continue
        if short in ("tcp_rmem", "tcp_wmem", "tcp_mem"):
            out[name] = [int(x) for x in (text.split() if isinstance(text, str) else text)]
        else:
            try:
                out[name] = int(text)
            except (TypeError, ValueError):
                skipped.append(name)
    return out, skipped


def measured_link(link: Link, summary: dict[str, Any]) -> tuple[Link, dict[str, Any]]:
    """The link with each delayed direction's median NFQUEUE lateness added."""
    delay = (summary or {}).get("delay") or {}
    info: dict[str, Any] = {"configured_ab_ns": link.delay_ab, "configured_ba_ns": link.delay_ba}
    ab, ba = link.delay_ab, link.delay_ba
    for key, name in (("delay.json", "ab"), ("delay.ba.json", "ba")):
        lat = ((delay.get(key) or {}).get("lateness_ns") or {}).get("p50")
        if lat is not None and lat >= 0:
            info[f"lateness_p50_{name}_ns"] = int(lat)
            if name == "ab" and ab > 0:
                ab += int(lat)
            elif name == "ba" and ba > 0:
                ba += int(lat)
    info.update({"delay_ab_ns": ab, "delay_ba_ns": ba})
    return replace(link, delay_ab=ab, delay_ba=ba), info


def capture_hz(meta: dict[str, Any], manifest: dict[str, Any] | None = None) -> tuple[int | None, str]:
    """The capturing kernel's CONFIG_HZ and where it came from: the trace's metadata
    (`kernel_hz`, written by tcpsim capture since it records it), else the fixture folder's
    manifest.json (`hz`, for captures made before), else (None, why not)."""
    if "kernel_hz" in meta:
        hz = meta.get("kernel_hz")
        src = str(meta.get("kernel_hz_source") or "trace metadata")
        if hz:
            return int(hz), f"trace metadata ({src})"
        return None, f"the capture could not read its kernel's HZ ({src})"
    if manifest and manifest.get("hz"):
        return int(manifest["hz"]), "manifest.json"        # its hz_source says where from
    return None, "the trace does not record its kernel's HZ"


def plan(v: TraceView, profile: str | None = None, policies: tuple[str, ...] = (),
         until_ns: int | None = None, hz: int | None = None,
         hz_source: str = "") -> ReplayPlan:
    """Decide the replay of a trace: scenario, profile, link, time shift, app ticks.
    `hz`: the capturing kernel's CONFIG_HZ (capture_hz()), or None to replay on tcpsim's
    default clock."""
    meta = v.meta
    if v.source == "tcpsim":
        raise ReplayError("this is a simulated trace (source 'tcpsim'): validate holds the model "
                          "to real-kernel captures; compare simulated runs with tcpsim compare")
    raw = meta.get("scenario")
    if not isinstance(raw, dict) or not raw:
        raise ReplayError("trace metadata has no 'scenario': only captures (tcpsim.capture) and "
                          "imports given --scenario can be replayed")
    # The applications are the capture's: replayed at their logged times, or (no log rows)
    # the model's own on exact timing -- never the default timing's draws on top.
    raw = {**{k: val for k, val in raw.items() if k != "profile"}, "timing": {"host": "exact"}}
    try:
        sc = scenario_from_dict(raw)
    except ScenarioError as exc:
        raise ReplayError(f"trace metadata 'scenario': {exc}") from None
    notes: list[str] = []
    if profile is None:
        profile, note = matching_profile(str(meta.get("profile", "")))
        if note:
            notes.append(note)
    known = get_profile(profile, policies).known_sysctls()
    sysctls, skipped = replay_sysctls(meta.get("sysctls") or {}, known)
    if skipped:
        notes.append(f"sysctls not modelled on {profile}: {', '.join(sorted(skipped))}")
    summary = meta.get("summary") or {}
    link, link_info = measured_link(sc.link, summary)
    routed = link.delay_ab > 0 or link.delay_ba > 0 or link.rate_bps > 0 or link.loss > 0
    device = "veth" if routed else "veth-direct"
    if v.syn_t is None:
        raise ReplayError("trace has no SYN on the receiver's wire: cannot align it in time "
                          "(capture with tcpdump, or import a trace that starts at the handshake)")
    shift = -v.syn_t + (link.delay_ab if sc.receiver_role == "server" else 0)
    end = int(float(summary.get("duration_s", 0)) * 1e9) or v.end_ns
    if until_ns is not None:
        end = min(end, until_ns)
    write_ticks = read_ticks = None
    writer, reader = sc.writer, sc.reader
    writes = [w for w in v.writes if w[0] <= end]
    if writer.kind == "bulk" and writes:
        first_tx = v.data_t[0] - link.delay_ab if v.data_t else None
        write_ticks = bulk_write_ticks(writes, first_tx, shift)
    elif writer.kind in CLOCKED_WRITERS and writes:
        write_ticks = [(t + shift, -1 if blocked else n) for t, n, blocked in writes]
    else:
        # the model's own writer, started when the real one started (the capture's apps
        # start at its t0 = 0 on the trace axis)
        writer = replace(writer, start=max(0, (writes[0][0] if writes else 0) + shift))
        if writer.kind in CLOCKED_WRITERS:
            notes.append(f"no write rows in the trace: the model's {writer.kind} writer runs on its own clock")
    if reader.kind in CLOCKED_READERS and v.reads:
        reads, lag = recv_times(v)
        if lag:
            notes.append(f"reads replayed when recv() ran: the ACKs reads sent precede their log "
                         f"rows by {lag / 1e3:.0f} us (median)")
        read_ticks = reader_ticks(reads, reader, end, shift)
    else:
        # the reader's own start (the import's inferred read grid) is on the trace's axis
        reader = replace(reader, start=max(0, shift + reader.start))
        if reader.kind in CLOCKED_READERS:
            notes.append("no read rows in the trace: the model's reader runs on its own grid")
    if hz is None:
        notes.append(f"{hz_source or 'no kernel HZ given'}: replayed on tcpsim's default clock "
                     "(1 ms jiffies, exact timers); pass --hz to replay a kernel tick")
    sc = sc.with_(profile=profile, policies=tuple(policies), device=device, link=link,
                  sysctl={**sc.sysctl, **sysctls}, writer=writer, reader=reader,
                  duration=max(1, end + shift), hz=hz or 0)
    return ReplayPlan(sc, profile, tuple(policies), shift, end, write_ticks, read_ticks,
                      link_info, notes, {"hz": hz, "source": hz_source})


def bulk_write_ticks(writes: list[tuple[int, int, bool]], first_tx: int | None,
                     shift: int) -> list[tuple[int, int]]:
    """A bulk writer's ticks on the model axis: (time, bytes the kernel accepted).

    The capture logs a bulk write when send() returns, and a large send() pushes its data out
    while it runs (tcp_push from inside tcp_sendmsg): the first write's data can reach the
    wire long before its row (2.6 ms in seed-rcvbuf32k-fill). That write is replayed when its
    data started to leave -- the first data segment seen at the receiver less the one-way
    delay -- when that is earlier than its row; the others at their rows. What matters is that
    the model's writer is still writing when the kernel's was: each write pushes the queue
    (tcp_push -> tcp_write_xmit), which is what sends an skb tcp_tso_should_defer() held back
    once 1 ms has passed since the last transmission."""
    ticks = [(t + shift, n) for t, n, _ in writes]
    if first_tx is not None and first_tx < writes[0][0]:
        ticks[0] = (first_tx + shift, ticks[0][1])
    return ticks


READ_ACK_NS = 1_000_000      # an ACK at most this long before a read row may be that read's
DATA_QUIET_NS = 200_000      # ... if no data segment arrived from this long before it on
MIN_READ_ACKS = 20           # fewer such pairs: no lag estimate, reads stay at their rows


def recv_times(v: TraceView) -> tuple[list[tuple[int, int]], int]:
    """When the logged reads really ran: ([(t, bytes)], median lag in ns).

    The capture's apps log a read after recv() returns (tcpsim.capture.apps: monotonic_ns()
    after sock.recv), and Python takes its time: a read that sent an ACK (tcp_recvmsg ->
    tcp_cleanup_rbuf, the window update a slow reader's ACKs are) shows that ACK on the
    receiver's wire 60-500 us before its row (median 108 us in seed-oscillating-reader,
    158 us in seed-unbounded-growth-shrink0). Replayed at its row, the model's read comes
    that much late, and a burst of segments that arrived in between lands before the ACK
    instead of after it, moving the right edge (docs/validation.md). A read whose ACK is
    identified -- the receiver's last ACK before the row, no other read and no data segment
    between (nor in the DATA_QUIET_NS before it, so the ACK is not a data segment's own) --
    is replayed at that ACK; every other read at its row less the median of those lags."""
    reads = v.reads
    ack_t = [a.t_ns for a in v.acks]
    data_t = v.data_t
    read_t = [t for t, _ in reads]
    found: dict[int, int] = {}
    for i, t in enumerate(read_t):
        j = bisect.bisect_left(ack_t, t) - 1
        if j < 0 or t - ack_t[j] > READ_ACK_NS:
            continue
        a = ack_t[j]
        k = bisect.bisect_left(data_t, a - DATA_QUIET_NS)
        if k < len(data_t) and data_t[k] < t:
            continue
        if bisect.bisect_left(read_t, a) != i:
            continue
        found[i] = a
    if len(found) < MIN_READ_ACKS:
        return list(reads), 0
    lag = int(statistics.median(t - found[i] for i, t in enumerate(read_t) if i in found))
    out: list[tuple[int, int]] = []
    prev = None
    for i, (t, n) in enumerate(reads):
        r = found.get(i, t - lag)
        if prev is not None and r <= prev:
            r = prev + 1
        out.append((r, n))
        prev = r
    return out, lag


def reader_ticks(reads: list[tuple[int, int]], app: App, end: int, shift: int) -> list[tuple[int, int, int]]:
    """The reader's ticks on the model axis: (time, bytes asked, bytes the kernel read or -1).

    A periodic reader ticks on an absolute grid (tcpsim.capture.apps) and logs only the ticks
    that found data. The grid's phase is taken from the least-late logged read; each logged
    read takes the next free grid slot (a late tick still occupies its own slot), and slots
    no read took are ticks that found nothing -- the model ticks there too, at the grid time.
    A fast, blocking or relay reader ticks exactly at its logged reads (it reads whenever
    woken)."""
    logged = [(t, n) for t, n in reads if t <= end]
    return READ_TICKS[app.kind](logged, app, end, shift)


def _fast_ticks(logged: list[tuple[int, int]], app: App, end: int,
                shift: int) -> list[tuple[int, int, int]]:
    cap = app.bytes or (1 << 20)
    return [(t + shift, cap, n) for t, n in logged]


def _logged_ticks(logged: list[tuple[int, int]], app: App, end: int,
                  shift: int) -> list[tuple[int, int, int]]:
    return [(t + shift, n, n) for t, n in logged]


def _grid_ticks(logged: list[tuple[int, int]], app: App, end: int,
                shift: int) -> list[tuple[int, int, int]]:
    """A periodic (or oscillating) reader's grid: see reader_ticks()."""
    every = app.every if app.kind == "periodic" or app.every == app.every2 else 0
    if not every:
        return _gap_ticks(logged, app, end, shift)
    if not logged:
        return [(k + shift, _bytes_at(app, k), -1) for k in range(0, end + 1, every)]
    cand = logged[0][0] % every
    phase = cand + min((t - cand) % every for t, _ in logged)
    out: list[tuple[int, int, int]] = []
    slot = -(-(0 - phase) // every) - 1          # the last slot before time 0
    for t, n in logged:
        s = max(slot + 1, (t - phase) // every)
        for k in range(slot + 1, s):
            g = phase + k * every
            out.append((g + shift, _bytes_at(app, g), -1))
        out.append((t + shift, _bytes_at(app, phase + s * every), n))
        slot = s
    k = slot + 1
    while phase + k * every <= end:
        g = phase + k * every
        out.append((g + shift, _bytes_at(app, g), -1))
        k += 1
    return out


def _gap_ticks(logged: list[tuple[int, int]], app: App, end: int, shift: int) -> list[tuple[int, int, int]]:
    """Ticks for a reader whose period changes (oscillating with two periods): logged reads,
    plus grid ticks in gaps of two periods or more."""
    out: list[tuple[int, int, int]] = []
    prev = 0
    for t, n in logged + [(end + 1, -2)]:
        k = prev + _period_at(app, prev)
        while t - k >= _period_at(app, k):
            out.append((k + shift, _bytes_at(app, k), -1))
            k += _period_at(app, k)
        if n != -2:
            out.append((t + shift, _bytes_at(app, t), n))
            prev = t
    return out


# how each reader kind's ticks are taken from the trace (every kind in CLOCKED_READERS)
READ_TICKS = {"fast": _fast_ticks, "blocking": _fast_ticks, "relay": _fast_ticks,
              "oscil": _logged_ticks, "periodic": _grid_ticks, "oscillating": _grid_ticks}


def _period_at(app: App, t: int) -> int:
    return app.rate_at(t)[1]


def _bytes_at(app: App, t: int) -> int:
    return app.rate_at(t)[0]


# -- the replay applications --------------------------------------------------------------------

class ReplayWriter:
    """The scenario's writer, ticking at the trace's write times against the model's socket:
    a periodic writer's tick continues the write in progress (or starts a new one of
    `bytes`); a bulk writer's tick is a fresh send() of `bytes` (the real one offers its whole
    buffer each time and keeps no partial write)."""

    def __init__(self, sim: Connection, n: int, ticks: list[tuple[int, int]],
                 bulk: bool = False) -> None:
        self.sim, self.n, self.ticks, self.bulk = sim, n, ticks, bulk
        self.i = 0
        self.pending = 0
        self.blocked = False          # never sleeps: the trace says when to tick
        self.written = 0
        self.size_mismatch = 0

    def begin(self) -> None:
        self._next()

    def _next(self) -> None:
        if self.i < len(self.ticks):
            self.sim.sched.at(max(self.ticks[self.i][0], self.sim.sched.now), WRITER, self.tick)

    def tick(self) -> None:
        sim = self.sim
        sk = sim.snd
        kernel_n = self.ticks[self.i][1]
        self.i += 1
        if not sk.error:
            if self.pending == 0 or self.bulk:
                self.pending = self.n
            w = sk.write(sim.sched.now, self.pending)
            self.pending -= w
            self.written += w
            if w != max(0, kernel_n):
                self.size_mismatch += 1
            sim.after(sk)
        self._next()

    def on_writable(self, now: int) -> None:
        return None


class ScheduleWriter(ReplayWriter):
    """Writes given byte counts at given times (model axis) into the model's sender; what the
    socket cannot take waits and goes in when it has room (the Simulation's on_writable).
    `tcpsim replay FILE.pcap` (tcpsim/pcap/replay.py): the bytes that first appeared on the
    wire, each when it left the sender. ReplayWriter's clock, its own tick."""

    def __init__(self, sim: Connection, ticks: list[tuple[int, int]], owns: int = 0) -> None:
        super().__init__(sim, 0, ticks)
        self.size_mismatch = 0          # ticks whose bytes the socket did not take at once
        self.owns = owns                # ns a send() that moved data holds the socket

    def tick(self) -> None:
        self.pending += self.ticks[self.i][1]
        self.i += 1
        self._flush()
        if self.pending:
            self.size_mismatch += 1
        self._next()

    def _flush(self) -> None:
        sim = self.sim
        sk = sim.snd
        if sk.error or not self.pending:
            return
        w = sk.write(sim.sched.now, self.pending)
        if w and self.owns:
            sk.hold(sim.sched.now, self.owns)
        self.pending -= w
        self.written += w
        self.blocked = self.pending > 0
        if w:
            sim.after(sk)

    def on_writable(self, now: int) -> None:
        self._flush()


class ReplayReader:
    """The scenario's periodic (or oscillating) reader, ticking at the trace's read times
    (`tcpsim replay FILE.pcap`: at the times the capture's read-drawn ACKs date, see
    tcpsim.pcap.readtimes). `owns`: ns a recv() that moved data holds the socket
    (App.owns_socket, as the scenario's reader: tcpsim.engine.apps.Reader._read)."""

    def __init__(self, sim: Connection, ticks: list[tuple[int, int, int]], owns: int = 0) -> None:
        self.sim, self.ticks = sim, ticks
        self.owns = owns
        self.i = 0
        self.read_bytes = 0
        self.size_mismatch = 0
        self.phases = iter(())

    def begin(self) -> None:
        self._next()

    def _next(self) -> None:
        if self.i < len(self.ticks):
            self.sim.sched.at(max(self.ticks[self.i][0], self.sim.sched.now), READER, self.tick)

    def tick(self) -> None:
        sim = self.sim
        _, ask, kernel_got = self.ticks[self.i]
        self.i += 1
        got = 0
        if not sim.rcv.error:
            got = sim.rcv.read(sim.sched.now, ask)
            if got:
                if self.owns:
                    sim.rcv.hold(sim.sched.now, self.owns)
                self.read_bytes += got
                sim.after(sim.rcv)
        if got != max(0, kernel_got):
            self.size_mismatch += 1
        self._next()

    # the Simulation's reader hooks: nothing to do, every tick is an event of its own
    def on_readable(self, now: int) -> None:
        return None

    def catch_up(self, t: int) -> None:
        return None

    def replan(self) -> None:
        return None


# -- running ------------------------------------------------------------------------------------

def run_plan(p: ReplayPlan, engine: str | None = None,
             sink: MemoryRecorder | None = None) -> ReplayResult:
    """Run the model on a plan; returns its result and trace (model time axis). `engine`:
    "python" or "native" (default: the run's default, runner.choose_engine); `sink`: the
    recorder of the receiver's rows (default: every row in memory)."""
    from tcpsim.runner import choose_engine
    profile = get_profile(p.profile, p.policies)
    sink = sink if sink is not None else MemoryRecorder(("rcv",))
    if choose_engine(engine, p.scenario) == "native":
        return _run_native(p, profile, sink)
    sim = Simulation(p.scenario, profile, sink=sink, skip=True)
    conn = sim.conn                     # the host's one connection: its apps are replaced
    writer = reader = None
    if p.write_ticks is not None:
        writer = _writer(conn, p)
        conn.writer = writer  # type: ignore[assignment]
    if p.read_ticks is not None:
        reader = ReplayReader(conn, p.read_ticks, p.read_owns)
        conn.reader = reader  # type: ignore[assignment]
    result = sim.run()
    interrupt.check()                 # a replay a stop cut short scores nothing
    return ReplayResult(
        p, result, sink.columns(),
        write_ticks=len(p.write_ticks or ()), write_size_mismatch=writer.size_mismatch if writer else 0,
        read_ticks=len(p.read_ticks or ()), read_size_mismatch=reader.size_mismatch if reader else 0)


def _writer(sim: Connection, p: ReplayPlan) -> ReplayWriter:
    """The plan's writer: its ticks' own byte counts (ScheduleWriter) or the scenario's."""
    assert p.write_ticks is not None
    if p.schedule:
        return ScheduleWriter(sim, p.write_ticks, p.scenario.writer.owns_socket)
    return ReplayWriter(sim, p.scenario.writer.bytes, p.write_ticks,
                        bulk=p.scenario.writer.kind == "bulk")


def _run_native(p: ReplayPlan, profile: Any, sink: MemoryRecorder) -> ReplayResult:
    """run_plan on the native engine: ReplayWriter, ScheduleWriter and ReplayReader are its
    replay applications (native/src/engine/replay.rs), given the plan's ticks."""
    from tcpsim.engine.native import NativeSimulation
    w = p.scenario.writer
    replay = {
        "writer": None if p.write_ticks is None else
        {"ticks": p.write_ticks, "n": w.bytes, "bulk": w.kind == "bulk", "schedule": p.schedule,
         "owns": w.owns_socket if p.schedule else 0},
        "reader": None if p.read_ticks is None else {"ticks": p.read_ticks, "owns": p.read_owns},
    }
    sim = NativeSimulation(p.scenario, profile, sink=sink, skip=True, replay=replay)
    result = sim.run()
    interrupt.check()
    wm, rm = sim.replay_size_mismatch
    return ReplayResult(p, result, sink.columns(),
                        write_ticks=len(p.write_ticks or ()), write_size_mismatch=wm,
                        read_ticks=len(p.read_ticks or ()), read_size_mismatch=rm)


def replay(v: TraceView, profile: str | None = None, policies: tuple[str, ...] = (),
           until_ns: int | None = None, hz: int | None = None,
           hz_source: str = "", engine: str | None = None) -> ReplayResult:
    """Plan and run the replay of a trace (on `engine`, default: the run's default)."""
    return run_plan(plan(v, profile, policies, until_ns, hz, hz_source), engine=engine)
