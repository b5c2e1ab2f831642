import struct

from tcpsim.capture import wire

RCV, SND = ("10.77.0.2", 46000), ("10.77.0.1", 5001)


def tcp_frame(src, dst, seq, ack, flags, win, payload=0, wscale=None, mss=None):
    opts = b""
    if mss is not None:
        opts += struct.pack("!BBH", 2, 4, mss)
    if wscale is not None:
        opts += struct.pack("!BBBB", 1, 3, 3, wscale)
    opts += b"\0" * ((4 - len(opts) % 4) % 4)
    doff = (20 + len(opts)) // 4
    tcp = struct.pack("!HHIIBBHHH", src[1], dst[1], seq, ack, doff << 4, flags, win, 0, 0) + opts
    ip_ = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + payload, 0, 0, 64, 6, 0,
                      bytes(map(int, src[0].split("."))), bytes(map(int, dst[0].split("."))))
    eth = b"\0" * 12 + b"\x08\x00"
    return eth + ip_ + tcp + b"a" * payload


def pcap_bytes(frames, nano=True):
    out = struct.pack("<IHHiIII", 0xA1B23C4D if nano else 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for t_ns, fr in frames:
        frac = t_ns % 10**9 if nano else (t_ns % 10**9) // 1000
        out += struct.pack("<IIII", t_ns // 10**9, frac, len(fr), len(fr)) + fr
    return out


def sample_flow(tmp_path):
    isn_r, isn_s = 1000, 2**32 - 100          # the sender's sequence space wraps
    frames = [
        (1_000, tcp_frame(RCV, SND, isn_r, 0, 0x02, 64240, wscale=7, mss=1460)),
        (2_000, tcp_frame(SND, RCV, isn_s, isn_r + 1, 0x12, 65160, wscale=10, mss=1460)),
        (3_000, tcp_frame(RCV, SND, isn_r + 1, isn_s + 1, 0x10, 502)),
        (4_000, tcp_frame(SND, RCV, isn_s + 1, isn_r + 1, 0x18, 509, payload=1448)),
        (5_000, tcp_frame(RCV, SND, isn_r + 1, (isn_s + 1449) % 2**32, 0x10, 100)),
        (6_000, tcp_frame(RCV, SND, isn_r + 1, (isn_s + 1449) % 2**32, 0x10, 0)),
        (7_000, tcp_frame(RCV, SND, isn_r + 1, (isn_s + 1449) % 2**32, 0x10, 50)),
    ]
    p = tmp_path / "w.pcap"
    p.write_bytes(pcap_bytes(frames))
    return wire.build_flow(wire.read_pcap(p), RCV[1])


def test_pcap_parse_and_options(tmp_path):
    flow = sample_flow(tmp_path)
    assert len(flow.packets) == 7
    syn = flow.packets[0]
    assert (syn.wscale, syn.mss, syn.win) == (7, 1460, 64240)
    assert flow.wscale == {True: 7, False: 10}
    assert flow.packets[3].payload == 1448


def test_rows_scale_and_relative_sequence(tmp_path):
    rows = wire.rows(sample_flow(tmp_path))
    assert [r["sock"] for r in rows] == ["rcv", "snd", "rcv", "snd", "rcv", "rcv", "rcv"]
    assert rows[0]["win_scaled"] == 64240            # SYN windows are never scaled
    assert rows[2]["win_scaled"] == 502 << 7
    data = rows[3]
    assert (data["seq"], data["end_seq"], data["len"], data["flags"]) == (1, 1449, 1448, "PA")
    assert data["win_scaled"] == 509 << 10
    assert rows[4]["ack_seq"] == 1449                 # across the 2**32 wrap
    assert rows[1]["end_seq"] == 1                    # SYN counts one


def test_ack_windows_summary(tmp_path):
    acks = wire.ack_windows(sample_flow(tmp_path))
    s = wire.window_summary(acks)
    assert s["zero_windows"] == 1
    assert s["acks"] == 4
    # right edges: 1+64256, 1449+12800 (retreat), 1449+0 (retreat), 1449+6400 (retreat)
    assert s["right_edge_retreats"] == 3


def test_microsecond_pcap_and_non_tcp(tmp_path):
    p = tmp_path / "u.pcap"
    arp = b"\0" * 12 + b"\x08\x06" + b"\0" * 28
    p.write_bytes(pcap_bytes([(5_000_000, arp), (6_000_000, tcp_frame(RCV, SND, 1, 2, 0x10, 3))], nano=False))
    pkts = list(wire.read_pcap(p))
    assert len(pkts) == 1 and pkts[0].t_ns == 6_000_000


def test_ack_order_counts_acks_that_reach_the_sender_out_of_order():
    """The receiver's ACKs leave from two CPUs when its reader has its own: ack_order holds
    the sender's view against the receiver's, by (ack, tsval, window, flags)."""
    sent = [wire.Packet(i, *RCV, *SND, 1, 100 + i, 0x10, 500, 0) for i in range(5)]
    sent.append(wire.Packet(5, *SND, *RCV, 100, 1, 0x10, 500, 1448))   # data: not counted
    arrived = [sent[0], sent[2], sent[1], sent[3], sent[4]]              # 2 overtook 1
    assert wire.ack_order(sent, arrived, RCV[1]) == {
        "sent": 5, "seen_at_sender": 5, "reordered": 1, "ack_went_back": 1, "unmatched": 0}
    assert wire.ack_order(sent, sent, RCV[1])["reordered"] == 0
    # a window update with the same ack overtaken: reordered, but the ack did not go back
    upd = [wire.Packet(0, *RCV, *SND, 1, 100, 0x10, w, 0) for w in (500, 600)]
    assert wire.ack_order(upd, upd[::-1], RCV[1])["ack_went_back"] == 0
    assert wire.ack_order(upd, upd[::-1], RCV[1])["reordered"] == 1
    # an ACK the receiver-side capture lost is unmatched, not reordered
    assert wire.ack_order(sent[:1], sent[:2], RCV[1])["unmatched"] == 1
