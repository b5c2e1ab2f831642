"""Distributions of a host file's fields: a plain value, or a one-key table

    {uniform = [lo, hi]}          every value in [lo, hi] as likely
    {loguniform = [lo, hi]}       every decade as likely (lo > 0): RTTs, sizes
    {exponential = mean}          memoryless (e.g. lifetimes, start times)
    {choice = [a, b, ...]}        one of the values; `weights = [...]` beside it to skew

Bounds and means are written as the field takes them ("10ms", "64KiB", 0.5): a draw keeps
the unit (durations are drawn in nanoseconds and written back as "<n>ns", sizes in bytes).
Draws come from the connection's own generator (tcpsim/host/populations.py), in a fixed
order, so the same seed gives the same host.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Callable

from tcpsim.errors import ScenarioError
from tcpsim.units import UnitError, parse_duration, parse_size

KINDS = ("uniform", "loguniform", "exponential", "choice")


def is_dist_table(v: Any) -> bool:
    """Whether a TOML value is a distribution's table."""
    return isinstance(v, dict) and bool(v) and set(v) - {"weights"} <= set(KINDS) \
        and len(set(v) & set(KINDS)) == 1


@dataclass(frozen=True)
class Dist:
    """A field's value or distribution. `unit`: "duration" (ns), "size" (bytes), "number" or
    "value" (choice / constant of anything)."""

    kind: str                      # "const" or one of KINDS
    args: tuple[Any, ...]
    unit: str = "value"
    weights: tuple[float, ...] = ()

    @property
    def constant(self) -> bool:
        return self.kind == "const"

    def low(self) -> int | float:
        """The smallest value it can draw (numbers/durations/sizes; 0 otherwise)."""
        if self.kind == "const":
            a = self.args[0]
            return a if isinstance(a, (int, float)) else 0
        if self.kind in ("uniform", "loguniform"):
            lo: int | float = self.args[0]
            return lo
        if self.kind == "choice":
            nums = [a for a in self.args if isinstance(a, (int, float))]
            return min(nums) if nums else 0
        return 0

    def typical(self) -> float:
        """A central value (numbers/durations/sizes): the mean, or the geometric mean of a
        log-uniform range."""
        k, a = self.kind, self.args
        if k in ("const", "exponential"):
            return float(a[0]) if isinstance(a[0], (int, float)) else 0.0
        if k == "uniform":
            return float(a[0] + a[1]) / 2
        if k == "loguniform":
            return math.sqrt(float(a[0] * a[1]))
        return float(self.low())

    def draw(self, rng: random.Random) -> Any:
        """One value (durations: ns, sizes: bytes, as int; as written otherwise)."""
        k, a = self.kind, self.args
        if k == "const":
            return a[0]
        if k == "choice":
            if self.weights:
                return rng.choices(a, weights=self.weights)[0]
            return a[rng.randrange(len(a))]
        if k == "uniform":
            x = rng.uniform(a[0], a[1])
        elif k == "loguniform":
            x = math.exp(rng.uniform(math.log(a[0]), math.log(a[1])))
        else:
            x = rng.expovariate(1.0 / a[0]) if a[0] > 0 else 0.0
        return int(round(x)) if self.unit in ("duration", "size") else x

    def sampler(self) -> Callable[[random.Random], Any]:
        """`draw` as one function with its constants worked out once (the same draws, the
        same values): a host draws its connections' starts, lifetimes and fields with it."""
        k, a = self.kind, self.args
        whole = self.unit in ("duration", "size")
        if k == "const":
            v = a[0]
            return lambda rng: v
        if k == "choice":
            if self.weights:
                w = self.weights
                return lambda rng: rng.choices(a, weights=w)[0]
            n = len(a)
            return lambda rng: a[rng.randrange(n)]
        if k == "uniform":
            lo, hi = a
            if whole:
                return lambda rng: int(round(rng.uniform(lo, hi)))
            return lambda rng: rng.uniform(lo, hi)
        if k == "loguniform":
            llo, lhi = math.log(a[0]), math.log(a[1])
            if whole:
                return lambda rng: int(round(math.exp(rng.uniform(llo, lhi))))
            return lambda rng: math.exp(rng.uniform(llo, lhi))
        if a[0] <= 0:
            return self.draw
        lambd = 1.0 / a[0]
        if whole:
            return lambda rng: int(round(rng.expovariate(lambd)))
        return lambda rng: rng.expovariate(lambd)

    def value(self, rng: random.Random) -> Any:
        """A draw as a scenario field takes it (durations as "<n>ns")."""
        v = self.draw(rng)
        if self.unit == "duration" and isinstance(v, int) and self.kind != "const":
            return f"{v}ns"
        return v

    def describe(self) -> Any:
        """As written (JSON-friendly)."""
        if self.kind == "const":
            return self.args[0]
        d: dict[str, Any] = {self.kind: list(self.args) if len(self.args) > 1 or
                             self.kind == "choice" else self.args[0]}
        if self.weights:
            d["weights"] = list(self.weights)
        return d


