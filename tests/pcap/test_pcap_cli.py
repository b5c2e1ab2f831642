"""The pcap commands as a user meets them: `tcpsim import pcap`, `tcpsim replay`,
`--pcap` on run and compare; every bad capture is one `tcpsim: error:` line, exit 2."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import dpkt
import pytest

from pcap_frames import SND, capture, frame, tcp, write_pcap
from tcpsim.trace.recorder import read_trace


def tcpsim(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tcpsim.cli", *args], capture_output=True,
                          text=True, cwd=cwd)


def test_import_writes_a_trace_report_reads_and_a_workload(tmp_path):
    cap = capture(tmp_path / "c.pcap", linktype=dpkt.pcap.DLT_LINUX_SLL2)
    r = tcpsim("import", "pcap", str(cap), "-o", str(tmp_path / "c.parquet"))
    assert r.returncode == 0, r.stderr
    assert "1 zero windows, 1 window updates, 1 right-edge retreats, 1 retransmissions, 1 probes" in r.stdout
    cols, meta = read_trace(tmp_path / "c.parquet")
    assert meta["source"] == "import:pcap" and meta["scenario"]["receiver"] == {"role": "client"}
    doc = tomllib.loads((tmp_path / "c.toml").read_text())
    assert doc["link"]["delay_ab"] == "5000000ns" and doc["reader"]["kind"] == "periodic"
    r = tcpsim("report", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "c.html"))
    assert r.returncode == 0, r.stderr
    # the workload runs as a scenario of its own
    r = tcpsim("run", str(tmp_path / "c.toml"), "-d", "200ms", "--no-progress")
    assert r.returncode == 0, r.stderr


def test_several_connections_list_them_and_exit_2(tmp_path):
    second = [(2.0, frame(tcp(40001, SND[1], 7, 0, dpkt.tcp.TH_SYN, 100), True, 1))]
    cap = capture(tmp_path / "c.pcap", extra=second)
    r = tcpsim("import", "pcap", str(cap), "-o", str(tmp_path / "c.parquet"))
    assert r.returncode == 2
    assert "2 TCP connections (sender -> receiver):" in r.stdout
    assert "1. 10.1.0.1:5001 -> 10.1.0.2:40000  16 packets, 6144 bytes" in r.stdout
    assert "--flow 10.1.0.2:40001" in r.stdout
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tcpsim: error:") and "--flow" in err[0]
    r = tcpsim("import", "pcap", str(cap), "-o", str(tmp_path / "c.parquet"), "--flow", "40000")
    assert r.returncode == 0, r.stderr


def _bad(tmp_path):
    good = capture(tmp_path / "good.pcap")
    (tmp_path / "cut.pcap").write_bytes(good.read_bytes()[:-30])
    udp = dpkt.ip.IP(src=b"\x01\x02\x03\x04", dst=b"\x01\x02\x03\x05", p=17,
                     data=dpkt.udp.UDP(sport=53, dport=53))
    write_pcap(tmp_path / "udp.pcap", [(1.0, bytes(udp))], dpkt.pcap.DLT_RAW)
    capture(tmp_path / "snap.pcap", snaplen=40)
    capture(tmp_path / "mid.pcap", handshake=False)
    write_pcap(tmp_path / "link.pcap", [(1.0, b"\x00" * 60)], 147)
    return good


@pytest.mark.parametrize("name, extra, needle", [
    ("cut.pcap", [], "editcap -r"),
    ("udp.pcap", [], "no TCP segments"),
    ("snap.pcap", [], "tcpdump -s 128"),
    ("mid.pcap", [], "give --wscale"),
    ("link.pcap", [], "link type 147"),
    ("good.pcap", ["--reader", "often"], "--reader"),
    ("good.pcap", ["--delay", "soon"], "--delay"),
    ("good.pcap", ["--flow", "x:y"], "--flow"),
])
@pytest.mark.parametrize("command", ["import", "replay"])
def test_bad_captures_are_one_error_line(tmp_path, name, extra, needle, command):
    _bad(tmp_path)
    if command == "import":
        args = ["import", "pcap", str(tmp_path / name), "-o", str(tmp_path / "o.parquet")]
    else:
        args = ["replay", str(tmp_path / name)]
    r = tcpsim(*args, *extra)
    assert r.returncode == 2, r.stdout
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tcpsim: error:"), r.stderr
    assert needle in err[0] and "Traceback" not in r.stderr


def test_replay_scores_the_capture(tmp_path):
    cap = capture(tmp_path / "c.pcap")
    r = tcpsim("replay", str(cap), "--profile", "linux-6.18", "--reader", "never", "--json")
    assert r.returncode in (0, 1), r.stderr
    import json
    d = json.loads(r.stdout)
    assert d["acks"]["kernel_acks"] == 7 and d["acks"]["model_acks"] > 0
    assert d["info"]["replay"]["write_ticks"] == 5
    assert d["outcomes"]["zero_window"]["kernel"] == "zero window"
    # the model's writer sent exactly the bytes that appeared on the wire
    assert d["info"]["kernel_bytes_received"] == d["info"]["model_bytes_received"] == 5120


def test_compare_writes_one_pcap_per_variant(tmp_path):
    r = tcpsim("compare", "seed-rcvbuf32k-fill", "-d", "500ms", "--profile", "linux-6.1",
               "--vs", "linux-6.18", "--pcap", str(tmp_path / "cmp.pcap"),
               "-o", str(tmp_path / "cmp.html"))
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in tmp_path.glob("cmp-*.pcap"))
    assert files == ["cmp-1-linux-6.1.pcap", "cmp-2-linux-6.18.pcap"]
    assert f"pcap: {tmp_path / 'cmp-1-linux-6.1.pcap'}" in r.stdout


def test_the_wire_trace_is_one_side_of_compare(tmp_path):
    cap = capture(tmp_path / "c.pcap")
    assert tcpsim("import", "pcap", str(cap), "-o", str(tmp_path / "c.parquet")).returncode == 0
    r = tcpsim("compare", str(tmp_path / "c.toml"), "--trace", str(tmp_path / "c.parquet"),
               "--profile", "linux-6.18", "-o", str(tmp_path / "cmp.html"))
    assert r.returncode == 0, r.stderr
    head = r.stdout.split("[summary]")[1].splitlines()
    assert "c (import:pcap)" in head[1] and "linux-6.18" in head[1]
    zero = next(line for line in head if line.startswith("zero-window segments"))
    assert zero.split()[2] == "1"                 # the capture's one zero-window ACK
    mem = next(line for line in head if line.startswith("peak memory"))
    assert mem.split()[3] == "—"                  # not on the wire: unknown, not 0 or -1


def test_the_capture_options_are_one_definition_on_import_and_replay():
    """--flow/--delay/--reader/--rcvbuf say the same on both commands (import's help heads
    them "pcap: ", its other formats do not take them)."""
    from typer.main import get_command

    from tcpsim.cli import app
    commands = get_command(app).commands      # type: ignore[attr-defined]
    shared = ("--flow", "--delay", "--reader", "--rcvbuf")
    helps = {name: {p.opts[0]: p.help for p in commands[name].params if p.opts[0] in shared}
             for name in ("import", "replay")}
    assert sorted(helps["replay"]) == sorted(shared)
    assert helps["import"] == {k: f"pcap: {v}" for k, v in helps["replay"].items()}
    assert "run without it to list them" in helps["replay"]["--flow"]
