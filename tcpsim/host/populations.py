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

import _random
import copy
import hashlib
import random
from dataclasses import replace
from typing import Any, Callable

from tcpsim.engine.result import gc_paused
from tcpsim.errors import ScenarioError
from tcpsim.host.dist import Dist
from tcpsim.host.plan import APP_ROLES, Flow, FlowParts, HostPlan, with_fields
from tcpsim.host.scenario import MAX_CONNECTIONS, ConnClass, HostScenario
from tcpsim.scenario import Scenario, scenario_from_dict, set_field, set_timing
from tcpsim.units import parse_duration, parse_size
from tcpsim.workload import App

_c_seed = _random.Random.seed        # the C generator's seed(int) (random.py's is on top)


def _key(seed: int, cls: str, slot: int, gen: int) -> str:
    return f"tcpsim-host/{seed}/{cls}/{slot}/{gen}"


def conn_rng(seed: int, cls: str, slot: int, gen: int) -> random.Random:
    """The generator of connection (cls, slot, gen)'s draws."""
    return random.Random(_key(seed, cls, slot, gen))


def _seed_rng(rng: random.Random, seed: int, cls: str, slot: int, gen: int) -> int:
    """`rng` in the state `conn_rng` starts in, without a new generator: what
    random.Random.seed does with a string (version 2: the text's bytes then their SHA-512,
    as one integer), given to the C generator's seed directly (a host seeds one per
    connection). Returns the connection's `conn_seed`, from the same text."""
    key = _key(seed, cls, slot, gen).encode()
    _c_seed(rng, int.from_bytes(key + hashlib.sha512(key).digest(), "big"))
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> 1


