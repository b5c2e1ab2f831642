"""SNMP/MIB counters with their nstat names (net/ipv4/proc.c: snmp4_net_list).

The socket bumps attributes of a `Mib`; `as_nstat()` renders them as `TcpExt<Name>` the way
`nstat -az` prints them, so simulated and real counters compare by name.
"""

from __future__ import annotations

# name -> one-line meaning (shown by `tcpsim run --json` consumers and the docs)
COUNTERS: dict[str, str] = {
    "TCPRcvCoalesce": "segments coalesced into a queued skb (tcp_try_coalesce)",
    "TCPBacklogCoalesce": "segments coalesced in the socket backlog",
    "TCPRcvQDrop": "in-order segments dropped for lack of receive memory",
    "TCPOFODrop": "out-of-order segments dropped for lack of receive memory",
    "TCPOFOQueue": "segments put in the out-of-order queue",
    "TCPOFOMerge": "out-of-order segments dropped as already covered",
    "TCPZeroWindowDrop": "segments dropped because our window was zero",
    "TCPBacklogDrop": "segments dropped because the backlog was full",
    "PruneCalled": "tcp_prune_queue() calls",
    "RcvPruned": "tcp_prune_queue() gave up: the segment was dropped",
    "OfoPruned": "out-of-order queue prunes",
    "TCPRcvCollapsed": "skbs freed by collapsing queues",
    "TCPWantZeroWindowAdv": "a zero window was computed but not advertised (never-shrink rule)",
    "TCPToZeroWindowAdv": "advertised window went from non-zero to zero",
    "TCPFromZeroWindowAdv": "advertised window went from zero to non-zero",
    "BeyondWindow": "segments rejected for ending beyond the window (6.17+)",
    "TCPACKSkippedSeq": "out-of-window dupACKs suppressed by the rate limit",
    "DelayedACKs": "delayed ACKs sent by the timer",
    "DelayedACKLost": "duplicate data received (our ACK was lost or late)",
    "TCPHPHits": "data segments taken by the header-prediction fast path",
    "TCPWinProbe": "zero-window probes sent",
    "TCPTimeouts": "retransmission timeouts",
    "TCPAbortOnTimeout": "connections aborted after too many retransmissions/probes",
    "TCPAbortOnClose": "connections reset by close() with unread data (tcp_close)",
    "TCPRetransSegs": "segments retransmitted (TcpRetransSegs)",
    "TCPFastRetrans": "fast retransmits",
    "TCPLossProbes": "tail loss probes sent (tcp_send_loss_probe)",
    "TCPLossProbeRecovery": "losses a tail loss probe repaired (cwnd reduced)",
    "TCPDSACKOldSent": "D-SACKs sent for old data",
    "TCPDSACKOfoSent": "D-SACKs sent for out-of-order duplicates",
    "TCPCollapseMaxBytesExceeded": "collapse skipped above tcp_collapse_max_bytes (Cloudflare patch)",
}


class Mib:
    """Per-socket counters. Attribute per counter, all starting at zero."""

    __slots__ = tuple(COUNTERS)

    def __init__(self) -> None:
        for name in COUNTERS:
            setattr(self, name, 0)

    def as_nstat(self) -> dict[str, int]:
        """Counters keyed as nstat prints them (TcpExtX), including zeros."""
        out = {}
        for name in COUNTERS:
            key = "TcpRetransSegs" if name == "TCPRetransSegs" else f"TcpExt{name}"
            out[key] = getattr(self, name)
        return out
