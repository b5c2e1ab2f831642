"""Application timing (issue 14, tcpsim/workload.py): late wakeups drawn from their own
streams, a reader's call cost and copy rate, the blocking reader. Exact timing ("none")
is today's behaviour; time skipping stays exact with late wakeups. The default timing
(tcpsim.app_latency.DEFAULT_TIMING) and its run-wide opt-out `[timing] host = "exact"`."""

from __future__ import annotations

import pytest

from tcpsim.errors import ScenarioError
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import scenario_from_dict
from tcpsim.units import parse_duration

from exact import exact

_REPRO = {"name": "t", "profile": "linux-6.18", "link": {"rtt": "20ms"},
          "sysctl": {"net.ipv4.tcp_rmem": [4096, 131072, 268435456],
                     "net.ipv4.tcp_adv_win_scale": -2},
          "writer": {"kind": "periodic", "bytes": 1448, "every": "1ms"},
          "reader": {"kind": "periodic", "bytes": 1, "every": "1ms"}}
_BULK = {"name": "b", "profile": "linux-6.18",
         "link": {"rtt": "2ms", "rate": "100mbit", "queue_limit": 100},
         "writer": {"kind": "bulk"}, "reader": {"kind": "blocking", "bytes": "64KiB"}}


def _with(base: dict, **tables: dict) -> dict:
    return {**base, **{k: {**base[k], **v} for k, v in tables.items()}}


def _summary(raw: dict, duration: str, skip: bool = True, seed: int | None = None):
    sc = scenario_from_dict(raw)
    res, rec = run(sc, RunOptions(duration=parse_duration(duration, "t"), skip=skip,
                                  engine="python", seed=seed, memory_trace=True))
    s = {k: v for k, v in res.summary.items() if k not in ("wall_s", "events")}
    return s, res.counters, rec.rows


@pytest.mark.parametrize("field,value,msg", [
    ("latency", "sometimes", "reader.latency: expected"),
    ("latency", "-1ms", "reader.latency"),
    ("copy_rate", "fast", "reader.copy_rate"),
])
def test_bad_timing_fields_name_the_field(field: str, value: str, msg: str) -> None:
    with pytest.raises(ScenarioError, match=msg):
        scenario_from_dict(_with(_REPRO, reader={field: value}))


def test_timing_on_an_untimed_kind_or_a_writer_cost_is_an_error() -> None:
    with pytest.raises(ScenarioError, match='reader.latency: .* not "never"'):
        scenario_from_dict({**_REPRO, "reader": {"kind": "never", "latency": "1ms"}})
    with pytest.raises(ScenarioError, match="writer.call_cost: only a reader"):
        scenario_from_dict(_with(_REPRO, writer={"call_cost": "1us"}))


def test_none_is_exact_timing_and_leaves_the_app_metadata_as_before() -> None:
    plain = scenario_from_dict(exact(_REPRO))
    none = scenario_from_dict(_with(_REPRO, writer={"latency": "none"}, reader={"latency": 0}))
    assert (none.writer, none.reader) == (plain.writer, plain.reader)
    assert none.as_dict()["reader"] == plain.as_dict()["reader"]
    assert "latency_table" not in plain.as_dict()["reader"]
    assert (plain.timing, none.timing) == ("exact", "dev-vm-loaded")
    timed = scenario_from_dict(_with(_REPRO, reader={"latency": "periodic_reader"}))
    assert timed.as_dict()["reader"]["latency_table"] == "periodic_reader"


def test_late_wakeups_change_the_run_and_skipping_stays_exact() -> None:
    raw = _with(_REPRO, writer={"latency": "periodic_writer"},
                reader={"latency": "periodic_reader", "call_cost": "20us"})
    a = _summary(raw, "2s", skip=True, seed=4)
    b = _summary(raw, "2s", skip=False, seed=4)
    assert a == b
    on_time = _summary(exact(_REPRO), "2s", seed=4)
    assert a[2] != on_time[2]
    assert _summary(raw, "2s", seed=5)[2] != a[2]          # the seed draws the latencies