def conn_seed(seed: int, cls: str, slot: int, gen: int) -> int:
    """Connection (cls, slot, gen)'s scenario seed (63 bits)."""
    h = hashlib.sha256(_key(seed, cls, slot, gen).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


# Fields a class may draw per connection that are applied to the parsed base scenario
# directly (no parse per connection): field -> (unit parser, the link fields it sets or the
# application role and field it sets). A drawn link.rtt is split as the parser splits it.
_LinkHow = tuple[tuple[str, str], ...]
_FAST: dict[str, tuple[Callable[[Any, str], int], str, _LinkHow | str]] = {
    "link.rtt": (parse_duration, "link", (("delay_ab", "half"), ("delay_ba", "rest"))),
    "link.delay": (parse_duration, "link", (("delay_ab", "all"), ("delay_ba", "all"))),
    "link.delay_ab": (parse_duration, "link", (("delay_ab", "all"),)),
    "link.delay_ba": (parse_duration, "link", (("delay_ba", "all"),)),
    "link.jitter": (parse_duration, "link", (("jitter", "all"),)),
    "writer.every": (parse_duration, "writer", "every"),
    "reader.every": (parse_duration, "reader", "every"),
    "writer.bytes": (parse_size, "writer", "bytes"),
    "reader.bytes": (parse_size, "reader", "bytes"),
}
_EXACT_NS = 2**53          # a drawn duration below this reads back from "<n>ns" as itself
_APP_MEMO = 4096           # distinct drawn applications a class keeps (then made per flow)


class _Drawn:
    """One drawn field of a fast class: its draw and, from it, the field's value (what
    parsing the drawn value gives -- the unit parser's, and its errors, named by field)."""

    def __init__(self, key: str, d: Dist, where: str) -> None:
        self.d = d
        self.unit, self.target, how = _FAST[key]
        # link fields: (name, how) each; an application's: its field's name
        self.link: _LinkHow = how if isinstance(how, tuple) else ()
        self.field = how if isinstance(how, str) else ""
        self.where = where
        # a continuous duration's draw is integer ns, its value "<n>ns": read back directly
        self.ns = d.unit == "duration" and d.kind in ("uniform", "loguniform", "exponential")
        self.draw = d.sampler()
        self.text_ns = d.unit == "duration" and d.kind != "const"
        # a choice's few values parsed once each (others: every draw is its own)
        self.memo: dict[tuple[type, Any], int] | None = {} if d.kind == "choice" else None

    def value(self, rng: random.Random) -> int:
        if self.ns:
            v = self.draw(rng)
            return v if 0 <= v < _EXACT_NS else self.unit(f"{v}ns", self.where)
        raw = self.draw(rng)
        if self.text_ns and isinstance(raw, int):      # as Dist.value writes a duration
            raw = f"{raw}ns"
        if self.memo is None:
            return self.unit(raw, self.where)
        key = (type(raw), raw)
        try:
            return self.memo[key]
        except KeyError:
            out = self.memo[key] = self.unit(raw, self.where)
            return out
        except TypeError:                  # an unhashable value: parsed each time
            return self.unit(raw, self.where)

    def of(self, v: Any) -> int:
        """The field's value of a value as written (the extremes' check)."""
        return self.unit(v, self.where)


class _ClassBuilder:
    """Builds one class's flows. Drawn fields of `_FAST` are applied to the base scenario
    parsed once -- after checking, at the extremes of every distribution (its bounds, every
    choice), that this gives exactly what parsing the document gives (so the same checks
    hold in between, and a base whose other fields interact falls back); any other drawn
    field parses the document per connection (memoized on the values). Either way a flow is
    its parts (tcpsim/host/plan.py FlowParts): its scenario is made only if asked for."""

    def __init__(self, c: ConnClass, host: HostScenario, timing: str | None) -> None:
        self.c = c
        self.host = host
        self.timing = timing
        self.memo: dict[tuple[Any, ...], Scenario] = {}
        drawn = [(k, d) for k, d in c.sets if not d.constant]
        self.fixed = tuple((k, d.args[0]) for k, d in c.sets if d.constant)
        self.fast = bool(drawn) and all(k in _FAST for k, _ in drawn)
        self.app_memo: dict[tuple[Any, ...], App | None] = {}
        if self.fast:
            self.base = self._parse(self.fixed)
            self.drawn = [_Drawn(k, d, f"class.{c.name}.set.{k}") for k, d in drawn]
            self.fast = all(self._parse(self.fixed + vals) == self._apply(vals)
                            for vals in _extremes(drawn))

    def _apply(self, values: tuple[tuple[str, Any], ...]) -> Scenario:
        """The base with drawn values as written (the drawn fields, in order)."""
        link, apps = self._parts([f.of(v) for f, (_, v) in zip(self.drawn, values)])
        return FlowParts(self.base, link, apps, self.base.seed).scenario()

    def _parts(self, vals: list[int]) -> tuple[dict[str, int] | None, Any]:
        """(link fields, apps) of a connection that drew `vals` (the drawn fields' values)."""
        link: dict[str, int] | None = None
        app_vals: list[tuple[str, str, int]] = []
        for f, v in zip(self.drawn, vals):
            if f.target == "link":
                if link is None:
                    link = {}
                for name, how in f.link:
                    link[name] = v // 2 if how == "half" else v - v // 2 if how == "rest" else v
            else:
                app_vals.append((f.target, f.field, v))
        key = tuple(app_vals)
        apps = self.app_memo.get(key)
        if apps is None:
            apps = self._apps(app_vals)
            if len(self.app_memo) < _APP_MEMO:
                self.app_memo[key] = apps
        return link, apps

    def _apps(self, app_vals: list[tuple[str, str, int]]) -> Any:
        base = self.base
        roles = {r: getattr(base, r) for r in APP_ROLES}
        for role, name, v in app_vals:
            roles[role] = with_fields(roles[role], **{name: v})
        return tuple(roles[r] for r in APP_ROLES)

    def parts(self, rng: random.Random, seed: int, start: int) -> FlowParts:
        """A connection's parts: its `set` fields drawn from `rng` (every one, in order:
        constants draw nothing), `seed`, opening at `start`."""
        if self.fast:
            link, apps = self._parts([f.value(rng) for f in self.drawn])
            return FlowParts(self.base, link, apps, seed, start)
        values = tuple((k, d.value(rng)) for k, d in self.c.sets)
        key = tuple((k, repr(v)) for k, v in values)
        sc = self.memo.get(key)
        if sc is None:
            sc = self._parse(values)
            if len(self.memo) < 4096:
                self.memo[key] = sc
        return FlowParts(sc, None, (sc.writer, sc.reader, sc.rev_writer, sc.rev_reader),
                         seed, start)

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


def expand(host: HostScenario, timing: str | None = None) -> HostPlan:
    """The host's flows for one run (`timing`: --timing, the run's application timing)."""
    with gc_paused():
        return _expand(host, timing)


def _expand(host: HostScenario, timing: str | None) -> HostPlan:
    # slots and generations < 2**21 (MAX_CONNECTIONS), classes < 2**22, starts >= 0
    assert MAX_CONNECTIONS < 1 << 21
    # each flow's place in opening order, (start, class, slot, generation), as one integer
    # (sorted faster than tuples, and nothing for the garbage collector to track)
    keys: list[int] = []
    made: list[Flow] = []
    rng = random.Random()
    for ci, c in enumerate(host.classes):
        builder = _ClassBuilder(c, host, timing)
        draw_start = c.start.sampler()
        draw_life = c.lifetime.sampler() if c.lifetime is not None else None
        for slot in range(c.count):
            start, gen = -1, 0
            while True:
                seed = _seed_rng(rng, host.seed, c.name, slot, gen)
                if start < 0:
                    start = min(int(draw_start(rng)), host.duration)
                stop = 0
                if draw_life is not None:
                    life = max(1, int(draw_life(rng)))
                    stop = start + life if start + life < host.duration else 0
                parts = builder.parts(rng, seed, start)
                keys.append((start << 64) | (ci << 42) | (slot << 21) | gen)
                made.append(Flow(None, start, stop, ci, parts))
                if len(made) > MAX_CONNECTIONS:
                    raise ScenarioError(f"class.{c.name}: the host would open more than "
                                        f"{MAX_CONNECTIONS:_} connections over its duration; "
                                        "use fewer or longer-lived connections")
                if not stop:
                    break
                start, gen = stop, gen + 1
    if not made:
        raise ScenarioError("class: every class has count 0; give at least one connection")
    flows = tuple(made[i] for i in sorted(range(len(made)), key=keys.__getitem__))
    return HostPlan(flows=flows, duration=host.duration,
                    classes=tuple(c.name for c in host.classes), sysctl=dict(host.sysctl),
                    ncpus=host.cpus, sample_every=host.sample_every,
                    local_peers=host.peers == "local",
                    traced=frozenset(host.trace_connections), name=host.name, seed=host.seed,
                    memcg=host.memcg, threads=host.threads)
