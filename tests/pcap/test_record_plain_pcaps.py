"""scripts/record_plain_pcaps.py records a capture that imports and replays, its truth beside
it. Root, `ip netns`, ethtool and tcpdump, else skipped; slow (namespaces, a second of traffic)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tcpsim.capture.netns import missing_tools, netns_available

pytestmark = [pytest.mark.root, pytest.mark.slow,
              pytest.mark.skipif(not netns_available() or bool(missing_tools(("ip", "ethtool", "tcpdump"))),
                                 reason="needs root, `ip netns`, ethtool and tcpdump")]
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "record_plain_pcaps.py"


def test_a_never_reading_capture_is_recorded_and_fits(tmp_path):
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), "veth-never"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    truth = json.loads((tmp_path / "veth-never.truth.json").read_text())
    assert truth["reader"] == "never" and truth["offloads"] == "tso/gso/gro off"
    from tcpsim.pcap.fit import Capture, rank
    cap = Capture(tmp_path / "veth-never.pcap.gz")
    r2 = rank(cap, [("linux-6.1", ()), ("linux-6.18", ())])
    assert r2.fits[0].profile == "linux-6.18"
