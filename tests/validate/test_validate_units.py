"""The pieces of `validate` on small made-up inputs: replay ticks, profile matching, sysctls,
outcome classes, ACK pairing."""

from __future__ import annotations

import pytest

from tcpsim.validate.replay import capture_hz, matching_profile, reader_ticks, replay_sysctls
from tcpsim.validate.outcomes import outcomes, stall_start
from tcpsim.validate.scores import match_acks, rel_error
from tcpsim.validate.trace import Ack, view
from tcpsim.workload import App

MS = 1_000_000


def periodic(n=1, every=MS):
    return App("periodic", bytes=n, every=every)


def test_reader_ticks_fill_only_the_slots_no_read_took():
    # grid phase 0.2 ms; a late tick at 2.9 ms (slot 2) must not create an extra tick, the
    # empty slot 4 (4.2 ms) must be filled
    reads = [(200_000, 1), (1_250_000, 1), (2_900_000, 1), (3_210_000, 1), (5_230_000, 1)]
    ticks = reader_ticks(reads, periodic(), end=6 * MS, shift=0)
    times = [t for t, _, _ in ticks]
    assert times == [200_000, 1_250_000, 2_900_000, 3_210_000, 4_200_000, 5_230_000]
    assert [k for _, _, k in ticks] == [1, 1, 1, 1, -1, 1]
    assert all(ask == 1 for _, ask, _ in ticks)


def test_reader_ticks_shift_and_oscillating_sizes():
    app = App("oscillating", bytes=1, every=MS, bytes2=3300, every2=MS, period=3 * MS)
    ticks = reader_ticks([(100_000, 1)], app, end=5 * MS, shift=7)
    assert ticks[0][0] == 100_007
    assert [ask for _, ask, _ in ticks] == [1, 1, 1, 3300, 3300]   # 0.1 .. 4.1 ms


def test_reader_ticks_fast_reader_is_its_log():
    ticks = reader_ticks([(5, 100), (9, 20)], App("fast", bytes=1 << 20), end=10, shift=1)
    assert ticks == [(6, 1 << 20, 100), (10, 1 << 20, 20)]


def test_matching_profile():
    assert matching_profile("linux-6.18.44-fc-v657") == ("linux-6.18", "")
    name, note = matching_profile("linux-6.7.2")
    assert name == "linux-6.6" and "nearest older" in note
    name, note = matching_profile("freebsd")
    assert name == "linux-6.18" and note


def test_replay_sysctls_converts_read_back_strings():
    known = frozenset({"tcp_rmem", "rmem_max", "tcp_shrink_window", "tcp_adv_win_scale"})
    out, skipped = replay_sysctls({"net.ipv4.tcp_rmem": "4096 131072 33554432",
                                   "net.core.rmem_max": "4194304",
                                   "net.ipv4.tcp_adv_win_scale": "-2",
                                   "net.ipv4.tcp_mem": "", "net.ipv4.tcp_app_win": "31"}, known)
    assert out == {"net.ipv4.tcp_rmem": [4096, 131072, 33554432], "net.core.rmem_max": 4194304,
                   "net.ipv4.tcp_adv_win_scale": -2}
    assert skipped == ["net.ipv4.tcp_app_win"]


def trace(rows, source="tcpsim", counters=None):
    """Columns for view() from short row dicts (missing columns -1 / '')."""
    from tcpsim.trace.schema import COLUMN_NAMES, INT_COLUMNS
    cols = {c: [] for c in COLUMN_NAMES}
    for r in rows:
        for c in COLUMN_NAMES:
            cols[c].append(r.get(c, -1 if c in INT_COLUMNS else ""))
    return view(cols, {"source": source, "counters": counters or {}})


