"""Honest input handling on small captures built with dpkt (tests/pcap_frames.py): a SYN
whose options the snaplen cut, GSO/TSO super-segments, gzipped files, options negotiated off,
where the capture was taken -- each refused in one line naming the fix, or read right."""

from __future__ import annotations

import gzip
import struct

import dpkt
import pytest

from pcap_frames import ISN_R, ISN_S, RCV, SND, TS, capture, connection, frame, syn_opts, tcp, write_pcap
from tcpsim.importers.pcap import load
from tcpsim.pcap import PcapError
from tcpsim.pcap.read import read_capture

S, A, P = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_PUSH


def test_a_syn_whose_options_the_snaplen_cut_is_refused_naming_tcpdump_s0(tmp_path):
    # Ethernet 14 + IPv4 20 + TCP 20 = 54: the SYN's window scale is gone (the capture)
    path = capture(tmp_path / "c.pcap", snaplen=54)
    with pytest.raises(PcapError, match=r"SYN's TCP options are cut by the snaplen.*tcpdump -s 0"):
        read_capture(path)


def test_options_cut_after_the_handshake_are_counted_not_refused(tmp_path):
    frames = [(t, frame(seg, mine, 1)[:54] if t > 1.015 else frame(seg, mine, 1))
              for t, seg, mine in connection()]
    imp = load(write_pcap(tmp_path / "c.pcap", frames))
    assert any("had TCP options cut by the snaplen" in n for n in imp.notes)
    # the windows are whole: the scale came from the intact handshake
    wins = [r["win_scaled"] for r in imp.rows if r["sock"] == "rcv" and r["event"] == "tx"
            and "S" not in r["flags"]]
    assert wins[1] == 32 * 128


def _gso_capture(path, at_sender: bool = False):
    """Handshake, then one 4344-byte segment (3 x MSS 1448) and its ACK."""
    sp, rp = SND[1], RCV[1]
    d = 0.005 if at_sender else 0.0
    segs = [(1.0, tcp(rp, sp, ISN_R, 0, S, 64240, opts=syn_opts(1460, 7)), True),
            (1.010, tcp(sp, rp, ISN_S, ISN_R + 1, S | A, 65160, opts=syn_opts(1460, 7)), False),
            (1.010, tcp(rp, sp, ISN_R + 1, ISN_S + 1, A, 502, opts=TS), True),
            (1.020, tcp(sp, rp, ISN_S + 1, ISN_R + 1, A | P, 502, 4344, TS), False),
            (1.0201, tcp(rp, sp, ISN_R + 1, ISN_S + 4345, A, 480, opts=TS), True)]
    if at_sender:   # the sender's view: what the receiver sent comes later, its own earlier
        segs = [(t + (d if mine else -d), s, mine) for t, s, mine in segs]
    return write_pcap(path, sorted(((t, frame(s, m, 1)) for t, s, m in segs), key=lambda f: f[0]))


def test_super_segments_at_the_receiver_are_refused_saying_how_to_capture(tmp_path):
    path = _gso_capture(tmp_path / "g.pcap")
    with pytest.raises(PcapError, match=r"1 of 1 data segments .* larger than the MSS \(1448 B\), "
                                        r"up to 4344 B.*ethtool -K .* tso off.*--split-gso"):
        load(path)
    imp = load(path, split_gso=True)
    data = [(r["seq"], r["len"]) for r in imp.rows if r["sock"] == "snd" and r["event"] == "tx"
            and r["len"]]
    assert data == [(1, 1448), (1449, 1448), (2897, 1448)]
    assert imp.meta["summary"]["bytes"] == 4344
    assert any("split into 1448 B segments (--split-gso)" in n for n in imp.notes)


def test_super_segments_captured_next_to_the_sender_are_split_without_asking(tmp_path):
    imp = load(_gso_capture(tmp_path / "g.pcap", at_sender=True))
    assert imp.meta["summary"]["capture_at"] == "sender"
    assert [r["len"] for r in imp.rows if r["sock"] == "snd" and r["event"] == "tx"
            and r["len"]] == [1448] * 3


def test_a_gzipped_capture_reads_as_the_plain_one(tmp_path):
    plain = capture(tmp_path / "c.pcap")
    gz = tmp_path / "c.pcap.gz"
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_capture(gz).segments == read_capture(plain).segments


