"""A series of timestamped `ss -tmi` snapshots -> the receiver's state over time.

Input: each snapshot is a timestamp line followed by the output of `ss -tmi` (or `-tmio`,
`-tmie`, with or without the header), for instance from

    while sleep 0.1; do date +%s.%N; ss -tmi 'sport = :46000'; done > ss.log

A timestamp line is a number of seconds (`date +%s.%N`, `$EPOCHREALTIME`, optionally after
`#`, `t=` or `time:`) or an ISO-8601 time (`date -Ins`, `date --rfc-3339=ns`). Times are
made relative to the first snapshot. For every snapshot one 'state' row (detail "ss") per
selected socket is written, with:

| ss field                  | schema column   |
|---------------------------|-----------------|
| skmem:(r…)                | sk_rmem_alloc   |
| skmem:(…,rb…)             | sk_rcvbuf       |
| Recv-Q                    | recv_q          |
| rcv_ssthresh:             | rcv_ssthresh    |
| rcv_space:                | rcvq_space      |
| rcv_wnd: (iproute2 ≥ 6.2) | rcv_wnd         |
| rcvmss:                   | rcv_mss         |
| rcv_rtt: (ms)             | rcv_rtt_us      |
| bytes_received:           | rcv_nxt (= bytes_received + 1) |
| snd_wnd:                  | snd_wnd         |

Fields ss did not print stay unknown (-1). With several sockets in a snapshot, `port`
selects the one whose local port it is.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from tcpsim.importers import ImportFormatError, Row, blank

STATES = ("ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT", "CLOSE",
          "CLOSE-WAIT", "LAST-ACK", "LISTEN", "CLOSING", "UNCONN")
FIX = ("expected timestamped `ss -tmi` snapshots (a `date +%s.%N` line before each); "
       "see docs/importers.md")
_NUM_TS = re.compile(r"^(?:#\s*|t\s*[=:]\s*|time\s*[=:]\s*)?(\d+(?:\.\d+)?)$", re.I)
_ISO_TS = re.compile(r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d)(?:[.,](\d{1,9}))?([+-]\d\d:?\d\d|Z)?$")
_TOKEN = re.compile(r"([a-z_]+):(\([^)]*\)|\S+)")
SKMEM_KEYS = {"r": "sk_rmem_alloc", "rb": "sk_rcvbuf"}
INT_FIELDS = {"rcv_ssthresh": "rcv_ssthresh", "rcv_space": "rcvq_space", "rcv_wnd": "rcv_wnd",
              "rcvmss": "rcv_mss", "snd_wnd": "snd_wnd"}


def timestamp_ns(line: str) -> int | None:
    """Nanoseconds of a timestamp line, None if the line is not one."""
    m = _NUM_TS.match(line)
    if m:
        whole, _, frac = m.group(1).partition(".")
        return int(whole) * 10**9 + int((frac + "000000000")[:9])
    m = _ISO_TS.match(line)
    if m:
        tz = m.group(3) or "+00:00"
        tz = "+00:00" if tz == "Z" else (tz if ":" in tz else tz[:3] + ":" + tz[3:])
        try:
            base = datetime.fromisoformat(m.group(1).replace(" ", "T") + tz)
        except ValueError:
            return None
        frac = int(((m.group(2) or "") + "000000000")[:9])
        return int(base.timestamp()) * 10**9 + frac
    return None


def _socket_line(line: str) -> list[str] | None:
    parts = line.split()
    if parts and parts[0] == "tcp":
        parts = parts[1:]
    if len(parts) >= 5 and parts[0] in STATES:
        return parts
    return None


def _port(addr: str) -> int | None:
    _, _, port = addr.rpartition(":")
    return int(port) if port.isdigit() else None


def detail_fields(text: str, where: str, lineno: int) -> dict[str, int]:
    """The schema columns found on an ss detail line."""
    out: dict[str, int] = {}
    for key, value in _TOKEN.findall(text):
        if key == "skmem":
            for item in value.strip("()").split(","):
                m = re.fullmatch(r"([a-z]+)(\d+)", item.strip())
                if not m:
                    raise ImportFormatError(where, lineno, f"skmem item {item.strip()!r} is not "
                                            "a letter code followed by an integer", FIX)
                if m.group(1) in SKMEM_KEYS:
                    out[SKMEM_KEYS[m.group(1)]] = int(m.group(2))
        elif key in INT_FIELDS:
            if not value.isdigit():
                raise ImportFormatError(where, lineno, f"field {key!r}: {value!r} is not an "
                                        "integer", FIX)
            out[INT_FIELDS[key]] = int(value)
        elif key == "bytes_received":
            if not value.isdigit():
                raise ImportFormatError(where, lineno, f"field 'bytes_received': {value!r} is "
                                        "not an integer", FIX)
            out["rcv_nxt"] = int(value) + 1
        elif key == "rcv_rtt":
            try:
                out["rcv_rtt_us"] = round(float(value) * 1000)
            except ValueError:
                raise ImportFormatError(where, lineno, f"field 'rcv_rtt': {value!r} is not a "
                                        "number of milliseconds", FIX) from None
    return out


def parse(lines: list[str], where: str = "<input>", port: int | None = None,
          sock: str = "rcv", **_: Any) -> tuple[list[Row], dict[str, Any]]:
    """Rows (one 'state' row per snapshot of the selected socket) and metadata."""
    snapshots: list[tuple[int, int, list[tuple[list[str], dict[str, int], int]]]] = []
    last: dict[str, int] | None = None      # fields of the last socket line
    needs_detail: int | None = None         # line number of a socket line still without detail
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if raw[:1] in (" ", "\t") and last is not None:
            last.update(detail_fields(line, where, lineno))
            needs_detail = None
            continue
        if needs_detail is not None:
            _missing_detail(where, needs_detail)
        last = None
        t = timestamp_ns(line)
        if t is not None:
            snapshots.append((t, lineno, []))
            continue
        if line.startswith(("State", "Netid")):
            continue
        parts = _socket_line(line)
        if parts is None:
            raise ImportFormatError(where, lineno, f"not a timestamp, an ss header or an ss socket "
                                    f"line: {line[:60]!r}", FIX)
        if not snapshots:
            raise ImportFormatError(where, lineno, "ss output before the first timestamp line",
                                    "print a timestamp (date +%s.%N) before each ss run")
        last = {}
        snapshots[-1][2].append((parts, last, lineno))
        needs_detail = lineno
    if needs_detail is not None:
        _missing_detail(where, needs_detail)
    if not snapshots:
        raise ImportFormatError(where, None, "no timestamp lines", FIX)
    chosen = _choose(snapshots, port, where)
    t0 = snapshots[0][0]
    rows: list[Row] = []
    for t, _, socks in snapshots:
        for parts, fields, lineno in socks:
            if (parts[3], parts[4]) != chosen:
                continue
            if not parts[1].isdigit():
                raise ImportFormatError(where, lineno, f"field 'Recv-Q': {parts[1]!r} is not an "
                                        "integer", FIX)
            rows.append(blank(t_ns=t - t0, sock=sock, event="state", detail="ss",
                              recv_q=int(parts[1]), **fields))
    if not rows:
        raise ImportFormatError(where, None, f"no snapshot shows the socket {chosen[0]} -> {chosen[1]}",
                                "check --port")
    if all(r["sk_rmem_alloc"] < 0 for r in rows):
        raise ImportFormatError(where, None, "no skmem:(...) in any snapshot",
                                "run ss with -m (ss -tmi)")
    meta = {"source": "import:ss", "rx_state": "after",
            "summary": {"snapshots": len(snapshots), "rows": len(rows),
                        "socket": f"{chosen[0]} -> {chosen[1]}", "epoch_ns": t0}}
    return rows, meta


def _missing_detail(where: str, lineno: int) -> None:
    raise ImportFormatError(where, lineno, "socket line without its detail line (skmem/info); the "
                            "file ends or is cut mid-snapshot",
                            "delete the incomplete last snapshot, or run ss with -m and -i")


def _choose(snapshots: list, port: int | None, where: str) -> tuple[str, str]:
    """The (local, peer) pair of the socket to import."""
    pairs: list[tuple[str, str]] = []
    for _, _, socks in snapshots:
        for parts, _, _ in socks:
            pair = (parts[3], parts[4])
            if pair not in pairs:
                pairs.append(pair)
    if port is not None:
        pairs = [p for p in pairs if _port(p[0]) == port]
        if not pairs:
            raise ImportFormatError(where, None, f"no socket with local port {port}",
                                    "check --port against the Local Address:Port column")
    if not pairs:
        raise ImportFormatError(where, None, "no sockets in any snapshot",
                                "check the ss filter (ss -tmi 'sport = :PORT')")
    if len(pairs) > 1:
        seen = ", ".join(f"{a} -> {b}" for a, b in pairs[:4])
        raise ImportFormatError(where, None, f"{len(pairs)} sockets ({seen}); cannot tell which "
                                "is the receiver", "give --port with its local port")
    return pairs[0]
