"""What the report reads from a trace, on hand-written traces where the answer is known."""

from __future__ import annotations

import numpy as np

from tcpsim.report import extract
from tcpsim.report.summary import summarize
from tcpsim.report.trace import Trace

MS = 1_000_000


def _handshake() -> list[dict]:
    return [dict(t_ns=0, sock="rcv", event="tx", flags="S", win_raw=65535, win_scaled=65535,
                 window_clamp=500_000_000, rcv_ssthresh=64000, copied_seq=0),
            dict(t_ns=1 * MS, sock="rcv", event="tx", flags="A", win_raw=250, win_scaled=32000,
                 window_clamp=31000, rcv_ssthresh=31000, copied_seq=1)]


def test_zero_windows_are_tx_rows_of_the_receiver_without_syn(make_trace) -> None:
    rows = _handshake() + [
        dict(t_ns=5 * MS, sock="rcv", event="tx", flags="A", win_raw=0, win_scaled=0),
        dict(t_ns=6 * MS, sock="snd", event="tx", flags="A", win_raw=0, win_scaled=0),
        dict(t_ns=7 * MS, sock="rcv", event="tx", flags="SA", win_raw=0, win_scaled=0),
        dict(t_ns=8 * MS, sock="rcv", event="tx", flags="A", win_raw=0, win_scaled=0),
    ]
    zw = extract.zero_windows(Trace.from_columns(make_trace(rows)))
    assert list(zw.t) == [0.005, 0.008]


def test_handshake_placeholders_stay_out_of_the_window_series(make_trace) -> None:
    tr = Trace.from_columns(make_trace(_handshake()))
    assert extract.rcv_series(tr, "window_clamp").y.max() == 31000
    assert list(extract.advertised_window(tr).y) == [32000]


def test_retransmissions_are_data_below_the_highest_sequence_sent(make_trace) -> None:
    segs = [(1, 1001), (1001, 2001), (2001, 3001), (1001, 2001), (3001, 4001), (3001, 3001)]
    rows = [dict(t_ns=i * MS, sock="snd", event="tx", seq=s, end_seq=e, len=e - s,
                 snd_una=1, snd_nxt=4001) for i, (s, e) in enumerate(segs)]
    rt = extract.retransmissions(Trace.from_columns(make_trace(rows)))
    assert list(rt.t) == [0.003]       # the zero-length segment (a probe) is not data


def test_delivered_follows_copied_seq_and_closes_at_the_run_end(make_trace) -> None:
    rows = _handshake() + [
        dict(t_ns=10 * MS, sock="rcv", event="rx", seq=1, end_seq=1001, len=1000, copied_seq=1),
        dict(t_ns=20 * MS, sock="rcv", event="read", len=400, copied_seq=401),
        dict(t_ns=30 * MS, sock="rcv", event="read", len=600, copied_seq=1001),
    ]
    d = extract.delivered(Trace.from_columns(make_trace(rows)), end_s=1.0, end_bytes=1500)
    assert d.y[-1] == 1500 and d.t[-1] == 1.0
    assert 400 in d.y and 1000 in d.y
    gp = extract.goodput(d, 0.01, 0.04)
    assert np.isclose(gp.y.sum() * 0.01 / 8, 1000 + 500 * 0.01 / 0.97, rtol=1e-6)


def _stall_trace(make_trace, writer_idle: bool) -> dict:
    """Data at 0-10 ms, nothing until 900 ms, data again at 900 ms.

    With writer_idle the sender's backlog drains (everything acked) during the gap."""
    rows = [dict(t_ns=0, sock="snd", event="write", len=3000, snd_una=1)]
    for k in range(10):
        rows.append(dict(t_ns=k * MS, sock="rcv", event="rx", seq=1 + 100 * k,
                         end_seq=101 + 100 * k, len=100, copied_seq=1))
    rows.append(dict(t_ns=30 * MS, sock="snd", event="rx", detail="ack",
                     snd_una=3001 if writer_idle else 1001))
    rows.append(dict(t_ns=900 * MS, sock="rcv", event="rx", seq=1001, end_seq=1101, len=100))
    return make_trace(rows)


def test_a_gap_with_data_waiting_is_a_stall(make_trace) -> None:
    st = extract.stalls(Trace.from_columns(_stall_trace(make_trace, writer_idle=False)))
    assert len(st) == 1
    assert np.isclose(st[0].start_s, 0.009) and np.isclose(st[0].end_s, 0.9)


def test_a_gap_while_the_writer_idles_is_not_a_stall(make_trace) -> None:
    assert extract.stalls(Trace.from_columns(_stall_trace(make_trace, writer_idle=True))) == []


def test_drop_reasons_count_data_segments_only(make_trace) -> None:
    rows = _handshake() + [
        dict(t_ns=5 * MS, sock="rcv", event="drop", len=1448, drop_reason="TCP_ZEROWINDOW"),
        dict(t_ns=6 * MS, sock="rcv", event="drop", len=1448, drop_reason="TCP_ZEROWINDOW"),
        dict(t_ns=7 * MS, sock="rcv", event="drop", len=0, drop_reason="TCP_OLD_SEQUENCE"),
        dict(t_ns=8 * MS, sock="rcv", event="drop", len=-1, drop_reason="TCP_OFO_QUEUE_PRUNE"),
    ]
    tr = Trace.from_columns(make_trace(rows))
    assert extract.drop_reasons(tr) == {"TCP_ZEROWINDOW": 2, "TCP_OFO_QUEUE_PRUNE": 1}
    assert len(extract.drops(tr)) == 4
    s = summarize(tr)
    assert s["data_segments_dropped"] == 3 and s["segments_dropped"] == 4 and s["drop_reasons"].startswith("TCP_ZEROWINDOW 2")


def test_summary_without_metadata_comes_from_the_trace(make_trace) -> None:
    rows = _handshake() + [
        dict(t_ns=10 * MS, sock="rcv", event="rx", seq=1, end_seq=1001, len=1000,
             sk_rmem_alloc=2304, sk_rcvbuf=131072, recv_q=1000, copied_seq=1),
        dict(t_ns=20 * MS, sock="rcv", event="tx", flags="A", win_raw=0, win_scaled=0,
             sk_rmem_alloc=2304, sk_rcvbuf=131072, recv_q=1000, copied_seq=1),
    ]
    s = summarize(Trace.from_columns(make_trace(rows)))
    assert s["peak_sk_rmem_alloc"] == 2304 and s["peak_sk_rcvbuf"] == 131072
    assert s["zero_windows_sent"] == 1 and s["zero_window_segments"] == 1
    assert s["bytes_read"] == 0
