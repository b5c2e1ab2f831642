"""Import traces recorded by other tools into the tcpsim trace schema (tcpsim/trace/schema.py).

    python -m tcpsim.importers cloudflare-csv bt.txt -o cf.parquet
    python -m tcpsim.importers ss ss-log.txt -o ss.parquet --port 46000
    python -m tcpsim.importers rcvbuf-grow trace_pipe.txt -o grow.parquet
    python -m tcpsim.importers pcap dump.pcap -o dump.parquet      (binary: tcpsim.importers.pcap)

One module per format (importers_cloudflare, importers_ss, importers_rcvbuf_grow); this one
holds what they share: the error type, the row builder and the Parquet writer. Formats and
the columns each one fills are described in docs/importers.md. A file that does not parse
gives one `ImportFormatError` line naming the file, the line, the field and what to do --
never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

from tcpsim.trace.schema import COLUMN_NAMES, INT_COLUMNS

Row = dict[str, Any]


class ImportFormatError(ValueError):
    """Input that is not in the expected format: one line with where, what and the fix."""

    def __init__(self, where: str, line: int | None, problem: str, fix: str) -> None:
        loc = f"{where}:{line}" if line is not None else where
        super().__init__(f"{loc}: {problem}; {fix}")


def blank(**kw: Any) -> Row:
    """A row with every column unknown (-1 / ''), then ``kw`` applied."""
    row: Row = {c: (-1 if c in INT_COLUMNS else "") for c in COLUMN_NAMES}
    row.update(kw)
    return row


def read_lines(path: str | Path) -> list[str]:
    """The lines of a text file (an ImportFormatError for a missing or binary file)."""
    p = Path(path)
    if not p.is_file():
        raise ImportFormatError(str(p), None, "no such file", "check the path")
    try:
        return p.read_text().splitlines()
    except UnicodeDecodeError as exc:
        raise ImportFormatError(str(p), None, f"not a text file (byte {exc.start} is not UTF-8)",
                                "give the text output of the tool, not a binary capture") from None


def to_int(text: str, where: str, line: int, field: str, fix: str) -> int:
    """An integer field, or an ImportFormatError naming it."""
    try:
        return int(text.strip())
    except ValueError:
        raise ImportFormatError(where, line, f"field {field!r}: {text.strip()!r} is not an integer",
                                fix) from None


def write(rows: list[Row], meta: dict[str, Any], path: str | Path) -> Path:
    """Write rows (sorted by time) and metadata as a trace Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tcpsim.trace.recorder import SCHEMA

    rows = sorted(rows, key=lambda r: r["t_ns"])
    return write_columns({name: [r[name] for r in rows] for name in COLUMN_NAMES}, meta, path)


def write_columns(cols: dict[str, list], meta: dict[str, Any], path: str | Path) -> Path:
    """Write trace columns (every schema column, in time order) and metadata as a trace
    Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tcpsim.trace.recorder import SCHEMA

    # a column given as the same list as another (the unknown columns of an import share
    # one list of -1) is converted once
    made: dict[tuple[int, Any], Any] = {}
    arrays = []
    for f in SCHEMA:
        key = (id(cols[f.name]), f.type)
        if key not in made:
            made[key] = pa.array(cols[f.name], type=f.type)
        arrays.append(made[key])
    table = pa.Table.from_arrays(arrays, schema=SCHEMA)
    full = {"source": "", "profile": "", "scenario": {}, "sysctls": {}, "counters": {},
            "summary": {}, **meta}
    table = table.replace_schema_metadata({k: json.dumps(v, sort_keys=True) for k, v in full.items()})
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out, compression="zstd")
    return out


# -- the registry -------------------------------------------------------------------------------

def _formats() -> dict[str, Callable[..., tuple[list[Row], dict[str, Any]]]]:
    from tcpsim.importers import cloudflare, rcvbuf_grow, ss
    return {"cloudflare-csv": cloudflare.parse,
            "ss": ss.parse,
            "rcvbuf-grow": rcvbuf_grow.parse}


FORMATS = ("cloudflare-csv", "ss", "rcvbuf-grow", "pcap")
BINARY_FORMATS = frozenset({"pcap"})


def parse(fmt: str, lines: Iterable[str], where: str = "<input>", **opts: Any) -> tuple[list[Row], dict[str, Any]]:
    """Parse text lines of format `fmt`: (rows, metadata)."""
    formats = _formats()
    if fmt in BINARY_FORMATS:
        raise ImportFormatError(where, None, f"{fmt} is a binary format, not lines of text",
                                "use import_file()")
    if fmt not in formats:
        raise ImportFormatError(where, None, f"unknown format {fmt!r}",
                                f"choose one of: {', '.join(FORMATS)}")
    return formats[fmt](list(lines), where, **opts)


def import_file(fmt: str, src: str | Path, dst: str | Path, **opts: Any) -> Path:
    """Convert one file; returns the Parquet path."""
    if fmt == "pcap":
        from tcpsim.importers import pcap
        if "port" in opts:                      # the receiver's port picks the connection
            opts = {**{k: v for k, v in opts.items() if k != "port"}, "flow": str(opts["port"])}
        return pcap.import_file(src, dst, **opts)[0]
    rows, meta = parse(fmt, read_lines(src), str(src), **opts)
    return write(rows, meta, dst)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcpsim.importers",
                                 description="Convert another tool's trace to a tcpsim trace.")
    ap.add_argument("format", choices=FORMATS)
    ap.add_argument("input", help="text file (bpftrace output, ss log, trace_pipe/perf script)")
    ap.add_argument("-o", "--out", required=True, help="Parquet file to write")
    ap.add_argument("--port", type=int, default=None,
                    help="the receiver's local port (when the input holds several sockets)")
    args = ap.parse_args(argv)
    opts = {"port": args.port} if args.port is not None else {}
    from tcpsim.pcap.flows import TooManyFlows, listing
    try:
        out = import_file(args.format, args.input, args.out, **opts)
    except ImportFormatError as exc:
        print(f"import: {exc}", file=sys.stderr)
        return 2
    except TooManyFlows as exc:
        print("\n".join(listing(exc.conns)))
        print(f"import: {args.input}: {exc}; pick one with --port (its receiver's port)",
              file=sys.stderr)
        return 2
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
