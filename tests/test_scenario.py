"""Scenario files: parsing units, validation with one clear line per mistake."""

import pytest

from tcpsim.core.sysctl import SysctlError, Sysctls
from tcpsim.scenario import (
    ScenarioError, builtin_experiments, load_scenario, scenario_from_dict,
)


@pytest.mark.parametrize("raw,field", [
    ({"link": {"rtt": "20 mins"}}, "link.rtt"),
    ({"link": {"loss": 1.5}}, "link.loss"),
    ({"reader": {"kind": "sometimes"}}, "reader.kind"),
    ({"reader": {"kind": "periodic", "bytes": 1}}, "reader.every"),
    ({"writer": {"kind": "periodic", "bytes": 10, "every": "0ms"}}, "writer.every"),
    ({"receiver": {"device": "e1000"}}, "receiver.device"),
    ({"bogus": 1}, "bogus"),
    ({"seed": "one"}, "seed"),
    ({"sender": {"nodelay": "yes"}}, "sender.nodelay"),
    ({"hz": 200}, "hz"),
    ({"hz": "fast"}, "hz"),
])
def test_errors_name_the_field(raw, field):
    with pytest.raises(ScenarioError) as exc:
        scenario_from_dict({"name": "t", **raw})
    assert str(exc.value).startswith(field) and "\n" not in str(exc.value)


def test_sysctl_errors_say_what_the_kernel_accepts():
    with pytest.raises(SysctlError, match="tcp_rmem.*min <= default <= max"):
        Sysctls().with_overrides({"net.ipv4.tcp_rmem": [4096, 131072, 1000]})
    with pytest.raises(SysctlError, match="must be 0 or 1"):
        Sysctls().with_overrides({"net.ipv4.tcp_shrink_window": 2})
    with pytest.raises(SysctlError, match="unknown to tcpsim"):
        Sysctls().with_overrides({"net.ipv4.tcp_frobnicate": 1})
    with pytest.raises(SysctlError, match="does not exist on linux-5.15"):
        Sysctls().with_overrides({"net.ipv4.tcp_shrink_window": 1}, known=frozenset({"tcp_rmem"}),
                                 profile="linux-5.15")


def test_every_builtin_experiment_loads():
    names = builtin_experiments()
    assert "seed-unbounded-growth" in names and len(names) >= 7
    from tcpsim.host.scenario import is_host_file, load_host
    for n in names:
        if is_host_file(n):
            assert load_host(n).connections > 0
            continue
        assert load_scenario(n).duration > 0


def test_malformed_toml_is_one_line(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("name = 'x'\n[link\nrtt=1")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        load_scenario(f)


def test_hz_is_a_top_level_field_recorded_only_when_set():
    sc = scenario_from_dict({"hz": 250})
    assert sc.hz == 250 and sc.as_dict()["hz"] == 250
    plain = scenario_from_dict({})
    assert plain.hz == 0 and "hz" not in plain.as_dict()   # default: the same metadata as before
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict({"hz": 200})
    assert str(e.value).startswith("hz: 200 is not a kernel tick rate; write one of 100, 250, 300, 1000")


def test_set_field_reaches_any_depth_and_keeps_sysctl_names_whole():
    from tcpsim.scenario import set_field
    doc = {"receiver": {"device": "veth"}}
    set_field(doc, "receiver.device.rx_copybreak", 256)
    set_field(doc, "sysctl.net.ipv4.tcp_rmem", [4096, 131072, 6291456])
    set_field(doc, "link.rtt", "5ms")
    assert doc == {"receiver": {"device": {"preset": "veth", "rx_copybreak": 256}},
                   "sysctl": {"net.ipv4.tcp_rmem": [4096, 131072, 6291456]},
                   "link": {"rtt": "5ms"}}
