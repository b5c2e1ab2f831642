"""One connection of a capture -> a trace (tcpsim's schema) of what the wire shows.

Every segment becomes one 'tx' row of the side that sent it (sock 'rcv' for the receiver's
ACKs, 'snd' for its peer's data), with sequence and acknowledgment numbers relative to each
side's ISN (unwrapped), the window field raw and scaled, and in `detail` what Wireshark's
TCP analysis would say of it:

* receiver: `zero window`, `window update` (same ACK, new window, no data), `retreat N`
  (the right edge ack + window moved back N bytes: a shrunk window);
* sender: `retransmission` (data at or below what was already sent), `probe` (a zero-window
  probe or keep-alive: no new data, sent while the window is closed, or one byte below the
  acknowledged sequence), `window full` (the data reaches the advertised right edge).

Receiver rows also carry `rcv_nxt` (= its ack_seq) and `rcv_wnd` (= the scaled window), so
`tcpsim report` and `tcpsim compare` plot them like a simulated run's. Times are those the
receiver saw: a capture taken next to the sender is moved by the one-way delays measured
in the handshake (see `Handshake`). The sender's data also gives 'write' rows -- the bytes
as they first appeared on the wire, at the time they left the sender -- from which the
workload is built (tcpsim.pcap.workload).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tcpsim.pcap import PcapError
from tcpsim.pcap.flows import Connection, show
from tcpsim.pcap.read import WireSegment

SYN, FIN, RST, ACK = 0x02, 0x01, 0x04, 0x10
WRAP = 1 << 32


@dataclass
class Options:
    """What one side announced in its SYN (or was told with --wscale)."""

    mss: int = -1
    wscale: int = -1
    sack_ok: bool = False
    timestamps: bool = False
    isn: int | None = None
    syn_win: int = -1

    def as_dict(self) -> dict[str, Any]:
        return {"mss": self.mss, "wscale": self.wscale, "sack_ok": self.sack_ok,
                "timestamps": self.timestamps, "syn_window": self.syn_win}


@dataclass
class Handshake:
    """The connection's setup as captured: options of both sides, the round trip, and where
    the capture was taken (next to the receiver or next to the sender)."""

    rcv: Options
    snd: Options
    receiver_role: str              # "client" (sent the SYN) or "server"
    rtt_ns: int | None              # SYN -> ACK of the SYN-ACK, None without a handshake
    capture_at: str                 # "receiver" | "sender"
    syn_t: int | None
    notes: list[str] = field(default_factory=list)
    capture_at_basis: str = ""      # how capture_at was decided (one phrase)

    @property
    def scaled(self) -> bool:
        return self.rcv.wscale >= 0 and self.snd.wscale >= 0


CAPTURE_POINT_MIN_NS = 200_000     # a handshake gap shorter than this cannot place the capture
CAPTURE_POINT_RATIO = 4            # ... nor one less than this many times the other gap


def handshake(conn: Connection, wscale: tuple[int, int] | None, where: str,
              directions: dict | None = None) -> Handshake:
    """Options and timing from the SYN, SYN-ACK and the ACK after them; `wscale` = (receiver,
    sender) shift counts for a capture that starts after the handshake; `directions`: the link
    layer's direction of each endpoint's frames (read.Capture.directions), which places the
    capture when it is there."""
    rcv_ep = conn.receiver
    opts = {True: Options(), False: Options()}         # from receiver? -> options
    syn = synack = third = None
    for s in conn.segments:
        mine = s.a == rcv_ep
        if s.flags & SYN:
            o = opts[mine]
            o.mss, o.wscale, o.sack_ok = s.mss, s.wscale, s.sack_ok
            o.timestamps, o.isn, o.syn_win = s.tsval >= 0, s.seq, s.win
            if s.flags & ACK:
                synack = synack or s
            else:
                syn = syn or s
        elif synack is not None and third is None and s.flags & ACK and syn is not None \
                and s.a == syn.a:
            third = s
    notes: list[str] = []
    if syn is None or synack is None:
        if wscale is None:
            raise PcapError(where, None, f"the connection {show(conn.sender)} -> {show(rcv_ep)} "
                            "has no handshake in the capture, so its window scale is unknown",
                            "give --wscale RCV[,SND] (the shift counts, e.g. from `ss -ti` "
                            "wscale:SND,RCV on either host), or capture from before the connect")
        opts[True].wscale, opts[False].wscale = wscale
        opts[True].timestamps = opts[False].timestamps = any(s.tsval >= 0 for s in conn.segments)
        notes.append(f"no handshake in the capture: window scale {wscale[0]} (receiver) and "
                     f"{wscale[1]} (sender) from --wscale")
        role = "client"
        at, basis = _capture_point(conn, directions, None)
        return Handshake(opts[True], opts[False], role, None, at, None, notes, basis)
    if wscale is not None:
        notes.append("--wscale ignored: the capture has the handshake")
    role = "client" if syn.a == rcv_ep else "server"
    rtt = (third.t_ns if third else synack.t_ns) - syn.t_ns
    gaps = (synack.t_ns - syn.t_ns, None if third is None else third.t_ns - synack.t_ns)
    capture_at, basis = _capture_point(conn, directions, (gaps, role))
    return Handshake(opts[True], opts[False], role, rtt, capture_at, syn.t_ns, notes, basis)


def _capture_point(conn: Connection, directions: dict | None,
                   hs: tuple[tuple[int, int | None], str] | None) -> tuple[str, str]:
    """Where the capture was taken ("receiver" | "sender") and on what basis.

    The link layer's direction (`tcpdump -i any`: Linux cooked SLL marks the frames the host
    sent) says it outright: the receiver's segments outgoing = its host. Else the handshake:
    next to the client the SYN-ACK comes a round trip after the SYN and the ACK right after
    it; next to the server the reverse. When neither gap is clearly the round trip (both short,
    or alike: loopback, a veth pair) the ends cannot be told apart -- and then it does not
    matter, the one-way delay being that short: the capture is taken as the receiver's."""
    d = (directions or {}).get(conn.receiver)
    if d and sum(d.values()):
        at = "receiver" if d["out"] >= d["in"] else "sender"
        return at, "the link layer marks the receiver's segments " + (
            "outgoing" if at == "receiver" else "incoming")
    if hs is None:
        return "receiver", "no handshake: assumed the receiver's"
    (g1, g2), role = hs
    if g2 is None:
        near_client = True
        basis = "the handshake has no third ACK: assumed next to the client"
    else:
        big, small = max(g1, g2), max(1, min(g1, g2))
        if big < CAPTURE_POINT_MIN_NS or big < CAPTURE_POINT_RATIO * small:
            return "receiver", (f"place undetermined: handshake gaps {g1 / 1e3:.0f} and {g2 / 1e3:.0f} us, "
                                "no clear round trip; taken as the receiver's, the ends being "
                                f"at most {big / 1e3:.0f} us apart")
        near_client = g1 > g2
        basis = (f"the handshake: the {'SYN-ACK' if near_client else 'third ACK'} came "
                 f"{big / 1e3:.0f} us after the segment before it, the other gap "
                 f"{small / 1e3:.0f} us")
    at = "receiver" if near_client == (role == "client") else "sender"
    return at, basis


