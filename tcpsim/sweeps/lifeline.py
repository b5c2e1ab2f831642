"""Worker processes die with the process that started them.

A sweep's pool workers (and the workers of the Dask cluster a sweep starts on this machine)
would outlive a parent killed by SIGKILL or the OOM killer -- orphans of ~100 MB, each still
running its point. `watch_parent()`, called in each worker as it starts, runs a thread that
looks at the parent's pid a few times a second and ends the worker as soon as the process has
been handed to another parent. A watchdog rather than prctl(PR_SET_PDEATHSIG): that signal
fires when the *thread* that forked the worker ends, and Dask starts its workers from
threads that come and go.
"""

from __future__ import annotations

import os
import signal
import threading
import time

PERIOD_S = 0.2
_watching: list[int] = []            # the parent pid watched by this process, once started


def watch_parent(parent: int | None = None, period: float = PERIOD_S) -> None:
    """Start (once per process) the thread that kills this process when `parent` (default:
    the parent now) is no longer its parent."""
    pid = os.getpid()
    if pid in _watching:
        return
    _watching.append(pid)
    expected = os.getppid() if parent is None else parent
    if os.getppid() != expected:        # already gone before the thread could start
        os.kill(pid, signal.SIGKILL)

    def watch() -> None:
        while True:
            time.sleep(period)
            if os.getppid() != expected:
                os.kill(pid, signal.SIGKILL)

    threading.Thread(target=watch, name="tcpsim-lifeline", daemon=True).start()
