"""Output options say what they write (issue 18): `run --trace` (Parquet only), `sweep
--table`, `compare --html`, `report --html`; the old `-o` still works with a note. `compare
--help` lists the variant options; `validate` errors are `tcpsim: error:` lines."""

from __future__ import annotations

import pytest

from tests.cli_entry import run_main

NAME = "seed-rcvbuf32k-fill"


def _one_error(err: str, *needles: str) -> None:
    assert err.count("\n") == 1 and err.startswith("tcpsim: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in err, err


@pytest.mark.parametrize("option", ["--trace", "-o"])
@pytest.mark.parametrize("suffix", [".csv", ".json", ".html"])
def test_run_refuses_a_trace_named_as_another_format(option, suffix, tmp_path, monkeypatch,
                                                     capsys):
    out = tmp_path / f"out{suffix}"
    code, stdout, err = run_main(["run", NAME, "-d", "10ms", option, str(out)], monkeypatch,
                                 capsys)
    assert code == 2 and not out.exists() and stdout == ""
    _one_error(err, f"{option} {out}", "Parquet", str(out.with_suffix(".parquet")))


def test_run_minus_o_is_the_old_name_of_trace(tmp_path, monkeypatch, capsys):
    out = tmp_path / "t.parquet"
    code, stdout, err = run_main(["run", NAME, "-d", "10ms", "-o", str(out)], monkeypatch, capsys)
    assert code == 0 and out.is_file() and f"trace: {out}" in stdout
    assert err == f"tcpsim: note: -o is deprecated here; write --trace {out}\n"
    code, _, err = run_main(["run", NAME, "-d", "10ms", "-o", str(out), "--trace", str(out)],
                            monkeypatch, capsys)
    assert code == 2
    _one_error(err, "-o is the old name of --trace")


def test_sweep_table_and_its_old_name(tmp_path, monkeypatch, capsys):
    base = ["sweep", NAME, "-d", "10ms", "-j", "1", "-x", "receiver.so_rcvbuf=16384,32768"]
    table = tmp_path / "rows.csv"
    code, _, err = run_main([*base, "-r", str(tmp_path / "a"), "--table", str(table)],
                            monkeypatch, capsys)
    assert code == 0 and table.read_text().count("\n") == 3 and "note:" not in err
    old = tmp_path / "old.json"
    code, _, err = run_main([*base, "-r", str(tmp_path / "b"), "-o", str(old)], monkeypatch, capsys)
    assert code == 0 and old.is_file()
    assert f"tcpsim: note: -o/--out is deprecated here; write --table {old}" in err


def test_compare_help_lists_the_variant_options(monkeypatch, capsys):
    code, out, _ = run_main(["compare", "--help"], monkeypatch, capsys)
    assert code == 0
    for option in ("--profile", "--vs", "--policy", "--sysctl", "-s", "--html"):
        assert option in out, option


def test_compare_html_and_its_old_name(tmp_path, monkeypatch, capsys):
    sides = ["--profile", "linux-6.1", "--vs=linux-6.18", "-s", "net.ipv4.tcp_adv_win_scale=1"]
    page = tmp_path / "c.html"
    code, out, err = run_main(["compare", NAME, "-d", "10ms", "--html", str(page), *sides],
                              monkeypatch, capsys)
    assert code == 0 and page.is_file() and f"report: {page}" in out and err == ""
    assert "linux-6.18 + net.ipv4.tcp_adv_win_scale=1" in out
    old = tmp_path / "old.html"
    code, out, err = run_main(["compare", NAME, "-d", "10ms", "-o", str(old), *sides],
                              monkeypatch, capsys)
    assert code == 0 and old.is_file()
    assert err == f"tcpsim: note: -o/--out is deprecated here; write --html {old}\n"


def test_validate_errors_are_tcpsim_error_lines(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "broken.parquet"
    bad.write_bytes(b"PAR1 not parquet")
    code, out, err = run_main(["validate", str(bad)], monkeypatch, capsys)
    assert code == 2 and "validate:" not in out
    _one_error(err, "broken.parquet")
    (tmp_path / "empty").mkdir()
    code, out, err = run_main(["validate", str(tmp_path / "empty")], monkeypatch, capsys)
    assert code == 2
    _one_error(err, "no traces given")
    code, out, err = run_main(["validate", "--json", str(bad)], monkeypatch, capsys)
    assert code == 2 and '"errors"' in out
    _one_error(err, "broken.parquet")