def _number(v: Any, unit: str, where: str) -> tuple[int | float, str]:
    """A bound or mean -> (value in base units, unit)."""
    if isinstance(v, bool):
        raise ScenarioError(f"{where}: expected a number, duration or size, got {v!r}")
    if unit in ("duration", "any") and isinstance(v, str):
        try:
            return parse_duration(v, where), "duration"
        except UnitError:
            if unit == "duration":
                raise
    if unit == "duration" and isinstance(v, (int, float)):
        return parse_duration(v, where), "duration"
    if isinstance(v, str):
        try:
            return parse_size(v, where), "size"
        except UnitError:
            raise ScenarioError(f"{where}: {v!r} is not a number, duration or size") from None
    if isinstance(v, (int, float)):
        return v, "number"
    raise ScenarioError(f"{where}: expected a number, duration or size, got {v!r}")


def parse_dist(v: Any, where: str, unit: str = "any") -> Dist:
    """A field's value or distribution table -> Dist. `unit` "duration" reads plain numbers as
    seconds (as scenario durations do); "any" infers from the bounds."""
    if not isinstance(v, dict) or not v:
        if unit == "duration":
            return Dist("const", (parse_duration(v, where),), "duration")
        return Dist("const", (v,))
    if not is_dist_table(v):
        if unit == "duration":
            raise ScenarioError(f"{where}: expected a duration or a distribution "
                                f"({', '.join(KINDS)}), e.g. {{uniform = [\"0s\", \"5s\"]}}")
        return Dist("const", (v,))
    kind = next(k for k in v if k in KINDS)
    arg = v[kind]
    w = f"{where}.{kind}"
    if kind == "choice":
        if not isinstance(arg, list) or not arg:
            raise ScenarioError(f"{w}: expected a list of values, e.g. [1448, 2896]")
        weights = v.get("weights", [])
        if weights and (not isinstance(weights, list) or len(weights) != len(arg) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in weights)
                or not sum(weights) > 0):
            raise ScenarioError(f"{where}.weights: expected {len(arg)} non-negative numbers, "
                                "not all zero")
        vals = tuple(parse_duration(x, w) if unit == "duration" else x for x in arg)
        return Dist("choice", vals, "duration" if unit == "duration" else "value",
                    tuple(float(x) for x in weights))
    if "weights" in v:
        raise ScenarioError(f"{where}.weights: only a choice takes weights")
    if kind == "exponential":
        mean, u = _number(arg, unit, w)
        if mean <= 0:
            raise ScenarioError(f"{w}: the mean must be above zero, got {arg!r}")
        return Dist(kind, (mean,), u)
    if not isinstance(arg, list) or len(arg) != 2:
        raise ScenarioError(f"{w}: expected [low, high], e.g. [\"10ms\", \"50ms\"]")
    (lo, u1), (hi, u2) = _number(arg[0], unit, w), _number(arg[1], unit, w)
    if u1 != u2:
        raise ScenarioError(f"{w}: {arg[0]!r} and {arg[1]!r} are not of one kind "
                            "(both durations, sizes or numbers)")
    if not lo <= hi:
        raise ScenarioError(f"{w}: the low bound {arg[0]!r} is above the high one {arg[1]!r}")
    if kind == "loguniform" and lo <= 0:
        raise ScenarioError(f"{w}: a log-uniform range must start above zero, got {arg[0]!r}")
    return Dist(kind, (lo, hi), u1)
