"""The console script's entry point, in-process, for tests of what a user sees."""

from __future__ import annotations

import sys

import pytest


def run_main(argv: list[str], monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`tcpsim ARGV` through tcpsim.cli.main: (exit status, stdout, stderr)."""
    from tcpsim.cli import main
    monkeypatch.setattr(sys, "argv", ["tcpsim", *argv])
    with pytest.raises(SystemExit) as e:
        main()
    out = capsys.readouterr()
    code = e.value.code
    return (0 if code is None else int(code)), out.out, out.err
