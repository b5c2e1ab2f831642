"""The one sysctl parser (tcpsim/sysctl_parse.py): every form a scenario file accepts works
through --sysctl too, and a bad setting is one line naming where it came from."""

import json

import pytest
from cli_entry import run_main

from tcpsim.core.sysctl import SysctlError
from tcpsim.catalog import get_profile
from tcpsim.scenario import ScenarioError, scenario_from_dict
from tcpsim.sysctl_parse import check, kernel_name, parse_option, parse_table, parse_value

RMEM = [4096, 131072, 6291456]


@pytest.mark.parametrize("raw,value", [
    (2, 2), (-2, -2), ("2", 2), ("-2", -2), (" 1 ", 1), ("0x10", 16), ("0", 0),
    (RMEM, RMEM), ("[4096,131072,6291456]", RMEM), ("[4096, 131072, 6291456]", RMEM),
    ("4096 131072 6291456", RMEM), ("4096\t131072\t6291456", RMEM), ("4096,131072,6291456", RMEM),
])
def test_value_forms(raw, value):
    assert parse_value(raw, "x") == value


@pytest.mark.parametrize("raw,needle", [
    ("one", "sysctl tcp_rmem: expected an integer, or three integers as [4096,131072,6291456]"),
    ("1.5", "expected an integer"), ("[1, two]", "expected an integer"),
    ('["1", "2"]', "expected an integer"), ("4096 big 6291456", "expected an integer"),
    ("010", "sysctl tcp_rmem: '010' has a leading zero (the kernel reads it as octal)"),
])
def test_value_refused(raw, needle):
    with pytest.raises(SysctlError) as e:
        parse_value(raw, "tcp_rmem")
    assert needle in str(e.value)


def test_a_misspelt_name_is_blamed_before_its_value():
    """Issue 31: "net.ipv4.tcp_rmen" = "abc" was refused for its value."""
    with pytest.raises(SysctlError) as e:
        parse_value("abc", "net.ipv4.tcp_rmen")
    assert str(e.value).startswith("sysctl net.ipv4.tcp_rmen: unknown to tcpsim (did you mean "
                                   "net.ipv4.tcp_rmem?)")


@pytest.mark.parametrize("item,name,value", [
    ("net.ipv4.tcp_rmem=[4096,131072,6291456]", "net.ipv4.tcp_rmem", RMEM),
    ("net.ipv4.tcp_rmem=4096 131072 6291456", "net.ipv4.tcp_rmem", RMEM),
    ("tcp_rmem=4096,131072,6291456", "tcp_rmem", RMEM),
    ("net.ipv4.tcp_adv_win_scale=-2", "net.ipv4.tcp_adv_win_scale", -2),
    (" net.core.rmem_max = 4194304", "net.core.rmem_max", 4194304),
])
def test_option_forms(item, name, value):
    assert parse_option(item) == (name, value)


@pytest.mark.parametrize("item", ["net.ipv4.tcp_rmem", "=1", "net.ipv4.tcp_rmem="])
def test_option_without_value(item):
    with pytest.raises(SysctlError, match=r"^--sysctl .*: expected NAME=VALUE, e\.g\."):
        parse_option(item)


def test_option_bad_value_names_the_option():
    with pytest.raises(SysctlError) as e:
        parse_option("net.ipv4.tcp_sack=yes")
    assert str(e.value).startswith("--sysctl net.ipv4.tcp_sack: expected an integer")


def test_table_joins_unquoted_dotted_keys():
    # `net.ipv4.tcp_rmem = [...]` unquoted is a nested table in TOML
    assert parse_table({"net": {"ipv4": {"tcp_rmem": RMEM}}, "tcp_sack": "0"}) == \
        {"net.ipv4.tcp_rmem": RMEM, "tcp_sack": 0}


@pytest.mark.parametrize("settings", [
    {"net.ipv4.tcp_rmem": RMEM}, {"tcp_rmem": RMEM}, {"net.ipv4.tcp_rmem": "4096 131072 6291456"},
])
def test_check_with_or_without_prefix(settings):
    assert check(settings, get_profile("linux-6.18")).tcp_rmem == tuple(RMEM)


def test_check_names_where():
    with pytest.raises(SysctlError) as e:
        check({"net.ipv4.tcp_shrink_window": 1}, get_profile("linux-5.15"), where="a.toml")
    assert str(e.value).startswith("a.toml: sysctl net.ipv4.tcp_shrink_window: does not exist on "
                                   "linux-5.15")
    with pytest.raises(SysctlError) as e:
        check({"net.ipv4.tcp_shrink_window": 1}, get_profile("linux-5.15"), where="--sysctl")
    assert str(e.value).startswith("--sysctl net.ipv4.tcp_shrink_window: does not exist")


def test_scenario_value_error_is_a_scenario_error():
    with pytest.raises(ScenarioError, match=r"^sysctl tcp_sack: expected an integer"):
        scenario_from_dict({"sysctl": {"tcp_sack": "yes"}})


# -- through the command line and a scenario file: the same settings, the same run ----------

FORMS = ["[4096,131072,6291456]", "4096 131072 6291456", "4096,131072,6291456"]


