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
    # the sender's (and any socket's) counters, each bumped where the kernel bumps it
    "TCPInSegs": "segments received (TcpInSegs; tcp_v4_rcv)",
    "TCPOutSegs": "segments sent, retransmissions excepted (TcpOutSegs; __tcp_transmit_skb)",
    "TCPOrigDataSent": "segments of new data (and FIN) sent (tcp_event_new_data_sent)",
    "TCPDelivered": "segments newly acked or SACKed (tcp_newly_delivered)",
    "TCPHPAcks": "ACKs advancing snd_una taken by tcp_ack()'s fast path",
    "TCPPureAcks": "ACKs without data taken by tcp_ack()'s slow path",
    "TCPSlowStartRetrans": "lost segments retransmitted in Loss (tcp_xmit_retransmit_queue)",
    "TCPSackRecovery": "fast recoveries entered with SACK (tcp_enter_recovery)",
    "TCPRenoRecovery": "fast recoveries entered without SACK (tcp_enter_recovery)",
    "TCPLostRetransmit": "retransmissions marked lost again (tcp_mark_skb_lost)",
    "TCPDSACKRecv": "D-SACKs received below the cumulative ACK (tcp_check_dsack)",
    "TCPDSACKOfoRecv": "D-SACKs received within the second SACK block (tcp_check_dsack)",
    "TCPSACKReorder": "reordering detected from SACKs (tcp_check_sack_reordering)",
}
# Counters of the Tcp MIB (snmp4_tcp_list), which nstat prints as TcpX, not TcpExtX: kept
# here under their kernel name with the TCP prefix (TCPRetransSegs is TcpRetransSegs).
TCP_MIB = ("TCPRetransSegs", "TCPInSegs", "TCPOutSegs")


def nstat_name(name: str) -> str:
    """The name nstat prints for a counter: TcpX for the Tcp MIB's, else TcpExtX."""
    return f"Tcp{name[3:]}" if name in TCP_MIB else f"TcpExt{name}"

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
            out[nstat_name(name)] = getattr(self, name)
        for name in (*extra, *(n for n in vars(self) if n not in extra)):
            out[f"TcpExt{name}"] = getattr(self, name)
        return out
