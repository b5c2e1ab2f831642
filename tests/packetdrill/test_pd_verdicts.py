"""`tcpsim packetdrill` against the known real-kernel results, per kernel release.

The scripts are third-party (GPL) and read from ../shared/peer-tests/packetdrill at run time;
the layouts a user brings (a kernel tree, a google/packetdrill checkout) are built in tmp_path
from symbolic links to them, never copies in the repository.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcpsim.packetdrill.command import run_paths
from tcpsim.packetdrill.corpus import DEFAULT_CORPUS, kernel_results
from tcpsim.packetdrill.verdicts import (
    Unknown, Verdict, known_scripts, known_verdict, script_key, search_root,
)

CORPUS = DEFAULT_CORPUS
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no packetdrill corpus at {CORPUS}")


def _run(*args, **kw) -> tuple[int, list[str]]:
    out: list[str] = []
    status = run_paths(*args, echo=out.append, **kw)
    return status, "\n".join(out).splitlines()


# -- the table -----------------------------------------------------------------------------

def test_ranges_give_verdicts_only_inside_the_tree():
    assert known_verdict("tcp_rcv_wnd_shrink_allowed", "7.1") == Verdict(
        True, None, "ships in 7.1's selftests, which pass on it")
    before = known_verdict("tcp_rcv_wnd_shrink_allowed", "7.0")
    assert isinstance(before, Unknown) and "added in 7.1" in before.reason
    gone = known_verdict("tcp_rcv_toobig", "7.1")
    assert isinstance(gone, Unknown) and "removed in 7.0" in gone.reason
    assert known_verdict("tcp_rcv_toobig", "6.18.0").passed          # in tree, before the revert
    inferred = known_verdict("tcp_rcv_toobig", "6.19")               # 6.19.7 took the revert
    assert isinstance(inferred, Verdict) and inferred.line == 32 and "inferred" in inferred.basis
    assert isinstance(known_verdict("google gro/gro-mss-option", "7.1"), Unknown)


@needs_corpus
def test_the_measured_table_is_the_corpus_readme():
    """The shipped 6.18 verdicts restate the corpus README's measured table exactly."""
    readme = kernel_results(CORPUS)
    assert readme
    for path, row in readme.items():
        key = script_key(CORPUS, CORPUS / path)
        assert key is not None, path
        v = known_verdict(key, "6.18")
        assert isinstance(v, Verdict)
        assert (v.passed, v.line) == (row.passed, None if row.passed else row.line), path
    assert len(readme) == len(known_scripts()) == 25


# -- finding the scripts -------------------------------------------------------------------

