from tcpsim.capture import trace_build as tb
from tcpsim.capture.probe_csv import PROBE_FIELDS
from tcpsim.trace.schema import COLUMN_NAMES


def probe(**kw):
    rec = {f: 0 for f in PROBE_FIELDS}
    rec.update(kw)
    return rec


def test_seqmap_unwraps():
    m = tb.SeqMap(2**32 - 10)
    assert m(2**32 - 9) == 1
    assert m(5) == 15
    assert m(2**31) == 2**31 + 10
    assert m(2**32 - 20) == 2**32 - 10
    assert m(100) == 2**32 + 110


def test_rx_detail():
    a = probe(seq=10, rcv_nxt=10, data_len=100, rcvq_len=1, sk_rmem_alloc=1000)
    assert tb.rx_detail(a, dict(a, rcvq_len=2)) == "queued"
    assert tb.rx_detail(a, dict(a, sk_rmem_alloc=1100)) == "coalesced"
    assert tb.rx_detail(dict(a, seq=20), None) == "ofo"
    assert tb.rx_detail(dict(a, seq=5), None) == "old"
    assert tb.rx_detail(dict(a, data_len=0), None) == "ack"


def test_probe_rows_columns_and_relative_values():
    isn = 1000
    recs = [probe(t_ns=5_000, seq=1001, end_seq=2449, data_len=1448, truesize=2280, rcv_nxt=1001,
                  copied_seq=1001, rcv_wup=1001, rcv_rtt_us8=800, rcvq_len=0),
            probe(t_ns=6_000, seq=2449, end_seq=3897, data_len=1448, truesize=2280, rcv_nxt=2449,
                  copied_seq=1001, rcv_wup=1001, rcvq_len=1, sk_rmem_alloc=2280)]
    rows = tb.probe_rows(recs, isn, None, t0_ns=1_000)
    assert set(rows[0]) == set(COLUMN_NAMES)
    r0, r1 = rows
    assert (r0["t_ns"], r0["seq"], r0["end_seq"], r0["rcv_rtt_us"]) == (4_000, 1, 1449, 100)
    assert r0["detail"] == "queued" and r1["recv_q"] == 1448
    assert r1["snd_una"] == -1


def test_app_and_sample_rows():
    rows = tb.app_rows([(10, "write", 4), (20, "write_blocked", 0), (30, "connected", 0)], "snd", 0)
    assert [(r["event"], r["detail"], r["len"]) for r in rows] == [("write", "", 4), ("write", "blocked", 0)]
    s = {k: 7 for k in ("sk_rmem_alloc", "sk_rcvbuf", "tcpi_rcv_wnd", "tcpi_rcv_ssthresh",
                        "window_clamp", "tcpi_rcv_mss", "tcpi_rcv_space", "tcpi_rcv_rtt", "inq",
                        "tcpi_snd_wnd", "tcpi_snd_cwnd", "tcpi_bytes_received", "tcpi_bytes_acked")}
    s["t_ns"] = 100
    (row,) = tb.sample_rows([s], "rcv", 0)
    assert row["rcv_nxt"] == 8 and row["snd_cwnd"] == -1 and row["recv_q"] == 7
