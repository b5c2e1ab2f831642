"""Side-by-side tables: rows of values per run with deltas against the first run.

A row is a plain dict, so the same rows print in a terminal (`format_table`), serialize to
JSON (`table_json`) and render in HTML (tcpsim.report.html):

    {"section": "summary", "metric": "peak memory (skmem_r)", "key": "peak_sk_rmem_alloc",
     "unit": "bytes", "hint": "...",
     "values": {"linux-6.1": 29881128, "+shrink": 100344},
     "deltas": {"+shrink": -29780784}}

`values` is keyed by run label in run order; `deltas` holds value - first run's value for
every later run whose two values are numbers (None otherwise).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from tcpsim.core.mib import counter_meaning
from tcpsim.report.summary import REVERSE_FIELDS, SUMMARY_FIELDS

Row = dict[str, Any]
_BINARY = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fmt_bytes(v: float) -> str:
    """1536 -> '1.5 KiB'; below 1 KiB in bytes."""
    for size, unit in _BINARY:
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}" if abs(v) < 100 * size else f"{v / size:.0f} {unit}"
    return f"{v:.0f} B"


def fmt_rate(v: float) -> str:
    """Bits per second with an SI prefix: 8000 -> '8 kbit/s'."""
    for size, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if abs(v) >= size:
            return f"{v / size:.3g} {unit}"
    return f"{v:.0f} bit/s"


def fmt_value(v: Any, unit: str) -> str:
    """A value as a person reads it ('—' for unknown)."""
    if v is None or v == "":
        return "—"
    if not _is_number(v):
        return str(v)
    if unit == "bytes":
        return fmt_bytes(v)
    if unit == "bit/s":
        return fmt_rate(v)
    if unit == "s":
        return f"{v:.3g} s" if abs(v) < 100 else f"{v:.0f} s"
    return f"{v:,}" if isinstance(v, int) else f"{v:,.3g}"


def fmt_delta(d: Any, unit: str, v: Any = None, base: Any = None) -> str:
    """A delta with its sign ('' when there is none or it is zero); bytes add the ratio."""
    if d is None or d == 0:
        return ""
    sign = "+" if d > 0 else "−"
    text = sign + fmt_value(abs(d), unit)
    if unit == "bytes" and _is_number(v) and _is_number(base) and base > 0 and v > 0:
        text += f" (×{v / base:.3g})"
    return text


def delta(v: Any, base: Any) -> Any:
    """v - base when both are numbers, else None."""
    if _is_number(v) and _is_number(base):
        return v - base
    return None


def make_row(section: str, key: str, label: str, unit: str, values: Mapping[str, Any],
             hint: str = "") -> Row:
    """One table row, with deltas of every later run against the first."""
    labels = list(values)
    base = values[labels[0]] if labels else None
    return {"section": section, "metric": label, "key": key, "unit": unit, "hint": hint,
            "values": dict(values),
            "deltas": {lab: delta(values[lab], base) for lab in labels[1:]}}


def summary_rows(summaries: Mapping[str, Mapping[str, Any]]) -> list[Row]:
    """Summary rows for runs keyed by label (each from tcpsim.report.summary.summarize); the
    other direction's rows when any run sent data both ways."""
    two_way = any("rev_bytes_read" in s for s in summaries.values())
    return [make_row("summary", f.key, f.label, f.unit,
                     {lab: s.get(f.key) for lab, s in summaries.items()}, f.hint)
            for f in SUMMARY_FIELDS + (REVERSE_FIELDS if two_way else ())]


def counter_rows(counters: Mapping[str, Mapping[str, int]], nonzero_only: bool = True) -> list[Row]:
    """nstat counter rows for runs keyed by label; counters zero in every run are left out."""
    names: list[str] = []
    for c in counters.values():
        names += [n for n in c if n not in names]
    rows = []
    for name in names:
        values = {lab: c.get(name, 0) for lab, c in counters.items()}
        if nonzero_only and not any(values.values()):
            continue
        short = name.removeprefix("TcpExt").removeprefix("Tcp")
        hint = counter_meaning(short)
        rows.append(make_row("counters", name, name, "count", values, hint))
    return rows


def config_rows(metas: Mapping[str, Mapping[str, Any]]) -> list[Row]:
    """What differs between the runs: profile, patches, sysctls, scenario knobs."""
    rows = [make_row("config", "profile", "profile", "text",
                     {lab: m.get("profile", "") for lab, m in metas.items()})]
    pol = {lab: ", ".join((m.get("scenario") or {}).get("policies") or [])
           for lab, m in metas.items()}
    if any(pol.values()):
        rows.append(make_row("config", "policies", "patches", "text", pol))
    names: list[str] = []
    for m in metas.values():
        names += [n for n in (m.get("sysctls") or {}) if n not in names]
    for name in names:
        values = {lab: _plain((m.get("sysctls") or {}).get(name)) for lab, m in metas.items()}
        if len({json.dumps(v) for v in values.values()}) > 1:
            rows.append(make_row("config", name, name, "text", values))
    return rows


def _plain(v: Any) -> Any:
    return " ".join(map(str, v)) if isinstance(v, list) else v


def table_columns(rows: Sequence[Row]) -> list[str]:
    """Run labels, in run order, from the first row."""
    return list(rows[0]["values"]) if rows else []


def format_table(rows: Sequence[Row]) -> str:
    """A plain-text table for the terminal: one block per section, a value column per run
    and a delta column after every run but the first."""
    labels = table_columns(rows)
    if not labels:
        return ""
    header = ["metric"]
    for i, lab in enumerate(labels):
        header += [lab] if i == 0 else [lab, f"Δ vs {labels[0]}"]
    out: list[str] = []
    for section in dict.fromkeys(r["section"] for r in rows):
        body = [_text_cells(r, labels) for r in rows if r["section"] == section]
        widths = [max(len(x) for x in col) for col in zip(header, *body)]
        out.append(f"[{section}]")
        out.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
        for cells in body:
            first, *rest = cells
            line = [first.ljust(widths[0])] + [c.rjust(w) for c, w in zip(rest, widths[1:])]
            out.append("  ".join(line).rstrip())
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _text_cells(row: Row, labels: list[str]) -> list[str]:
    unit, vals = row["unit"], row["values"]
    cells = [row["metric"]]
    for i, lab in enumerate(labels):
        cells.append(fmt_value(vals.get(lab), unit))
        if i:
            cells.append(fmt_delta(row["deltas"].get(lab), unit, vals.get(lab), vals[labels[0]]))
    return cells


def table_json(rows: Sequence[Row], indent: int | None = 2) -> str:
    """The rows as JSON: {"runs": [labels], "rows": [...]}."""
    return json.dumps({"runs": table_columns(rows), "rows": list(rows)}, indent=indent,
                      default=_json_default)


def _json_default(v: Any) -> Any:
    if hasattr(v, "item"):         # numpy scalars
        return v.item()
    raise TypeError(f"not JSON serializable: {type(v).__name__}")
