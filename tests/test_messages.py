"""Issue 31's misleading or missing messages, each now one `tcpsim: error:` line (or a note)
that names what is wrong first: unreadable traces, directories, binary files, packetdrill
script errors, device keys, repeated options, negative ranges, idle workloads, units."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.cli_entry import run_main

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "tcpsim" / "experiments" / "seed-rcvbuf32k-fill.toml"


def _one_error(err: str, *needles: str) -> str:
    assert err.count("\n") == 1 and err.startswith("tcpsim: error: "), err
    for n in needles:
        assert n in err, err
    assert all(ch.isprintable() for ch in err.rstrip("\n")), repr(err)
    return err


def _trace(tmp_path: Path, monkeypatch, capsys) -> Path:
    t = tmp_path / "t.parquet"
    code, _, _ = run_main(["run", "seed-rcvbuf32k-fill", "-d", "20ms", "--trace", str(t)],
                          monkeypatch, capsys)
    assert code == 0
    return t


def test_unreadable_traces_say_why_in_one_line(tmp_path, monkeypatch, capsys):
    good = _trace(tmp_path, monkeypatch, capsys).read_bytes()
    footer = struct.unpack("<I", good[-8:-4])[0]
    damaged = bytearray(good)
    for i in range(len(good) - 8 - footer, len(good) - 8, 7):
        damaged[i] = 0x0E                        # pyarrow printed this control character
    cases = {"damaged.parquet": (bytes(damaged), "a damaged Parquet file"),
             "cut.parquet": (good[:1000], "a Parquet file cut short (no footer)"),
             "k.parquet.partial": (good[:1000], "an unfinished trace: its run was killed"),
             "text.parquet": (b"hello", "not a Parquet file")}
    for name, (data, said) in cases.items():
        (tmp_path / name).write_bytes(data)
        for argv in (["report", str(tmp_path / name)], ["validate", str(tmp_path / name)]):
            code, _, err = run_main(argv, monkeypatch, capsys)
            assert code == 2
            _one_error(err, name, said)
    code, _, err = run_main(["report", str(tmp_path / "k.parquet")], monkeypatch, capsys)
    _one_error(err, "k.parquet.partial beside it is the unfinished trace")


def test_directories_are_directories(tmp_path, monkeypatch, capsys):
    for argv, said in ((["run", str(tmp_path)], "is a directory"),
                       (["compare", str(tmp_path), "-p", "linux-6.1", "--vs", "linux-6.6"],
                        "is a directory"),
                       (["report", str(tmp_path)], "a directory, not a trace file"),
                       (["replay", str(tmp_path)], "is a directory")):
        code, _, err = run_main(argv, monkeypatch, capsys)
        assert code == 2
        _one_error(err, str(tmp_path), said)


def test_binary_and_broken_packetdrill_scripts_are_one_error_line(tmp_path, monkeypatch,
                                                                   capsys):
    (tmp_path / "bin.pkt").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "bad.pkt").write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
                                      "+0 bogus line here\n")
    code, out, err = run_main(["packetdrill", str(tmp_path / "bin.pkt")], monkeypatch, capsys)
    assert code == 2 and out == ""
    _one_error(err, "bin.pkt: not a text file")
    code, out, err = run_main(["packetdrill", str(tmp_path / "bad.pkt")], monkeypatch, capsys)
    assert code == 2 and out == ""
    _one_error(err, "bad.pkt:2: expected '(' after system call name 'bogus'")


def test_a_binary_scenario_is_not_a_text_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "b.toml").write_bytes(b"\xff\xfe\x00")
    code, _, err = run_main(["run", str(tmp_path / "b.toml")], monkeypatch, capsys)
    assert code == 2
    _one_error(err, "b.toml: not a text file")


def test_a_misspelt_device_key_is_named_first(tmp_path, monkeypatch, capsys):
    f = tmp_path / "d.toml"
    f.write_text(SCENARIO.read_text().replace("[receiver]", "[receiver.device]\nrx_copybrek = 256"
                                              "\n\n[receiver]") if "[receiver]" in
                 SCENARIO.read_text() else SCENARIO.read_text() +
                 "\n[receiver.device]\nrx_copybrek = 256\n")
    code, _, err = run_main(["run", str(f), "-d", "10ms"], monkeypatch, capsys)
    assert code == 2
    _one_error(err, "receiver.device.rx_copybrek: unknown field")


@pytest.mark.parametrize("argv,said", [
    (["run", "seed-rcvbuf32k-fill", "--seed", "1", "--seed", "2"], "run: --seed given twice (1, "
                                                                   "then 2)"),
    (["run", "seed-rcvbuf32k-fill", "-d", "1ms", "--duration=2ms"], "--duration given twice"),
    (["sweep", "seed-rcvbuf32k-fill", "-x", "seed=1,2", "-j", "1", "-j", "2"],
     "sweep run: -j given twice"),
    (["replay", "x.pcap", "--until", "1", "--until", "2"], "replay: --until given twice"),
])
def test_a_single_value_option_given_twice_is_refused(argv, said, monkeypatch, capsys):
    code, _, err = run_main(argv, monkeypatch, capsys)
    assert code == 2
    _one_error(err, said)


def test_repeatable_options_still_repeat(tmp_path, monkeypatch, capsys):
    code, _, err = run_main(["run", "seed-rcvbuf32k-fill", "-d", "5ms", "-s",
                             "net.ipv4.tcp_adv_win_scale=1", "-s", "net.ipv4.tcp_app_win=31"],
                            monkeypatch, capsys)
    assert code == 0, err


@pytest.mark.parametrize("until", ["-3", "0"])
def test_replay_refuses_a_range_that_is_not_positive(until, tmp_path, monkeypatch, capsys):
    pcap = tmp_path / "c.pcap"
    code, _, _ = run_main(["run", "seed-rcvbuf32k-fill", "-d", "50ms", "--pcap", str(pcap)],
                          monkeypatch, capsys)
    assert code == 0
    code, out, err = run_main(["replay", str(pcap), "--until", until], monkeypatch, capsys)
    assert code == 2 and out == ""
    _one_error(err, f"--until {until}: give a positive number of seconds")


def test_a_writer_starting_after_the_end_is_a_note(tmp_path, monkeypatch, capsys):
    f = tmp_path / "i.toml"
    f.write_text('name = "i"\nduration = "1s"\n[writer]\nkind = "bulk"\nstart = "2s"\n'
                 '[reader]\nkind = "fast"\n')
    code, out, err = run_main(["run", str(f)], monkeypatch, capsys)
    assert code == 0 and "i under" in out
    assert err == ("tcpsim: note: writer.start = 2 s is not before the end of the run (1 s): "
                   "the writer does nothing in it; start it earlier or run longer (--duration)\n")


def test_si_kilobytes():
    from tcpsim.units import parse_size
    assert parse_size("1kB", "x") == parse_size("1KB", "x") == 1000
    assert parse_size("1KiB", "x") == parse_size("1k", "x") == 1024


@pytest.mark.parametrize("side,table,said", [
    ("writer", {"kind": "periodic", "bytes": 100, "every": "1ms", "fraction": 0.5},
     'writer.fraction: a writer of kind = "periodic" does not read fraction; its fields: kind, '
     "start, bytes, every, latency"),
    ("reader", {"kind": "never", "bytes": 5},
     'reader.bytes: a reader of kind = "never" does not read bytes; its fields: kind, start'),
    ("reader", {"kind": "oscil", "bytes": 5},
     'reader.bytes: a reader of kind = "oscil" does not read bytes'),
])
def test_a_field_the_kind_does_not_read_is_refused(side, table, said):
    from tcpsim.errors import ScenarioError
    from tcpsim.workload import App, parse_app
    with pytest.raises(ScenarioError) as e:
        parse_app(table, side, App("never"))
    assert str(e.value).startswith(said), str(e.value)
