"""`tcp:tcp_rcvbuf_grow` trace events (6.18+) from tracefs or `perf script`.

Accepted lines (other events and `#` comments in the same file are skipped):

    python3-812 [000] ..s1.  4518.261822: tcp_rcvbuf_grow: time=19960 rtt_us=... rcvbuf=...
    python3   812 [000]  4518.261822: tcp:tcp_rcvbuf_grow: time=19960 rtt_us=... rcvbuf=...

(`cat /sys/kernel/tracing/trace_pipe` with the event enabled, or `perf record -e
tcp:tcp_rcvbuf_grow` + `perf script`). The event's print format on 6.18 is

    time=%u rtt_us=%u copied=%u inq=%u space=%u ooo=%u scaling_ratio=%u rcvbuf=%u
    rcv_ssthresh=%u window_clamp=%u rcv_wnd=%u family=%s sport=%hu dport=%hu saddr=%pI4 ...

One 'state' row (detail "rcvbuf_grow", as tcpsim.capture writes them) per event: sk_rcvbuf =
rcvbuf, rcv_ssthresh, window_clamp, rcv_wnd, scaling_ratio, rcvq_space = space, rcv_rtt_us =
rtt_us, recv_q = inq, len = copied; t_ns = the trace timestamp relative to the first event.
With events of several sockets, `port` selects the receiver's local port (sport).
"""

from __future__ import annotations

import re
from typing import Any

from tcpsim.importers import ImportFormatError, Row, blank

EVENT = "tcp_rcvbuf_grow:"
_LINE = re.compile(r"\s(\d+\.\d+):\s+(?:tcp:)?tcp_rcvbuf_grow:\s*(.*)$")
REQUIRED = ("rtt_us", "copied", "inq", "space", "rcvbuf", "rcv_ssthresh", "window_clamp",
            "rcv_wnd", "sport")
COLUMNS = {"rcvbuf": "sk_rcvbuf", "rcv_ssthresh": "rcv_ssthresh", "window_clamp": "window_clamp",
           "rcv_wnd": "rcv_wnd", "scaling_ratio": "scaling_ratio", "space": "rcvq_space",
           "rtt_us": "rcv_rtt_us", "inq": "recv_q", "copied": "len"}
FIX = ("expected tcp:tcp_rcvbuf_grow lines from trace_pipe or perf script; see "
       "docs/importers.md")


def fields(body: str, where: str, lineno: int) -> dict[str, str]:
    """key=value pairs of an event's body."""
    out: dict[str, str] = {}
    for item in body.split():
        key, eq, value = item.partition("=")
        if eq:
            out[key] = value
    missing = [k for k in REQUIRED if k not in out]
    if missing:
        raise ImportFormatError(where, lineno, f"tcp_rcvbuf_grow event without field {missing[0]!r}",
                                "the line is truncated, or the kernel's event has another format: "
                                "capture it again (cat /sys/kernel/tracing/trace_pipe)")
    return out


def parse(lines: list[str], where: str = "<input>", port: int | None = None,
          **_: Any) -> tuple[list[Row], dict[str, Any]]:
    """Rows (one 'state' row per event of the selected socket) and metadata."""
    events: list[tuple[int, int, dict[str, str]]] = []
    for lineno, raw in enumerate(lines, start=1):
        if EVENT not in raw or raw.lstrip().startswith("#"):
            continue
        m = _LINE.search(raw)
        if not m:
            raise ImportFormatError(where, lineno, "a tcp_rcvbuf_grow line without a "
                                    "'<seconds>.<fraction>: ' timestamp before the event name", FIX)
        whole, _, frac = m.group(1).partition(".")
        t = int(whole) * 10**9 + int((frac + "000000000")[:9])
        events.append((t, lineno, fields(m.group(2), where, lineno)))
    if not events:
        raise ImportFormatError(where, None, "no tcp_rcvbuf_grow events",
                                "enable the event (echo 1 > /sys/kernel/tracing/events/tcp/"
                                "tcp_rcvbuf_grow/enable) and capture trace_pipe while the "
                                "receiver reads")
    ports = sorted({f["sport"] for _, _, f in events})
    if port is not None:
        events = [e for e in events if e[2]["sport"] == str(port)]
        if not events:
            raise ImportFormatError(where, None, f"no event with sport={port} (seen: "
                                    f"{', '.join(ports)})", "check --port")
    elif len(ports) > 1:
        raise ImportFormatError(where, None, f"events of {len(ports)} sockets (sport "
                                f"{', '.join(ports[:6])})", "give --port with the receiver's port")
    t0 = min(t for t, _, _ in events)
    rows: list[Row] = []
    for t, lineno, f in sorted(events, key=lambda e: e[0]):
        values: dict[str, int] = {}
        for key, col in COLUMNS.items():
            if key in f:
                if not f[key].isdigit():
                    raise ImportFormatError(where, lineno, f"field {key!r}: {f[key]!r} is not an "
                                            "integer", FIX)
                values[col] = int(f[key])
        rows.append(blank(t_ns=t - t0, sock="rcv", event="state", detail="rcvbuf_grow", **values))
    meta = {"source": "import:rcvbuf-grow", "rx_state": "after",
            "summary": {"events": len(rows), "sport": int(events[0][2]["sport"]),
                        "epoch_ns": t0}}
    return rows, meta
