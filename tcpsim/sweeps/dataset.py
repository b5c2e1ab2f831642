"""A sweep's results on disk: a Parquet dataset written point by point.

    RESULTS/
      sweep.json                 the last sweep's axes and metrics (for `tcpsim sweep report`)
      points/<hash>.parquet      one row per point: axes, resolved settings, summary, counters
      traces/point=<hash>/trace.parquet   each point's trace, if asked (hive-partitioned)

A row is written the moment its point finishes, to a hidden temporary file renamed into
place, so a crash loses only the points in flight and a reader never sees half a file
(readers skip names starting with "." or "_"). A point's file is named by its content hash,
so a point is present at most once, and a re-run skips the hashes it finds.

`points/` reads directly: `pandas.read_parquet("RESULTS/points")`,
`polars.read_parquet("RESULTS/points/*.parquet")`,
`duckdb.sql("select * from 'RESULTS/points/*.parquet'")`.
"""

from __future__ import annotations

import csv
import json
import os
import uuid
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

import tcpsim
from tcpsim.sweeps.grid import Axis, Point

_FLOAT_FIELDS = {"died_at_s", "duration_s", "wall_s", "goodput_mbps"}


class Results:
    """The results directory of a sweep."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.points_dir = self.root / "points"
        self.traces_dir = self.root / "traces"

    # -- what is there ------------------------------------------------------------------------

    def present(self) -> set[str]:
        """Hashes of the points already stored."""
        if not self.points_dir.is_dir():
            return set()
        return {p.stem for p in self.points_dir.glob("*.parquet") if not p.name.startswith(".")}

    def trace_path(self, point: Point) -> Path:
        return self.traces_dir / f"point={point.hash}" / "trace.parquet"

    def read_rows(self, hashes: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """{hash: row} for the stored points (those in `hashes`, if given)."""
        wanted = self.present() if hashes is None else set(hashes) & self.present()
        out = {}
        for h in wanted:
            rows = pq.read_table(self.points_dir / f"{h}.parquet").to_pylist()
            if rows:
                out[h] = rows[0]
        return out

    # -- writing ---------------------------------------------------------------------------------

    def prepare(self, axes: list[Axis], points: list[Point], metrics: list[str], name: str = "",
                description: str = "", x: str = "") -> None:
        """Create the directories, drop temporary files a crash left behind, and note what
        this sweep is (its axes in grid order, its points, metrics) for the report."""
        self.points_dir.mkdir(parents=True, exist_ok=True)
        for tmp in [*self.points_dir.glob(".*.tmp"), *self.traces_dir.glob("*/*.partial")]:
            tmp.unlink(missing_ok=True)
        meta = {"name": name, "description": description, "x": x, "metrics": metrics,
                "axes": [{"key": a.key, "fields": list(a.fields),
                          "labels": [label(v) for v in a.values]} for a in axes],
                "points": [p.hash for p in points],
                "tcpsim": tcpsim.__version__,
                "engine": ",".join(sorted({p.scenario.engine for p in points}))}
        _atomic_write_text(self.root / "sweep.json", json.dumps(meta, indent=2) + "\n")

    def meta(self) -> dict[str, Any]:
        """What the last sweep into this directory noted ({} if none)."""
        try:
            return json.loads((self.root / "sweep.json").read_text())
        except (OSError, ValueError):
            return {}

    def write(self, point: Point, schema: pa.Schema) -> None:
        """Store one finished point (atomically). Failed points are not stored: a re-run
        tries them again."""
        table = pa.Table.from_pylist([row_of(point)], schema=schema)
        final = self.points_dir / f"{point.hash}.parquet"
        tmp = self.points_dir / f".{point.hash}.{uuid.uuid4().hex[:8]}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, final)


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# -- rows ----------------------------------------------------------------------------------------

def row_of(point: Point) -> dict[str, Any]:
    """The stored row of a finished point: every axis value, the resolved settings, every
    summary field and every counter (as counter.NAME)."""
    sc = point.scenario
    row: dict[str, Any] = {k: _cell(v) for k, v in point.values.items()}
    row.update({"hash": point.hash, "engine": sc.engine, "tcpsim_version": tcpsim.__version__})
    for k, v in (("profile", sc.profile), ("policies", "+".join(sc.policies) or "none"),
                 ("seed", sc.seed), ("hz", sc.hz)):
        row.setdefault(k, v)
    row["scenario"] = json.dumps(point.host.as_dict() if point.host is not None else
                                 {k: v for k, v in sc.as_dict().items() if k != "source"},
                                 sort_keys=True, default=str)
    row["sysctls"] = json.dumps(point.sysctls, sort_keys=True)
    summary = {k: v for k, v in (point.summary or {}).items() if k != "hz"}
    row.update({k: v for k, v in summary.items() if k not in row})
    row["error"] = point.error or summary.get("error") or ""    # the exports list failures too
    row.update({f"counter.{k}": v for k, v in point.counters.items()})
    return row


def _cell(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def label(value: Any) -> str:
    """How an axis step is shown: "20ms", "1", "1/1ms" for a paired step."""
    if isinstance(value, tuple):
        return "/".join(label(v) for v in value)
    return str(_cell(value))


def schema_for(points: list[Point], sample: Point) -> pa.Schema:
    """One schema for every row of this sweep (a directory read as one dataset takes its
    columns from one file): an axis column is integer, float, boolean or string as all its
    values allow; summary fields and counters take their types from a finished point
    (`sample`, see reference_point), with died_at_s and the like always float."""
    fields: list[pa.Field] = []
    for key in points[0].values:
        fields.append(pa.field(key, _common_type([_cell(p.values[key]) for p in points])))
    names = {f.name for f in fields}
    for key, value in row_of(sample).items():
        if key in names:
            continue
        if key in _FLOAT_FIELDS or (sample.host is not None and not isinstance(value, bool)
                                    and (value is None or isinstance(value, float))):
            typ = pa.float64()            # a host's figures: None where nothing was measured
        else:
            typ = _common_type([value])
        fields.append(pa.field(key, typ))
        names.add(key)
    return pa.schema(fields)


def restore(point: Point, row: dict[str, Any], summary_keys: Iterable[str]) -> None:
    """Fill a point's result in from its stored row."""
    if any(row.get(k) is not None for k in summary_keys):
        point.summary = {k: row.get(k) for k in summary_keys}
    point.counters = {k[len("counter."):]: v for k, v in row.items()
                      if k.startswith("counter.") and v is not None}


