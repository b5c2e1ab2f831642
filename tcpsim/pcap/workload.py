"""One captured connection -> a workload: a scenario tcpsim can run under any profile.

* writer: the sender's data as it first appeared on the wire. The exact times and sizes are
  the trace's 'write' rows (tcpsim.pcap.wirelog), which `tcpsim replay` writes one by one;
  the scenario's `[writer]` summarises them for a plain `tcpsim run` (periodic with the
  median size and gap, or bulk when the data came back to back);
* link: each direction's delay, half the handshake's round trip (or `--delay`); the MTU from
  the smaller MSS announced; timestamps, SACK and window scaling as negotiated, and the
  receiver's `tcp_rmem` maximum set so the model announces the captured window scale;
* reader: `--reader periodic:1B/1ms`, `--reader blocking` (reads whatever arrived, when it
  arrives), `--reader never`, or inferred from the advertised window (`infer_reader`), with
  one sentence saying how.

Kernel settings the wire does not show (tcp_adv_win_scale, buffer sizes other than the
scale's, the receiver's kernel) are the profile's defaults unless given.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from tcpsim.pcap import PcapError
from tcpsim.pcap.wirelog import Handshake

DEFAULT_RMEM_MAX = 6291456        # tcp_rmem[2] default: window scale 7
BULK_GAP_NS = 200_000             # writes closer than this (median) are a bulk sender's
_READER = re.compile(r"^periodic:(\d+\s*[A-Za-z]*)/(\d*\.?\d+\s*[a-z]+)$")
_OSC = re.compile(r"^oscillating:(\d+\s*[A-Za-z]*)/(\d*\.?\d+\s*[a-z]+),"
                  r"(\d+\s*[A-Za-z]*)/(\d*\.?\d+\s*[a-z]+),(\d*\.?\d+\s*[a-z]+)$")


def parse_reader(text: str) -> dict[str, Any]:
    """--reader periodic:BYTES/EVERY | oscillating:B/EVERY,B2/EVERY2,PERIOD | blocking | never
    -> a scenario [reader] table."""
    t = text.strip()
    if t in ("blocking", "fast"):
        return {"kind": "fast"}
    if t == "never":
        return {"kind": "never"}
    o = _OSC.match(t)
    if o:
        return parse_oscillating(text, o)
    if t.startswith("phased:"):
        parse_phased(t)
        raise PcapError("--reader", None, f"{text!r} is a fitted reader (its phases are read "
                        "off the capture's ACKs)", "give --fit (or --profiles) with it")
    m = _READER.match(t)
    if not m:
        raise PcapError("--reader", None, f"{text!r} is not a reader",
                        "write periodic:BYTES/EVERY (e.g. periodic:1B/1ms), "
                        "oscillating:B/EVERY,B2/EVERY2,PERIOD, blocking or never")
    from tcpsim.scenario import ScenarioError, parse_duration, parse_size
    try:
        nbytes = parse_size(m.group(1).strip(), "--reader bytes")
        every = parse_duration(m.group(2).strip(), "--reader every", positive=True)
    except ScenarioError as exc:
        raise PcapError("--reader", None, str(exc), "e.g. --reader periodic:1B/1ms") from None
    if nbytes < 1 or every < 1:
        raise PcapError("--reader", None, f"{text!r}: bytes and period must be positive",
                        "e.g. --reader periodic:1B/1ms")
    return {"kind": "periodic", "bytes": nbytes, "every": f"{every}ns"}


_PHASED = re.compile(r"^phased:(\d+)B?$")


def parse_phased(text: str) -> int:
    """--reader phased:BYTES (with --fit): BYTES a tick on the phases the capture's
    read-drawn ACKs show (tcpsim.pcap.readtimes.phases) -> BYTES."""
    m = _PHASED.match(text.strip())
    if not m or int(m.group(1)) < 1:
        raise PcapError("--reader", None, f"{text!r} is not a phased reader",
                        "write phased:BYTES (e.g. phased:4096B): BYTES a read, on the phases "
                        "the capture's read-drawn ACKs show")
    return int(m.group(1))


GRID_PERIODS_MS = (1, 2, 5, 10, 20, 50, 100)   # the read periods a grid is looked for at
GRID_MIN_UPDATES = 8          # window updates needed to look for a grid at all
GRID_CONCENTRATION = 0.8      # ... and how tightly their times must sit on it (0..1)


def window_updates(acks: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """(time, window) of the ACKs that opened the window without acknowledging anything new:
    the receiver's reads sent them (tcp_cleanup_rbuf() [net/ipv4/tcp.c]), so they fall when
    the application read."""
    return [(t, w) for (_, a0, w0), (t, a, w) in zip(acks, acks[1:]) if a == a0 and w > w0]


def read_grid(times: list[int]) -> tuple[int, int] | None:
    """(period, phase) in ns of the grid the reads that sent `times` (window updates) fall
    on: the longest of GRID_PERIODS_MS whose phases (t mod period) concentrate -- the mean
    resultant length of the phase angles at least GRID_CONCENTRATION (1: all on one point,
    about 0 for times spread over the period) -- and their circular mean. A reader that
    takes 4 KiB every 10 ms reopens the window only at some of its reads, but always at a
    multiple of 10 ms from the others (lo-periodic-4096-10ms in tests/fixtures/pcaps: every
    update at x0.6 ms), so 10 ms concentrates and 20 ms does not; every divisor of the period
    concentrates too, hence the longest. None: too few updates, or no period concentrates."""
    import cmath
    import math
    if len(times) < GRID_MIN_UPDATES:
        return None
    for ms in sorted(GRID_PERIODS_MS, reverse=True):
        period = ms * 1_000_000
        mean = sum(cmath.exp(2j * math.pi * (t % period) / period) for t in times) / len(times)
        if abs(mean) >= GRID_CONCENTRATION:
            phase = round((cmath.phase(mean) / (2 * math.pi)) % 1.0 * period)
            return period, phase % period
    return None


def infer_reader(cols: dict[str, list]) -> tuple[dict[str, Any], str]:
    """The reader the advertised window suggests, and how it was inferred.

    While a reader keeps up, the window stays near the largest it has been. Once it falls
    below half of that, data is waiting in the receive queue, and from then on the right edge
    (ack + window) moves only as the application frees space: its slope is the read rate. No
    fall: a blocking reader; a fall and an edge that no longer moves: a reader that never
    reads; else a periodic reader at that rate (1 ms ticks, or one byte per tick when slower
    than 1 B/ms). A receive buffer that grows while the queue is full (autotuning, or the
    prune-and-clamp growth of seed-unbounded-growth) also moves the edge and reads as faster
    reading: the sentence says what was measured, so a user who knows better gives --reader."""
    acks = [(t, a, w) for t, sock, ev, a, w, fl in zip(
        cols["t_ns"], cols["sock"], cols["event"], cols["ack_seq"], cols["win_scaled"],
        cols["flags"]) if sock == "rcv" and ev == "tx" and a >= 0 and "S" not in fl
        and "R" not in fl]
    if len(acks) < 2:
        return {"kind": "fast"}, "reader: blocking (too few ACKs to infer anything)"
    peak, fall = 0, None
    for i, (_, _, w) in enumerate(acks):
        peak = max(peak, w)
        if peak and w < peak // 2:
            fall = i
            break
    if fall is None:
        return {"kind": "fast"}, (f"reader inferred blocking: the advertised window never fell "
                                  f"below half its largest value ({peak} B), so nothing waited "
                                  "to be read")
    t0, a0, w0 = acks[fall]
    t1, a1, w1 = acks[-1]
    moved = (a1 + w1) - (a0 + w0)
    span = max(1, t1 - t0)
    received = a1 - a0
    where = f"the window fell to {w0} B (from {peak} B) at {t0 / 1e9:.3f} s"
    if moved <= max(0, received // 100):
        return {"kind": "never"}, (f"reader inferred never: {where} and its right edge then moved "
                                   f"{max(moved, 0)} B in {span / 1e9:.3f} s")
    per_ms = moved * 1_000_000 / span
    grid = read_grid([t for t, _ in window_updates(acks[fall:])])
    if grid is not None and per_ms * grid[0] / 1e6 >= 1:
        period, phase = grid
        # the 1 ms rate's bytes times the period: the rate read back from it is the one a
        # 1 ms reader is inferred at (a start of the fit, tcpsim.pcap.fit.Capture.starts)
        app = {"kind": "periodic", "bytes": max(1, round(per_ms)) * (period // 1_000_000),
               "every": f"{period // 1_000_000}ms", "start": f"{phase}ns"}
        how = (f"{app['bytes']} B every {period // 1_000_000} ms from {phase / 1e6:.3f} ms "
               f"(the window updates fall on that grid)")
    elif per_ms >= 1:
        app = {"kind": "periodic", "bytes": max(1, round(per_ms)), "every": "1ms"}
        how = f"{app['bytes']} B every 1 ms"
    else:
        every_us = max(1, round(1000 / per_ms))
        app = {"kind": "periodic", "bytes": 1, "every": f"{every_us}us"}
        how = f"1 B every {every_us} us"
    return app, (f"reader inferred periodic, {how}: {where} and its right edge then advanced "
                 f"{moved} B in {span / 1e9:.3f} s (the read rate); give --reader to override")


def writer_summary(cols: dict[str, list]) -> dict[str, Any]:
    """The [writer] table that summarises the trace's 'write' rows (trace columns)."""
    writes = [(t, n) for t, ev, n in zip(cols["t_ns"], cols["event"], cols["len"])
              if ev == "write"]
    if len(writes) < 2:
        return {"kind": "bulk", "bytes": max([n for _, n in writes], default=65536)}
    gap = int(statistics.median(b[0] - a[0] for a, b in zip(writes, writes[1:])))
    size = int(statistics.median(n for _, n in writes))
    if gap < BULK_GAP_NS:
        return {"kind": "bulk", "bytes": 65536}
    return {"kind": "periodic", "bytes": max(1, size), "every": f"{gap}ns"}


