"""Parameter sweeps (`tcpsim sweep`): one scenario, a grid of variations, run in parallel.

An axis names a field of the scenario file the way the TOML spells it and lists values:

    sysctl.net.ipv4.tcp_adv_win_scale=-2,0,1,2     a receiver sysctl ([sysctl] table)
    link.rtt=1ms,20ms,100ms                        any field of a table: link, receiver,
    reader.bytes=1,100,3300                        sender, writer, reader
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
"""

from __future__ import annotations

import copy
import csv
import itertools
import json
import os
import tomllib
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from tcpsim.core.sysctl import SysctlError
from tcpsim.profiles import ProfileError
from tcpsim.runner import RunOptions, prepare, run
from tcpsim.scenario import Scenario, ScenarioError, read_scenario_file, scenario_from_dict

_TABLES = {"link", "receiver", "sender", "writer", "reader"}
_TOP_LEVEL = {"duration", "seed", "hz", "profile", "policy"}

# summary fields shown in the terminal table (all of them go to --out / --json)
SHOWN = ("peak_sk_rmem_alloc", "peak_sk_rcvbuf", "zero_windows_sent", "want_zero_window",
         "drops", "goodput_mbps", "died_at_s")


@dataclass(frozen=True)
class Axis:
    """One varied field and its values."""

    key: str
    values: tuple[Any, ...]


@dataclass
class Point:
    """One grid point: its values, the scenario it runs, its result."""

    index: int
    values: dict[str, Any]
    scenario: Scenario
    skip: bool = True                  # time skipping (False: tick by tick)
    summary: dict[str, Any] | None = None
    counters: dict[str, int] = field(default_factory=dict)
    error: str = ""

    def row(self) -> dict[str, Any]:
        """A flat record: point number, the axes' values, the summary (or the error)."""
        out: dict[str, Any] = {"point": self.index}
        out.update({k: _show(v) for k, v in self.values.items()})
        out.update(self.summary or {})
        out["error"] = self.error or (self.summary or {}).get("error") or ""
        return out


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
    head = key.split(".", 1)[0]
    if head not in _TABLES | _TOP_LEVEL | {"sysctl"} or (head == key and head in _TABLES | {"sysctl"}):
        raise ScenarioError(f"--vary {key}: not a scenario field; use profile, policy, duration, hz, "
                            "seed, sysctl.NAME or TABLE.FIELD with TABLE one of "
                            + ", ".join(sorted(_TABLES)))
    values = tuple(_parse_value(v) for v in _split_values(text))
    if not values or any(v == "" for v in values):
        raise ScenarioError(f"--vary {key}: empty value in {text!r}")
    return Axis(key, values)


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

def build_points(scenario: str | Path, axes: list[Axis], base: RunOptions) -> list[Point]:
    """Every point of the grid, built and validated (ScenarioError/ProfileError/SysctlError
    naming the point on the first bad one)."""
    raw, source = read_scenario_file(scenario)
    names = [a.key for a in axes]
    if len(set(names)) != len(names):
        raise ScenarioError("--vary: the same field is varied twice: " + ", ".join(names))
    points = []
    for i, combo in enumerate(itertools.product(*(a.values for a in axes))):
        values = dict(zip(names, combo))
        where = ", ".join(f"{k}={_show(v)}" for k, v in values.items())
        try:
            points.append(_build_point(i, raw, source, values, base))
        except (ScenarioError, ProfileError, SysctlError) as exc:
            raise type(exc)(f"sweep point {i} ({where}): {exc}") from None
    return points


