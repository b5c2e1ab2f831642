"""The grid of a sweep: axes, points, their validation and their content hash.

An axis names a field of the scenario file the way the TOML spells it and lists values:

    sysctl.net.ipv4.tcp_adv_win_scale=-2,0,1,2     a receiver sysctl ([sysctl] table)
    link.rtt=1ms,20ms,100ms                        any field of a table: link, receiver,
    reader.bytes=1,100,3300                        sender, writer, reader, timing
    timing.host=exact,dev-vm-loaded                the run's application timing
    duration=60s  seed=1,2,3  hz=250,1000         top-level fields
    profile=linux-6.1,linux-6.18                   the kernel profile
    policy=none,shrink-window                      patches on top ("a+b" for two, "none")

Values are TOML values (`-2`, `[4096, 131072, 8388608]`, `true`) or bare words (`20ms`),
separated by commas outside brackets. The grid is the product of the axes. Every point is
built and validated -- scenario, profile, patches, sysctls -- before anything runs, so a bad
value stops the sweep at once with one line naming the point and the field. Points run in
worker processes; each is an ordinary run (same seed, same result), so the results do not
depend on the number of workers, and they come back in grid order. A point that fails
while running is reported and the others' results are kept.

Paired axes (study files) vary several fields together: one value of each per step.
Every point carries a content hash of everything that decides its result -- the fully
resolved scenario, profile, patches, sysctls, seed, duration, engine and tcpsim version --
under which its row is stored, so a re-run finds the points it already has.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import tcpsim
from tcpsim.core.sysctl import SysctlError
from tcpsim.catalog import ProfileError
from tcpsim.runner import RunOptions, choose_engine, prepare
from tcpsim.scenario import (
    Scenario, ScenarioError, read_scenario_file, scenario_from_dict, set_field, set_timing)

_TABLES = {"link", "receiver", "sender", "writer", "reader", "timing"}
_TOP_LEVEL = {"duration", "seed", "hz", "profile", "policy", "engine"}


@dataclass(frozen=True)
class Axis:
    """One dimension of the grid: a varied field and its values, or (paired) several fields
    stepping together -- then `keys` names them and each value is a tuple, one per key."""

    key: str
    values: tuple[Any, ...]
    keys: tuple[str, ...] = ()

    @property
    def fields(self) -> tuple[str, ...]:
        """The scenario fields this axis sets."""
        return self.keys or (self.key,)

    def settings(self) -> Iterator[dict[str, Any]]:
        """One {field: value} per step."""
        for v in self.values:
            yield dict(zip(self.keys, v)) if self.keys else {self.key: v}


@dataclass
class Point:
    """One grid point: its values, the scenario it runs, its result."""

    index: int
    values: dict[str, Any]
    scenario: Scenario
    skip: bool = True                  # time skipping (False: tick by tick)
    hash: str = ""                     # content hash (see point_hash)
    sysctls: dict[str, Any] = field(default_factory=dict)   # resolved, every sysctl
    summary: dict[str, Any] | None = None
    counters: dict[str, int] = field(default_factory=dict)
    error: str = ""
    host: Any = None                   # a host point: its HostScenario (tcpsim/host)

    def row(self) -> dict[str, Any]:
        """A flat record: point number, the axes' values, the summary (or the error)."""
        out: dict[str, Any] = {"point": self.index}
        out.update({k: _show(v) for k, v in self.values.items()})
        out.update(self.summary or {})
        out["error"] = self.error or (self.summary or {}).get("error") or ""
        return out


    @property
    def done(self) -> bool:
        """Finished, with a summary or an error."""
        return self.summary is not None or bool(self.error)


def _show(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, (list, dict)) else value


# -- parsing axes --------------------------------------------------------------------------------

def parse_axis(spec: str) -> Axis:
    """'KEY=V1,V2,...' -> Axis; raises ScenarioError with the fix on a malformed spec."""
    key, sep, text = spec.partition("=")
    key = key.strip()
    if not sep or not key or not text.strip():
        raise ScenarioError(f"--vary {spec!r}: expected KEY=VALUE[,VALUE...], "
                            "e.g. link.rtt=1ms,20ms or sysctl.net.ipv4.tcp_adv_win_scale=-2,1")
    check_key(key, "--vary")
    values = tuple(_parse_value(v) for v in _split_values(text))
    if not values or any(v == "" for v in values):
        raise ScenarioError(f"--vary {key}: empty value in {text!r}")
    return Axis(key, values)


def check_key(key: str, where: str) -> None:
    """Raise ScenarioError unless `key` names something a point can vary."""
    head = key.split(".", 1)[0]
    if (head in _HOST_TOP or (head == "class" and key.count(".") >= 2)
            or (head == "memcg" and key.count(".") == 1)):
        return                           # a host file's field (tcpsim/host, docs/hosts.md)
    if head not in _TABLES | _TOP_LEVEL | {"sysctl"} or (head == key and head in _TABLES | {"sysctl"}):
        raise ScenarioError(f"{where} {key}: not a scenario field; use profile, policy, duration, hz, "
                            "seed, engine, sysctl.NAME or TABLE.FIELD with TABLE one of "
                            + ", ".join(sorted(_TABLES)) + " (a host file: class.NAME.FIELD, "
                            "connections, cpus, sample, memcg.FIELD too)")