def receiver_sysctls(hs: Handshake) -> dict[str, Any]:
    """Receiver sysctls that make the model negotiate what the capture shows."""
    out: dict[str, Any] = {}
    if not (hs.rcv.timestamps and hs.snd.timestamps):
        out["net.ipv4.tcp_timestamps"] = 0
    if not (hs.rcv.sack_ok and hs.snd.sack_ok):
        out["net.ipv4.tcp_sack"] = 0
    if not hs.scaled:
        out["net.ipv4.tcp_window_scaling"] = 0
    else:
        # tcp_select_initial_window() shifts max(tcp_rmem[2], rmem_max) right until it fits
        # in 16 bits: 2^(15 + ws) takes exactly ws shifts (and is the power of two people
        # set: 32 MiB for 10 -- 6.17's default --, 256 MiB for 13); 7 is the 6 MiB default
        # before 6.17. Always set: the profiles' defaults differ (6 MiB, 32 MiB), and a replay
        # at another scale than the capture's rounds every window differently.
        out["net.ipv4.tcp_rmem"] = [4096, 131072, DEFAULT_RMEM_MAX if hs.rcv.wscale == 7
                                    else 1 << (15 + max(hs.rcv.wscale, 2))]
    return out


def mtu(hs: Handshake, cols: dict[str, list]) -> int:
    """The link MTU that gives the model the captured MSS (IPv4 header sizes)."""
    known = [m for m in (hs.rcv.mss, hs.snd.mss) if m > 0]
    mss = min(known) if known else max((n for n, sock in zip(cols["len"], cols["sock"])
                                        if sock == "snd"),
                                       default=1460) + (12 if hs.rcv.timestamps else 0)
    return min(65536, max(576, mss + 40))


