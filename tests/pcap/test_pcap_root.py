"""Real traffic: tcpdump captures a fast writer and a slow reader (ordinary sockets in
network namespaces this test creates), `tcpsim import pcap` reads it and `tcpsim replay`
runs its workload under linux-6.18 and scores it. Root, `ip netns` and tcpdump, else skipped."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from tcpsim.capture.netns import connect_pair, missing_tools, netns_available, topology

pytestmark = pytest.mark.root
needs_root = pytest.mark.skipif(not netns_available() or bool(missing_tools(("ip", "ethtool", "tcpdump"))),
                                reason="needs root, `ip netns`, ethtool and tcpdump")

PORT = 47300
TOTAL = 600_000            # bytes the writer sends, as fast as the socket takes them
READ, EVERY_S = 2000, 0.001


def record(pcap: Path) -> int:
    """Capture one transfer on the receiver's side; returns the bytes the reader got."""
    with topology(tag=f"p{os.getpid()}") as topo:
        td = topo.spawn(topo.rcv, ["tcpdump", "-i", "any", "-s", "128", "-U", "-n",
                                   "--immediate-mode",
                                   "--time-stamp-precision=nano", "-w", str(pcap),
                                   f"tcp port {PORT}"])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (not pcap.exists() or pcap.stat().st_size < 24):
            time.sleep(0.05)
        time.sleep(0.5)                       # tcpdump's filter attached
        s, r = connect_pair(topo, PORT)

        def write() -> None:
            sent = 0
            while sent < TOTAL:
                sent += s.send(b"w" * min(65536, TOTAL - sent))
            s.close()

        w = threading.Thread(target=write)
        w.start()
        got = 0
        while True:
            n = len(r.recv(READ))
            if not n:
                break
            got += n
            time.sleep(EVERY_S)
        w.join()
        r.close()
        _settled(pcap)          # tcpdump may lag behind on a loaded machine
        td.terminate()
        td.wait(timeout=10)
    return got


def _settled(pcap: Path, quiet_s: float = 1.0, limit_s: float = 20.0) -> None:
    """Wait until the capture file has stopped growing for quiet_s."""
    size, since, start = -1, time.monotonic(), time.monotonic()
    while time.monotonic() - start < limit_s:
        now = pcap.stat().st_size
        if now != size:
            size, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.1)


@needs_root
def test_capture_import_replay_score(tmp_path):
    from tcpsim.importers.pcap import load
    from tcpsim.pcap.replay import replay_capture
    from tcpsim.validate.report import text

    pcap = tmp_path / "wire.pcap"
    assert record(pcap) == TOTAL
    imp = load(pcap)
    s = imp.meta["summary"]
    assert s["link_type"] == "Linux cooked v2 (SLL2)"
    assert s["bytes"] == TOTAL                    # every byte first seen once on the wire
    assert s["zero_windows"] > 0                  # the slow reader let the buffer fill
    assert s["options"]["receiver"]["timestamps"] and s["options"]["receiver"]["wscale"] >= 0
    writes = sum(r["len"] for r in imp.rows if r["event"] == "write")
    assert writes == TOTAL
    v = replay_capture(pcap, profile="linux-6.18", reader=f"periodic:{READ}B/1ms")
    print(text(v.score))
    acks = v.score.acks
    assert acks.kernel_acks == s["acks"] and acks.model_acks > 0
    assert acks.fraction is not None
    assert v.score.outcomes["zero_window"]["kernel"] == "zero window"
    assert v.replay.write_ticks == s["data_segments"]
    # the native engine (the default where built) replays it as the Python one does
    from tcpsim.engines import native_available
    if native_available():
        for engine in ("python", "native"):
            again = replay_capture(pcap, profile="linux-6.18", reader=f"periodic:{READ}B/1ms",
                                   engine=engine)
            assert text(again.score) == text(v.score), engine
