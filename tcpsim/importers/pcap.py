"""A packet capture (pcap / pcapng) -> a wire trace and a workload (tcpsim.pcap does the work).

    tcpsim import pcap dump.pcap -o dump.parquet [--flow 10.0.0.2:46000] [--reader ...]

writes `dump.parquet` (the wire trace: every segment, the receiver's windows annotated;
tcpsim.pcap.wirelog) and `dump.toml` (the workload scenario; tcpsim.pcap.workload). The
trace's metadata holds the scenario too, so `tcpsim replay` and `tcpsim validate` can run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcpsim.importers import Row
from tcpsim.pcap import PcapError, gso
from tcpsim.pcap.flows import Connection, choose, connections
from tcpsim.pcap.read import LINKTYPE_NAMES, Capture, read_capture
from tcpsim.pcap.wirelog import describe, handshake, one_way, origin, parse_wscale, rows
from tcpsim.pcap.workload import infer_reader, parse_reader, scenario, toml_text


@dataclass
class Imported:
    """One connection of a capture as tcpsim sees it: its trace as columns (time order)."""

    columns: dict[str, list]
    meta: dict[str, Any]
    scenario: dict[str, Any]
    notes: list[str]
    conn: Connection

    @property
    def rows(self) -> list[Row]:
        """The trace as one dict per row (made on demand: a long capture's columns are what
        the replay and the fit read)."""
        cols = self.columns
        names = list(cols)
        return [dict(zip(names, r)) for r in zip(*(cols[c] for c in names))]


def load(path: str | Path, flow: str | None = None, wscale: str | None = None,
         delay_ns: int | None = None, reader: str | None = None,
         rcvbuf: int | None = None, split_gso: bool = False) -> Imported:
    """Read a capture, pick its connection and build the trace and the workload (`rcvbuf`:
    the receiver application's SO_RCVBUF, which the wire does not show; `split_gso`: cut
    super-segments into MSS-sized ones instead of refusing the capture, see tcpsim.pcap.gso).
    Raises PcapError (one line) or flows.TooManyFlows (list them and ask)."""
    cap = read_capture(path)
    return load_connection(cap, choose(connections(cap), flow, cap.path), wscale, delay_ns,
                           reader, rcvbuf, split_gso)


def load_connection(cap: Capture, conn: Connection, wscale: str | None = None,
                    delay_ns: int | None = None, reader: str | None = None,
                    rcvbuf: int | None = None, split_gso: bool = False) -> Imported:
    """One connection of a read capture -> trace and workload (see load())."""
    hs = handshake(conn, parse_wscale(wscale), cap.path, cap.directions)
    notes = list(hs.notes)
    big = gso.find(conn, hs)
    split = False
    if big is not None:
        if split_gso or hs.capture_at == "sender":
            split = True
            conn = gso.split(conn, big.mss)
            why = ("--split-gso" if split_gso else "captured next to the sender, whose NIC cut "
                   "them into MSS-sized segments on the wire")
            notes.append(f"{big.sentence()}; split into {big.mss} B segments ({why})")
        else:
            raise PcapError(cap.path, None, f"{big.sentence()}, as the receiver's stack took them "
                            "(one skb, one ACK decision each), which tcpsim's MSS-sized sender "
                            "cannot replay faithfully",
                            "capture with offloads off on both ends (ethtool -K IFACE tso off gso "
                            "off gro off; for loopback: ethtool -K lo tso off gso off), or give "
                            "--split-gso to replay them as MSS-sized segments (approximate: ACKs "
                            "and memory differ)")
    if cap.options_cut:
        notes.append(f"{cap.options_cut} segments had TCP options cut by the snaplen (their "
                     "timestamps and SACK blocks are unknown; windows are whole)")
    ab, ba = one_way(hs, delay_ns)
    if delay_ns is not None:
        notes.append(f"link delay {delay_ns / 1e6:g} ms each way from --delay")
    elif hs.rtt_ns is not None:
        notes.append(f"link delay {ab / 1e6:.3f} + {ba / 1e6:.3f} ms: half the handshake's "
                     f"round trip ({hs.rtt_ns / 1e6:.3f} ms)")
    else:
        notes.append("link delay unknown (no handshake): 0 assumed; give --delay")
    if hs.capture_at == "sender":
        notes.append("captured next to the sender: times moved to the receiver's side by the "
                     f"one-way delays ({hs.capture_at_basis})")
    else:
        notes.append(f"captured next to the receiver ({hs.capture_at_basis})")
    t0 = origin(conn, hs, ab, ba)
    cols, counts = rows(conn, hs, ab, ba, t0)
    if reader is not None:
        app, how = parse_reader(reader), f"reader given: --reader {reader}"
    else:
        app, how = infer_reader(cols)
    notes.append(how)
    end = max(cols["t_ns"])
    name = Path(cap.path).stem
    doc = scenario(name, f"workload of {Path(cap.path).name}, {describe(conn, hs)['flow']}",
                   hs, cols, (ab, ba), end, app)
    # what the wire cannot tell stays unknown in the report (None: shown as "—")
    unknown = dict.fromkeys(("peak_sk_rmem_alloc", "peak_sk_rcvbuf", "peak_recv_q",
                             "final_sk_rmem_alloc", "bytes_read"))
    if rcvbuf is not None:
        doc["receiver"]["so_rcvbuf"] = rcvbuf
        notes.append(f"receiver SO_RCVBUF {rcvbuf} from --rcvbuf")
    summary = {**describe(conn, hs), **counts, **unknown, "retransmits": counts["retransmissions"],
               "window_probes": counts["probes"], "duration_s": end / 1e9, "epoch_ns": t0,
               "link_type": LINKTYPE_NAMES.get(cap.linktype, str(cap.linktype)),
               "notes": notes, "reader": how, "split_gso": split}
    meta = {"source": "import:pcap", "profile": "captured kernel", "rx_state": "after",
            "scenario": doc,
            "summary": summary}
    return Imported(cols, meta, doc, notes, conn)


def import_file(src: str | Path, dst: str | Path, workload: str | Path | None = None,
                **opts: Any) -> tuple[Path, Path, Imported]:
    """Write the trace (Parquet) and the workload (TOML, default: the trace's name .toml)."""
    from tcpsim.importers import write_columns

    imp = load(src, **opts)
    out = write_columns(imp.columns, imp.meta, dst)
    wl = Path(workload) if workload else out.with_suffix(".toml")
    wl.write_text(toml_text(imp.scenario, [f"tcpsim import pcap {src}", *imp.notes]))
    return out, wl, imp
