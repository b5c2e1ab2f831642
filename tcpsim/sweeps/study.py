"""Study files: a sweep written down (`tcpsim sweep study.toml`).

    [study]
    scenario = "seed-unbounded-growth"   # a built-in experiment, or a path from this file
    description = "..."
    duration = "20s"                     # every point (default: the scenario's)
    profile = "linux-6.1"                # every point (optional), like policies = [...], hz
    seeds = 2                            # seeds 1..2 (or a list: [1, 7]); an axis of its own
    metrics = ["peak_sk_rmem_alloc", "counter.TcpExtTCPWantZeroWindowAdv"]
    x = "reader.bytes"                   # the report's x axis (default: the first axis)

    [set]                                # one value for every point
    "reader.period" = "20s"

    [axes]                               # the grid is the product of the axes
    "link.rtt" = { range = "5ms..80ms", steps = 3, scale = "log" }
    "reader.bytes" = [1, 100, 3300]
    policy = ["none", "shrink-window"]

    [paired.reader]                      # fields that step together: one axis
    "reader.bytes" = [1, 3300]
    "reader.every" = ["1ms", "2ms"]

Axis names are those of `--vary` (TABLE.FIELD, sysctl.NAME, profile, policy, duration, hz,
seed). A range "A..B" takes `steps` values from A to B, evenly spaced (scale = "lin", the
default) or evenly spaced in ratio (scale = "log"); both ends carry the same unit, which the
values keep, to 4 significant digits ("5ms..80ms" in 3 log steps: 5ms, 20ms, 80ms); plain
integers stay integers ("1..3300"). Every mistake is a StudyError
naming the file and the field.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcpsim.core.constants import NS_PER_MS
from tcpsim.core.sysctl import SysctlError
from tcpsim.catalog import ProfileError
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import (ScenarioError, builtin_experiment, parse_duration, shipped_file,
                             shipped_names)
from tcpsim.sweeps.grid import Axis, Point, build_points, check_key
from tcpsim.sweeps.table import SHOWN

_STUDY_KEYS = {"scenario", "name", "description", "duration", "profile", "policies", "hz",
               "seeds", "metrics", "x"}
_TOP_KEYS = {"study", "axes", "paired", "set"}
_RANGE_KEYS = {"range", "steps", "scale"}
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")


class StudyError(ScenarioError):
    """A study file that cannot be used, with the file, the field and the fix."""


@dataclass
class Study:
    """A parsed study: what to sweep and what to show."""

    path: Path
    name: str
    scenario: str
    description: str = ""
    axes: list[Axis] = field(default_factory=list)
    duration: int | None = None
    profile: str | None = None
    policies: tuple[str, ...] = ()
    hz: int | None = None
    metrics: list[str] = field(default_factory=list)
    x: str = ""


def is_study(path: str | Path) -> bool:
    """A TOML file with a [study] (or [axes], [paired.*]) table, or the name of a shipped
    study. A file that is not valid TOML counts if it mentions [study] (so that its error
    comes from the study parser)."""
    p = resolve(path)
    if p is None:
        return False
    try:
        text = p.read_text(errors="replace")
    except OSError:
        return False
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "[study]" in text
    return any(k in doc for k in ("study", "axes", "paired"))    # no scenario has these


def resolve(path: str | Path) -> Path | None:
    """The file a study argument names: a path, or a shipped study's name."""
    return shipped_file("studies", path)


def builtin_studies() -> list[str]:
    """Names of the shipped studies (experiments/studies/)."""
    return shipped_names("studies")


def load_study(path: str | Path) -> Study:
    """Read and check a study file (StudyError naming the file and the field)."""
    p = resolve(path)
    if p is None:
        raise StudyError(f"{path}: no such study file")
    try:
        doc = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{p}: not valid TOML: {exc}") from None
    try:
        return _parse(p, doc)
    except StudyError as exc:
        raise StudyError(f"{p}: {exc}") from None
    except ScenarioError as exc:       # a duration, from tcpsim.scenario
        raise StudyError(f"{p}: {exc}") from None


