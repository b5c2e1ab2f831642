"""What a run produced, built once for both engines: `RunResult` and its summary
(`summarize`), from the two sockets' final state and the engine's `Tally`.

Light on purpose (no simpy, no core socket): the native engine's runner imports it without
the Python engine (tcpsim/engine/native.py), so a native run starts quickly.
"""

from __future__ import annotations

import gc
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

from tcpsim.core.constants import NS_PER_S
from tcpsim.engine import counts
from tcpsim.units import fmt_duration

if TYPE_CHECKING:
    from tcpsim.policy import Profile
    from tcpsim.scenario import Scenario


@dataclass
class Peaks:
    """Extremes of the receiver's state over the run (sampled after every event)."""

    rmem: int = 0
    rcvbuf: int = 0
    recv_q: int = 0
    t_rmem: int = 0


def sender_counters(meta: dict[str, Any]) -> dict[str, int]:
    """The sending socket's counters in a run's or a capture's metadata (`summary.sender.
    counters`, where RunResult.metadata() and tcpsim capture put them); {} when there are
    none (a pcap import's `sender` is its address, not a record)."""
    summary = meta.get("summary")
    sender = summary.get("sender") if isinstance(summary, dict) else None
    counters = sender.get("counters") if isinstance(sender, dict) else None
    return dict(counters) if isinstance(counters, dict) else {}


@dataclass
class RunResult:
    """What a run produced: summary numbers, counters (the receiver's; the sender's in
    `sender_counters`), final `ss` lines."""

    scenario: str
    profile: str
    summary: dict[str, Any]
    counters: dict[str, int]
    ss: dict[str, str]
    sysctls: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    """The scenario as it ran (`Scenario.as_dict()`, the run's options applied)."""
    sender_counters: dict[str, int] = field(default_factory=dict)
    """The sending socket's counters, keyed as nstat prints them (as `counters`)."""
    cut_short: dict[str, Any] | None = None
    """Set when a stop (SIGINT, SIGTERM: tcpsim/interrupt.py) ended the run early: {"signal",
    "at_s" (simulated seconds run), "duration_s" (asked for)}; kept in the trace's metadata."""

    def metadata(self) -> dict[str, Any]:
        """The run's metadata: what a trace file's footer holds and what `tcpsim run
        --json`, `tcpsim compare` and `tcpsim.Run.meta` show (scenario, profile, sysctls,
        counters, summary). The one place it is built. Wall time stays out: the same seed
        must give the same bytes. The sender's counters sit where a capture keeps them
        (`summary.sender.counters`, tcpsim/capture), so both read the same way."""
        summary = {k: v for k, v in self.summary.items() if k != "wall_s"}
        if self.sender_counters:
            summary["sender"] = {"counters": self.sender_counters}
        meta = {"source": "tcpsim", "profile": self.profile, "scenario": self.config,
                "sysctls": self.sysctls, "counters": self.counters, "summary": summary}
        if self.cut_short is not None:
            meta["cut_short"] = self.cut_short
        return meta


@dataclass
class Tally:
    """What an engine counted over a run besides its sockets' state (both engines fill it)."""

    events: int
    packets: int
    established_at: int
    died_at: int
    written: int
    read_bytes: int
    peaks: Peaks
    rev_written: int | None = None         # two-way runs only
    rev_read_bytes: int | None = None
    rev_peaks: Peaks = field(default_factory=Peaks)


def summarize(sc: Scenario, profile: Profile, sysctls: dict[str, Any], rcv: Any, snd: Any,
              tally: Tally, wall: float, cut_at: int | None = None) -> RunResult:
    """A run's RunResult from its scenario, its two sockets' final state (anything with the
    Python socket's records: conn, rcv, mem, snd, mib, error, ss_line()) and its tally.
    `cut_at`: the simulated time (ns) a stop cut the run short at (tcpsim/interrupt.py):
    the summary covers that much, and the result is marked `cut_short`."""
    c = rcv.mib.as_nstat(profile.counters())
    dur_s = (sc.duration if cut_at is None else cut_at) / NS_PER_S
    delivered = tally.read_bytes
    summary = {
        "duration_s": dur_s,
        "wall_s": round(wall, 3),
        "events": tally.events,
        "packets": tally.packets,
        "established": tally.established_at >= 0,
        "bytes_written": tally.written,
        "bytes_received": rcv.rcv.bytes_received,
        "bytes_read": delivered,
        "goodput_mbps": round(delivered * 8 / dur_s / 1e6, 3) if dur_s else 0.0,
        "peak_sk_rmem_alloc": tally.peaks.rmem,
        "peak_sk_rcvbuf": tally.peaks.rcvbuf,
        "peak_recv_q": tally.peaks.recv_q,
        "final_sk_rmem_alloc": rcv.mem.sk_rmem_alloc,
        "final_sk_rcvbuf": rcv.mem.sk_rcvbuf,
        "final_rcv_ssthresh": rcv.rcv.rcv_ssthresh,
        "final_window_clamp": rcv.rcv.window_clamp,
        "rcv_wscale": rcv.conn.rcv_wscale,
        "zero_windows_sent": counts.zero_windows_sent(c),
        "want_zero_window": c["TcpExtTCPWantZeroWindowAdv"],
        "drops": counts.drops(c),
        "collapses": rcv.mem.collapses,
        "collapse_ms_total": round(rcv.mem.collapse_ns_total / 1e6, 3),
        "collapse_ms_max": round(rcv.mem.collapse_ns_max / 1e6, 3),
        "retransmits": snd.mib.TCPRetransSegs,
        "rto_timeouts": snd.mib.TCPTimeouts,
        "window_probes": snd.mib.TCPWinProbe,
        "error": snd.error or rcv.error,
        "died_at_s": round(tally.died_at / NS_PER_S, 3) if tally.died_at >= 0 else None,
    }
    if sc.hz:                           # unset: tcpsim's default clock (not listed)
        summary["hz"] = sc.hz
    if tally.rev_written is not None and tally.rev_read_bytes is not None:
        summary.update(_reverse_summary(profile, rcv, snd, tally, dur_s))
    cut = None
    if cut_at is not None:
        from tcpsim.interrupt import requested
        cut = {"signal": requested() or "stop", "at_s": cut_at / NS_PER_S,
               "duration_s": sc.duration / NS_PER_S}
    return RunResult(sc.name, profile.name, summary, c,
                     {"rcv": rcv.ss_line(), "snd": snd.ss_line()}, sysctls, sc.as_dict(),
                     snd.mib.as_nstat(profile.counters()), cut)


