"""A large host's build and results without per-connection work: flows as parts
(tcpsim/host/plan.py FlowParts) give the scenarios parsing each connection gives, the native
engine's config from parts is the config from whole scenarios, and the native flows' rows
give the records the per-flow dicts gave (tcpsim/host/populations.py, tcpsim/engine/native.py,
tcpsim/host/outputs.py)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from tcpsim.catalog import get_profile
from tcpsim.engines import native_available
from tcpsim.host import populations
from tcpsim.host.plan import Flow, HostPlan
from tcpsim.host.populations import conn_rng, expand
from tcpsim.host.scenario import read_host_text

native = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")

# every kind of class: drawn link and application fields (fast), a drawn sysctl (parsed per
# connection), a constant beside a drawn field, starts at 0, two-way applications
MIX = """
name = "mix"
profile = "linux-6.6"
duration = "2s"
seed = 11
cpus = 2
[class.bad]
base = "seed-unbounded-growth"
count = 3
start = {uniform = ["0s", "1s"]}
[class.bad.set]
"link.rtt" = {uniform = ["10ms", "40ms"]}
"link.jitter" = {choice = ["0ms", "1ms"]}
"reader.bytes" = {choice = [1, 100, "1KiB"]}
[class.good]
base = "request-response"
count = 6
start = {exponential = "300ms"}
lifetime = {exponential = "500ms"}
[class.good.set]
"link.rtt" = {loguniform = ["2ms", "80ms"]}
"writer.every" = {choice = ["20ms", "50ms", "100ms"], weights = [1, 2, 3]}
"writer.bytes" = {uniform = ["1KiB", "8KiB"]}
[class.slow]
base = "request-response"
count = 3
[class.slow.set]
"sysctl.net.ipv4.tcp_rmem" = {choice = [[4096, 131072, 6291456], [4096, 65536, 1048576]]}
"link.rtt" = {uniform = ["5ms", "10ms"]}
[class.fixed]
base = "request-response"
count = 2
lifetime = {uniform = ["300ms", "900ms"]}
[class.fixed.set]
"link.rtt" = "30ms"
"writer.every" = {uniform = ["1ms", "3ms"]}
"""

TWO_WAY = """
name = "two-way"
[link]
rtt = "20ms"
[writer]
kind = "periodic"
bytes = 4000
every = "10ms"
start = "5ms"
[reader]
kind = "periodic"
bytes = 65536
every = "7ms"
[receiver.writer]
kind = "periodic"
bytes = 100
every = "10ms"
start = "1ms"
"""


def _mix(tmp_path) -> str:
    (tmp_path / "two.toml").write_text(TWO_WAY)
    return MIX + """
