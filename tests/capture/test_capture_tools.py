"""`tcpsim capture` on a machine without the programs a capture runs: one error line naming
them and their packages, not a FileNotFoundError traceback from the first `ethtool` (#18)."""

from __future__ import annotations

import os

import pytest

from tcpsim.cli import main


def _capture(monkeypatch, capsys, path: str, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setenv("PATH", path)
    with pytest.raises(SystemExit) as exc:
        main(["capture", "seed-never-reads", "-d", "1s", *args])
    return exc.value.code, capsys.readouterr().err


def test_capture_without_its_tools_names_them(tmp_path, monkeypatch, capsys):
    code, err = _capture(monkeypatch, capsys, str(tmp_path))
    lines = [line for line in err.splitlines() if line.startswith("tcpsim: error:")]
    assert code == 2 and len(lines) == 1, err
    assert "ip, tc, ethtool, tcpdump, sysctl" in lines[0] and "apt-get install iproute2" in lines[0]


def test_capture_without_only_ethtool_names_ethtool(tmp_path, monkeypatch, capsys):
    from tcpsim.capture.netns import CAPTURE_TOOLS
    for tool in CAPTURE_TOOLS:
        if tool != "ethtool":
            (tmp_path / tool).symlink_to("/bin/true")
    code, err = _capture(monkeypatch, capsys, str(tmp_path))
    assert code == 2 and "tcpsim: error: capture needs ethtool on PATH" in err, err
