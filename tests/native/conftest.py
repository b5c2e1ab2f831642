"""The native engine's tests: `native` is the extension module tcpsim._native.

Without the extension the tests skip, saying how to build it -- except under CI (the
environment variable CI set, as .ci/run runs), where a missing extension is a failure: the
build is part of what CI checks.
"""

import os

import pytest


@pytest.fixture(scope="session")
def native():
    try:
        import tcpsim._native as mod
    except ImportError as exc:
        msg = (f"tcpsim._native is not built ({exc}); build it with `python3 -m pip install -e .` "
               "(or `python3 -m pip install .` from this checkout)")
        if os.environ.get("CI"):
            pytest.fail(f"{msg} -- CI is set, and CI must test the native engine")
        pytest.skip(msg)
    return mod
