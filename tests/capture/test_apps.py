"""Writer/reader loops against fake sockets and a socketpair (no root, no kernel TCP)."""

import socket
import threading
import time

import pytest

from tcpsim.capture import apps
from tcpsim.workload import DEFAULT_READER, App, parse_app


class FakeSock:
    """send() takes at most what `room` allows per call (None = would block)."""

    def __init__(self, rooms):
        self.rooms, self.sent = list(rooms), []

    def setblocking(self, flag):
        pass

    def send(self, data):
        room = self.rooms.pop(0) if self.rooms else len(data)
        if room is None:
            raise BlockingIOError
        self.sent.append(len(data[:room]))
        return len(data[:room])


def run_for(target, seconds, *args):
    stop, log = threading.Event(), []
    th = threading.Thread(target=target, args=(*args, stop, log))
    th.start()
    time.sleep(seconds)
    stop.set()
    th.join()
    return log


def test_periodic_writer_continues_a_blocked_write():
    sock = FakeSock([600, None, None, 1000, 1448])
    log = run_for(apps.periodic_writer, 0.06, sock, 1448, 5_000_000)
    # 600 of the first write, two blocked ticks, then the remaining 848, then a new 1448
    assert sock.sent[:3] == [600, 848, 1448]
    kinds = [k for _, k, _ in log if k != "wake"][:5]
    assert kinds == ["write", "write_blocked", "write_blocked", "write", "write"]


def test_periodic_reader_reads_at_most_bytes_per_tick():
    a, b = socket.socketpair()
    a.sendall(b"x" * 100)
    log = run_for(apps.periodic_reader, 0.05, b, 7, 5_000_000)
    reads = [n for _, k, n in log if k == "read"]
    assert reads and all(n <= 7 for n in reads)
    a.close(), b.close()


def test_timer_loops_log_each_wakeup_with_its_due_time():
    # (t_call, "wake", t_due) before every send(): due times on a 5 ms grid, never in the future
    log = run_for(apps.periodic_writer, 0.06, FakeSock([]), 1448, 5_000_000)
    wakes = [(t, due) for t, k, due in log if k == "wake"]
    assert len(wakes) >= 5
    assert all(t >= due for t, due in wakes)
    assert {b[1] - a[1] for a, b in zip(wakes, wakes[1:])} == {5_000_000}
    writes = [k for _, k, _ in log if k in ("write", "write_blocked")]
    assert len(writes) == len(wakes)


def test_blocking_reader_sleeps_in_recv_and_logs_its_waits():
    a, b = socket.socketpair()
    stop, log = threading.Event(), []
    th = threading.Thread(target=apps.blocking_reader, args=(b, stop, log, 1 << 20, 20_000_000))
    th.start()
    time.sleep(0.05)
    a.sendall(b"x" * 3000)
    time.sleep(0.05)
    stop.set()
    th.join()
    reads = [(t, n) for t, k, n in log if k == "read"]
    assert sum(n for _, n in reads) == 3000
    waits = [t for t, k, _ in log if k == "wait"]
    assert waits[0] < reads[0][0]                  # it was waiting in recv() before the data
    assert len(waits) >= 3                         # SO_RCVTIMEO let it look at `stop`
    a.close(), b.close()


def test_fast_reader_drains():
    a, b = socket.socketpair()
    a.sendall(b"x" * 5000)
    log = run_for(apps.fast_reader, 0.1, b)
    assert sum(n for _, k, n in log if k == "read") == 5000
    a.close(), b.close()


@pytest.mark.parametrize("table", [{"kind": "never"}, {"kind": "fast"}, {"kind": "oscil"},
                                   {"kind": "blocking"},
                                   {"kind": "periodic", "bytes": 1, "every": "1ms"},
                                   {"kind": "oscillating", "bytes": 1, "every": "1ms", "bytes2": 2,
                                    "every2": "1ms", "period": "1s"}])
def test_make_reader_kinds(table):
    assert callable(apps.make_reader(parse_app(table, "reader", DEFAULT_READER)))


def test_make_unknown_kinds_raise():
    with pytest.raises(ValueError, match="reader.kind"):
        apps.make_reader(App("sometimes"))
    with pytest.raises(ValueError, match="writer.kind"):
        apps.make_writer(App("trickle"))


def test_oscillating_reader_alternates_its_two_rates():
    a, b = socket.socketpair()
    a.sendall(b"x" * 10_000)
    app = App("oscillating", bytes=3, every=2_000_000, bytes2=7, every2=2_000_000,
              period=20_000_000)
    log = run_for(apps.oscillating_reader, 0.07, b, app)
    sizes = {n for _, k, n in log if k == "read"}
    assert sizes == {3, 7}
    a.close(), b.close()
