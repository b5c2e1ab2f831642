"""Matching actual segments against outbound lines, with packetdrill's messages."""

from __future__ import annotations

import pytest

from tcpsim.packetdrill import (
    InboundError, MatchConfig, TimestampMap, failure_line, inbound_segment, match_outbound,
    match_packet, parse, resolve,
)
from tcpsim.packetdrill.ast import Mss, Nop, Sack, SackOK, Timestamp, WScale
from tcpsim.packetdrill.layout import segment_options
from tcpsim.core.segment import ACK, FIN, PSH, RST, SYN, Segment


def line(text: str):
    """The event of one script line (after a time-0 opener)."""
    return parse(f"0 %{{ pass }}%\n{text}\n", "m.pkt").events[1]


def mismatch(text: str, seg: Segment, **config) -> str | None:
    found = match_packet(line(text), seg, MatchConfig(**config))
    return None if found is None else str(found)


# --------------------------------------------------------------------------- header fields


def test_exact_match():
    seg = Segment(1, 0, ACK, 3001, 212, sacks=((4001, 5001),))
    assert mismatch("+0 > . 1:1(0) ack 3001 win 212 <nop,nop,sack 4001:5001>", seg) is None


def test_window():
    seg = Segment(1, 0, ACK, 9001, 1550)
    assert mismatch("+0 > . 1:1(0) ack 9001 win 756", seg) == \
        "live packet field tcp_window: expected: 756 (0x2f4) vs actual: 1550 (0x60e)"
    assert mismatch("+0 > . 1:1(0) ack 9001", seg) is None      # omitted: not checked
    assert mismatch("+0 > . 1:1(0) ack 9001 win *", seg) is None


def test_ack_seq():
    seg = Segment(1, 0, ACK, 11024, 13)
    assert mismatch("+0 > . 1:1(0) ack 25361 win 13", seg) == \
        "live packet field tcp_ack_seq: expected: 25361 (0x6311) vs actual: 11024 (0x2b10)"
    assert mismatch("+0 > . 1:1(0) ack * win 13", seg) is None
    assert mismatch("+0 > . 1:1(0) win 13", seg) == \
        "live packet field tcp_ack_seq: expected: 0 (0x0) vs actual: 11024 (0x2b10)"


def test_ack_ignored_without_ack_flag():
    assert mismatch("+0 > R 5:5(0)", Segment(5, 0, RST, 777, 0)) is None


def test_seq():
    assert mismatch("+0 > P. 1:101(100) ack 1", Segment(2, 100, PSH | ACK, 1, 9)) == \
        "live packet field tcp_seq: expected: 1 (0x1) vs actual: 2 (0x2)"


@pytest.mark.parametrize("script_flags, actual, field, want, got", [
    ("F.", ACK, "tcp_fin", 1, 0),
    (".", SYN | ACK, "tcp_syn", 0, 1),
    ("R.", ACK, "tcp_rst", 1, 0),
    (".", PSH | ACK, "tcp_psh", 0, 1),
    ("F", FIN | ACK, "tcp_ack", 0, 1),
])
def test_flags(script_flags, actual, field, want, got):
    seg = Segment(1, 0, actual, 0, 5)
    assert mismatch(f"+0 > {script_flags} 1:1(0)", seg) == \
        f"live packet field {field}: expected: {want} ({want:#x}) vs actual: {got} ({got:#x})"


def test_payload_length_comes_first():
    seg = Segment(5, 1000, ACK, 1, 9)
    assert mismatch("+0 > . 1:1(0) ack 99", seg) == \
        "live packet payload: expected 0 bytes vs actual 1000 bytes"


# --------------------------------------------------------------------------- options


def test_missing_option_is_an_ip_length_error_like_packetdrill():
    seg = Segment(1, 0, ACK, 700, 0)
    text = "+0 > . 1:1(0) ack 700 win 0 <nop,nop,sack 600:700>"
    assert mismatch(text, seg) == \
        "live packet field ipv4_total_length: expected: 52 (0x34) vs actual: 40 (0x28)"
    assert mismatch(text, seg, ip_version="ipv6") == \
        "live packet field ipv6_payload_len: expected: 32 (0x20) vs actual: 20 (0x14)"
    assert mismatch(text, seg, ip_version=None) == \
        "bad outbound TCP options: expected <nop,nop,sack 600:700> vs actual <>"


