"""`run_paths()`, the body of `tcpsim packetdrill`: per-script verdicts, summary, exit status."""

from __future__ import annotations

import json

from tcpsim.packetdrill.command import run_paths

GOOD = """\
0    socket(..., SOCK_STREAM, IPPROTO_TCP) = 3
+0   bind(3, ..., ...) = 0
+0   listen(3, 1) = 0
+0   < S 0:0(0) win 65535 <mss 1000,nop,wscale 6>
+0   > S. 0:0(0) ack 1 <...>
+.01 < . 1:1(0) ack 1 win 500
+0   accept(3, ..., ...) = 4
+0   < P. 1:1001(1000) ack 1 win 500
+0   > . 1:1(0) ack 1001
"""
BAD = GOOD.replace("ack 1001\n", "ack 999\n")


def scripts(tmp_path):
    (tmp_path / "a_good.pkt").write_text(GOOD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b_bad.pkt").write_text(BAD)
    return tmp_path


def test_text_output_and_exit_status(tmp_path):
    root = scripts(tmp_path)
    out: list[str] = []
    status = run_paths([root], "linux-6.18", [], False, out.append)
    text = "\n".join(out).splitlines()
    assert status == 1
    assert text[0] == "PASS a_good.pkt"
    assert text[1] == "FAIL sub/b_bad.pkt"
    assert text[2] == ("  b_bad.pkt:9: error handling packet: live packet field tcp_ack_seq: "
                       "expected: 999 (0x3e7) vs actual: 1001 (0x3e9)")
    assert text[3].startswith("  script packet: > . 1:1(0) ack 999")
    assert text[-1] == "1 passed, 1 failed"
    assert run_paths([root / "a_good.pkt"], "linux-6.18", [], False, out.append) == 0
    assert out[-1] == "1 passed, 0 failed"


def test_json_output(tmp_path):
    out: list[str] = []
    status = run_paths([scripts(tmp_path)], None, [], True, out.append)
    doc = json.loads(out[0])
    assert status == 1 and len(out) == 1
    assert doc["profile"] == "linux-6.18" and doc["summary"] == "1 passed, 1 failed"
    assert [(r["name"], r["verdict"], r["line"]) for r in doc["results"]] == [
        ("a_good.pkt", "PASS", None), ("sub/b_bad.pkt", "FAIL", 9)]


def test_usage_errors_exit_2(tmp_path):
    out: list[str] = []
    assert run_paths([tmp_path / "missing.pkt"], "linux-6.18", [], False, print, error=out.append) == 2
    assert "no such file or folder" in out[-1]
    root = scripts(tmp_path)
    assert run_paths([root], "linux-0.1", [], False, print, error=out.append) == 2
    assert "unknown profile" in out[-1]
    assert run_paths([root], "linux-6.18", ["no-such-patch"], False, print, error=out.append) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_paths([empty], "linux-6.18", [], False, print, error=out.append) == 2


def test_policies_are_applied(tmp_path):
    """A user policy file changes the outcome: this one advertises a window of 7."""
    policy = tmp_path / "slow.py"
    policy.write_text(
        "from tcpsim.policy import Patch\n"
        "class Slow(Patch):\n"
        "    name = 'slow'\n"
        "    def advertise_window(self, sk):\n"
        "        super().advertise_window(sk)\n"
        "        return 7\n")
    root = scripts(tmp_path)
    out: list[str] = []
    assert run_paths([root / "a_good.pkt"], "linux-6.18", [], False, out.append) == 0
    good = GOOD.replace("ack 1001\n", "ack 1001 win 7\n")
    (root / "c.pkt").write_text(good)
    assert run_paths([root / "c.pkt"], "linux-6.18", [f"{policy}:Slow"], False, out.append) == 0
    assert run_paths([root / "c.pkt"], "linux-6.18", [], False, out.append) == 1


def test_engine_python_is_the_default(tmp_path):
    root = scripts(tmp_path)
    default: list[str] = []
    chosen: list[str] = []
    assert run_paths([root], "linux-6.18", [], False, default.append) == 1
    assert run_paths([root], "linux-6.18", [], False, chosen.append, engine="python") == 1
    assert chosen == default


def test_unknown_engine_is_one_error_line(tmp_path):
    out: list[str] = []
    errors: list[str] = []
    assert run_paths([scripts(tmp_path)], "linux-6.18", [], False, out.append,
                     engine="rust", error=errors.append) == 2
    assert errors == ["tcpsim: error: unknown engine 'rust'; choose one of: python, native"]
    assert out == []


def test_native_engine_not_built_is_one_error_line(tmp_path):
    import pytest

    from tcpsim.engines import native_available
    if native_available():
        pytest.skip("the native socket is built")
    out: list[str] = []
    assert run_paths([scripts(tmp_path)], "linux-6.18", [], False, out.append,
                     engine="native") == 2
    assert len(out) == 1 and out[0].startswith("tcpsim: error: engine 'native': ")
    assert "--engine python" in out[0]
