"""A host scenario's classes -> the flows of one run (a `HostPlan`).

Each class has `count` slots. A slot's first connection opens at a drawn `start`; with a
`lifetime`, it closes after a drawn lifetime and the slot's next connection opens at that
moment (churn: the class keeps `count` connections open once all have started), until the
run ends. Connection (class, slot, generation) draws its start, lifetime and `set` fields, in
that order, from its own generator, seeded by the run's seed and those three -- so the
same seed gives the same host, and changing one class's count does not move another class's
draws. Its scenario gets its own seed the same way (link loss, jitter, application timing).

Flows are numbered in opening order (ties: class order, slot, generation): connection 0 is
the first to open, as both engines expect.
"""

from __future__ import annotations

import copy
import hashlib
import random
from dataclasses import replace
from typing import Any, Callable

from tcpsim.errors import ScenarioError
from tcpsim.host.dist import Dist
from tcpsim.host.plan import Flow, HostPlan, with_fields
from tcpsim.host.scenario import MAX_CONNECTIONS, ConnClass, HostScenario
from tcpsim.scenario import Scenario, scenario_from_dict, set_field, set_timing
from tcpsim.units import parse_duration, parse_size


def _key(seed: int, cls: str, slot: int, gen: int) -> str:
    return f"tcpsim-host/{seed}/{cls}/{slot}/{gen}"


def conn_rng(seed: int, cls: str, slot: int, gen: int) -> random.Random:
    """The generator of connection (cls, slot, gen)'s draws."""
    return random.Random(_key(seed, cls, slot, gen))


