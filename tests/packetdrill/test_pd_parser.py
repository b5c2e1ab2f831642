"""Parsing the packetdrill subset: every construct, on small scripts written for these tests."""

from __future__ import annotations

import textwrap

import pytest

from tcpsim.packetdrill import parse
from tcpsim.packetdrill.ast import (
    ACK, ANY, FIN, PSH, RST, SYN, URG, Array, Assign, BinOp, Call, CodeEvent, CommandEvent,
    Direction, Dots, Eol, Int, Mss, Nop, PacketEvent, Ref, Sack, SackOK, Str, Struct, Symbol,
    SyscallEvent, TimeKind, Timestamp, Timing, WScale,
)
from tcpsim.core import segment


def script(body: str, name: str = "mine.pkt"):
    return parse(textwrap.dedent(body), name)


def only_event(line: str):
    """Parse `line` after a time-0 opener and return its event."""
    s = script(f"0 %{{ pass }}%\n{line}\n")
    return s.events[1]


# --------------------------------------------------------------------------- options


def test_options_typed_and_raw():
    s = script("""\
        --mss=1200
        --tolerance_usecs=7000
        --tcp_ts_tick_usecs=1000
        --ip_version=ipv6
        --define=FOO=bar
        --verbose
        0 close(7) = 0
    """)
    opts = s.options
    assert (opts.mss, opts.tolerance_usecs, opts.tcp_ts_tick_usecs) == (1200, 7000, 1000)
    assert [(o.name, o.value, o.line) for o in opts.raw] == [
        ("mss", "1200", 1), ("tolerance_usecs", "7000", 2), ("tcp_ts_tick_usecs", "1000", 3),
        ("ip_version", "ipv6", 4), ("define", "FOO=bar", 5), ("verbose", None, 6)]
    assert opts.get("ip_version") == "ipv6" and opts.get("absent") is None
    assert s.tolerance_usecs == 7000


def test_default_tolerance_is_4ms():
    s = script("0 close(7) = 0\n")
    assert s.options.mss is None and s.tolerance_usecs == 4000


# --------------------------------------------------------------------------- timing


@pytest.mark.parametrize("text, timing", [
    ("0.25 <", Timing(TimeKind.ABSOLUTE, 250_000)),
    ("2 <", Timing(TimeKind.ABSOLUTE, 2_000_000)),
    ("+.02 <", Timing(TimeKind.RELATIVE, 20_000)),
    ("+3 <", Timing(TimeKind.RELATIVE, 3_000_000)),
    ("* >", Timing(TimeKind.ANY)),
    ("+0~+.05 >", Timing(TimeKind.RELATIVE_RANGE, 0, 50_000)),
    ("+0.01~+0.03 >", Timing(TimeKind.RELATIVE_RANGE, 10_000, 30_000)),
    ("0.5~0.75 >", Timing(TimeKind.ABSOLUTE_RANGE, 500_000, 750_000)),
])
def test_time_forms(text, timing):
    time_text, direction = text.rsplit(" ", 1)
    win = "" if direction == ">" else " win 100"
    event = only_event(f"{time_text} {direction} . 1:1(0) ack 1{win}")
    assert event.timing == timing


def test_time_is_exact_microseconds():
    assert only_event("0.1234567 %{ x }%").timing.usecs == 123456  # truncated like C
    assert only_event("+0.000001 %{ x }%").timing.usecs == 1


def test_blocking_window_relative_and_absolute():
    s = script("""\
        0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 5
        +0.2...0.35 read(5, ..., 300) = 300
        1...1.5 read(5, ..., 20) = 20
        +0...0 read(5, ..., 1) = 1
    """)
    relative, absolute, zero = s.events[1:]
    assert relative.timing == Timing(TimeKind.RELATIVE, 200_000, None, 350_000)
    assert absolute.timing == Timing(TimeKind.ABSOLUTE, 1_000_000, None, 1_500_000)
    assert zero.is_blocking and zero.timing.block_end_usecs == 0
    assert not s.events[0].is_blocking


def test_event_line_is_the_time_stamp_line():
    s = script("""\
        // a comment line
        /* a block
           comment */
        0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 5

        +0 recvmsg(5, {msg_name(...)=...,
                       msg_iov(1)=[{..., 64}],
                       msg_flags=0}, 0) = 64
        +0 %{ assert True }%
    """)
    assert [e.line for e in s.events] == [4, 6, 9]


# --------------------------------------------------------------------------- packets


