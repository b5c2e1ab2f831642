"""Every corpus script, run by the interpreter under linux-6.18, against the real kernel.

The corpus README records what packetdrill reported on the development machines' kernel
(Linux 6.18.44). A script *agrees* when the model gives the same verdict and, if both fail,
fails at the same line. Scripts where the model does not agree yet are marked
xfail(strict=False) with the diagnosis from docs/packetdrill-results.md, so the suite stays
green while the table of agreement stays visible (`-rxX` lists them; an XPASS means a core
fix made a script agree). The expectations themselves are read from the README at run time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tcpsim.packetdrill.corpus import compare, kernel_results
from tcpsim.packetdrill.interpreter import run_file

PROFILE = "linux-6.18"
CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "peer-tests" / "packetdrill"

# Scripts the model does not agree on yet: corpus path -> the core/model fix it needs.
# (docs/packetdrill-results.md, "Proposed fixes", has the evidence and a tested diff.)
KNOWN_DISAGREEMENTS: dict[str, str] = {
    # none today: every corpus script agrees with the real 6.18.44 kernel
}


def _cases():
    if not CORPUS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"packetdrill corpus not found at {CORPUS} (third-party, outside "
                   "the repo: ../shared/peer-tests/packetdrill)"), id="no-corpus")]
    cases = []
    for path in sorted(CORPUS.rglob("*.pkt")):
        rel = str(path.relative_to(CORPUS))
        marks = []
        if rel in KNOWN_DISAGREEMENTS:
            marks.append(pytest.mark.xfail(reason=KNOWN_DISAGREEMENTS[rel], strict=False))
        cases.append(pytest.param(rel, marks=marks, id=rel))
    return cases


@pytest.mark.parametrize("script", _cases())
def test_model_agrees_with_the_real_kernel(script):
    kernel = kernel_results(CORPUS).get(script)
    if kernel is None:
        pytest.skip(f"the corpus README records no real-kernel result for {script}")
    result = run_file(CORPUS / script, PROFILE, name=script)
    assert result.kind not in ("unsupported", "syntax", "internal"), result.message
    comparison = compare(script, result, kernel)
    assert comparison.agrees, (f"{comparison.summary}\n  model:  {result.message or 'PASS'}"
                               f"\n  kernel: {kernel.failure or 'PASS'}")


def test_known_disagreements_are_corpus_scripts():
    """The xfail list names real files (a renamed script must not hide behind it)."""
    if not CORPUS.is_dir():
        pytest.skip("packetdrill corpus not found")
    missing = [s for s in KNOWN_DISAGREEMENTS if not (CORPUS / s).is_file()]
    assert not missing


def test_every_recorded_script_exists():
    """Each README row maps to a corpus file, so no real-kernel result goes unchecked."""
    if not CORPUS.is_dir():
        pytest.skip("packetdrill corpus not found")
    rows = kernel_results(CORPUS)
    assert rows, "no results table found in the corpus README"
    assert [r for r in rows if not (CORPUS / r).is_file()] == []
