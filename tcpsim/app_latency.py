"""Application wakeup latency measured on a real kernel, as quantile tables (docs/app-latency.md).

The tables live in tcpsim/data/app_latency.json, made by scripts/app_latency.py from the
captures of issue 14 (tcpsim.capture.wakeups measures them). Each table is a list of N+1
integer nanosecond values: the empirical quantiles at probabilities k/N, k = 0..N (the
first is the smallest latency seen, the last the largest).

A latency is drawn as ``table_lookup(table, rng.random())``: the uniform double is turned
into an exact integer (``random()`` returns k / 2**53 for an integer k) and the table is
interpolated linearly in integer arithmetic, so a second engine holding the same MT19937
stream reproduces every draw bit for bit, with no libm and no float rounding after the
first exact step.

    load_tables() -> {name: [ns, ...]}
    table_lookup(table, u) -> ns

Captured sequences (tcpsim/data/app_latency_blocks*.bin, format: tcpsim.latency_file; made by
scripts/app_latency_blocks.py):
the same captures' lateness in wakeup order, one sequence per capture. A draw does not pick
each wakeup independently: a run replays one capture, in blocks of consecutive wakeups, the
first from the capture's start, the later ones from random starting points (a moving-block
bootstrap), so a busy second stays busy for its ticks and a run keeps its capture's level,
as the host's did (docs/app-latency.md).

    load_sequences(kind, host) -> ([ns, ...] per capture of that host; each capture is
        decoded when first indexed: a run replays one)
    pick_capture(k, n) -> which of n captures a run replays (k: a 53-bit draw)
    BlockSequence(seq, block).draw(k) -> ns

Host presets: the captures a run's blocks come from are one named set (HOSTS; a scenario's
`[timing] host = "..."`, default DEFAULT_HOST), each the captures of one host condition.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

DATA = Path(__file__).resolve().with_name("data")

UNIT_BITS = 53                      # random.random() = k / 2**53, k an integer
UNIT = 1 << UNIT_BITS
SEQUENCE_UNIT_NS = 1000             # the sequences are stored in microseconds
MAX_LATENCY_NS = 1 << 40            # ~18 min: no wakeup is later (keeps every sum in i64)
# latency = "<name>" replays the captured sequences of this kind (the rest are tables).
SEQUENCES = {"periodic_writer_blocks": "periodic_writer",
             "periodic_reader_blocks": "periodic_reader"}


@dataclass(frozen=True)
class Host:
    """A shipped set of captures of one host condition: its file in tcpsim/data, and what
    the condition was (docs/app-latency.md, "Host presets")."""

    file: str
    about: str


# The captured-sequence sets a run can replay (`[timing] host`); every set holds the seed
# reproducer's 120 s captures on the development VM (Linux 6.18.44, 2 vCPUs, HZ 250).
HOSTS = {
    "dev-vm-loaded": Host("app_latency_blocks.bin",
                          "six captures at load average ~15, other work uncontrolled "
                          "(02:10-02:24 UTC; shrink 0 and 1)"),
    "dev-vm-quiet": Host("app_latency_blocks-dev-vm-quiet.bin",
                         "three captures at load average 2.9-4.4, other work uncontrolled "
                         "(08:13-08:18 UTC; shrink 0)"),
    "dev-vm-duty50": Host("app_latency_blocks-dev-vm-duty50.bin",
                          "controlled: one process pinned to the apps' CPU, busy 5 ms of "
                          "every 10 ms, for the whole capture (shrink 0)"),
    "dev-vm-spin": Host("app_latency_blocks-dev-vm-spin.bin",
                        "controlled: one process pinned to the apps' CPU, never sleeping, "
                        "for the whole capture (shrink 0)"),
}
DEFAULT_HOST = "dev-vm-loaded"


# `[timing] host = "exact"` (`--timing exact`): no default timing, every application without
# a `latency` of its own wakes exactly on time (the behaviour before the default existed).
EXACT = "exact"

# The default application timing (issue 14): the `latency` an application that gives none
# gets, by (side, kind), under each host preset -- the ONE table of it; resolved when a
# scenario is read (tcpsim.scenario), so both engines are handed explicit values. A pair not
# listed is exact: nothing was measured for it on that host (docs/app-latency.md, "The
# default timing", says why per kind). Sources: the periodic pairs replay the preset's own
# captures of the seed reproducer (HOSTS); the blocking reader's table was measured on the
# bulk-to-blocking-reader captures of the dev-vm-loaded hour only (app_latency.json).
_PERIODIC = {("writer", "periodic"): "periodic_writer_blocks",
             ("reader", "periodic"): "periodic_reader_blocks"}
DEFAULT_TIMING: dict[str, dict[tuple[str, str], str]] = {
    "dev-vm-loaded": {**_PERIODIC, ("reader", "blocking"): "blocking_reader"},
    "dev-vm-quiet": _PERIODIC,
    "dev-vm-duty50": _PERIODIC,
    "dev-vm-spin": _PERIODIC,
}


def check_host(name: object) -> str:
    """A host preset's name, or ValueError listing the choices."""
    if not isinstance(name, str) or name not in HOSTS:
        raise ValueError(f"expected one of {', '.join(sorted(HOSTS))}; got {name!r}")
    return name