def parse_wscale(text: str | None) -> tuple[int, int] | None:
    """--wscale 'R' or 'R,S' -> (receiver, sender) shift counts 0..14."""
    if text is None:
        return None
    parts = [p.strip() for p in str(text).split(",")]
    ok = 1 <= len(parts) <= 2 and all(p.isdigit() and int(p) <= 14 for p in parts)
    if not ok:
        raise PcapError("--wscale", None, f"{text!r} is not a shift count 0..14 or two of them",
                        "write the receiver's, optionally the sender's: --wscale 7 or --wscale 7,9")
    r = int(parts[0])
    return r, int(parts[1]) if len(parts) > 1 else r


@dataclass
class _Side:
    """Sequence-space bookkeeping of one direction."""

    base: int | None = None       # ISN (raw)
    last: int = 0                 # highest relative seq seen (for unwrapping)

    def rel(self, raw: int) -> int:
        if self.base is None:
            self.base = (raw - 1) % WRAP         # mid-connection: the first byte seen is 1
        r = (raw - self.base) % WRAP
        last = self.last
        while r + (1 << 31) < last:
            r += WRAP
        if r > last:
            self.last = r
        return r


def one_way(hs: Handshake, delay_ns: int | None) -> tuple[int, int]:
    """(sender -> receiver, receiver -> sender) delays: given, or half the handshake's RTT."""
    if delay_ns is not None:
        return delay_ns, delay_ns
    if hs.rtt_ns is None:
        return 0, 0
    return hs.rtt_ns // 2, hs.rtt_ns - hs.rtt_ns // 2