def test_a_fixed_late_writer_catches_up_its_overdue_ticks() -> None:
    """Every wakeup 1.5 ms late on a 1 ms grid: ticks run in pairs, none is lost."""
    raw = {**_with(_REPRO, writer={"latency": "1500us"}), "reader": {"kind": "fast"}}
    s, _, _ = _summary(raw, "1s")
    on_time, _, _ = _summary(exact({**raw, "writer": _REPRO["writer"]}), "1s")
    assert on_time["bytes_written"] - 2 * 1448 <= s["bytes_written"] < on_time["bytes_written"]


def test_a_late_blocking_reader_lets_segments_coalesce() -> None:
    """A reader woken the instant data arrives never lets two skbs queue; a late one does."""
    _, on_time, _ = _summary(exact(_BULK), "500ms")
    _, late, _ = _summary(_with(_BULK, reader={"latency": "blocking_reader"}), "500ms")
    assert late["TcpExtTCPRcvCoalesce"] > 3 * on_time["TcpExtTCPRcvCoalesce"]


# -- captured sequences replayed in blocks (latency = "periodic_*_blocks") --------------------

def _draws(name: str, seed: int, n: int, role: str = "writer") -> list[int]:
    from tcpsim.engine.apps import make_timing
    from tcpsim.workload import App
    t = make_timing(App("periodic", bytes=1, every=1_000_000, latency_table=name), seed, role)
    assert t is not None
    return [t.late() for _ in range(n)]


def _capture_of(draws: list[int], seqs: tuple) -> int:
    """The capture whose sequence holds the first draws as a contiguous stretch."""
    head = draws[:50]
    found = [i for i, s in enumerate(seqs)
             if any(list(s[j:j + 50]) == head for j in range(len(s) - 50) if s[j] == head[0])]
    assert len(found) == 1
    return found[0]


def test_blocks_keep_the_captured_bursts_and_each_run_its_host_level() -> None:
    """Issue 14: drawn independently from pooled tables, late wakeups never cluster (lag-1
    correlation of "later than 2 ms" 0.00) and every seed gets the same level of 5 ms late
    wakeups. The captured writers' wakeups cluster (0.04..0.16) and their level differs
    several-fold between captures; replayed in blocks of one capture a run keeps both."""
    from tcpsim.capture.wakeups import burstiness
    seeds = range(1, 7)
    blocks = [burstiness(_draws("periodic_writer_blocks", s, 60_000)) for s in seeds]
    tables = [burstiness(_draws("periodic_writer", s, 60_000)) for s in seeds]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert mean([b["acf1_late_2ms"] for b in blocks]) > 0.03
    assert abs(mean([b["acf1_late_2ms"] for b in tables])) < 0.015
    level = [b["late_5ms_per_1000"] for b in blocks]
    flat = [b["late_5ms_per_1000"] for b in tables]
    assert max(level) > 3 * min(level) and max(flat) < 1.3 * min(flat)


def test_block_draws_are_fixed_by_the_seed_and_one_capture_serves_the_run() -> None:
    from tcpsim.app_latency import load_sequences
    a = _draws("periodic_writer_blocks", 3, 12_000)
    assert a == _draws("periodic_writer_blocks", 3, 12_000)
    assert a != _draws("periodic_writer_blocks", 4, 12_000)
    for seed in (1, 3, 4):
        w = _capture_of(_draws("periodic_writer_blocks", seed, 50),
                        load_sequences("periodic_writer"))
        r = _capture_of(_draws("periodic_reader_blocks", seed, 50, role="reader"),
                        load_sequences("periodic_reader"))
        assert w == r                       # the host stream picks it for every app