def test_inbound_packet_all_fields():
    p = only_event("+0 < S 0:0(0) win 29200 <mss 1400,sackOK,TS val 5 ecr 0,nop,wscale 9>").packet
    assert p.direction is Direction.INBOUND
    assert (p.flags, p.seq, p.payload_len, p.end_seq) == (SYN, 0, 0, 0)
    assert (p.ack, p.win, p.urg) == (None, 29200, None)
    assert p.options == (Mss(1400), SackOK(), Timestamp(5, 0), Nop(), WScale(9))
    assert p.option(WScale) == WScale(9) and p.option(Sack) is None


@pytest.mark.parametrize("flags_text, bits", [
    (".", ACK), ("S", SYN), ("S.", SYN | ACK), ("P.", PSH | ACK), ("F.", FIN | ACK),
    ("FP.", FIN | PSH | ACK), ("R", RST), ("R.", RST | ACK), ("U.", URG | ACK), ("-", 0),
])
def test_flags(flags_text, bits):
    p = only_event(f"+0 < {flags_text} 7:7(0) win 9").packet
    assert p.flags == bits
    assert p.flags_text == flags_text


def test_flag_bits_are_the_segment_bits():
    assert (FIN, SYN, RST, PSH, ACK, URG) == (segment.FIN, segment.SYN, segment.RST,
                                              segment.PSH, segment.ACK, segment.URG)


def test_data_packet_seq_ack_win_urg():
    p = only_event("+0 < P. 3001:4501(1500) ack 77 win 513 urg 2").packet
    assert (p.seq, p.end_seq, p.payload_len, p.ack, p.win, p.urg) == (3001, 4501, 1500, 77, 513, 2)
    assert p.options == ()


def test_outbound_packet_omitted_fields_and_wildcards():
    omitted = only_event("+0 > . 1:1(0)").packet
    assert (omitted.ack, omitted.win, omitted.options) == (None, None, ())
    wild = only_event("* > S. 0:0(0) ack * win * <...>").packet
    assert (wild.ack, wild.win, wild.options) == (ANY, ANY, ANY)
    assert wild.option(Mss) is None


def test_sack_blocks_dsack_first_and_spaces():
    p = only_event("+0 > . 1:1(0) ack 901 <nop, nop, sack 1:301 1201:1501 2001:2101>").packet
    assert p.options == (Nop(), Nop(), Sack(((1, 301), (1201, 1501), (2001, 2101))))


def test_eol_and_hex_values():
    p = only_event("+0 > S. 0:0(0) ack 0x10 win 0xffff <mss 0x5b4,nop,nop,nop,eol>").packet
    assert (p.ack, p.win) == (16, 65535)
    assert p.options == (Mss(1460), Nop(), Nop(), Nop(), Eol())


# --------------------------------------------------------------------------- system calls


def test_syscall_simple_and_symbols():
    e = only_event("+0 setsockopt(6, SOL_SOCKET, SO_RCVBUF, [24000], 4) = 0")
    assert isinstance(e, SyscallEvent) and e.name == "setsockopt"
    assert e.args == (Int(6, "6"), Symbol("SOL_SOCKET"), Symbol("SO_RCVBUF"),
                      Array((Int(24000, "24000"),)), Int(4, "4"))
    assert e.result == Int(0, "0") and e.errno is None and e.note is None


def test_syscall_error_form_and_note():
    e = only_event("+0 read(6, ..., 10) = -1 EAGAIN (Resource temporarily unavailable)")
    assert e.result == Int(-1, "-1")
    assert (e.errno, e.note) == ("EAGAIN", "Resource temporarily unavailable")
    f = only_event("+0 fcntl(6, F_GETFL) = 0x802 (flags O_RDWR)")
    assert f.result == Int(0x802, "0x802") and f.errno is None and f.note == "flags O_RDWR"


def test_symbolic_result_with_note_is_not_a_call():
    e = only_event("+0 fcntl(6, F_GETFL) = O_RDWR|O_NONBLOCK (flags)")
    assert e.result == BinOp("|", Symbol("O_RDWR"), Symbol("O_NONBLOCK"))
    assert e.note == "flags"


def test_syscall_bitwise_or_and_no_args():
    e = only_event("+0 fcntl(6, F_SETFL, O_RDWR|O_NONBLOCK|O_CLOEXEC) = 0")
    assert e.args[2] == BinOp("|", BinOp("|", Symbol("O_RDWR"), Symbol("O_NONBLOCK")),
                              Symbol("O_CLOEXEC"))
    assert only_event("+0 getpid() = 42").args == ()


