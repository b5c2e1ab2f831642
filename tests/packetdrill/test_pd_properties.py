"""Property tests: generated packet lines round-trip through the parser, and a segment
always matches the line that describes it (and stops matching when one field changes)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tcpsim.packetdrill import MatchConfig, PacketdrillSyntaxError, match_packet, parse
from tcpsim.packetdrill.ast import (
    ACK, Direction, PacketEvent, TcpPacket,
)
from tcpsim.packetdrill.layout import segment_options
from tcpsim.packetdrill.render import render_event, render_packet

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for strategies.py
from strategies import pd_packets, pd_segments, pd_timings  # noqa: E402

OPENER = "0 %{ pass }%\n"


@st.composite
def packet_events(draw) -> PacketEvent:
    packet = draw(pd_packets())
    outbound = packet.direction is Direction.OUTBOUND
    return PacketEvent(2, draw(pd_timings(outbound)), packet)


@settings(max_examples=300)
@given(packet_events())
def test_rendered_packet_line_parses_back(event):
    script = parse(OPENER + render_event(event) + "\n", "gen.pkt")
    assert script.events[1] == event


def expected_line(seg) -> TcpPacket:
    """The outbound line that describes `seg` exactly."""
    return TcpPacket(Direction.OUTBOUND, seg.flags, seg.seq, seg.len,
                     seg.ack if seg.flags & ACK else None, seg.win, None, segment_options(seg))


@settings(max_examples=300)
@given(pd_segments())
def test_segment_matches_its_own_line_via_text(seg):
    text = render_packet(expected_line(seg))
    event = parse(OPENER + "+0 " + text + "\n", "gen.pkt").events[1]
    assert match_packet(event, seg) is None
    assert match_packet(event, seg, MatchConfig(ip_version="ipv6")) is None


MUTATIONS = {
    "tcp_seq": lambda p: dataclasses.replace(p, seq=p.seq + 1),
    "tcp_window": lambda p: dataclasses.replace(p, win=(p.win + 1) % 65536),
    "payload": lambda p: dataclasses.replace(p, payload_len=p.payload_len + 1),
    "tcp_psh": lambda p: dataclasses.replace(p, flags=p.flags ^ 0x08),
}


@given(pd_segments().filter(lambda s: s.len < 65535 and s.seq < 2**32 - 2**16),
       st.sampled_from(sorted(MUTATIONS)))
def test_one_changed_field_is_reported(seg, field):
    expected = MUTATIONS[field](expected_line(seg))
    found = match_packet(expected, seg)
    assert found is not None and found.field == field


@given(st.text(alphabet=st.sampled_from(list("0123456789+.:<>()[]{},=*~-`%SPF ackwinTSval\n")),
               max_size=60))
def test_random_text_raises_only_syntax_errors(text):
    try:
        parse(text, "fuzz.pkt")
    except PacketdrillSyntaxError as err:
        assert str(err).startswith("fuzz.pkt:") and ": error: " in str(err)
