"""The policy interface: one declaration of every decision point, and the patch loader's checks.

Every era and patch in models/ defines only declared points with the declared parameters;
`profiles show` attributes every override to the class that makes it; a patch file with a
misspelt method, a wrong signature, a patch given twice or a patch that raises ends in one
`tcpsim: error:` line (exit 2) through the real entry point.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from pathlib import Path

import pytest

from tcpsim.cli import main
from harness import cli
from tcpsim.core.mib import COUNTERS, Mib
from tcpsim.core.sysctl import Sysctls
from tcpsim.models.linux_5_15 import Linux515
from tcpsim.policy import (
    DECISION_POINTS, PATCH_ATTRIBUTES, POINTS, Kind, KernelPolicy, Patch, own_classes, overrides,
)
from tcpsim.catalog import builtin_patches, builtin_profiles, get_profile

ROOT = Path(__file__).resolve().parent.parent
PROFILES = list(builtin_profiles())


def one_error_line(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcpsim: error: "), err
    return lines[0]


def _public(klass: type) -> set[str]:
    return {n for n in vars(klass) if not n.startswith("_")}


# -- the declaration -------------------------------------------------------------------------


def test_every_point_has_a_kind_a_kernel_function_and_a_signature():
    assert len(DECISION_POINTS) == len(set(DECISION_POINTS)) == len(POINTS)
    for point in POINTS.values():
        assert re.search(r"\w+\.(c|h|h:\w+)?|Makefile", point.models), point
        assert ":" in point.models, point.name
        assert point.summary and point.signature
        if point.kind is Kind.PROCEDURE:
            assert point.signature.endswith("-> None"), point.name
        if point.kind is Kind.DECISION:
            assert not point.signature.endswith("-> None"), point.name
            assert point.params, point.name


def test_linux515_implements_every_point_in_its_own_body():
    assert not Linux515.__abstractmethods__
    missing = [p for p in DECISION_POINTS if p not in vars(Linux515)]
    assert missing == []
    Linux515()


@pytest.mark.parametrize("name", PROFILES)
def test_every_public_name_of_an_era_is_a_declared_point_with_its_parameters(name):
    for klass in own_classes(builtin_profiles()[name].kernel):
        assert _public(klass) <= set(POINTS), (klass, _public(klass) - set(POINTS))
        for attr in _public(klass):
            point = POINTS[attr]
            value = vars(klass)[attr]
            assert callable(value) == point.is_method, attr
            if point.is_method:
                params = tuple(inspect.signature(value).parameters)[1:]
                assert params == point.params, (klass, attr, params)


@pytest.mark.parametrize("name", builtin_patches())
def test_every_public_method_of_a_patch_is_a_declared_point(name):
    for klass in own_classes(builtin_patches()[name], object):
        for attr, value in vars(klass).items():
            if attr.startswith("_") or attr in PATCH_ATTRIBUTES:
                continue
            if callable(value):
                assert POINTS[attr].params == tuple(inspect.signature(value).parameters)[1:]


def test_the_core_calls_only_declared_points():
    called = set()
    for path in (ROOT / "tcpsim" / "core").glob("*.py"):
        called |= set(re.findall(r"\bself\.k\.(\w+)", path.read_text()))
    assert called and called <= set(DECISION_POINTS), called - set(DECISION_POINTS)


# -- profiles show and the docs ---------------------------------------------------------------


def _show(capsys, *args: str) -> dict[str, tuple[str, bool]]:
    code, out, err = cli(capsys, "profiles", "show", *args)
    assert code == 0, err
    rows = {}
    for line in out.splitlines():
        m = re.match(r"  (\w+)\s+(decision|procedure|constant)\s+(\S+)( \*)?", line)
        if m:
            rows[m[1]] = (m[3], bool(m[4]))
    return rows


@pytest.mark.parametrize("name", PROFILES)
def test_profiles_show_attributes_every_override_to_the_class_that_makes_it(capsys, name):
    rows = _show(capsys, name)
    assert list(rows) == list(DECISION_POINTS)
    kernel = builtin_profiles()[name].kernel
    for klass in own_classes(kernel):
        shown = {p for p, (owner, _) in rows.items() if owner == klass.__qualname__}
        assert shown == _public(klass), (klass, shown ^ _public(klass))
    starred = {p for p, (_, star) in rows.items() if star}
    assert starred == set(overrides(kernel)) or name == "linux-5.15"


def test_profiles_show_linux66_lists_its_six_hidden_hooks(capsys):
    rows = _show(capsys, "linux-6.6")
    for hook in ("on_rcv_mss_change", "on_scaling_ratio_change", "grow_under_pressure",
                 "nomem_window", "ofo_prune_done", "grow_rcvbuf"):
        assert rows[hook] == ("Linux66", True), hook


def test_profiles_show_with_a_patch_names_the_patch(capsys):
    rows = _show(capsys, "linux-6.1", "--policy", "collapse-max-bytes")
    assert rows["collapse"] == ("CollapseMaxBytes", True)
    assert rows["win_from_space"] == ("Linux515", False)


# -- patch loading: one line per problem ------------------------------------------------------


def _patch_file(tmp_path: Path, body: str) -> Path:
    f = tmp_path / "my_patch.py"
    f.write_text(textwrap.dedent(body))
    return f


RUN = ("run", "seed-never-reads", "-d", "1s", "--no-progress")


def test_a_misspelt_method_names_the_nearest_decision_point(tmp_path, capsys):
    f = _patch_file(tmp_path, """
        class AlwaysShrink:
            def shrink_alowed(self, sk):
                return True
    """)
    line = one_error_line(*cli(capsys, *RUN, "--policy", f"{f}:AlwaysShrink")[::2])
    assert "AlwaysShrink.shrink_alowed is not a decision point" in line
    assert "did you mean shrink_allowed?" in line and str(f) in line


def test_a_misspelt_constant_is_refused(tmp_path, capsys):
    f = _patch_file(tmp_path, """
        class Interactive:
            PINGPONG_TRESH = 1
    """)
    line = one_error_line(*cli(capsys, *RUN, "--policy", f"{f}:Interactive")[::2])
    assert "PINGPONG_TRESH is not a constant" in line and "did you mean PINGPONG_THRESH?" in line


def test_a_wrong_signature_names_patch_method_and_expected_signature(tmp_path, capsys):
    f = _patch_file(tmp_path, """
        class Wide:
            def win_from_space(self, sk):
                return 0
    """)
    line = one_error_line(*cli(capsys, *RUN, "--policy", f"{f}:Wide")[::2])
    assert f"{f}:Wide" in line and "Wide.win_from_space takes (sk)" in line
    assert "win_from_space(sk: TcpSocket, space: int) -> int" in line


@pytest.mark.parametrize("args", [
    (*RUN, "--policy", "shrink-window", "--policy", "shrink-window"),
    ("compare", "seed-never-reads", "-d", "1s", "--profile", "linux-6.1", "--policy",
     "shrink-window", "--policy", "shrink-window", "--vs", "linux-6.6"),
    ("sweep", "seed-never-reads", "-d", "1s", "-x", "policy=none,initrwnd+initrwnd"),
])
def test_the_same_patch_twice_is_one_error_line(capsys, args):
    line = one_error_line(*cli(capsys, *args)[::2])
    assert "is given twice" in line


def test_the_same_patch_file_twice_is_one_error_line(tmp_path, capsys):
    f = _patch_file(tmp_path, """
        class AlwaysShrink:
            def shrink_allowed(self, sk):
                return True
    """)
    spec = f"{f}:AlwaysShrink"
    line = one_error_line(*cli(capsys, *RUN, "--policy", spec, "--policy", spec)[::2])
    assert "is given twice" in line


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_patch_that_raises_is_one_line_and_debug_shows_the_traceback(tmp_path, capsys, engine):
    from tcpsim.engines import native_available
    if engine == "native" and not native_available():
        pytest.skip("tcpsim._native is not built")
    f = _patch_file(tmp_path, """
        class Broken:
            name = "broken"
            def shrink_allowed(self, sk):
                return 1 // 0
    """)
    run = (*RUN, "--engine", engine)
    line = one_error_line(*cli(capsys, *run, "--policy", f"{f}:Broken")[::2])
    assert line == (f"tcpsim: error: patch {f}:Broken failed in decision point shrink_allowed "
                    f"at {f}:5: ZeroDivisionError: integer division or modulo by zero "
                    "(--debug shows the traceback)")
    with pytest.raises(ZeroDivisionError):
        main([*run, "--policy", f"{f}:Broken", "--debug"])


def test_an_error_of_the_kernel_below_a_patch_names_both_places(tmp_path, capsys):
    f = _patch_file(tmp_path, """
        class Confused:
            def select_window(self, sk):
                return super().select_window(None)
    """)
    line = one_error_line(*cli(capsys, *RUN, "--engine", "python",
                               "--policy", f"{f}:Confused")[::2])
    assert f"{f}:4" in line and "raised at" in line and "linux_5_15.py" in line


def test_a_wrong_answer_names_the_patch_point_and_value_on_either_engine(tmp_path, capsys):
    """Neither kernel takes None for a window: the same line on both engines, naming the
    patch, the point, the value and what the point takes (tcpsim/answers.py)."""
    from tcpsim.engines import native_available
    f = _patch_file(tmp_path, """
        class Wrong:
            def select_window(self, sk):
                return None
    """)
    want = (f"tcpsim: error: patch {f}:Wrong failed in decision point select_window "
            f"at {f}:3: it returned None (NoneType) where the kernel takes an int in "
            "[0, 2**31) (a window) (--debug shows the traceback)")
    for engine in ("python", *(["native"] if native_available() else [])):
        line = one_error_line(*cli(capsys, *RUN, "--engine", engine,
                                   "--policy", f"{f}:Wrong")[::2])
        assert line == want, engine


def test_a_kernel_class_is_not_a_patch(tmp_path, capsys):
    f = _patch_file(tmp_path, """
        from tcpsim.models.linux_6_6 import Linux66
        class Mine(Linux66):
            pass
    """)
    line = one_error_line(*cli(capsys, *RUN, "--policy", f"{f}:Mine")[::2])
    assert "Mine subclasses the kernel class Linux66" in line


def test_the_readme_patch_example_runs(tmp_path, capsys):
    block = re.search(r"```python\n(# my_patch.py.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert block, "README: the patch example moved"
    f = tmp_path / "x.py"
    f.write_text(block[1])
    code, out, err = cli(capsys, *RUN, "--policy", f"{f}:AlwaysShrink")
    assert code == 0, err
    assert "always-shrink" in out


# -- sysctls and counters a patch declares ------------------------------------------------------


def test_the_core_knows_neither_the_collapse_sysctl_nor_its_counter():
    assert "tcp_collapse_max_bytes" not in {f for f in Sysctls.__dataclass_fields__}
    assert "TCPCollapseMaxBytesExceeded" not in COUNTERS
    assert "net.ipv4.tcp_collapse_max_bytes" not in get_profile("linux-6.1").default_sysctls().as_dict()


def test_a_patch_sysctl_is_refused_without_its_patch(capsys):
    line = one_error_line(*cli(capsys, *RUN, "-s", "net.ipv4.tcp_collapse_max_bytes=1000")[::2])
    assert "does not exist on linux-6.1" in line and "--policy collapse-max-bytes" in line


def test_a_patch_sysctl_is_validated_by_its_declaration(capsys):
    line = one_error_line(*cli(capsys, *RUN, "--policy", "collapse-max-bytes",
                               "-s", "net.ipv4.tcp_collapse_max_bytes=-1")[::2])
    assert "out of range" in line and "0..2147483647" in line


def test_a_patch_sysctl_and_counter_show_up_under_their_names(capsys):
    import json
    code, out, err = cli(capsys, "run", "collapse-tradeoff", "-d", "1s", "--no-progress", "--json",
                         "--policy", "collapse-max-bytes",
                         "-s", "net.ipv4.tcp_collapse_max_bytes=1000")
    assert code == 0, err
    assert "TcpExtTCPCollapseMaxBytesExceeded" in json.loads(out)["counters"]
    profile = get_profile("linux-6.1", ["collapse-max-bytes"])
    s = profile.default_sysctls()
    assert s.tcp_collapse_max_bytes == 6 << 20
    s = s.with_overrides({"net.ipv4.tcp_collapse_max_bytes": 1000}, known=profile.known_sysctls())
    assert s.tcp_collapse_max_bytes == 1000
    assert s.as_dict()["net.ipv4.tcp_collapse_max_bytes"] == 1000
    code, out, err = cli(capsys, "run", "collapse-tradeoff", "-d", "1s", "--no-progress", "--json")
    assert "TcpExtTCPCollapseMaxBytesExceeded" not in json.loads(out)["counters"]


def test_a_declared_patch_counter_reads_zero_and_a_typo_raises():
    class Counting(Patch):
        name = "counting-test"
        counters = {"TCPTestCounted": "a counter only this test declares"}

    mib = Mib()
    assert mib.TCPTestCounted == 0
    mib.TCPTestCounted += 2
    assert mib.as_nstat(("TCPTestCounted",))["TcpExtTCPTestCounted"] == 2
    assert Mib().as_nstat(("TCPTestCounted",))["TcpExtTCPTestCounted"] == 0
    with pytest.raises(AttributeError, match="no MIB counter TCPTestCountd"):
        mib.TCPTestCountd += 1
    assert issubclass(Counting, Patch) and not issubclass(Counting, KernelPolicy)


def test_a_plain_class_patch_declares_its_own_sysctl_and_counter(tmp_path, capsys):
    import json
    f = _patch_file(tmp_path, """
        from tcpsim.core.sysctl import SysctlSpec
        class Counting:
            name = "counting"
            counters = {"TCPShrinkAskedTest": "shrink_allowed() calls"}
            new_sysctls = (SysctlSpec("tcp_counting_knob_test", default=7),)
            def shrink_allowed(self, sk):
                sk.mib.TCPShrinkAskedTest += 1
                return sk.sysctl.tcp_counting_knob_test == 8
    """)
    code, out, err = cli(capsys, *RUN, "--json", "--policy", f"{f}:Counting",
                         "-s", "net.ipv4.tcp_counting_knob_test=8")
    assert code == 0, err
    assert json.loads(out)["counters"]["TcpExtTCPShrinkAskedTest"] > 0


def test_a_patch_may_not_redeclare_a_core_counter(tmp_path, capsys):
    f = _patch_file(tmp_path, """
        class Again:
            counters = {"PruneCalled": "again"}
    """)
    line = one_error_line(*cli(capsys, *RUN, "--policy", f"{f}:Again")[::2])
    assert "PruneCalled is already a core counter" in line


def test_the_interface_and_the_loader_are_mypy_strict_clean():
    pytest.importorskip("mypy")
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
                           "--no-incremental", "tcpsim/policy.py", "tcpsim/catalog.py"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# -- a patch file named without its class; the rules the docs state (issue 33) ----------------

def _write_patch(tmp_path, body: str):
    path = tmp_path / f"p{abs(hash(body))}.py"
    path.write_text(body)
    return str(path)


def test_a_file_with_one_patch_class_needs_no_class_name(tmp_path):
    from tcpsim.catalog import get_patch
    path = _write_patch(tmp_path, "import math\nclass _Helper:\n    pass\n"
                                 "class Only:\n    name = 'only'\n"
                                 "    def shrink_allowed(self, sk):\n        return True\n")
    assert get_patch(path).__name__ == "Only"


def test_a_file_with_several_or_no_patch_classes_is_refused_naming_the_fix(tmp_path):
    from tcpsim.catalog import ProfileError, get_patch
    two = _write_patch(tmp_path, "class A:\n    def shrink_allowed(self, sk):\n        return True\n"
                                "class B:\n    def shrink_allowed(self, sk):\n        return False\n")
    with pytest.raises(ProfileError, match=r"defines 2 patch classes; name one: .*:A, .*:B"):
        get_patch(two)
    none = _write_patch(tmp_path, "class A:\n    MY_LIMIT = 3\n")
    with pytest.raises(ProfileError, match=r"defines no patch class .*A.MY_LIMIT is not a constant"):
        get_patch(none)


def test_every_rule_the_loader_enforces_is_stated_in_the_patch_docs():
    from pathlib import Path
    doc = (Path(__file__).resolve().parent.parent / "docs" / "writing-a-patch.md").read_text()
    section = doc.split("## What the loader checks")[1].split("\n## ")[0]
    for phrase in ("must not subclass a kernel era", "must be a declared decision point",
                   "exactly its\n  declared parameters", "Upper-case attributes are the era's constants",
                   "`MY_LIMIT = 3` is", "`counters` is a dict", "counters that are new",
                   "`new_sysctls` a tuple", "A patch given twice is refused",
                   "cannot be combined", "`FILE.py` alone must define\n  exactly one class"):
        assert phrase in section, phrase
    # and each rule is one the loader does enforce
    from tcpsim.catalog import ProfileError, check_patch
    from tcpsim.models.linux_6_1 import Linux61

    class Kernel(Linux61):
        pass

    class Upper:
        MY_LIMIT = 3

    class Method:
        def helper(self):
            return 1

    class Params:
        def shrink_allowed(self, sk, extra):
            return True

    class Counters:
        counters = {"TCPRcvCoalesce": "x"}

    class Sysctls:
        new_sysctls = ["tcp_x"]

    for cls, words in ((Kernel, "subclasses the kernel class"), (Upper, "is not a constant"),
                       (Method, "is not a decision point"), (Params, "the decision point is"),
                       (Counters, "must be new"), (Sysctls, "new_sysctls must be a tuple")):
        with pytest.raises(ProfileError, match=words):
            check_patch(cls)