def test_syscall_structs_calls_refs_strings():
    e = only_event('+0 connect(6, {sa_family=AF_INET, sin_port=htons(9090), '
                   'sin_addr=inet_addr("198.51.100.7")}, 16) = 0')
    sockaddr = e.args[1]
    assert sockaddr == Struct((
        Assign(Symbol("sa_family"), Symbol("AF_INET")),
        Assign(Symbol("sin_port"), Call("htons", (Int(9090, "9090"),))),
        Assign(Symbol("sin_addr"), Call("inet_addr", (Str("198.51.100.7"),))),
    ))
    linger = only_event("+0 setsockopt(6, SOL_SOCKET, SO_LINGER, {onoff=1, linger=30}, 8) = 0")
    assert linger.args[3] == Struct((Assign(Symbol("onoff"), Int(1, "1")),
                                     Assign(Symbol("linger"), Int(30, "30"))))
    ref = only_event("+0 getsockopt(6, SOL_TCP, TCP_INFO, &info, &len) = 0")
    assert ref.args[3:] == (Ref(Symbol("info")), Ref(Symbol("len")))
    text = only_event('+0 write(6, "ab" "cd"..., 4) = 4')
    assert text.args[1] == Str("abcd", truncated=True)


def test_syscall_multiline_msghdr_with_cmsg():
    s = script("""\
        0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 8
        +0 recvmsg(8, {msg_name(...)=...,
                msg_iov(1)=[{..., 512}],
                msg_flags=0,
                msg_control=[{cmsg_type=TCP_CM_INQ, cmsg_level=SOL_TCP,
                              cmsg_data=256}]}, 0) = 512
    """)
    call = s.events[1]
    msg = call.args[1]
    assert isinstance(msg, Struct) and len(msg.items) == 4
    assert msg.items[0] == Assign(Call("msg_name", (Dots(),)), Dots())
    assert msg.items[1] == Assign(Call("msg_iov", (Int(1, "1"),)),
                                  Array((Struct((Dots(), Int(512, "512"))),)))
    cmsg = msg.items[3].value.items[0]
    assert Assign(Symbol("cmsg_data"), Int(256, "256")) in cmsg.items
    assert call.result == Int(512, "512") and call.line == 2


# --------------------------------------------------------------------------- commands and code


def test_init_timed_and_cleanup_commands():
    s = script("""\
        `echo setup
        sysctl -q net.ipv4.tcp_dsack=0`
        0 `echo timed`
        +0.5 `nstat -n | grep -q " 7 "`
        `echo cleanup`
    """)
    assert s.init_command.line == 1
    assert s.init_command.command == "echo setup\nsysctl -q net.ipv4.tcp_dsack=0"
    timed = s.events[0]
    assert isinstance(timed, CommandEvent) and timed.command == "echo timed" and timed.line == 3
    assert s.events[1].command == 'nstat -n | grep -q " 7 "'
    assert s.cleanup_command.command == "echo cleanup" and s.cleanup_command.line == 5


def test_code_block_keeps_text_and_line():
    s = script("""\
        0 close(9) = 0
        +0.2 %{   assert tcpi_snd_cwnd >= 2, tcpi_snd_cwnd   }%
        +0 %{
        x = 1
        assert x == 1
        }%
    """)
    one, multi = s.events[1:]
    assert isinstance(one, CodeEvent) and one.line == 2
    assert one.code == "assert tcpi_snd_cwnd >= 2, tcpi_snd_cwnd"
    assert multi.line == 3 and multi.code == "\nx = 1\nassert x == 1\n"


def test_all_event_kinds_in_one_script():
    s = script("""\
        --mss=500
        `true`
        0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 4
        +0 listen(4, 8) = 0
        +0 < S 0:0(0) win 1000 <mss 500,nop,nop,sackOK>
        +0 > S. 0:0(0) ack 1 win * <...>
        +.05 < . 1:1(0) ack 1 win 1000
        +0 accept(4, ..., ...) = 5
        +0 < P. 1:1501(1500) ack 1 win 1000
        +0~+.04 > . 1:1(0) ack 1501
        +0 `true`
        +0 %{ pass }%
    """)
    kinds = [type(e).__name__ for e in s.events]
    assert kinds == ["SyscallEvent", "SyscallEvent", "PacketEvent", "PacketEvent",
                     "PacketEvent", "SyscallEvent", "PacketEvent", "PacketEvent",
                     "CommandEvent", "CodeEvent"]
    assert isinstance(s.events[2], PacketEvent) and s.filename == "mine.pkt"
