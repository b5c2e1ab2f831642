"""Stopping a command cleanly on SIGINT (Ctrl-C) and SIGTERM.

Within `stoppable()` the first of those signals only *requests* a stop: the engines end the
run at their next event boundary they look at (the native engine between slices of events,
tcpsim/engine/native.py; the Python engine at its progress hook, tcpsim/engine/scheduler.py),
and return what the run made so far -- a RunResult marked `cut_short`, and its trace closed
(valid, the mark in its metadata). Commands that run many things (compare, claims, validate,
`run --runs`) call `check()` between them, which raises `Interrupted`; each prints one line
saying what it kept and exits with `exit_code()` (128 + the signal, as a shell reports it).
A second signal while the first is being honoured raises KeyboardInterrupt at once.

Commands whose work runs elsewhere (a sweep's worker processes) want the signal at once:
`signals_interrupt()` makes SIGTERM raise KeyboardInterrupt as SIGINT does, and the sweep's
own handling (tcpsim/sweeps/execute.py: cancel what is pending, keep what is stored) does
the rest. `tcpsim search` can use either: `stoppable()` and `check()` between candidates.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_state: dict[str, Any] = {"active": 0, "signal": None}


class Interrupted(Exception):
    """A stop was requested (by `signame`) and the work stopped between two steps."""

    def __init__(self, signame: str) -> None:
        super().__init__(f"interrupted by {signame}")
        self.signame = signame
        self.kept = "nothing kept"            # what the work stopped keeps, said by who knows


def active() -> bool:
    """Whether a `stoppable()` block is running: only then do the engines look for a stop."""
    return bool(_state["active"])


def requested() -> str | None:
    """The name of the signal that asked this process to stop ("SIGINT"), else None."""
    name: str | None = _state["signal"]
    return name


def check() -> None:
    """Raise Interrupted if a stop was requested (call it between steps of a command)."""
    name = requested()
    if name is not None:
        raise Interrupted(name)


def request(signame: str = "SIGINT") -> None:
    """Ask for a stop as the signal would (tests, and a caller with its own signal)."""
    _state["signal"] = signame


def exit_code(signame: str | None) -> int:
    """The exit status of a command stopped by `signame`: 128 + its number (130, 143)."""
    try:
        return 128 + int(signal.Signals[signame or "SIGINT"])
    except KeyError:
        return 130


def _handler(signum: int, frame: Any) -> None:
    if _state["signal"] is not None:          # asked twice: stop now
        raise KeyboardInterrupt
    _state["signal"] = signal.Signals(signum).name


@contextmanager
def stoppable() -> Iterator[None]:
    """Within: SIGINT and SIGTERM request a stop (see the module's docstring). Outside the
    main thread (where no handler can be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in SIGNALS}
    _state["signal"] = None
    _state["active"] += 1
    try:
        for s in SIGNALS:
            signal.signal(s, _handler)
        yield
    finally:
        _state["active"] -= 1
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        if not _state["active"]:
            _state["signal"] = None


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within: SIGTERM raises KeyboardInterrupt as SIGINT does (a sweep parent, whose work
    runs in other processes, stops waiting at once); the signal's name is kept for
    exit_code() (`requested()`)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in SIGNALS}

    def raise_now(signum: int, frame: Any) -> None:
        _state["signal"] = signal.Signals(signum).name
        raise KeyboardInterrupt

    _state["signal"] = None
    try:
        for s in SIGNALS:
            signal.signal(s, raise_now)
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
