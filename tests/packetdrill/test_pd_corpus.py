"""The shared packetdrill corpus (third-party, read-only, outside the repo) parses, and the
matcher words the real kernel's failures exactly as packetdrill did (see the corpus README).

The corpus is read at run time from ../shared/peer-tests/packetdrill relative to the repo
root; nothing from it is copied here. Tests skip when it is absent.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tcpsim.packetdrill import (
    MatchConfig, failure_line, inbound_segment, match_outbound, match_packet, parse, resolve,
)
from tcpsim.packetdrill.ast import PacketEvent
from tcpsim.packetdrill.render import render_event
from tcpsim.core.segment import ACK, Segment

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "peer-tests" / "packetdrill"

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(),
    reason=f"packetdrill corpus not found at {CORPUS} (it lives outside the repo, in "
           "../shared/peer-tests/packetdrill; the parser tests on our own scripts still run)",
)


def corpus_scripts() -> list[Path]:
    return sorted(CORPUS.rglob("*.pkt"))


def corpus_event(relative: str, line: int):
    """The event of corpus script `relative` whose time stamp is on `line`."""
    script = parse((CORPUS / relative).read_text(), Path(relative).name)
    return next(e for e in script.events if e.line == line)


@needs_corpus
def test_every_corpus_script_parses():
    scripts = corpus_scripts()
    assert scripts, f"no .pkt files under {CORPUS}"
    failures = []
    for path in scripts:
        try:
            parse(path.read_text(), str(path.relative_to(CORPUS)))
        except Exception as exc:  # noqa: BLE001 - report every script, not just the first
            failures.append(f"{path.relative_to(CORPUS)}: {exc}")
    assert not failures, "\n".join(failures)


@needs_corpus
def test_corpus_events_round_trip_through_the_renderer():
    """Rendering every parsed event and parsing it again gives the same event."""
    for path in corpus_scripts():
        script = parse(path.read_text(), path.name)
        text = "\n".join(render_event(e) for e in script.events) + "\n"
        again = parse(text, path.name)
        assert [_strip_line(e) for e in again.events] == \
            [_strip_line(e) for e in script.events], path.name


def _strip_line(event):
    return dataclasses.replace(event, line=0)


# The first failures the real kernel (Linux 6.18.44) gave under packetdrill, from the corpus
# README; the simulated segments below are what that kernel sent.


@needs_corpus
def test_missing_dsack_block_reads_as_ip_length_error():
    event = corpus_event("kernel-selftests/tcp_rcv_wnd_shrink_nomem.pkt", 80)
    sent = Segment(1001, 0, ACK, 1040001, 0)
    assert str(match_packet(event, sent)) == \
        "live packet field ipv4_total_length: expected: 52 (0x34) vs actual: 40 (0x28)"
    assert str(match_packet(event, sent, MatchConfig(ip_version="ipv6"))) == \
        "live packet field ipv6_payload_len: expected: 32 (0x20) vs actual: 20 (0x14)"


@needs_corpus
def test_ack_seq_failure_wording():
    event = corpus_event("kernel-selftests/tcp_rcv_wnd_shrink_allowed.pkt", 37)
    problem = match_packet(event, Segment(1, 0, ACK, 11024, 13))
    assert failure_line("tcp_rcv_wnd_shrink_allowed.pkt", event, problem) == (
        "tcp_rcv_wnd_shrink_allowed.pkt:37: error handling packet: live packet field "
        "tcp_ack_seq: expected: 25361 (0x6311) vs actual: 11024 (0x2b10)")


@needs_corpus
def test_window_failure_wording():
    event = corpus_event("google-gtests/window_clamp/clamp-window-takes-effect.pkt", 18)
    problem = match_packet(event, Segment(1, 0, ACK, 64000, 1550))
    assert failure_line("clamp-window-takes-effect.pkt", event, problem) == (
        "clamp-window-takes-effect.pkt:18: error handling packet: live packet field "
        "tcp_window: expected: 756 (0x2f4) vs actual: 1550 (0x60e)")


@needs_corpus
def test_late_ack_timing_wording():
    event = corpus_event("kernel-selftests/tcp_rcv_toobig.pkt", 32)
    assert isinstance(event, PacketEvent)
    expected = resolve(event.timing, 147_979)
    problem = match_outbound(event, Segment(1, 0, ACK, 80001, 0), 235_739, expected)
    assert failure_line("tcp_rcv_toobig.pkt", event, problem) == (
        "tcp_rcv_toobig.pkt:32: error handling packet: timing error: expected outbound "
        "packet at 0.147979 sec but happened at 0.235739 sec; tolerance 0.004000 sec")


@needs_corpus
def test_inbound_data_without_ack_field_acks_zero():
    """gro-mss-option's data segment has no `ack`: it carries ACK with ack_seq 0."""
    script = parse((CORPUS / "google-gtests/gro/gro-mss-option.pkt").read_text(), "gro.pkt")
    event = next(e for e in script.events if e.line == 19)
    seg = inbound_segment(event.packet, script.options.mss)
    assert (seg.flags & ACK, seg.ack, seg.len, seg.gso_size) == (ACK, 0, 10000, 1000)
