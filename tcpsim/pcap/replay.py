"""Replay a capture's workload in the model and score it against the capture.

`tcpsim replay FILE.pcap --profile P [--policy X]` imports the connection
(tcpsim.importers.pcap: wire trace + workload), plans the replay as `tcpsim validate` plans a
kernel capture's (tcpsim.validate.replay.plan: same time axis, link, reader), except for
the writer: `ScheduleWriter` (tcpsim.validate.replay, native/src/engine/replay.rs) writes
exactly the bytes that first appeared on the wire, keeping what the model's socket does not
take yet for when it has room -- each at the time it left the sender, or grouped by another
writer feed (writer_feed(), FEEDS: fitted by `--fit`, given by `--writer-feed`). It runs on either
engine (`engine`, default: the run's default, the native one where built), with the same
result. The model's advertised windows are then scored against the capture's with
validate's scores and report (tcpsim.validate.run.score_replay).

A capture says nothing about the receiver's memory (`sk_rmem_alloc`, `sk_rcvbuf`): those
metrics are reported "unknown" and only the windows, the outcome classes the wire shows
(zero window, stall) and the bytes received are compared.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any

from tcpsim.validate.replay import ReplayError, plan, run_plan
from tcpsim.validate.run import Validation, score_replay
from tcpsim.validate.scores import Thresholds
from tcpsim.validate.trace import view
from tcpsim.importers.pcap import load
from tcpsim.pcap import PcapError
from tcpsim.pcap.tables import TableRecorder


WRITE_LEAD_NS = 1_000
"""Each write goes in this much before its data left the sender. Data that left when an ACK
opened the window was in the socket before that ACK came: written at the very instant, the
model's writer would run before the ACK and send what the old window allowed (a short
segment), where the real sender sent full ones after it."""


def replay_capture(path: str | Path, profile: str = "linux-6.18", policies: tuple[str, ...] = (),
                   sysctl: dict[str, Any] | None = None, until_s: float | None = None,
                   hz: int | None = None, thresholds: Thresholds | None = None,
                   engine: str | None = None, device: str | None = None,
                   feed: str = "as-sent", **import_opts: Any) -> Validation:
    """Import one connection of a capture, run its workload under `profile` (+ patches,
    + receiver sysctls, + the ingress `device`: a preset or spec, default the import's) on
    `engine` ("python" | "native", default: the run's default) and score the model against
    it; `feed`: how the capture's bytes reach the model's sender (writer_feed())."""
    imp = load(path, **import_opts)
    meta = dict(imp.meta)
    doc = dict(imp.scenario)
    doc["sysctl"] = {**doc.get("sysctl", {}), **(sysctl or {})}
    meta["scenario"] = doc
    k = view(imp.columns, meta)
    until_ns = None if until_s is None else int(until_s * 1e9)
    try:
        p = plan(k, profile, policies, until_ns, hz,
                 "--hz" if hz else "a capture does not record its kernel's HZ")
    except ReplayError as exc:
        raise PcapError(str(path), None, str(exc).split(":")[0],
                        "replay needs the connection's handshake: capture from before the "
                        "connect, or import it (tcpsim import pcap) to look at it") from None
    if device:
        p.scenario = p.scenario.with_(device=device)
        p.notes.append(f"device given: --device {device}")
    link = p.scenario.link
    p.write_ticks = write_ticks(k, p.shift_ns, p.end_ns, bool(meta["summary"].get("split_gso")),
                                feed, link.delay_ab, link.delay_ab + link.delay_ba)
    p.scenario = feed_scenario(p.scenario, feed)
    if feed != "as-sent":
        p.notes.append(f"writer feed given: --writer-feed {feed}")
    p.schedule = True
    p.notes = [*imp.notes, *p.notes]
    rp = run_plan(p, engine=engine, sink=TableRecorder(("rcv",)))
    return unknown_unscored(score_replay(Path(path), meta, k, rp, thresholds or Thresholds()))


FEEDS = ("as-sent", "bursts", "paced", "pauses", "backlogged")
"""How the replay's writer hands the capture's bytes to the model's sender (`--writer-feed`,
fitted by `replay --fit`): see writer_feed()."""
BURST_GAP_NS = 50_000
"""A segment that left within this of the previous one continues its burst (the sender
pushing out what it had: a write's segments, or what an ACK let out)."""
OPEN_CWND = 1000
"""The model sender's initial congestion window (segments) under the "paced" feed: out of
the way of any capture here (the largest flight in tests/fixtures/pcaps is 65 segments)."""
ACK_REACT_NS = 100_000
"""A segment the receiver saw within this plus a round trip after one of its ACKs left was
let out by that ACK (tcp_ack() -> tcp_data_snd_check(), in the ACK's softirq): its bytes
were waiting in the socket before. (The round trip, not the link's two delays: on one host
those are halves of the handshake's round trip, which is slower than the data path's.)"""


def writer_feed(writes: list[tuple[int, int]], acks: list[int], feed: str,
                react_ns: int = ACK_REACT_NS) -> list[tuple[int, int]]:
    """The writes (time, bytes) of a capture's data under a writer feed (FEEDS): `writes`
    one per transmission, `acks` the times of the receiver's ACKs moved to the same axis
    (sorted); a transmission within `react_ns` after an ACK was let out by it.

    * "as-sent": each transmission's bytes when it left. The model's sender never has data
      before the kernel's sent it, so it is never ahead of it -- and never cwnd-limited
      where the kernel's was: its congestion window does not grow as a bulk sender's does
      (tcp_is_cwnd_limited() [include/net/tcp.h]), and later it holds back what the kernel
      sent.
    * "bursts": as sent, but a run of back-to-back transmissions (each within BURST_GAP_NS
      of the one before) is one write, when its first left: its bytes were in the socket
      when the run began, and the kernel's sender sent them as multi-segment skbs
      (tcp_write_xmit() -> tso_fragment() [net/ipv4/tcp_output.c, 6.18]; traced on 6.18
      over veth with TSO/GSO off, docs/kernel-measurements.md E13: the burst a window update
      lets out is one skb of 12 segments), which software GSO cuts into fresh skbs that
      merge in the receiver's backlog and coalesce into its queue whole or not at all. Fed
      "as-sent", the model's sender sends such a run one segment at a time, one-segment
      skbs that reach the receiver as clones of the sender's (tcpsim.core.devices
      Device.sender_skb) and coalesce segment by segment.
    * "paced": as sent, the model's congestion window out of the way (feed_scenario(): an
      initial window of OPEN_CWND segments): the capture's own transmissions pace the
      sender -- they already show where the kernel's congestion window held it -- and the
      model's receiver window is the only thing that can hold it back further.
    * "backlogged": every byte ready when the first left, as a writer that always has data
      (a bulk writer: the send buffer, the congestion and the receive window pace it).
    * "pauses": backlogged, except where the capture shows the application idle: a
      transmission that started on its own -- more than BURST_GAP_NS after the previous one
      and not within ACK_REACT_NS of an ACK reaching the sender, so no window or cwnd was
      holding it -- is a write, and carries every byte up to the next such start. A bulk
      writer becomes one write, a periodic writer its writes."""
    if feed in ("as-sent", "paced") or not writes:
        return list(writes)
    if feed == "bursts":
        return _runs(writes)
    if feed == "backlogged":
        return [(writes[0][0], sum(n for _, n in writes))]
    if feed != "pauses":
        raise ValueError(f"writer feed {feed!r}: expected one of {', '.join(FEEDS)}")
    out: list[tuple[int, int]] = []
    prev = None
    for t, n in writes:
        j = bisect.bisect_right(acks, t) - 1
        let_out = j >= 0 and t - acks[j] <= react_ns
        if prev is None or (t - prev > BURST_GAP_NS and not let_out):
            out.append((t, n))
        else:
            out[-1] = (out[-1][0], out[-1][1] + n)
        prev = t
    return out


def _runs(writes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The writes grouped into runs of back-to-back transmissions: one (time of the run's
    first, bytes of the run) each ("bursts" in writer_feed())."""
    out: list[tuple[int, int]] = []
    prev = None
    for t, n in writes:
        if prev is not None and t - prev <= BURST_GAP_NS:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((t, n))
        prev = t
    return out


def feed_scenario(sc: Any, feed: str) -> Any:
    """The replay's scenario under a writer feed: "paced" opens the sender's congestion
    window (OPEN_CWND)."""
    from dataclasses import replace
    return replace(sc, initcwnd=OPEN_CWND) if feed == "paced" else sc


def write_ticks(k: Any, shift_ns: int, end_ns: int, split: bool, feed: str = "as-sent",
                delay_ab_ns: int = 0, rtt_ns: int = 0) -> list[tuple[int, int]]:
    """The ScheduleWriter's ticks (model axis): each write of the wire's data WRITE_LEAD_NS
    before it left, up to end_ns -- a super-segment split by --split-gso as one write
    (tcpsim.pcap.gso.transmissions) -- grouped by the writer `feed` (writer_feed(): the
    writes are at the sender, `delay_ab_ns` before the capture saw their data, and a write
    seen at most a round trip `rtt_ns` plus ACK_REACT_NS after an ACK was let out by it)."""
    from tcpsim.pcap.gso import transmissions
    writes = [(t, n) for t, n, _ in k.writes if t <= end_ns]
    if split:
        writes = transmissions(writes)
    if feed not in ("as-sent", "paced"):
        writes = writer_feed(writes, [a.t_ns - delay_ab_ns for a in k.acks], feed,
                             rtt_ns + ACK_REACT_NS)
    return [(max(0, t + shift_ns - WRITE_LEAD_NS), n) for t, n in writes]


def unknown_unscored(v: Validation) -> Validation:
    """A capture has no receiver memory: the metrics of it are shown (the model's side) but
    not scored, their kernel side unknown ("—" / null), never 0."""
    from dataclasses import replace
    v.score.metrics = [replace(m, scored=False, note="(not on the wire)")
                       if m.kernel is None and not m.name.startswith("ack_match") else m
                       for m in v.score.metrics]
    return v


def fit_capture(path: str | Path, profile: str = "linux-6.18", policies: tuple[str, ...] = (),
                fit_profile: str | None = None, sysctl: dict[str, Any] | None = None,
                until_s: float | None = None, pins: dict[str, Any] | None = None,
                thresholds: Thresholds | None = None, engine: str | None = "native",
                progress: Any = None, **import_opts: Any) -> tuple[Any, Any, Validation]:
    """`tcpsim replay --fit`: fit the unknowns under `fit_profile` (default: `profile`
    without patches), then replay the fitted workload under `profile` + `policies` and score
    it. Returns (FitResult, the target's Grade, its Validation)."""
    from dataclasses import replace as _replace
    from tcpsim.pcap.fit import Capture, fit, for_profile
    cap = Capture(path, sysctl=sysctl, until_s=until_s, engine=engine, **import_opts)
    f = fit(cap, fit_profile or profile, () if fit_profile is None else (), pins, progress=progress)
    target = for_profile(f.best, profile)
    if f.result is not None and (profile, tuple(policies), target) == (f.profile, f.policies,
                                                                      f.best):
        g, rp = f.grade, f.result          # the fit's own last replay: the same run
    else:
        g, rp = cap.replay(profile, policies, target)
    if target != f.best:
        rp.plan.notes.append(f"tcp_shrink_window={f.best.shrink} fitted, but {profile} has no "
                             "such sysctl: replayed without it (--policy shrink-window is the "
                             "patch)")
    k = _replace(cap.k, meta=cap._meta(cap.doc(target)))
    m = cap.last_full[1] if cap.last_full and cap.last_full[0] is rp else None
    v = unknown_unscored(score_replay(Path(path), k.meta, k, rp, thresholds or Thresholds(),
                                      model=m))
    return f, g, v
