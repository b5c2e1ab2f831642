"""Fuzz: command-line options of run, compare and sweep -- durations, sysctl forms, profiles,
patches, sweep axes and study files, output paths in missing or unwritable directories."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import example, given, strategies as st

from fuzz_harness import FUZZ, check, tcpsim, workdir
from fuzz_strategies import (durations, identifiers, patches, profiles, sysctl_names, sysctl_values,
                             toml_document, toml_values)

SCENARIO = "seed-never-reads"


@st.composite
def run_options(draw) -> tuple[list[str], list[str]]:
    """(argv options, the option names an error may name)."""
    argv: list[str] = ["-d", draw(st.sampled_from(["5ms", "3ms"]))]
    names = ["--duration", "-d"]
    if draw(st.booleans()):
        argv += ["-d", draw(durations)]
    if draw(st.booleans()):
        argv += ["-p", draw(profiles)]
        names += ["profile", "--profile"]
    for _ in range(draw(st.integers(0, 2))):
        argv += ["--policy", draw(patches)]
        names += ["patch", "--policy"]
    for _ in range(draw(st.integers(0, 2))):
        name, value = draw(sysctl_names), draw(sysctl_values)
        argv += ["-s", draw(st.sampled_from([f"{name}={value}", f"{name}", f"={value}"]))]
        names += ["--sysctl", name or "=", "sysctl"]
    if draw(st.booleans()):
        argv += ["--hz", str(draw(st.sampled_from([0, -1, 100, 250, 300, 1000, 999, 1 << 40])))]
        names += ["--hz"]
    if draw(st.booleans()):
        argv += ["--seed", str(draw(st.integers(-(1 << 70), 1 << 70)))]
        names += ["--seed"]
    return argv, names


def _out_path(kind: str, suffix: str) -> str:
    return {"missing": f"no/such/dir/out{suffix}", "file-as-dir": f"afile/out{suffix}",
            "unwritable": f"ro/out{suffix}", "ok": f"out{suffix}", "dir": "."}[kind]


def _fixtures() -> None:
    Path("afile").write_text("x")
    Path("ro").mkdir()
    os.chmod("ro", 0o500)


out_kinds = st.sampled_from(["missing", "file-as-dir", "unwritable", "ok", "dir"])


@FUZZ
@given(run_options(), st.none() | st.tuples(st.sampled_from(["-o", "--pcap"]), out_kinds))
@example((["-d", "5ms", "-s", "net.ipv4.tcp_rmem=[4096,131072,6291456]"], ["-s"]), None)
@example((["-d", "5ms"], ["-d"]), ("-o", "file-as-dir"))    # #18: FileExistsError traceback
def test_run_options(opts, out):
    argv, names = opts
    with workdir():
        _fixtures()
        extra: list[str] = []
        if out:
            flag, kind = out
            extra = [flag, _out_path(kind, ".parquet" if flag == "-o" else ".pcap")]
            names = [*names, flag, extra[1], "--trace"]
        full = ["run", SCENARIO, "--no-progress", *argv, *extra]
        result = tcpsim(full)
        check(result, names, argv=full)
        if result[0] == 0 and out:
            assert Path(extra[1]).is_file(), f"{full}: exit 0 but no {extra[1]}"


@FUZZ
@given(run_options(), st.lists(profiles, max_size=2), st.booleans(), out_kinds)
@example((["-d", "5ms", "-p", "linux-6.1"], ["-p"]), ["linux-6.1"], False, "ok")  # #18: ValueError
@example((["-d", "5ms", "-p", "linux-6.1"], ["-p"]), ["linux-6.6"], False, "file-as-dir")
def test_compare_options(opts, vs, as_json, out_kind):
    argv, names = opts
    if "--seed" in argv:                                # compare has no --seed
        i = argv.index("--seed")
        argv = argv[:i] + argv[i + 2:]
    with workdir():
        _fixtures()
        full = ["compare", SCENARIO, *argv]
        for v in vs:
            full += ["--vs", v]
        out = _out_path(out_kind, ".html")
        full += ["-o", out] + (["--json"] if as_json else [])
        result = tcpsim(full)
        check(result, [*names, "--vs", "-o", "--out", out, "profile"], argv=full)
        if result[0] == 0:
            assert Path(out).is_file() or out == ".", f"{full}: exit 0 but no {out}"


axis_keys = st.one_of(st.sampled_from(["link.rtt", "reader.bytes", "profile", "policy", "seed",
                                       "sysctl.tcp_rmem", "tcp_adv_win_scale", "writer.kind",
                                       "link.loss", "nosuch", "link.nosuch", ""]), identifiers)
axis_values = st.one_of(st.sampled_from(["1ms,2ms", "1..3", "1ms..4ms", "none,shrink-window",
                                         "linux-6.1,linux-9", "[1,2]", "", ",", "a,,b",
                                         "initrwnd+initrwnd", "5ms..1ms"]),
                        st.text(alphabet="0123456789.,msk-+", max_size=10))


@FUZZ
@given(st.lists(st.tuples(axis_keys, axis_values), min_size=1, max_size=2), st.booleans())
def test_sweep_axes(axes, with_out):
    with workdir():
        full = ["sweep", SCENARIO, "-d", "3ms", "-j", "1", "-r", "results"]
        names = ["-x", "--vary", "-d"]
        for k, v in axes:
            full += ["-x", f"{k}={v}"]
            names += [k or "=", v]
        if with_out:
            full += ["-o", "no/such/dir/rows.csv"]
            names += ["-o", "--out", "no/such/dir"]
        check(tcpsim(full), names, argv=full)


study_tables = st.fixed_dictionaries({}, optional={
    "scenario": st.sampled_from([SCENARIO, "nosuch", ""]) | toml_values,
    "duration": durations | toml_values,
    "metrics": st.lists(st.sampled_from(["peak_sk_rcvbuf", "nosuch", "counter.TcpExtNope"]),
                        max_size=2) | toml_values,
    "x": st.sampled_from(["reader.bytes", "nosuch"]) | toml_values,
    "description": toml_values,
    "bogus": toml_values})


@FUZZ
@given(study_tables, st.dictionaries(axis_keys, st.lists(st.sampled_from(
    [1, 100, "5ms", "linux-6.1", "none", "x", -1, 0.5]), max_size=3) | toml_values, max_size=2))
def test_study_files(study, axes):
    with workdir():
        doc = {"study": study, "axes": axes}
        Path("study.toml").write_text(toml_document(doc))
        full = ["sweep", "study.toml", "-d", "3ms", "-j", "1", "-r", "results"]
        check(tcpsim(full), ["study.toml"], argv=full)


# -- the argument parser's own refusals, for every command -----------------------------------

def _commands() -> dict[str, object]:
    """{"run": click command, "sweep report": ..., ...}: every command (not group)."""
    from typer.main import get_command
    from tcpsim.cli import app
    out, todo = {}, [("", get_command(app))]
    while todo:
        path, cmd = todo.pop()
        for name, sub in getattr(cmd, "commands", {}).items():
            todo.append((f"{path} {name}".strip(), sub))
        if path and not hasattr(cmd, "commands"):     # a group routes to its commands
            out[path] = cmd
    return out


COMMANDS = _commands()


def _options(command: str) -> list[str]:
    return [o for p in COMMANDS[command].params for o in (*p.opts, *p.secondary_opts)]


def _valued_options(command: str) -> list[str]:
    """The options of `command` that take a value (not flags)."""
    return [p.opts[0] for p in COMMANDS[command].params
            if p.param_type_name == "option" and not getattr(p, "is_flag", False)]


INTEGER_OPTIONS = [("run", "--seed"), ("run", "--hz"), ("bench", "--repeat"),
                   ("sweep run", "--jobs")]


@FUZZ
@given(st.sampled_from(sorted(COMMANDS)), st.from_regex(r"--[a-z][a-z-]{0,12}|-[a-zA-Z]", fullmatch=True),
       st.data())
@example("run", "--seeed", None)
@example("sweep report", "--frob", None)
@example("compare", "-t", None)               # was "x: missing its value"
def test_parser_refusals(command, token, data):
    """An unknown option, an option without its value: exit 2 with one `tcpsim: error:` line
    naming the option and the command's --help -- never click's usage panel (#18)."""
    argv = command.split()
    if token in _options(command):                  # a real option: give it no value instead
        valued = _valued_options(command)
        if not valued:
            return
        token = data.draw(st.sampled_from(valued)) if data else valued[0]
        full = [*argv, token]
    else:
        full = [*argv, token, "x"]
    with workdir():
        line = check(tcpsim(full), [token], argv=full)
    assert line and f"tcpsim {command} --help" in line, line


@FUZZ
@given(st.sampled_from(INTEGER_OPTIONS),
       st.text(alphabet="abc1.e-_ ", min_size=1, max_size=6).filter(
           lambda s: not s.strip().lstrip("-").isdigit()))
def test_parser_refuses_non_numbers(where, value):
    command, option = where
    full = [*command.split(), option, value]
    with workdir():
        line = check(tcpsim(full), [option], argv=full)
    assert line and f"see tcpsim {command} --help" in line, line
