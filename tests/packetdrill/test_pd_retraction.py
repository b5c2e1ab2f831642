"""The RFC 7323 retraction patch makes the two post-6.18 shrink selftests pass.

tcp_rcv_wnd_shrink_allowed / tcp_rcv_wnd_shrink_nomem come with Simon Baatz's 2026 series;
the real 6.18.44 kernel fails them (corpus README), and so does plain linux-6.18 here.
"""

from pathlib import Path

import pytest

from tcpsim.packetdrill.interpreter import run_file

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "peer-tests" / "packetdrill"
SCRIPTS = ("kernel-selftests/tcp_rcv_wnd_shrink_allowed.pkt",
           "kernel-selftests/tcp_rcv_wnd_shrink_nomem.pkt")


@pytest.mark.parametrize("script", SCRIPTS)
def test_shrink_scripts_pass_with_the_retraction_patch(script):
    if not (CORPUS / script).is_file():
        pytest.skip("packetdrill corpus not found at ../shared/peer-tests/packetdrill")
    plain = run_file(CORPUS / script, "linux-6.18", name=script)
    patched = run_file(CORPUS / script, "linux-6.18", ("rfc7323-retraction",), name=script)
    assert not plain.passed
    assert patched.passed, patched.message
