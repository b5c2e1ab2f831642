"""Real-kernel captures (root, network namespaces). Short runs; skipped without root."""

import json
import os

import pyarrow.parquet as pq
import pytest

from tcpsim.capture.capture import capture
from tcpsim.capture.netns import run
from tcpsim.capture.probe import available as bpf_available
from tcpsim.trace.schema import COLUMN_NAMES, META_KEYS

SCENARIO = {
    "name": "root-smoke",
    "sysctl": {"net.ipv4.tcp_rmem": [4096, 131072, 8388608]},
    "receiver": {"role": "client"},
    "writer": {"kind": "periodic", "bytes": 1448, "every": "2ms"},
    "reader": {"kind": "periodic", "bytes": 1000, "every": "2ms"},
}


def _namespaces():
    return run(["ip", "netns", "list"], check=False).stdout


@pytest.mark.root
@pytest.mark.parametrize("use_bpf", [False, True])
def test_capture_writes_schema_and_cleans_up(tmp_path, use_bpf):
    if use_bpf and not bpf_available():
        pytest.skip("bpftrace not installed")
    path = capture(SCENARIO, tmp_path, duration_s=2.0, use_bpftrace=use_bpf)
    table = pq.read_table(path)
    assert table.column_names == list(COLUMN_NAMES)
    meta = {k.decode(): json.loads(v) for k, v in table.schema.metadata.items()}
    assert set(META_KEYS) <= set(meta)
    summary = meta["summary"]
    assert summary["bpftrace"] is use_bpf
    assert summary["wire_bytes"] == summary["tcpi_bytes_received"] > 0
    events = set(zip(table.column("sock").to_pylist(), table.column("event").to_pylist()))
    assert {("rcv", "tx"), ("snd", "tx"), ("snd", "write"), ("rcv", "read")} <= events
    if use_bpf:
        assert ("rcv", "rx") in events
        assert summary["probe_last_rcv_nxt"] == summary["tcpi_bytes_received"]
        assert summary["window_check"]["mismatch"] == 0
    assert f"-c{os.getpid()}" not in _namespaces()   # ours are gone (others may run)
