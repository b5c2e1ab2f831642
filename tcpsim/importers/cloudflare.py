"""Cloudflare's per-packet bpftrace CSV (cloudflare-blog 2022-07-rmem-a, `tcp.bt`).

The script prints, from a kprobe at the top of `tcp_rcv_established()` (so the state
*before* each segment), one line per segment of the traced socket, after this header:

    ,tcprcvcoalesce,tcprcvcollapsed,tcprcvqdrop,rcv\\_ssthresh,acked,skmem\\_rb,recv-q,skmem\\_r,rcv\\_win
    1, 0, 0, 0, 64088, 0, 131072, 0, 0, 65483

(the backslashes are gnuplot escapes; `run.sh` sorts the file numerically, which puts the
header first). Columns, by position:

| # | header          | meaning (from tcp.bt)                                      | schema column |
|---|-----------------|------------------------------------------------------------|---------------|
| 1 | (empty)         | packet index, 1, 2, ... (there is no time column)          | t_ns (index)  |
| 2 | tcprcvcoalesce  | 1 if tcp_try_coalesce() succeeded since the previous line  | detail of the previous row: "coalesced" |
| 3 | tcprcvcollapsed | tcp_collapse() calls since the previous line               | 'state' rows, detail "collapse" |
| 4 | tcprcvqdrop     | kfree_skb_reason(reason 16) since the previous line        | 'drop' rows, reason "tcprcvqdrop" |
| 5 | rcv_ssthresh    | tp->rcv_ssthresh                                           | rcv_ssthresh |
| 6 | acked           | tp->rcv_wup minus the first line's rcv_wup                 | rcv_wup = 1 + acked |
| 7 | skmem_rb        | sk->sk_rcvbuf                                              | sk_rcvbuf |
| 8 | recv-q          | rcv_nxt - copied_seq                                       | recv_q |
| 9 | skmem_r         | sk->sk_backlog.rmem_alloc (sk_rmem_alloc)                  | sk_rmem_alloc |
| 10| rcv_win         | rcv_wnd - (rcv_nxt - rcv_wup): the window still open       | win_scaled (negative -> 0) |

Variants with a time column are accepted when the header names it: `time_ns`, `t_ns` or
`nsecs` (nanoseconds) or `time` / `t` (seconds); then t_ns is that time (relative to the
first line) instead of the packet index. bpftrace's own lines (`Attaching N probes...`,
`Lost N events`, `@map: ...`) are skipped, as `run.sh` does.
"""

from __future__ import annotations

from typing import Any

from tcpsim.importers import ImportFormatError, Row, blank, to_int

COLUMNS = ("index", "tcprcvcoalesce", "tcprcvcollapsed", "tcprcvqdrop", "rcv_ssthresh", "acked",
           "skmem_rb", "recv-q", "skmem_r", "rcv_win")
TIME_NS = ("time_ns", "t_ns", "nsecs")
TIME_S = ("time", "t")
FIX = "the file must be the output of 2022-07-rmem-a/tcp.bt (see docs/importers.md)"
_NOISE = ("Attaching", "Lost ", "@", "xxx")
U64 = 1 << 64


def _name(h: str) -> str:
    n = h.replace("\\", "").strip().lower()
    return "index" if n in ("", "idx", "#") else n


def header_columns(line: str, where: str, lineno: int) -> list[str]:
    """Column names of a header line, checked against the published ones."""
    names = [_name(h) for h in line.split(",")]
    for i, n in enumerate(names):
        if n not in COLUMNS and n not in TIME_NS + TIME_S:
            raise ImportFormatError(where, lineno, f"header column {i + 1} {n!r} is not a column of "
                                    f"tcp.bt ({', '.join(COLUMNS[1:])})", FIX)
    for c in COLUMNS:
        if c not in names:
            raise ImportFormatError(where, lineno, f"header has no column {c!r}", FIX)
    return names


def parse(lines: list[str], where: str = "<input>", **_: Any) -> tuple[list[Row], dict[str, Any]]:
    """Rows of the trace schema (one 'rx' row per segment, state before it) and metadata."""
    names = list(COLUMNS)
    records: list[tuple[int, dict[str, int], float | None]] = []
    seen_header = False
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith(_NOISE):
            continue
        if line.startswith(",") or line[0].isalpha():
            if seen_header or records:
                raise ImportFormatError(where, lineno, "a second header (or a text line) among the "
                                        "data lines", "keep one capture per file")
            names = header_columns(line, where, lineno)
            seen_header = True
            continue
        parts = line.split(",")
        if len(parts) != len(names):
            raise ImportFormatError(
                where, lineno, f"expected {len(names)} comma-separated fields "
                f"({', '.join(names)}), got {len(parts)}",
                "the line is truncated or corrupt: delete it (a capture cut off mid-line) or "
                "capture again")
        rec: dict[str, int] = {}
        t_s: float | None = None
        for name, text in zip(names, parts):
            if name in TIME_S:
                try:
                    t_s = float(text)
                except ValueError:
                    raise ImportFormatError(where, lineno, f"field {name!r}: {text.strip()!r} is "
                                            "not a number of seconds", FIX) from None
            else:
                rec[name] = to_int(text, where, lineno, name, FIX)
        records.append((lineno, rec, t_s))
    if not records:
        raise ImportFormatError(where, None, "no data lines", FIX)
    time_col = next((n for n in names if n in TIME_NS + TIME_S), None)
    records.sort(key=lambda r: r[1]["index"])
    rows: list[Row] = []
    t0 = None
    for k, (lineno, rec, t_s) in enumerate(records):
        if time_col in TIME_NS:
            t = rec[time_col]
        elif time_col in TIME_S:
            t = round((t_s or 0.0) * 1e9)
        else:
            t = rec["index"]
        t0 = t if t0 is None else t0
        t -= t0 if time_col else 0
        win = rec["rcv_win"]
        if win >= 1 << 63:
            win -= U64
        if k and rec["tcprcvcoalesce"]:
            rows[-1 - _extra(rows)]["detail"] = "coalesced"
        rows.append(blank(
            t_ns=t, sock="rcv", event="rx", rcv_ssthresh=rec["rcv_ssthresh"],
            rcv_wup=1 + rec["acked"], sk_rcvbuf=rec["skmem_rb"], recv_q=rec["recv-q"],
            sk_rmem_alloc=rec["skmem_r"], win_scaled=max(0, win)))
        for _ in range(rec["tcprcvcollapsed"]):
            rows.append(blank(t_ns=t, sock="rcv", event="state", detail="collapse"))
        for _ in range(rec["tcprcvqdrop"]):
            rows.append(blank(t_ns=t, sock="rcv", event="drop", detail="kfree_skb",
                              drop_reason="tcprcvqdrop"))
    meta = {
        "source": "import:cloudflare-csv", "rx_state": "before",
        "summary": {"lines": len(records),
                    "time_axis": "packet index (the file has no time)" if time_col is None
                    else f"{time_col}, relative to the first line",
                    "rx_state": "before the segment (kprobe on tcp_rcv_established)",
                    "columns": {"skmem_r": "sk_rmem_alloc", "skmem_rb": "sk_rcvbuf",
                                "rcv_ssthresh": "rcv_ssthresh", "recv-q": "recv_q",
                                "acked": "rcv_wup - 1", "rcv_win": "win_scaled"}},
    }
    return rows, meta


def _extra(rows: list[Row]) -> int:
    """How many collapse/drop rows follow the last 'rx' row (they share its time)."""
    n = 0
    for r in reversed(rows):
        if r["event"] == "rx":
            return n
        n += 1
    return n