def test_block_draws_on_small_captures_are_the_native_engines(monkeypatch) -> None:
    """The values native/src/engine/apps.rs `block_draws_match_python` expects."""
    from tcpsim.engine import apps
    seqs = (tuple(i * 10 for i in range(20)), tuple(1000 + i * 10 for i in range(20)))
    monkeypatch.setattr(apps, "load_sequences", lambda kind, host: seqs)
    monkeypatch.setattr(apps, "block_wakeups", lambda host: 3)
    # the first block is the run's capture (1) from its start; then starts 8, 10, 10, ...
    assert _draws("periodic_writer_blocks", 1, 9) == [1000, 1010, 1020, 1080, 1090, 1100,
                                                      1100, 1110, 1120]


def test_each_apps_first_block_is_the_run_captures_start_and_later_blocks_are_drawn() -> None:
    """docs/app-latency.md, "Why the memory sat at half the kernel's": writer and reader both
    begin with the first wakeups of the run's capture; the blocks after it start at random."""
    from tcpsim.app_latency import block_wakeups, load_sequences
    n = block_wakeups()
    writers, readers = load_sequences("periodic_writer"), load_sequences("periodic_reader")
    later = set()
    for seed in (1, 2, 3, 5):
        w = _draws("periodic_writer_blocks", seed, 3 * n)
        r = _draws("periodic_reader_blocks", seed, n, role="reader")
        c = _capture_of(w, writers)
        assert w[:n] == list(writers[c][:n]) and r == list(readers[c][:n])
        assert w[n:] != list(writers[c][n:3 * n])
        later.add(tuple(w[n:n + 50]))
    assert len(later) == 4                  # each seed's second block from its own start


def test_capture_starts_counts_the_captures_the_seeds_replay() -> None:
    """`--runs N` reports how many distinct captures (so capture starts: each app's first
    block) its seeds drew; the count is that of the captures the draws actually come from."""
    from tcpsim.app_latency import load_sequences
    from tcpsim.runs import capture_starts, format_capture_starts
    from tcpsim.scenario import scenario_from_dict
    writers = load_sequences("periodic_writer")
    seeds = list(range(1, 11))
    drawn = {_capture_of(_draws("periodic_writer_blocks", s, 50), writers) for s in seeds}
    periodic = {"writer": _app_table("writer", "periodic"),
                "reader": _app_table("reader", "periodic")}
    sc = scenario_from_dict(periodic)
    got = capture_starts(sc.as_dict(), seeds)
    assert got == {role: {"host": "dev-vm-loaded", "captures": len(writers),
                          "distinct": len(drawn)} for role in ("writer", "reader")}
    assert 1 < len(drawn) < len(seeds)           # seeds do share captures
    assert format_capture_starts(got, 10) == (
        f"capture starts: writer {len(drawn)}, reader {len(drawn)} distinct of "
        f"{len(writers)} (dev-vm-loaded) in 10 seeds; seeds on one capture share its first block")
    spin = scenario_from_dict({**periodic, "timing": {"host": "dev-vm-spin"}})
    assert capture_starts(spin.as_dict(), [1])["writer"]["captures"] == 10
    tables = scenario_from_dict({"writer": {**periodic["writer"], "latency": "periodic_writer"},
                                 "reader": {**periodic["reader"], "latency": "none"}})
    assert capture_starts(tables.as_dict(), seeds) == {}
    assert format_capture_starts({}, 10) == ""


def test_blocks_are_a_latency_name_of_the_scenario() -> None:
    sc = scenario_from_dict(_with(_REPRO, writer={"latency": "periodic_writer_blocks"},
                                  reader={"latency": "periodic_reader_blocks"}))
    assert sc.as_dict()["reader"]["latency_table"] == "periodic_reader_blocks"
    with pytest.raises(ScenarioError, match="periodic_reader_blocks"):
        scenario_from_dict(_with(_REPRO, reader={"latency": "blocks"}))


# -- host presets ([timing] host = "...": which captures the blocks come from) ---------------

_BLOCKS = _with(_REPRO, writer={"latency": "periodic_writer_blocks"},
                reader={"latency": "periodic_reader_blocks"})


