"""The socket benchmark's driver (tcpsim/bench_socket.py): it runs and reads every byte.
Its figures are not checked here (speed belongs in benchmarks/, never in a test)."""

from __future__ import annotations

from tcpsim.bench_socket import MSS, drive, open_receiver, socket_benchmark
from tcpsim.engines import native_available


def test_drive_reads_every_segment():
    sk = open_receiver("python", "linux-6.6", "nic-2k")
    assert drive(sk, 30) == 30 * MSS
    assert sk.rcv.rcv_nxt == 1 + 30 * MSS and sk.recv_q() == 0


def test_report_names_each_engine():
    lines: list[str] = []
    row = socket_benchmark(20, repeat=1, echo=lines.append)
    assert row["python_us_per_segment"] > 0
    assert lines[1].lstrip().startswith("python")
    if not native_available():
        assert row["native_us_per_segment"] is None
        assert lines[2].strip() == "native  native socket not built yet"
    else:
        assert row["rust_loop_us_per_segment"] > 0
        assert lines[3].lstrip().startswith("rust")

