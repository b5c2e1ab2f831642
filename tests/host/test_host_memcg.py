"""A host's sockets in a memory cgroup (`[memcg]`, tcpsim/core/memcg.py), held to the real
6.18 kernel's captures (tests/fixtures/host/memcg-v1-4, tests/fixtures/memcg/;
docs/kernel-measurements.md E12), both engines alike, and one `tcpsim: error:` line for each
bad `[memcg]`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tcpsim.errors import ScenarioError
from tcpsim.host.run import run_host
from tcpsim.host.scenario import host_from_dict, load_host, read_host_text

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CAPTURES = [FIX / "host" / "memcg-v1-4", FIX / "memcg" / "memcg-v1-8"]


def _kernel(path: Path) -> dict:
    rec = json.loads(path.with_suffix(".json").read_text())
    runs = [r["summary"] for r in rec["runs"]]
    def median(name: str) -> int:
        values = sorted(r["counters"].get(name, 0) for r in runs)
        return values[len(values) // 2]
    return dict(rec["summary"], rcvq_drops=median("TcpExtTCPRcvQDrop"),
                from_zero=median("TcpExtTCPFromZeroWindowAdv"),
                to_zero=median("TcpExtTCPToZeroWindowAdv"))


def _run(path: Path, engine: str = "python", **changes):
    return run_host(replace(load_host(path.with_suffix(".toml")), **changes), engine=engine,
                    timing="exact")


def _on_5_15(tmp_path: Path, memcg: tuple[int, int, int] | None, engine: str = "python"):
    """memcg-v1-4's host on linux-5.15 (its base without tcp_shrink_window, which 5.15 lacks)."""
    base = (FIX / "host" / "bases" / "loopback.toml").read_text()
    (tmp_path / "base.toml").write_text(base.replace('"net.ipv4.tcp_shrink_window" = 0\n', ""))
    host = (FIX / "host" / "memcg-v1-4.toml").read_text().replace("bases/loopback.toml",
                                                                  "base.toml")
    (tmp_path / "h.toml").write_text(host.replace('"linux-6.18"', '"linux-5.15"'))
    return run_host(replace(load_host(tmp_path / "h.toml"), memcg=memcg), engine=engine,
                    timing="exact")


def _delivered(r) -> int:
    return sum(f.received for f in r.flows)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_the_cgroups_limit_holds_the_receivers_as_on_the_kernel(path):
    """The kernel: the receivers' socket pages stop at the cgroup's limit (max_usage ==
    limit), the host's tcp_mem is never in pressure, segments are dropped (TCPRcvQDrop) and
    the connections deliver what the limit lets through. The model: the same peak, the same
    drops within 25 %, the delivered bytes within 25 %, and its socket pressure on."""
    k = _kernel(path)
    r = _run(path)
    limit_pages = r.memcg["memory.kmem.tcp.limit_in_bytes"] // 4096
    assert k["memcg_peak_pages"] == limit_pages == r.memcg["peak_usage_pages"]
    assert k["pressures"] == 0 and r.nstat["TcpExtTCPMemoryPressures"] == 0
    assert abs(_delivered(r) - k["delivered"]["stuck"]) <= 0.25 * k["delivered"]["stuck"]
    assert k["rcvq_drops"] > 0
    assert abs(r.nstat["TcpExtTCPRcvQDrop"] - k["rcvq_drops"]) <= 0.25 * k["rcvq_drops"]
    assert r.memcg["socket_pressure_entries"] >= 1 and r.memcg["refused_charges"] > 0


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_each_memory_drops_zero_window_reopens_as_on_the_kernel(path):
    """A drop for memory sends a zero window that tcp_select_window() [6.14+] stores without
    counting TCPToZeroWindowAdv; the next window counts TCPFromZeroWindowAdv. The kernel
    counts 11 / 23 and no TCPToZeroWindowAdv; the host's nstat sums the same within 25 %."""
    k = _kernel(path)
    r = _run(path)
    assert k["to_zero"] == r.nstat.get("TcpExtTCPToZeroWindowAdv", 0) == 0
    assert k["from_zero"] > 0
    assert abs(r.nstat["TcpExtTCPFromZeroWindowAdv"] - k["from_zero"]) <= 0.25 * k["from_zero"]


def test_what_the_cgroup_costs_is_what_it_costs_the_kernel():
    """The same four connections without the cgroup (tests/fixtures/memcg/nomemcg-4): the
    kernel delivers more and drops nothing; so does the model, each within 25 %."""
    free = _kernel(FIX / "memcg" / "nomemcg-4")
    held = _kernel(FIX / "host" / "memcg-v1-4")
    m_free = _run(FIX / "memcg" / "nomemcg-4")
    m_held = _run(FIX / "host" / "memcg-v1-4")
    assert free["delivered"]["stuck"] > held["delivered"]["stuck"]
    assert _delivered(m_free) > _delivered(m_held)
    assert free["rcvq_drops"] == 0 and m_free.nstat.get("TcpExtTCPRcvQDrop", 0) == 0
    assert m_free.memcg is None
    assert abs(_delivered(m_free) - free["delivered"]["stuck"]) <= 0.25 * free["delivered"]["stuck"]


@pytest.mark.parametrize("profile", ["linux-6.18", "linux-6.1.59"])
def test_both_engines_give_the_same_memcg_host(profile):
    for memcg in [(1, 100, 0), (2, 300, 250)]:
        # (v2 on 6.18 forces the receive path's charges; on 5.15 it refuses them)
        py = _run(FIX / "host" / "memcg-v1-4", "python", memcg=memcg,
                  profile=profile).as_json(True)
        nat = _run(FIX / "host" / "memcg-v1-4", "native", memcg=memcg,
                   profile=profile).as_json(True)
        assert py == nat
        assert [row["memcg_pages"] for row in py["sockstat"]][-1] >= 0