def timing_choices() -> list[str]:
    """What `[timing] host` and `--timing` take: a host preset or "exact"."""
    return [*sorted(HOSTS), EXACT]


def check_timing(name: object) -> str:
    """A run's timing (a host preset or "exact"), or ValueError listing the choices."""
    if not isinstance(name, str) or name not in timing_choices():
        raise ValueError(f"expected one of {', '.join(timing_choices())}; got {name!r}")
    return name


def default_latency(timing: str, side: str, kind: str) -> str:
    """The `latency` an application of `kind` on `side` ("writer"/"reader") gets when it
    gives none, under `timing` (a host preset or "exact"); "" is exact timing."""
    return DEFAULT_TIMING.get(timing, {}).get((side, kind), "")


def table_lookup(table: Sequence[int], u: float) -> int:
    """The latency (ns) at uniform ``u`` in [0, 1): linear interpolation between the table's
    quantiles, in integers.

    With N = len(table) - 1 and k = u * 2**53 (exact for random.random()), the position is
    p = k * N; the segment i = p >> 53 and the fraction f = p & (2**53 - 1) give
    table[i] + ((table[i+1] - table[i]) * f) >> 53 (floor; the table is non-decreasing)."""
    n = len(table) - 1
    if n < 1:
        raise ValueError("a latency table needs at least two quantiles")
    if not 0.0 <= u < 1.0:
        raise ValueError(f"u must be in [0, 1), got {u!r}")
    k = int(u * UNIT)               # exact: u is a multiple of 2**-53 below 1
    p = k * n
    i, f = p >> UNIT_BITS, p & (UNIT - 1)
    return table[i] + (((table[i + 1] - table[i]) * f) >> UNIT_BITS)


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The whole calibration document (tables plus provenance)."""
    doc: dict[str, Any] = json.loads((DATA / "app_latency.json").read_text())
    return doc


def load_tables() -> dict[str, list[int]]:
    """{table name: quantiles in ns} of the shipped calibration."""
    return {name: list(t["quantiles_ns"]) for name, t in load()["tables"].items()}


@lru_cache(maxsize=None)
def load_blocks(host: str = DEFAULT_HOST) -> dict[str, Any]:
    """The captured-sequence document of a host preset: its provenance and "sequences".

    A format-1 file (`.bin`, tcpsim.latency_file) gives {kind: lazily decoded captures in
    ns} with `"values": "ns"` and the file's index under "sequence_index"; a `.json.gz`
    document (what scripts/app_latency_blocks.py --json writes) gives its lists in
    `unit_ns` steps."""
    path = DATA / HOSTS[check_host(host)].file     # a user preset's file is absolute (user_hosts)
    data = path.read_bytes()
    if path.name.endswith(".json.gz"):
        doc: dict[str, Any] = json.loads(gzip.decompress(data))
        return doc
    from tcpsim import latency_file
    packed = latency_file.read(data, path.name)
    return {**packed.header, "values": "ns", "sequence_index": packed.header["sequences"],
            "sequences": {kind: packed.captures(kind) for kind in packed.kinds()}}


@lru_cache(maxsize=None)
def load_sequences(kind: str, host: str = DEFAULT_HOST) -> Sequence[Sequence[int]]:
    """The captured lateness sequences (ns, wakeup order) of `kind` ("periodic_writer",
    "periodic_reader") of a host preset, one per capture, in the document's capture order.
    Bounded and checked against the block length here (from a format-1 file's index, without
    decoding a capture)."""
    doc = load_blocks(host)
    block = doc["block_wakeups"]
    if doc.get("values") == "ns":
        seqs: Sequence[Sequence[int]] = doc["sequences"][kind]
        index = doc["sequence_index"][kind]
        counts = [e["count"] for e in index]
        low, high = min(e["min_ns"] for e in index), max(e["max_ns"] for e in index)
    else:
        unit = doc["unit_ns"]
        seqs = tuple(tuple(x * unit for x in seq) for seq in doc["sequences"][kind])
        counts = [len(s) for s in seqs]
        low = min((min(s) for s in seqs if s), default=0)
        high = max((max(s) for s in seqs if s), default=0)
    if not seqs or min(counts) < block:
        raise ValueError(f"app_latency_blocks: every {kind} sequence must hold a block "
                         f"({block} wakeups)")
    if low < 0 or high >= MAX_LATENCY_NS:
        raise ValueError(f"app_latency_blocks: a {kind} lateness outside [0, {MAX_LATENCY_NS}) ns")
    return seqs


def block_wakeups(host: str = DEFAULT_HOST) -> int:
    """Wakeups per replayed block (the host preset's document's `block_wakeups`)."""
    return int(load_blocks(host)["block_wakeups"])


def pick_capture(k: int, n: int) -> int:
    """The capture (0..n-1) a run replays, from a 53-bit draw k (random() = k / 2**53)."""
    return (k * n) >> UNIT_BITS


HOST_STREAM = 7         # the host's generator: random.Random(seed * 8 + HOST_STREAM)


def run_capture(seed: int, n: int) -> int:
    """Which of a host preset's `n` captures the run of `seed` replays: the host stream's
    first draw, the same for every app of the run (and in the native engine, `pick_capture`)."""
    import random
    return pick_capture(int(random.Random(seed * 8 + HOST_STREAM).random() * UNIT), n)


class BlockSequence:
    """A moving-block bootstrap of one captured sequence: the first `block` wakeups from the
    capture's start (wakeup 0), then blocks of `block` consecutive wakeups from starting
    points drawn uniformly among those with a whole block after them. The first block takes
    no draw (the captures' first seconds are not a random stretch: docs/app-latency.md, "Why
    the memory sat at half the kernel's"); each later block start takes one 53-bit draw k,
    the start being (k * (len - block + 1)) >> 53, integer-exact, so the native engine
    replays the same wakeups."""

    def __init__(self, seq: Sequence[int], block: int) -> None:
        if not 0 < block <= len(seq):
            raise ValueError(f"a block of {block} wakeups needs a sequence at least that long "
                             f"(got {len(seq)})")
        self.seq, self.block = seq, block
        self.pos = 0                    # the first block starts at the capture's start
        self.left = block               # wakeups left in the current block

    def draw(self, k: int) -> int:
        """The next wakeup's lateness (ns); `k` (a 53-bit draw) is used only when a block
        after the first begins."""
        if self.left == 0:
            self.pos = (k * (len(self.seq) - self.block + 1)) >> UNIT_BITS
            self.left = self.block
        self.left -= 1
        v = self.seq[self.pos]
        self.pos += 1
        return v

    @property
    def needs_draw(self) -> bool:
        """The next wakeup begins a block after the first (and so consumes a draw)."""
        return self.left == 0


# -- user presets (tcpsim timing measure / fit; tcpsim.timing) ----------------------------------
USER_PREFIX, USER_SUFFIX = "app_latency_blocks-", ".json.gz"


def user_hosts() -> dict[str, Host]:
    """Host presets the user made (`tcpsim timing measure NAME`, `timing fit NAME`): files
    app_latency_blocks-NAME.json.gz (the JSON document load_blocks reads), in TCPSIM_TIMING_DIR (default
    ~/.local/share/tcpsim/timing). A name of a shipped preset is not taken over."""
    import os
    folder = Path(os.environ.get("TCPSIM_TIMING_DIR")
                  or Path.home() / ".local" / "share" / "tcpsim" / "timing")
    try:
        files = sorted(folder.glob(f"{USER_PREFIX}*{USER_SUFFIX}"))
    except OSError:
        return {}
    out = {}
    for f in files:
        name = f.name[len(USER_PREFIX):-len(USER_SUFFIX)]
        if name and name not in _SHIPPED:
            out[name] = Host(str(f.resolve()), f"measured on this machine ({f})")
    return out


def register_user_hosts() -> list[str]:
    """Add the user's presets to HOSTS (periodic writer and reader replayed, as the shipped
    presets); returns their names. Run at import, and again after `timing measure`."""
    new = []
    for name, host in user_hosts().items():
        if name not in HOSTS:
            new.append(name)
        HOSTS[name] = host
        DEFAULT_TIMING[name] = _PERIODIC
        load_blocks.cache_clear()
        load_sequences.cache_clear()
    return new


_SHIPPED = frozenset(HOSTS)
register_user_hosts()
