"""End to end on the real kernel (root): record a fixture, validate it. Skipped without root."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tcpsim.capture.netns import netns_available
from tcpsim.capture.probe import available as bpf_available

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(not netns_available() or not bpf_available(),
                                 reason="needs root, `ip netns` and bpftrace")]


def test_record_and_validate_a_fresh_fill(tmp_path):
    from scripts import load_script

    fixtures_main = load_script("capture_fixtures").main
    from tcpsim.validate import run_validate

    assert fixtures_main(["--out", str(tmp_path), "--only", "seed-rcvbuf32k-fill",
                          "--repeat", "1"]) == 0
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    entry = manifest["fixtures"][0]
    assert entry["name"] == "seed-rcvbuf32k-fill" and entry["runs"] == 1
    assert entry["run_summaries"][0]["final_sk_rmem_alloc"] == 63312     # E2, deterministic
    lines: list[str] = []
    assert run_validate([tmp_path], echo=lines.append) == 0, "\n".join(lines)
    assert f"c{os.getpid()}" not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                    text=True).stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json",
                                                          "seed-rcvbuf32k-fill.parquet"]
