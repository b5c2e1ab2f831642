"""Search files: what `tcpsim search` looks through, for what, and how long.

    [search]
    scenario = "base/generic.toml"   # the base: a file beside this one, a built-in experiment,
                                     # or a shipped base (the default: base/generic.toml)
    description = "..."
    objective = "rcvbuf_ratio"       # tcpsim.searching.objective.OBJECTIVES
    profile = "linux-6.1"            # the policy searched (default: the scenario's profile)
    policy = ["shrink-window"]       # patches on top of it (optional)
    sysctl = { "net.ipv4.tcp_shrink_window" = 1 }   # receiver sysctls on top (optional)
    budget = 300                     # workloads evaluated (each runs once per policy)
    batch = 8                        # workloads proposed at a time (evaluated in parallel)
    seed = 1                         # the optimiser's seed: same seed, same search
    optimiser = "tpe"                # "tpe" (Optuna), "random", "hypothesis" (strategy.py)
    duration = "10s"                 # every evaluation's simulated time
    threshold = 4.0                  # an objective at or above this is a finding
    keep = 0.5                       # minimising keeps a finding while objective >= keep * its value

    [search.vs]                      # optional: the objective becomes a DIFFERENCE,
    profile = "linux-6.14"           # (objective under [search]) - (objective under [search.vs])
    policy = []                      # on the same workload
    sysctl = {}

    [set]                            # fixed values for every point, as a study's [set]
    "timing.host" = "exact"

    [space]                          # the searched fields and their ranges / choices
    "writer.bytes" = { range = "1B..64KiB", scale = "log" }
    "writer.every" = { range = "0.1ms..100ms", scale = "log" }
    "link.rtt"     = { range = "0.1ms..100ms", scale = "log" }
    "reader.kind"  = { choices = ["periodic", "fast"] }
    "sysctl.net.ipv4.tcp_rmem" = { choices = [[4096, 131072, 6291456], [4096, 131072, 268435456]] }

Field names are those of `tcpsim sweep` axes (TABLE.FIELD, sysctl.NAME, duration, profile is
not searchable: it is the policy). A range is "LO..HI" with one unit on both ends: a size
(B, KiB, KB, MiB), a duration (ns, us, ms, s), a rate (kbit, mbit, gbit) or none (a plain
number; integers stay integers); scale "log" (the default for units, which span decades) or "lin". A dimension may
give `default = VALUE`: the value minimisation returns the field to (else: the base
scenario's own value, or no value at all -- the scenario's default), and `when = { FIELD =
VALUE or [VALUES] }`: the field is searched only while FIELD (a choice dim declared above it)
has one of those values -- `"reader.every" = { range = "0.1ms..100ms", when = { "reader.kind"
= "periodic" } }`. Every point the
optimiser proposes is built and validated as a scenario before it runs; a space whose
points cannot be valid (a range beyond what the field takes) is reported before the search
starts, with the field's name.

Host pressure (tcp_mem shared by many connections) is an objective once tcpsim models hosts:
it plugs in as one more entry of OBJECTIVES reading the host summary; nothing here changes.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tcpsim.errors import ScenarioError
from tcpsim.scenario import shipped_file, shipped_names
from tcpsim.units import DURATION_UNITS, RATE_UNITS, SIZE_UNITS, parse_duration, parse_rate, parse_size

_SEARCH_KEYS = {"scenario", "name", "description", "objective", "profile", "policy", "sysctl",
                "budget", "batch", "seed", "duration", "threshold", "keep", "vs", "optimiser"}
_VS_KEYS = {"profile", "policy", "sysctl"}
_TOP_KEYS = {"search", "set", "space"}
_DIM_KEYS = {"range", "scale", "choices", "default", "when"}
_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")
_TIME_UNITS = set(DURATION_UNITS) - {""}
_SIZE_UNITS = set(SIZE_UNITS) - {""}
_RATE_UNITS = set(RATE_UNITS)
OPTIMISERS = ("tpe", "random", "hypothesis")


class SearchError(ScenarioError):
    """A search file that cannot be used: one line naming the file, the field and the fix."""


@dataclass(frozen=True)
class Dim:
    """One searched field: a range (`lo`..`hi` in bytes, ns or plain numbers) or choices."""

    key: str
    kind: str                     # "size" | "duration" | "rate" | "number" | "integer" | "choice"
    lo: float = 0.0
    hi: float = 0.0
    log: bool = True
    choices: tuple[Any, ...] = ()
    default: Any = None           # None: the base scenario's own value (or unset)
    when: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    """Searched only while each named field (a choice dim declared earlier) has one of the
    listed values: `when = { "reader.kind" = "periodic" }` -- a periodic reader's period
    means nothing to a blocking reader (and is not a valid field of one)."""

    def applies(self, values: dict[str, Any], base: "Callable[[str], Any]") -> bool:
        """Whether this field is part of the workload `values` (a field left out there has
        the base scenario's value, `base(key)`)."""
        return all((values[k] if k in values else base(k)) in allowed for k, allowed in self.when)

    def value(self, x: Any) -> Any:
        """The scenario-file value for the optimiser's number (or choice index) `x`."""
        if self.kind == "choice":
            return self.choices[int(x)]
        if self.kind == "size":
            return max(int(self.lo), min(int(self.hi), int(round(float(x)))))
        if self.kind == "duration":      # 4 significant digits: "14.49ms", not "14486834ns"
            ns = int(float(f"{float(x):.4g}"))
            return f"{max(int(self.lo), min(int(self.hi), ns))}ns"
        if self.kind == "rate":          # bit/s, 4 significant digits
            bits = int(float(f"{float(x):.4g}"))
            return f"{max(int(self.lo), min(int(self.hi), bits))}bit"
        if self.kind == "integer":
            return int(round(float(x)))
        return float(f"{float(x):.6g}")


@dataclass(frozen=True)
class PolicySpec:
    """A kernel profile, patches and sysctls: one side of a search."""

    profile: str | None = None
    policy: tuple[str, ...] = ()
    sysctl: dict[str, Any] = field(default_factory=dict)

    def label(self, scenario_profile: str = "") -> str:
        pols = [f"{Path(p.rpartition(':')[0]).name}:{p.rpartition(':')[2]}" if ".py:" in p else p
                for p in self.policy]
        parts = [self.profile or scenario_profile or "scenario's profile", *pols,
                 *(f"{k}={v}" for k, v in self.sysctl.items())]
        return " + ".join(parts)


@dataclass
class SearchSpec:
    """A parsed search file (or the same built from Python)."""

    path: Path | None
    name: str
    scenario: str
    objective: str
    policy: PolicySpec
    vs: PolicySpec | None = None
    description: str = ""
    dims: list[Dim] = field(default_factory=list)
    fixed: dict[str, Any] = field(default_factory=dict)
    budget: int = 200
    batch: int = 8
    seed: int = 1
    duration: int = 10_000_000_000
    threshold: float | None = None
    keep: float = 0.5
    optimiser: str = "tpe"


def resolve(path: str | Path) -> Path | None:
    """A search argument: a file, or a shipped search's name (experiments/searches/)."""
    return shipped_file("searches", path)


def builtin_searches() -> list[str]:
    """Names of the shipped searches (experiments/searches/)."""
    return shipped_names("searches")


def load_search(path: str | Path) -> SearchSpec:
    """Read and check a search file; SearchError names the file and the field."""
    p = resolve(path)
    if p is None:
        raise SearchError(f"{path}: no such search file (shipped searches: "
                          f"{', '.join(builtin_searches())})")
    try:
        doc = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise SearchError(f"{p}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise SearchError(f"{p}: not a text file") from None
    try:
        return parse_search(doc, p)
    except ScenarioError as exc:
        raise SearchError(f"{p}: {exc}") from None


def parse_search(doc: dict[str, Any], path: Path | None = None) -> SearchSpec:
    """A search document (the TOML as a dict) -> SearchSpec."""
    from tcpsim.searching.objective import OBJECTIVES
    _only(doc, _TOP_KEYS, "")
    head = doc.get("search")
    if not isinstance(head, dict):
        raise SearchError('no [search] table; start the file with [search] and '
                          'objective = "rcvbuf_ratio"')
    _only(head, _SEARCH_KEYS, "search.")
    scenario = head.get("scenario", "base/generic.toml")
    if not isinstance(scenario, str) or not scenario:
        raise SearchError('search.scenario: expected a built-in experiment or a file, e.g. '
                          'scenario = "generic-periodic"')
    objective = head.get("objective")
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise SearchError(f"search.objective: expected one of {', '.join(OBJECTIVES)}, "
                          f"got {objective!r}")
    spec = SearchSpec(path=path, name=str(head.get("name", path.stem if path else "search")),
                      scenario=_scenario_path(path, scenario), objective=str(objective),
                      policy=_policy(head, "search.", path),
                      description=str(head.get("description", "")))
    if "vs" in head:
        vs = head["vs"]
        if not isinstance(vs, dict):
            raise SearchError("search.vs: expected a table [search.vs] with profile, policy, sysctl")
        _only(vs, _VS_KEYS, "search.vs.")
        spec.vs = _policy(vs, "search.vs.", path)
    spec.budget = _count(head, "budget", spec.budget, 1)
    spec.batch = _count(head, "batch", spec.batch, 1)
    spec.seed = _count(head, "seed", spec.seed, 0)
    if "duration" in head:
        spec.duration = parse_duration(head["duration"], "search.duration", positive=True)
    if "threshold" in head:
        spec.threshold = _number(head["threshold"], "search.threshold")
    if "keep" in head:
        spec.keep = _number(head["keep"], "search.keep")
        if not 0 < spec.keep <= 1:
            raise SearchError(f"search.keep: expected a fraction in (0, 1], got {spec.keep!r}")
    if "optimiser" in head:
        if head["optimiser"] not in OPTIMISERS:
            raise SearchError(f"search.optimiser: expected one of {', '.join(OPTIMISERS)}, "
                              f"got {head['optimiser']!r}")
        spec.optimiser = head["optimiser"]
    fixed = _table(doc, "set")
    for k in fixed:
        _check_key(k, "set.")
    spec.fixed = dict(fixed)
    space = _table(doc, "space")
    if not space:
        raise SearchError('space: nothing to search; add a [space] table, e.g. '
                          '"writer.bytes" = { range = "1B..64KiB" }')
    for k, v in space.items():
        _check_key(k, "space.")
        if k in spec.fixed:
            raise SearchError(f"space.{k}: also in [set]; give each field once")
        dim = parse_dim(k, v, f"space.{k}")
        _check_when(dim, spec.dims, f"space.{k}.when")
        spec.dims.append(dim)
    return spec


def _check_when(dim: Dim, before: list[Dim], where: str) -> None:
    """A condition names a choice dim declared above this one and values among its choices."""
    earlier = {d.key: d for d in before}
    for key, allowed in dim.when:
        d = earlier.get(key)
        if d is None or d.kind != "choice":
            raise SearchError(f"{where}.{key}: a condition names a field searched by choices "
                              "and declared above this one in [space]")
        for a in allowed:
            if a not in d.choices:
                raise SearchError(f"{where}.{key}: {a!r} is not one of its choices "
                                  f"({', '.join(map(repr, d.choices))})")


def active_values(dims: list[Dim], values: dict[str, Any],
                  base: Callable[[str], Any]) -> dict[str, Any]:
    """`values` without the fields whose `when` does not hold (e.g. a reader period once the
    reader is no longer periodic): what a workload actually sets."""
    by_key = {d.key: d for d in dims}
    return {k: v for k, v in values.items()
            if k not in by_key or by_key[k].applies(values, base)}


def _only(table: dict[str, Any], allowed: set[str], prefix: str) -> None:
    for k in table:
        if k not in allowed:
            raise SearchError(f"{prefix}{k}: unknown field; use one of {', '.join(sorted(allowed))}")


def _table(doc: dict[str, Any], name: str) -> dict[str, Any]:
    t = doc.get(name, {})
    if not isinstance(t, dict):
        raise SearchError(f"{name}: expected a table [{name}]")
    return t


def _check_key(key: str, prefix: str) -> None:
    from tcpsim.sweeps.grid import check_key
    if key.split(".", 1)[0] in ("profile", "policy"):
        raise SearchError(f"{prefix}{key}: the policy is not a searched field; set it in "
                          "[search] (profile, policy) or [search.vs]")
    try:
        check_key(key, prefix.rstrip("."))
    except ScenarioError:
        raise SearchError(f"{prefix}{key}: not a scenario field; use duration, hz, seed, "
                          "sysctl.NAME or TABLE.FIELD (link, receiver, sender, writer, reader, "
                          "timing)") from None


def _policy(t: dict[str, Any], where: str, path: Path | None = None) -> PolicySpec:
    profile = t.get("profile")
    if profile is not None and (not isinstance(profile, str) or not profile):
        raise SearchError(f'{where}profile: expected a profile name such as "linux-6.1"')
    pol = t.get("policy", [])
    if isinstance(pol, str):
        pol = [] if pol in ("", "none") else [p for p in pol.split("+") if p]
    if not isinstance(pol, list) or not all(isinstance(p, str) and p for p in pol):
        raise SearchError(f'{where}policy: expected a patch name or a list, e.g. ["shrink-window"]')
    pol = [_beside(path, p) for p in pol]
    sysctl = t.get("sysctl", {})
    if not isinstance(sysctl, dict):
        raise SearchError(f'{where}sysctl: expected a table, e.g. '
                          '{ "net.ipv4.tcp_shrink_window" = 1 }')
    return PolicySpec(profile, tuple(pol), dict(sysctl))


def _beside(path: Path | None, policy: str) -> str:
    """A patch given as FILE.py:Class relative to the search file, made absolute."""
    file, sep, cls = policy.rpartition(":")
    if sep and file.endswith(".py") and path is not None and not Path(file).is_absolute() \
            and (path.parent / file).is_file():
        return f"{(path.parent / file).resolve()}:{cls}"
    return policy


def _count(t: dict[str, Any], key: str, default: int, least: int) -> int:
    v = t.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool) or v < least:
        raise SearchError(f"search.{key}: expected an integer of at least {least}, got {v!r}")
    return v


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise SearchError(f"{where}: expected a number, got {v!r}")
    return float(v)


def _scenario_path(path: Path | None, scenario: str) -> str:
    """A file beside the search, a file, a built-in experiment, or one of the shipped
    searches' bases (base/generic.toml, base/rpc.toml)."""
    from importlib import resources
    from tcpsim.scenario import builtin_experiment
    if path is not None and (path.parent / scenario).is_file():
        return str(path.parent / scenario)
    shipped = resources.files("tcpsim.experiments") / "searches" / scenario
    if shipped.is_file():
        return str(shipped)
    if Path(scenario).is_file() or builtin_experiment(scenario) is not None:
        return scenario
    raise SearchError(f"search.scenario: {scenario!r} is neither a file beside the search nor "
                      "a built-in experiment (tcpsim experiments)")


def parse_dim(key: str, v: Any, where: str) -> Dim:
    """One [space] entry: { range = "LO..HI", scale = "log"|"lin" } or { choices = [...] }."""
    if not isinstance(v, dict):
        raise SearchError(f'{where}: expected a table, e.g. {{ range = "1ms..100ms" }} or '
                          '{ choices = ["fast", "periodic"] }')
    for k in v:
        if k not in _DIM_KEYS:
            raise SearchError(f"{where}.{k}: unknown field; use range, scale, choices, default")
    default = v.get("default")
    when = _when(v.get("when", {}), f"{where}.when")
    if ("range" in v) == ("choices" in v):
        raise SearchError(f"{where}: give either range or choices")
    if "choices" in v:
        ch = v["choices"]
        if not isinstance(ch, list) or not ch:
            raise SearchError(f"{where}.choices: expected a non-empty list")
        if "scale" in v:
            raise SearchError(f"{where}.scale: only a range has a scale")
        return Dim(key, "choice", choices=tuple(ch), default=default, when=when)
    text = v["range"]
    if not isinstance(text, str) or ".." not in text:
        raise SearchError(f'{where}.range: expected "LO..HI", e.g. "0.1ms..100ms"')
    lo_t, _, hi_t = text.partition("..")
    lo_m, hi_m = _RANGE.match(lo_t), _RANGE.match(hi_t)
    if not lo_m or not hi_m:
        raise SearchError(f'{where}.range: {text!r}: write two numbers with units, e.g. "1B..64KiB"')
    units = {lo_m.group(2), hi_m.group(2)}
    lo: float
    hi: float
    if all(u in _TIME_UNITS for u in units):
        kind, lo, hi = "duration", parse_duration(lo_t.strip(), f"{where}.range"), \
            parse_duration(hi_t.strip(), f"{where}.range")
    elif all(u in _SIZE_UNITS for u in units):
        kind, lo, hi = "size", parse_size(lo_t.strip(), f"{where}.range"), \
            parse_size(hi_t.strip(), f"{where}.range")
    elif all(u.lower() in _RATE_UNITS for u in units):
        kind, lo, hi = "rate", parse_rate(lo_t.strip(), f"{where}.range"), \
            parse_rate(hi_t.strip(), f"{where}.range")
    elif units == {""}:
        integral = all(re.fullmatch(r"-?\d+", s.strip()) for s in (lo_t, hi_t))
        kind = "integer" if integral else "number"
        lo, hi = float(lo_m.group(1)), float(hi_m.group(1))
    else:
        raise SearchError(f"{where}.range: {text!r}: both ends need one unit: a size (B, KiB, MiB), "
                          "a duration (ns, us, ms, s), a rate (kbit, mbit, gbit) or none")
    if not lo < hi:
        raise SearchError(f"{where}.range: {text!r}: the low end must be below the high end")
    scale = v.get("scale", "lin" if kind in ("number", "integer") else "log")
    if scale not in ("lin", "log"):
        raise SearchError(f'{where}.scale: expected "lin" or "log", got {scale!r}')
    if scale == "log" and lo <= 0:
        raise SearchError(f"{where}.scale: a log scale needs a range above zero")
    return Dim(key, kind, float(lo), float(hi), scale == "log", default=default, when=when)


def _when(v: Any, where: str) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    """`when = { FIELD = VALUE or [VALUES] }` -> ((FIELD, (VALUES...)), ...)."""
    if not isinstance(v, dict):
        raise SearchError(f'{where}: expected a table, e.g. when = {{ "reader.kind" = "periodic" }}')
    out = []
    for k, allowed in v.items():
        vals = tuple(allowed) if isinstance(allowed, list) else (allowed,)
        if not vals:
            raise SearchError(f"{where}.{k}: expected a value or a non-empty list of values")
        out.append((k, vals))
    return tuple(out)
