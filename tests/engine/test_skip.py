"""Time skipping must give exactly what tick-by-tick gives, and runs are deterministic."""

import json

import pytest

from tcpsim.runner import RunOptions, run
from tcpsim.scenario import load_scenario, scenario_from_dict

CASES = {
    # the reproducer, shortened: reads interleave with arrivals, then with a window closed
    "unbounded-6.1": ("seed-unbounded-growth", "linux-6.1", {}, "3s"),
    "unbounded-shrink": ("seed-unbounded-growth", "linux-6.1.59", {"net.ipv4.tcp_shrink_window": 1}, "6s"),
    "wscale8-6.18": ("seed-wscale8", "linux-6.18", {}, "3s"),
    "never-reads": ("seed-never-reads", "linux-6.18", {"net.ipv4.tcp_shrink_window": 1}, "4s"),
    "oscillating": ("seed-oscillating-reader", "linux-6.1", {}, "3s"),
}


def _run(name, profile, sysctl, duration, skip, timing=None):
    sc = load_scenario(name, timing)
    if name == "seed-oscillating-reader":
        sc = scenario_from_dict({**_raw(sc), "reader": {
            "kind": "oscillating", "bytes": 1, "every": "1ms", "bytes2": 3300, "every2": "1ms",
            "period": "1s"}})
    result, rec = run(sc, RunOptions(profile=profile, sysctl=sysctl, duration=_ns(duration),
                                     skip=skip, memory_trace=True))
    return result, rec.rows


def _raw(sc):
    return {"name": sc.name, "profile": sc.profile, "duration": sc.duration / 1e9,
            "sysctl": sc.sysctl, "link": {"rtt": "20ms"},
            "writer": {"kind": "periodic", "bytes": sc.writer.bytes, "every": "1ms"}}


def _ns(s):
    from tcpsim.units import parse_duration
    return parse_duration(s, "test")


@pytest.mark.parametrize("case", sorted(CASES))
def test_skip_and_tick_by_tick_are_identical(case):
    name, profile, sysctl, duration = CASES[case]
    a, rows_a = _run(name, profile, sysctl, duration, skip=True)
    b, rows_b = _run(name, profile, sysctl, duration, skip=False)
    assert rows_a == rows_b
    sa = {k: v for k, v in a.summary.items() if k not in ("wall_s", "events")}
    sb = {k: v for k, v in b.summary.items() if k not in ("wall_s", "events")}
    assert sa == sb and a.counters == b.counters


def test_skipping_saves_events_when_the_reader_is_idle():
    # exact timing: skipping skips an exact reader's inert ticks (a timed one wakes at each)
    a, _ = _run("seed-unbounded-growth", "linux-6.1.59", {"net.ipv4.tcp_shrink_window": 1}, "6s", True,
                "exact")
    b, _ = _run("seed-unbounded-growth", "linux-6.1.59", {"net.ipv4.tcp_shrink_window": 1}, "6s", False,
                "exact")
    assert a.summary["events"] < b.summary["events"]


def test_same_seed_same_trace_bytes(tmp_path):
    sc = load_scenario("seed-unbounded-growth")
    sc = sc.with_(link=sc.link.__class__(delay_ab=10_000_000, delay_ba=10_000_000, loss=0.01))
    paths = []
    for i in range(2):
        p = tmp_path / f"t{i}.parquet"
        run(sc, RunOptions(duration=_ns("2s"), seed=7, trace=p))
        paths.append(p.read_bytes())
    assert paths[0] == paths[1]
    other = tmp_path / "other.parquet"
    r8, _ = run(sc, RunOptions(duration=_ns("2s"), seed=8, trace=other))
    assert other.read_bytes() != paths[0]


@pytest.mark.parametrize("index,duration", [(0, "0.2s"), (1, "3s"), (2, "10s"), (3, "3s")])
def test_bench_cases_give_the_same_trace_with_and_without_skipping(tmp_path, index, duration):
    """Issue #6's cases (a)-(d), as `tcpsim bench` runs them, at reduced durations: the
    Parquet traces hold the same rows, and the same metadata but for `summary.events` (the
    engine's event count, which the skipping changes), as the README says (#18)."""
    import pyarrow.parquet as pq

    from tcpsim.bench import CASES, _scenario
    sc, sysctl = _scenario(CASES[index])
    tables, metas = [], []
    for skip in (True, False):
        path = tmp_path / f"{skip}.parquet"
        run(sc, RunOptions(profile=CASES[index].profile, sysctl=sysctl, duration=_ns(duration),
                           skip=skip, trace=path))
        table = pq.read_table(path)
        metas.append({k.decode(): json.loads(v) for k, v in table.schema.metadata.items()})
        tables.append(table.replace_schema_metadata(None))
    assert tables[0].num_rows > 100 and tables[0].equals(tables[1])
    for m in metas:
        del m["summary"]["events"]
    assert metas[0] == metas[1]