# the fields of a host file a sweep may vary besides the scenario's (docs/hosts.md)
_HOST_TOP = {"connections", "cpus", "sample"}


def _split_values(text: str) -> list[str]:
    """Split at commas that are not inside [...] or quotes."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def _parse_value(text: str) -> Any:
    """A TOML value if it is one (numbers, arrays, booleans, quoted strings), else the word."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


# -- building the grid -----------------------------------------------------------------------------

def build_points(scenario: str | Path, axes: list[Axis], base: RunOptions,
                 timing: str | None = None) -> list[Point]:
    """Every point of the grid, built and validated (ScenarioError/ProfileError/SysctlError
    naming the point on the first bad one). `timing` (`--timing`): every point's
    `[timing] host`, unless an axis varies it."""
    raw, source = read_scenario_file(scenario)
    host = isinstance(raw.get("class"), dict)          # a host file (tcpsim/host)
    if timing is not None and not host:
        set_timing(raw, timing)
    names = [k for a in axes for k in a.fields]
    if len(set(names)) != len(names):
        raise ScenarioError("--vary: the same field is varied twice: " + ", ".join(names))
    points = []
    for i, combo in enumerate(itertools.product(*(list(a.settings()) for a in axes))):
        values = {k: v for step in combo for k, v in step.items()}
        where = ", ".join(f"{k}={_show(v)}" for k, v in values.items())
        try:
            build = _build_host_point if host else _build_point
            points.append(build(i, raw, source, values, base))
        except (ScenarioError, ProfileError, SysctlError) as exc:
            raise type(exc)(f"sweep point {i} ({where}): {exc}") from None
    return points


def _build_point(i: int, raw: dict, source: str, values: dict[str, Any],
                 base: RunOptions) -> Point:
    doc = copy.deepcopy(raw)
    opts = RunOptions(profile=base.profile, policies=base.policies, sysctl=base.sysctl,
                      sender_sysctl=base.sender_sysctl, duration=base.duration, seed=base.seed,
                      hz=base.hz, skip=base.skip, engine=base.engine)
    for key, value in values.items():
        if key == "profile":
            opts.profile = str(value)
        elif key == "policy":
            opts.policies = base.policies + _policies(value)
        else:
            set_field(doc, key, value)
            if key == "duration":
                opts.duration = None            # the varied value wins over --duration
            if key == "seed":
                opts.seed = None
            if key == "hz":
                opts.hz = None
    sc = scenario_from_dict(doc, source=source)
    sc, profile = prepare(sc, opts)             # resolves profile and patches, checks the sysctls on it
    sc = sc.with_(engine=choose_engine(None, sc))   # the engine computing it, fixed here
    sysctls = profile.default_sysctls().with_overrides(sc.sysctl, known=profile.known_sysctls(),
                                                       profile=profile.name).as_dict()
    return Point(i, values, sc, opts.skip, point_hash(sc, profile.name, sysctls), sysctls)


def _build_host_point(i: int, raw: dict, source: str, values: dict[str, Any],
                      base: RunOptions) -> Point:
    """A point of a host file's grid: the axes set host fields (`class.bad.count`,
    `sysctl.net.ipv4.tcp_mem`, `profile`, `policy`, `seed`, ...) on the host document."""
    from tcpsim.catalog import get_profile
    from tcpsim.host.populations import expand
    from tcpsim.host.run import host_with
    from tcpsim.host.scenario import HostScenario
    host: HostScenario = host_with(
        raw, source, profile=base.profile, policies=base.policies, sysctl=base.sysctl,
        duration=base.duration, seed=base.seed, sets=tuple(values.items()))
    if base.sender_sysctl or base.hz is not None:
        raise ScenarioError("--sender-sysctl and --hz are not for a host; set them in its "
                            "classes' base scenarios")
    profile = get_profile(host.profile, host.policies)
    plan = expand(host)                         # every point's population built and checked
    first = plan.flows[0].scenario
    sc = first.with_(name=host.name, engine=choose_engine(base.engine or host.engine or None, first),
                     seed=host.seed, duration=host.duration)
    sysctls = profile.default_sysctls().with_overrides(
        host.sysctl, known=profile.known_sysctls(), profile=profile.name).as_dict()
    text = json.dumps({"host": host.as_dict(), "profile": profile.name, "engine": sc.engine,
                       "skip": base.skip, "tcpsim": tcpsim.__version__},
                      sort_keys=True, default=str)
    return Point(i, values, sc, base.skip, hashlib.sha256(text.encode()).hexdigest()[:32],
                 sysctls, host=host)


def _policies(value: Any) -> tuple[str, ...]:
    text = str(value).strip()
    if text in ("", "none"):
        return ()
    return tuple(p.strip() for p in text.split("+") if p.strip())




def point_hash(sc: Scenario, profile: str, sysctls: dict[str, Any]) -> str:
    """The content hash of a point: everything that decides its result and nothing else
    (the scenario's name, description and file are labels; time skipping gives identical
    results). 32 hex digits of SHA-256 over canonical JSON."""
    resolved = {k: v for k, v in sc.as_dict().items() if k not in ("name", "description", "source")}
    doc = {"scenario": resolved, "profile": profile, "patches": list(sc.policies),
           "sysctls": sysctls, "seed": sc.seed, "duration_ns": sc.duration, "engine": sc.engine,
           "tcpsim": tcpsim.__version__}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]
