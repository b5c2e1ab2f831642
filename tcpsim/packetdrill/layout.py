"""The TCP option list a Linux sender puts on the wire for a `Segment`.

`Segment` records option *values* (mss, wscale, sack_ok, tsval/tsecr, sacks) but not their
layout. packetdrill compares options kind by kind, in order, and counts their bytes in the IP
length, so the matcher needs the layout. This module rebuilds it the way Linux's
`tcp_options_write()` does:

    mss | sackOK,TS (SYN with both) or nop,nop,TS | nop,nop,sackOK (SYN, no TS)
        | nop,wscale | nop,nop,sack blocks...

which is also how every outbound line of the kernel selftests spells them, e.g.
`<mss 1460,nop,nop,sackOK,nop,wscale 8>`, `<mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 8>`,
`<nop,nop,TS val 200 ecr 700>`, `<nop,nop,sack 1001:3001>`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .ast import Mss, Nop, Sack, SackOK, TcpOption, Timestamp, WScale

if TYPE_CHECKING:
    from tcpsim.core.segment import Segment


def segment_options(seg: Segment) -> tuple[TcpOption, ...]:
    """The options of `seg` in Linux wire order, with their NOP padding."""
    opts: list[TcpOption] = []
    if seg.mss:
        opts.append(Mss(seg.mss))
    has_ts = seg.tsval >= 0
    if has_ts:
        lead: list[TcpOption] = [SackOK()] if seg.sack_ok else [Nop(), Nop()]
        opts += lead + [Timestamp(seg.tsval, max(seg.tsecr, 0))]
    elif seg.sack_ok:
        opts += [Nop(), Nop(), SackOK()]
    if seg.wscale >= 0:
        opts += [Nop(), WScale(seg.wscale)]
    if seg.sacks:
        opts += [Nop(), Nop(), Sack(tuple(seg.sacks))]
    return tuple(opts)