# the columns a capture fills (the rest of the schema's are unknown: -1 / "")
FILLED = ("t_ns", "sock", "event", "detail", "seq", "end_seq", "len", "flags", "ack_seq",
          "win_raw", "win_scaled", "rcv_nxt", "rcv_wnd")


def rows(conn: Connection, hs: Handshake, delay_ab: int, delay_ba: int,
         t0: int) -> tuple[dict[str, list], dict[str, int]]:
    """The trace as columns ({schema column: values}, time order; the receiver's time axis,
    t0 = 0) and counts of what was annotated. Built as a tuple per row, transposed once -- not
    a dict per row: a 5-second 1 Gbit/s capture has 800 000 rows. The columns the wire cannot
    fill are one shared list of -1 (or "") each: read them, do not change them in place."""
    rcv_ep = conn.receiver
    at_sender = hs.capture_at == "sender"
    side = {True: _Side(hs.rcv.isn), False: _Side(hs.snd.isn)}
    shift = {True: hs.rcv.wscale if hs.scaled else 0, False: hs.snd.wscale if hs.scaled else 0}
    counts = {"acks": 0, "zero_windows": 0, "window_updates": 0, "right_edge_retreats": 0,
              "retransmissions": 0, "probes": 0, "window_full": 0, "data_segments": 0,
              "bytes": 0}
    out: list[tuple] = []          # rows, each the FILLED columns' values
    add = out.append
    raddr, rport = rcv_ep
    segs = conn.segments
    if at_sender:
        segs = sorted(segs, key=lambda s: _seen_at(s, s.sport == rport and s.src == raddr,
                                                   at_sender, delay_ab, delay_ba))
    else:       # seen as captured: sorted only if the file's order is not the time order
        segs = sorted(segs, key=lambda s: s.t_ns)
    edge = -1                      # the receiver's highest right edge so far
    last_ack: tuple[int, int] | None = None     # (ack, scaled window) of its last segment
    high = 0                       # highest end_seq the sender sent
    holes: list[tuple[int, int]] = []   # ranges below `high` not seen yet (_first_seen)
    rcv_side, snd_side = side[True], side[False]
    for s in segs:
        mine = s.sport == rport and s.src == raddr
        t = (_seen_at(s, mine, at_sender, delay_ab, delay_ba) if at_sender else s.t_ns) - t0
        fbits = s.flags
        seq = (rcv_side if mine else snd_side).rel(s.seq)
        ack = (snd_side if mine else rcv_side).rel(s.ack) if fbits & ACK else -1
        end = seq + s.payload + (1 if fbits & SYN else 0) + (1 if fbits & FIN else 0)
        scaled = s.win << (0 if fbits & SYN else shift[mine])
        notes: list[str] = []
        nxt = wnd = -1
        if mine:
            if not fbits & (SYN | RST) and ack >= 0:
                counts["acks"] += 1
                nxt, wnd = ack, scaled
                if scaled == 0:
                    notes.append("zero window")
                    counts["zero_windows"] += 1
                if last_ack and last_ack[0] == ack and last_ack[1] != scaled and not s.payload \
                        and not fbits & FIN:
                    notes.append("window update")
                    counts["window_updates"] += 1
                right = ack + scaled
                if right < edge:
                    notes.append(f"retreat {edge - right}")
                    counts["right_edge_retreats"] += 1
                if right > edge:
                    edge = right
                last_ack = (ack, scaled)
        else:
            closed = last_ack is not None and last_ack[1] == 0
            acked = last_ack[0] if last_ack else 0
            if not fbits & (SYN | RST | FIN) and (
                    (s.payload <= 1 and seq < acked) or (closed and s.payload <= 1 and end > high
                                                         and seq == acked)):
                notes.append("probe")
                counts["probes"] += 1
            elif s.payload and not (new := s.payload if seq == high and not holes
                                    else _first_seen(seq, seq + s.payload, high, holes)):
                notes.append("retransmission")
                counts["retransmissions"] += 1
            elif s.payload:
                if seq < high:
                    notes.append("out of order")
                counts["data_segments"] += 1
                counts["bytes"] += new
                add((t - delay_ab, "snd", "write", "first seen on the wire", -1, -1, new, "", -1,
                     -1, -1, -1, -1))
            if s.payload and edge >= 0 and end == edge:
                notes.append("window full")
                counts["window_full"] += 1
            if end > high:
                high = end
        add((t, "rcv" if mine else "snd", "tx", ", ".join(notes), seq, end, s.payload,
             _flags(fbits), ack, s.win, scaled, nxt, wnd))
    return _in_time_order(out), counts