def ack(t, seq, win, **state):
    return {"t_ns": t, "sock": "rcv", "event": "tx", "flags": "A", "ack_seq": seq,
            "win_scaled": win, "win_raw": win // 256, **state}


def test_outcomes_unbounded_stall_and_drops():
    v = trace([ack(0, 1, 64000, sk_rmem_alloc=0, sk_rcvbuf=131072),
               ack(1 * MS, 100, 8192, sk_rmem_alloc=200000, sk_rcvbuf=150000),
               ack(2 * MS, 200, 0, sk_rmem_alloc=210000, sk_rcvbuf=200000),
               ack(900 * MS, 200, 0, sk_rmem_alloc=210000, sk_rcvbuf=210000)],
              counters={"TcpExtBeyondWindow": 3})
    o = outcomes(v, end_ns=1000 * MS, stall_gap_ns=500 * MS)
    assert (o.memory, o.zero_window, o.drops, o.stall, o.stall_at_ns) == \
        ("unbounded", True, True, True, 2 * MS)
    assert o.label("zero_window") == "zero window" and o.label("drops") == "drops"
    short = outcomes(v, end_ns=400 * MS, stall_gap_ns=500 * MS)
    assert short.stall is False                 # the zero window has not lasted long enough


def test_stall_needs_ack_seq_to_stay_put():
    acks = [Ack(0, 1, 0, 0), Ack(100, 50, 0, 0), Ack(10_000, 60, 100, 1)]
    assert stall_start(acks, end_ns=20_000, gap_ns=5_000) == 100
    assert stall_start(acks, end_ns=20_000, gap_ns=50_000) is None


def test_acks_pair_by_ack_seq_then_nearest():
    k = trace([ack(10, 1449, 65536), ack(20, 2897, 64512), ack(30, 2897, 64512),
               ack(40, 5000, 60160)], source="capture")
    m = trace([ack(11, 1449, 65536), ack(21, 2897, 64512), ack(45, 5001, 59904)])
    s = match_acks(k, m, t1=100)
    assert (s.kernel_acks, s.paired, s.nearest, s.exact) == (4, 3, 1, 3)
    assert s.fraction == 0.75 and s.within_unit == 4
    fm = s.first_mismatch
    assert fm["ack_seq"] == 5000 and fm["kernel_win"] == 60160 and fm["model_win"] == 59904
    assert fm["model_ack_seq"] == 5001


def test_rel_error():
    assert rel_error(100, 110) == pytest.approx(0.1)
    assert rel_error(0, 0) == 0.0 and rel_error(0, 5) == float("inf")
    assert rel_error(None, 5) is None


def test_capture_hz_from_metadata_then_manifest():
    assert capture_hz({"kernel_hz": 250, "kernel_hz_source": "/proc/config.gz"}) == (
        250, "trace metadata (/proc/config.gz)")
    hz, why = capture_hz({"kernel_hz": None, "kernel_hz_source": "unknown: no CONFIG_HZ in x"},
                         {"hz": 1000})
    assert hz is None and "could not read" in why          # the trace's own word wins
    assert capture_hz({}, {"hz": 250, "hz_source": "read later"}) == (250, "manifest.json")
    assert capture_hz({}, {}) == (None, "the trace does not record its kernel's HZ")


def test_bulk_write_ticks_move_the_first_write_back_to_its_first_data():
    # a bulk send() is logged when it returns; its data leaves while it runs, so the first
    # write is replayed when its first segment left (seen at the receiver less the delay)
    from tcpsim.validate.replay import bulk_write_ticks
    writes = [(1_654_000, 131072, False), (1_798_000, 131072, False), (2_225_000, 131072, False)]
    assert bulk_write_ticks(writes, -1_528_000, 100) == [
        (-1_527_900, 131072), (1_798_100, 131072), (2_225_100, 131072)]
    assert bulk_write_ticks(writes, 2_000_000, 0)[0] == (1_654_000, 131072)   # never later
    assert bulk_write_ticks(writes, None, 0)[0] == (1_654_000, 131072)


def _reads_and_acks(pairs: int, lag: int):
    """A receiver whose reads each send an ACK `lag` ns before their log row (as
    tcpsim.capture.apps logs a read after recv() returns), plus one read that sent none."""
    cols = {k: [] for k in ("t_ns", "sock", "event", "detail", "flags", "len", "ack_seq",
                            "win_scaled", "win_raw")}

    def row(t, sock, event, flags="", length=-1, ack=-1):
        for k, v in zip(cols, (t, sock, event, "", flags, length, ack, 8192, 1)):
            cols[k].append(v)

    row(0, "rcv", "tx", "S")
    for i in range(pairs):
        t = (i + 1) * MS
        row(t - lag, "rcv", "tx", "A", 0, 1000 + i)
        row(t, "rcv", "read", length=1)
    row((pairs + 1) * MS + 500_000, "rcv", "read", length=1)     # no ACK before it
    return view(cols, {"source": "capture"})


def test_reads_are_replayed_when_recv_ran_not_when_they_were_logged():
    from tcpsim.validate.replay import recv_times
    v = _reads_and_acks(30, 150_000)
    reads, lag = recv_times(v)
    assert lag == 150_000
    assert reads[:30] == [((i + 1) * MS - 150_000, 1) for i in range(30)]   # at their ACKs
    assert reads[30] == (31 * MS + 500_000 - 150_000, 1)                    # row less the median
    few, lag = recv_times(_reads_and_acks(5, 150_000))                      # too few to tell
    assert lag == 0 and few == _reads_and_acks(5, 150_000).reads