def conn_seed(seed: int, cls: str, slot: int, gen: int) -> int:
    """Connection (cls, slot, gen)'s scenario seed (63 bits)."""
    h = hashlib.sha256(_key(seed, cls, slot, gen).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


# Fields a class may draw per connection that are applied to the parsed base scenario
# directly (no parse per connection): field -> (unit parser, how to apply the value).
def _link(**kw: str) -> Callable[[Scenario, int], Scenario]:
    def apply(sc: Scenario, v: int) -> Scenario:
        changes = {k: (v // 2 if how == "half" else v - v // 2 if how == "rest" else v)
                   for k, how in kw.items()}
        out: Scenario = with_fields(sc, link=with_fields(sc.link, **changes))
        return out
    return apply


def _app_field(app: str, name: str) -> Callable[[Scenario, int], Scenario]:
    def apply(sc: Scenario, v: int) -> Scenario:
        out: Scenario = with_fields(sc, **{app: with_fields(getattr(sc, app), **{name: v})})
        return out
    return apply


_FAST: dict[str, tuple[Callable[[Any, str], int], Callable[[Scenario, int], Scenario]]] = {
    "link.rtt": (parse_duration, _link(delay_ab="half", delay_ba="rest")),
    "link.delay": (parse_duration, _link(delay_ab="all", delay_ba="all")),
    "link.delay_ab": (parse_duration, _link(delay_ab="all")),
    "link.delay_ba": (parse_duration, _link(delay_ba="all")),
    "link.jitter": (parse_duration, _link(jitter="all")),
    "writer.every": (parse_duration, _app_field("writer", "every")),
    "reader.every": (parse_duration, _app_field("reader", "every")),
    "writer.bytes": (parse_size, _app_field("writer", "bytes")),
    "reader.bytes": (parse_size, _app_field("reader", "bytes")),
}


class _ClassBuilder:
    """Builds one class's scenarios. Drawn fields of `_FAST` are applied to the base scenario
    parsed once -- after checking, at the extremes of every distribution (its bounds, every
    choice), that this gives exactly what parsing the document gives (so the same checks
    hold in between, and a base whose other fields interact falls back); any other drawn
    field parses the document per connection (memoized on the values)."""

    def __init__(self, c: ConnClass, host: HostScenario, timing: str | None) -> None:
        self.c = c
        self.host = host
        self.timing = timing
        self.memo: dict[tuple[Any, ...], Scenario] = {}
        drawn = [(k, d) for k, d in c.sets if not d.constant]
        self.fixed = tuple((k, d.args[0]) for k, d in c.sets if d.constant)
        self.fast = bool(drawn) and all(k in _FAST for k, _ in drawn)
        if self.fast:
            self.base = self._parse(self.fixed)
            self.fast = all(self._parse(self.fixed + vals) == self._apply(vals)
                            for vals in _extremes(drawn))

    def _apply(self, values: tuple[tuple[str, Any], ...]) -> Scenario:
        sc = self.base
        for k, v in values:
            if any(k == f for f, _ in self.fixed):
                continue
            unit, apply = _FAST[k]
            sc = apply(sc, unit(v, f"class.{self.c.name}.set.{k}"))
        return sc

    def scenario(self, values: tuple[tuple[str, Any], ...]) -> Scenario:
        if self.fast:
            return self._apply(tuple((k, v) for k, v in values if (k, v) not in self.fixed))
        key = tuple((k, repr(v)) for k, v in values)
        sc = self.memo.get(key)
        if sc is None:
            sc = self._parse(values)
            if len(self.memo) < 4096:
                self.memo[key] = sc
        return sc

    def _parse(self, values: tuple[tuple[str, Any], ...]) -> Scenario:
        doc = copy.deepcopy(self.c.doc)
        for k, v in values:
            set_field(doc, k, v, f"class.{self.c.name}.set.{k}")
        if self.timing is not None:
            set_timing(doc, self.timing)
        doc["duration"] = f"{self.host.duration}ns"
        if self.host.hz:
            doc["hz"] = self.host.hz
        try:
            sc = scenario_from_dict(doc, source=self.host.source)
        except ScenarioError as exc:
            raise ScenarioError(f"class.{self.c.name} (base {self.c.base}): {exc}") from None
        return replace(sc, name=f"{self.host.name}/{self.c.name}", profile=self.host.profile,
                       policies=self.host.policies)


def _extremes(drawn: list[tuple[str, Dist]]) -> list[tuple[tuple[str, Any], ...]]:
    """Value sets at the distributions' extremes: every field at its low end, every field at
    its high end, and each choice's every value (others low)."""
    def ends(d: Dist) -> list[Any]:
        if d.kind == "choice":
            return list(d.args)
        if d.kind == "exponential":
            lo, hi = 0, int(d.args[0] * 50)       # P(draw > 50 x mean) = e^-50
        else:
            lo, hi = d.args[0], d.args[1]
        return [f"{int(round(x))}ns" if d.unit == "duration" else int(round(x))
                if d.unit == "size" else x for x in (lo, hi)]
    lows = tuple((k, ends(d)[0]) for k, d in drawn)
    out = [lows, tuple((k, ends(d)[-1]) for k, d in drawn)]
    for i, (k, d) in enumerate(drawn):
        for v in ends(d)[1:-1]:
            out.append(lows[:i] + ((k, v),) + lows[i + 1:])
    return out


def _shift(sc: Scenario, start: int, seed: int) -> Scenario:
    """The class scenario for a connection opening at `start` with `seed`: its applications'
    own start times count from its opening."""
    out: Scenario
    if not start:
        out = with_fields(sc, seed=seed)
        return out
    apps = {k: with_fields(getattr(sc, k), start=getattr(sc, k).start + start)
            for k in ("writer", "reader", "rev_writer", "rev_reader") if getattr(sc, k) is not None}
    out = with_fields(sc, seed=seed, **apps)
    return out


def expand(host: HostScenario, timing: str | None = None) -> HostPlan:
    """The host's flows for one run (`timing`: --timing, the run's application timing)."""
    raw: list[tuple[int, int, int, int, Flow]] = []
    for ci, c in enumerate(host.classes):
        builder = _ClassBuilder(c, host, timing)
        for slot in range(c.count):
            start, gen = -1, 0
            while True:
                rng = conn_rng(host.seed, c.name, slot, gen)
                if start < 0:
                    start = min(int(c.start.draw(rng)), host.duration)
                stop = 0
                if c.lifetime is not None:
                    life = max(1, int(c.lifetime.draw(rng)))
                    stop = start + life if start + life < host.duration else 0
                values = tuple((k, d.value(rng)) for k, d in c.sets)
                seed = conn_seed(host.seed, c.name, slot, gen)
                sc = _shift(builder.scenario(values), start, seed)
                raw.append((start, ci, slot, gen, Flow(sc, start, stop, ci)))
                if len(raw) > MAX_CONNECTIONS:
                    raise ScenarioError(f"class.{c.name}: the host would open more than "
                                        f"{MAX_CONNECTIONS:_} connections over its duration; "
                                        "use fewer or longer-lived connections")
                if not stop:
                    break
                start, gen = stop, gen + 1
    if not raw:
        raise ScenarioError("class: every class has count 0; give at least one connection")
    raw.sort(key=lambda r: r[:4])
    flows = tuple(r[4] for r in raw)
    return HostPlan(flows=flows, duration=host.duration,
                    classes=tuple(c.name for c in host.classes), sysctl=dict(host.sysctl),
                    ncpus=host.cpus, sample_every=host.sample_every,
                    local_peers=host.peers == "local",
                    traced=frozenset(host.trace_connections), name=host.name, seed=host.seed,
                    memcg=host.memcg, threads=host.threads)
