"""The packetdrill interpreter on small scripts written for these tests.

Each test runs a script against the simulated socket and checks the verdict and, for
failures, the packetdrill-style message. Most scripts come in a passing and a failing form,
so a test fails if the interpreter stops checking what the script states.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tcpsim.packetdrill.interpreter import ScriptResult, run_file

# A listening socket that completes a handshake with a SACK + window-scale peer; fd 4 is the
# accepted connection. tcp_rmem[1] = 65536 gives a 32 KB initial window.
SERVER = """\
--mss=1000
`sysctl -q net.ipv4.tcp_rmem="4096 65536 4194304"`
0    socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0   setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0
+0   bind(3, ..., ...) = 0
+0   listen(3, 1) = 0
+0   < S 0:0(0) win 65535 <mss 1000,sackOK,nop,nop,nop,wscale 6>
+0   > S. 0:0(0) ack 1 <...>
+.02 < . 1:1(0) ack 1 win 500
+0   accept(3, ..., ...) = 4
"""


def run(tmp_path: Path, body: str, *, prologue: str = SERVER, profile: str = "linux-6.18",
        name: str = "t.pkt") -> ScriptResult:
    path = tmp_path / name
    path.write_text(prologue + body)
    return run_file(path, profile)


def assert_fails(result: ScriptResult, line: int, text: str, kind: str = "mismatch") -> None:
    assert not result.passed, "the script should have failed"
    assert result.line == line, result.message
    assert text in result.message, result.message
    assert result.kind == kind, result.message


# --------------------------------------------------------------------------- packets


def test_handshake_and_in_order_data(tmp_path):
    ok = run(tmp_path, "+0 < P. 1:1001(1000) ack 1 win 500\n+0 > . 1:1(0) ack 1001\n")
    assert ok.passed, ok.message
    bad = run(tmp_path, "+0 < P. 1:1001(1000) ack 1 win 500\n+0 > . 1:1(0) ack 1000\n")
    assert_fails(bad, 12, "t.pkt:12: error handling packet: live packet field tcp_ack_seq: "
                          "expected: 1000 (0x3e8) vs actual: 1001 (0x3e9)")
    assert "script packet: > . 1:1(0) ack 1000" in bad.detail


def test_syn_ack_options_are_checked(tmp_path):
    prologue = SERVER.replace("+0   > S. 0:0(0) ack 1 <...>",
                              "+0   > S. 0:0(0) ack 1 <mss 1460,nop,nop,sackOK>")
    result = run(tmp_path, "", prologue=prologue)
    assert_fails(result, 8, "live packet field ipv4_total_length")


def test_out_of_order_data_gets_an_immediate_sack(tmp_path):
    body = ("+0 < P. 1001:2001(1000) ack 1 win 500\n"
            "+0 > . 1:1(0) ack 1 <nop,nop,sack 1001:2001>\n"
            "+0 < P. 1:1001(1000) ack 1 win 500\n"
            "+0 > . 1:1(0) ack 2001\n")
    assert run(tmp_path, body).passed
    wrong = body.replace("sack 1001:2001>", "sack 1001:3001>")
    assert_fails(run(tmp_path, wrong), 12, "bad value outbound TCP option 5 (sack)")


def test_timers_run_between_events(tmp_path):
    """Data with a FIN makes the receiver interactive: the ACK waits for the delayed-ACK
    timer, which the interpreter fires at its deadline."""
    body = "+0 < FP. 1:1001(1000) ack 1 win 500\n{when} > . 1:1(0) ack 1002\n"
    assert run(tmp_path, body.format(when="+.04")).passed
    early = run(tmp_path, body.format(when="+0"))
    assert_fails(early, 12, "timing error: expected outbound packet at 0.020000 sec but "
                            "happened at 0.060000 sec; tolerance 0.004000 sec")
    assert run(tmp_path, body.format(when="+0~+.05")).passed


def test_a_packet_sent_early_fails_the_timing_check(tmp_path):
    body = "+0 < P. 1:1001(1000) ack 1 win 500\n+.1 > . 1:1(0) ack 1001\n"
    assert_fails(run(tmp_path, body), 12, "expected outbound packet at 0.120000 sec but "
                                          "happened at 0.020000 sec")


def test_an_unexpected_packet_is_matched_against_the_next_outbound_line(tmp_path):
    """The immediate ACK of the data is still queued when the script expects the next one."""
    body = ("+0 < P. 1:1001(1000) ack 1 win 500\n"
            "+0 < P. 1001:2001(1000) ack 1 win 500\n"
            "+0 > . 1:1(0) ack 2001\n")
    assert_fails(run(tmp_path, body), 13, "expected: 2001 (0x7d1) vs actual: 1001 (0x3e9)")


def test_no_outbound_packet_and_no_timer(tmp_path):
    result = run(tmp_path, "+0 > . 1:1(0) ack 1\n")
    assert_fails(result, 11, "no outbound packet: nothing was sent and no timer is armed")


def test_segment_without_a_socket_is_reset(tmp_path):
    body = ("+0 < R. 1:1(0) ack 1 win 500\n"
            "+0 < . 1:1(0) ack 1 win 500\n"
            "+0 > R 1:1(0)\n")
    result = run(tmp_path, body)
    assert result.passed, result.message
    assert any("tcp_v4_send_reset" in n for n in result.notes)


def test_ack_to_a_listener_is_reset(tmp_path):
    prologue = "\n".join(SERVER.splitlines()[:6]) + "\n"
    body = "+0 < . 1:1(0) ack 1 win 500\n+0 > R 1:1(0)\n"
    assert run(tmp_path, body, prologue=prologue).passed


def test_only_the_socket_under_test_is_sniffed(tmp_path):
    """The first connection's FIN (after close) is not mistaken for the second SYN-ACK."""
    second = "\n".join(SERVER.splitlines()[2:]) + "\n"
    body = ("+0 close(4) = 0\n"
            "+0 close(3) = 0\n") + second.replace("0    socket", "+0   socket")
    assert run(tmp_path, body).passed


