"""Fit what a capture cannot say, by replaying candidates against it; rank kernels by the fit.

A pcap shows the wire: the sender's data, the receiver's ACKs and windows. It does not show
the receiving application (how much it reads, how often, how late it wakes), the ingress
device's skb layout (truesize, hence the window on 6.6+ through scaling_ratio, and the
memory), the kernel's CONFIG_HZ (delayed-ACK timers), the initial tcp_rmem / SO_RCVBUF the
handshake leaves open, how long the applications hold their sockets, or whether the
sender's data was waiting in its socket before it left (the writer feed,
tcpsim.pcap.replay.writer_feed). `fit()` estimates them: each candidate value is replayed on the
native engine (tcpsim.pcap.replay's plan: the wire's own data at its own times) and graded
against the capture (tcpsim.pcap.grade); the search is a coordinate search -- one unknown at
a time over its candidate grid, the others held at their best so far, two passes, then a
refinement of the reader's size around the best -- because the unknowns act mostly on
different things (the reader on the window's level and the zero windows, the device on the
window's scale, HZ on ACK timing), so a joint grid (thousands of replays) buys little, and a
coordinate search is deterministic and cheap (tens of replays per profile). It runs from
each of START_DEVICES (a clone of the sender's skb, which nothing coalesces into, and a
private skb, which later segments coalesce into), each under each of the start feeds
(Capture.start_feeds()), and keeps the best end: the device shapes the window from the
fifth ACK on, the reader is swept first under the start's device and everything after under
that reader, so one start stays in its device's basin (see START_DEVICES), and the feed
moves every segment's time, so it stays in its feed's too (START_FEEDS). Each value is reported with the grades of its alternatives: "determined"
when the next-best value grades at least DETERMINED lower, else the set of values within
that margin.

`rank()` fits each profile (and patch) and orders them by their best grade: the capture is
*consistent* with a kernel whose grade is within CONSISTENT of the best, and *rules out* one
more than RULED_OUT below it (between: "less likely"). When the best and the worst grade are
within CONSISTENT the capture does not tell the kernels apart, and says so. Every profile is
searched from the same starts -- the first profile's ends, one from each start -- and
from its own (rank()).
"""

from __future__ import annotations

import bisect
import copy
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

from tcpsim.core.devices import device
from tcpsim.importers.pcap import Imported, load
from tcpsim.pcap import PcapError
from tcpsim.pcap.grade import Grade, grade
from tcpsim.pcap.readtimes import Phase, grid_ticks, lag_ns, phase_ticks, phases, place
from tcpsim.pcap.replay import FEEDS, feed_scenario, write_ticks
from tcpsim.pcap.workload import parse_reader
from tcpsim.validate.replay import ReplayError, ReplayResult, plan, run_plan
from tcpsim.pcap.tables import TableRecorder, acks_view
from tcpsim.validate.trace import TraceView, view

DETERMINED = 0.01          # grade margin between a fitted value and the next best
CONSISTENT = 0.02          # a profile within this of the best fits the capture as well
FITS = 0.6                 # a best grade below this: no kernel fits, the ranking decides nothing
RULED_OUT = 0.05           # ... more than this below the best: ruled out

PERIODS_MS = (1, 2, 5, 10, 20, 50, 100)
# the ingress device's skb layout: the presets, then the sender strategy (veth, loopback)
# with other head sizes -- the head's truesize sets scaling_ratio (len / truesize) on 6.6+,
# hence every window; a veth pair on the development machine fell between 320 and 384
HEADS = (320, 352, 384, 448, 512)
# veth-direct:tso=off: a local pair with TSO/GSO off (the plain captures' `ethtool -K`): a
# one-segment send reaches the receiver as a clone of the sender's skb (nothing coalesces
# into it until the sender has its ACK), a multi-segment one is cut by software GSO into
# fresh skbs (tcpsim.core.devices.Device.sender_skb). A periodic writer of one MSS per write
# (veth-periodic-small-writes-shrink1) is the first case segment after segment: under it the
# closed window reopens after as many reads as the kernel's did, where `veth` (every skb
# private) reopens early and `veth-direct` (every skb a clone) late
DEVICES = ("veth-direct", "veth-direct:tso=off", "loopback", "veth", "nic-2k", "nic-4k", "tun",
           *(f"sender:head={h},shared=on" for h in HEADS))