def _parse(p: Path, doc: dict[str, Any]) -> Study:
    _only(doc, _TOP_KEYS, "")
    head = doc.get("study")
    if not isinstance(head, dict):
        raise StudyError("no [study] table; start the file with [study] and scenario = \"NAME\"")
    _only(head, _STUDY_KEYS, "study.")
    scenario = head.get("scenario")
    if not isinstance(scenario, str) or not scenario:
        raise StudyError('study.scenario: missing; name a built-in experiment or a scenario file, '
                         'e.g. scenario = "seed-unbounded-growth"')
    st = Study(path=p, name=str(head.get("name", p.stem)), scenario=_scenario_path(p, scenario),
               description=str(head.get("description", "")))
    if "duration" in head:
        st.duration = parse_duration(head["duration"], "study.duration", positive=True)
    if "profile" in head:
        st.profile = _string(head["profile"], "study.profile")
    if "policies" in head:
        pol = head["policies"]
        if not isinstance(pol, list) or not all(isinstance(x, str) for x in pol):
            raise StudyError('study.policies: expected a list of patch names, e.g. ["shrink-window"]')
        st.policies = tuple(pol)
    if "hz" in head:
        if not isinstance(head["hz"], int) or isinstance(head["hz"], bool):
            raise StudyError("study.hz: expected an integer (100, 250, 300 or 1000)")
        st.hz = head["hz"]
    st.axes = [Axis(k, (v,)) for k, v in _table(doc, "set").items() if _key(k, "set.")]
    st.axes += [Axis(k, _values(v, f"axes.{k}")) for k, v in _table(doc, "axes").items()
                if _key(k, "axes.")]
    st.axes += [_paired(name, t) for name, t in _table(doc, "paired").items()]
    if "seeds" in head:
        st.axes.append(Axis("seed", _seeds(head["seeds"])))
    fields = [f for a in st.axes for f in a.fields]
    dup = sorted({f for f in fields if fields.count(f) > 1})
    if dup:
        raise StudyError(f"{dup[0]}: set by more than one of [set], [axes], [paired.*] and "
                         "study.seeds; give each field once")
    st.metrics = _metrics(head.get("metrics", []))
    st.x = _x(head.get("x", ""), fields)
    return st


def _only(table: dict, allowed: set[str], prefix: str) -> None:
    for k in table:
        if k not in allowed:
            raise StudyError(f"{prefix}{k}: unknown field; use one of {', '.join(sorted(allowed))}")


def _table(doc: dict, name: str) -> dict[str, Any]:
    t = doc.get(name, {})
    if not isinstance(t, dict):
        raise StudyError(f"{name}: expected a table [{name}]")
    return t


def _key(key: str, prefix: str) -> bool:
    try:
        check_key(key, prefix.rstrip(".") + ":")
    except ScenarioError:
        raise StudyError(f"{prefix}{key}: not a scenario field; use profile, policy, duration, hz, "
                         "seed, engine, sysctl.NAME or TABLE.FIELD (link, receiver, sender, writer, reader)"
                         ) from None
    return True


def _string(v: Any, where: str) -> str:
    if not isinstance(v, str) or not v:
        raise StudyError(f"{where}: expected a string")
    return v


def _scenario_path(study: Path, scenario: str) -> str:
    """A path relative to the study file, else the name as given (a built-in experiment)."""
    rel = study.parent / scenario
    if rel.is_file():
        return str(rel)
    if Path(scenario).is_file() or builtin_experiment(scenario) is not None:
        return scenario
    raise StudyError(f"study.scenario: {scenario!r} is neither a file beside the study nor a "
                     "built-in experiment (tcpsim experiments)")


def _values(v: Any, where: str) -> tuple[Any, ...]:
    """An axis's values: a non-empty list, or a range table."""
    if isinstance(v, list):
        if not v:
            raise StudyError(f"{where}: empty list; give at least one value")
        return tuple(v)
    if isinstance(v, dict):
        return expand_range(v, where)
    raise StudyError(f'{where}: expected a list of values or a range table, e.g. [1, 100] or '
                     '{ range = "1ms..100ms", steps = 5, scale = "log" }')


def expand_range(t: dict[str, Any], where: str) -> tuple[Any, ...]:
    """{range = "A..B", steps = N, scale = "lin"|"log"} -> N values from A to B."""
    for k in t:
        if k not in _RANGE_KEYS:
            raise StudyError(f"{where}.{k}: unknown field of a range; use range, steps, scale")
    text, steps, scale = t.get("range"), t.get("steps"), t.get("scale", "lin")
    if not isinstance(text, str) or ".." not in text:
        raise StudyError(f'{where}.range: expected "FROM..TO", e.g. "1ms..100ms"')
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 2:
        raise StudyError(f"{where}.steps: expected an integer of at least 2 (the number of values)")
    if scale not in ("lin", "log"):
        raise StudyError(f'{where}.scale: expected "lin" or "log", got {scale!r}')
    lo_text, _, hi_text = text.partition("..")
    lo, hi = _NUMBER.match(lo_text), _NUMBER.match(hi_text)
    if not lo or not hi:
        raise StudyError(f'{where}.range: {text!r}: write two numbers with the same unit, e.g. "1ms..100ms"')
    unit = lo.group(2)
    if hi.group(2) != unit:
        raise StudyError(f"{where}.range: {text!r}: both ends need the same unit "
                         f"({lo.group(2) or 'none'} vs {hi.group(2) or 'none'})")
    a, b = float(lo.group(1)), float(hi.group(1))
    if scale == "log" and (a <= 0 or b <= 0):
        raise StudyError(f"{where}.range: a log scale needs both ends above zero")
    if scale == "log":
        nums = [a * (b / a) ** (i / (steps - 1)) for i in range(steps)]
    else:
        nums = [a + (b - a) * i / (steps - 1) for i in range(steps)]
    integral = not unit and _is_int(lo.group(1)) and _is_int(hi.group(1))
    out: list[Any] = []
    for n in nums:
        v = _tidy(n, integral)
        v = f"{v}{unit}" if unit else v
        if v not in out:
            out.append(v)
    return tuple(out)


