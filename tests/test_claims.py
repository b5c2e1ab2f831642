"""`tcpsim claims`: the machinery, and the claims short enough for the default suite."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tcpsim.claims import CLAIMS, Runner, _sending_rounds, run_claims
from tcpsim.scenario import load_scenario

FIXTURES = Path(__file__).parent / "fixtures" / "kernel"


def test_every_claim_names_its_source_and_the_seed_figure():
    keys = [c.key for c in CLAIMS]
    assert len(keys) == len(set(keys))
    for c in CLAIMS:
        assert c.source and c.seed_says and c.title


def test_short_claims_pass_with_their_figures():
    rows = run_claims(["syn-6.6", "initrwnd"], echo=None)
    assert [r["claim"] for r in rows] == ["initrwnd", "syn-6.6"]
    assert all(r["result"] == "PASS" for r in rows), rows
    assert "SYN-ACK window: 6.6 " in rows[1]["measured"]


def test_sending_rounds_split_on_half_an_rtt_of_silence():
    t = pa.table({"t_ns": [0, 10, 20, 6_000_000, 6_000_010, 20_000_000, 20_000_001],
                  "sock": ["snd", "snd", "rcv", "snd", "snd", "snd", "snd"],
                  "event": ["tx", "tx", "tx", "tx", "tx", "tx", "tx"],
                  "len": [1448, 1448, 0, 100, 0, 7, 8]})
    assert _sending_rounds(t, 10_000_000) == [2896, 100, 15]


def test_linux_6_18_fills_the_default_budget_in_the_real_kernels_rounds(tmp_path):
    """The claim's figure against the real 6.18 kernel's capture of the same fill: the same
    rounds, byte for byte (the first one needs the handshake's RTT sample: without it
    tcp_tso_should_defer() holds the 45th segment back for the second round)."""
    kernel = pq.read_table(FIXTURES / "seed-default-fill.parquet")
    sc = load_scenario("seed-default-fill").with_(profile="linux-6.18")
    _, t = Runner(tmp_path, quick=True).run(sc, trace=True)
    rtt = sc.link.delay_ab + sc.link.delay_ba
    ours, theirs = _sending_rounds(t, rtt), _sending_rounds(kernel, rtt)
    assert ours == theirs


def test_an_unknown_claim_is_an_error_not_an_empty_run():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "tcpsim.cli", "claims", "--only", "nosuch"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("tcpsim: error: --only nosuch: no such claim")
    assert "unbounded-13" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
