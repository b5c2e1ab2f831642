"""A TCP segment as it crosses the wire between two simulated endpoints.

Sequence numbers are plain (unbounded) Python integers counted from each side's ISN, so a
35-minute 1 Gbit/s run never wraps; `seq` arithmetic needs no mod-2**32 helpers. The window
field is the raw 16-bit value: the receiver of the segment scales it.
"""

from __future__ import annotations

SYN = 0x02
FIN = 0x01
RST = 0x04
PSH = 0x08
ACK = 0x10
URG = 0x20
ECE = 0x40
CWR = 0x80
AE = 0x100            # AccECN (RFC 9768): the reserved bit before CWR

_FLAG_LETTERS = ((SYN, "S"), (FIN, "F"), (RST, "R"), (PSH, "P"), (ACK, "A"), (URG, "U"))


def flags_str(flags: int) -> str:
    """Render flags the way tcpdump/packetdrill do: 'S', 'SA', 'PA', 'FA', ..."""
    return "".join(letter for bit, letter in _FLAG_LETTERS if flags & bit) or "."


class Segment:
    """One TCP segment (header fields the model needs, payload as a length).

    `gso_size` > 0 marks a GRO/GSO aggregate of `len // gso_size` wire segments (packetdrill's
    `--mss` option, or a GRO-enabled ingress device).
    `tx_segs`: set by the model's sender, the segment count (tcp_skb_pcount) of the skb this
    wire segment was sent from; 0 = not from the model's sender (injected). Above 1 the stack
    segmented a GSO skb in software and the wire segment is a fresh skb, not a clone of the
    sender's retransmit-queue skb (see `Device.sender_skb`).
    `frags`: set by the model's sender, the page fragments holding the payload in the
    sender's memory (tcpsim/core/pagefrag.py); 0 = unknown (`sender_frags()` lays the stream
    out page after page from its first byte).
    """

    __slots__ = (
        "seq", "len", "flags", "ack", "win",
        "mss", "wscale", "sack_ok", "tsval", "tsecr", "sacks", "gso_size",
        "tx_ns", "tx_segs", "frags",
    )

    def __init__(
        self,
        seq: int,
        length: int,
        flags: int,
        ack: int = 0,
        win: int = 0,
        *,
        mss: int = 0,
        wscale: int = -1,
        sack_ok: bool = False,
        tsval: int = -1,
        tsecr: int = -1,
        sacks: tuple[tuple[int, int], ...] = (),
        gso_size: int = 0,
    ) -> None:
        self.seq = seq
        self.len = length
        self.flags = flags
        self.ack = ack
        self.win = win
        self.mss = mss            # MSS option (SYN only), 0 = absent
        self.wscale = wscale      # window-scale option (SYN only), -1 = absent
        self.sack_ok = sack_ok    # SACK-permitted option (SYN only)
        self.tsval = tsval        # timestamp option, -1 = absent
        self.tsecr = tsecr
        self.sacks = sacks        # SACK blocks (start, end), first block may be a D-SACK
        self.gso_size = gso_size
        self.tx_ns = 0            # set by the link: when the segment left the sender
        self.tx_segs = 0          # set by the sender: tcp_skb_pcount() of the skb sent
        self.frags = 0            # set by the sender: page fragments of the payload

    @property
    def end_seq(self) -> int:
        """seq + payload + one for SYN and one for FIN (TCP_SKB_CB(skb)->end_seq)."""
        return self.seq + self.len + (self.flags & SYN) // SYN + (self.flags & FIN)

    def __repr__(self) -> str:
        opts = []
        if self.mss:
            opts.append(f"mss {self.mss}")
        if self.wscale >= 0:
            opts.append(f"wscale {self.wscale}")
        if self.sack_ok:
            opts.append("sackOK")
        if self.tsval >= 0:
            opts.append(f"TS val {self.tsval} ecr {self.tsecr}")
        for s, e in self.sacks:
            opts.append(f"sack {s}:{e}")
        o = f" <{','.join(opts)}>" if opts else ""
        return (f"Segment({flags_str(self.flags)} {self.seq}:{self.seq + self.len}({self.len})"
                f" ack {self.ack} win {self.win}{o})")