def _is_int(text: str) -> bool:
    return re.fullmatch(r"-?\d+", text.strip()) is not None


def _tidy(n: float, integral: bool) -> int | float:
    """Round to an integer when both ends are plain integers (a count: bytes, packets),
    else to 4 significant digits ("4.642ms")."""
    if integral:
        return int(round(n))
    if n == 0:
        return 0
    r = round(n, 3 - int(math.floor(math.log10(abs(n)))))
    return int(r) if r == int(r) else r


def _paired(name: str, t: Any) -> Axis:
    where = f"paired.{name}"
    if not isinstance(t, dict) or len(t) < 2:
        raise StudyError(f"{where}: expected a table of two or more fields that step together")
    cols = {k: _values(v, f"{where}.{k}") for k, v in t.items() if _key(k, where + ".")}
    lengths = {k: len(v) for k, v in cols.items()}
    if len(set(lengths.values())) != 1:
        raise StudyError(f"{where}: the fields need as many values each; got "
                         + ", ".join(f"{k}: {n}" for k, n in lengths.items()))
    return Axis(name, tuple(zip(*cols.values())), keys=tuple(cols))


def _seeds(v: Any) -> tuple[int, ...]:
    if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
        return tuple(range(1, v + 1))
    if isinstance(v, list) and v and all(isinstance(s, int) and not isinstance(s, bool) for s in v):
        return tuple(v)
    raise StudyError("study.seeds: expected a count (seeds = 3: seeds 1, 2, 3) or a list of integers")


def _metrics(v: Any) -> list[str]:
    if not isinstance(v, list) or not all(isinstance(m, str) and m for m in v):
        raise StudyError('study.metrics: expected a list of summary fields or counter.NAME, '
                         'e.g. ["peak_sk_rmem_alloc", "counter.TcpExtTCPRcvCollapsed"]')
    return list(v)


def _x(v: Any, fields: list[str]) -> str:
    if v == "":
        return ""
    if v not in fields:
        raise StudyError(f"study.x: {v!r} is not one of the study's fields ({', '.join(fields)})")
    return v


def check_metrics(study: Study, known: set[str]) -> None:
    """Every metric names a summary field or a counter (`known`, from a finished run)."""
    for m in study.metrics:
        if m not in known:
            near = sorted(k for k in known if m.split(".")[-1].lower() in k.lower())[:4]
            raise StudyError(f"{study.path}: study.metrics: {m!r} is neither a summary field nor "
                             "counter.NAME" + (f"; did you mean {', '.join(near)}?" if near else
                                               "; see the columns of a results file"))


@dataclass
class Plan:
    """A sweep ready to run: its name (the results directory's default), axes, points, the
    metrics to show, and the study it comes from (None for a scenario with --vary)."""

    name: str
    axes: list[Axis]
    points: list[Point]
    metrics: list[str]
    study: Study | None = None


def plan_sweep(target: str, axes: list[Axis], base: RunOptions, timing: str | None = None) -> Plan:
    """The points of a study file (its axes, then `axes`) or of a scenario over `axes`.
    `base` (profile, patches, sysctls, duration) applies to every point and wins over the
    study's, and so does `timing` (`--timing`, the points' `[timing] host`). Every point is
    built and checked; the study's metrics are checked against the
    columns of a 1 ms probe run of the first point."""
    if not is_study(target):
        if not axes:
            raise ScenarioError(f"sweep {target}: a scenario needs --vary KEY=V1,V2,... "
                                "(or give a study file)")
        points = build_points(target, axes, base, timing)
        if points and points[0].host is not None:
            from tcpsim.host.run import host_metrics
            return Plan(Path(target).stem, axes, points, host_metrics(points[0].host))
        return Plan(Path(target).stem, axes, points, list(SHOWN))
    st = load_study(target)
    opts = RunOptions(profile=base.profile or st.profile, policies=st.policies + base.policies,
                      sysctl=base.sysctl, sender_sysctl=base.sender_sysctl, skip=base.skip,
                      hz=base.hz if base.hz is not None else st.hz,
                      duration=base.duration if base.duration is not None else st.duration,
                      engine=base.engine)
    axes = st.axes + axes
    try:
        points = build_points(st.scenario, axes, opts, timing)
    except (ScenarioError, ProfileError, SysctlError) as exc:
        raise type(exc)(f"{st.path}: {exc}") from None
    if not any(len(a.values) > 1 for a in axes):   # after [set] is checked: a typo there first
        raise StudyError(f"{st.path}: axes: nothing varies; add an [axes] table, e.g. "
                         "\"link.rtt\" = [\"1ms\", \"20ms\"], or --vary KEY=V1,V2")
    if st.metrics:
        probe, _ = run(points[0].scenario.with_(duration=NS_PER_MS))
        check_metrics(st, set(probe.summary) | {f"counter.{k}" for k in probe.counters})
    return Plan(st.name, axes, points, st.metrics or list(SHOWN), st)
