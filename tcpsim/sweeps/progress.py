"""A sweep's progress on stderr: a rich progress bar on a terminal (points done/total,
failures, ETA), a plain line every few seconds otherwise, and a closing summary."""

from __future__ import annotations

import sys
import time
from typing import IO, Any

PLAIN_EVERY_S = 5.0


def fmt_duration(seconds: float) -> str:
    """12.3 s, 4m05s, 2h03m."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    m, s = divmod(int(round(seconds)), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


class Progress:
    """Counts points as they finish and shows it. `resumed` points were found on disk."""

    def __init__(self, total: int, resumed: int, stream: IO[str] | None = None,
                 enabled: bool = True, fancy: bool | None = None) -> None:
        self.total, self.resumed = total, resumed
        self.ran = self.failed = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.fancy = self.stream.isatty() if fancy is None else fancy
        self.start = time.monotonic()
        self._last_plain = self.start
        self._bar: Any = None
        self._task: Any = None

    @property
    def done(self) -> int:
        return self.resumed + self.ran

    def eta(self) -> float | None:
        """Seconds left at the rate of the points run so far (None before the first)."""
        if not self.ran:
            return None
        return (time.monotonic() - self.start) / self.ran * (self.total - self.done)

    def __enter__(self) -> "Progress":
        if self.enabled and self.fancy:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar,
                                       TextColumn, TimeElapsedColumn, TimeRemainingColumn)
            self._bar = Bar(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("points  [red]{task.fields[failed]} failed"),
                            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                            console=Console(file=self.stream), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("sweep", total=self.total, completed=self.resumed,
                                            failed=0)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def point_done(self, failed: bool) -> None:
        self.ran += 1
        self.failed += failed
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed)
            return
        now = time.monotonic()
        if now - self._last_plain >= PLAIN_EVERY_S:
            self._last_plain = now
            self._write(self.line())

    def line(self) -> str:
        eta = self.eta()
        return (f"sweep: {self.done}/{self.total} points, {self.failed} failed"
                + (f", ETA {fmt_duration(eta)}" if eta is not None and self.done < self.total else ""))

    def summary(self, where: str = "") -> str:
        """The closing line."""
        wall = time.monotonic() - self.start
        return (f"sweep: {self.done}/{self.total} points in {fmt_duration(wall)}: {self.ran} run, "
                f"{self.resumed} already done, {self.failed} failed" + (f"; {where}" if where else ""))

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
