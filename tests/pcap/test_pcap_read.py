"""The capture reader and importer on small captures written with dpkt (tests/pcap_frames.py):
every link type, IPv4 and IPv6, VLAN, pcapng, a payload cut by the snaplen -- and each bad
capture's one-line error."""

from __future__ import annotations

import dpkt
import pytest

from pcap_frames import ISN_S, RCV, SND, capture, frame, tcp, write_pcap
from tcpsim.importers.pcap import load
from tcpsim.pcap import PcapError
from tcpsim.pcap.flows import TooManyFlows
from tcpsim.pcap.read import read_capture

LINKS = {"ethernet": dpkt.pcap.DLT_EN10MB, "sll": dpkt.pcap.DLT_LINUX_SLL,
         "sll2": dpkt.pcap.DLT_LINUX_SLL2, "raw": dpkt.pcap.DLT_RAW}


def _acks(imp):
    return [(r["ack_seq"], r["win_raw"], r["win_scaled"], r["detail"]) for r in imp.rows
            if r["sock"] == "rcv" and r["event"] == "tx" and "S" not in r["flags"]]


EXPECTED_ACKS = [(1, 40, 5120, ""), (1025, 32, 4096, ""), (2049, 24, 3072, ""),
                 (3073, 16, 2048, ""), (4097, 7, 896, "retreat 128"),
                 (5121, 0, 0, "zero window"), (5121, 40, 5120, "window update")]


@pytest.mark.parametrize("link", sorted(LINKS))
@pytest.mark.parametrize("v6", [False, True], ids=["v4", "v6"])
def test_every_link_type_gives_the_same_wire_trace(tmp_path, link, v6):
    path = capture(tmp_path / "c.pcap", LINKS[link], v6=v6)
    imp = load(path)
    assert _acks(imp) == EXPECTED_ACKS
    s = imp.meta["summary"]
    assert s["options"]["receiver"] == {"mss": 1460, "wscale": 7, "sack_ok": True,
                                        "timestamps": True, "syn_window": 64240}
    assert s["options"]["sender"]["wscale"] == 9
    assert (s["zero_windows"], s["window_updates"], s["right_edge_retreats"]) == (1, 1, 1)
    assert (s["retransmissions"], s["probes"], s["bytes"]) == (1, 1, 5120)
    snd = [(r["seq"], r["len"], r["detail"]) for r in imp.rows
           if r["sock"] == "snd" and r["event"] == "tx" and "S" not in r["flags"]]
    assert snd[-3:] == [(4097, 1024, "window full"), (4097, 1024, "retransmission, window full"),
                        (5120, 0, "probe")]
    assert s["receiver_role"] == "client" and s["capture_at"] == "receiver"
    assert s["handshake_rtt_ns"] == 10_000_000


def test_vlan_tags_and_pcapng(tmp_path):
    plain = load(capture(tmp_path / "a.pcap"))
    for kw in ({"vlan": True}, {"ng": True}, {"vlan": True, "ng": True, "v6": True}):
        assert _acks(load(capture(tmp_path / "b.pcapng", **kw))) == _acks(plain), kw


def test_payload_cut_by_the_snaplen_keeps_its_length(tmp_path):
    imp = load(capture(tmp_path / "c.pcap", snaplen=96))
    data = [r["len"] for r in imp.rows if r["sock"] == "snd" and r["event"] == "tx" and r["len"]]
    assert data == [1024] * 6


def test_workload_from_the_capture(tmp_path):
    imp = load(capture(tmp_path / "c.pcap"))
    sc = imp.scenario
    assert sc["link"] == {"delay_ab": "5000000ns", "delay_ba": "5000000ns", "mtu": 1500}
    assert sc["receiver"] == {"role": "client"}
    writes = [(r["t_ns"], r["len"]) for r in imp.rows if r["event"] == "write"]
    assert [n for _, n in writes] == [1024] * 5
    # the first data segment reached the receiver 20 ms after the SYN, left 5 ms earlier
    assert writes[0][0] == 15_000_000
    from tcpsim.scenario import scenario_from_dict
    assert scenario_from_dict(sc).link.delay_ab == 5_000_000


@pytest.mark.parametrize("spec, want", [("periodic:1B/1ms", {"kind": "periodic", "bytes": 1,
                                                               "every": "1000000ns"}),
                                        ("blocking", {"kind": "fast"}), ("never", {"kind": "never"})])
def test_reader_given(tmp_path, spec, want):
    imp = load(capture(tmp_path / "c.pcap"), reader=spec)
    assert imp.scenario["reader"] == want
    assert f"--reader {spec}" in imp.meta["summary"]["reader"]


def test_reader_inferred_says_how(tmp_path):
    imp = load(capture(tmp_path / "c.pcap"))
    how = imp.meta["summary"]["reader"]
    # the window fell to zero and then reopened 5120 B further right: a slow periodic reader
    assert imp.scenario["reader"]["kind"] == "periodic"
    assert how.startswith("reader inferred periodic") and "right edge" in how


def test_mid_connection_needs_wscale(tmp_path):
    path = capture(tmp_path / "c.pcap", handshake=False)
    with pytest.raises(PcapError, match="no handshake.*--wscale"):
        load(path)
    imp = load(path, wscale="7,9")
    assert [a[2] for a in _acks(imp)] == [w << 7 for w in (32, 24, 16, 7, 0, 40)]


