"""Build the `Segment` an interpreter injects for an inbound (`<`) script line.

* Sequence numbers are used as written (ISN 0 on both sides, see `ast`).
* An omitted `ack` puts 0 in the header, even when the ACK flag is set, as packetdrill does
  (google gro/gro-mss-option depends on it).
* With `--mss=N`, packetdrill hands every inbound TCP packet to the tun device with
  gso_size N; the kernel ignores it for packets of at most N bytes, so a `Segment` gets
  `gso_size=N` only when its payload exceeds N (one GRO aggregate of len/N wire segments).
* The TS ecr of an ACK-bearing packet is translated with the connection's `TimestampMap`
  when one is given; otherwise it is used as written.
"""

from __future__ import annotations

from .ast import ACK, ANY, Mss, Sack, SackOK, TcpPacket, Timestamp, WScale
from .tsmap import TimestampMap


class InboundError(ValueError):
    """The packet cannot be built (e.g. an unknown TS ecr); `str()` is packetdrill's text."""


def inbound_segment(packet: TcpPacket, mss: int | None = None,
                    ts_map: TimestampMap | None = None):
    """The `tcpsim.core.segment.Segment` for `packet` (an inbound packet line)."""
    from tcpsim.core.segment import Segment  # the core owns the wire type

    if packet.options is ANY or not isinstance(packet.win, int):
        raise InboundError("inbound packets need explicit options and window")
    ts = packet.option(Timestamp)
    mss_opt, ws_opt, sack_opt = (packet.option(c) for c in (Mss, WScale, Sack))
    return Segment(
        packet.seq, packet.payload_len, packet.flags,
        packet.ack if isinstance(packet.ack, int) else 0, packet.win,
        mss=mss_opt.value if isinstance(mss_opt, Mss) else 0,
        wscale=ws_opt.shift if isinstance(ws_opt, WScale) else -1,
        sack_ok=packet.option(SackOK) is not None,
        tsval=ts.val if isinstance(ts, Timestamp) else -1,
        tsecr=_live_ecr(packet, ts, ts_map) if isinstance(ts, Timestamp) else -1,
        sacks=sack_opt.blocks if isinstance(sack_opt, Sack) else (),
        gso_size=mss if mss and packet.payload_len > mss else 0,
    )


def _live_ecr(packet: TcpPacket, ts: Timestamp, ts_map: TimestampMap | None) -> int:
    if ts_map is None or not packet.flags & ACK:
        return ts.ecr
    live = ts_map.live_ecr(ts.ecr)
    if live is None:
        raise InboundError(f"unable to infer live TS ecr for script TS ecr {ts.ecr}; "
                           "no matching or preceding outbound TS val")
    return live