# --------------------------------------------------------------------------- system calls


def test_blocking_read_returns_when_data_arrives(tmp_path):
    body = ("+0...0.050 read(4, ..., 500) = 500\n"
            "+.05 < P. 1:501(500) ack 1 win 500\n")
    assert run(tmp_path, body).passed
    late = run(tmp_path, body.replace("...0.050", "...0.020"))
    assert_fails(late, 11, "t.pkt:11: timing error: expected system call return at 0.040000 "
                           "sec but happened at 0.070000 sec")


def test_call_that_would_block_without_t1_t2(tmp_path):
    result = run(tmp_path, "+0 read(4, ..., 500) = 500\n")
    assert_fails(result, 11, "runtime error in read call: the call blocks")


def test_script_ending_with_a_blocked_call(tmp_path):
    result = run(tmp_path, "+0...0.1 read(4, ..., 500) = 500\n")
    assert_fails(result, 11, "runtime error: exiting while a blocking system call is in "
                             "progress")


def test_nonblocking_read_and_fcntl(tmp_path):
    body = ("+0 fcntl(4, F_GETFL) = 0x2 (flags O_RDWR)\n"
            "+0 fcntl(4, F_SETFL, O_RDWR|O_NONBLOCK) = 0\n"
            "+0 fcntl(4, F_GETFL) = 0x802\n"
            "+0 read(4, ..., 500) = -1 EAGAIN (Resource temporarily unavailable)\n")
    assert run(tmp_path, body).passed
    wrong = run(tmp_path, body.replace("EAGAIN", "ECONNRESET"))
    assert_fails(wrong, 14, "Expected errno 104 (Connection reset by peer) but got 11 "
                            "(Resource temporarily unavailable)")


def test_result_mismatch_wording(tmp_path):
    body = "+0 < P. 1:1001(1000) ack 1 win 500\n+0 read(4, ..., 2000) = 999\n"
    assert_fails(run(tmp_path, body), 12, "t.pkt:12: runtime error in read call: Expected "
                                          "result 999 but got 1000 with errno 0 (Success)")


def test_read_on_the_listener_is_enotconn_and_eof_after_fin(tmp_path):
    body = ("+0 read(3, ..., 10) = -1 ENOTCONN (Transport endpoint is not connected)\n"
            "+0 < F. 1:1(0) ack 1 win 500\n"
            "+0 read(4, ..., 10) = 0\n")
    assert run(tmp_path, body).passed


def test_recvmsg_reports_tcp_cm_inq(tmp_path):
    body = ("+0 setsockopt(4, SOL_TCP, TCP_INQ, [1], 4) = 0\n"
            "+0 < P. 1:3001(3000) ack 1 win 500\n"
            "+0 recvmsg(4, {msg_name(...)=..., msg_iov(1)=[{..., 1000}], msg_flags=0,\n"
            "     msg_control=[{cmsg_level=SOL_TCP, cmsg_type=TCP_CM_INQ, cmsg_data=INQ}]},"
            " 0) = 1000\n")
    assert run(tmp_path, body.replace("INQ}", "2000}")).passed
    assert_fails(run(tmp_path, body.replace("INQ}", "5}")), 13,
                 "runtime error in recvmsg call: Bad cmsg_data: expected: 5 actual: 2000")


def test_recvmsg_reports_one_byte_after_fin(tmp_path):
    body = ("+0 setsockopt(4, SOL_TCP, TCP_INQ, [1], 4) = 0\n"
            "+0 < F. 1:501(500) ack 1 win 500\n"
            "+0 recvmsg(4, {msg_name(...)=..., msg_iov(1)=[{..., 500}], msg_flags=0,\n"
            "     msg_control=[{cmsg_level=SOL_TCP, cmsg_type=TCP_CM_INQ, cmsg_data=1}]}, 0) = 500\n")
    assert run(tmp_path, body).passed


