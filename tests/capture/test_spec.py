import pytest

from tcpsim.capture.spec import parse

TOML = '''
name = "seed"
duration = "35min"
[sysctl]
"net.ipv4.tcp_rmem" = [4096, 131072, 268435456]
[link]
rtt = "20ms"
[receiver]
role = "client"
so_rcvbuf = "32KiB"
[writer]
kind = "periodic"
bytes = 1448
every = "1ms"
[reader]
kind = "periodic"
bytes = 1
every = "1ms"
'''


def test_parse_toml_text():
    s = parse(TOML)
    assert s.name == "seed"
    assert s.duration_ns == 35 * 60 * 10**9
    assert s.delay_ab_ns == s.delay_ba_ns == 10_000_000
    assert s.so_rcvbuf == 32768
    assert (s.writer.kind, s.writer.bytes, s.writer.every) == ("periodic", 1448, 1_000_000)
    assert s.reader.every == 1_000_000
    assert s.sysctls["net.ipv4.tcp_rmem"] == [4096, 131072, 268435456]


def test_plain_dict_defaults():
    s = parse({"name": "x"})
    assert s.role == "client" and s.nodelay and s.initcwnd == 10
    assert s.writer.kind == "bulk" and s.reader.kind == "fast"
    assert not s.delayed


def test_asymmetric_delay():
    s = parse({"link": {"delay_ab": "5ms", "delay_ba": "15ms"}})
    assert (s.delay_ab_ns, s.delay_ba_ns) == (5_000_000, 15_000_000)


@pytest.mark.parametrize("d,field", [
    ({"reader": {"kind": "sometimes"}}, "reader.kind"),
    ({"reader": {"kind": "periodic", "bytes": 1}}, "reader.every"),
    ({"writer": {"kind": "periodic", "bytes": 1, "every": "soon"}}, "writer.every"),
    ({"receiver": {"role": "both"}}, "receiver.role"),
    ({"link": {"rtt": "far"}}, "link.rtt"),
])
def test_errors_name_the_field(d, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        parse(d)


@pytest.mark.parametrize("extra,where", [
    ({"receiver": {"device": {"strategy": "kmalloc"}}}, "receiver.device"),
    ({"receiver": {"writer": {"kind": "bulk"}}}, "receiver.writer"),
    ({"sender": {"device": "nic-2k"}}, "sender.device"),
])
def test_simulator_only_scenarios_are_refused_by_name(extra, where):
    with pytest.raises(ValueError) as err:
        parse({"name": "x", **extra})
    assert str(err.value).startswith(where + ":")