HZS = (0, 100, 250, 300, 1000)       # 0: tcpsim's default clock (1 ms jiffies, exact timers)
# the search's starts: the receiver's skb a clone of the sender's (veth-direct: both ends on
# one host and the sender's skb sent whole) or private (veth: a forwarding hop, or software
# GSO cutting the sender's multi-segment skb into fresh ones -- loopback or veth with TSO and
# GSO off, skb_segment() [net/core/skbuff.c, 6.18]), which a pcap cannot tell apart. From
# the clone start alone the search ended in the clone basin on the real captures made with
# offloads off (its first reader sweep, under clones, picks a reader that then holds the
# device there): lo-periodic-4096-10ms-shrink1 graded 0.574 on linux-6.18 where the private
# start reaches 0.674, veth-fast 0.598 where it reaches 0.997 (docs/bring-your-own-capture.md)
START_DEVICES = ("veth-direct", "veth")
# ... and from each of these writer feeds (Capture.start_feeds(): with VISIBLE_FEEDS where
# the capture shows the application's writes): the feed moves every segment's time, and the
# search ends in a basin of the feed it started from -- pinned to one feed, linux-6.18 fits
# veth-periodic-1448-1ms 0.900 paced and 0.850 as sent, lo-periodic-4096-10ms 0.773 paced and
# 0.843 as sent, veth-periodic-small-writes-shrink1 0.813 in bursts (0.672 with pauses,
# 0.696 as sent: its writer's data waits in the socket while the window is shut and leaves
# as one multi-segment skb when it opens, tcpsim.pcap.replay.writer_feed)
START_FEEDS = ("as-sent", "paced")
VISIBLE_FEEDS = ("bursts",)
VISIBLE_WRITES = 20        # writes_visible(): at least this many writes ...
VISIBLE_SHARE = 0.05       # ... and this share of the transmissions
TIMINGS = ("exact", "dev-vm-quiet", "dev-vm-loaded")
RMEM1 = (0, 65536, 87380, 262144)     # tcp_rmem[1]; 0: the profile's default (131072)
# how long each read holds the socket (us; the reader's owns_socket, tcpsim/core/backlog.py):
# on one host the peer's answer to a read's window update lands within it, in the backlog.
# Swept first: the reader, its phase and the timing fitted without it make up for the
# missing merged skbs with finer reads and stay there (veth-periodic-1448-1ms on linux-6.18:
# 0.846 swept first, 0.612 swept last)
OWNS_US = (0, 30, 60, 100, 200, 300, 500)
# A periodic reader's grid, read off the capture: a read that frees room sends its ACK from
# recvmsg itself (tcp_cleanup_rbuf() [net/ipv4/tcp.c, 6.18]), so the ACKs that come long after
# the last data arrival (READ_ACK_GAP_NS) bunch at one phase of the reader's period, a few us
# after the read began (tests/fixtures/pcaps: 93 % of them in three 10 us bins on
# veth-tbf-periodic, 85 % on veth-periodic-1448-1ms, 55 % on lo-periodic-4096-10ms). The
# phase is swept on its grid of tenths of the period and at READ_ACK_LAGS_US before that
# bunch: a read 10 us off moves where a burst splits between
# the backlog and the queue, and the grade with it (veth-tbf-periodic, linux-6.18, reads
# holding the socket 100 us: 0.839 at the bunch's phase less 5 us, 0.692 10 us later) --
# in 5 us steps (the 10 us ones first: the first of equal grades is kept): with its late
# reads placed (tcpsim.pcap.readtimes) veth-tbf-periodic fits 0.898 (78.9 % of the windows
# within a unit) at the bunch less 15 us and 0.921 (85.2 %) at the bunch less 10 us, on
# linux-6.18. A reader of another period tried by the search is placed READ_ACK_LAG_US
# before its bunch (_moved)
READ_ACK_GAP_NS = 50_000
READ_ACK_BIN_US = 10
READ_ACK_LAGS_US = (-5, 5, 15, 25, 0, 10, 20)
READ_ACK_LAG_US = 5
# How many ticks of its grid the reader let pass before its first read: a program reading
# on an absolute grid from when accept() returned (a process woken late, or one that connects
# early and sends later) has read that many times less than one reading from the handshake
# on, for good -- with a full queue each missing read is `bytes` more held (veth-tbf-periodic:
# its first read comes on the grid's third tick, 5.97 ms after the SYN). At most SKIP_MAX,
# and never past the first read-drawn ACK. Swept jointly with how long a read holds the
# socket: apart, neither moves from a start where the other is wrong (0.555 at best against
# 0.839 together on veth-tbf-periodic). Swept before the phase: a reader of another period
# comes with the read-drawn ACKs' phase (_moved), where the skipped ticks are found; swept
# after it, the phase sweep first moved to where no count of skipped ticks fits (a
# recapture of veth-tbf-periodic whose reader first read at 10.1 ms: 0.730 at phase 0 and
# none skipped, against 0.881 at 0.135 ms and five skipped -- the truth).
SKIP_MAX = 8
# A phased reader (tcpsim.pcap.readtimes.phases): how long before its read-drawn ACKs' grid
# its reads came (us; the phase_us unknown stands for it): the ACK follows the read's copy
PHASED_LEADS_US = (0, 10, 20, 40, 80, 150)
# A read a read-drawn ACK shows at least this late (us) after its tick is moved to that ACK
# (less the read-to-ACK lag; tcpsim.pcap.readtimes.place); 0: every read on the grid
READS_US = (0, 30, 100)
JOINT = {"skip": "owns_us"}
WRITE_OWNS_US = (0, 30, 100)         # how long each write holds the socket (writer.owns_socket)
# the writer's page reuse (tcpsim/core/pagefrag.py), as `--page-reuse` names it: whether the
# reader's frees reach the writer's page frag before its next write (reader and writer on one
# CPU) or wait in skb_attempt_defer_free() for the writer's next transmission -- which CPUs
# the two programs ran on, which no capture shows; swept only on a local pair (the sender
# strategy), where the receiver's skbs hold the writer's pages
REUSE_NAMES = ("deferred", "immediate")
ORDER = ("owns_us", "reader", "skip", "phase_us", "reads_us", "device", "reuse", "hz",
         "timing", "rmem1", "shrink", "writer", "wowns_us")
# swept once the others have settled (_search): the writer's feed moves every segment's
# time, and swept among the others it led the search into other basins
LATE = ("writer", "wowns_us")
UNKNOWN_NAMES = {"reader": "reader", "device": "ingress device", "hz": "CONFIG_HZ",
                 "timing": "application timing", "rmem1": "tcp_rmem[1]",
                 "so_rcvbuf": "SO_RCVBUF", "phase_us": "reader phase",
                 "shrink": "tcp_shrink_window", "owns_us": "read owns socket",
                 "skip": "reader ticks skipped", "writer": "writer feed",
                 "wowns_us": "write owns socket", "reads_us": "late reads placed",
                 "reuse": "writer's page reuse"}


@dataclass(frozen=True)
class Unknowns:
    """One candidate for everything the wire does not show."""

    reader: str = "blocking"        # as --reader takes it
    device: str = "veth-direct"
    hz: int = 0
    timing: str = "exact"
    rmem1: int = 0
    so_rcvbuf: int = 0
    phase_us: int = 0               # the reader's first tick after its start (grid phase)
    shrink: int = 0                 # net.ipv4.tcp_shrink_window (where the profile has it)
    owns_us: int = 0                # how long each read holds the socket (reader.owns_socket)
    skip: int = 0                   # periodic reader: grid ticks before its first read
    writer: str = "as-sent"         # the writer's feed (tcpsim.pcap.replay.FEEDS)
    wowns_us: int = 0               # how long each write holds the socket (writer.owns_socket)
    reads_us: int = 0               # reads a read-drawn ACK shows this late or more moved to
    #                                 it (tcpsim.pcap.readtimes.place); 0: all on the grid
    reuse: int = 0                  # 1: the reader's frees reach the writer's page frag at
    #                                 once, an emptied page restarts (Device.reuse); 0: deferred

    def show(self, name: str) -> str:
        v = getattr(self, name)
        if name == "hz":
            return str(v) if v else "1 ms clock"
        if name in ("rmem1", "so_rcvbuf"):
            return str(v) if v else "default"
        if name == "phase_us" and is_phased(self.reader):
            return f"{v} us before its ACKs"
        if name == "phase_us":
            return f"{v / 1000:g} ms"
        if name in ("owns_us", "wowns_us"):
            return f"{v} us"
        if name == "reads_us":
            return "none (the grid)" if not v else f">= {v} us late"
        if name == "reuse":
            return REUSE_NAMES[v]
        if name == "skip" and reader_period_us(self.reader):
            first = self.phase_us + v * reader_period_us(self.reader)
            return f"{v} (first read {first / 1000:g} ms)"
        return str(v)


