"""Syntax errors, semantic errors and unsupported constructs: message text and line number."""

from __future__ import annotations

import pytest

from tcpsim.packetdrill import PacketdrillSyntaxError, parse

OPENER = "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 6\n"


def error_of(text: str, name: str = "bad.pkt") -> PacketdrillSyntaxError:
    with pytest.raises(PacketdrillSyntaxError) as info:
        parse(text, name)
    return info.value


def test_str_is_packetdrill_style():
    err = error_of(OPENER + "+0 < . 1:1(0) ack 1\n", "dir/x.pkt")
    assert str(err) == "dir/x.pkt:2: error: window must be specified for inbound packets"
    assert (err.filename, err.line) == ("dir/x.pkt", 2)
    assert not err.unsupported


@pytest.mark.parametrize("line, message", [
    ("+0 < . 1:11(9) ack 1 win 5", "inconsistent TCP sequence numbers and payload size"),
    ("+0 < . 1:70001(70000) ack 1 win 5", "TCP payload size out of range"),
    ("+0 < . 1:1(0) ack 1 win 70000", "TCP window value out of range"),
    ("+0 < . 1:1(0) ack 4294967296 win 5", "TCP ack sequence number out of range"),
    ("+0 < S 0:0(0) win 5 <mss 70000>", "mss value out of range"),
    ("+0 < S 0:0(0) win 5 <nop,wscale 300>", "window scale shift count out of range"),
    ("+0 < S 0:0(0) win 5 <mss 1000,nop>", "TCP options are not padded to a multiple of 4 bytes: 1 excess bytes"),
    ("+0 < . 1:1(0) ack 1 win 5 <...>", "<...> for TCP options can only be used with outbound packets"),
    ("+0 < . 1:1(0) ack 1 win *", "wildcard '*' for a packet field can only be used with outbound packets"),
    ("* < . 1:1(0) ack 1 win 5", "event time <star> can only be used with outbound packets"),
    ("* read(6, ..., 5) = 5", "event time <star> can only be used with outbound packets"),
    ("+0~+1 < . 1:1(0) ack 1 win 5", "event time range can only be used with outbound packets"),
    ("+1~+0.5 > . 1:1(0) ack 5", "time range is backwards"),
    ("+0.2...0.1 read(6, ..., 5) = 5", "blocking system call time window is backwards (t1...t2 with t2 < t1)"),
    ("+0...0.1 > . 1:1(0) ack 5", "a blocking time window (t1...t2) can only be used with a system call"),
    ("+0 < Q 1:1(0) ack 1 win 5", "invalid TCP flag: 'Q'"),
    ("+0 < . 1:1 ack 1 win 5", "expected '(' before payload length, got 'ack'"),
    ("+0 > . 1:1(0) ack 5 <mss 5", "expected '>' to close the TCP option list, got end of file"),
    ("+0 > . 1:1(0) <TS val 1>", "expected 'ecr' after 'TS val 1', got '>'"),
    ("+0 read(6, ..., 5)", "expected '=' and the expected result after read(...), got end of file"),
    ("+0 read(6, ..., 5 = 5", "expected ')' to close the arguments of read(), got '='"),
    ("+0 read 6", "expected '(' after system call name 'read', got '6'"),
    ("+0 ?", "expected a packet ('<' or '>'), a system call, a `shell command` or a %{ }% block after the event time, got '?'"),
    ("win 5", "expected an event time (e.g. '+0', '0.100', '*'), got 'win'"),
    ("+-1 close(6) = 0", "negative time"),
    ("0.5~+1 > . 1:1(0)", "a time range is either absolute (a~b) or relative (+a~+b), not mixed"),
    ("+0~1 > . 1:1(0)", "expected '+' after '~' in a relative time range (+a~+b), got '1'"),
    ("--mss=100", "script options (--name=value) must come before the first event"),
    ("+0 write(6, 1.5, 2) = 2", "unsupported: floating-point value 1.5 in a system call expression"),
])
def test_errors_name_the_line(line, message):
    err = error_of(OPENER + "\n" + line + "\n")
    assert err.line == 3
    assert err.message == message
    assert str(err) == f"bad.pkt:3: error: {message}"


