"""A packetdrill front end: parse the receive-path subset of the script language and match
the simulator's outbound segments against a script's expectations.

    script = parse(text, "tcp_rcv_toobig.pkt")      # ast.Script, or PacketdrillSyntaxError
    seg = inbound_segment(event.packet, script.options.mss, ts_map)   # for a `<` line
    expected = resolve(event.timing, anchor_usecs(prev, prev_expected, event, now))
    problem = match_outbound(event, actual_segment, actual_usecs, expected,
                             MatchConfig.from_script(script), ts_map)  # None or Mismatch

See docs/packetdrill.md for the supported subset and the interpreter contract.
"""

from .ast import Script
from .errors import PacketdrillSyntaxError
from .inbound import InboundError, inbound_segment
from .match import MatchConfig, Mismatch, failure_line, match_outbound, match_packet
from .parser import parse, parse_file
from .timing import ExpectedTime, anchor_usecs, check_block_end, check_time, describe, resolve
from .tsmap import TimestampMap

__all__ = [
    "ExpectedTime", "InboundError", "MatchConfig", "Mismatch", "PacketdrillSyntaxError",
    "Script", "TimestampMap", "anchor_usecs", "check_block_end", "check_time", "describe",
    "failure_line", "inbound_segment", "match_outbound", "match_packet", "parse", "parse_file",
    "resolve",
]
