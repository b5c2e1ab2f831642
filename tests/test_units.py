"""The one units module (tcpsim/units.py): every accepted spelling of a duration, size and
rate, every refused one with its message, and the same answer from a scenario file, the
command line and the capture tool."""

import json
import math

import pytest
from cli_entry import run_main

from tcpsim.capture.spec import parse as capture_parse
from tcpsim.scenario import scenario_from_dict
from tcpsim.units import UnitError, parse_duration, parse_rate, parse_size

S = 10**9


@pytest.mark.parametrize("value,ns", [
    ("250us", 250_000), ("250µs", 250_000), ("7ns", 7), ("20ms", 20 * 10**6), ("1.5s", 3 * S // 2),
    ("2sec", 2 * S), ("35min", 35 * 60 * S), ("2h", 7200 * S), (" 20 ms ", 20 * 10**6),
    (2, 2 * S), (1.5, 3 * S // 2), ("2", 2 * S), ("1.5", 3 * S // 2), ("1e-3s", 10**6),
    (0, 0), ("0s", 0), (100_000_000, 100_000_000 * S),
])
def test_duration_spellings(value, ns):
    assert parse_duration(value, "x") == ns


@pytest.mark.parametrize("value,needle", [
    ("3 parsecs", "x: '3 parsecs' is not a duration; write e.g. \"250us\", \"20ms\""),
    ("20 mins", "is not a duration"), ("", "is not a duration"), (True, "is not a duration"),
    ([1], "is not a duration"), ("-5ms", "x: duration must not be negative, got '-5ms'"),
    (-1, "must not be negative"), (math.nan, "is not a duration"), (math.inf, "is not a duration"),
    ("inf", "is not a duration"), ("nan", "is not a duration"), ("1.5S", "is not a duration"),
    (2305843010, "x: 2305843010 is longer than tcpsim simulates; write at most 73 years"),
    ("9223372037s", "longer than tcpsim simulates"), (9223372037.0, "longer than tcpsim"),
])
def test_duration_refused(value, needle):
    with pytest.raises(UnitError) as e:
        parse_duration(value, "x")
    assert needle in str(e.value)


@pytest.mark.parametrize("value", [0, "0s", "0ms", 0.0])
def test_positive_duration_refuses_zero(value):
    with pytest.raises(UnitError, match="x: must be longer than zero"):
        parse_duration(value, "x", positive=True)


@pytest.mark.parametrize("value,n", [
    (1448, 1448), ("1448", 1448), ("1448B", 1448), ("32KiB", 32768), ("8MiB", 8 << 20),
    ("1GiB", 1 << 30), ("2KB", 2000), ("3MB", 3 * 10**6), ("1GB", 10**9), ("4k", 4096),
    ("4K", 4096), ("2M", 2 << 20), ("1G", 1 << 30), (0, 0),
])
def test_size_spellings(value, n):
    assert parse_size(value, "x") == n


@pytest.mark.parametrize("value,needle", [
    ("12furlongs", "x: '12furlongs' is not a size; write bytes (1448) or \"32KiB\""),
    (1448.0, "is not a size"), (True, "is not a size"), ("1.5MiB", "is not a size"),
    (-1, "x: size must not be negative"), ("-3KiB", "size must not be negative"),
    ("32kib", "is not a size"),
])
def test_size_refused(value, needle):
    with pytest.raises(UnitError) as e:
        parse_size(value, "x")
    assert needle in str(e.value)


@pytest.mark.parametrize("value,bps", [
    ("1gbit", 10**9), ("100mbit", 10**8), ("100Mbit", 10**8), ("100MBIT", 10**8),
    ("64kbit", 64_000), ("1Kbit", 1000), ("800bit", 800), ("2.5gbit", 2_500_000_000),
    (10**8, 10**8), (1.5e6, 1_500_000), ("1000000", 10**6),
])
def test_rate_spellings(value, bps):
    assert parse_rate(value, "x") == bps


@pytest.mark.parametrize("value,fix", [
    ("100mbps", "'100mbit'"), ("100Mbps", "'100mbit'"), ("100MBps", "'100mbit'"),
    ("64kbps", "'64kbit'"), ("1gbps", "'1gbit'"), ("1Gbps", "'1gbit'"), ("800bps", "'800bit'"),
])
def test_ambiguous_rates_refused(value, fix):
    with pytest.raises(UnitError) as e:
        parse_rate(value, "link.rate")
    msg = str(e.value)
    assert msg.startswith(f"link.rate: {value!r} is ambiguous (tc reads")
    assert f"write {fix} for bits per second, or eight times that for bytes" in msg


@pytest.mark.parametrize("value,needle", [
    ("fast", "link.rate: 'fast' is not a rate; write e.g. \"100mbit\", \"1gbit\""),
    (0, "a rate must be above zero"), ("0mbit", "a rate must be above zero"),
    (-5, "a rate must be above zero"), ("-1gbit", "a rate must be above zero"),
    (True, "is not a rate"), ("inf", "is not a rate"), (math.inf, "is not a rate"),
    ("1 furlong", "is not a rate"),
])
def test_rate_refused(value, needle):
    with pytest.raises(UnitError) as e:
        parse_rate(value, "link.rate")
    assert needle in str(e.value)


# -- one parser everywhere: run (scenario files) and capture read a file the same way ---------

@pytest.mark.parametrize("link", [{"rate": "100mbit", "rtt": "20ms"}, {"rate": 10**8, "rtt": 0.02},
                                  {"rate": "1gbit", "delay_ab": "5ms", "delay_ba": "15ms"}])
def test_run_and_capture_read_the_same_link(link):
    sc = scenario_from_dict({"link": link})
    cap = capture_parse({"link": link})
    assert (sc.link.rate_bps, sc.link.delay_ab, sc.link.delay_ba) == \
        (cap.rate_bps, cap.delay_ab_ns, cap.delay_ba_ns)


@pytest.mark.parametrize("parse", [scenario_from_dict, capture_parse])
def test_run_and_capture_refuse_mbps_alike(parse):
    with pytest.raises(ValueError, match=r"^link\.rate: '100mbps' is ambiguous"):
        parse({"link": {"rate": "100mbps"}})


@pytest.mark.parametrize("value", [0, "0s", -1, "-2s"])
def test_scenario_duration_zero_or_negative_refused(value):
    with pytest.raises(UnitError, match=r"^duration: (must be longer than zero|duration must not)"):
        scenario_from_dict({"duration": value})


def test_scenario_duration_bare_number_is_seconds():
    assert scenario_from_dict({"duration": 2}).duration == 2 * S
    assert scenario_from_dict({"duration": "1.5"}).duration == 3 * S // 2


# -- the command line ----------------------------------------------------------------------------

def _cli(argv, monkeypatch, capsys):
    return run_main(argv, monkeypatch, capsys)


@pytest.mark.parametrize("dur,seconds", [("2", 2), ("1.5", 1.5), ("1500ms", 1.5), ("2s", 2)])
def test_cli_duration_bare_number_is_seconds(dur, seconds, monkeypatch, capsys):
    code, out, err = _cli(["run", "seed-rcvbuf32k-fill", "-d", dur, "--json", "--no-progress"],
                          monkeypatch, capsys)
    assert code == 0, err
    assert json.loads(out)["summary"]["duration_s"] == seconds


@pytest.mark.parametrize("cmd", ["run", "sweep", "compare"])
@pytest.mark.parametrize("dur,needle", [
    ("0s", "--duration: must be longer than zero, got '0s'"),
    ("0", "--duration: must be longer than zero, got '0'"),
    ("-1s", "--duration: duration must not be negative, got '-1s'"),
    ("nan", "--duration: 'nan' is not a duration; write e.g."),
    ("inf", "--duration: 'inf' is not a duration; write e.g."),
    ("soon", "--duration: 'soon' is not a duration; write e.g."),
])
def test_cli_bad_durations_one_line(cmd, dur, needle, monkeypatch, capsys):
    extra = {"run": [], "sweep": ["-x", "seed=1,2"],
             "compare": ["--profile", "linux-6.1", "--vs", "linux-6.18"]}[cmd]
    code, _, err = _cli([cmd, "seed-rcvbuf32k-fill", "-d", dur, *extra], monkeypatch, capsys)
    assert code == 2
    assert err.strip() == f"tcpsim: error: {needle}" or err.startswith(f"tcpsim: error: {needle}")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_mbps_in_a_file_is_one_line_naming_file_and_field(tmp_path, monkeypatch, capsys):
    f = tmp_path / "slow.toml"
    f.write_text('[link]\nrate = "100mbps"\n')
    code, _, err = _cli(["run", str(f)], monkeypatch, capsys)
    assert code == 2
    assert err.startswith(f"tcpsim: error: {f}: link.rate: '100mbps' is ambiguous")
    assert len(err.strip().splitlines()) == 1


def test_cli_sweep_axis_mbps_refused(monkeypatch, capsys):
    code, _, err = _cli(["sweep", "seed-rcvbuf32k-fill", "-x", "link.rate=1gbit,100mbps"],
                        monkeypatch, capsys)
    assert code == 2
    assert "sweep point 1 (link.rate=100mbps): link.rate: '100mbps' is ambiguous" in err
    assert len(err.strip().splitlines()) == 1


def test_cli_validate_until_takes_a_duration(monkeypatch, capsys):
    trace = "tests/fixtures/kernel/seed-rcvbuf32k-fill.parquet"
    runs = [run_main(["validate", trace, "--until", u, "--json"], monkeypatch, capsys)[1]
            for u in ("1.5", "1500ms")]
    assert runs[0] == runs[1] and json.loads(runs[0])


@pytest.mark.parametrize("until,needle", [("0", "--until: must be longer than zero"),
                                          ("soon", "--until: 'soon' is not a duration")])
def test_cli_validate_until_refused(until, needle, monkeypatch, capsys):
    code, _, err = run_main(["validate", "tests/fixtures/kernel", "--until", until],
                            monkeypatch, capsys)
    assert code == 2 and err.startswith(f"tcpsim: error: {needle}")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("module", ["tcpsim.validate.run", "tcpsim.capture.capture"])
def test_module_entry_points_read_durations_through_the_units_module(module, capsys):
    import importlib
    main = importlib.import_module(module).main
    option = "--until" if "validate" in module else "--duration"
    with pytest.raises(SystemExit) as e:
        main(["x", option, "soon"])
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert f"argument {option}: 'soon' is not a duration; write e.g." in err


def test_seconds_option():
    import argparse

    from tcpsim.units import seconds_option
    assert seconds_option("--until")("1500ms") == seconds_option("--until")("1.5") == 1.5
    with pytest.raises(argparse.ArgumentTypeError, match="^must be longer than zero"):
        seconds_option("--until")("0s")
