"""The counts a run reports that have more than one plausible meaning, each defined once.

A receiver "drops" segments and "advertises zero windows" in several countable senses, and
`tcpsim run`, `tcpsim compare`, the report's charts and `--json` must agree on which is
which. Each count has one name, used in every summary, table row and chart label:

    drops                  data segments dropped for want of memory or window: the nstat
                           counters TcpExtTCPRcvQDrop + TCPOFODrop + TCPZeroWindowDrop +
                           BeyondWindow (`tcpsim run` reports it; traces carry it)
    data_segments_dropped  drop rows in the trace of segments that carried data (or whose
                           length is unknown, such as skbs pruned from the out-of-order
                           queue), for any reason -- also duplicates of data already
                           received (TCP_OLD_DATA), which no counter above counts
    segments_dropped       every drop row in the trace, zero-length segments too (pure
                           ACKs, zero-window probes dropped as old sequence by design): the
                           report's event strip
    zero_windows_sent      times the advertised window went from open to zero:
                           TcpExtTCPToZeroWindowAdv (from the trace when there are no counters)
    zero_window_segments   segments the receiver sent with a zero window (SYNs excluded); every
                           ACK of a closed window counts, so this is >= zero_windows_sent
"""

from __future__ import annotations

from typing import Mapping

DROP_COUNTERS: tuple[str, ...] = ("TcpExtTCPRcvQDrop", "TcpExtTCPOFODrop",
                                  "TcpExtTCPZeroWindowDrop", "TcpExtBeyondWindow")
ZERO_WINDOW_COUNTER = "TcpExtTCPToZeroWindowAdv"


def drops(counters: Mapping[str, int]) -> int | None:
    """`drops`: the sum of DROP_COUNTERS; None when the counters are not all known."""
    if not all(c in counters for c in DROP_COUNTERS):
        return None
    return sum(int(counters[c]) for c in DROP_COUNTERS)


def zero_windows_sent(counters: Mapping[str, int]) -> int | None:
    """`zero_windows_sent`: TcpExtTCPToZeroWindowAdv; None when not counted."""
    value = counters.get(ZERO_WINDOW_COUNTER)
    return None if value is None else int(value)
