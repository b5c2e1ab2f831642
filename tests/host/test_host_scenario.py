"""Host files: what they describe, and one `tcpsim: error:` line for each bad description
(tcpsim/host/scenario.py, docs/hosts.md)."""

from __future__ import annotations

import pytest

from tcpsim.errors import ScenarioError
from tcpsim.host.dist import parse_dist
from tcpsim.host.scenario import MAX_CONNECTIONS, is_host_file, load_host, read_host_text

TWO = """
name = "t"
duration = "2s"
connections = 10
[class.bad]
base = "seed-unbounded-growth"
count = 1
[class.good]
base = "request-response"
share = 0.9
start = {uniform = ["0s", "1s"]}
lifetime = "500ms"
[class.good.set]
"link.rtt" = {loguniform = ["2ms", "80ms"]}
"writer.every" = {choice = ["20ms", "50ms"], weights = [1, 3]}
"""


def test_a_host_file_declares_classes_with_counts_shares_and_fields():
    h = read_host_text(TWO)
    assert [c.name for c in h.classes] == ["bad", "good"]
    assert [c.count for c in h.classes] == [1, 9] and h.connections == 10
    good = h.classes[1]
    assert good.lifetime is not None and good.lifetime.args == (500_000_000,)
    assert dict(good.sets)["link.rtt"].kind == "loguniform"
    assert h.as_dict()["classes"][1]["set"]["writer.every"] == {"choice": [
        "20ms", "50ms"], "weights": [1.0, 3.0]}


def test_the_shipped_host_experiment_is_a_host_and_not_a_scenario():
    from tcpsim.scenario import load_scenario
    assert is_host_file("host-seed-mix") and not is_host_file("seed-unbounded-growth")
    assert load_host("host-seed-mix").connections == 200
    with pytest.raises(ScenarioError, match="a host file"):
        load_scenario("host-seed-mix")


@pytest.mark.parametrize("text, match", [
    # counts that do not add up to the stated total
    (TWO.replace("count = 1", "count = 3"), r"connections: the classes add up to 12 \(bad 3 \+ good 9\), not 10"),
    # a class with no workload
    ('[class.x]\ncount = 2\n', r"class\.x: no workload; give base"),
    ('[class.x]\nbase = "nope-such"\ncount = 2\n', r"class\.x\.base: 'nope-such' is neither"),
    # tcp_mem not increasing
    ('[sysctl]\n"net.ipv4.tcp_mem" = [600, 400, 200]\n[class.x]\nbase = "request-response"\n'
     'count = 1\n', r"sysctl\.net\.ipv4\.tcp_mem: \[600, 400, 200\] is not increasing"),
    # 10^8 connections
    ('[class.x]\nbase = "request-response"\ncount = 100000000\n',
     r"class\.x\.count: 100_000_000 connections is more than one host run takes"),
    ('connections = 100000000\n[class.x]\nbase = "request-response"\nshare = 1\n',
     r"connections: expected a number of connections from 1 to 1_000_000"),
    ('duration = "100s"\n[class.x]\nbase = "request-response"\ncount = 1000\nlifetime = "1ms"\n',
     r"class\.x: the host would open more than 1_000_000 connections"),
    ('[class.x]\nbase = "request-response"\n', r"class\.x: give either count .* or share"),
    ('[class.x]\nbase = "request-response"\nshare = 0.5\n', r"class\.x\.share: a share needs"),
    ('[class.x]\nbase = "request-response"\ncount = 1\nstart = {uniform = ["2s", "1s"]}\n',
     r"class\.x\.start\.uniform: the low bound '2s' is above the high one '1s'"),
    ('[class.x]\nbase = "request-response"\ncount = 1\n[class.x.set]\nduration = "5s"\n',
     r"class\.x\.set\.duration: the host decides duration"),
    ('[class.x]\nbase = "request-response"\ncount = 1\nbogus = 1\n', r"class\.x\.bogus: unknown field"),
    ('cpus = 0\n[class.x]\nbase = "request-response"\ncount = 1\n', r"cpus: expected a number of CPUs"),
    ('name = "n"\n', r"class: a host needs at least one \[class\.NAME\] table"),
    ('[class.x]\nbase = "host-seed-mix"\ncount = 1\n', r"class\.x\.base: 'host-seed-mix' is a host file"),
])
def test_bad_host_descriptions_are_one_line_naming_the_field(text, match):
    with pytest.raises(ScenarioError, match=match) as exc:
        read_host_text(text if "class" in text else text + "")
    assert "\n" not in str(exc.value)


def test_a_bad_field_value_fails_when_the_population_is_built():
    from tcpsim.host.populations import expand
    h = read_host_text('[class.x]\nbase = "request-response"\ncount = 1\n[class.x.set]\n'
                       '"link.rtt" = "twenty"\n')
    with pytest.raises(ScenarioError, match=r"class\.x \(base request-response\): link\.rtt"):
        expand(h)


def test_cli_bad_host_is_one_error_line(tmp_path, monkeypatch, capsys):
    from cli_entry import run_main
    f = tmp_path / "h.toml"
    f.write_text(TWO.replace("count = 1", "count = 3"))
    code, out, err = run_main(["run", str(f)], monkeypatch, capsys)
    assert code != 0 and err.count("\n") == 1 and err.startswith("tcpsim: error: ")
    assert str(f) in err and "add up to 12" in err


def test_distributions_keep_units_and_read_bare_numbers_as_seconds():
    import random
    d = parse_dist({"uniform": ["10ms", "20ms"]}, "f")
    v = d.value(random.Random(1))
    assert v.endswith("ns") and 10_000_000 <= int(v[:-2]) <= 20_000_000
    assert parse_dist({"uniform": ["1KiB", "2KiB"]}, "f").unit == "size"
    assert parse_dist(2, "start", "duration").args == (2_000_000_000,)
    with pytest.raises(ScenarioError, match="not of one kind"):
        parse_dist({"uniform": ["10ms", "2KiB"]}, "f")
    assert MAX_CONNECTIONS == 1_000_000
