"""scripts/host_memory_capture.py against the real kernel (root only): a short run with a
small net.ipv4.tcp_mem enters pressure and drops, and leaves tcp_mem as it found it."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "host_memory_capture.py"
LOCK = Path("/work/wt/kernel.lock")          # the shared machine's kernel-experiment lock


def test_small_tcp_mem_enters_pressure_and_is_restored(tmp_path):
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2's ip (network namespaces)")
    before = Path("/proc/sys/net/ipv4/tcp_mem").read_text()
    # the setting: smaller hosts may never flush a per-CPU reserve (256 pages) into
    # the global counter the limits look at, and so never see pressure at all
    cmd = [sys.executable, str(SCRIPT), "--tcp-mem", "200 400 600", "--conns", "40",
           "--seconds", "1", "--out", str(tmp_path / "run.json")]
    if LOCK.exists() and shutil.which("flock"):
        cmd = ["flock", str(LOCK)] + cmd
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert Path("/proc/sys/net/ipv4/tcp_mem").read_text() == before
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "run.json").read_text())["summary"]
    assert summary["pressures"] == 1
    assert summary["rcvq_drops"] > 0
    # sockstat's mem is the host's global counter (every namespace's sockets, flushed 256
    # pages at a time per CPU): it passed tcp_mem[1] when pressure was entered
    assert summary["peak_sockstat_mem"] > 400