def test_ioctl_siocinq_and_getsockopt(tmp_path):
    body = ("+0 getsockopt(4, SOL_SOCKET, SO_RCVBUF, [65536], [4]) = 0\n"
            "+0 < P. 1:3001(3000) ack 1 win 500\n"
            "+0 ioctl(4, SIOCINQ, [3000]) = 0\n")
    assert run(tmp_path, body).passed
    assert_fails(run(tmp_path, body.replace("[3000]", "[2999]")), 13,
                 "Bad ioctl optval: expected: 2999 actual: 3000")
    assert_fails(run(tmp_path, body.replace("[65536]", "[1]")), 11,
                 "Bad getsockopt optval: expected: 1 actual: 65536")


def test_so_rcvbuf_and_rmem_max(tmp_path):
    """SO_RCVBUF doubles the value, bounded by net.core.rmem_max (4 MiB on the machines the
    corpus results come from)."""
    body = ("+0 setsockopt(4, SOL_SOCKET, SO_RCVBUF, [3000000], 4) = 0\n"
            "+0 getsockopt(4, SOL_SOCKET, SO_RCVBUF, [6000000], [4]) = 0\n")
    assert run(tmp_path, body).passed


def test_active_open_nonblocking_connect_and_write(tmp_path):
    prologue = ("`sysctl -q net.ipv4.tcp_timestamps=0`\n"
                "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
                "+0 fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0\n"
                "+0 connect(3, ..., ...) = -1 EINPROGRESS (Operation now in progress)\n"
                "+0 > S 0:0(0) <mss 1460,nop,nop,sackOK,nop,wscale 10>\n"
                "+.01 < S. 0:0(0) ack 1 win 5000 <mss 1000,nop,wscale 2>\n"
                "+0 > . 1:1(0) ack 1\n")
    body = "+0 write(3, ..., 700) = 700\n+0 > P. 1:701(700) ack 1\n"
    assert run(tmp_path, body, prologue=prologue).passed
    wrong = prologue.replace("-1 EINPROGRESS", "0")
    assert_fails(run(tmp_path, body, prologue=wrong), 4,
                 "Expected result 0 but got -1 with errno 115 (Operation now in progress)")


def test_shutdown_sends_fin(tmp_path):
    body = "+0 shutdown(4, SHUT_WR) = 0\n+0 > F. 1:1(0) ack 1\n"
    assert run(tmp_path, body).passed


# --------------------------------------------------------------------------- shell


def test_nstat_counters_through_grep(tmp_path):
    body = ("+0 `nstat -n`\n"
            "+0 < P. 2001:3001(1000) ack 1 win 500\n"
            "+0 > . 1:1(0) ack 1 <nop,nop,sack 2001:3001>\n"
            "+0 `nstat | grep TcpExtTCPOFOQueue | grep -q \" 1 \"`\n")
    assert run(tmp_path, body).passed
    wrong = run(tmp_path, body.replace('" 1 "', '" 2 "'))
    assert_fails(wrong, 14, "error executing `nstat | grep TcpExtTCPOFOQueue | grep -q \" 2 \"` "
                            "command: non-zero status 1")


def test_sysctls_reach_the_socket(tmp_path):
    body = "+0 getsockopt(4, SOL_SOCKET, SO_RCVBUF, [65536], [4]) = 0\n"
    assert run(tmp_path, body).passed
    other = SERVER.replace("4096 65536 4194304", "4096 $((3*32768)) 4194304")
    assert_fails(run(tmp_path, body, prologue=other), 11, "expected: 65536 actual: 98304")


def test_defaults_file_is_read_from_the_script_folder(tmp_path):
    (tmp_path / "defaults.sh").write_text(
        "# test defaults\nsysctl -q net.ipv4.tcp_rmem=\"4096 40000 $((4*1024*1024))\"\n"
        "sysctl -q net.ipv4.tcp_congestion_control=cubic\n"
        "tc qdisc add dev tun0 root pfifo\n")
    prologue = SERVER.replace('`sysctl -q net.ipv4.tcp_rmem="4096 65536 4194304"`',
                              "`./defaults.sh`")
    result = run(tmp_path, "+0 getsockopt(4, SOL_SOCKET, SO_RCVBUF, [40000], [4]) = 0\n",
                 prologue=prologue)
    assert result.passed, result.message
    assert any("tcp_congestion_control" in n for n in result.notes)


def test_init_command_failure(tmp_path):
    bad = SERVER.replace("4096 65536 4194304", "4096 65536")
    result = run(tmp_path, "", prologue=bad)
    assert_fails(result, 2, "t.pkt: error executing init command: non-zero status 255")


