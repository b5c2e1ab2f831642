"""Host scenario files (TOML) -> a validated `HostScenario`: one host (its kernel profile,
sysctls -- `net.ipv4.tcp_mem` among them --, CPUs, duration, seed) and classes of
connections, each a population built on a base scenario: how many, when they open, how long
they live (churn), and any scenario field as a value or a distribution.

Every problem is one `ScenarioError` line naming the field and the fix, as for scenarios
(tcpsim/scenario.py). The format is documented in docs/hosts.md; the expansion into flows is
tcpsim/host/populations.py.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcpsim.core.constants import NS_PER_S
from tcpsim.core.sysctl import SysctlError
from tcpsim.errors import ScenarioError
from tcpsim.host.dist import Dist, parse_dist
from tcpsim.host.plan import SAMPLE_EVERY_NS
from tcpsim.scenario import builtin_experiment, builtin_experiments, read_scenario_file, set_field
from tcpsim.sysctl_parse import parse_table as parse_sysctl_table
from tcpsim.units import parse_duration

__all__ = ["HostScenario", "ConnClass", "is_host_file", "is_host_doc", "load_host",
           "host_from_dict", "MAX_CONNECTIONS"]

# The most connections one host run may open over its duration (churn included): each costs
# two sockets (a few KiB) and its events; a million is ~10x what 4 GB holds comfortably
# with data queued, and far beyond the 10 000 the benchmark measures.
MAX_CONNECTIONS = 1_000_000
MAX_CPUS = 4096
MAX_THREADS = 64

# fields of a class's base scenario a host decides for every connection
_HOST_OWNED = ("name", "description", "duration", "seed", "profile", "policies", "engine", "hz")

_TOP = {"name", "description", "profile", "hz", "duration", "seed", "cpus", "connections",
        "sample", "sysctl", "class", "policies", "trace_connections", "engine", "peers",
        "memcg", "threads"}
PEERS = ("remote", "local")
_CLASS = {"base", "count", "share", "start", "lifetime", "set", "description"}


@dataclass(frozen=True)
class ConnClass:
    """One class of connections: its name, its base scenario document (host-owned fields
    removed, the host's sysctls over its own), how many, when each opens (`start`, ns), how
    long each lives (`lifetime`, ns; None: the whole run) and its per-connection fields
    (`sets`: dotted scenario field -> distribution)."""

    name: str
    base: str
    doc: dict[str, Any]
    count: int
    start: Dist
    lifetime: Dist | None = None
    sets: tuple[tuple[str, Dist], ...] = ()
    description: str = ""


@dataclass(frozen=True)
class HostScenario:
    """A validated host file."""

    name: str
    classes: tuple[ConnClass, ...]
    description: str = ""
    profile: str = "linux-6.18"
    hz: int = 0
    duration: int = 10 * NS_PER_S
    seed: int = 1
    cpus: int = 1
    peers: str = "remote"            # "local": the peers are this host's sockets too
    sample_every: int = SAMPLE_EVERY_NS
    sysctl: dict[str, Any] = field(default_factory=dict)
    policies: tuple[str, ...] = ()
    trace_connections: tuple[int, ...] = ()
    engine: str = ""
    source: str = ""
    # the host's sockets' memory cgroup: (version 1 or 2, limit pages, other pages), or None
    memcg: tuple[int, int, int] | None = None
    # >= 2: run in CPU order on up to this many threads (native engine; docs/hosts.md)
    threads: int = 1

    @property
    def connections(self) -> int:
        """Connections open at once when every class is full (sockstat's inuse at most)."""
        return sum(c.count for c in self.classes)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly record (the run's metadata)."""
        out = {"name": self.name, "description": self.description, "profile": self.profile,
                "duration": self.duration, "seed": self.seed, "cpus": self.cpus,
                "peers": self.peers, "sample_every": self.sample_every, "sysctl": self.sysctl,
                "policies": list(self.policies),
                "classes": [{"name": c.name, "base": c.base, "count": c.count,
                             "start": c.start.describe(),
                             "lifetime": c.lifetime.describe() if c.lifetime else None,
                             "set": {k: d.describe() for k, d in c.sets}}
                            for c in self.classes]}
        if self.threads > 1:
            out["threads"] = self.threads
        if self.memcg is not None:
            out["memcg"] = dict(zip(("version", "limit_pages", "other_pages"), self.memcg))
        return out


def is_host_doc(raw: dict[str, Any]) -> bool:
    """Whether a parsed TOML document describes a host (it has [class.NAME] tables)."""
    return isinstance(raw.get("class"), dict)


def is_host_file(path: str | Path) -> bool:
    """Whether `path` (a file, or a built-in experiment's name) is a host scenario."""
    try:
        raw, _ = read_scenario_file(path)
    except ScenarioError:
        return False
    return is_host_doc(raw)


def load_host(path: str | Path) -> HostScenario:
    """Read and validate a host file; errors name the file."""
    raw, source = read_scenario_file(path)
    try:
        return host_from_dict(raw, source)
    except ScenarioError as exc:
        raise ScenarioError(f"{source}: {exc}") from None


def _int(raw: dict[str, Any], key: str, lo: int, hi: int, what: str) -> int:
    v = raw[key]
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ScenarioError(f"{key}: expected {what} from {lo} to {hi:_}, got {v!r}")
    return v


def host_from_dict(raw: dict[str, Any], source: str = "") -> HostScenario:
    """Validate a parsed host document."""
    from tcpsim.scenario import _check_keys, check_hz
    _check_keys(raw, _TOP, "")
    name = str(raw.get("name") or (Path(source).stem if source else "host"))
    kw: dict[str, Any] = {"name": name, "description": str(raw.get("description", "")),
                          "source": source}
    if "profile" in raw:
        if not isinstance(raw["profile"], str):
            raise ScenarioError(f'profile: expected a profile name such as "linux-6.1", '
                                f'got {raw["profile"]!r}')
        kw["profile"] = raw["profile"]
    if "hz" in raw:
        kw["hz"] = check_hz(raw["hz"], "hz")
    if "duration" in raw:
        kw["duration"] = parse_duration(raw["duration"], "duration", positive=True)
    if "seed" in raw:
        if not isinstance(raw["seed"], int) or isinstance(raw["seed"], bool):
            raise ScenarioError(f"seed: expected an integer, got {raw['seed']!r}")
        kw["seed"] = raw["seed"]
    if "cpus" in raw:
        kw["cpus"] = _int(raw, "cpus", 1, MAX_CPUS, "a number of CPUs")
    if "peers" in raw:
        if raw["peers"] not in PEERS:
            raise ScenarioError(f'peers: expected "remote" (other machines) or "local" (both '
                                f'ends on this host, as over loopback), got {raw["peers"]!r}')
        kw["peers"] = raw["peers"]
    if "threads" in raw:
        kw["threads"] = _int(raw, "threads", 1, MAX_THREADS, "a number of threads")
    if "sample" in raw:
        kw["sample_every"] = parse_duration(raw["sample"], "sample", positive=True)
    if "engine" in raw:
        if raw["engine"] not in ("python", "native"):
            raise ScenarioError(f'engine: expected "python" or "native", got {raw["engine"]!r}')
        kw["engine"] = raw["engine"]
    sysctl_raw = raw.get("sysctl", {})
    if not isinstance(sysctl_raw, dict):
        raise ScenarioError("sysctl: expected a table [sysctl]")
    try:
        kw["sysctl"] = parse_sysctl_table(sysctl_raw)
    except SysctlError as exc:
        raise ScenarioError(str(exc)) from None
    check_tcp_mem(kw["sysctl"])
    if "memcg" in raw:
        kw["memcg"] = parse_memcg(raw["memcg"])
    pol = raw.get("policies", [])
    if not isinstance(pol, list) or not all(isinstance(p, str) for p in pol):
        raise ScenarioError('policies: expected a list of patch names, e.g. ["shrink-window"]')
    kw["policies"] = tuple(pol)
    tr = raw.get("trace_connections", [])
    if not isinstance(tr, list) or not all(isinstance(i, int) and i >= 0 for i in tr):
        raise ScenarioError("trace_connections: expected a list of connection numbers, e.g. "
                            "[0, 5] (the trace holds those connections' socket rows)")
    kw["trace_connections"] = tuple(tr)
    total = None
    if "connections" in raw:
        total = _int(raw, "connections", 1, MAX_CONNECTIONS, "a number of connections")
    classes = _parse_classes(raw.get("class"), total, kw["sysctl"], source,
                             kw.get("peers") == "local")
    host = HostScenario(classes=classes, **kw)
    _check_size(host)
    return host


def check_tcp_mem(sysctl: dict[str, Any]) -> None:
    """`net.ipv4.tcp_mem` must be three page counts, each at least the one before
    (min <= pressure <= max, as the kernel reads them: sk_prot_mem_limits)."""
    for key, value in sysctl.items():
        if key.rsplit(".", 1)[-1] != "tcp_mem":
            continue
        if (not isinstance(value, (list, tuple)) or len(value) != 3
                or not all(isinstance(v, int) and v > 0 for v in value)):
            raise ScenarioError(f"sysctl.{key}: expected three page counts [min, pressure, "
                                f"max], e.g. [200, 400, 600], got {value!r}")
        lo, pressure, hi = value
        if not lo <= pressure <= hi:
            raise ScenarioError(f"sysctl.{key}: {list(value)} is not increasing; write "
                                "[min, pressure, max] pages with min <= pressure <= max")


_MEMCG = {"max", "other", "tcp_limit"}


def parse_memcg(t: Any) -> tuple[int, int, int]:
    """The `[memcg]` table -> (version, limit pages, other pages) (tcpsim/core/memcg.py):
    `max` (cgroup v2 memory.max) with an optional `other` (the cgroup's memory besides
    sockets), or `tcp_limit` (cgroup v1 memory.kmem.tcp.limit_in_bytes). Sizes are bytes
    ("64MiB", 409600) and count in whole pages, rounded down as the kernel does
    (page_counter_memparse)."""
    from tcpsim.core.constants import PAGE_SIZE
    from tcpsim.scenario import _check_keys
    if not isinstance(t, dict):
        raise ScenarioError('memcg: expected a table [memcg] with max = "64MiB" (cgroup v2) '
                            'or tcp_limit = "4MiB" (cgroup v1)')
    _check_keys(t, _MEMCG, "memcg.")
    if ("max" in t) == ("tcp_limit" in t):
        raise ScenarioError('memcg: give either max = "64MiB" (cgroup v2 memory.max) or '
                            'tcp_limit = "4MiB" (cgroup v1 memory.kmem.tcp.limit_in_bytes), '
                            "not both and not neither")
    version, key = (2, "max") if "max" in t else (1, "tcp_limit")
    if version == 1 and "other" in t:
        raise ScenarioError("memcg.other: only with max (cgroup v2 counts sockets with the "
                            "cgroup's other memory); v1's tcp_limit counts sockets alone")
    limit = _memcg_size(t[key], f"memcg.{key}") // PAGE_SIZE
    other = _memcg_size(t.get("other", 0), "memcg.other") // PAGE_SIZE
    if limit < 1:
        raise ScenarioError(f"memcg.{key}: {t[key]!r} is less than one page (4096 bytes); "
                            'give a size such as "4MiB"')
    if other >= limit:
        raise ScenarioError(f"memcg.other: {t['other']!r} leaves nothing of max = "
                            f"{t['max']!r} for sockets; make other smaller than max")
    return version, limit, other


def _memcg_size(value: Any, where: str) -> int:
    from tcpsim.units import parse_size
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ScenarioError(f'{where}: expected a size such as "64MiB" or 409600 (bytes), '
                            f"got {value!r}")
    n = parse_size(value, where)
    if n < 0:
        raise ScenarioError(f'{where}: {value!r} is negative; give a size such as "64MiB"')
    return n


def _parse_classes(table: Any, total: int | None, host_sysctl: dict[str, Any],
                   source: str, local_peers: bool) -> tuple[ConnClass, ...]:
    if not isinstance(table, dict) or not table:
        raise ScenarioError('class: a host needs at least one [class.NAME] table, e.g. '
                            '[class.web] with base = "seed-default-fill" and count = 10')
    out = []
    for name, t in table.items():
        where = f"class.{name}"
        if not isinstance(t, dict):
            raise ScenarioError(f"{where}: expected a table [{where}]")
        from tcpsim.scenario import _check_keys
        _check_keys(t, _CLASS, f"{where}.")
        out.append(_parse_class(name, t, total, host_sysctl, source, local_peers))
    if total is not None:
        got = sum(c.count for c in out)
        if got != total:
            parts = " + ".join(f"{c.name} {c.count}" for c in out)
            raise ScenarioError(f"connections: the classes add up to {got} ({parts}), not "
                                f"{total}; make their counts (or shares) add up, or drop "
                                "connections")
    return tuple(out)


def _parse_class(name: str, t: dict[str, Any], total: int | None,
                 host_sysctl: dict[str, Any], source: str, local_peers: bool) -> ConnClass:
    where = f"class.{name}"
    if "base" not in t:
        raise ScenarioError(f'{where}: no workload; give base = "<built-in experiment or '
                            f'scenario file>" (e.g. base = "seed-unbounded-growth"), and '
                            f"[{where}.set] for the fields it changes")
    base = t["base"]
    if not isinstance(base, str):
        raise ScenarioError(f"{where}.base: expected an experiment name or a file path, got "
                            f"{base!r}")
    doc = _base_doc(base, source, where)
    count = _count(t, total, where)
    start = parse_dist(t.get("start", 0), f"{where}.start", "duration")
    lifetime = None
    if "lifetime" in t:
        lifetime = parse_dist(t["lifetime"], f"{where}.lifetime", "duration")
        if lifetime.kind != "exponential" and lifetime.low() <= 0:
            raise ScenarioError(f"{where}.lifetime: a lifetime must be longer than zero; "
                                "leave it out for connections that last the run")
    sets_raw = t.get("set", {})
    if not isinstance(sets_raw, dict):
        raise ScenarioError(f"{where}.set: expected a table [{where}.set] of FIELD = value or "
                            'distribution, e.g. "link.rtt" = {uniform = ["10ms", "50ms"]}')
    sets = []
    for key in sorted(_flatten(sets_raw)):
        value = _flatten(sets_raw)[key]
        if key.split(".")[0] in _HOST_OWNED:
            raise ScenarioError(f"{where}.set.{key}: the host decides {key.split('.')[0]} "
                                "for every connection; set it at the top of the host file")
        sets.append((key, parse_dist(value, f"{where}.set.{key}", "any")))
    for key, value in host_sysctl.items():          # the host's namespace: its sockets' sysctls
        set_field(doc, f"sysctl.{key}", value)
        if local_peers:                              # and the peers' sockets are its too
            set_field(doc, f"sender.sysctl.{key}", value)
    _check_workload(doc, where, base)
    return ConnClass(name=name, base=base, doc=doc, count=count, start=start,
                     lifetime=lifetime, sets=tuple(sets),
                     description=str(t.get("description", "")))


def _flatten(t: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"link": {"rtt": X}} -> {"link.rtt": X}; a distribution's table and quoted dotted
    keys ("link.rtt" = ...) stay whole."""
    from tcpsim.host.dist import is_dist_table
    out: dict[str, Any] = {}
    for k, v in t.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and not is_dist_table(v):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _base_doc(base: str, source: str, where: str) -> dict[str, Any]:
    """The base scenario's document: a built-in experiment, or a file (relative to the host
    file's folder), with the fields the host owns removed."""
    path = Path(base)
    if not path.is_absolute() and source and not builtin_experiment(base):
        path = Path(source).parent / base
    try:
        raw, _ = read_scenario_file(path if path.exists() else base)
    except ScenarioError:
        raise ScenarioError(f"{where}.base: {base!r} is neither a built-in experiment nor a "
                            f"scenario file (built-in: {', '.join(builtin_experiments())})") from None
    if is_host_doc(raw):
        raise ScenarioError(f"{where}.base: {base!r} is a host file; a class is built on a "
                            "one-connection scenario")
    doc = copy.deepcopy(raw)
    for key in _HOST_OWNED:
        doc.pop(key, None)
    return doc


def _check_workload(doc: dict[str, Any], where: str, base: str) -> None:
    """A class's base must say what its connections do: a writer (one-connection scenarios
    default to one, but a class without any is a mistake more often than not)."""
    if "writer" not in doc:
        raise ScenarioError(f"{where}: no workload: its base {base!r} has no [writer]; give "
                            "the class a base scenario with a [writer] and a [reader]")


def _count(t: dict[str, Any], total: int | None, where: str) -> int:
    if ("count" in t) == ("share" in t):
        raise ScenarioError(f"{where}: give either count (connections) or share (a fraction "
                            "of connections), not both or neither")
    if "count" in t:
        c = t["count"]
        if not isinstance(c, int) or isinstance(c, bool) or c < 0:
            raise ScenarioError(f"{where}.count: expected a number of connections (0 or more), "
                                f"got {c!r}")
        if c > MAX_CONNECTIONS:
            raise ScenarioError(f"{where}.count: {c:_} connections is more than one host run "
                                f"takes (at most {MAX_CONNECTIONS:_}); model a sample of them")
        return c
    share = t["share"]
    if total is None:
        raise ScenarioError(f"{where}.share: a share needs the host's total; add "
                            "connections = N at the top, or give count instead")
    if not isinstance(share, (int, float)) or isinstance(share, bool) or not 0 <= share <= 1:
        raise ScenarioError(f"{where}.share: expected a fraction from 0 to 1, got {share!r}")
    return round(share * total)


def _check_size(host: HostScenario) -> None:
    """The connections a run will open, churn included, within MAX_CONNECTIONS."""
    n = 0
    for c in host.classes:
        per = 1
        if c.lifetime is not None:
            per = int(host.duration // max(1.0, c.lifetime.typical())) + 1
        n += c.count * per
        if n > MAX_CONNECTIONS:
            raise ScenarioError(f"class.{c.name}: the host would open more than "
                                f"{MAX_CONNECTIONS:_} connections over its duration (counts x "
                                "replacements of short lifetimes); use fewer or longer-lived "
                                "connections, or a shorter duration")


def read_host_text(text: str, source: str = "") -> HostScenario:
    """A host from TOML text (tests, docs)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{source or 'host'}: not valid TOML: {exc}") from None
    return host_from_dict(raw, source)