def test_report_shows_both_packets():
    seg = Segment(1, 0, ACK, 700, 0)
    found = match_packet(line("+0 > . 1:1(0) ack 700 win 0 <nop,nop,sack 600:700>"), seg)
    assert found.field == "ipv4_total_length"
    assert found.report().splitlines()[1:] == [
        "script packet: > . 1:1(0) ack 700 win 0 <nop,nop,sack 600:700>",
        "actual packet: > . 1:1(0) ack 700 win 0",
    ]


def test_sack_block_values_and_order():
    seg = Segment(1, 0, ACK, 7, 9, sacks=((3001, 4001), (1001, 2001)))
    assert mismatch("+0 > . 1:1(0) ack 7 <nop,nop,sack 3001:4001 1001:2001>", seg) is None
    assert mismatch("+0 > . 1:1(0) ack 7 <nop,nop,sack 1001:2001 3001:4001>", seg) == (
        "bad value outbound TCP option 5 (sack): expected sack 1001:2001 3001:4001 "
        "vs actual sack 3001:4001 1001:2001")


def test_sack_block_count_without_length_check():
    seg = Segment(1, 0, ACK, 7, 9, sacks=((3001, 4001), (1001, 2001)))
    assert mismatch("+0 > . 1:1(0) ack 7 <nop,nop,sack 3001:4001>", seg, ip_version=None) == (
        "bad lengths for outbound TCP option 5 (sack): expected sack 3001:4001 "
        "vs actual sack 3001:4001 1001:2001")


def test_syn_ack_options():
    seg = Segment(0, 0, SYN | ACK, 1, 65535, mss=1440, wscale=6, sack_ok=True)
    good = "+0 > S. 0:0(0) ack 1 <mss 1440,nop,nop,sackOK,nop,wscale 6>"
    assert mismatch(good, seg) is None
    assert mismatch(good.replace("wscale 6", "wscale 7"), seg) == \
        "bad value outbound TCP option 3 (wscale): expected wscale 7 vs actual wscale 6"
    assert mismatch(good.replace("mss 1440", "mss 1000"), seg) == \
        "bad value outbound TCP option 2 (mss): expected mss 1000 vs actual mss 1440"
    assert mismatch("+0 > S. 0:0(0) ack 1 <nop,nop,sackOK,mss 1440,nop,wscale 6>", seg) == (
        "bad outbound TCP options: expected <nop,nop,sackOK,mss 1440,nop,wscale 6> "
        "vs actual <mss 1440,nop,nop,sackOK,nop,wscale 6>")
    assert mismatch("* > S. 0:0(0) ack 1 win 65535 <...>", seg) is None


def test_timestamps_val_by_tolerance_ecr_unchecked():
    seg = Segment(1, 0, ACK, 7, 9, tsval=105, tsecr=12345)
    text = "+0 > . 1:1(0) ack 7 <nop,nop,TS val 100 ecr 700>"
    assert mismatch(text, seg) is None                       # no tick length: val unchecked
    assert mismatch(text, seg, ts_tick_usecs=1000) == (
        "bad outbound TCP timestamp value, tolerance 4000: "
        "expected TS val 100 vs actual 105 (in script space)")
    assert mismatch(text, seg, ts_tick_usecs=1000, tolerance_usecs=5000) is None


def test_timestamp_map_learns_baseline():
    ts_map = TimestampMap()
    config = MatchConfig(ts_tick_usecs=1000)
    first = line("+0 > S. 0:0(0) ack 1 <mss 1460,sackOK,TS val 100 ecr 50,nop,wscale 7>")
    syn_ack = Segment(0, 0, SYN | ACK, 1, 65535, mss=1460, wscale=7, sack_ok=True,
                      tsval=987654, tsecr=50)
    assert match_packet(first, syn_ack, config, ts_map) is None
    later = line("+0 > . 1:1(0) ack 1201 <nop,nop,TS val 300 ecr 60>")
    on_time = Segment(1, 0, ACK, 1201, 9, tsval=987854, tsecr=60)
    assert match_packet(later, on_time, config, ts_map) is None
    late = Segment(1, 0, ACK, 1201, 9, tsval=987860, tsecr=60)
    assert "expected TS val 300 vs actual 306" in str(match_packet(later, late, config, ts_map))
    assert ts_map.live_ecr(100) == 987654 and ts_map.live_ecr(300) == 987860
    assert ts_map.live_ecr(150) is None and ts_map.live_ecr(150, interpolate=True) == 987704


