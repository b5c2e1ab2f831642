"""The applications of a scenario: the writer and reader kinds, their parameters and their
validation, defined once.

Three things run them, each only deciding *how*: the simulator (tcpsim/engine/apps.py), the
real-kernel capture's endpoints (tcpsim/capture/apps.py) and the replay of a capture in the
model (tcpsim/validate/replay.py). Each dispatches on `App.kind` over the kinds declared here
and has a test that it implements every one of them and nothing else.

Writer kinds:

    periodic      `bytes` every `every`; a write the send buffer cannot take is continued at
                  the next ticks before a new one starts (a blocking send() then a sleep)
    bulk          `bytes`-sized writes (default 64 KiB) whenever the send buffer has room

Reader kinds:

    never         never reads
    periodic      every `every`, reads up to `bytes` (a tick with nothing queued reads nothing)
    fast          reads everything as soon as the socket wakes it, up to `bytes` per read
                  (default 1 MiB)
    blocking      sleeps in a blocking recv() until data is queued and returns with up to
                  `bytes` (default 1 MiB), as a server's read loop does; with exact timing it
                  reads when a fast reader would, with a `latency` it wakes that late
    relay         one thread relaying both ways (ssh's forwarding loop): reads as `fast`
                  does, but not while its own end's writer is in a send() the send buffer
                  has not taken; when that send() returns it first reads what queued
                  meanwhile. Needs a writer at the same end (a two-way scenario)
    oscillating   alternates every `period` between (`bytes` every `every`) and
                  (`bytes2` every `every2`), starting with the first
    oscil         Cloudflare's benchmark reader: fast for `fast_for` (5 s), then for
                  `slow_for` (15 s) reads each second `fraction` (0.05) of the best
                  one-second amount seen so far; repeated

Every kind takes `start` (when the application begins, default at once). Writers, and the
periodic, fast and blocking readers, take

    owns_socket   how long each recv()/send() that moves data holds the socket
                  (lock_sock() .. release_sock(): "socket owned by user"; default 0, never).
                  Segments arriving meanwhile wait in the socket backlog, coalesced, and
                  are processed when the call releases the socket (tcpsim/core/backlog.py).
                  On one host (veth, loopback) the peer's answer to a read's window update
                  arrives within that call: tens of microseconds are typical (fitted by
                  `tcpsim replay --fit`).

Application timing (issue 14; docs/app-latency.md). The periodic writer, and the periodic,
fast and blocking readers also take:

    latency       how late each wakeup is: "none" or 0 (exact), the name of a
                  measured table of tcpsim/data/app_latency.json ("periodic_writer",
                  "periodic_reader", "blocking_reader": a fresh draw per wakeup), the
                  captured sequences of tcpsim/data/app_latency_blocks.bin
                  ("periodic_writer_blocks", "periodic_reader_blocks": blocks of consecutive
                  captured wakeups, bursts kept), or a fixed duration ("2ms")
    call_cost     (readers) time one recv() call takes beyond its copy (default 0)
    copy_rate     (readers) how fast recv() copies, as a rate ("2gbit"; default unlimited)

An application that gives no `latency` gets the calibrated default of its kind under the
run's host preset (`[timing] host`, default dev-vm-loaded; tcpsim.app_latency.DEFAULT_TIMING:
periodic writer and reader -> their captured sequences, blocking reader -> its table, every
other kind exact); `[timing] host = "exact"` (`--timing exact`) gives none.

A periodic application's timer due at t fires at t + a draw; the ticks that fell due while it
was late run back to back at once (no draw of their own), then it sleeps until the next due
tick. A fast or blocking reader woken by data reads at arrival + a draw; after each recv() it
is busy for call_cost + bytes / copy_rate and then reads again at once if data is queued,
else sleeps. Draws come from the application's own stream (tcpsim.engine.apps.latency_rng),
so link loss and jitter draws do not move when timing is added.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from tcpsim.core.constants import NS_PER_S
from tcpsim.errors import ScenarioError
from tcpsim.units import parse_duration, parse_rate, parse_size


@dataclass(frozen=True)
class Kind:
    """One application kind: its name, the fields it needs, the other fields it reads (a
    field it does not read is an error, not silently ignored), its default `bytes`."""

    name: str
    required: tuple[str, ...] = ()
    default_bytes: int = 0
    min_bytes: int = 0               # `bytes` must be at least this (after the default)
    reads: tuple[str, ...] = ()      # optional fields besides kind, start and the timing's


WRITER_KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("periodic", ("bytes", "every"), min_bytes=1),
    Kind("bulk", default_bytes=65536, min_bytes=1, reads=("bytes",)),
)}
READER_KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("never"),
    Kind("periodic", ("bytes", "every"), min_bytes=1),
    Kind("fast", default_bytes=1 << 20, reads=("bytes",)),
    Kind("blocking", default_bytes=1 << 20, reads=("bytes",)),
    Kind("relay", default_bytes=1 << 20, reads=("bytes",)),
    Kind("oscillating", ("bytes", "every", "bytes2", "every2", "period")),
    Kind("oscil", reads=("fast_for", "slow_for", "fraction")),
)}
KINDS = {"writer": WRITER_KINDS, "reader": READER_KINDS}

SIZE_FIELDS = ("bytes", "bytes2")
DURATION_FIELDS = ("every", "every2", "period", "fast_for", "slow_for", "start", "call_cost",
                   "owns_socket")
POSITIVE_FIELDS = ("every", "every2", "period")
TIMING_FIELDS = ("latency", "call_cost", "copy_rate")
FIELDS = ("kind", *SIZE_FIELDS, *DURATION_FIELDS, "fraction", "latency", "copy_rate")
# The kinds application timing applies to (others are exact; a timing field is an error).
TIMED_KINDS = {"writer": ("periodic",), "reader": ("periodic", "fast", "blocking")}
LATENCY_TABLES = ("periodic_writer", "periodic_reader", "blocking_reader",
                  "periodic_writer_blocks", "periodic_reader_blocks")
# App fields that trace metadata leaves out at their defaults (scenarios without timing
# read as before the fields existed).
TIMING_DEFAULTS = {"latency_table": "", "latency_ns": 0, "latency_host": "", "call_cost": 0,
                   "copy_rate": 0, "owns_socket": 0}


@dataclass(frozen=True)
class App:
    """A writer or reader as a scenario declares it (sizes in bytes, times in ns)."""

    kind: str
    bytes: int = 0
    every: int = 0
    bytes2: int = 0
    every2: int = 0
    period: int = 0
    fast_for: int = 5 * NS_PER_S
    slow_for: int = 15 * NS_PER_S
    fraction: float = 0.05
    start: int = 0
    latency_table: str = ""          # a table or captured sequences by name (app_latency)
    latency_ns: int = 0              # else a fixed lateness (0: exact timing)
    latency_host: str = ""           # captured sequences: the host preset ("": the default)
    call_cost: int = 0               # ns per recv() call (readers)
    copy_rate: int = 0               # bits/s recv() copies at (0: instant)
    owns_socket: int = 0             # ns each recv()/send() moving data holds the socket


    @property
    def timed(self) -> bool:
        """Any application timing at all (else the exact, pre-issue-14 behaviour). A call
        that holds the socket is timing too: its reads are run one by one, never skipped."""
        return bool(self.latency_table or self.latency_ns or self.call_cost or self.copy_rate
                    or self.owns_socket)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly record (`App(**d)` reads it back)."""
        return asdict(self)

    def rate_at(self, t: int) -> tuple[int, int]:
        """(bytes, every) in force `t` ns after the application started: an oscillating
        reader's first pair in even periods and its second in odd ones; any other kind's
        (bytes, every)."""
        if self.kind != "oscillating" or self.period <= 0 or (max(0, t) // self.period) % 2 == 0:
            return self.bytes, self.every
        return self.bytes2, self.every2


DEFAULT_WRITER = App("bulk", bytes=65536)
DEFAULT_READER = App("fast", bytes=1 << 20)


def parse_app(table: dict[str, Any], side: str, default: App, where: str = "") -> App:
    """A scenario's [writer] or [reader] table (`side`: "writer" or "reader") -> App; an
    empty table is `default`. Errors are ScenarioErrors naming `where.field` (default `side`;
    the reverse direction's are "receiver.writer" and "sender.reader")."""
    if not table:
        return default
    role = where or side
    kinds = KINDS[side]
    kind = table.get("kind")
    if not isinstance(kind, str) or kind not in kinds:
        raise ScenarioError(f"{role}.kind: expected one of {', '.join(sorted(kinds))}, "
                            f"got {kind!r}")
    for key in table:
        if key not in FIELDS:
            raise ScenarioError(f"{role}.{key}: unknown field; allowed here: "
                                + ", ".join(sorted(FIELDS)))
    spec = kinds[kind]
    timed = TIMING_FIELDS if kind in TIMED_KINDS[side] else ()
    if side == "writer":
        timed = tuple(k for k in timed if k == "latency")   # call_cost, copy_rate: readers'
    owns = ("owns_socket",) if side == "writer" or kind in TIMED_KINDS[side] else ()
    reads = ("kind", "start", *spec.required, *spec.reads, *timed, *owns)
    for key in table:
        if key not in reads and key not in TIMING_FIELDS:  # timing: _parse_timing says why
            raise ScenarioError(f"{role}.{key}: a {side} of kind = \"{kind}\" does not read "
                                f"{key}; its fields: {', '.join(reads)}")
    values: dict[str, Any] = {}
    for k in SIZE_FIELDS:
        if k in table:
            values[k] = parse_size(table[k], f"{role}.{k}")
    for k in DURATION_FIELDS:
        if k in table:
            values[k] = parse_duration(table[k], f"{role}.{k}")
    if "fraction" in table:
        f = table["fraction"]
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1:
            raise ScenarioError(f"{role}.fraction: expected a number in (0, 1], got {f!r}")
        values["fraction"] = float(f)
    values.update(_parse_timing(table, side, kind, role))
    app = App(kind, **values)
    spec = kinds[kind]
    for k in spec.required:
        if k not in table:
            raise ScenarioError(f"{role}.{k}: required for kind = \"{kind}\"")
    for k in POSITIVE_FIELDS:
        if k in table and getattr(app, k) <= 0:
            raise ScenarioError(f"{role}.{k}: must be longer than zero")
    if spec.default_bytes and not app.bytes:
        app = replace(app, bytes=spec.default_bytes)
    if app.bytes < spec.min_bytes:
        raise ScenarioError(f"{role}.bytes: must be at least {spec.min_bytes}")
    return app


def idle_notes(apps: dict[str, "App | None"], duration: int) -> list[str]:
    """A line for each application (`apps`: {role: App}) that can do nothing in a run of
    `duration` ns: it starts at or after the end (a scenario's writer that writes nothing
    without a word)."""
    out = []
    for role, app in apps.items():
        if app is not None and app.kind != "never" and app.start >= duration:
            out.append(f"{role}.start = {app.start / NS_PER_S:g} s is not before the end of the "
                       f"run ({duration / NS_PER_S:g} s): the {role} does nothing in it; start "
                       "it earlier or run longer (--duration)")
    return out


def _parse_timing(table: dict[str, Any], side: str, kind: str, role: str) -> dict[str, Any]:
    """The application-timing fields of a [writer]/[reader] table (see the module doc)."""
    given = [k for k in TIMING_FIELDS if k in table]
    if not given:
        return {}
    if kind not in TIMED_KINDS[side]:
        raise ScenarioError(f"{role}.{given[0]}: application timing is modelled for kind = "
                            + " or ".join(f'"{k}"' for k in TIMED_KINDS[side]) + f", not \"{kind}\"")
    if side == "writer" and ("call_cost" in table or "copy_rate" in table):
        k = "call_cost" if "call_cost" in table else "copy_rate"
        raise ScenarioError(f"{role}.{k}: only a reader has a copy cost; remove it")
    out: dict[str, Any] = {}
    if "latency" in table:
        v = table["latency"]
        if isinstance(v, str) and v in LATENCY_TABLES:
            out["latency_table"] = v
        elif v != "none":
            try:
                out["latency_ns"] = parse_duration(v, f"{role}.latency")
            except ScenarioError:
                raise ScenarioError(
                    f"{role}.latency: expected \"none\", 0, a duration (\"2ms\") or one of "
                    f"{', '.join(LATENCY_TABLES)}; got {v!r}") from None
    if "copy_rate" in table:
        out["copy_rate"] = parse_rate(table["copy_rate"], f"{role}.copy_rate")
    return out


def timing_fields(app: dict[str, Any]) -> dict[str, Any]:
    """An App record without its timing fields where they are at their defaults."""
    return {k: v for k, v in app.items()
            if k not in TIMING_DEFAULTS or v != TIMING_DEFAULTS[k]}


# A scenario record's applications (`Scenario.as_dict()` keys) and the names a user knows them by.
APP_ROLES = (("writer", "writer"), ("reader", "reader"), ("rev_writer", "receiver.writer"),
             ("rev_reader", "sender.reader"))


def describe_timing(scenario: dict[str, Any]) -> str:
    """A run's application timing in one line, from its scenario record (`Scenario.as_dict()`,
    a trace's metadata): the host preset or "exact", then each application's own timing,
    e.g. `dev-vm-loaded (writer periodic: periodic_writer_blocks; reader fast: exact)`;
    "" for a scenario built in code with exact applications (packetdrill, replays)."""
    parts = []
    for key, label in APP_ROLES:
        app = scenario.get(key)
        if not app:
            continue
        if app.get("latency_table"):
            how = app["latency_table"]
        elif app.get("latency_ns"):
            how = f"{app['latency_ns'] / 1e6:g} ms"
        else:
            how = "exact"
        parts.append(f"{label} {app['kind']}: {how}")
    timing = scenario.get("timing", "")
    if not timing and all(p.endswith(": exact") for p in parts):
        return ""
    return f"{timing or 'as given'} ({'; '.join(parts)})"
