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
from tcpsim.pcap.flows import Connection, choose, connections
from tcpsim.pcap.read import LINKTYPE_NAMES, read_capture
from tcpsim.pcap.wirelog import describe, handshake, one_way, origin, parse_wscale, rows
from tcpsim.pcap.workload import infer_reader, parse_reader, scenario, toml_text


@dataclass
class Imported:
    """One connection of a capture as tcpsim sees it."""

    rows: list[Row]
    meta: dict[str, Any]
    scenario: dict[str, Any]
    notes: list[str]
    conn: Connection


def load(path: str | Path, flow: str | None = None, wscale: str | None = None,
         delay_ns: int | None = None, reader: str | None = None,
         rcvbuf: int | None = None) -> Imported:
    """Read a capture, pick its connection and build the trace and the workload (`rcvbuf`:
    the receiver application's SO_RCVBUF, which the wire does not show).
    Raises PcapError (one line) or flows.TooManyFlows (list them and ask)."""
    cap = read_capture(path)
    conn = choose(connections(cap), flow, cap.path)
    hs = handshake(conn, parse_wscale(wscale), cap.path)
    ab, ba = one_way(hs, delay_ns)
    notes = list(hs.notes)
    if delay_ns is not None:
        notes.append(f"link delay {delay_ns / 1e6:g} ms each way from --delay")
    elif hs.rtt_ns is not None:
        notes.append(f"link delay {ab / 1e6:.3f} + {ba / 1e6:.3f} ms: half the handshake's "
                     f"round trip ({hs.rtt_ns / 1e6:.3f} ms)")
    else:
        notes.append("link delay unknown (no handshake): 0 assumed; give --delay")
    if hs.capture_at == "sender":
        notes.append("captured next to the sender: times moved to the receiver's side by the "
                     "one-way delays")
    t0 = origin(conn, hs, ab, ba)
    trace_rows, counts = rows(conn, hs, ab, ba, t0)
    if reader is not None:
        app, how = parse_reader(reader), f"reader given: --reader {reader}"
    else:
        app, how = infer_reader(trace_rows)
    notes.append(how)
    end = max(r["t_ns"] for r in trace_rows)
    name = Path(cap.path).stem
    doc = scenario(name, f"workload of {Path(cap.path).name}, {describe(conn, hs)['flow']}",
                   hs, trace_rows, (ab, ba), end, app)
    # what the wire cannot tell stays unknown in the report (None: shown as "—")
    unknown = dict.fromkeys(("peak_sk_rmem_alloc", "peak_sk_rcvbuf", "peak_recv_q",
                             "final_sk_rmem_alloc"))
    if rcvbuf is not None:
        doc["receiver"]["so_rcvbuf"] = rcvbuf
        notes.append(f"receiver SO_RCVBUF {rcvbuf} from --rcvbuf")
    summary = {**describe(conn, hs), **counts, **unknown, "retransmits": counts["retransmissions"],
               "window_probes": counts["probes"], "duration_s": end / 1e9, "epoch_ns": t0,
               "link_type": LINKTYPE_NAMES.get(cap.linktype, str(cap.linktype)),
               "notes": notes, "reader": how}
    meta = {"source": "import:pcap", "profile": "captured kernel", "rx_state": "after",
            "scenario": doc,
            "summary": summary}
    return Imported(trace_rows, meta, doc, notes, conn)


def import_file(src: str | Path, dst: str | Path, workload: str | Path | None = None,
                **opts: Any) -> tuple[Path, Path, Imported]:
    """Write the trace (Parquet) and the workload (TOML, default: the trace's name .toml)."""
    from tcpsim.importers import write

    imp = load(src, **opts)
    out = write(imp.rows, imp.meta, dst)
    wl = Path(workload) if workload else out.with_suffix(".toml")
    wl.write_text(toml_text(imp.scenario, [f"tcpsim import pcap {src}", *imp.notes]))
    return out, wl, imp
