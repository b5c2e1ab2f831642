"""Progress of work made of several steps (the runs of `tcpsim compare`, the claims of
`tcpsim claims`) on stderr, so long work is never silent.

On a terminal every step gets a line as it starts; otherwise (a log, a CI job) a plain line
at most every `every_s` seconds, and none at all for work quicker than that."""

from __future__ import annotations

import sys
import time
from typing import Callable, TextIO


class StepProgress:
    """`start(i, total, label)` before step i (1-based) of `total`: "WHAT: i/total LABEL" on
    stderr when due (see the module docstring)."""

    def __init__(self, what: str, stream: TextIO | None = None, every_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what, self.every_s, self.clock = what, every_s, clock
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.last = clock()

    def start(self, i: int, total: int, label: str) -> None:
        now = self.clock()
        if not self.tty and now - self.last < self.every_s:
            return
        self.last = now
        self.stream.write(f"{self.what}: {i}/{total} {label}\n")
        self.stream.flush()
