"""One return-value contract for decision points, the same on both engines (issue 31;
tcpsim/answers.py): type and range per declared signature, the same one-line error naming
the patch, the point, the value and what is allowed; the same for socket-field and counter
writes; a patch class that overrides nothing is refused; built-in eras are not checked."""

from __future__ import annotations

import textwrap

import pytest

from tcpsim import answers
from tcpsim.catalog import get_profile
from tcpsim.engines import native_available
from tcpsim.policy import POINTS
from tests.cli_entry import run_main

ENGINES = ["python", *(["native"] if native_available() else [])]
RUN = ["run", "seed-unbounded-growth", "-d", "2s"]

CASES = [
    ("select_window", "-1", "it returned -1 (int) where the kernel takes an int in [0, 2**31) "
                            "(a window)"),
    ("select_window", "1234.5", "it returned 1234.5 (float) where the kernel takes an int in "
                                "[0, 2**31) (a window)"),
    ("select_window", "2**70", "it returned 1180591620717411303424 (int) where the kernel takes "
                               "an int in [0, 2**31) (a window)"),
    ("select_window", "True", "it returned True (bool) where the kernel takes an int in "
                              "[0, 2**31) (a window)"),
    ("shrink_allowed", "'no'", "it returned 'no' (str) where the kernel takes a bool (True or "
                               "False)"),
    ("shrink_allowed", "1", "it returned 1 (int) where the kernel takes a bool (True or False)"),
]


def _patch(tmp_path, body: str) -> str:
    f = tmp_path / "p.py"
    f.write_text(textwrap.dedent(body))
    return str(f)


@pytest.mark.parametrize("point,value,said", CASES)
def test_a_wrong_answer_is_the_same_line_on_both_engines(point, value, said, tmp_path,
                                                         monkeypatch, capsys):
    f = _patch(tmp_path, f"""
        class P:
            def {point}(self, sk):
                return {value}
    """)
    lines = set()
    for engine in ENGINES:
        code, _, err = run_main([*RUN, "--engine", engine, "--policy", f"{f}:P"], monkeypatch,
                                capsys)
        assert code == 2 and err.count("\n") == 1, err
        lines.add(err)
    assert lines == {f"tcpsim: error: patch {f}:P failed in decision point {point} at {f}:3: "
                     f"{said} (--debug shows the traceback)\n"}


@pytest.mark.parametrize("write,said", [
    ("sk.mem.sk_rcvbuf = 'x'", "it set sk.mem.sk_rcvbuf to 'x' (str) where the socket takes an "
                               "int in [-2**63, 2**63)"),
    ("sk.mem.sk_rcvbuf = 1.5", "it set sk.mem.sk_rcvbuf to 1.5 (float)"),
    ("sk.mem.sk_rcvbuf = 2**64", "it set sk.mem.sk_rcvbuf to 18446744073709551616 (int)"),
    ("sk.mem.rcvbuf_locked = 1", "it set sk.mem.rcvbuf_locked to 1 (int) where the socket takes "
                                 "a bool (True or False)"),
    ("sk.mib.TCPRcvQDrop = 'x'", "it set sk.mib.TCPRcvQDrop to 'x' (str)"),
])
def test_a_bad_field_write_is_the_same_line_on_both_engines(write, said, tmp_path, monkeypatch,
                                                             capsys):
    f = _patch(tmp_path, f"""
        class P:
            def clamp_window(self, sk):
                {write}
    """)
    lines = set()
    for engine in ENGINES:
        code, _, err = run_main([*RUN, "--engine", engine, "--policy", f"{f}:P"], monkeypatch,
                                capsys)
        assert code == 2 and err.count("\n") == 1 and said in err, (engine, err)
        lines.add(err)
    assert len(lines) == 1, lines
    assert f"patch {f}:P failed in decision point clamp_window at {f}:3: " in lines.pop()


def test_a_patch_that_overrides_nothing_is_refused(tmp_path, monkeypatch, capsys):
    f = _patch(tmp_path, """
        from tcpsim.policy import Patch
        class Nothing(Patch):
            name = "nothing"
            def _helper(self):
                return 1
    """)
    code, _, err = run_main([*RUN, "--policy", f"{f}:Nothing"], monkeypatch, capsys)
    assert code == 2
    assert err.startswith(f"tcpsim: error: --policy {f}:Nothing: Nothing overrides no decision "
                          "point"), err


def test_good_answers_pass_and_builtins_are_not_wrapped(tmp_path):
    f = _patch(tmp_path, """
        class P:
            def shrink_allowed(self, sk):
                return super().shrink_allowed(sk)
    """)
    plain = get_profile("linux-6.6", ["shrink-window"])
    assert not hasattr(type(plain.policy()).shrink_allowed, "__wrapped__")   # as it is
    k = get_profile("linux-6.6", [f"{f}:P"]).policy()
    assert k.shrink_allowed.__wrapped__.__qualname__ == "P.shrink_allowed"


def test_every_declared_answer_type_has_a_contract():
    for p in POINTS.values():
        if p.is_method and p.kind.value == "decision":
            assert p.returns in ("int", "bool", "str", "tuple[int, int]"), (p.name, p.returns)
            assert "takes" not in answers.expected(p.name, p.returns)


@pytest.mark.parametrize("engine", ENGINES)
def test_builtin_eras_keep_the_contract(engine, monkeypatch):
    """Every int the built-in eras answer lies in the ranges the contract declares (a patch
    returning super()'s answer is never refused): run experiments with every point checked."""
    from tcpsim.policy import Profile, own_classes
    from tcpsim.runner import RunOptions, run
    from tcpsim.scenario import load_scenario
    if engine != "python":
        pytest.skip("the wrapping is the Python engine's; the native ranges are the same table")
    seen: dict[str, int] = {}

    def wrap(name, fn, returns):
        def checked(self, *args):
            v = fn(self, *args)
            seen[name] = seen.get(name, 0) + 1
            assert answers.check(name, returns, v), (name, v)
            return v
        return checked
    for name in ("linux-5.15", "linux-6.1", "linux-6.18"):
        prof = get_profile(name)
        attrs = {p: wrap(p, getattr(prof.kernel, p), POINTS[p].returns) for p in POINTS
                 if POINTS[p].is_method and POINTS[p].kind.value == "decision"}
        checked = type("Checked", (prof.kernel,), attrs)
        monkeypatch.setattr(Profile, "policy", lambda self, c=checked: c())
        for exp in ("seed-unbounded-growth", "seed-oscillating-reader", "collapse-tradeoff"):
            run(load_scenario(exp), RunOptions(duration=2 * 10**9, engine="python"))
    assert seen.get("select_window", 0) > 100
