"""Map TCP timestamp values between script space and the simulator, per connection.

packetdrill cannot predict the TS val clock of the stack under test, so it learns the
mapping from outbound packets: the first outbound packet that carries a TS option fixes a
baseline (script val <-> actual val), and every script val seen on an outbound packet is
remembered with the actual val it matched. It then

* maps an actual outbound TS val into script space as `first_script + (actual - first_actual)`
  before comparing (within `--tcp_ts_tick_usecs` x ticks of tolerance);
* maps the `ecr` of an inbound script packet to the actual val recorded for that script val,
  so the simulated stack sees its own clock echoed.
"""

from __future__ import annotations


class TimestampMap:
    """Script <-> actual TS val correspondence learned from outbound packets."""

    __slots__ = ("_exact", "_first")

    def __init__(self) -> None:
        self._exact: dict[int, int] = {}
        self._first: tuple[int, int] | None = None  # (script val, actual val)

    def record(self, script_val: int, actual_val: int) -> None:
        """Remember that outbound script val `script_val` matched actual val `actual_val`."""
        self._exact[script_val] = actual_val
        if self._first is None:
            self._first = (script_val, actual_val)

    def to_script(self, actual_val: int) -> int:
        """An actual outbound TS val expressed in script space (identity before any record)."""
        if self._first is None:
            return actual_val
        first_script, first_actual = self._first
        return (first_script + (actual_val - first_actual)) & 0xFFFF_FFFF

    def live_ecr(self, script_ecr: int, *, interpolate: bool = False) -> int | None:
        """The actual value to put in an inbound packet's TS ecr, or None if unknown.

        An exact match is a script val seen on an earlier outbound packet. With
        `interpolate` (packetdrill's `--tcp_ts_ecr_scaled`), other values are placed
        relative to the first recorded pair.
        """
        if script_ecr in self._exact:
            return self._exact[script_ecr]
        if interpolate and self._first is not None:
            first_script, first_actual = self._first
            return (script_ecr - first_script + first_actual) & 0xFFFF_FFFF
        return None