def test_sysctl_missing_on_the_profile_fails_like_sysctl(tmp_path):
    prologue = SERVER.replace('"4096 65536 4194304"', '"4096 65536 4194304" '
                              "net.ipv4.tcp_shrink_window=1")
    assert run(tmp_path, "", prologue=prologue).passed
    result = run(tmp_path, "", prologue=prologue, profile="linux-5.15")
    assert_fails(result, 2, "error executing init command: non-zero status 255")
    assert "does not exist on linux-5.15" in result.detail


# --------------------------------------------------------------------------- code blocks


def test_code_block_sees_tcp_info(tmp_path):
    body = ("+0 < P. 1:1001(1000) ack 1 win 500\n"
            "+0 > . 1:1(0) ack 1001\n"
            "+0 %{ assert tcpi_bytes_received == BYTES, tcpi_bytes_received }%\n"
            "+0 %{ assert tcpi_state == TCP_ESTABLISHED and tcpi_rcv_mss == 1000 }%\n")
    assert run(tmp_path, body.replace("BYTES", "1000")).passed
    assert_fails(run(tmp_path, body.replace("BYTES", "7")), 13,
                 "t.pkt:13: error in Python code: AssertionError: 1000")


def test_code_runs_after_the_last_event(tmp_path):
    """As in packetdrill, a later packet error is reported before an earlier assertion."""
    body = ("+0 %{ assert tcpi_bytes_received == 12345 }%\n"
            "+0 < P. 1:1001(1000) ack 1 win 500\n"
            "+0 > . 1:1(0) ack 1\n")
    assert_fails(run(tmp_path, body), 13, "live packet field tcp_ack_seq")


def test_code_snapshot_is_taken_at_the_block(tmp_path):
    body = ("+0 %{ assert tcpi_bytes_received == 0 }%\n"
            "+0 < P. 1:1001(1000) ack 1 win 500\n"
            "+0 > . 1:1(0) ack 1001\n")
    assert run(tmp_path, body).passed


@pytest.mark.parametrize("code, text", [
    ("assert tcpi_no_such_field == 1", "unsupported: tcp_info field tcpi_no_such_field"),
    ("x = ().__class__", "unsupported: Python construct Attribute"),
    ("import os", "unsupported: Python construct Import"),
    ("open('/etc/passwd')", "unsupported: only abs, min, max"),
])
def test_code_outside_the_subset_is_unsupported(tmp_path, code, text):
    assert_fails(run(tmp_path, f"+0 %{{ {code} }}%\n"), 11, text, "unsupported")


# --------------------------------------------------------------------------- unsupported


@pytest.mark.parametrize("line, text", [
    ("+0 sendfile(4, 5, ..., 100) = 100", "runtime error in sendfile call: unsupported: "
                                         "system call sendfile()"),
    ("+0 `ss -tin`", "error executing `ss -tin` command: unsupported: shell command `ss -tin`"),
    ("+0 `sysctl -q net.ipv4.tcp_no_such=1`", "unsupported: sysctl net.ipv4.tcp_no_such is "
                                              "not modelled"),
    ("+0 `sysctl -q net.ipv4.tcp_dsack=0`", "unsupported: sysctl net.ipv4.tcp_dsack=0"),
    ("+0 setsockopt(4, SOL_SOCKET, SO_KEEPALIVE, [1], 4) = 0", "unsupported: symbol SO_KEEPALIVE"),
])
def test_unsupported_constructs_fail_clearly(tmp_path, line, text):
    result = run(tmp_path, line + "\n")
    assert_fails(result, 11, text, "unsupported")


def test_unsupported_script_option(tmp_path):
    result = run(tmp_path, "", prologue="--mtu=1400\n" + SERVER)
    assert_fails(result, 1, "unsupported: script option --mtu", "unsupported")


def test_syntax_errors_are_reported_not_raised(tmp_path):
    result = run(tmp_path, "+0 < P. 1:1001(999) ack 1 win 500\n")
    assert not result.passed and result.kind == "syntax"
    assert "inconsistent TCP sequence numbers and payload size" in result.message


# --------------------------------------------------------------------------- profiles


def test_the_profile_decides(tmp_path):
    """6.18 grows sk_rcvbuf for out-of-order data on an accepted socket; 6.17 does not."""
    body = ("+0 < . 3001:33001(30000) ack 1 win 500\n"
            "+0 > . 1:1(0) ack 1 <nop,nop,sack 3001:33001>\n"
            "+0 %{ assert SK_MEMINFO_RCVBUF > 65536, SK_MEMINFO_RCVBUF }%\n")
    assert run(tmp_path, body, profile="linux-6.18").passed
    assert_fails(run(tmp_path, body, profile="linux-6.17"), 13, "AssertionError: 65536")