def _reverse_summary(profile: Profile, rcv: Any, snd: Any, tally: Tally,
                     dur_s: float) -> dict[str, Any]:
    """The other direction of a two-way run (receiver end -> sender end), `rev_`-prefixed
    beside the forward direction's names: the sender end's socket now receives."""
    c = snd.mib.as_nstat(profile.counters())
    delivered = tally.rev_read_bytes or 0
    return {
        "rev_bytes_written": tally.rev_written,
        "rev_bytes_received": snd.rcv.bytes_received,
        "rev_bytes_read": delivered,
        "rev_goodput_mbps": round(delivered * 8 / dur_s / 1e6, 3) if dur_s else 0.0,
        "rev_peak_sk_rmem_alloc": tally.rev_peaks.rmem,
        "rev_peak_recv_q": tally.rev_peaks.recv_q,
        "rev_final_sk_rmem_alloc": snd.mem.sk_rmem_alloc,
        "rev_final_sk_rcvbuf": snd.mem.sk_rcvbuf,
        "rev_final_rcv_ssthresh": snd.rcv.rcv_ssthresh,
        "rev_final_window_clamp": snd.rcv.window_clamp,
        "rev_zero_windows_sent": c["TcpExtTCPToZeroWindowAdv"],
        "rev_drops": (c["TcpExtTCPRcvQDrop"] + c["TcpExtTCPOFODrop"]
                      + c["TcpExtTCPZeroWindowDrop"] + c["TcpExtBeyondWindow"]),
        "rev_retransmits": rcv.mib.TCPRetransSegs,
        "rev_window_probes": rcv.mib.TCPWinProbe,
    }


class StopRun(Exception):
    """Raised by `stop_hook`'s callback inside the Python engine's event loop when a stop
    was requested: the loop ends after the event it ran last."""


def stop_hook(progress: Callable[[int], None] | None) -> Callable[[int], None] | None:
    """The Python engine's progress hook, which also ends the run (StopRun) once a stop is
    requested -- inside a `tcpsim.interrupt.stoppable()` block only: elsewhere `progress`
    itself, so an API run pays nothing."""
    from tcpsim import interrupt
    if not interrupt.active():
        return progress

    def hook(now: int) -> None:
        if progress is not None:
            progress(now)
        if interrupt.requested() is not None:
            raise StopRun
    return hook


@contextmanager
def few_gc_passes() -> Iterator[None]:
    """Run the event loop with the cyclic garbage collector's young generation scanned
    every 100 000 allocations instead of 700. The per-packet path makes many short-lived
    objects (segments, skbs, events) but no reference cycles, so refcounting frees them
    all and the default collector's frequent passes find nothing (about 4 % of a bulk
    run); cycles made during the run are still collected, less often."""
    old = gc.get_threshold()
    gc.set_threshold(100_000, old[1], old[2])
    try:
        yield
    finally:
        gc.set_threshold(*old)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Build a host's records (its flows, the native engine's config, its results) with the
    cyclic garbage collector off: tens of thousands of small records and no reference
    cycles among them, while each of the collector's full passes walks every object made so
    far -- a third of the build's time at 66 000 flows. It runs again as before after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def progress_bar(total_ns: int, enabled: bool,
                 clock: Callable[[], float] = time.perf_counter,
                 stream: Any = None) -> Callable[[int], None] | None:
    """A one-line progress bar on stderr (simulated time), for long runs, with an ETA from
    the rate simulated time has advanced at so far (`run_eta`)."""
    if not enabled:
        return None
    start = clock()

    def show(now: int) -> None:
        out = stream if stream is not None else sys.stderr
        frac = min(1.0, now / total_ns) if total_ns else 1.0
        bar = "#" * int(frac * 30)
        wall = clock() - start
        eta = run_eta(now, total_ns, wall)
        out.write(f"\r[{bar:<30}] {frac * 100:5.1f}%  {now / NS_PER_S:8.1f}s simulated "
                  f"in {wall:6.1f}s" + (f", ETA {fmt_duration(eta)}   " if eta is not None else "   "))
        out.flush()
    return show


def run_eta(sim_ns: int, total_ns: int, wall_s: float) -> float | None:
    """Wall seconds left of a run at the rate it has simulated so far (None until it has
    run for a tenth of a second and simulated something)."""
    if sim_ns <= 0 or wall_s < 0.1 or not total_ns:
        return None
    return max(0.0, (total_ns - sim_ns) * wall_s / sim_ns)
