"""A sweep's progress on stderr: a rich progress bar on a terminal (points done/total,
failures, ETA), a plain line every few seconds otherwise, and a closing summary.

The ETA comes from what the points cost, measured: each finished point's own wall time
(`wall_s` of its summary: the simulation alone, not the workers' start-up), divided among
the workers still busy; once more points have finished than there are workers, from the rate
at which points have been finishing since the first one did (start-up, imports and the
first batch's wait excluded). Points found stored on resume count as done and never into
the rate."""

from __future__ import annotations

import sys
import time
from typing import IO, Any, Callable

from tcpsim.units import fmt_duration

__all__ = ["Progress", "fmt_duration", "PLAIN_EVERY_S"]

PLAIN_EVERY_S = 5.0


class Progress:
    """Counts points as they finish and shows it. `resumed` points were found on disk;
    `workers` run points side by side; `clock` is time.monotonic (a test's fake clock)."""

    def __init__(self, total: int, resumed: int, stream: IO[str] | None = None,
                 enabled: bool = True, fancy: bool | None = None, workers: int = 1,
                 clock: Callable[[], float] | None = None) -> None:
        self.total, self.resumed = total, resumed
        self.ran = self.failed = 0
        self.workers = max(1, workers)
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.fancy = self.stream.isatty() if fancy is None else fancy
        self.clock = clock or (lambda: time.monotonic())
        self.start = self.clock()
        self._last_plain = self.start
        self._first_done: float | None = None
        self._last_done = self.start
        self._costs: list[float] = []
        self._estimate: float | None = None       # seconds left, as of the last point
        self._bar: Any = None
        self._task: Any = None

    @property
    def done(self) -> int:
        return self.resumed + self.ran

    def set_resumed(self, n: int) -> None:
        """`n` points were found stored: they count as done (the bar shows them)."""
        self.resumed = n
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)

    def eta(self) -> float | None:
        """Seconds left (None before the first point has finished): the estimate made when
        the last point finished (see the module docstring), counted down since."""
        if self._estimate is None:
            return None
        return max(0.0, self._estimate - (self.clock() - self._last_done))

    def _estimate_left(self, now: float) -> float | None:
        left = self.total - self.done
        if left <= 0:
            return 0.0
        if self.ran > self.workers and self._first_done is not None and now > self._first_done:
            rate = (self.ran - 1) / (now - self._first_done)      # points per second
            return left / rate
        if self._costs:
            cost = sum(self._costs) / len(self._costs)
        elif self.ran:
            cost = (now - self.start) / self.ran * min(self.workers, self.ran)
        else:
            return None
        busy = min(self.workers, left)
        return cost * left / busy

    def __enter__(self) -> "Progress":
        if self.enabled and self.fancy:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar,
                                       ProgressColumn, TextColumn, TimeElapsedColumn)
            from rich.text import Text
            me = self

            class EtaColumn(ProgressColumn):
                """Our ETA (measured point costs), not rich's (which would count the points
                found stored on resume as if they had just been run)."""

                def render(self, task: Any) -> Text:
                    eta = me.eta()
                    return Text("ETA " + ("-:--" if eta is None else fmt_duration(eta)))

            self._bar = Bar(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("points  [red]{task.fields[failed]} failed"),
                            TimeElapsedColumn(), EtaColumn(),
                            console=Console(file=self.stream), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("sweep", total=self.total, completed=self.resumed,
                                            failed=0)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def point_done(self, failed: bool, cost_s: float | None = None) -> None:
        """A point finished (run here, not found stored); `cost_s`: its measured wall time."""
        now = self.clock()
        self.ran += 1
        self.failed += failed
        if cost_s is not None and cost_s > 0:
            self._costs.append(float(cost_s))
        if self._first_done is None:
            self._first_done = now
        self._estimate = self._estimate_left(now)
        self._last_done = now
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, failed=self.failed)
            return
        if now - self._last_plain >= PLAIN_EVERY_S:
            self._last_plain = now
            self._write(self.line())

    def line(self) -> str:
        eta = self.eta()
        return (f"sweep: {self.done}/{self.total} points, {self.failed} failed"
                + (f", ETA {fmt_duration(eta)}" if eta is not None and self.done < self.total else ""))

    def summary(self, where: str = "") -> str:
        """The closing line."""
        wall = self.clock() - self.start
        return (f"sweep: {self.done}/{self.total} points in {fmt_duration(wall)}: {self.ran} run, "
                f"{self.resumed} already done, {self.failed} failed" + (f"; {where}" if where else ""))

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