def _link_tree(root: Path, files: list[Path]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for f in files:
        (root / f.name).symlink_to(f)


@needs_corpus
def test_a_kernel_tree_unpatched_agrees_and_other_scripts_are_skipped(tmp_path):
    ksrc = CORPUS / "kernel-selftests"
    pd = tmp_path / "linux" / "tools/testing/selftests/net/packetdrill"
    _link_tree(pd, sorted(ksrc.glob("*.pkt")) + sorted(ksrc.glob("*.sh")) + sorted(ksrc.glob("*.py")))
    (pd / "tcp_fastopen_client.pkt").write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n")
    status, lines = _run([tmp_path / "linux"], "linux-6.18")
    assert status == 0
    assert "agrees with 6.18: 15/15" in lines[-1]
    assert any("1 other script skipped" in ln for ln in lines)
    assert not any("tcp_fastopen_client" in ln for ln in lines)
    assert lines[0].startswith("PASS tcp_blocking_blocking-read.pkt   [6.18: PASS -- agrees]")


@needs_corpus
def test_the_corpus_agrees_with_6_18_on_every_script():
    status, lines = _run([CORPUS], "linux-6.18")
    assert status == 0
    assert any(ln.startswith("agrees with 6.18: 25/25 ") for ln in lines)


@needs_corpus
def test_a_google_checkout_is_searched_under_gtests(tmp_path):
    g = tmp_path / "packetdrill" / "gtests" / "net" / "tcp" / "gro"
    _link_tree(g, [CORPUS / "google-gtests/gro/gro-mss-option.pkt"])
    common = tmp_path / "packetdrill" / "gtests" / "net" / "common"
    _link_tree(common, [CORPUS / "google-gtests/common/defaults.sh"])
    assert search_root(tmp_path / "packetdrill") == tmp_path / "packetdrill" / "gtests"
    status, lines = _run([tmp_path / "packetdrill"], "linux-6.18")
    assert lines[0].startswith("FAIL net/tcp/gro/gro-mss-option.pkt   [6.18: FAIL at line 20")
    assert status == 0 and "agrees with 6.18: 1/1" in lines[-1]


# -- per release, and what a patch changes -----------------------------------------------

@needs_corpus
def test_7_1_agrees_with_7_1_and_leaves_out_the_removed_script():
    status, lines = _run([CORPUS], "linux-7.1")
    assert status == 0
    assert any(ln.startswith("agrees with 7.1: 14/14 ") for ln in lines)
    toobig = next(ln for ln in lines if "kernel-selftests/tcp_rcv_toobig.pkt" in ln)
    assert "not in 7.1's tree (removed in 7.0)" in toobig
    shrink = next(ln for ln in lines if "tcp_rcv_wnd_shrink_nomem.pkt" in ln)
    assert shrink.startswith("PASS") and "[7.1: PASS -- agrees]" in shrink


@needs_corpus
def test_6_18_would_not_agree_with_7_1():
    """The same scripts under the 6.18 era miss 7.1's retraction: the range table is what
    tells the two apart."""
    status, lines = _run([CORPUS / "kernel-selftests/tcp_rcv_wnd_shrink_allowed.pkt"], "linux-6.18")
    assert status == 0 and "[6.18: FAIL at line 37 -- agrees]" in lines[0]


@needs_corpus
def test_baseline_lists_exactly_the_verdicts_a_patch_changes():
    status, lines = _run([CORPUS], "linux-6.18", ["rfc7323-retraction"], baseline="linux-6.18")
    assert status == 1                       # the patched kernel no longer agrees with 6.18
    start = lines.index("against linux-6.18: 2 verdicts change")
    assert lines[start + 1:start + 3] == [
        "  kernel-selftests/tcp_rcv_wnd_shrink_allowed.pkt: FAIL at line 37 -> PASS; "
        "6.18: FAIL at line 37",
        "  kernel-selftests/tcp_rcv_wnd_shrink_nomem.pkt: FAIL at line 80 -> PASS; "
        "6.18: FAIL at line 80"]
    assert lines[start + 3] == ("  linux-6.18 agrees with 6.18: 25/25; "
                                "linux-6.18+rfc7323-retraction: 23/25")


@needs_corpus
def test_the_json_document_carries_kernel_verdicts_and_the_baseline():
    out: list[str] = []
    run_paths([CORPUS / "kernel-selftests"], "linux-6.18", ["rfc7323-retraction"], True,
              out.append, baseline="linux-6.18")
    doc = json.loads(out[0])
    assert doc["release"] == "6.18" and doc["agreement"]["known"] == 20
    assert doc["baseline"]["changed"] == ["tcp_rcv_wnd_shrink_allowed.pkt",
                                          "tcp_rcv_wnd_shrink_nomem.pkt"]
    row = next(r for r in doc["results"] if r["name"] == "tcp_rcv_toobig.pkt")
    assert row["kernel"]["line"] == 32 and row["kernel"]["agrees"] is True
    assert row["baseline"] == {"verdict": "FAIL", "line": 32}


@needs_corpus
def test_the_cli_takes_baseline(capsys):
    from harness import cli
    code, out, err = cli(capsys, "packetdrill", str(CORPUS / "kernel-selftests"), "-p", "linux-7.0",
                         "--baseline", "linux-6.18")
    assert code == 0 and err == ""
    assert "agrees with 7.0: 11/11 " in out
    assert "against linux-6.18: no verdict changes" in out


def test_a_bad_baseline_profile_is_one_error_line(tmp_path):
    (tmp_path / "a.pkt").write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n")
    errors: list[str] = []
    assert run_paths([tmp_path], "linux-6.18", [], False, print, error=errors.append,
                     baseline="linux-0.1") == 2
    assert len(errors) == 1 and errors[0].startswith("tcpsim: error: unknown profile 'linux-0.1'")