def _host_draws(host: str, seed: int, n: int, role: str) -> list[int]:
    from tcpsim.engine.apps import make_timing
    sc = scenario_from_dict({**_BLOCKS, "timing": {"host": host}})
    t = make_timing(getattr(sc, role), seed, role)
    assert t is not None
    return [t.late() for _ in range(n)]


def test_a_host_preset_draws_from_its_own_captures_for_every_app() -> None:
    from tcpsim.app_latency import load_sequences
    sc = scenario_from_dict({**_BLOCKS, "timing": {"host": "dev-vm-quiet"}})
    assert sc.as_dict()["writer"]["latency_host"] == "dev-vm-quiet"
    assert sc.as_dict()["reader"]["latency_host"] == "dev-vm-quiet"
    for seed in (1, 2, 5):
        w = _capture_of(_host_draws("dev-vm-quiet", seed, 50, "writer"),
                        load_sequences("periodic_writer", "dev-vm-quiet"))
        r = _capture_of(_host_draws("dev-vm-quiet", seed, 50, "reader"),
                        load_sequences("periodic_reader", "dev-vm-quiet"))
        assert w == r
        assert _host_draws("dev-vm-quiet", seed, 3000, "writer") != \
            _draws("periodic_writer_blocks", seed, 3000)


def test_without_a_host_the_default_preset_replays_and_the_metadata_names_it() -> None:
    from tcpsim.app_latency import DEFAULT_HOST
    sc = scenario_from_dict(_BLOCKS)
    assert sc.as_dict()["writer"]["latency_host"] == DEFAULT_HOST == sc.as_dict()["timing"]
    assert _host_draws(DEFAULT_HOST, 3, 6000, "writer") == _draws("periodic_writer_blocks", 3,
                                                                  6000)


@pytest.mark.parametrize("timing,msg", [
    ({"host": "dev-vm-nope"}, "timing.host: expected one of dev-vm-duty50, dev-vm-loaded, "
                              "dev-vm-quiet, dev-vm-spin, exact; got 'dev-vm-nope'"),
    ({"host": 3}, "timing.host: expected one of"),
    ({"hots": "dev-vm-quiet"}, "timing.hots: unknown field"),
])
def test_a_bad_host_names_the_field_and_the_choices(timing: dict, msg: str) -> None:
    with pytest.raises(ScenarioError, match=msg.replace(".", r"\.").replace("(", r"\(")):
        scenario_from_dict({**_BLOCKS, "timing": timing})


def test_a_host_without_a_timed_app_is_recorded_not_an_error() -> None:
    """The host is the run's condition: with only uncalibrated kinds the metadata says so."""
    from tcpsim.workload import describe_timing
    sc = scenario_from_dict({**_BULK, "reader": {"kind": "fast"}, "timing": {"host": "dev-vm-quiet"}})
    assert describe_timing(sc.as_dict()) == "dev-vm-quiet (writer bulk: exact; reader fast: exact)"