@pytest.mark.parametrize("line, construct", [
    ("+0 < ipv4 1.2.3.4 > 5.6.7.8: . 1:1(0) ack 1 win 5", "IPv4 encapsulation in packet lines"),
    ("+0 < udp (100)", "UDP packets"),
    ("+0 > icmp unreachable", "ICMP packets"),
    ("+0 < gre: . 1:1(0) ack 1 win 5", "GRE encapsulation"),
    ("+0 < mpls (label 1, tc 0, [S], ttl 9): . 1:1(0) win 5", "MPLS encapsulation"),
    ("+0 < [ect0] . 1:1(0) ack 1 win 5", "IP header fields in packet lines (ECN, tos, ttl, flowlabel)"),
    ("+0 < (tos 0x4) . 1:1(0) ack 1 win 5", "IP header fields in packet lines (ECN, tos, ttl, flowlabel)"),
    ("+0 < 1234>80 . 1:1(0) ack 1 win 5", "explicit port numbers in packet lines"),
    ("+0 < SEW 0:0(0) win 5", "ECN/AccECN TCP flag 'E'"),
    ("+0 > SA. 0:0(0) ack 1", "ECN/AccECN TCP flag 'A'"),
    ("+0 > S.5 0:0(0) ack 1", "AccECN ACE flags 'S.5'"),
    ("+0 > .5 0:0(0) ack 1", "AccECN ACE flags '.5'"),
    ("+0 < S 0:0(0) win 5 <md5 0123>", "TCP MD5 signature option"),
    ("+0 < S 0:0(0) win 5 <FO abcd>", "TCP Fast Open option"),
    ("+0 < S 0:0(0) win 5 <FOEXP>", "TCP Fast Open (experimental) option"),
    ("+0 < S 0:0(0) win 5 <mpcapable v1 flags 1>", "TCP option 'mpcapable'"),
    ("+0 < . 1:1(0) ack 1 win 5 {mut ip ihl}", "packet fuzzing parameters ({...})"),
])
def test_unsupported_constructs(line, construct):
    err = error_of(OPENER + "\n" + line + "\n")
    assert err.unsupported
    assert err.message == f"unsupported: {construct}"
    assert err.line == 3


def test_untimed_command_in_the_middle():
    err = error_of(OPENER + "`echo a`\n+0 close(6) = 0\n")
    assert err.line == 2
    assert "only the first and the last command may be untimed" in err.message


def test_script_level_checks():
    assert error_of("+0.1 close(6) = 0\n").message == "first event should be at time 0"
    err = error_of("0 close(6) = 0\n1 close(7) = 0\n0.5 close(8) = 0\n")
    assert (err.line, err.message) == (3, "time goes backward in script from 1000000 usec "
                                          "to 500000 usec")
    assert error_of("--mss=1000\n`true`\n").message == "script has no events"
    assert error_of("--mss=lots\n0 close(6) = 0\n").message == \
        "--mss needs a non-negative integer value, got 'lots'"


@pytest.mark.parametrize("text, line, message", [
    (OPENER + '+0 write(6, "abc, 3) = 3\n', 2, 'unterminated string (missing closing ")'),
    (OPENER + "+0 `echo\n", 2, "unterminated shell command (missing closing `)"),
    (OPENER + "\n+0 %{ assert 1\n", 3, "unterminated %{ code block (missing closing }%)"),
    (OPENER + "/* open\n\ncomment\n", 2, "unterminated /* comment"),
])
def test_unterminated_tokens(text, line, message):
    err = error_of(text)
    assert (err.line, err.message) == (line, message)


@pytest.mark.parametrize("garbage", [
    "", "   \n", "}", "0", "+", "<", "0 <", "0 < S", "0 < S 0:", "0 read(", "0 read(1,",
    "0 read(1) =", "0 x(1) = 1 E (", "0 x({a=}) = 1", "@@", "0 > S. 0:0(0) <sack>",
    "0 > S. 0:0(0) <sack 1:>", "`a` `b`", "--x 0 close(1) = 0 0.5~",
])
def test_garbage_never_crashes(garbage):
    """Anything malformed ends in PacketdrillSyntaxError, never another exception."""
    with pytest.raises(PacketdrillSyntaxError):
        parse(garbage, "g.pkt")
