"""Host runs: populations decided once from the seed, churn, both engines identical on small
hosts, a scenario is a host of one flow, the outputs (tcpsim/host, tcpsim/engine)."""

from __future__ import annotations

import json

import pytest

from tcpsim.engines import native_available
from tcpsim.host.outputs import format_host
from tcpsim.host.populations import expand
from tcpsim.host.run import run_host
from tcpsim.host.scenario import read_host_text

native = pytest.mark.skipif(not native_available(), reason="tcpsim._native is not built")

SMALL = """
name = "small"
profile = "linux-6.1"
duration = "3s"
seed = 7
cpus = 2
[class.bad]
base = "seed-unbounded-growth"
count = 2
start = {uniform = ["0s", "500ms"]}
[class.good]
base = "request-response"
count = 6
start = {uniform = ["0s", "1s"]}
lifetime = {exponential = "800ms"}
[class.good.set]
"link.rtt" = {loguniform = ["2ms", "60ms"]}
"writer.every" = {choice = ["20ms", "50ms"]}
[class.bulk]
base = "seed-default-fill"
count = 1
start = "1500ms"
"""


def _flows(text: str) -> list[tuple]:
    plan = expand(read_host_text(text))
    return [(f.cls, f.start, f.stop, f.scenario.seed, f.scenario.link.delay_ab,
             f.scenario.writer.every, f.scenario.writer.start) for f in plan.flows]


def test_same_seed_same_population_another_seed_another():
    a, b = _flows(SMALL), _flows(SMALL)
    assert a == b
    c = _flows(SMALL.replace("seed = 7", "seed = 8"))
    assert c != a and len({f[3] for f in a}) == len(a)          # every connection its own seed


def test_one_class_count_does_not_move_another_class_draws():
    a = [f for f in _flows(SMALL) if f[0] == 1]
    b = [f for f in _flows(SMALL.replace("count = 2", "count = 5")) if f[0] == 1]
    assert a == b


def test_flows_open_in_start_order_and_apps_start_with_their_connection():
    plan = expand(read_host_text(SMALL))
    starts = [f.start for f in plan.flows]
    assert starts == sorted(starts) and plan.flows[0].start == min(starts)
    for f in plan.flows:
        assert f.scenario.writer.start >= f.start and f.scenario.duration == plan.duration


def test_churn_replaces_a_closed_connection_at_once_until_the_end():
    plan = expand(read_host_text(SMALL))
    good = [f for f in plan.flows if f.cls == 1]
    assert len(good) > 6                                      # replacements happened
    stops = sorted(f.stop for f in good if f.stop)
    assert stops and all(0 < s < plan.duration for s in stops)
    # each stop is the start of the slot's next connection
    assert set(stops) <= {f.start for f in good}
    assert sum(1 for f in good if not f.stop) == 6            # the last of each slot lasts


def _json(r):
    return json.dumps(r.as_json(per_connection=True), sort_keys=True, default=str)


@native
def test_both_engines_identical_on_a_small_host_with_churn():
    h = read_host_text(SMALL)
    py, nat = run_host(h, engine="python"), run_host(h, engine="native")
    assert _json(py) == _json(nat)
    assert py.events == nat.events
    good = py.classes[1]
    assert good["connections"] > 6 and good["delivered_bytes"] > 0
    assert py.pressure["peak_inuse"] == 9


@native
def test_both_engines_identical_tick_by_tick():
    h = read_host_text(SMALL.replace('duration = "3s"', 'duration = "1s"'))
    assert _json(run_host(h, engine="python", skip=False)) == \
        _json(run_host(h, engine="native", skip=False))


def test_closed_connections_free_their_memory_and_count_no_more():
    from tcpsim.catalog import get_profile
    from tcpsim.engine.simulation import Simulation
    h = read_host_text(SMALL)
    plan = expand(h)
    sim = Simulation.of_host(plan, get_profile(h.profile))
    sim.run_loop()
    closed = [c for c in sim.conns if c.closed]
    assert closed
    for c in closed:
        assert c.rcv.mem.sk_rmem_alloc == 0 and not c.rcv.mem.receive_queue
        assert c.rcv.error == "closed" and c.final is not None
        assert c.record().read_bytes == c.final.read_bytes
    assert sim.live == sum(1 for c in sim.conns if not c.closed)


def test_a_scenario_is_a_host_of_one_flow():
    """The single-connection interface is the host's first (only) connection."""
    from tcpsim.catalog import get_profile
    from tcpsim.engine.simulation import Simulation
    from tcpsim.scenario import load_scenario
    sc = load_scenario("request-response").with_(duration=500_000_000)
    sim = Simulation(sc, get_profile(sc.profile))
    r = sim.run()
    assert len(sim.conns) == 1 and sim.rcv is sim.conn.rcv and not sim.samples
    assert r.summary["bytes_read"] == sim.conn.reader.read_bytes > 0


def test_outputs_read_latency_and_table():
    h = read_host_text(SMALL)
    r = run_host(h, engine="python")
    bad, good = r.classes[0], r.classes[1]
    # the reproducer's queue holds data for seconds; request/response reads it at once
    assert bad["read_latency_ms"] > 100 * good["read_latency_ms"]
    assert bad["zero_windows_sent"] >= 0 and good["drops"] == 0
    assert [s.t for s in r.samples][:3] == [0, 100_000_000, 200_000_000]
    assert len(r.samples) == 31
    text = "\n".join(format_host(r))
    assert "per class:" in text and "bad" in text and "memory pressure" in text
    assert "connections" in r.as_json(True) and "connections" not in r.as_json()


def test_cli_host_run_writes_a_small_trace_and_json(tmp_path, monkeypatch, capsys):
    import pyarrow.parquet as pq
    from cli_entry import run_main
    f = tmp_path / "h.toml"
    f.write_text(SMALL.replace('duration = "3s"', 'duration = "1s"'))
    out = tmp_path / "h.parquet"
    code, stdout, err = run_main(["run", str(f), "--engine", "python", "--trace", str(out),
                                  "--connections", "--json"], monkeypatch, capsys)
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["classes"][0]["class"] == "bad" and len(doc["sockstat"]) == 11
    assert len(doc["connections"]) == len(pq.read_table(tmp_path / "h.connections.parquet"))
    t = pq.read_table(out)
    assert t.column_names == ["t_ns", "inuse", "mem", "pressure"] and t.num_rows == 11
    assert b"tcpsim" in t.schema.metadata
