"""tcpsim.cli.entry (the console script, `python -m tcpsim.cli`) ends the process without the
interpreter's teardown, but loses nothing: output, exit status, exit handlers, threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = str(ROOT / "benchmarks" / "targets" / "c.toml")


def _entry(setup: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    code = (f"import atexit, sys, threading, time\n{setup}\n"
            f"sys.argv = ['tcpsim', *{args!r}]\n"
            "from tcpsim.cli import entry\nentry()\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as users run it
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env=env)


def test_output_is_complete_and_exit_handlers_run() -> None:
    proc = _entry("atexit.register(print, 'handler ran')", ["run", SCENARIO, "-d", "1s", "--json"])
    assert proc.returncode == 0, proc.stderr
    body, _, last = proc.stdout.rstrip("\n").rpartition("\n")
    assert last == "handler ran"
    assert json.loads(body)["summary"]["packets"] > 0


def test_the_exit_status_is_the_commands() -> None:
    proc = _entry("", ["run", SCENARIO, "--seed", "abc"])
    assert proc.returncode == 2
    assert proc.stderr.startswith("tcpsim: error: run: invalid value for '--seed'")
    assert _entry("", ["profiles"]).returncode == 0


def test_a_thread_still_running_is_waited_for() -> None:
    """A thread that ends after the command (it waits for main() to return) still ends."""
    setup = ("import tcpsim.cli\nreturned = threading.Event()\ncommand = tcpsim.cli.main\n"
             "def main():\n    try:\n        command()\n    finally:\n        returned.set()\n"
             "tcpsim.cli.main = main\n"
             "def late():\n    returned.wait()\n    time.sleep(0.2)\n"
             "    print('thread done', flush=True)\n"
             "threading.Thread(target=late).start()")
    proc = _entry(setup, ["profiles"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("thread done")