@dataclass
class Fitted:
    """One fitted unknown: its value, how well the capture determines it, the alternatives."""

    name: str
    value: str
    pinned: bool
    determined: str                  # "well" | "loosely" | "not at all" | "pinned"
    near: list[str]                  # values within DETERMINED of the best
    grades: dict[str, float]         # every value tried in the last sweep -> grade


@dataclass
class FitResult:
    """The fit of one profile (+ patches)."""

    profile: str
    policies: tuple[str, ...]
    best: Unknowns
    grade: Grade
    fitted: list[Fitted]
    replays: int
    wall_s: float
    result: ReplayResult | None = None
    ends: list[Unknowns] = field(default_factory=list)    # the search's end from each start
    reader_phases: list[Phase] = field(default_factory=list)   # a phased best's phases

    @property
    def label(self) -> str:
        return " + ".join((self.profile, *self.policies))

    def as_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "policies": list(self.policies), "label": self.label,
                "best": asdict(self.best), "grade": self.grade.as_dict(),
                "fitted": [asdict(f) for f in self.fitted], "replays": self.replays,
                "wall_s": round(self.wall_s, 3),
                "reader_phases": [{"from_ns": p.first, "to_ns": p.last, "every_ns": p.every,
                                   "acks": p.acks} for p in self.reader_phases]}


