"""How late the capture's applications ran: the raw material of the app-latency calibration.

Two measurements, both on CLOCK_MONOTONIC (the app logs and bpftrace's `nsecs` share it):

* **timer lateness** of a periodic writer or reader: each tick logs (t_call, "wake", t_due)
  just before its send()/recv() (tcpsim.capture.apps), so t_call - t_due is how late the
  process ran after its timer was due (timer slack, scheduling, the interpreter); only
  ticks the process slept into count (not the catch-ups of an absolute grid after a stall);
* **blocking-reader wakeup**: the reader logs (t_enter, "wait", 0) before it blocks in recv()
  and (t_return, "read", n) after it returns. When the first in-order data segment after
  t_enter reached tcp_rcv_established (tcp:tcp_probe, every segment traced) before
  t_return, t_return - that arrival is the delay from the data's arrival to recv()'s
  return: the wakeup plus the copy. A recv() that found data already queued is no wakeup
  and is not counted.

    timer_lateness(events) -> [ns]
    blocking_latency(events, arrivals) -> [ns]
    quantiles(values, n) -> [ns] at n+1 evenly spaced probabilities 0, 1/n, ..., 1
    burstiness(seq) -> how late wakeups cluster in a sequence (per 1000, lag-1 correlation,
                       dispersion of the per-window counts)
    summary(raw_dir, probe_records, probe_every, port) -> {side: {...}}
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any, Iterable

Events = list[tuple[int, str, int]]
U32 = 1 << 32


def timer_lateness(events: Events, slept_only: bool = True) -> list[int]:
    """t_call - t_due of the timer ticks in an endpoint's event log.

    ``slept_only`` keeps the ticks the process slept into: its previous log row (the last
    tick's call or its send()'s return) came before this tick was due. A tick that was
    already due when the previous one finished is a catch-up on the absolute grid, not a
    wakeup; its lateness only repeats the earlier one's (a 5 ms stall would count 5, 4, 3,
    2, 1 ms). A model that delays each wakeup by a fresh draw makes the catch-ups itself."""
    out: list[int] = []
    prev: int | None = None
    for t, kind, due in events:
        if kind == "wake" and (not slept_only or prev is None or prev < due):
            out.append(t - due)
        prev = t
    return out


def blocking_latency(events: Events, arrivals: list[int]) -> list[int]:
    """Arrival-to-return delay of every recv() that slept (``arrivals``: sorted times of the
    in-order data segments)."""
    out: list[int] = []
    enter: int | None = None
    for t, kind, _ in events:
        if kind == "wait":
            enter = t
        elif kind == "read" and enter is not None:
            i = bisect.bisect_right(arrivals, enter)
            if i < len(arrivals) and arrivals[i] <= t:
                out.append(t - arrivals[i])
            enter = None
    return out


def data_arrivals(probes: Iterable[dict[str, int]]) -> list[int]:
    """Times of the in-order data segments among tcp_probe records (state before each)."""
    return sorted(p["t_ns"] for p in probes if p["data_len"] > 0 and p["seq"] == p["rcv_nxt"])


def quantiles(values: list[int], n: int) -> list[int]:
    """Nearest-rank quantiles at probabilities k/n, k = 0..n (the first is the minimum, the
    last the maximum); integers in, integers out."""
    if not values:
        return []
    s = sorted(values)
    last = len(s) - 1
    return [s[(k * last + n // 2) // n] for k in range(n + 1)]


def describe(values: list[int]) -> dict[str, Any]:
    """Count and p50/p90/p99/p99.9/max of a latency sample, in ns."""
    if not values:
        return {"n": 0}
    s = sorted(values)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]  # noqa: E731
    return {"n": len(s), "min_ns": s[0], "p50_ns": pick(0.5), "p90_ns": pick(0.9),
            "p99_ns": pick(0.99), "p999_ns": pick(0.999), "max_ns": s[-1]}


MS = 1_000_000


def burstiness(seq: list[int], window: int = 1000) -> dict[str, float]:
    """How a sequence of wakeup latencies (ns, in wakeup order) clusters: the share of
    wakeups later than 2, 4, 5 and 8 ms (per 1000), the lag-1 autocorrelation of "later than
    2 ms" (0 for independent draws), the mean length of runs of consecutive wakeups later
    than 2 ms, and the dispersion index (variance / mean) of the count later than 4 ms in
    consecutive windows of `window` wakeups (about a second): 1 for independent draws, more
    when a busy second is busy for many ticks."""
    n = len(seq)
    if n < 2 * window:
        raise ValueError(f"burstiness needs at least {2 * window} wakeups, got {n}")
    late2 = [1 if x > 2 * MS else 0 for x in seq]
    m = sum(late2) / n
    var = sum((x - m) ** 2 for x in late2) / n
    cov = sum((late2[i] - m) * (late2[i + 1] - m) for i in range(n - 1)) / (n - 1)
    runs, r = [], 0
    for x in late2:
        if x:
            r += 1
        elif r:
            runs.append(r)
            r = 0
    counts = [sum(1 for x in seq[i:i + window] if x > 4 * MS)
              for i in range(0, n - window + 1, window)]
    cm = sum(counts) / len(counts)
    cv = sum((c - cm) ** 2 for c in counts) / len(counts)
    per_k = {f"late_{t}ms_per_1000": 1000 * sum(1 for x in seq if x > t * MS) / n
             for t in (2, 4, 5, 8)}
    return {"n": n, **per_k, "acf1_late_2ms": cov / var if var else 0.0,
            "run_late_2ms": sum(runs) / len(runs) if runs else 0.0,
            "dispersion_late_4ms": cv / cm if cm else 0.0}


def read_events(path: Path) -> Events:
    """An endpoint's `<side>_events.csv` (t_ns,kind,n); [] if absent."""
    if not path.exists():
        return []
    out: Events = []
    for ln in path.read_text().splitlines()[1:]:
        t, kind, n = ln.split(",")
        out.append((int(t), kind, int(n)))
    return out


def summary(raw: Path, records: dict[str, list[dict[str, int]]] | None,
            probe_every: int = 1, port: int | None = None) -> dict[str, Any]:
    """Per side, what the capture's app logs say about wakeup latency (trace metadata)."""
    out: dict[str, Any] = {}
    for side in ("sender", "receiver"):
        events = read_events(raw / f"{side}_events.csv")
        late = timer_lateness(events)
        if late:
            out[side] = {"measure": "timer: t_call - t_due of the ticks it slept into",
                         **describe(late), "catch_up_ticks": sum(
                             1 for _, k, _ in events if k == "wake") - len(late)}
        elif side == "receiver" and any(k == "wait" for _, k, _ in events):
            if records and probe_every == 1:
                arrivals = data_arrivals(p for p in records["probe"]
                                         if port is None or p["sport"] == port)
                out[side] = {"measure": "blocking recv(): return - data arrival",
                             **describe(blocking_latency(events, arrivals))}
            else:
                out[side] = {"measure": "blocking recv()",
                             "n": 0, "why": "needs every segment traced (bpftrace, probe_every 1)"}
    return out
