"""A user's Python patch on the native socket (issue #13): the native kernel calls into the
patch at the points it overrides, `super()` reaches the native era underneath, and the
result is step for step the Python engine's with the same patch (the lockstep machine of
test_lockstep.py, with the patch applied on both sides).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from tcpsim.catalog import check_patch, get_profile, patch_failure
from tcpsim.engines import EngineError, make_socket
from tcpsim.policy import Patch

from harness import established
from test_lockstep import machine_for

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_patch() -> type:
    """The README's patch example, run as written."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    code = next(b for b in blocks if "def shrink_allowed" in b)
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)        # noqa: S102 -- our own README
    return ns["AlwaysShrink"]


class HalfOpenWindow(Patch):
    """A decision using super(): advertise the era's window, rounded down to 2 scale units."""

    name = "half-open-window"

    def select_window(self, sk):
        win = super().select_window(sk)
        unit = 1 << sk.conn.rcv_wscale
        return win - win % (2 * unit) if win > 2 * unit else win


class SlowSsthresh(Patch):
    """A procedure using super() and a counter of its own: rcv_ssthresh grows half as much."""

    name = "slow-ssthresh"
    counters = {"SlowSsthreshGrows": "rcv_ssthresh growth halved (test patch)"}

    def grow_window(self, sk, skb, adjust, seg):
        before = sk.rcv.rcv_ssthresh
        super().grow_window(sk, skb, adjust, seg)
        grown = sk.rcv.rcv_ssthresh - before
        if grown > 0:
            sk.rcv.rcv_ssthresh = before + grown // 2
            sk.mib.SlowSsthreshGrows += 1


class QuickAckAlways(Patch):
    """A procedure without super(): never leave quick-ack mode by counting down."""

    name = "quickack-always"

    def dec_quickack_mode(self, sk):
        sk.ack.ack_quick = max(sk.ack.ack_quick, 2)


