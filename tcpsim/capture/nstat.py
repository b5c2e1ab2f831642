"""nstat-style counters of one namespace, from /proc/net/netstat and /proc/net/snmp."""

from __future__ import annotations

from typing import Callable

RECEIVE_COUNTERS = (
    "TcpExtTCPRcvQDrop", "TcpExtPruneCalled", "TcpExtRcvPruned", "TcpExtTCPRcvCollapsed",
    "TcpExtTCPRcvCoalesce", "TcpExtTCPZeroWindowDrop", "TcpExtTCPWantZeroWindowAdv",
    "TcpExtTCPToZeroWindowAdv", "TcpExtTCPFromZeroWindowAdv", "TcpExtBeyondWindow",
    "TcpExtOfoPruned", "TcpExtTCPOFOQueue", "TcpExtTCPOFODrop", "TcpExtTCPBacklogCoalesce",
    "TcpExtTCPBacklogDrop", "TcpExtTCPWinProbe", "TcpExtDelayedACKs", "TcpExtTCPPureAcks",
    "TcpExtTCPHPHits", "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKOldSent", "TcpExtTCPAbortOnData",
)


def parse_proc_counters(text: str) -> dict[str, int]:
    """Parse the header/value line pairs of /proc/net/netstat or /proc/net/snmp."""
    out: dict[str, int] = {}
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    for head, vals in zip(lines[0::2], lines[1::2]):
        if not head or head[0] != vals[0]:
            continue
        prefix = head[0].rstrip(":")
        for k, v in zip(head[1:], vals[1:]):
            try:
                out[prefix + k] = int(v)
            except ValueError:
                pass
    return out


def read_counters(sh: Callable[[list[str]], str]) -> dict[str, int]:
    """All counters of the namespace in which ``sh`` runs commands."""
    return parse_proc_counters(sh(["cat", "/proc/net/netstat"]) + "\n" + sh(["cat", "/proc/net/snmp"]))


def diff(before: dict[str, int], after: dict[str, int], nonzero: bool = True) -> dict[str, int]:
    """after - before per counter (only changed counters when ``nonzero``)."""
    d = {k: v - before.get(k, 0) for k, v in after.items()}
    return {k: v for k, v in d.items() if v} if nonzero else d