def test_linux_option_layout():
    assert segment_options(Segment(0, 0, SYN, mss=1460, sack_ok=True, tsval=1, tsecr=0,
                                   wscale=7)) == \
        (Mss(1460), SackOK(), Timestamp(1, 0), Nop(), WScale(7))
    assert segment_options(Segment(0, 0, SYN, mss=536, sack_ok=True)) == \
        (Mss(536), Nop(), Nop(), SackOK())
    assert segment_options(Segment(1, 0, ACK, 1, 1, tsval=3, tsecr=4, sacks=((5, 6),))) == \
        (Nop(), Nop(), Timestamp(3, 4), Nop(), Nop(), Sack(((5, 6),)))
    assert segment_options(Segment(1, 0, ACK, 1, 1)) == ()


# --------------------------------------------------------------------------- timing


def test_match_outbound_checks_fields_then_time():
    event = line("+.05 > . 1:1(0) ack 30001 win 17000")
    seg = Segment(1, 0, ACK, 30001, 17000)
    expected = resolve(event.timing, 97_979)
    assert match_outbound(event, seg, 149_000, expected) is None
    late = match_outbound(event, seg, 235_739, expected)
    assert late.field == "timing"
    assert str(late) == ("timing error: expected outbound packet at 0.147979 sec "
                         "but happened at 0.235739 sec; tolerance 0.004000 sec")
    assert failure_line("x.pkt", event, late).startswith(
        "x.pkt:2: error handling packet: timing error: expected outbound packet at 0.147979")
    wrong = match_outbound(event, Segment(1, 0, ACK, 30001, 1), 235_739, expected)
    assert wrong.field == "tcp_window"


def test_match_outbound_tolerance_from_config():
    event = line("+0 > . 1:1(0) ack 3")
    seg = Segment(1, 0, ACK, 3, 5)
    expected = resolve(event.timing, 1_000_000)
    assert match_outbound(event, seg, 1_009_000, expected) is not None
    assert match_outbound(event, seg, 1_009_000, expected,
                          MatchConfig(tolerance_usecs=10_000)) is None


def test_config_from_script():
    s = parse("--tolerance_usecs=14000\n--tcp_ts_tick_usecs=1000\n0 close(3) = 0\n", "c.pkt")
    assert MatchConfig.from_script(s, "ipv6") == MatchConfig(14000, 1000, "ipv6")
    assert MatchConfig.from_script(parse("0 close(3) = 0\n", "d.pkt")) == MatchConfig()
    with pytest.raises(ValueError):
        MatchConfig(ip_version="ipv5")


# --------------------------------------------------------------------------- inbound segments


def test_inbound_segment_fields_and_gso():
    syn = line("+0 < S 0:0(0) win 4000 <mss 1200,sackOK,TS val 9 ecr 0,nop,wscale 6>").packet
    seg = inbound_segment(syn, mss=1200)
    assert (seg.seq, seg.len, seg.flags, seg.ack, seg.win) == (0, 0, SYN, 0, 4000)
    assert (seg.mss, seg.wscale, seg.sack_ok, seg.tsval, seg.tsecr) == (1200, 6, True, 9, 0)
    assert seg.gso_size == 0
    big = inbound_segment(line("+0 < P. 1:36001(36000) ack 1 win 300").packet, mss=1200)
    assert (big.len, big.gso_size, big.flags) == (36000, 1200, PSH | ACK)
    small = inbound_segment(line("+0 < P. 1:1201(1200) ack 1 win 300").packet, mss=1200)
    assert small.gso_size == 0


def test_inbound_segment_without_ack_field_carries_zero():
    seg = inbound_segment(line("+0 < . 1:501(500) win 77").packet)
    assert seg.flags == ACK and seg.ack == 0 and seg.sacks == ()


def test_inbound_sacks_and_ecr_mapping():
    ts_map = TimestampMap()
    ts_map.record(200, 5_000)
    packet = line("+0 < . 1:1(0) ack 1 win 9 <nop,nop,TS val 1 ecr 200,nop,nop,sack 1:2>")
    seg = inbound_segment(packet.packet, ts_map=ts_map)
    assert (seg.tsval, seg.tsecr, seg.sacks) == (1, 5_000, ((1, 2),))
    unknown = line("+0 < . 1:1(0) ack 1 win 9 <nop,nop,TS val 1 ecr 201>").packet
    with pytest.raises(InboundError, match="unable to infer live TS ecr for script TS ecr 201"):
        inbound_segment(unknown, ts_map=ts_map)
