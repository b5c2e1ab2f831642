"""Importers: Cloudflare's bpftrace CSV, `ss -tmi` snapshots, tcp_rcvbuf_grow trace lines.

The ss and tcp_rcvbuf_grow samples under tests/fixtures/importers/ are real output of this
machine's 6.18 kernel (recorded with test_importers_root.record_samples); the Cloudflare
sample follows the published tcp.bt format (its kprobes do not exist here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tcpsim.importers import ImportFormatError, import_file, main, parse, read_lines
from tcpsim.validate.trace import load, view
from tcpsim.trace.schema import COLUMN_NAMES

SAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "importers"
CF = SAMPLES / "cloudflare-tcp-bt.txt"
SS = SAMPLES / "ss-tmi.txt"
GROW = SAMPLES / "rcvbuf-grow.txt"


def lines(path: Path) -> list[str]:
    return read_lines(path)


def error_of(fmt: str, text: list[str], **opts) -> str:
    with pytest.raises(ImportFormatError) as exc:
        parse(fmt, text, "in.txt", **opts)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


# -- Cloudflare tcp.bt CSV --------------------------------------------------------------------

def test_cloudflare_rows_follow_the_published_columns():
    rows, meta = parse("cloudflare-csv", lines(CF), "cf")
    rx = [r for r in rows if r["event"] == "rx"]
    assert len(rx) == 10 and [r["t_ns"] for r in rx] == list(range(1, 11))
    first = rx[1]
    assert (first["sk_rmem_alloc"], first["sk_rcvbuf"], first["rcv_ssthresh"], first["recv_q"],
            first["win_scaled"]) == (2304, 1048576, 64088, 1024, 64511)
    assert rx[4]["rcv_wup"] == 4097                     # acked 4096 -> rcv_wup relative 1 + 4096
    assert rx[1]["detail"] == "coalesced"               # line 3 says: coalesced since line 2
    assert rx[-1]["win_scaled"] == 0                    # u64 wrap of a negative window
    assert [r["detail"] for r in rows if r["event"] == "state"] == ["collapse"]
    assert [r["drop_reason"] for r in rows if r["event"] == "drop"] == ["tcprcvqdrop"]
    assert meta["rx_state"] == "before" and "packet index" in meta["summary"]["time_axis"]


def test_cloudflare_without_header_and_unsorted_lines():
    body = [ln for ln in lines(CF) if ln[:1].isdigit()]
    rows, _ = parse("cloudflare-csv", list(reversed(body)), "cf")
    assert [r["t_ns"] for r in rows if r["event"] == "rx"] == list(range(1, 11))


def test_cloudflare_time_column_variant():
    text = [",time_ns,tcprcvcoalesce,tcprcvcollapsed,tcprcvqdrop,rcv_ssthresh,acked,skmem_rb,"
            "recv-q,skmem_r,rcv_win",
            "1, 5000, 0, 0, 0, 64088, 0, 131072, 0, 0, 65535",
            "2, 7000, 0, 0, 0, 64088, 0, 131072, 100, 932, 65435"]
    rows, meta = parse("cloudflare-csv", text, "cf")
    assert [r["t_ns"] for r in rows] == [0, 2000]
    assert "time_ns" in meta["summary"]["time_axis"]


def test_cloudflare_truncated_line_names_the_line():
    text = lines(CF)[:6] + ["6, 1, 0, 0, 66136, 40"]
    msg = error_of("cloudflare-csv", text)
    assert "in.txt:7" in msg and "expected 10" in msg and "got 6" in msg and "delete it" in msg


def test_cloudflare_renamed_column_is_named():
    text = [lines(CF)[0].replace("skmem\\\\_r,", "rmem,")] + lines(CF)[2:]
    msg = error_of("cloudflare-csv", text)
    assert "'rmem'" in msg and "in.txt:1" in msg


def test_cloudflare_missing_column_is_named():
    head = ",tcprcvcoalesce,tcprcvcollapsed,tcprcvqdrop,rcv_ssthresh,acked,skmem_rb,recv-q,skmem_r"
    msg = error_of("cloudflare-csv", [head, "1, 0, 0, 0, 64088, 0, 131072, 0, 0"])
    assert "'rcv_win'" in msg


def test_cloudflare_corrupt_field_is_named():
    text = lines(CF)[:4] + ["3, 1, 0, 0, 64088, 0, 10485x6, 2048, 3328, 63487"]
    msg = error_of("cloudflare-csv", text)
    assert "in.txt:5" in msg and "'skmem_rb'" in msg and "10485x6" in msg


def test_cloudflare_empty_input():
    assert "no data lines" in error_of("cloudflare-csv", ["Attaching 5 probes...", ""])


# -- ss -tmi snapshots (real output) ----------------------------------------------------------

def test_ss_snapshots_give_a_time_series():
    rows, meta = parse("ss", lines(SS), "ss")
    assert len(rows) >= 5 and meta["source"] == "import:ss"
    assert rows[0]["t_ns"] == 0 and all(a["t_ns"] < b["t_ns"] for a, b in zip(rows, rows[1:]))
    for r in rows:
        assert r["sk_rcvbuf"] > 0 and r["sk_rmem_alloc"] >= 0 and r["rcv_ssthresh"] > 0
        assert r["rcvq_space"] > 0 and r["rcv_mss"] > 0 and r["recv_q"] >= 0
        assert r["rcv_nxt"] >= 1        # (rcv_wnd: this iproute2 does not print it)
    assert rows[-1]["rcv_nxt"] > rows[0]["rcv_nxt"]          # bytes_received grows


def test_ss_iso_timestamps_and_header():
    text = ["2024-05-01T10:00:00,000000000+00:00",
            "State Recv-Q Send-Q Local Address:Port Peer Address:Port Process",
            "ESTAB 10 0 10.0.0.2:46000 10.0.0.1:5001",
            "\t skmem:(r2280,rb131072,t0,tb46080,f1816,w0,o0,bl0,d0) cubic rcvmss:1448 "
            "bytes_received:10 rcv_space:14480 rcv_ssthresh:64088 rcv_rtt:1.5",
            "2024-05-01T10:00:00,250000000+00:00",
            "ESTAB 0 0 10.0.0.2:46000 10.0.0.1:5001",
            "\t skmem:(r0,rb131072,t0,tb46080,f0,w0,o0,bl0,d0) cubic rcvmss:1448"]
    rows, _ = parse("ss", text, "ss")
    assert [r["t_ns"] for r in rows] == [0, 250_000_000]
    assert rows[0]["recv_q"] == 10 and rows[0]["rcv_rtt_us"] == 1500 and rows[0]["rcv_nxt"] == 11


def test_ss_truncated_snapshot_is_reported():
    text = lines(SS)
    cut = max(i for i, ln in enumerate(text) if ln.startswith("ESTAB"))
    msg = error_of("ss", text[:cut + 1])
    assert f"in.txt:{cut + 1}" in msg and "detail line" in msg


def test_ss_without_timestamp():
    text = [ln for ln in lines(SS) if not ln[:1].isdigit()]
    assert "before the first timestamp" in error_of("ss", text)


def test_ss_garbage_line_is_named():
    text = lines(SS)[:4] + ["%%% not ss %%%"] + lines(SS)[4:]
    msg = error_of("ss", text)
    assert "in.txt:5" in msg and "%%% not ss" in msg


def test_ss_bad_skmem_value():
    text = ["1.0", "ESTAB 0 0 10.0.0.2:46000 10.0.0.1:5001",
            "\t skmem:(r12x,rb131072) rcv_ssthresh:64088"]
    msg = error_of("ss", text)
    assert "in.txt:3" in msg and "r12x" in msg


def test_ss_several_sockets_need_a_port():
    text = ["1.0", "ESTAB 0 0 10.0.0.2:46000 10.0.0.1:5001", "\t skmem:(r0,rb131072)",
            "ESTAB 0 0 10.0.0.2:46001 10.0.0.1:5001", "\t skmem:(r0,rb65536)"]
    assert "--port" in error_of("ss", text)
    rows, _ = parse("ss", text, "ss", port=46001)
    assert [r["sk_rcvbuf"] for r in rows] == [65536]
    assert "no socket with local port 1" in error_of("ss", text, port=1)


def test_ss_without_m_flag():
    text = ["1.0", "ESTAB 0 0 10.0.0.2:46000 10.0.0.1:5001", "\t cubic rcv_ssthresh:64088"]
    assert "ss with -m" in error_of("ss", text)


# -- tcp_rcvbuf_grow (real output) --------------------------------------------------------------

def test_rcvbuf_grow_events():
    rows, meta = parse("rcvbuf-grow", lines(GROW), "grow")
    assert rows and {r["detail"] for r in rows} == {"rcvbuf_grow"}
    assert rows[0]["t_ns"] == 0
    sizes = [r["sk_rcvbuf"] for r in rows]
    assert sizes == sorted(sizes) and sizes[-1] > 131072
    for r in rows:
        assert r["window_clamp"] > 0 and r["rcvq_space"] > 0 and r["scaling_ratio"] > 0


def test_rcvbuf_grow_perf_script_format():
    body = ("time=2000 rtt_us=120 copied=50000 inq=0 space=40000 ooo=0 scaling_ratio=162 "
            "rcvbuf=262144 rcv_ssthresh=160000 window_clamp=165888 rcv_wnd=160000 family=AF_INET "
            "sport=46000 dport=5001 saddr=10.0.0.2 daddr=10.0.0.1")
    text = ["# perf script", f"  python3   812 [000]  4518.261822: tcp:tcp_rcvbuf_grow: {body}",
            f"  python3   812 [000]  4518.271822: tcp:tcp_rcvbuf_grow: {body}"]
    rows, _ = parse("rcvbuf-grow", text, "g")
    assert [r["t_ns"] for r in rows] == [0, 10_000_000]
    assert (rows[0]["sk_rcvbuf"], rows[0]["len"], rows[0]["rcv_rtt_us"]) == (262144, 50000, 120)


def test_rcvbuf_grow_truncated_event():
    text = lines(GROW)
    i = next(i for i, ln in enumerate(text) if "tcp_rcvbuf_grow:" in ln)
    text = text[:i] + [text[i].split(" rcvbuf=")[0]]
    msg = error_of("rcvbuf-grow", text)
    assert f"in.txt:{i + 1}" in msg and "'rcvbuf'" in msg


def test_rcvbuf_grow_no_events_and_several_ports():
    assert "no tcp_rcvbuf_grow events" in error_of("rcvbuf-grow", ["# tracer: nop", ""])
    ev = ("  x-1 [000] ..s1. 1.000001: tcp_rcvbuf_grow: time=1 rtt_us=1 copied=1 inq=0 space=1 "
          "ooo=0 scaling_ratio=128 rcvbuf=1 rcv_ssthresh=1 window_clamp=1 rcv_wnd=1 sport={}")
    text = [ev.format(1), ev.format(2)]
    assert "--port" in error_of("rcvbuf-grow", text)
    assert len(parse("rcvbuf-grow", text, "g", port=2)[0]) == 1


# -- files and the command ----------------------------------------------------------------------

@pytest.mark.parametrize("fmt,src", [("cloudflare-csv", CF), ("ss", SS), ("rcvbuf-grow", GROW)])
def test_written_traces_have_the_schema(tmp_path, fmt, src):
    out = import_file(fmt, src, tmp_path / "t.parquet")
    cols, meta = load(out)
    assert list(cols) == list(COLUMN_NAMES)
    assert meta["source"] == f"import:{fmt}" and {"scenario", "sysctls", "counters"} <= set(meta)
    v = view(cols, meta)
    assert v.state["sk_rcvbuf"].v


def test_command_reports_one_line_on_bad_input(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text(CF.read_text().rsplit("\n", 3)[0] + "\n11, 0, 0\n")
    assert main(["cloudflare-csv", str(bad), "-o", str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.txt:" in err and "Traceback" not in err
    assert not (tmp_path / "o.parquet").exists()


def test_command_on_binary_or_missing_input(tmp_path, capsys):
    blob = tmp_path / "blob.pcap"
    blob.write_bytes(b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00\xff\xfe")
    assert main(["ss", str(blob), "-o", str(tmp_path / "o.parquet")]) == 2
    assert "not a text file" in capsys.readouterr().err
    assert main(["ss", str(tmp_path / "nope.txt"), "-o", str(tmp_path / "o.parquet")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_command_writes_the_trace(tmp_path, capsys):
    out = tmp_path / "cf.parquet"
    assert main(["cloudflare-csv", str(CF), "-o", str(out)]) == 0
    assert out.is_file() and str(out) in capsys.readouterr().out
