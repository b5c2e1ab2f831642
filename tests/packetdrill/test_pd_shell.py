"""The shell subset of backquoted commands, nstat, and the restricted `%{ }%` evaluator."""

from __future__ import annotations

from pathlib import Path

import pytest

from tcpsim.packetdrill.nstat import Nstat, NstatError
from tcpsim.packetdrill.pycode import check_code, run_block
from tcpsim.packetdrill.shell import Shell, ShellContext, ShellUnsupported
from tcpsim.packetdrill.sysctl_map import SysctlSettingError, UnsupportedSysctl


def make_shell(tmp_path: Path, counters: dict[str, int] | None = None):
    settings: list[tuple[str, str]] = []
    values = dict(counters or {})

    def set_sysctl(name: str, raw: str) -> str:
        if "bad" in name:
            raise SysctlSettingError(f"sysctl {name}: refused")
        if "unknown" in name:
            raise UnsupportedSysctl(f"unsupported: sysctl {name} is not modelled")
        settings.append((name, raw))
        return ""

    nstat = Nstat(lambda: dict(values))
    shell = Shell(ShellContext(tmp_path, set_sysctl, lambda n: "4096\t131072\t6291456", nstat))
    return shell, settings, values


def test_sysctl_words_quotes_and_arithmetic(tmp_path):
    shell, settings, _ = make_shell(tmp_path)
    result = shell.run('sysctl -q net.ipv4.tcp_rmem="4096 540000 $((15*1024*1024))"\n'
                       "sysctl -q net.ipv4.a=4 net.ipv4.b=$(( (1 << 3) + 2 ))")
    assert result.status == 0
    assert settings == [("net.ipv4.tcp_rmem", "4096 540000 15728640"),
                        ("net.ipv4.a", "4"), ("net.ipv4.b", "10")]


def test_status_is_the_last_commands(tmp_path):
    shell, _, _ = make_shell(tmp_path)
    assert shell.run("sysctl -q net.ipv4.bad=1\ntrue").status == 0
    last = shell.run("true\nsysctl -q net.ipv4.bad=1")
    assert last.status == 255 and "refused" in last.error
    assert shell.run("false ; true").status == 0


def test_redirections_to_dev_null_and_no_ops(tmp_path):
    shell, _, _ = make_shell(tmp_path)
    assert shell.run("ip tcp_metrics flush all > /dev/null 2>&1").status == 0
    assert shell.run("tc qdisc add dev tun0 root pfifo").status == 0
    with pytest.raises(ShellUnsupported, match="redirection"):
        shell.run("echo x > /tmp/file")


@pytest.mark.parametrize("command, text", [
    ("ss -tin", "shell command `ss -tin`"),
    ("true && false", "shell operator"),
    ("echo $HOME", "shell variable"),
    ("tc qdisc add dev tun0 root fq", "shell command"),
    ("sysctl -q net.ipv4.unknown=1", "sysctl net.ipv4.unknown is not modelled"),
    ("nstat --json", "nstat option --json"),
])
def test_unknown_commands_are_unsupported(tmp_path, command, text):
    shell, _, _ = make_shell(tmp_path)
    with pytest.raises(ShellUnsupported, match="unsupported") as info:
        shell.run(command)
    assert text in str(info.value)


def test_scripts_run_from_the_folder_then_its_parents(tmp_path):
    (tmp_path / "defaults.sh").write_text("# comment\nsysctl -q net.ipv4.x=1\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    shell, settings, _ = make_shell(sub)
    result = shell.run("./defaults.sh")
    assert settings == [("net.ipv4.x", "1")]
    assert "not in the script's folder" in result.notes[0]
    assert shell.run("./missing.sh").status == 127


def test_nstat_history_and_grep(tmp_path):
    shell, _, values = make_shell(tmp_path, {"TcpExtBeyondWindow": 2, "TcpExtTCPOFOQueue": 0})
    assert shell.run('nstat | grep TcpExtBeyondWindow | grep -q " 2 "').status == 0
    values["TcpExtBeyondWindow"] = 5
    assert shell.run('nstat -s | grep TcpExtBeyondWindow | grep -q " 3 "').status == 0
    assert shell.run('nstat | grep TcpExtBeyondWindow | grep -q " 3 "').status == 0
    assert shell.run("nstat | grep -q TcpExtBeyondWindow").status == 1   # no increment left
    assert shell.run("nstat -a | grep -c TcpExt").output == "1\n"        # zeros left out
    assert shell.run("nstat -az | grep -c TcpExt").output == "2\n"
    assert shell.run("nstat -n").output == ""


def test_grep_basic_regular_expressions(tmp_path):
    shell, _, _ = make_shell(tmp_path)
    assert shell.run("echo a+b | grep -q 'a+b'").status == 0      # '+' is literal in a BRE
    assert shell.run("echo aab | grep -q 'a\\+b'").status == 0    # '\\+' is the operator
    assert shell.run("echo abc | grep -v -q abc").status == 1


def test_nstat_rejects_unknown_options():
    with pytest.raises(NstatError):
        Nstat(dict).run(["-x"])


# --------------------------------------------------------------------------- %{ }%


def test_code_passes_and_fails_on_values():
    names = {"tcpi_rcv_mss": 1000, "tcpi_last_data_recv": 5}
    assert run_block("assert tcpi_rcv_mss == 1000, tcpi_rcv_mss;", names) is None
    assert run_block("assert 0 <= tcpi_last_data_recv <= 10", names) is None
    failed = run_block("assert tcpi_rcv_mss == 536, tcpi_rcv_mss", names)
    assert failed is not None and failed.message == "AssertionError: 1000"
    assert not failed.unsupported


@pytest.mark.parametrize("code", [
    "().__class__.__bases__",
    "__import__('os')",
    "[x for x in (1, 2)]",
    "lambda: 1",
    "def f(): pass",
    "getattr(1, 'real')",
    "open('/etc/passwd')",
    "a = 1 << n",
])
def test_code_cannot_reach_python_internals(code):
    problem = check_code(code)
    assert problem is not None and problem.unsupported, code


def test_code_has_no_builtins_beyond_the_listed_ones():
    failed = run_block("assert x == 1", {})
    assert failed is not None and failed.message.startswith("NameError")
    assert run_block("assert max(1, abs(-3)) == 3 and len((1, 2)) == 2", {}) is None