class Capture:
    """A capture imported once, replayed under any profile and candidate."""

    def __init__(self, path: str | Path, sysctl: dict[str, Any] | None = None,
                 until_s: float | None = None, engine: str | None = "native",
                 **import_opts: Any) -> None:
        from tcpsim.engine.result import few_gc_passes
        self.path = Path(path)
        with few_gc_passes():           # a long capture: millions of objects, no cycles
            self.imp: Imported = load(path, **import_opts)
            self.columns = self.imp.columns
            self.k: TraceView = view(self.columns, self._meta(self.imp.scenario))
        self.sysctl = dict(sysctl or {})
        self.until_ns = None if until_s is None else int(until_s * 1e9)
        self.engine = engine
        self.inferred_reader = self.imp.scenario["reader"]
        self._cut: dict[int | None, TraceView] = {}
        self.last_full: tuple[ReplayResult, TraceView] | None = None   # the last full replay
        self._ticks: dict[tuple[int, int, str], list[tuple[int, int]]] = {}
        self._visible: bool | None = None
        self._read_acks: dict[int | None, list[int]] = {}
        self._phases: list[Phase] | None = None

    def segment_time(self, n: int) -> int:
        """The time (trace axis) of the capture's n-th segment, or past its end."""
        t = [t for t, e in zip(self.columns["t_ns"], self.columns["event"]) if e == "tx"]
        return t[n - 1] if len(t) >= n else (t[-1] + 1 if t else 0)

    def view_until(self, end_ns: int | None) -> TraceView:
        """The capture's view cut after end_ns (None: all of it), made once per end: what a
        replay of the first window plans and is graded by (plan() and grade() read nothing
        after their end) -- the ACKs, data and writes of a long capture are not walked again
        for each of the fit's candidates."""
        if end_ns is None:
            return self.k
        if end_ns not in self._cut:
            k = self.k
            na = bisect.bisect_right([a.t_ns for a in k.acks], end_ns)
            self._cut[end_ns] = replace(
                k, acks=k.acks[:na], data_t=k.data_t[:bisect.bisect_right(k.data_t, end_ns)],
                writes=[w for w in k.writes if w[0] <= end_ns])
        return self._cut[end_ns]

    def write_ticks(self, k: TraceView, shift_ns: int, end_ns: int, feed: str = "as-sent",
                    delay_ab_ns: int = 0, rtt_ns: int = 0) -> list[tuple[int, int]]:
        """The ScheduleWriter's ticks (tcpsim.pcap.replay.write_ticks), made once per
        (shift, end, feed)."""
        key = (shift_ns, end_ns, feed)
        if key not in self._ticks:
            split = bool(self.imp.meta["summary"].get("split_gso"))
            self._ticks[key] = write_ticks(k, shift_ns, end_ns, split, feed, delay_ab_ns, rtt_ns)
        return self._ticks[key]

    def _meta(self, doc: dict[str, Any]) -> dict[str, Any]:
        meta = dict(self.imp.meta)
        meta["scenario"] = doc
        return meta

    def doc(self, u: Unknowns) -> dict[str, Any]:
        doc = copy.deepcopy(self.imp.scenario)
        doc["sysctl"] = {**doc.get("sysctl", {}), **self.sysctl}
        doc["reader"] = self._phased_doc(u.reader) if is_phased(u.reader) else \
            parse_reader(u.reader)
        if u.rmem1:
            rmem = list(doc["sysctl"].get("net.ipv4.tcp_rmem") or [4096, 131072, 6291456])
            doc["sysctl"]["net.ipv4.tcp_rmem"] = [rmem[0], u.rmem1, max(rmem[2], u.rmem1)]
        if u.so_rcvbuf:
            doc["receiver"]["so_rcvbuf"] = u.so_rcvbuf
        if u.shrink:
            doc["sysctl"]["net.ipv4.tcp_shrink_window"] = u.shrink
        return doc

    def replay(self, profile: str, policies: tuple[str, ...], u: Unknowns,
               full: bool = True) -> tuple[Grade, ReplayResult]:
        """Replay one candidate and grade it (`full`: keep the model's whole trace, for the
        report; else only its segments, which is all the grade reads)."""
        from tcpsim.app_latency import default_latency
        doc = self.doc(u)
        k = replace(self.view_until(self.until_ns), meta=self._meta(doc))
        try:
            # plan() makes write ticks of every write, replaced below by the capture's own
            # (made once): it is given the first write only, all it reads of them otherwise
            p = plan(replace(k, writes=k.writes[:1]), profile, policies, self.until_ns,
                     u.hz or None, "--hz" if u.hz else "a capture does not record its kernel's HZ")
        except ReplayError as exc:
            raise PcapError(str(self.path), None, str(exc).split(":")[0],
                            "replay needs the connection's handshake: capture from before the "
                            "connect") from None
        sc = p.scenario.with_(device=reuse_device(u.device) if u.reuse else u.device)
        if (u.phase_us or u.skip) and sc.reader.kind in ("periodic", "oscillating") and \
                not is_phased(u.reader):
            first = u.phase_us * 1000 + u.skip * sc.reader.every
            sc = sc.with_(reader=replace(sc.reader, start=sc.reader.start + first))
        if u.owns_us:
            sc = sc.with_(reader=replace(sc.reader, owns_socket=u.owns_us * 1000))
        if u.timing != "exact":
            side_kind = {"fast": "blocking"}.get(sc.reader.kind, sc.reader.kind)
            name = default_latency(u.timing, "reader", side_kind)
            if name:
                sc = sc.with_(reader=replace(sc.reader, latency_table=name,
                                             latency_host=u.timing))
        p.scenario = sc
        link = p.scenario.link
        p.write_ticks = self.write_ticks(k, p.shift_ns, p.end_ns, u.writer, link.delay_ab,
                                         link.delay_ab + link.delay_ba)
        if u.wowns_us:
            sc = sc.with_(writer=replace(sc.writer, owns_socket=u.wowns_us * 1000))
        p.scenario = feed_scenario(sc, u.writer)
        p.schedule = True
        placed = self._read_times(p, u)
        p.notes = [*self.imp.notes, *p.notes]
        rp = run_plan(p, engine=self.engine, sink=TableRecorder(("rcv",), acks_only=not full))
        if full:
            # the view validate.run.score_replay makes of it: kept for it (last_full)
            m = view(rp.columns, {"source": "tcpsim", "counters": rp.result.counters}
                     ).shifted(-p.shift_ns)
            self.last_full = (rp, m)
        else:
            m = acks_view(rp.columns, -p.shift_ns)
        return grade(k, m, p.end_ns, placed), rp

    def _read_times(self, p: Any, u: Unknowns) -> frozenset[int]:
        """Where the capture dates the reads, the plan's reader becomes the replay reader
        (tcpsim.validate.replay.ReplayReader, each read holding the socket as the
        scenario's reader would): a phased reader on its phases, a periodic one on its grid,
        each with its late reads moved to the ACKs that date them where `reads_us` says
        (tcpsim.pcap.readtimes). Returns the capture's ACKs that placed a read: the grade
        leaves them out of its ACK timing (the model's ACK follows them by construction)."""
        r = p.scenario.reader
        if is_phased(u.reader):
            lead = u.phase_us * 1000
            ticks = phase_ticks(self.phases(), phased_size(u.reader), p.shift_ns, lead, u.skip)
        elif u.reads_us and r.kind == "periodic" and r.every > 0:
            lead = lag_ns(self.read_acks(), r.start, r.every, p.shift_ns)
            ticks = grid_ticks(r.start, r.every, p.end_ns + p.shift_ns, r.bytes)
        else:
            return frozenset()
        placed: frozenset[int] = frozenset()
        if u.reads_us:
            rt = place(ticks, self.read_acks(), p.shift_ns, lead, u.reads_us * 1000)
            ticks, placed = rt.ticks, rt.placed
        p.read_ticks = [(t, n, -1) for t, n in ticks if t <= p.end_ns + p.shift_ns]
        p.read_owns = r.owns_socket
        return placed

    # -- a reader whose period changes (tcpsim.pcap.readtimes.phases) ------------------------

    def phases(self) -> list[Phase]:
        """The reader's phases read off the whole capture's read-drawn ACKs (the search's
        window and the final replay share them)."""
        if self._phases is None:
            whole, self.until_ns = self.until_ns, None
            try:
                self._phases = phases(self.read_acks(), self.k.end_ns)
            finally:
                self.until_ns = whole
        return self._phases

    def phased(self) -> bool:
        """The read-drawn ACKs show the reader's period change (two phases or more)."""
        return len(self.phases()) >= 2

    def phased_size(self) -> int:
        """Bytes a phased reader takes a tick for the measured read rate (read_rate()): the
        rate times the span of its ticks over their count."""
        ph = self.phases()
        ticks = sum(max(0, (p.last - p.first) // p.every + 1) for p in ph)
        span_ms = (ph[-1].last - ph[0].first) / 1e6
        return max(1, round(self.read_rate() * span_ms / max(1, ticks)))

    def _phased_doc(self, spec: str) -> dict[str, Any]:
        """The scenario's [reader] of a phased reader: periodic at its first phase's period
        (the replay reader ticks in its place: replay())."""
        every = self.phases()[0].every if self.phases() else 1_000_000
        return {"kind": "periodic", "bytes": phased_size(spec), "every": f"{every}ns"}

    # -- candidates --------------------------------------------------------------------------

    def read_rate(self) -> float:
        """Bytes per ms the reader took: the inferred periodic rate, else the goodput."""
        r = self.inferred_reader
        if r.get("kind") == "periodic":
            from tcpsim.units import parse_duration
            return float(r["bytes"]) * 1e6 / parse_duration(r["every"], "reader.every")
        s = self.imp.meta["summary"]
        return max(1.0, float(s["bytes"]) / max(1e-3, float(s["duration_s"]) * 1000))

    def read_acks(self) -> list[int]:
        """Times (trace axis, ns) of the ACKs sent more than READ_ACK_GAP_NS after the last
        data arrival: sent by a read (or a timer), not by the data (over the search's
        window)."""
        if self.until_ns not in self._read_acks:
            k = self.view_until(self.until_ns)
            data = k.data_t
            out = []
            for a in k.acks:
                i = bisect.bisect_left(data, a.t_ns) - 1
                if i >= 0 and a.t_ns - data[i] > READ_ACK_GAP_NS:
                    out.append(a.t_ns)
            self._read_acks[self.until_ns] = out
        return self._read_acks[self.until_ns]

    def read_ack_phase(self, period_us: int) -> int | None:
        """The phase (us, modulo `period_us`) at which the read-drawn ACKs bunch: the start
        of the fullest READ_ACK_BIN_US bin, or None with fewer than 5 such ACKs."""
        acks = self.read_acks()
        if len(acks) < 5 or period_us <= 0:
            return None
        bins: dict[int, int] = {}
        for t in acks:
            b = (t // 1000) % period_us // READ_ACK_BIN_US
            bins[b] = bins.get(b, 0) + 1
        return max(sorted(bins), key=lambda b: bins[b]) * READ_ACK_BIN_US

    def phase_candidates(self, period_us: int) -> list[int]:
        """A periodic reader's grid phase: tenths of the period, then just before the
        read-drawn ACKs' bunch (read_ack_phase)."""
        out = [round(period_us * j / 10) for j in range(10)]
        peak = self.read_ack_phase(period_us)
        if peak is not None:
            out += [(peak - lag) % period_us for lag in READ_ACK_LAGS_US]
        return list(dict.fromkeys(out))

    def skip_candidates(self, period_us: int) -> list[int]:
        """Ticks a periodic reader may have let pass before its first read: 0 up to the
        first read-drawn ACK's tick, at most SKIP_MAX."""
        acks = self.read_acks()
        if not acks or period_us <= 0:
            return [0]
        return list(range(min(SKIP_MAX, acks[0] // 1000 // period_us) + 1))

    def reader_candidates(self) -> list[str]:
        rate = self.read_rate()
        out = ["never", "blocking"]
        for p in PERIODS_MS:
            want = rate * p
            if want < 1:
                continue
            for n in sorted({nice(want), max(1, round(want / 256) * 256 or round(want))}):
                out.append(f"periodic:{n}B/{p}ms")
        if self.phased():
            want = self.phased_size()
            for n in sorted({nice(want), max(1, round(want / 256) * 256 or round(want))}):
                out.append(f"phased:{n}B")
        return list(dict.fromkeys(out))

    def starts(self) -> list[Unknowns]:
        """The search's starts: on each of START_DEVICES, the read rate taken every 1 ms and,
        where the window updates fall on a longer grid (the import's inference), the
        inferred reader on that grid. Both: the grid is where the kernel's reader read, but
        with what the replay cannot reproduce exactly (its sender is fed the capture's
        bytes; the skb boundaries) a finer reader at the same rate sometimes follows the
        windows closer, and one search does not cross from one grain to the other
        (lo-periodic-4096-10ms: 404 B every 1 ms graded 0.843 from the 1 ms start, the
        10 ms start ended at 0.720 with 814 B every 2 ms; its shrink-1 twin: 0.657 from the
        1 ms start alone, 0.905 from the 10 ms one with the true 4096 B every 10 ms). Each under
        each of start_feeds() too."""
        readers = list(dict.fromkeys([self.rate_start(), self.start()]))
        return [replace(u, device=d, writer=f) for f in self.start_feeds() for u in readers
                for d in START_DEVICES]

    def rate_start(self) -> Unknowns:
        """The inferred reader's rate taken every 1 ms from the start (no grid)."""
        u = self.start()
        if not u.reader.startswith("periodic:"):
            return u
        per_ms = max(1, round(self.read_rate()))
        return Unknowns(reader=f"periodic:{per_ms}B/1000000ns")

    def start_feeds(self) -> list[str]:
        """The writer feeds the search starts from: START_FEEDS, and VISIBLE_FEEDS where the
        capture shows the application's writes (writes_visible()). ("pauses", a start here
        before "bursts" was a feed, is swept with the others: veth-fast fits 0.998 from
        either, veth-periodic-small-writes-shrink1 0.813 in bursts.)"""
        return [*START_FEEDS, *(VISIBLE_FEEDS if self.writes_visible() else ())]

    def writes_visible(self) -> bool:
        """The sender started on its own again and again (tcpsim.pcap.replay.writer_feed's
        "pauses": at least VISIBLE_WRITES writes, VISIBLE_SHARE of the transmissions): a
        periodic writer, whose writes the "pauses" feed replays."""
        if self._visible is None:
            from tcpsim.units import parse_duration
            link = self.imp.scenario.get("link", {})
            ab, ba = (parse_duration(link.get(key, 0), f"link.{key}")
                      for key in ("delay_ab", "delay_ba"))
            every = self.write_ticks(self.k, 0, self.k.end_ns)
            grouped = self.write_ticks(self.k, 0, self.k.end_ns, "pauses", ab, ab + ba)
            self._visible = len(grouped) >= max(VISIBLE_WRITES, VISIBLE_SHARE * len(every))
        return self._visible

    def start(self) -> Unknowns:
        r = self.inferred_reader
        kind = r.get("kind")
        spec = {"fast": "blocking", "never": "never"}.get(kind, "")
        if kind == "periodic":
            from tcpsim.units import parse_duration
            ns = parse_duration(r["every"], "reader.every")
            spec = f"periodic:{r['bytes']}B/{ns}ns"
        return Unknowns(reader=spec or "blocking", phase_us=self.read_phase_us())

    def read_phase_us(self) -> int:
        """Where the inferred reader's grid falls (its start, us on the trace's axis: the
        window updates' phase, tcpsim.pcap.workload.read_grid), 0 when none was found."""
        from tcpsim.units import parse_duration
        start = self.inferred_reader.get("start")
        return parse_duration(start, "reader.start") // 1000 if start else 0


def nice(x: float) -> int:
    """The power of two nearest x when within 25 % of it (readers ask for 4096, 65536), else x."""
    import math
    p = 1 << max(0, round(math.log2(max(1.0, x))))
    return p if abs(p - x) <= 0.25 * x else max(1, round(x))


def candidates(cap: Capture, name: str, cur: Unknowns, profile: str = "linux-6.18") -> list[Any]:
    if name == "reader":
        return cap.reader_candidates()
    if name == "device":
        return list(DEVICES)
    if name == "reuse":
        return [0, 1] if device(cur.device).strategy == "sender" else [0]
    if name == "hz":
        return list(HZS)
    if name == "timing":
        if replays_reads(cur):
            return ["exact"]            # the reads are placed: no lateness drawn on top
        return list(TIMINGS) + [t for t in extra_timings() if t not in TIMINGS]
    if name == "reads_us":
        return list(READS_US) if is_phased(cur.reader) or reader_period_us(cur.reader) else [0]
    if name == "rmem1":
        return list(RMEM1)
    if name == "owns_us":
        return list(OWNS_US) if cur.reader != "never" else [0]
    if name == "writer":
        return list(FEEDS)
    if name == "wowns_us":
        return list(WRITE_OWNS_US)
    if name == "shrink":
        from tcpsim.catalog import get_profile
        return [0, 1] if "tcp_shrink_window" in get_profile(profile).known_sysctls() else [0]
    if name == "phase_us" and is_phased(cur.reader):
        return list(PHASED_LEADS_US)
    if name == "skip" and is_phased(cur.reader):
        ph = cap.phases()
        return list(range(min(SKIP_MAX, ph[0].first // ph[0].every) + 1)) if ph else [0]
    if name == "phase_us":
        period = reader_period_us(cur.reader)
        if not period:
            return [0]
        return list(dict.fromkeys([*cap.phase_candidates(period),
                                   *grid_phases(period, cap.read_phase_us() % period)]))
    if name == "skip":
        period = reader_period_us(cur.reader)
        return cap.skip_candidates(period) if period else [0]
    return [getattr(cur, name)]


def reuse_device(spec: str) -> str:
    """The device `spec` with the reader's frees reaching the writer's pages at once
    (`reuse=on`; a local pair's only: other devices build their own skbs)."""
    dev = device(spec)
    if dev.strategy != "sender" or dev.reuse:
        return spec
    return spec + ("," if ":" in spec else ":") + "reuse=on"


def extra_timings() -> list[str]:
    """Host presets beyond the shipped captures' (made by `tcpsim timing measure`)."""
    from tcpsim.app_latency import HOSTS
    return [h for h in HOSTS if h not in TIMINGS and not h.startswith("dev-vm-")]


PHASE_FINE = 40            # grid_phases(): steps of the period around the capture's grid


def grid_phases(period: int, grid: int) -> list[int]:
    """Phases (us) around the capture's read grid `grid` (us within `period`, the window
    updates' phase: tcpsim.pcap.workload.read_grid), in steps of period / PHASE_FINE. On one
    host a read and a segment arrive within tens of microseconds of each other, and which
    comes first moves the windows (veth-periodic-small-writes-shrink1: reads 38 us before
    the updates' mean phase grade 0.64, at it 0.53)."""
    return [(grid + round(period * k / PHASE_FINE)) % period for k in range(-4, 5)]


def reader_period_us(spec: str) -> int:
    """A periodic (or oscillating: its first) reader's period in us (0 for others)."""
    if not spec.startswith(("periodic:", "oscillating:")):
        return 0
    from tcpsim.units import parse_duration
    every = spec.partition("/")[2].partition(",")[0]
    return parse_duration(every, "--reader every") // 1000


def replays_reads(u: Unknowns) -> bool:
    """The candidate's reads are the replay reader's ticks (Capture._read_times)."""
    return is_phased(u.reader) or bool(u.reads_us and reader_period_us(u.reader))


def is_phased(spec: str) -> bool:
    """A phased reader: `phased:BYTES` -- BYTES a tick on the phases the capture's read-drawn
    ACKs show (tcpsim.pcap.readtimes.phases; fitted only, not a scenario reader)."""
    return spec.startswith("phased:")


def phased_size(spec: str) -> int:
    """A phased reader's bytes a tick (tcpsim.pcap.workload.parse_phased)."""
    from tcpsim.pcap.workload import parse_phased
    return parse_phased(spec)


def refine_reader(spec: str) -> list[str]:
    """Sizes around a periodic (or phased) reader's best: +-3, 6, 12 %, and the round sizes
    within 12 % (round_sizes()): a program reads a round count, and the grade is sharp in
    it -- one skb boundary more or less under a read moves the window a read earlier or
    later (veth-periodic-small-writes-shrink1, whose reader takes 1000 B a millisecond: 0.725
    at 996 B, 0.810 at 1000, 0.732 at 1004 on linux-6.18 with the rest at the truth)."""
    if is_phased(spec):
        n = phased_size(spec)
        near = [max(1, round(n * f)) for f in (0.88, 0.94, 0.97, 1.0, 1.03, 1.06, 1.12)]
        return [f"phased:{m}B" for m in dict.fromkeys([*near, *round_sizes(n)])]
    if not spec.startswith("periodic:"):
        return [spec]
    size, _, period = spec[len("periodic:"):].partition("/")
    n = int(size.rstrip("B"))
    near = [max(1, round(n * f)) for f in (0.88, 0.94, 0.97, 1.0, 1.03, 1.06, 1.12)]
    return [f"periodic:{m}B/{period}" for m in dict.fromkeys([*near, *round_sizes(n)])]


def round_sizes(n: int, within: float = 0.12) -> list[int]:
    """The round read sizes within `within` of n: multiples of half a power of ten (one
    significant digit and a half: 900, 950, 1000, ...) and powers of two."""
    import math
    lo, hi = n * (1 - within), n * (1 + within)
    step = max(1, 5 * 10 ** (int(math.log10(max(1, n))) - 1))
    out = [m for m in range(-(-int(lo) // step) * step, int(hi) + 1, step) if m > 0]
    p = 1
    while p <= hi:
        if p >= lo:
            out.append(p)
        p *= 2
    return sorted(set(out))


CROSS_ROUNDS = 3           # rank(): rounds of every variant tried at every other's best (_cross_seeded)
RANK_PASSES = 2            # rank(): every other variant's search, from the seeds and its own starts
SEED_PASSES = 4            # rank(): the first variant's search, run until it stops changing
FIT_WINDOW_S = 2.0         # the search replays at most this much of a capture (see fit())
FIT_MAX_SEGMENTS = 40_000  # ... and at most this many of its segments (two searches' worth)


def fit(cap: Capture, profile: str, policies: tuple[str, ...] = (),
        pinned: dict[str, Any] | None = None, passes: int = 2,
        start: Unknowns | list[Unknowns] | None = None, order: tuple[str, ...] = ORDER,
        progress: Callable[[str], None] | None = None,
        window_s: float | None = FIT_WINDOW_S) -> FitResult:
    """Coordinate search of the unknowns for one profile from each start (`start`: one or a
    list; default `cap.starts()`, the inferred reader on each of START_DEVICES), keeping the
    best end (the first of equals); see the module docstring. The candidates are replayed
    over the capture's first `window_s` seconds (None: all of it): the unknowns act from the
    first window on, and a long or fast capture's search then costs a bounded number of
    seconds (at most FIT_MAX_SEGMENTS segments: 0.5 s of a 1 Gbit/s transfer); the best is
    replayed over the whole capture. FIT_MAX_SEGMENTS is shared by the searches: with more
    starts than START_DEVICES (each writer feed's) each replays fewer."""
    from tcpsim.engine.result import few_gc_passes
    whole = cap.until_ns
    starts = cap.starts() if start is None else [start] if isinstance(start, Unknowns) else start
    if window_s is not None:
        searches = len({for_profile(replace(s, **(pinned or {})), profile) for s in starts})
        most = FIT_MAX_SEGMENTS * len(START_DEVICES) // max(len(START_DEVICES), searches)
        w = min(int(window_s * 1e9), cap.segment_time(most))
        cap.until_ns = w if whole is None else min(whole, w)
    cut = cap.until_ns                  # the search's window: all of the capture, or its start
    covers = cut is None or cut == whole or (whole is None and cut >= cap.k.end_ns)
    try:
        # the capture's millions of objects stay alive through every replay: the collector's
        # default passes would walk them again and again, finding no cycles
        with few_gc_passes():
            return _fit(cap, profile, policies, pinned, passes, starts, order, progress, whole,
                        covers)
    finally:
        cap.until_ns = whole


def _fit(cap: Capture, profile: str, policies: tuple[str, ...], pinned: dict[str, Any] | None,
         passes: int, starts: list[Unknowns], order: tuple[str, ...],
         progress: Callable[[str], None] | None, whole: int | None,
         covers: bool = True) -> FitResult:
    """The searches from each start; the best end wins (the first of equals), graded over the
    whole capture as the ranking grades it -- where the search's window (`covers` false) is
    only its start, each end is replayed over all of it to choose."""
    pinned = dict(pinned or {})
    t0 = time.perf_counter()
    cache: dict[Unknowns, tuple[Grade, ReplayResult]] = {}    # shared by the starts

    def ev(u: Unknowns) -> Grade:
        if u not in cache:
            cache[u] = cap.replay(profile, policies, u, full=False)
        return cache[u][0]

    firsts = [for_profile(replace(s, **pinned), profile) for s in starts]
    ends = [_search(cap, profile, u, pinned, passes, order, progress, ev)
            for u in dict.fromkeys(firsts)]
    distinct: dict[Unknowns, tuple[Unknowns, dict[str, dict[Any, float]]]] = {}
    for e in ends:
        distinct.setdefault(e[0], e)                # the first search that ended there
    cap.until_ns = whole

    def over_all(e: tuple[Unknowns, Any]) -> float:
        """An end's grade over the whole capture (the search's, where its window is all of
        it; else a replay keeping only the ACKs: one whole trace in memory at a time)."""
        if covers or len(distinct) == 1:
            return ev(e[0]).total
        return cap.replay(profile, policies, e[0], full=False)[0].total

    cur, sweeps = max(distinct.values(), key=over_all)     # max keeps the first of equals
    g, rp = cap.replay(profile, policies, cur)
    out = [_fitted(n, cur, sweeps.get(n, {}), n in pinned) for n in ORDER]
    return FitResult(profile, tuple(policies), cur, g, out, len(cache), time.perf_counter() - t0,
                     rp, [e[0] for e in ends], cap.phases() if is_phased(cur.reader) else [])


def _search(cap: Capture, profile: str, cur: Unknowns, pinned: dict[str, Any], passes: int,
            order: tuple[str, ...], progress: Callable[[str], None] | None,
            ev: Callable[[Unknowns], Grade]) -> tuple[Unknowns, dict[str, dict[Any, float]]]:
    """One coordinate search from `cur`: its end and the grades of its last sweeps. The
    unknowns of LATE are left at their start until the others have settled (up to `passes`
    passes); then they are swept, and only if one moves does the search run again with all
    free -- so a search ends no lower than it would with them held (the writer swept among
    the others led lo-periodic-4096-10ms-shrink1's search to 0.716 from 0.863). (Without
    that second search, every feed having a start of its own, veth-gso-fast's ranking fell
    from 0.853 to 0.660 and from 6.18 to 6.14 first.)"""
    sweeps: dict[str, dict[Any, float]] = {}
    free = [n for n in order if n not in pinned]
    early = [n for n in free if n not in LATE]
    cur = _passes(cap, profile, cur, early, free, passes, progress, ev, sweeps)
    before = cur
    cur = _passes(cap, profile, cur, [n for n in free if n in LATE], free, 1, progress, ev,
                  sweeps)
    if cur != before:
        cur = _passes(cap, profile, cur, free, free, passes, progress, ev, sweeps)
    return cur, sweeps


def _passes(cap: Capture, profile: str, cur: Unknowns, names: list[str], free: list[str],
            passes: int, progress: Callable[[str], None] | None,
            ev: Callable[[Unknowns], Grade], sweeps: dict[str, dict[Any, float]]) -> Unknowns:
    """Up to `passes` passes over `names` (of the unknowns not pinned, `free`), one unknown at
    a time, until a pass changes nothing; each sweep's grades go to `sweeps`."""
    for i in range(passes):
        before = cur
        for name in names:
            vals = candidates(cap, name, cur, profile)
            if name == "reader" and i > 0:
                vals = list(dict.fromkeys([*vals, *refine_reader(cur.reader)]))
            if getattr(cur, name) not in vals:
                vals = [getattr(cur, name), *vals]
            partner = JOINT.get(name)
            if partner in free and len(vals) > 1:
                cur = _joint_sweep(cap, profile, cur, name, vals, partner, sweeps, ev)
            else:
                moved = [_moved(cap, cur, name, v, free) for v in vals]
                scored = [(ev(u).total, -j, v) for j, (u, v) in enumerate(zip(moved, vals))]
                sweeps[name] = {v: g for g, _, v in scored}
                best = max(scored)
                # keep the current value unless another is strictly better (deterministic)
                if best[0] > ev(cur).total:
                    cur = moved[-best[1]]
            if progress:
                progress(f"{profile}: {name} -> {cur.show(name)} ({ev(cur).total:.3f})")
        if cur == before:
            break
    return cur


def _moved(cap: Capture, cur: Unknowns, name: str, v: Any, free: list[str]) -> Unknowns:
    """`cur` with `name` set to `v`. Another periodic reader brings its own grid (where free):
    its phase where the read-drawn ACKs bunch on its period (READ_ACK_LAG_US before them), and as many skipped ticks as keep the reading's start --
    its first read less one period, where a steady reader of the same rate would have
    begun -- nearest the current one's (the bytes read by any time then stay about the
    same): a phase and skip fitted for one period mean nothing on another."""
    u = replace(cur, **{name: v})
    if replays_reads(u) and u.timing != "exact":
        u = replace(u, timing="exact")          # the replay reader draws no lateness
    if name != "reader" or v == cur.reader or "phase_us" not in free or "skip" not in free:
        return u
    if is_phased(v) != is_phased(cur.reader) and is_phased(v):
        return replace(u, phase_us=PHASED_LEADS_US[1], skip=0)
    period = reader_period_us(v)
    if not period:
        return u
    was = reader_period_us(cur.reader)
    began = cur.phase_us + cur.skip * was - was if was else 0
    peak = cap.read_ack_phase(period)
    phase = began % period if peak is None else (peak - READ_ACK_LAG_US) % period
    skip = max(0, round((began + period - phase) / period))
    return replace(u, phase_us=phase, skip=min(skip, max(cap.skip_candidates(period))))


def _joint_sweep(cap: Capture, profile: str, cur: Unknowns, name: str, vals: list[Any],
                 partner: str, sweeps: dict[str, dict[Any, float]],
                 ev: Callable[[Unknowns], Grade]) -> Unknowns:
    """Sweep `name` over `vals` and its JOINT partner over its candidates together (every
    pair), keeping `cur` unless a pair grades strictly better. Each sweep's record is its
    value's best over the other, at the pair kept."""
    pvals = candidates(cap, partner, cur, profile)
    if getattr(cur, partner) not in pvals:
        pvals = [getattr(cur, partner), *pvals]
    pairs = [(v, w) for v in vals for w in pvals]
    scored = [(ev(replace(cur, **{name: v, partner: w})).total, -j, (v, w))
              for j, (v, w) in enumerate(pairs)]
    best = max(scored)
    if best[0] > ev(cur).total:
        cur = replace(cur, **{name: best[2][0], partner: best[2][1]})
    sweeps[name] = {v: max(g for g, _, (a, b) in scored if a == v) for v in vals}
    sweeps[partner] = {w: g for g, _, (a, w) in scored if a == getattr(cur, name)}
    return cur


def for_profile(u: Unknowns, profile: str) -> Unknowns:
    """`u` made valid on `profile`: tcp_shrink_window off where the profile has no such sysctl
    (before 6.5 and 6.1.59; the shrink-window patch is the way to ask for it there)."""
    if u.shrink:
        from tcpsim.catalog import get_profile
        if "tcp_shrink_window" not in get_profile(profile).known_sysctls():
            return replace(u, shrink=0)
    return u


def _fitted(name: str, cur: Unknowns, grades: dict[Any, float], pinned: bool) -> Fitted:
    value = cur.show(name)
    if pinned:
        return Fitted(name, value, True, "pinned", [value], {})
    shown = {replace(cur, **{name: v}).show(name): g for v, g in grades.items()}
    best = shown.get(value, max(shown.values(), default=0.0))
    near = [v for v, g in sorted(shown.items(), key=lambda kv: -kv[1]) if best - g < DETERMINED]
    if len(shown) <= 1 or max(shown.values()) - min(shown.values()) < DETERMINED:
        how = "not at all"
    elif near == [value]:
        how = "well"
    else:
        how = "loosely"
    return Fitted(name, value, False, how, near, {k: round(v, 4) for k, v in shown.items()})


@dataclass
class Ranking:
    """Every profile's best fit, best first, and what the capture says of each."""

    fits: list[FitResult]
    verdicts: dict[str, str] = field(default_factory=dict)
    tells_apart: bool = True
    fits_well: bool = True          # the best grade reaches FITS

    def as_dict(self) -> dict[str, Any]:
        return {"tells_apart": self.tells_apart, "fits_well": self.fits_well,
                "thresholds": {"consistent": CONSISTENT, "ruled_out": RULED_OUT,
                               "determined": DETERMINED, "fits": FITS},
                "profiles": [{**f.as_dict(), "verdict": self.verdicts[f.label]} for f in self.fits]}


def rank(cap: Capture, variants: list[tuple[str, tuple[str, ...]]],
         pinned: dict[str, Any] | None = None, do_fit: bool = True,
         progress: Callable[[str], None] | None = None) -> Ranking:
    """Fit (or, without do_fit, replay the start/pinned values under) every variant and rank
    them by grade. The first variant's fit (from each start, until a pass changes nothing,
    at most SEED_PASSES) seeds the others' searches: each of the others is searched from
    the first one's ends and from its own starts (as `--fit` alone searches it), RANK_PASSES
    passes, and keeps the best end -- so every variant starts where the first ended from
    each start device, and no variant is left only where another kernel's fit ended. (With
    two passes the first variant's search could stop short of where one more pass takes
    it, and the others, seeded there, then had that pass and it did not: on
    lo-periodic-4096-10ms-shrink1 linux-7.1 graded 0.6737 and 7.1 + shrink-window, one
    pass further, 0.6755. Seeded only, one pass each, a kernel whose best fit lies where
    the first kernel's does not was never searched there: veth-gso-fast's linux-6.18
    graded 0.510 ranked, 0.803 fitted alone -- linux-7.1, first, has no fit there, its
    DRS damped below 1 ms of RTT.)"""
    fits: list[FitResult] = []
    seeds: list[Unknowns] | None = None
    for profile, policies in variants:
        if do_fit:
            f = fit(cap, profile, policies, pinned,
                    passes=SEED_PASSES if seeds is None else RANK_PASSES,
                    start=None if seeds is None else [*seeds, *cap.starts()],
                    progress=progress)
            if seeds is None:
                seeds = f.ends
        else:
            u = replace(cap.start(), **(pinned or {}))
            t = time.perf_counter()
            g, rp = cap.replay(profile, policies, u)
            f = FitResult(profile, policies, u, g, [], 1, time.perf_counter() - t, rp)
        fits.append(f)
    for _ in range(CROSS_ROUNDS if do_fit else 0):
        bests = list(dict.fromkeys(f.best for f in fits))
        again = [_cross_seeded(cap, f, bests, pinned, progress) for f in fits]
        if all(a is f for a, f in zip(again, fits)):
            break
        fits = again
    fits.sort(key=lambda f: -f.grade.total)
    best = fits[0].grade.total
    worst = fits[-1].grade.total
    r = Ranking(fits, tells_apart=best - worst >= CONSISTENT and best >= FITS,
                fits_well=best >= FITS)
    for f in fits:
        gap = best - f.grade.total
        if not r.fits_well:
            r.verdicts[f.label] = "undecided"
        elif not r.tells_apart or gap < CONSISTENT:
            r.verdicts[f.label] = "consistent"
        elif gap > RULED_OUT:
            r.verdicts[f.label] = "ruled out"
        else:
            r.verdicts[f.label] = "less likely"
    return r


def _cross_seeded(cap: Capture, f: FitResult, bests: list[Unknowns],
                  pinned: dict[str, Any] | None,
                  progress: Callable[[str], None] | None) -> FitResult:
    """`f`, or its search continued (one pass) from the other variants' bests that grade
    higher under f's kernel than f's own: a kernel's grade is at least what it grades at
    any other kernel's fitted unknowns. rank() repeats it (at most CROSS_ROUNDS) until no
    variant gains, so a pass one kernel got from another's point every kernel may get from
    it. (veth-gso-fast: linux-6.14, searched from its starts and the seeds, ended at 0.601;
    at linux-6.18's fitted values it grades as 6.18 does -- the capture cannot tell their
    receive-buffer growth apart -- so "ruled out" was its search's verdict, not the
    capture's.)"""
    better = []
    for u in bests:
        u = for_profile(u, f.profile)
        if u != f.best and cap.replay(f.profile, f.policies, u, full=False)[0].total > \
                f.grade.total:
            better.append(u)
    if not better:
        return f
    g = fit(cap, f.profile, f.policies, pinned, passes=1, start=better, progress=progress)
    return g if g.grade.total > f.grade.total else f


def all_variants(patches: tuple[str, ...] = ()) -> list[tuple[str, tuple[str, ...]]]:
    """Every built-in profile, newest first, then each given patch on the newest and on 6.1."""
    from tcpsim.catalog import builtin_profiles
    names = sorted(builtin_profiles(), key=_version, reverse=True)
    out: list[tuple[str, tuple[str, ...]]] = [(n, ()) for n in names]
    for patch in patches:
        for base in dict.fromkeys((names[0], "linux-6.1")):
            out.append((base, (patch,)))
    return out


def _version(name: str) -> tuple[int, ...]:
    import re
    return tuple(int(x) for x in re.findall(r"\d+", name)) or (0,)


UNKNOWN_FIELDS = tuple(f.name for f in fields(Unknowns))
