"""TcpSocket.snapshot(): the complete state as plain data, the form both engines report
(tcpsim/core/snapshot.py), and the pull form of the trace (take_events)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pytest

from tcpsim.core.mib import COUNTERS
from tcpsim.core.segment import ACK, FIN, PSH
from tcpsim.core.skb import Skb
from tcpsim.core.snapshot import RECORDS, first_difference
from tcpsim.core.socket import EventBuffer
from tcpsim.core.state import RcvState
from tcpsim.trace.schema import EVENT_FIELDS

from harness import established


def busy_peer(**kw):
    """An established socket with data read, data queued, out-of-order data and SACK/D-SACK
    state: every queue and most fields away from their initial values."""
    peer = established("linux-6.6", **kw)
    peer.send(3000)
    peer.read(1000)
    peer.send(1448, seq=peer.seq + 5000)            # a hole: OFO queue + SACK block
    peer.at(2).send(500, seq=1)                     # old data: D-SACK
    return peer


def test_every_declared_field_of_every_record():
    sk = busy_peer().sk
    snap = sk.snapshot()
    assert set(snap) == {*RECORDS, "mib", "sock"}
    for record in RECORDS:
        declared = [f.name for f in fields(getattr(sk, record))]
        assert list(snap[record]) == declared, record
    assert snap["rcv"]["selective_acks"] == [list(b) for b in sk.rcv.selective_acks]
    assert snap["rcv"]["selective_acks"], "the test should have a SACK block"
    assert snap["conn"]["state"] == "ESTABLISHED" and type(snap["conn"]["state"]) is str
    assert snap["conn"]["ts_ok"] is True and snap["rcv"]["rcv_nxt"] == sk.rcv.rcv_nxt


def test_a_new_field_cannot_be_forgotten():
    """The snapshot walks the declared fields: a field added to a record appears in it."""
    @dataclass(slots=True, kw_only=True)
    class RcvStateWithMore(RcvState):
        brand_new: tuple[int, int] = (7, 8)

    sk = established().sk
    sk.rcv = RcvStateWithMore(**{f.name: getattr(sk.rcv, f.name) for f in fields(RcvState)})
    assert sk.snapshot()["rcv"]["brand_new"] == [7, 8]


def test_queues_skb_by_skb():
    sk = busy_peer().sk
    mem = sk.snapshot()["mem"]
    for name in ("receive_queue", "ofo_queue"):
        queue = list(getattr(sk.mem, name))
        assert queue, f"the test should fill the {name}"
        assert mem[name] == [{slot: getattr(s, slot) for slot in Skb.__slots__} for s in queue]
        assert all(set(d) == set(Skb.__slots__) for d in mem[name])
    assert sk.snapshot()["snd"]["rtx_queue"] == [list(e) for e in sk.snd.rtx_queue]


def test_mib_has_the_core_and_the_profiles_patch_counters():
    core = established().sk.snapshot()["mib"]
    assert list(core) == list(COUNTERS)
    patched = established(patches=("collapse-max-bytes",)).sk.snapshot()["mib"]
    assert list(patched) == [*COUNTERS, "TCPCollapseMaxBytesExceeded"]
    assert patched["TCPCollapseMaxBytesExceeded"] == 0


def test_sock_part():
    peer = busy_peer()
    peer.send(100, flags=ACK | PSH | FIN)
    sk = peer.sk
    sock = sk.snapshot()["sock"]
    assert sock == {"state": "CLOSE_WAIT", "now": sk.now, "tcp_mstamp": sk.tcp_mstamp,
                    "readable": sk.readable, "writable": sk.writable, "error": "",
                    "eof": False, "accepted": True, "next_deadline": sk.next_deadline()}
    assert sk.state == "CLOSE_WAIT"


def test_the_snapshot_is_a_copy():
    sk = busy_peer().sk
    snap = sk.snapshot()
    snap["mem"]["receive_queue"][0]["len"] = -1
    snap["rcv"]["selective_acks"].clear()
    assert sk.snapshot() != snap


def test_take_events_drains_an_event_buffer():
    peer = established(sink=EventBuffer())
    sk = peer.sk
    handshake = sk.take_events()
    assert handshake and all(len(e) == len(EVENT_FIELDS) for e in handshake)
    assert sk.take_events() == []
    peer.send(100)
    events = sk.take_events()
    assert [e[EVENT_FIELDS.index("event")] for e in events].count("tx") == len(peer.acks) - 1


def test_take_events_without_a_buffer_says_how_to_get_one():
    with pytest.raises(RuntimeError, match="sink=EventBuffer"):
        established().sk.take_events()


def test_first_difference_names_the_path():
    a = {"rcv": {"rcv_wnd": 65535, "q": [{"len": 1}, {"len": 2}]}, "mib": {"X": 0}}
    assert first_difference(a, a) is None
    b = {"rcv": {"rcv_wnd": 65280, "q": [{"len": 1}, {"len": 2}]}, "mib": {"X": 0}}
    assert first_difference(a, b) == ("rcv.rcv_wnd", 65535, 65280)
    c = {"rcv": {"rcv_wnd": 65535, "q": [{"len": 1}, {"len": 3}]}, "mib": {"X": 0}}
    assert first_difference(a, c) == ("rcv.q[1].len", 2, 3)
    d = {"rcv": {"rcv_wnd": 65535, "q": [{"len": 1}]}, "mib": {"X": 0}}
    assert first_difference(a, d) == ("rcv.q.len", 2, 1)
    assert first_difference({"x": True}, {"x": 1}) == ("x", True, 1)     # types count
    assert first_difference({"x": 1}, {}) == ("x", 1, "<missing>")
