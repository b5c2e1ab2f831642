"""`--pcap OUT`: a simulated run's packets as Wireshark reads them, and back through
`tcpsim import pcap`."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from pcap_frames import SLOW_READER, ZERO_WINDOW_RUN
from tcpsim.importers.pcap import load
from tcpsim.report import simulate
from tcpsim.runner import RunOptions
from tcpsim.scenario import load_scenario


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A 3 s run with zero windows: its in-memory trace and its pcap."""
    out = tmp_path_factory.mktemp("export") / "run.pcap"
    cols, meta = simulate(load_scenario(ZERO_WINDOW_RUN),
                          RunOptions(duration=3_000_000_000, pcap=out))
    return cols, meta, out


def _run_acks(cols):
    """The receiver's segments (not its SYN) in the run's trace: (t, ack, raw, scaled)."""
    return [(cols["t_ns"][i], cols["ack_seq"][i], cols["win_raw"][i], cols["win_scaled"][i])
            for i in range(len(cols["t_ns"]))
            if cols["sock"][i] == "rcv" and cols["event"][i] == "tx" and "S" not in cols["flags"][i]]


def test_import_of_the_export_gives_back_the_runs_windows(exported):
    cols, _, path = exported
    imp = load(path)
    run = _run_acks(cols)
    assert any(a[3] == 0 for a in run), "the run must have zero windows for this test"
    got = [(r["t_ns"], r["ack_seq"], r["win_raw"], r["win_scaled"]) for r in imp.rows
           if r["sock"] == "rcv" and r["event"] == "tx" and "S" not in r["flags"]]
    t0 = imp.meta["summary"]["epoch_ns"]
    assert [(t + t0, a, w, s) for t, a, w, s in got] == run
    s = imp.meta["summary"]
    assert s["zero_windows"] == sum(1 for a in run if a[3] == 0)
    assert s["options"]["receiver"]["timestamps"] and s["options"]["receiver"]["sack_ok"]
    assert s["capture_at"] == "receiver"


def test_same_run_same_bytes(exported, tmp_path):
    _, _, path = exported
    again = tmp_path / "again.pcap"
    simulate(load_scenario(ZERO_WINDOW_RUN), RunOptions(duration=3_000_000_000, pcap=again))
    assert again.read_bytes() == path.read_bytes()


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (apt-get install tshark)")
def test_wireshark_expert_info_lists_the_zero_windows(exported):
    cols, _, path = exported
    zero_t = [t for t, _, _, s in _run_acks(cols) if s == 0]
    proc = subprocess.run(["tshark", "-r", str(path), "-Y", "tcp.analysis.zero_window",
                           "-T", "fields", "-e", "frame.time_epoch"],
                          capture_output=True, text=True, check=True)
    seen = [round(float(x) * 1e9) for x in proc.stdout.split()]
    assert seen == pytest.approx(zero_t, abs=1000)
    expert = subprocess.run(["tshark", "-r", str(path), "-q", "-z", "expert"],
                            capture_output=True, text=True, check=True).stdout
    assert re.search(rf"^\s+{len(zero_t)}\s+Sequence\s+TCP\s+TCP Zero Window segment$", expert, re.M)
    # the sender's zero-window probes and filling the window are recognised too
    assert "TCP keep-alive segment" in expert or "Zero Window Probe" in expert
    assert "window specified by the receiver is now completely full" in expert


def test_the_workload_reproduces_the_window_scale_and_options(tmp_path):
    """A run announcing window scale 13 (tcp_rmem max 256 MiB), exported and imported: the
    workload's receiver announces 13 again, with the same MSS and options."""
    from tcpsim.scenario import scenario_from_dict

    first = tmp_path / "first.pcap"
    simulate(load_scenario("seed-unbounded-growth"), RunOptions(duration=200_000_000, pcap=first))
    imp = load(first)
    assert imp.meta["summary"]["options"]["receiver"]["wscale"] == 13
    assert imp.scenario["sysctl"] == {"net.ipv4.tcp_rmem": [4096, 131072, 1 << 28]}
    again = tmp_path / "again.pcap"
    simulate(scenario_from_dict(imp.scenario), RunOptions(profile="linux-6.1",
                                                          duration=200_000_000, pcap=again))
    # the SYN's window follows tcp_adv_win_scale (-2 in the seed), which the wire does not show
    got, want = (dict(load(p).meta["summary"]["options"]["receiver"]) for p in (again, first))
    assert got.pop("syn_window") > want.pop("syn_window")
    assert got == want


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed (apt-get install tshark)")
def test_wireshark_reads_every_window_and_the_window_updates(tmp_path):
    toml = tmp_path / "slow.toml"
    toml.write_text(SLOW_READER)
    out = tmp_path / "slow.pcap"
    cols, _ = simulate(load_scenario(toml), RunOptions(pcap=out))
    fields = subprocess.run(["tshark", "-r", str(out), "-Y", "ip.src == 10.0.0.2",
                             "-T", "fields", "-e", "tcp.window_size", "-e", "tcp.analysis.window_update"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    wins = [int(line.split("\t")[0]) for line in fields]
    run = [s for _, _, _, s in _run_acks(cols)]
    assert wins[1:] == run                     # Wireshark's scaled windows = the run's (after the SYN)
    updates = sum(1 for line in fields if line.split("\t")[1:] == ["1"])
    imp = load(out)
    assert updates == imp.meta["summary"]["window_updates"] > 0
    assert sum(1 for s in run if s == 0) == imp.meta["summary"]["zero_windows"] > 0


def test_replaying_an_exported_run_gives_back_its_windows(tmp_path):
    """Export -> import -> replay under the same profile, with what the wire cannot show
    given (SO_RCVBUF, tcp_adv_win_scale, a reader that never reads): every window exact."""
    from tcpsim.pcap.replay import replay_capture

    out = tmp_path / "fill.pcap"
    simulate(load_scenario(ZERO_WINDOW_RUN), RunOptions(profile="linux-6.18",
                                                        duration=1_000_000_000, pcap=out))
    v = replay_capture(out, profile="linux-6.18", sysctl={"net.ipv4.tcp_adv_win_scale": 0},
                       reader="never", rcvbuf=32768)
    acks = v.score.acks
    assert acks.kernel_acks > 10 and acks.exact == acks.kernel_acks
    assert v.score.outcomes["zero_window"]["match"]
