"""The core's trace events (EVENT_FIELDS of tcpsim/trace/schema.py) and the recorder that
turns them into rows without looking at the socket."""

from tcpsim.core.segment import ACK, PSH, SYN, Segment
from tcpsim.trace.recorder import MemoryRecorder
from tcpsim.trace.schema import COLUMN_NAMES, EV_STATE, EVENT_FIELDS, STATE_COLUMNS

from harness import Keep, established


def _state_of(sk) -> dict[str, int]:
    """The socket's state as the trace columns name it, read here (not by the recorder)."""
    rcv, mem, snd = sk.rcv, sk.mem, sk.snd
    return {"sk_rmem_alloc": mem.sk_rmem_alloc, "sk_rcvbuf": mem.sk_rcvbuf,
            "rcv_nxt": rcv.rcv_nxt, "copied_seq": rcv.copied_seq, "rcv_wup": rcv.rcv_wup,
            "rcv_wnd": rcv.rcv_wnd, "rcv_ssthresh": rcv.rcv_ssthresh,
            "window_clamp": rcv.window_clamp, "rcv_mss": sk.ack.ack_rcv_mss,
            "scaling_ratio": rcv.scaling_ratio, "rcvq_space": rcv.rcvq_space,
            "rcv_rtt_us": rcv.rcv_rtt_us8 >> 3, "recv_q": sk.recv_q(),
            "rcvq_len": len(mem.receive_queue), "ofoq_len": len(mem.ofo_queue),
            "snd_una": snd.snd_una, "snd_nxt": snd.snd_nxt, "snd_wnd": snd.snd_wnd,
            "snd_cwnd": snd.snd_cwnd}


def test_every_event_carries_the_state_the_trace_shows_after_it():
    keep = Keep()
    p = established("linux-6.6", sink=keep)
    p.at(2).send(1448)
    ev = keep.events[-1]
    assert len(ev) == len(EVENT_FIELDS)
    fields = dict(zip(EVENT_FIELDS, ev))
    assert fields["sock"] == "rcv" and fields["t_ns"] == p.sk.now
    assert {n: fields[n] for n in STATE_COLUMNS} == _state_of(p.sk)
    rx = [e for e in keep.events if e[EVENT_FIELDS.index("event")] == "rx"]
    assert rx and rx[-1][EVENT_FIELDS.index("seg")].len == 1448


def test_a_socket_whose_events_nobody_wants_builds_none():
    rec = MemoryRecorder(socks=("snd",))
    p = established("linux-6.1", sink=rec)
    p.at(2).send(1448)
    assert p.sk.sink is None and rec.rows == []


def _event(seg, event="tx", scale=7, length=-1, state=None):
    state = state or tuple(range(100, 100 + len(STATE_COLUMNS)))
    head = (5_000, "rcv", event, "", seg, -1, "", length, -1, scale)
    assert len(head) == EV_STATE
    return head + state


def test_the_recorder_makes_a_row_from_the_event_alone():
    rec = MemoryRecorder()
    seg = Segment(1, 0, ACK, 1449, 100, tsval=5, tsecr=3)
    rec.record(_event(seg))
    row = dict(zip(COLUMN_NAMES, rec.rows[0]))
    assert (row["t_ns"], row["sock"], row["event"], row["flags"]) == (5_000, "rcv", "tx", "A")
    assert (row["seq"], row["end_seq"], row["ack_seq"], row["win_raw"]) == (1, 1, 1449, 100)
    assert row["win_scaled"] == 100 << 7 and row["len"] == 0
    assert [row[n] for n in STATE_COLUMNS] == list(range(100, 100 + len(STATE_COLUMNS)))
    assert row["collapse_ns"] == -1 and row["drop_reason"] == ""


def test_a_syn_window_is_never_scaled_and_a_data_length_defaults_to_the_payload():
    rec = MemoryRecorder()
    rec.record(_event(Segment(0, 0, SYN | ACK, 1, 65535)))
    rec.record(_event(Segment(1, 1000, ACK | PSH, 1, 50), event="rx", scale=2))
    syn, data = (dict(zip(COLUMN_NAMES, r)) for r in rec.rows)
    assert syn["win_scaled"] == 65535 and syn["end_seq"] == 1
    assert data["win_scaled"] == 200 and data["len"] == 1000 and data["end_seq"] == 1001