def _rcvbuf_run(argv, monkeypatch, capsys):
    code, out, err = run_main(["run", *argv, "-d", "2s", "--json", "--no-progress"],
                              monkeypatch, capsys)
    assert code == 0, err
    return json.loads(out)["summary"]


@pytest.mark.parametrize("name", ["net.ipv4.tcp_rmem", "tcp_rmem"])
@pytest.mark.parametrize("form", FORMS)
def test_every_form_through_option_and_file(name, form, tmp_path, monkeypatch, capsys):
    small = form.replace("131072", "32768")       # the initial sk_rcvbuf: visible in the run
    via_option = _rcvbuf_run(["seed-default-fill", "-s", f"{name}={small}"], monkeypatch, capsys)
    f = tmp_path / "s.toml"
    f.write_text(_default_fill_with(f'"{name}" = ' + (small if small.startswith("[")
                                                      else f'"{small}"')))
    via_file = _rcvbuf_run([str(f)], monkeypatch, capsys)
    assert via_option["peak_sk_rcvbuf"] == via_file["peak_sk_rcvbuf"] == 32768
    assert via_option == {**via_file, "wall_s": via_option["wall_s"]}


def _default_fill_with(line: str) -> str:
    from tcpsim.scenario import builtin_experiment
    text = builtin_experiment("seed-default-fill").read_text()
    return text.replace("[link]", f"[sysctl]\n{line}\n\n[link]", 1) if "[sysctl]" not in text \
        else text.replace("[sysctl]", f"[sysctl]\n{line}", 1)


@pytest.mark.parametrize("argv,line", [
    (["-s", "net.ipv4.tcp_shrink_window=5"],
     "--sysctl net.ipv4.tcp_shrink_window: must be 0 or 1, got 5"),
    (["-s", "net.ipv4.tcp_rmem=[1,2]"],
     "--sysctl net.ipv4.tcp_rmem: expected three integers (min default max), got 2"),
    (["-s", "net.ipv4.tcp_rmem=[4096, x]"],
     "--sysctl net.ipv4.tcp_rmem: expected an integer, or three integers"),
    (["-s", "net.ipv4.tcp_nosuch=1"], "--sysctl net.ipv4.tcp_nosuch: unknown to tcpsim; known:"),
    (["-s", "tcp_rmem"], "--sysctl tcp_rmem: expected NAME=VALUE"),
])
def test_option_errors_one_line(argv, line, monkeypatch, capsys):
    code, _, err = run_main(["run", "seed-rcvbuf32k-fill", "-p", "linux-6.18", *argv],
                            monkeypatch, capsys)
    assert code == 2
    assert err.startswith(f"tcpsim: error: {line}") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("line,msg", [
    ('"net.ipv4.tcp_shrink_window" = 5', "sysctl net.ipv4.tcp_shrink_window: must be 0 or 1, got 5"),
    ('"net.ipv4.tcp_rmem" = "4096 131072"', "sysctl net.ipv4.tcp_rmem: expected three integers"),
    ('"net.ipv4.tcp_nosuch" = 1', "sysctl net.ipv4.tcp_nosuch: unknown to tcpsim"),
    ('"net.ipv4.tcp_sack" = "yes"', "sysctl net.ipv4.tcp_sack: expected an integer"),
])
def test_file_errors_name_the_file(line, msg, tmp_path, monkeypatch, capsys):
    f = tmp_path / "bad.toml"
    f.write_text(f'profile = "linux-6.18"\n[sysctl]\n{line}\n')
    code, _, err = run_main(["run", str(f)], monkeypatch, capsys)
    assert code == 2
    assert err.startswith(f"tcpsim: error: {f}: {msg}"), err
    assert len(err.strip().splitlines()) == 1


def test_sweep_axis_takes_every_form(monkeypatch, capsys):
    code, out, err = run_main(["sweep", "seed-default-fill", "-d", "2s", "-j", "1", "--json", "-x",
                               "sysctl.net.ipv4.tcp_rmem=[4096,32768,65536],4096 32768 65536"],
                              monkeypatch, capsys)
    assert code == 0, err
    rows = json.loads(out)
    assert [r["peak_sk_rcvbuf"] for r in rows] == [32768, 32768]


@pytest.mark.parametrize("name,full", [
    ("tcp_rmem", "net.ipv4.tcp_rmem"), ("rmem_max", "net.core.rmem_max"),
    ("net.ipv4.tcp_rmem", "net.ipv4.tcp_rmem"), ("net/core/rmem_max", "net.core.rmem_max"),
    ("net.core.somaxconn", "net.core.somaxconn"),
])
def test_kernel_name(name, full):
    assert kernel_name(name) == full


def test_capture_sets_what_run_reads():
    from tcpsim.capture.spec import parse as capture_parse
    table = {"tcp_rmem": "4096 32768 65536", "net": {"ipv4": {"tcp_adv_win_scale": "-2"}}}
    assert capture_parse({"sysctl": table}).sysctls == \
        {"net.ipv4.tcp_rmem": [4096, 32768, 65536], "net.ipv4.tcp_adv_win_scale": -2}
    assert scenario_from_dict({"sysctl": table}).sysctl == \
        {"tcp_rmem": [4096, 32768, 65536], "net.ipv4.tcp_adv_win_scale": -2}
