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
    kinds = [k for _, k, _ in log[:5]]
    assert kinds == ["write", "write_blocked", "write_blocked", "write", "write"]


def test_periodic_reader_reads_at_most_bytes_per_tick():
    a, b = socket.socketpair()
    a.sendall(b"x" * 100)
    log = run_for(apps.periodic_reader, 0.05, b, 7, 5_000_000)
    reads = [n for _, k, n in log if k == "read"]
    assert reads and all(n <= 7 for n in reads)
    a.close(), b.close()


def test_fast_reader_drains():
    a, b = socket.socketpair()
    a.sendall(b"x" * 5000)
    log = run_for(apps.fast_reader, 0.1, b)
    assert sum(n for _, k, n in log if k == "read") == 5000
    a.close(), b.close()


@pytest.mark.parametrize("table", [{"kind": "never"}, {"kind": "fast"}, {"kind": "oscil"},
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
