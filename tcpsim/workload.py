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
                  `bytes` (default 1 MiB), as a server's read loop does; with no application
                  latency modelled it reads when a fast reader would (issue 14 adds one)
    oscillating   alternates every `period` between (`bytes` every `every`) and
                  (`bytes2` every `every2`), starting with the first
    oscil         Cloudflare's benchmark reader: fast for `fast_for` (5 s), then for
                  `slow_for` (15 s) reads each second `fraction` (0.05) of the best
                  one-second amount seen so far; repeated

Every kind takes `start` (when the application begins, default at once).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from tcpsim.core.constants import NS_PER_S
from tcpsim.errors import ScenarioError
from tcpsim.units import parse_duration, parse_size


@dataclass(frozen=True)
class Kind:
    """One application kind: its name, the fields it needs, its default `bytes`."""

    name: str
    required: tuple[str, ...] = ()
    default_bytes: int = 0
    min_bytes: int = 0               # `bytes` must be at least this (after the default)


WRITER_KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("periodic", ("bytes", "every"), min_bytes=1),
    Kind("bulk", default_bytes=65536, min_bytes=1),
)}
READER_KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("never"),
    Kind("periodic", ("bytes", "every"), min_bytes=1),
    Kind("fast", default_bytes=1 << 20),
    Kind("blocking", default_bytes=1 << 20),
    Kind("oscillating", ("bytes", "every", "bytes2", "every2", "period")),
    Kind("oscil"),
)}
KINDS = {"writer": WRITER_KINDS, "reader": READER_KINDS}

SIZE_FIELDS = ("bytes", "bytes2")
DURATION_FIELDS = ("every", "every2", "period", "fast_for", "slow_for", "start")
POSITIVE_FIELDS = ("every", "every2", "period")
FIELDS = ("kind", *SIZE_FIELDS, *DURATION_FIELDS, "fraction")


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
