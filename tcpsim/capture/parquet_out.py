"""Write trace rows plus metadata to Parquet with the schema of tcpsim/trace/schema.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tcpsim.trace.schema import COLUMNS, META_KEYS


def arrow_schema():
    import pyarrow as pa
    types = {"int64": pa.int64(), "string": pa.string()}
    return pa.schema([pa.field(name, types[t]) for name, t, _ in COLUMNS])


def write(rows: list[dict[str, Any]], path: Path, meta: dict[str, Any]) -> Path:
    """Write ``rows`` (dicts with every column) and ``meta`` (META_KEYS, JSON-encoded)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise ValueError(f"metadata keys missing: {missing}")
    schema = arrow_schema()
    cols = {f.name: [r[f.name] for r in rows] for f in schema}
    table = pa.Table.from_pydict(cols, schema=schema)
    table = table.replace_schema_metadata({k: json.dumps(v) for k, v in meta.items()})
    pq.write_table(table, path)
    return path
