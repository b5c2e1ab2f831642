"""How bunched the ACKs of a capture were, as sent and as the sender got them.

    python scripts/ack_batching.py RAW_DIR...       # run folders kept with --keep-raw

Each RAW_DIR is one capture kept by `scripts/capture_fixtures.py --keep-raw` (the folder holding
summary.json and NAME.raw/ with wire.pcap, captured at the receiver, and acks_at_sender.pcap).
For the ACKs between ``--from-ms`` (default 100 ms after the first data segment: slow start
is well under way) and the first retransmission (or the end), it prints:

- ``acks``: how many;
- ``<20us sent`` / ``<20us got``: the share of ACKs that left the receiver / reached the
  sender within 20 us of the previous one;
- ``max/ms sent`` / ``max/ms got``: the most data, in segments of 1448 B, newly acknowledged
  within any 1 ms, as sent and as got;
- the run's retransmissions and link drops (summary.json).

It is the evidence for docs/app-latency.md#ack-path: the capture's ACK delay program
releases everything due in one verdict, so ACKs reach the sender in bursts the receiver
never sent, and a cwnd-limited sender answers each burst with a burst of data.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

from tcpsim.capture.capture import ACK_PCAP, RCV_PORT  # noqa: E402
from tcpsim.capture.spec import parse as parse_spec  # noqa: E402
from tcpsim.capture.wire import read_pcap  # noqa: E402

MSS = 1448
CLOSE_NS = 20_000
WINDOW_NS = 1_000_000
REORDER_NS = 2_000_000


def acks_and_marks(pcap: Path, rcv_port: int = RCV_PORT
                   ) -> tuple[list[tuple[int, int]], int, int]:
    """(t_ns, ack) of the receiver's pure ACKs (the receiver's port is ``rcv_port``, as the
    capture sets it), the first data segment's time and the first retransmission's (or
    -1), from one pcap.

    The receiver sees a segment the link dropped first when it is resent: below the highest
    sequence seen, and at least REORDER_NS after the data beyond it arrived (veth reorders
    within microseconds)."""
    segs = list(read_pcap(pcap))
    acks: list[tuple[int, int]] = []
    first_data, first_rtx, base = -1, -1, -1
    ends: list[int] = []      # the highest end seen (relative to the first data segment)...
    when: list[int] = []      # ...and when it was first reached
    for s in segs:
        if s.sport == rcv_port:
            if s.payload == 0:
                acks.append((s.t_ns, s.ack))
            continue
        if not s.payload:
            continue
        if first_data < 0:
            first_data, base = s.t_ns, s.seq
        seq = (s.seq - base) & 0xFFFFFFFF
        if ends and seq < ends[-1] and first_rtx < 0:
            i = bisect.bisect_right(ends, seq)      # the first arrival that passed seq
            if s.t_ns - when[i] > REORDER_NS:
                first_rtx = s.t_ns
        if not ends or seq + s.payload > ends[-1]:
            ends.append(seq + s.payload)
            when.append(s.t_ns)
    return acks, first_data, first_rtx


def bunching(acks: list[tuple[int, int]], start: int, stop: int) -> tuple[int, float, float]:
    """Count, share within CLOSE_NS of the previous ACK, most segments acked in WINDOW_NS."""
    sel = [(t, a) for t, a in acks if start <= t < stop]
    if len(sel) < 2:
        return len(sel), 0.0, 0.0
    close = sum(1 for (t0, _), (t1, _) in zip(sel, sel[1:]) if t1 - t0 < CLOSE_NS)
    most, j = 0, 0
    for i in range(len(sel)):
        while sel[i][0] - sel[j][0] > WINDOW_NS:
            j += 1
        most = max(most, (sel[i][1] - sel[j][1]) & 0xFFFFFFFF)
    return len(sel), close / (len(sel) - 1), most / MSS


def report(run: Path, from_ms: float) -> str:
    raws = sorted(run.glob("*.raw"))
    if not raws:
        raise SystemExit(f"ack_batching: error: {run}: no NAME.raw folder; give a run folder "
                         "kept with capture_fixtures.py --keep-raw")
    raw = raws[0]
    sent, first, rtx_rx = acks_and_marks(raw / "wire.pcap")
    got, _, _ = acks_and_marks(raw / ACK_PCAP)
    # the two pcaps have one clock: an ACK sent at t reaches the sender at t + delay_ba
    delay_ba = parse_spec(json.loads((raw / "meta.json").read_text())["scenario"]).delay_ba_ns
    start = first + int(from_ms * 1e6)
    stop = rtx_rx if rtx_rx > 0 else 1 << 62
    n_s, close_s, most_s = bunching(sent, start, stop)
    n_g, close_g, most_g = bunching(got, start + delay_ba, stop + delay_ba)
    summary = json.loads((run / "summary.json").read_text())
    qd = (summary.get("link_qdisc") or {}).get("drops")
    return (f"{run.name:44} acks {n_s:6} / {n_g:6}  <20us sent {close_s:5.1%} got {close_g:5.1%}"
            f"  max/ms sent {most_s:5.1f} got {most_g:5.1f}  first rtx "
            f"{(rtx_rx - first) / 1e6 if rtx_rx > 0 else float('nan'):6.1f} ms"
            f"  retrans {summary.get('sender_retrans_segs')}  tbf drops {qd}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--from-ms", type=float, default=100.0)
    args = ap.parse_args(argv)
    for run in args.runs:
        try:
            print(report(run, args.from_ms), flush=True)
        except (OSError, ValueError, KeyError) as exc:
            print(f"ack_batching: error: {run}: {exc}; give a run folder kept with "
                  "capture_fixtures.py --keep-raw (summary.json and NAME.raw/ with wire.pcap, "
                  "acks_at_sender.pcap and meta.json)", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