def _build_point(i: int, raw: dict, source: str, values: dict[str, Any],
                 base: RunOptions) -> Point:
    doc = copy.deepcopy(raw)
    opts = RunOptions(profile=base.profile, policies=base.policies, sysctl=base.sysctl,
                      duration=base.duration, seed=base.seed, skip=base.skip)
    for key, value in values.items():
        if key == "profile":
            opts.profile = str(value)
        elif key == "policy":
            opts.policies = base.policies + _policies(value)
        elif key.startswith("sysctl."):
            doc.setdefault("sysctl", {})[key[len("sysctl."):]] = value
        elif "." in key:
            table, name = key.split(".", 1)
            doc.setdefault(table, {})[name] = value
        else:
            doc[key] = value
            if key == "duration":
                opts.duration = None            # the varied value wins over --duration
            if key == "seed":
                opts.seed = None
    sc = scenario_from_dict(doc, source=source)
    sc, _ = prepare(sc, opts)        # resolves profile and patches, checks the sysctls on it
    return Point(i, values, sc, opts.skip)


def _policies(value: Any) -> tuple[str, ...]:
    text = str(value).strip()
    if text in ("", "none"):
        return ()
    return tuple(p.strip() for p in text.split("+") if p.strip())


# -- running -----------------------------------------------------------------------------------------

def _run_point(point: Point, trace: str | None) -> tuple[dict[str, Any], dict[str, int]]:
    opts = RunOptions(skip=point.skip, trace=trace)
    result, _ = run(point.scenario, opts)
    return result.summary, result.counters


def run_sweep(points: list[Point], jobs: int = 0, trace_dir: Path | None = None,
              on_done: Callable[[Point, int], None] | None = None) -> list[Point]:
    """Run every point (in `jobs` worker processes; 1 = in this process) and fill in its
    summary or error. Returns the points in grid order. On Ctrl-C the points finished so far
    keep their results (the others have neither summary nor error) and KeyboardInterrupt
    propagates."""
    jobs = jobs or os.cpu_count() or 1
    if trace_dir is not None:
        trace_dir.mkdir(parents=True, exist_ok=True)

    def trace_of(p: Point) -> str | None:
        return str(trace_dir / f"point-{p.index:04d}.parquet") if trace_dir else None

    done = 0
    if jobs == 1:
        for p in points:
            _finish(p, lambda: _run_point(p, trace_of(p)))
            done += 1
            if on_done:
                on_done(p, done)
        return points
    with ProcessPoolExecutor(max_workers=min(jobs, len(points))) as pool:
        pending: dict[Future, Point] = {pool.submit(_run_point, p, trace_of(p)): p for p in points}
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    p = pending.pop(fut)
                    _finish(p, fut.result)
                    done += 1
                    if on_done:
                        on_done(p, done)
        except KeyboardInterrupt:
            for fut in pending:
                fut.cancel()
            raise
    return points


def _finish(point: Point, get: Callable[[], tuple[dict, dict]]) -> None:
    try:
        point.summary, point.counters = get()
    except (ScenarioError, ProfileError, SysctlError) as exc:
        point.error = str(exc)
    except Exception as exc:  # noqa: BLE001 -- a model bug in one point must not lose the rest
        point.error = f"internal error: {type(exc).__name__}: {exc}"


# -- output --------------------------------------------------------------------------------------

def write_results(points: list[Point], path: Path) -> int:
    """Write the finished points' rows (and counters) to CSV or JSON by suffix; returns how
    many were written."""
    rows = [dict(p.row(), **{f"counter.{k}": v for k, v in p.counters.items()})
            for p in points if p.summary is not None or p.error]
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_text(json.dumps(rows, indent=2, sort_keys=True) + "\n")
        return len(rows)
    columns: list[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=columns)
        out.writeheader()
        out.writerows(rows)
    return len(rows)


def table_lines(points: list[Point], axes: list[Axis]) -> list[str]:
    """A terminal table: one line per point, the axes then the headline numbers."""
    cols = ["point"] + [a.key for a in axes] + list(SHOWN)
    rows = [[str(r.get(c, "")) if r.get(c) is not None else "-" for c in cols]
            for r in (p.row() for p in points)]
    errors = [p.row()["error"] for p in points]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths))]
    for r, err in zip(rows, errors):
        lines.append("  ".join(v.rjust(w) for v, w in zip(r, widths)) + (f"  {err}" if err else ""))
    return lines