LOCKSTEP = settings(max_examples=15, stateful_step_count=25, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

CASES = [("readme", "linux-6.6", 0), ("half", "linux-6.18", 0), ("slow", "linux-6.6", 1),
         ("quick", "linux-6.1", 0)]


def _patch(tag: str) -> type:
    return {"readme": readme_patch(), "half": HalfOpenWindow, "slow": SlowSsthresh,
            "quick": QuickAckAlways}[tag]


@pytest.mark.parametrize(("tag", "profile", "shrink"), CASES)
def test_python_patch_in_lockstep(native, tag, profile, shrink):
    """Python socket + patch and native socket + the same patch agree after every step."""
    cls = machine_for(profile, shrink, "veth", "native", patches=(_patch(tag),))
    run_state_machine_as_test(cls, settings=LOCKSTEP)


def test_the_patch_is_called_and_super_reaches_the_era(native):
    """Not vacuous: the patch changes what the socket does on both engines alike."""
    big = {"sysctl": {"net.ipv4.tcp_rmem": "4096 1048576 6291456"}}    # room to grow
    plain = established("linux-6.6", engine="native", **big)
    patched = established("linux-6.6", engine="native", patches=(SlowSsthresh,), **big)
    ref = established("linux-6.6", patches=(SlowSsthresh,), **big)
    for peer in (plain, patched, ref):
        for _ in range(20):
            peer.send(1448)
    assert patched.sk.mib.SlowSsthreshGrows > 0
    assert patched.sk.snapshot()["mib"] == ref.sk.snapshot()["mib"]
    assert patched.sk.rcv.rcv_ssthresh == ref.sk.rcv.rcv_ssthresh < plain.sk.rcv.rcv_ssthresh


class Boom(Patch):
    name = "boom"

    def shrink_allowed(self, sk):
        return sk.rcv.no_such_field > 0


def test_an_exception_in_the_patch_is_one_line_naming_it(native):
    check_patch(Boom)                      # as --policy FILE.py:Class loads it
    lines = {}
    for engine in ("python", "native"):
        with pytest.raises(AttributeError) as info:
            peer = established("linux-6.6", engine=engine, patches=(Boom,))
            for _ in range(5):
                peer.send(1448)
        lines[engine] = patch_failure(info.value)
    assert lines["native"].startswith("patch boom failed in decision point shrink_allowed at ")
    assert "test_native_py_patch.py:" in lines["native"]
    assert lines["native"].split(": ")[0] == lines["python"].split(": ")[0]
    assert lines["native"].endswith("AttributeError: sk.rcv has no field no_such_field")


class KeepsSocket(Patch):
    name = "keeps-socket"
    kept = None

    def shrink_allowed(self, sk):
        KeepsSocket.kept = sk
        return super().shrink_allowed(sk)


def test_a_view_kept_after_the_call_refuses(native):
    peer = established("linux-6.6", engine="native", patches=(KeepsSocket,))
    for _ in range(3):
        peer.send(1)
    assert KeepsSocket.kept is not None
    with pytest.raises(RuntimeError, match="has returned"):
        KeepsSocket.kept.rcv.rcv_nxt


class ReadOnlyWrites(Patch):
    name = "read-only-writes"

    def shrink_allowed(self, sk):
        sk.rcv.rcv_wnd = 0
        return False


def test_a_read_only_point_cannot_write(native):
    with pytest.raises(AttributeError, match="only reads the socket"):
        peer = established("linux-6.6", engine="native", patches=(ReadOnlyWrites,))
        for _ in range(5):
            peer.send(1448)


class ChangesItsSkb(Patch):
    name = "changes-its-skb"

    def grow_window(self, sk, skb, adjust, seg):
        skb.truesize += 1
        super().grow_window(sk, skb, adjust, seg)


def test_a_changed_skb_argument_is_refused_not_lost(native):
    """seg and skb are copies on the native engine: a patch changing one is one line naming
    it (the change would silently be lost otherwise)."""
    check_patch(ChangesItsSkb)
    with pytest.raises(TypeError) as info:
        peer = established("linux-6.6", engine="native", patches=(ChangesItsSkb,))
        for _ in range(5):
            peer.send(1448)
    line = patch_failure(info.value)
    assert line.startswith("patch changes-its-skb failed in decision point grow_window at ")
    assert line.endswith("it changed its skb argument, a copy on the native engine (the kernel "
                         "would not see the change); --engine python runs it")


class Coalescer(Patch):
    name = "coalescer"

    def try_coalesce(self, sk, to, frm):
        return False


def test_points_without_a_native_view_are_refused_at_load(native):
    prof = get_profile("linux-6.6").with_patches(Coalescer)
    with pytest.raises(EngineError, match="try_coalesce cannot be overridden"):
        make_socket("native", prof, prof.default_sysctls(), "veth")


def test_packetdrill_refuses_such_a_patch_in_one_line(native, tmp_path):
    from tcpsim.packetdrill.command import run_paths
    patch = tmp_path / "coal.py"
    patch.write_text("class Coal:\n    name = 'coal'\n"
                     "    def try_coalesce(self, sk, to, frm):\n        return False\n")
    (tmp_path / "a.pkt").write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n")
    out: list[str] = []
    errors: list[str] = []
    assert run_paths([tmp_path / "a.pkt"], "linux-6.18", [f"{patch}:Coal"], False, out.append,
                     engine="native", error=errors.append) == 2
    assert errors == [f"tcpsim: error: --policy {patch}:Coal: decision point try_coalesce cannot be "
                      "overridden by a Python patch on the native engine yet (its arguments are "
                      "native objects the patch would change in place); --engine python runs it"]
    assert out == []


class SlowTsRtt(Patch):
    """A point without a socket argument (ts_rtt_sample_us), with super()."""

    name = "slow-ts-rtt"

    def ts_rtt_sample_us(self, delta_ms):
        us = super().ts_rtt_sample_us(delta_ms)
        return us * 3 if us > 0 else us


class Interactive(Patch):
    """A constant of the era: one quick exchange makes the connection interactive, and a
    method reading another constant through self."""

    name = "interactive"
    PINGPONG_THRESH = 1

    def delack_max(self, sk):
        return super().delack_max(sk) + self.RMEM2_DEFAULT % 7


def _shrink_window() -> type:
    from tcpsim.catalog import builtin_patches
    return builtin_patches()["shrink-window"]


LAYERED = [(SlowTsRtt, "linux-6.6"), (Interactive, "linux-6.1"), (Interactive, "linux-6.18")]


@pytest.mark.parametrize(("patch", "profile"), LAYERED, ids=lambda x: getattr(x, "name", x))
def test_constants_and_socketless_points_in_lockstep(native, patch, profile):
    cls = machine_for(profile, 0, "veth", "native", patches=(patch,))
    run_state_machine_as_test(cls, settings=LOCKSTEP)


def test_a_builtin_patch_after_a_python_one_in_lockstep(native):
    """--policy ./half.py:HalfOpenWindow --policy shrink-window: the built-in patch goes on
    top of the Python layer, as in the Python engine's MRO."""
    cls = machine_for("linux-6.1", 0, "veth", "native",
                      patches=(HalfOpenWindow, _shrink_window(), SlowSsthresh))
    run_state_machine_as_test(cls, settings=LOCKSTEP)


def test_a_builtin_patch_the_mro_puts_below_a_python_one_is_refused(native):
    """On linux-6.6 the era has shrink-window's mixin, so the Python engine's MRO puts the
    patch's shrink_allowed below a Python patch given before it; the native kernel would
    stack it on top: one line naming both and the fix."""
    prof = get_profile("linux-6.6").with_patches(Boom, _shrink_window())
    with pytest.raises(EngineError, match="^--policy shrink-window: on linux-6.6 this built-in "
                       "patch's shrink_allowed sits below the Python patch boom given before "
                       "it; on the native engine give built-in patches first, or use --engine "
                       "python$"):
        make_socket("native", prof, prof.default_sysctls(), "veth")
    prof = get_profile("linux-6.1").with_patches(Boom, _shrink_window())
    make_socket("native", prof, prof.default_sysctls(), "veth")     # 6.1: on top in both


def test_the_constant_is_taken_and_builtin_patches_may_follow(native):
    """Not vacuous: PINGPONG_THRESH = 1 changes what the native socket reports, and a
    built-in patch after a Python one is applied (not refused, not dropped)."""
    prof = get_profile("linux-6.1").with_patches(Interactive)
    sk = make_socket("native", prof, prof.default_sysctls(), "veth")
    assert sk.snapshot() is not None
    from tcpsim import _native
    from tcpsim.engines import native_policy
    names, layers = native_policy(prof.with_patches(_shrink_window()))
    assert names == ["shrink-window"] and [below for below, _ in layers] == [0]
    assert layers[0][1].__native_constants__["pingpong_thresh"] == 1
    plain = get_profile("linux-6.1")
    assert native_policy(plain.with_patches(SlowTsRtt))[1][0][1].__native_constants__ is None
    assert "ts_rtt_sample_us" in _native.PY_PATCH_POINTS


CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "peer-tests" / "packetdrill"


def test_packetdrill_corpus_with_the_readme_patch_is_identical(native, tmp_path):
    """`tcpsim packetdrill --policy ./my_patch.py:AlwaysShrink`: same verdicts, messages and
    lines on both engines."""
    from tcpsim.packetdrill.command import run_paths
    if not CORPUS.is_dir():
        pytest.skip(f"no corpus at {CORPUS}")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    patch = tmp_path / "my_patch.py"
    patch.write_text(next(b for b in blocks if "def shrink_allowed" in b))
    out: dict[str, list[str]] = {"python": [], "native": []}
    for engine, lines in out.items():
        run_paths([CORPUS], "linux-6.18", [f"{patch}:AlwaysShrink"], False, lines.append,
                  engine=engine)
    assert out["native"] == out["python"]
    # the tally, then the agreement with the real kernel's known verdicts: a patch that
    # always shrinks the window changes some (docs/packetdrill.md)
    assert re.fullmatch(r"\d+ passed, \d+ failed", out["python"][-2])
    agree = re.match(r"agrees with 6\.18: (\d+)/25 ", out["python"][-1])
    assert agree and int(agree.group(1)) < 25