def test_options_negotiated_off_are_read_as_off(tmp_path):
    """No timestamps, no SACK in either SYN: the workload turns them off (the reader once put
    the SACK flag where the timestamp goes, and every capture read as 'timestamps on')."""
    mss_ws = struct.pack(">BBH", 2, 4, 1460) + b"\x01" + struct.pack(">BBB", 3, 3, 7)
    sp, rp = SND[1], RCV[1]
    segs = [(1.0, tcp(rp, sp, ISN_R, 0, S, 64240, opts=mss_ws), True),
            (1.01, tcp(sp, rp, ISN_S, ISN_R + 1, S | A, 65160, opts=mss_ws), False),
            (1.01, tcp(rp, sp, ISN_R + 1, ISN_S + 1, A, 502), True),
            (1.02, tcp(sp, rp, ISN_S + 1, ISN_R + 1, A | P, 502, 1460), False),
            (1.0201, tcp(rp, sp, ISN_R + 1, ISN_S + 1461, A, 490), True)]
    imp = load(write_pcap(tmp_path / "c.pcap", [(t, frame(s, m, 1)) for t, s, m in segs]))
    o = imp.meta["summary"]["options"]["receiver"]
    assert (o["timestamps"], o["sack_ok"]) == (False, False)
    assert imp.scenario["sysctl"]["net.ipv4.tcp_timestamps"] == 0
    assert imp.scenario["sysctl"]["net.ipv4.tcp_sack"] == 0


def test_the_capture_point_from_the_link_layers_direction(tmp_path):
    """`tcpdump -i any` (Linux cooked) marks what the host sent: the receiver's segments
    outgoing place the capture at the receiver, whatever the handshake's gaps say."""
    sll2 = dpkt.pcap.DLT_LINUX_SLL2
    frames = [(t, frame(seg, mine, sll2)) for t, seg, mine in connection()]
    imp = load(write_pcap(tmp_path / "c.pcap", frames, sll2))
    s = imp.meta["summary"]
    assert s["capture_at"] == "receiver" and "link layer" in s["capture_at_basis"]


def test_a_round_trip_too_short_to_place_the_capture_says_so(tmp_path):
    segs = [(1.0 + (t - 1.0) / 1000, seg, mine) for t, seg, mine in connection()]   # 10 us RTT
    imp = load(write_pcap(tmp_path / "c.pcap", [(t, frame(s, m, 1)) for t, s, m in segs]))
    s = imp.meta["summary"]
    assert s["capture_at"] == "receiver" and s["capture_at_basis"].startswith("place undetermined")


@pytest.mark.parametrize("link", [dpkt.pcap.DLT_EN10MB, dpkt.pcap.DLT_RAW])
def test_the_fast_decoder_reads_every_frame_as_dpkt_does(tmp_path, link):
    from collections import Counter
    from pcap_frames import syn_opts
    from tcpsim.pcap.read import FAST_OFFSET, decode, fast_decode
    sack = struct.pack(">BBIIII", 5, 18, 10, 20, 30, 40)
    extra = [(3.0, frame(tcp(RCV[1], SND[1], ISN_R + 1, ISN_S + 9, A, 300, opts=b"\x01\x01" + sack),
                         True, link)),
             (3.1, frame(tcp(SND[1], RCV[1], ISN_S, 0, S, 1000, opts=syn_opts(1400, 14)), False, link))]
    path = capture(tmp_path / "c.pcap", linktype=link, extra=extra)
    frames = list(dpkt.pcap.Reader(path.open("rb")))
    assert len(frames) == 18
    for ts, buf in frames:
        t = int(ts * 1e9)
        fast = fast_decode(t, buf, FAST_OFFSET[link])
        assert fast is not None
        assert fast == decode(t, buf, link, "x", 1, 65535, Counter())


def test_a_reports_headline_for_a_capture_says_unknown_not_zero(tmp_path):
    """The issue's "skmem_r peaked at 0 B ... goodput 0 bit/s" for a capture that moved 3 MB."""
    from tcpsim.importers import write
    from tcpsim.report.story import headline
    from tcpsim.report.summary import summarize
    from tcpsim.report.trace import load_trace
    imp = load(capture(tmp_path / "c.pcap"))
    path = write(imp.rows, imp.meta, tmp_path / "c.parquet")
    tr, meta = load_trace(path)
    s = summarize(tr, meta)
    assert s["peak_sk_rmem_alloc"] is None and s["goodput_bps"] is None and s["bytes_read"] is None
    line = " · ".join(headline(s))
    assert "skmem_r — (not on the wire)" in line and "goodput —" in line and " 0 B" not in line