def _in_time_order(out: list[tuple]) -> dict[str, list]:
    """Rows of the FILLED columns -> every schema column, sorted by time (stable: a write row
    stays before its segment's row at the same time); the columns the wire cannot fill are
    unknown."""
    from operator import itemgetter

    from tcpsim.trace.schema import COLUMN_NAMES, INT_COLUMNS
    if any(a[0] > b[0] for a, b in zip(out, out[1:])):
        out.sort(key=itemgetter(0))
    n = len(out)
    col = dict(zip(FILLED, map(list, zip(*out)))) if out else {c: [] for c in FILLED}
    unknown_int, unknown_str = [-1] * n, [""] * n
    return {c: col[c] if c in col else unknown_int if c in INT_COLUMNS else unknown_str
            for c in COLUMN_NAMES}


def _first_seen(seq: int, end: int, high: int, holes: list[tuple[int, int]]) -> int:
    """Bytes of [seq, end) seen on the wire for the first time: those above `high` (the
    highest end_seq so far) and those in `holes`, the ranges below it never seen (a segment
    that overtook another -- veth's per-CPU backlogs reorder -- or one lost before the capture
    point). Updates `holes` in place. 0 means every byte was seen before: a retransmission."""
    if seq > high:
        holes.append((high, seq))
    new = max(0, end - max(seq, high))
    keep: list[tuple[int, int]] = []
    for a, b in holes:
        lo, hi = max(a, seq), min(b, end)
        if lo >= hi:
            keep.append((a, b))
            continue
        new += hi - lo
        keep += [r for r in ((a, lo), (hi, b)) if r[0] < r[1]]
    holes[:] = keep
    return new


def _seen_at(s: WireSegment, from_rcv: bool, at_sender: bool, delay_ab: int, delay_ba: int) -> int:
    """When the receiver saw (received or sent) a segment."""
    if not at_sender:
        return s.t_ns
    return s.t_ns - delay_ba if from_rcv else s.t_ns + delay_ab


@lru_cache(maxsize=256)
def _flags(bits: int) -> str:
    from tcpsim.capture.wire import flags_str
    return flags_str(bits) or "."


def origin(conn: Connection, hs: Handshake, delay_ab: int, delay_ba: int) -> int:
    """The time axis' zero: the SYN (as the receiver saw it), else the first segment."""
    raddr, rport = conn.receiver
    if hs.capture_at != "sender":
        return min(s.t_ns for s in conn.segments)
    return min(_seen_at(s, s.sport == rport and s.src == raddr, True, delay_ab, delay_ba)
               for s in conn.segments)


def describe(conn: Connection, hs: Handshake) -> dict[str, Any]:
    """The connection and its handshake, for the trace's summary."""
    return {"flow": f"{show(conn.sender)} -> {show(conn.receiver)}",
            "receiver": show(conn.receiver), "sender": show(conn.sender),
            "receiver_role": hs.receiver_role, "capture_at": hs.capture_at,
            "capture_at_basis": hs.capture_at_basis,
            "handshake_rtt_ns": hs.rtt_ns, "options": {"receiver": hs.rcv.as_dict(),
                                                       "sender": hs.snd.as_dict()},
            "window_scaling": hs.scaled, "packets": len(conn.segments)}