def test_v2_memory_max_does_not_hold_the_receive_path_since_6_1(tmp_path):
    """cgroup v2 on 6.18: the receive path charges from softirq with GFP_ATOMIC, forced past
    memory.max (a `max` event each): memory.current = other + sock goes past memory.max and
    the connections get what they get without a cgroup. On 5.15 (GFP_NOWAIT) the same
    charges are refused and the receivers drop, as under v1's limit."""
    path = FIX / "host" / "memcg-v1-4"
    free = _run(path, memcg=None)
    r = _run(path, memcg=(2, 260, 250))
    m = r.memcg
    assert m["cgroup"] == "v2" and m["memory.max"] == 260 * 4096
    assert m["memory.current"] == 250 * 4096 + m["memory.stat.sock"]
    assert m["memory.peak"] > m["memory.max"] and m["memory.events.max"] > 0
    assert m["socket_pressure_ms"] == 0          # vmpressure is not modelled
    assert _delivered(r) == _delivered(free)
    assert r.nstat.get("TcpExtTCPRcvQDrop", 0) == free.nstat.get("TcpExtTCPRcvQDrop", 0) == 0
    old = _on_5_15(tmp_path, (2, 260, 250))
    assert old.nstat["TcpExtTCPRcvQDrop"] > 0 and old.memcg["memory.events.max"] == 0
    assert _delivered(old) < _delivered(_on_5_15(tmp_path, None))


def test_both_engines_agree_on_5_15s_refused_softirq_charges(tmp_path):
    py = _on_5_15(tmp_path, (2, 260, 250), "python").as_json(True)
    assert py == _on_5_15(tmp_path, (2, 260, 250), "native").as_json(True)


def test_no_memcg_changes_nothing():
    host = load_host(FIX / "host" / "memcg-v1-4.toml")
    r = _run(FIX / "host" / "memcg-v1-4", memcg=None)
    assert "memcg" not in r.as_json() and all(s.memcg == -1 for s in r.samples)
    assert "memcg" not in replace(host, memcg=None).as_dict()


BASE = """
name = "m"
duration = "1s"
[class.a]
base = "request-response"
count = 1
"""


@pytest.mark.parametrize("table, says", [
    ('max = "lots"', "memcg.max"),
    ("max = -4096", "memcg.max"),
    ('tcp_limit = "1KiB"', "less than one page"),
    ('max = "1MiB"\ntcp_limit = "1MiB"', "not both"),
    ("", "not both and not neither"),
    ('tcp_limit = "1MiB"\nother = "1KiB"', "memcg.other"),
    ('max = "1MiB"\nother = "2MiB"', "memcg.other"),
    ('max = "1MiB"\nlimit = 3', "memcg"),
    ("max = true", "memcg.max"),
])
def test_bad_memcg_is_one_error_naming_the_field(table, says):
    with pytest.raises(ScenarioError, match=says):
        read_host_text(BASE + "[memcg]\n" + table + "\n")


def test_memcg_must_be_a_table():
    with pytest.raises(ScenarioError, match="memcg: expected a table"):
        host_from_dict({"memcg": 5, "class": {"a": {"base": "request-response", "count": 1}}})


def test_cli_bad_memcg_is_one_error_line(tmp_path, monkeypatch, capsys):
    from cli_entry import run_main
    f = tmp_path / "h.toml"
    f.write_text(BASE + '[memcg]\nmax = "lots"\n')
    code, out, err = run_main(["run", str(f)], monkeypatch, capsys)
    assert code != 0 and err.count("\n") == 1 and err.startswith("tcpsim: error: ")
    assert "memcg.max" in err


def test_the_shipped_container_tips_and_shrink_window_saves_it():
    """docs/hosts.md's `host-container`: the host never reaches TCP memory pressure; the
    cgroup's 6 MiB does -- refused charges, seconds of socket pressure, the healthy sessions'
    drops and lost goodput; with tcp_shrink_window the cgroup refuses nothing and the healthy
    sessions lose nothing; 8 MiB is enough."""
    from tcpsim.host.run import load_host_with
    host = load_host("host-container")
    r = run_host(host)
    good = {row["class"]: row for row in r.classes}["good"]
    assert r.nstat["TcpExtTCPMemoryPressures"] == 0
    assert r.memcg["refused_charges"] > 10_000 and 5_000 < r.memcg["socket_pressure_ms"] < 10_000
    assert good["drops"] > 1_000
    fixed = run_host(load_host_with("host-container", policies=("shrink-window",)))
    fgood = {row["class"]: row for row in fixed.classes}["good"]
    assert fixed.memcg["refused_charges"] == 0 and fgood["drops"] == 0
    assert 0.8 * fgood["goodput_mbps"] < good["goodput_mbps"] < 0.95 * fgood["goodput_mbps"]
    roomy = run_host(load_host_with("host-container", sets=(("memcg.tcp_limit", "8MiB"),)))
    assert roomy.memcg["refused_charges"] == 0


def test_the_hosts_trace_carries_the_memcgs_usage(tmp_path):
    import pyarrow.parquet as pq

    from tcpsim.host.outputs import write_host_trace
    r = _run(FIX / "host" / "memcg-v1-4")
    write_host_trace(r, tmp_path / "h.parquet")
    t = pq.read_table(tmp_path / "h.parquet")
    assert t.column("memcg_pages").to_pylist() == [s.memcg for s in r.samples]
    assert max(t.column("memcg_pages").to_pylist()) == 100