def test_several_connections_are_listed(tmp_path):
    second = [(2.0, frame(tcp(40001, SND[1], ISN_S, 0, dpkt.tcp.TH_SYN, 100), True, 1))]
    path = capture(tmp_path / "c.pcap", extra=second)
    with pytest.raises(TooManyFlows) as exc:
        load(path)
    assert len(exc.value.conns) == 2
    assert "--flow 10.1.0.2:40000" in exc.value.conns[0].line(1)
    assert _acks(load(path, flow="40000")) == EXPECTED_ACKS
    assert _acks(load(path, flow=f"{RCV[0]}:40000")) == EXPECTED_ACKS
    with pytest.raises(PcapError, match="no connection has the endpoint"):
        load(path, flow="41234")
    with pytest.raises(PcapError, match="matches 2 connections"):
        load(path, flow="5001")


def test_bad_captures_name_the_fix(tmp_path):
    good = capture(tmp_path / "good.pcap")
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(good.read_bytes()[:-30])
    with pytest.raises(PcapError, match=r"ends in the middle of packet 16.*editcap -r .* 1-15"):
        read_capture(cut)
    ng = capture(tmp_path / "good.pcapng", ng=True)
    cut.write_bytes(ng.read_bytes()[:-30])
    with pytest.raises(PcapError, match=r"ends in the middle of packet 16"):
        read_capture(cut)
    with pytest.raises(PcapError, match="snaplen of at least 128"):
        read_capture(capture(tmp_path / "hdr.pcap", snaplen=40))
    udp = dpkt.ip.IP(src=b"\x01\x02\x03\x04", dst=b"\x01\x02\x03\x05", p=17,
                     data=dpkt.udp.UDP(sport=53, dport=53))
    with pytest.raises(PcapError, match=r"no TCP segments in 1 frames \(UDP x1\).*tcpdump"):
        read_capture(write_pcap(tmp_path / "udp.pcap", [(1.0, bytes(udp))], dpkt.pcap.DLT_RAW))
    with pytest.raises(PcapError, match="link type 147 .*editcap"):
        read_capture(write_pcap(tmp_path / "usr.pcap", [(1.0, b"\x00" * 60)], 147))
    (tmp_path / "text.pcap").write_text("not a capture\n" * 5)
    with pytest.raises(PcapError, match="not a pcap or pcapng file"):
        read_capture(tmp_path / "text.pcap")
    with pytest.raises(PcapError, match="--reader"):
        load(good, reader="sometimes")
    with pytest.raises(PcapError, match="--wscale"):
        load(good, wscale="15")


def test_a_capture_next_to_the_sender_is_moved_to_the_receivers_side(tmp_path):
    from pcap_frames import connection, frame, write_pcap
    here = load(capture(tmp_path / "rcv.pcap"))
    # the same connection seen next to the sender: 5 ms later for what the receiver sent,
    # 5 ms earlier for what it received
    frames = sorted(((t + (0.005 if mine else -0.005), frame(seg, mine, 1))
                     for t, seg, mine in connection()), key=lambda f: f[0])
    there = load(write_pcap(tmp_path / "snd.pcap", frames))
    assert there.meta["summary"]["capture_at"] == "sender"
    assert there.meta["summary"]["handshake_rtt_ns"] == 10_000_000

    def timed(imp):
        return [(r["t_ns"], r["sock"], r["seq"], r["ack_seq"], r["win_scaled"]) for r in imp.rows]
    assert timed(there) == timed(here)


def test_an_option_cut_short_ends_the_options(tmp_path):
    """A TCP option kind as the last byte, with no length byte (a mangled capture, found by the
    fuzz suite): the options before it are kept and the frame is read, as the kernel's
    tcp_parse_options() stops there -- no TypeError from dpkt's None for the broken option."""
    opts = b"\x02\x04\x05\xb4\x01\x01\x01\x08"          # MSS 1460, NOP x3, timestamp kind alone
    seg = tcp(SND[1], RCV[1], ISN_S, 0, dpkt.tcp.TH_SYN, 64240, opts=opts)
    path = write_pcap(tmp_path / "cut.pcap", [(1.0, frame(seg, False, dpkt.pcap.DLT_EN10MB))])
    (got,) = read_capture(path).segments
    assert got.mss == 1460


def test_a_segment_that_overtook_another_is_first_seen_not_retransmitted(tmp_path):
    """veth's per-CPU backlogs reorder: the segment that arrives after its successor fills a
    hole; its bytes are new (the flake of test_pcap_root counted them as retransmitted)."""
    from pcap_frames import connection
    segs = connection()
    data = [i for i, (_, seg, mine) in enumerate(segs) if not mine and len(seg.data)][:3]
    (t1, s1, m1), (t2, s2, m2) = segs[data[1]], segs[data[2]]
    segs[data[1]], segs[data[2]] = (t1, s2, m2), (t2, s1, m1)      # the 3rd before the 2nd
    frames = [(t, frame(seg, mine, dpkt.pcap.DLT_EN10MB)) for t, seg, mine in segs]
    imp = load(write_pcap(tmp_path / "r.pcap", sorted(frames, key=lambda f: f[0])))
    s = imp.meta["summary"]
    assert (s["retransmissions"], s["bytes"]) == (1, 5120)      # only the real retransmission
    late = [r["detail"] for r in imp.rows if r["sock"] == "snd" and r["event"] == "tx"
            and r["seq"] == 1025]
    assert late == ["out of order"]