def test_a_bad_host_on_the_command_line_is_one_error_line(tmp_path) -> None:
    import subprocess
    import sys
    path = tmp_path / "s.toml"
    path.write_text('[writer]\nkind = "periodic"\nbytes = 1448\nevery = "1ms"\n'
                    'latency = "periodic_writer_blocks"\n[timing]\nhost = "laptop"\n')
    proc = subprocess.run([sys.executable, "-m", "tcpsim.cli", "run", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcpsim: error:")
    assert "timing.host" in lines[0] and "dev-vm-spin" in lines[0]


# -- the default timing (issue 14: calibrated on the development machine) -----------------------

def _app_table(side: str, kind: str) -> dict:
    from tcpsim.workload import KINDS
    table: dict = {"kind": kind}
    for k in KINDS[side][kind].required:
        table[k] = {"bytes": 100, "bytes2": 100}.get(k, "1ms")
    return table


@pytest.mark.parametrize("host", ["dev-vm-loaded", "dev-vm-quiet", "dev-vm-duty50",
                                  "dev-vm-spin", "exact"])
def test_every_kind_gets_its_hosts_default_and_the_rest_stay_exact(host: str) -> None:
    """Per (side, kind) the one table's latency, with the host's captures for the replayed
    ones; every kind not in the table (bulk, fast, never, relay, oscillating, oscil) is exact."""
    from tcpsim.app_latency import DEFAULT_TIMING, SEQUENCES
    from tcpsim.workload import KINDS
    table = DEFAULT_TIMING.get(host, {})
    for side, kinds in KINDS.items():
        for kind in kinds:
            other = "reader" if side == "writer" else "writer"
            raw = {side: _app_table(side, kind), other: {"kind": "bulk" if other == "writer"
                                                         else "fast"}}
            if kind == "relay":
                raw["receiver"] = {"writer": {"kind": "bulk"}}
            app = getattr(scenario_from_dict({**raw, "timing": {"host": host}}), side)
            want = table.get((side, kind), "")
            assert (app.latency_table, app.latency_ns) == (want, 0), (side, kind)
            assert app.latency_host == (host if want in SEQUENCES else "")
            assert app.timed == bool(want)


def test_the_default_is_dev_vm_loaded_for_every_timed_kind_and_both_directions() -> None:
    two_way = {**_REPRO, "reader": {"kind": "blocking"},
               "receiver": {"writer": {"kind": "periodic", "bytes": 10, "every": "2ms"}},
               "sender": {"reader": {"kind": "periodic", "bytes": 10, "every": "2ms"}}}
    sc = scenario_from_dict(two_way)
    assert sc.timing == "dev-vm-loaded"
    assert (sc.writer.latency_table, sc.reader.latency_table) == (
        "periodic_writer_blocks", "blocking_reader")
    assert (sc.rev_writer.latency_table, sc.rev_reader.latency_table) == (
        "periodic_writer_blocks", "periodic_reader_blocks")
    assert sc.rev_writer.latency_host == "dev-vm-loaded"


def test_an_apps_own_latency_wins_over_the_default() -> None:
    sc = scenario_from_dict(_with(_REPRO, writer={"latency": "2ms"},
                                  reader={"latency": "periodic_reader"}))
    assert (sc.writer.latency_table, sc.writer.latency_ns) == ("", 2_000_000)
    assert sc.reader.latency_table == "periodic_reader"
    sc = scenario_from_dict({**_with(_REPRO, reader={"latency": "periodic_reader"}),
                             "timing": {"host": "exact"}})
    assert (sc.writer.timed, sc.reader.latency_table) == (False, "periodic_reader")


def test_captured_sequences_under_exact_timing_are_an_error_naming_the_fix() -> None:
    with pytest.raises(ScenarioError, match='writer.latency: "periodic_writer_blocks" replays '
                                            '.* timing.host = "exact"'):
        scenario_from_dict({**_BLOCKS, "timing": {"host": "exact"}})


def test_exact_timing_runs_as_every_app_on_time_did_before_the_default() -> None:
    """`host = "exact"` is the behaviour before the default: the same trace, bit for bit, as
    every application saying latency = "none"; the default changes the run."""
    none = _with(_REPRO, writer={"latency": "none"}, reader={"latency": "none"})
    a = _summary(exact(_REPRO), "2s", seed=3)
    assert a == _summary(none, "2s", seed=3)
    assert _summary(_REPRO, "2s", seed=3)[2] != a[2]


@pytest.mark.parametrize("engine", ["python", "native"])
def test_both_engines_run_the_default_from_the_same_explicit_values(engine: str) -> None:
    """The default is resolved when the scenario is read: both engines get the apps' values
    (the trace equality of the two is tests/engine/test_parity.py's p-default-* cases)."""
    from tcpsim.engines import native_available
    if engine == "native" and not native_available():
        pytest.skip("native engine not built")
    sc = scenario_from_dict(_REPRO)
    res, _ = run(sc, RunOptions(duration=parse_duration("1s", "t"), engine=engine))
    meta = res.metadata()["scenario"]
    assert meta["timing"] == "dev-vm-loaded"
    assert meta["writer"]["latency_table"] == "periodic_writer_blocks"
    assert meta["reader"]["latency_host"] == "dev-vm-loaded"


def test_the_cli_timing_option_and_the_run_header(tmp_path) -> None:
    import subprocess
    import sys
    path = tmp_path / "s.toml"
    path.write_text('duration = "200ms"\n[writer]\nkind = "periodic"\nbytes = 1448\n'
                    'every = "1ms"\n[reader]\nkind = "blocking"\n')
    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tcpsim.cli", *args], capture_output=True,
                              text=True)
    out = cli("run", str(path)).stdout.splitlines()
    assert out[1] == ("  timing: dev-vm-loaded (writer periodic: periodic_writer_blocks; "
                      "reader blocking: blocking_reader)")
    out = cli("run", str(path), "--timing", "exact").stdout.splitlines()
    assert out[1] == "  timing: exact (writer periodic: exact; reader blocking: exact)"
    for command in (("run", str(path)), ("compare", str(path), "-p", "linux-6.1", "--vs",
                                         "linux-6.18"),
                    ("sweep", str(path), "-x", "seed=1,2")):
        proc = cli(*command, "--timing", "loaded")
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode != 0 and len(lines) == 1, (command, proc.stderr)
        assert lines[0].startswith("tcpsim: error: --timing loaded: expected one of "
                                   "dev-vm-duty50, dev-vm-loaded, dev-vm-quiet, dev-vm-spin, "
                                   "exact"), lines[0]


def test_a_sweep_varies_the_timing_and_its_option_sets_every_point(tmp_path) -> None:
    from tcpsim.sweeps import build_points, parse_axis
    path = tmp_path / "s.toml"
    path.write_text('[writer]\nkind = "periodic"\nbytes = 1448\nevery = "1ms"\n'
                    '[reader]\nkind = "fast"\n')
    points = build_points(path, [parse_axis("timing.host=exact,dev-vm-spin")], RunOptions())
    assert [(p.scenario.timing, p.scenario.writer.latency_host) for p in points] == [
        ("exact", ""), ("dev-vm-spin", "dev-vm-spin")]
    assert points[0].hash != points[1].hash
    points = build_points(path, [parse_axis("seed=1,2")], RunOptions(), timing="dev-vm-quiet")
    assert {p.scenario.writer.latency_host for p in points} == {"dev-vm-quiet"}


def test_packetdrill_never_reads_a_scenario_nor_application_timing() -> None:
    """The packetdrill interpreter drives the sockets itself, on exact time: running a
    script loads neither scenarios nor the latency calibration."""
    import subprocess
    import sys
    from pathlib import Path
    corpus = Path(__file__).resolve().parents[2].parent / "shared" / "peer-tests" / "packetdrill"
    scripts = sorted(corpus.rglob("*.pkt"))[:2]
    if not scripts:
        pytest.skip("the packetdrill corpus is not at hand")
    code = ("import sys\nfrom tcpsim.packetdrill.interpreter import run_file\n"
            f"results = [run_file(p) for p in {[str(p) for p in scripts]!r}]\n"
            "print(sorted(m for m in sys.modules if m in ('tcpsim.scenario', "
            "'tcpsim.app_latency', 'tcpsim.engine.apps')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("fixture", ["seed-unbounded-growth-shrink0", "bulk-blocking-reader"])
def test_validate_replays_the_logged_app_times_not_the_default(fixture: str) -> None:
    """A capture of a periodic writer and reader (or a blocking reader) is replayed at its
    logged times: the plan's applications carry no default timing, the run is exact."""
    from pathlib import Path
    from tcpsim.validate.replay import plan
    from tcpsim.validate.trace import load, view
    path = Path(__file__).resolve().parents[1] / "fixtures" / "kernel" / f"{fixture}.parquet"
    p = plan(view(*load(path)))
    assert p.scenario.timing == "exact"
    assert not p.scenario.writer.timed and not p.scenario.reader.timed
    assert p.write_ticks or p.read_ticks               # the logged times drive the apps
