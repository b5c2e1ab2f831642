"""Importers on live output of this machine's kernel (root, network namespaces).

`record_samples()` runs a short bulk transfer between two namespaces, taking `ss -tmi`
snapshots of the receiver and collecting `tcp:tcp_rcvbuf_grow` events in a private tracefs
instance (the global trace buffer is not touched); the tests import both. The committed
samples under tests/fixtures/importers/ were made with it:

    sudo python tests/importers/test_importers_root.py tests/fixtures/importers
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tcpsim.capture.netns import netns_available

pytestmark = pytest.mark.root
needs_root = pytest.mark.skipif(not netns_available(), reason="needs root and `ip netns`")

PORT = 47100
TRACEFS = Path("/sys/kernel/tracing")


def _trace_instance(name: str) -> Path:
    from tcpsim.capture.probe import ensure_tracefs

    ensure_tracefs()
    inst = TRACEFS / "instances" / name
    inst.mkdir()
    return inst


def record_samples(out: Path, seconds: float = 1.0) -> tuple[Path, Path]:
    """Bulk transfer with a reading receiver; returns (ss log, rcvbuf_grow trace) paths."""
    from tcpsim.capture.netns import connect_pair
    from tcpsim.capture.netns import topology

    out.mkdir(parents=True, exist_ok=True)
    ss_path, grow_path = out / "ss-tmi.txt", out / "rcvbuf-grow.txt"
    inst = _trace_instance(f"tcpsim-imp-{os.getpid()}")
    try:
        (inst / "events/tcp/tcp_rcvbuf_grow/enable").write_text("1")
        with topology(tag=f"i{os.getpid()}") as topo:
            s, r = connect_pair(topo, PORT)
            stop = threading.Event()

            def send() -> None:
                s.setblocking(False)
                buf = b"a" * 65536
                while not stop.is_set():
                    try:
                        s.send(buf)
                    except BlockingIOError:
                        time.sleep(0.0005)

            def recv() -> None:
                r.settimeout(0.1)
                while not stop.is_set():
                    try:
                        r.recv(1 << 16)
                    except (TimeoutError, OSError):
                        pass

            threads = [threading.Thread(target=send), threading.Thread(target=recv)]
            for th in threads:
                th.start()
            lines: list[str] = []
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                t = time.time_ns()
                snap = topo.sh(topo.rcv, ["ss", "-tmi", f"sport = :{PORT}"], check=False)
                lines.append(f"{t // 10**9}.{t % 10**9:09d}\n{snap}")
                time.sleep(0.1)
            stop.set()
            for th in threads:
                th.join()
            s.close()
            r.close()
        ss_path.write_text("".join(lines))
        (inst / "events/tcp/tcp_rcvbuf_grow/enable").write_text("0")
        text = (inst / "trace").read_text()
        grow_path.write_text("".join(ln + "\n" for ln in text.splitlines()
                                     if ln.startswith("#") or f"sport={PORT} " in ln))
    finally:
        try:
            (inst / "events/tcp/tcp_rcvbuf_grow/enable").write_text("0")
        except OSError:
            pass
        inst.rmdir()
    return ss_path, grow_path


@needs_root
def test_live_ss_and_rcvbuf_grow_import(tmp_path):
    from tcpsim.importers import import_file
    from tcpsim.validate.trace import load, view

    ss_path, grow_path = record_samples(tmp_path / "raw", seconds=0.6)
    ss = import_file("ss", ss_path, tmp_path / "ss.parquet", port=PORT)
    cols, meta = load(ss)
    v = view(cols, meta)
    assert meta["source"] == "import:ss"
    assert v.state["sk_rcvbuf"].v and min(v.state["sk_rcvbuf"].v) > 0
    assert all(t >= 0 for t in v.state["sk_rcvbuf"].t)
    if "tcp_rcvbuf_grow" in grow_path.read_text():
        grow = import_file("rcvbuf-grow", grow_path, tmp_path / "grow.parquet", port=PORT)
        cols, meta = load(grow)
        assert set(cols["detail"]) == {"rcvbuf_grow"}
        assert max(cols["sk_rcvbuf"]) > 131072            # autotuning grew the buffer
    assert f"tcs-rcv-i{os.getpid()}" not in subprocess.run(
        ["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not (TRACEFS / "instances" / f"tcpsim-imp-{os.getpid()}").exists()


if __name__ == "__main__":
    dest = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/importers")
    tmp = dest / ".raw"
    paths = record_samples(tmp)
    for p in paths:
        shutil.move(str(p), dest / p.name)
    tmp.rmdir()
    print(*(dest / p.name for p in paths))