def scenario(name: str, description: str, hs: Handshake, cols: dict[str, list],
             delays: tuple[int, int], duration_ns: int, reader: dict[str, Any]) -> dict[str, Any]:
    """The workload as a scenario document (scenario_from_dict / TOML) of the trace's columns."""
    return {"name": name, "description": description, "duration": f"{max(1, duration_ns)}ns",
            "sysctl": receiver_sysctls(hs),
            "link": {"delay_ab": f"{delays[0]}ns", "delay_ba": f"{delays[1]}ns", "mtu": mtu(hs, cols)},
            "receiver": {"role": hs.receiver_role},
            "writer": writer_summary(cols), "reader": reader}


def toml_text(doc: dict[str, Any], header: list[str]) -> str:
    """The scenario document as TOML (flat tables of strings, numbers and lists)."""
    lines = [f"# {h}" for h in header]
    tables = {k: v for k, v in doc.items() if isinstance(v, dict)}
    for k, v in doc.items():
        if not isinstance(v, dict):
            lines.append(f"{k} = {_toml_value(v)}")
    for k, table in tables.items():
        if not table:
            continue
        lines += ["", f"[{k}]"]
        for key, v in table.items():
            lines.append(f"{_toml_key(key)} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else '"' + key + '"'


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_oscillating(text: str, m: re.Match[str]) -> dict[str, Any]:
    """oscillating:B/EVERY,B2/EVERY2,PERIOD -> a scenario [reader] table."""
    from tcpsim.scenario import ScenarioError, parse_duration, parse_size
    hint = "e.g. --reader oscillating:4096B/2ms,4096B/20ms,250ms"
    try:
        b1 = parse_size(m.group(1).strip(), "--reader bytes")
        e1 = parse_duration(m.group(2).strip(), "--reader every", positive=True)
        b2 = parse_size(m.group(3).strip(), "--reader bytes2")
        e2 = parse_duration(m.group(4).strip(), "--reader every2", positive=True)
        period = parse_duration(m.group(5).strip(), "--reader period", positive=True)
    except ScenarioError as exc:
        raise PcapError("--reader", None, str(exc), hint) from None
    if min(b1, b2, e1, e2, period) < 1:
        raise PcapError("--reader", None, f"{text!r}: sizes and periods must be positive", hint)
    return {"kind": "oscillating", "bytes": b1, "every": f"{e1}ns", "bytes2": b2,
            "every2": f"{e2}ns", "period": f"{period}ns"}