[class.two]
base = "two.toml"
count = 3
start = {uniform = ["0s", "500ms"]}
lifetime = {uniform = ["300ms", "900ms"]}
[class.two.set]
"link.delay_ab" = {uniform = ["1ms", "5ms"]}
"reader.every" = {choice = ["3ms", "9ms"]}
"""


def _host(tmp_path):
    return read_host_text(_mix(tmp_path), str(tmp_path / "mix.toml"))


def test_the_generator_is_seeded_as_a_new_one_would_be():
    rng = random.Random(5)
    for key in ((1, "good", 0, 0), (7, "bad", 12, 3), (-4, "x y", 99, 0)):
        populations._seed_rng(rng, *key)
        assert rng.getstate() == conn_rng(*key).getstate()


@pytest.mark.parametrize("text", [
    '{uniform = ["10ms", "40ms"]}', '{uniform = [0.5, 2.5]}', '{uniform = ["1KiB", "8KiB"]}',
    '{loguniform = ["2ms", "80ms"]}', '{loguniform = [1, 1000]}', '{exponential = "300ms"}',
    '{exponential = 2.5}', '{choice = ["20ms", "50ms", "100ms"]}',
    '{choice = [1, 2, 3], weights = [1, 0, 3]}', '"30ms"', '7'])
@pytest.mark.parametrize("unit", ["any", "duration"])
def test_a_sampler_draws_what_draw_draws(text, unit):
    import tomllib

    from tcpsim.errors import ScenarioError
    from tcpsim.host.dist import parse_dist
    try:
        d = parse_dist(tomllib.loads(f"v = {text}")["v"], "v", unit)
    except ScenarioError:
        pytest.skip("not a distribution of this unit")
    a, b = random.Random(3), random.Random(3)
    sample = d.sampler()
    got, want = [sample(a) for _ in range(200)], [d.draw(b) for _ in range(200)]
    assert got == want and [type(x) for x in got] == [type(x) for x in want]


def test_flows_from_parts_are_the_scenarios_parsing_each_connection_gives(tmp_path, monkeypatch):
    host = _host(tmp_path)
    fast = expand(host)
    monkeypatch.setattr(populations, "_FAST", {})      # every class parses each connection
    parsed = expand(host)
    assert len(fast.flows) == len(parsed.flows) > 20
    assert any(f.scenario.rev_writer is not None for f in fast.flows)
    for a, b in zip(fast.flows, parsed.flows):
        assert (a.start, a.stop, a.cls) == (b.start, b.stop, b.cls)
        assert a.scenario == b.scenario and repr(a.scenario) == repr(b.scenario)
        assert a.scenario.as_dict() == b.scenario.as_dict()
    assert fast == parsed


@native
def test_the_native_config_from_parts_is_the_one_from_whole_scenarios(tmp_path):
    from tcpsim.engine.native import _flows_cfg
    host = _host(tmp_path)
    plan = dataclasses.replace(expand(host), traced=frozenset({0, 4}))
    whole = dataclasses.replace(plan, flows=tuple(
        Flow(f.scenario, f.start, f.stop, f.cls) for f in plan.flows))
    profile = get_profile(host.profile)

    def wants(name: str) -> bool:
        return name == "rcv"
    a, b = _flows_cfg(plan, profile, wants), _flows_cfg(whole, profile, wants)
    assert a["flows"] == b["flows"] and a["sockets"] == b["sockets"] and a["apps"] == b["apps"]
    # the flows of a class share their sockets and (drawn alike) their apps
    n = len(a["flows"]["rcv"])
    assert len(a["sockets"]) <= 16 < 2 * n and len(a["apps"]) < 2 * n
    assert [d["trace"] for d in a["sockets"]].count(True) == 2


def test_a_flow_is_given_its_scenario_or_its_parts():
    with pytest.raises(TypeError):
        Flow()
    plan = expand(read_host_text(MIX.split("[class.good]")[0]))
    f = plan.flows[0]
    again = Flow(f.scenario, f.start, f.stop, f.cls)
    assert again == f and again.parts.scenario() == f.scenario
    assert HostPlan.single(f.scenario).flows[0].scenario is f.scenario


@native
def test_native_flow_rows_give_the_records_the_per_flow_dicts_gave(tmp_path):
    from tcpsim.engine.native import NativeSimulation
    from tcpsim.host.outputs import FlowRecord, flow_counters, native_flow_records
    host = _host(tmp_path)
    plan = expand(host)
    profile = get_profile(host.profile)
    sim = NativeSimulation.of_host(plan, profile)
    sim.run_loop()
    st = sim.host_stats()
    extra = profile.counters()
    want = [FlowRecord(d["index"], d["cls"], d["start"], d["stop"], d["established_at"],
                       d["written"], d["read_bytes"], d["received"], d["q_area"],
                       d["peak_rmem"], flow_counters(d["mib"], extra)) for d in st["flows"]]
    got = native_flow_records(sim)
    assert got == want and len(got) == len(plan.flows)
    assert any(r.counters["TcpExtPruneCalled"] for r in got)
    assert list(got[0].counters) == list(want[0].counters)     # the same keys, same order
    assert "flows" not in sim.host_stats(flows=False)
