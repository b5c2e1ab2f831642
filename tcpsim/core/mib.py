"""SNMP/MIB counters with their nstat names (net/ipv4/proc.c: snmp4_net_list).

The socket bumps attributes of a `Mib`; `as_nstat()` renders them as `TcpExt<Name>` the way
`nstat -az` prints them, so simulated and real counters compare by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
}
# Counters patches add (name -> meaning), declared with the patch (`Patch.counters`).
PATCH_COUNTERS: dict[str, str] = {}


def declare_counter(name: str, meaning: str) -> None:
    """Make `name` a counter a patch may bump (`sk.mib.<name> += 1`); starts at zero."""
    if name in COUNTERS:
        raise ValueError(f"counter {name} is already a core counter")
    PATCH_COUNTERS[name] = meaning


def counter_meaning(name: str) -> str:
    """The one-line meaning of a core or patch counter ('' if unknown)."""
    return COUNTERS.get(name) or PATCH_COUNTERS.get(name, "")


class Mib:
    """Per-socket counters. Attribute per counter, all starting at zero. The core's counters
    are slots; a patch's declared counters live in the instance dict once bumped."""

    __slots__ = (*COUNTERS, "__dict__")

    def __init__(self) -> None:
        for name in COUNTERS:
            setattr(self, name, 0)

    if TYPE_CHECKING:   # counters are attributes set by name: tell the type checker they are ints
        def __setattr__(self, name: str, value: int) -> None: ...

    def __getattr__(self, name: str) -> int:
        """A declared patch counter not bumped yet reads 0; anything else is a typo."""
        if name in PATCH_COUNTERS:
            return 0
        raise AttributeError(f"no MIB counter {name}; a patch declares its own in "
                             "`counters = {name: meaning}`")

    def as_nstat(self, extra: tuple[str, ...] = ()) -> dict[str, int]:
        """Counters keyed as nstat prints them (TcpExtX), including zeros; `extra` names the
        patch counters of the profile (shown even at zero)."""
        out = {}
        for name in COUNTERS:
            key = "TcpRetransSegs" if name == "TCPRetransSegs" else f"TcpExt{name}"
            out[key] = getattr(self, name)
        for name in (*extra, *(n for n in vars(self) if n not in extra)):
            out[f"TcpExt{name}"] = getattr(self, name)
        return out
