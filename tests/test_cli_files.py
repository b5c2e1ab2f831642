"""Outputs never clobber inputs or each other (issue 31): every output a command is given is
checked, resolved and by inode, against the files it reads and its other outputs, before
anything runs (tcpsim/cli_files.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tcpsim.cli_files import FileClash, check_files, command_files, same_file
from tests.cli_entry import run_main

SCENARIO = Path(__file__).resolve().parents[1] / "tcpsim" / "experiments" / "seed-rcvbuf32k-fill.toml"


def _one_error(err: str, *needles: str) -> None:
    assert err.count("\n") == 1 and err.startswith("tcpsim: error: "), err
    for n in needles:
        assert n in err, err


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "X.toml"
    path.write_bytes(SCENARIO.read_bytes())
    return path


@pytest.mark.parametrize("how", ["same", "dotdot", "symlink", "hardlink"])
def test_run_pcap_onto_the_scenario_is_refused_and_the_scenario_kept(how, scenario, tmp_path,
                                                                     monkeypatch, capsys):
    before = scenario.read_bytes()
    out = {"same": scenario, "dotdot": tmp_path / "sub" / ".." / "X.toml",
           "symlink": tmp_path / "S.pcap", "hardlink": tmp_path / "H.pcap"}[how]
    if how == "symlink":
        out.symlink_to(scenario)
    elif how == "hardlink":
        os.link(scenario, out)
    code, stdout, err = run_main(["run", str(scenario), "-d", "10ms", "--pcap", str(out)],
                                 monkeypatch, capsys)
    assert code == 2 and stdout == ""
    _one_error(err, f"--pcap {out}", "scenario file")
    assert scenario.read_bytes() == before


def test_two_outputs_on_one_file_are_refused(scenario, tmp_path, monkeypatch, capsys):
    p = tmp_path / "P.parquet"
    code, _, err = run_main(["run", str(scenario), "-d", "10ms", "--trace", str(p), "--pcap",
                             str(p)], monkeypatch, capsys)
    assert code == 2 and not p.exists()
    _one_error(err, f"--trace {p} and --pcap {p}", "the same file")


def test_a_patch_file_is_an_input(scenario, tmp_path, monkeypatch, capsys):
    patch = tmp_path / "p.py"
    patch.write_text("from tcpsim.policy import Policy\n")
    code, _, err = run_main(["run", str(scenario), "-d", "10ms", "--policy", f"{patch}:P",
                             "--pcap", str(patch)], monkeypatch, capsys)
    assert code == 2 and patch.read_text().startswith("from tcpsim")
    _one_error(err, f"--pcap {patch}", "the patch file")


def test_import_report_and_compare_outputs(tmp_path, monkeypatch, capsys):
    src = tmp_path / "a.pcap"
    src.write_bytes(b"\xd4\xc3\xb2\xa1")
    code, _, err = run_main(["import", "pcap", str(src), "--out", str(src)], monkeypatch, capsys)
    assert code == 2 and src.read_bytes() == b"\xd4\xc3\xb2\xa1"
    _one_error(err, f"--out {src}", "the file to import")
    code, _, err = run_main(["import", "pcap", str(src), "--out", str(tmp_path / "t.parquet"),
                             "--workload", str(tmp_path / "t.parquet")], monkeypatch, capsys)
    assert code == 2
    _one_error(err, "the same file")
    trace = tmp_path / "t.html"            # a trace whose default report would replace it
    trace.write_bytes(b"PAR1")
    code, _, err = run_main(["report", str(trace)], monkeypatch, capsys)
    assert code == 2 and trace.read_bytes() == b"PAR1"
    _one_error(err, "--html (default)", "the trace")
    code, _, err = run_main(["compare", NAME_OF(SCENARIO), "-d", "10ms", "--profile",
                             "linux-6.1", "--vs", "linux-6.18", "--trace", str(trace), "--html",
                             str(trace)], monkeypatch, capsys)
    assert code == 2 and trace.read_bytes() == b"PAR1"
    _one_error(err, f"--html {trace}", "the recorded trace")


def NAME_OF(path: Path) -> str:
    return path.stem


def test_compare_pcap_sides_checked_against_the_scenario(tmp_path, monkeypatch, capsys):
    scenario = tmp_path / "c-1-linux-6.1.pcap"          # where side 1's pcap would go
    scenario.write_bytes(SCENARIO.read_bytes())
    code, _, err = run_main(["compare", str(scenario), "-d", "10ms", "--profile", "linux-6.1",
                             "--vs", "linux-6.18", "--pcap", str(tmp_path / "c.pcap")],
                            monkeypatch, capsys)
    assert code == 2 and scenario.read_bytes() == SCENARIO.read_bytes()
    _one_error(err, "(side 1)", "scenario file")


def test_check_files_unit(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("x")
    assert same_file(a, tmp_path / "." / "a") and not same_file(a, b)
    check_files([("the input", a)], [("--out", b)])
    with pytest.raises(FileClash):
        check_files([("the input", a)], [("--out", a)])
    # an input that does not exist yet is no clash (the command says it is missing)
    check_files([("the input", b)], [("--out", b)])
    ins, outs = command_files(("run",), {"scenario": "seed-rcvbuf32k-fill", "policy": [],
                                         "trace": None, "old_out": None, "pcap": b})
    assert ins == [] and outs == [("--pcap", b)]
