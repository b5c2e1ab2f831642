"""A host run in CPU order (`threads`, native engine: src/engine/parallel.rs): on threads
where nothing the flows share can tell, in order where it can -- the same bytes either way,
on a host that stays far below tcp_mem (every window on threads), one that reaches pressure
(a window found unsafe after the fact: the run starts over, in order from there) and one
with a memory cgroup (in order throughout)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tcpsim.bench_host import host_text
from tcpsim.catalog import get_profile
from tcpsim.engines import native_available
from tcpsim.errors import ScenarioError
from tcpsim.host.populations import expand
from tcpsim.host.run import run_host
from tcpsim.host.scenario import read_host_text

if not native_available():
    pytest.skip("tcpsim._native is not built", allow_module_level=True)
from tcpsim.engine import native  # noqa: E402

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def _runs(text: str, duration: str | None = None) -> dict[str, tuple[str, object]]:
    """The host's native stats in host order, and in CPU order on one thread and on two:
    (canonical JSON, (windows on threads, windows in order, restarts))."""
    if duration:
        text = text.replace('duration = "30s"', f'duration = "{duration}"')
    host = read_host_text(text)
    base = expand(host)
    profile = get_profile(host.profile)
    out = {}
    for name, threads, mode in (("host", 1, "threads"), ("ordered", 2, "ordered"),
                                ("threads", 2, "threads"), ("probe", 2, "probe")):
        sim = native.NativeSimulation.of_host(
            dataclasses.replace(base, threads=threads, run_mode=mode), profile)
        sim.run_loop()
        out[name] = (json.dumps(sim.host_stats(), sort_keys=True), sim.sim.host_windows)
    return out


def test_a_host_far_below_tcp_mem_runs_on_threads_with_the_same_bytes():
    r = _runs(host_text(60, "2s"))
    assert r["threads"][0] == r["ordered"][0] == r["probe"][0]
    threaded, ordered, restarts = r["threads"][1]
    assert (ordered, restarts) == (0, 0) and threaded == 22     # 21 samples (0 to 2 s) + the end
    assert r["ordered"][1] == (0, 22, 0) and r["probe"][1] == (22, 0, 0)
    # this mix has no same-nanosecond events of two CPUs that touch what they share
    assert r["host"][0] == r["ordered"][0]


def test_a_host_reaching_pressure_starts_over_in_order_with_the_same_bytes():
    r = _runs((EXPERIMENTS / "host-seed-mix.toml").read_text(), "8s")
    stats = json.loads(r["threads"][0])
    assert stats["pool"]["TCPMemoryPressures"] >= 1
    assert r["threads"][0] == r["ordered"][0]
    threaded, ordered, restarts = r["threads"][1]
    assert threaded > 0 and ordered > 0 and restarts <= 3


def test_a_window_that_reached_tcp_mem_on_threads_is_run_again_in_order():
    """tcp_mem[0] = 150 pages, below one CPU's reserve (256): the first flush crosses it in
    a window run on threads; the run starts over with that window in order."""
    r = _runs(host_text(300, "2s", tcp_mem_pages=200))
    assert r["threads"][0] == r["ordered"][0]
    threaded, ordered, restarts = r["threads"][1]
    assert restarts >= 1 and threaded > 0 and ordered > 0
    assert json.loads(r["threads"][0])["pool"]["TCPMemoryPressures"] >= 1


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"


@pytest.mark.parametrize("path", [EXPERIMENTS / "host-container.toml",
                                  FIXTURES / "memcg-v1-4.toml"], ids=lambda p: p.stem)
def test_a_memory_cgroup_host_runs_in_order(path):
    text = path.read_text().replace("bases/", f"{FIXTURES}/bases/")
    r = _runs(text)
    assert r["threads"][0] == r["ordered"][0]
    assert r["threads"][1][0] == 0


def test_one_flow_is_one_part():
    host = read_host_text(host_text(20, "1s").replace("connections = 20", "connections = 1")
                          .replace("count = 19", "count = 0"))
    assert len(expand(host).flows) == 1
    plan = dataclasses.replace(expand(host), threads=2)
    sim = native.NativeSimulation.of_host(plan, get_profile(host.profile))
    sim.run_loop()
    one = dataclasses.replace(expand(host), threads=1)
    ref = native.NativeSimulation.of_host(one, get_profile(host.profile))
    ref.run_loop()
    assert json.dumps(sim.host_stats(), sort_keys=True) == json.dumps(ref.host_stats(),
                                                                      sort_keys=True)


def _summary(r) -> dict:
    return r.as_json(per_connection=True)


@pytest.mark.parametrize("text", [host_text(40, "2s"),
                                  (EXPERIMENTS / "host-container.toml").read_text()
                                  .replace('duration = "20s"', 'duration = "3s"')],
                         ids=["seed-mix-40", "container"])
def test_both_engines_run_cpu_order_alike(text):
    """CPU order is a model of both engines: the Python engine runs it on one thread."""
    host = dataclasses.replace(read_host_text(text), threads=2)
    py = _summary(run_host(host, engine="python", timing="exact"))
    nat = _summary(run_host(host, engine="native", timing="exact"))
    assert py == nat
    assert py["config"]["threads"] == 2
    # on these hosts no same-nanosecond events of two CPUs touch what they share: host
    # order gives the same numbers, but for the event count (a periodic reader's horizon is
    # its CPU's next event, not the host's: it may wake a different number of times)
    one = _summary(run_host(dataclasses.replace(host, threads=1), engine="native",
                            timing="exact"))
    assert {k: v for k, v in one.items() if k not in ("config", "events")} == \
        {k: v for k, v in nat.items() if k not in ("config", "events")}


def test_a_traced_host_in_cpu_order_writes_both_engines_traces_alike(tmp_path):
    """Traced connections keep a native run in order (one trace, lent to the CPU that
    runs); its connections' traces are the Python engine's, row for row."""
    from tests.host_files import connection_trace_tables, tiny_host
    text = tiny_host().replace("cpus = 1", "cpus = 2\nthreads = 2")
    tables = connection_trace_tables(text, tmp_path)
    assert len(tables["python"]) == len(tables["native"]) > 5
    for a, b in zip(tables["python"], tables["native"]):
        assert a.equals(b)


def test_threads_is_checked():
    host = read_host_text(host_text(20, "1s").replace("cpus = 2", "cpus = 2\nthreads = 2"))
    assert host.threads == 2 and host.as_dict()["threads"] == 2
    with pytest.raises(ScenarioError, match="threads"):
        read_host_text(host_text(20, "1s").replace("cpus = 2", "cpus = 2\nthreads = 0"))
