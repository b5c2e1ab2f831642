"""Parsing the CSV lines printed by rcv_probe.bt (pure; no bpftrace needed)."""

from __future__ import annotations

# Column order of each record kind, exactly as printed by rcv_probe.bt.
PROBE_FIELDS = (
    "t_ns", "skb_len", "truesize", "data_len", "rcv_nxt", "copied_seq", "rcv_wup", "rcv_wnd",
    "rcv_ssthresh", "window_clamp", "rcv_mss", "scaling_ratio", "rcvq_space", "rcv_rtt_us8",
    "sk_rmem_alloc", "sk_rcvbuf", "rcvq_len", "backlog_len", "snd_una", "snd_nxt", "snd_wnd",
    "snd_cwnd", "advmss", "rcv_wscale", "snd_wscale", "skb_data_len", "seq", "end_seq", "sport",
)
GROW_FIELDS = (
    "t_ns", "time", "rtt_us", "copied", "inq", "space", "ooo_space", "rcvbuf", "rcv_ssthresh",
    "window_clamp", "rcv_wnd", "scaling_ratio", "sport",
)
ADJUST_FIELDS = ("t_ns", "rcvq_space", "sk_rcvbuf", "window_clamp", "copied_seq", "sport")
DROP_FIELDS = ("t_ns", "len", "reason")
KINDS = {"P": ("probe", PROBE_FIELDS), "G": ("grow", GROW_FIELDS),
         "A": ("adjust", ADJUST_FIELDS), "D": ("drop", DROP_FIELDS)}


def parse_line(line: str) -> tuple[str, dict[str, int]] | None:
    """('probe'|'grow'|'adjust'|'drop', {field: int}) for one bpftrace CSV line, else None."""
    parts = line.strip().split(",")
    if not parts or parts[0] not in KINDS:
        return None
    kind, fields = KINDS[parts[0]]
    if len(parts) != len(fields) + 1:
        return None
    try:
        return kind, dict(zip(fields, (int(v) for v in parts[1:])))
    except ValueError:
        return None


def parse_lines(lines) -> dict[str, list[dict[str, int]]]:
    """Group parsed records by kind, each sorted by time; malformed lines are skipped."""
    out: dict[str, list[dict[str, int]]] = {k: [] for k, _ in KINDS.values()}
    for line in lines:
        rec = parse_line(line)
        if rec is not None:
            out[rec[0]].append(rec[1])
    for recs in out.values():   # bpftrace prints per-CPU buffers: restore time order
        recs.sort(key=lambda r: r["t_ns"])
    return out


def drop_reason_names(format_text: str) -> dict[int, str]:
    """{code: name} from the `print fmt` of events/skb/kfree_skb/format."""
    import re
    return {int(c): n for c, n in re.findall(r'\{\s*(\d+),\s*"([A-Z0-9_]+)"\s*\}', format_text)}