def _common_type(values: list[Any]) -> pa.DataType:
    if all(isinstance(v, bool) for v in values):
        return pa.bool_()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return pa.int64()
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return pa.float64()
    return pa.string()


def coerce(point: Point, schema: pa.Schema) -> None:
    """Make the axis values match their column type (a string column holds '1' for 1)."""
    for key in list(point.values):
        if key in schema.names and pa.types.is_string(schema.field(key).type):
            v = _cell(point.values[key])
            point.values[key] = v if isinstance(v, str) else str(v)


def read_dataset(root: Path) -> pa.Table:
    """Every stored row, one table (schemas of different sweeps unified)."""
    res = Results(root)
    tables = [pq.read_table(res.points_dir / f"{h}.parquet") for h in sorted(res.present())]
    if not tables:
        return pa.table({})
    return pa.concat_tables(tables, promote_options="permissive")


# -- exports -------------------------------------------------------------------------------------

def write_results(points: list[Point], path: Path) -> int:
    """Write the finished points' rows (grid order, with the point number) to CSV or JSON by
    suffix; returns how many were written."""
    rows = [dict({"point": p.index}, **row_of(p)) for p in points if p.done]
    for r in rows:
        r.pop("scenario", None)
        r.pop("sysctls", None)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_text(json.dumps(rows, indent=2, sort_keys=True) + "\n")
        return len(rows)
    columns: list[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    with path.open("w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=columns)
        out.writeheader()
        out.writerows(rows)
    return len(rows)
