"""A finding on disk: the scenario file that reproduces it, its numbers, a comparison.

    OUT/finding/
      scenario.toml     the minimised workload as an ordinary scenario file: `tcpsim run` it
      finding.json      objective, its value under each side, the fields away from defaults
      compare.txt       `tcpsim compare` of the two sides on it (the table)
      compare.html      ... and its report page
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from tcpsim.searching.evaluate import Evaluation, Evaluator
from tcpsim.searching.space import PolicySpec
from tcpsim.searching.stall import STALL_FIELDS

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def pretty_duration(value: Any) -> Any:
    """"1500000ns" -> "1.5ms", "10880000bit" -> "10.88mbit" (exact: only when the shorter
    form is the same number)."""
    if isinstance(value, str) and value.endswith("bit") and value[:-3].isdigit():
        return _shorter(int(value[:-3]), value, (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3)))
    if not (isinstance(value, str) and value.endswith("ns") and value[:-2].isdigit()):
        return value
    return _shorter(int(value[:-2]), value, (("s", 10**9), ("ms", 10**6), ("us", 10**3)))


def _shorter(ns: int, value: str, units: tuple[tuple[str, int], ...]) -> str:
    for unit, scale in units:
        if ns >= scale:
            x = ns / scale
            text = f"{x:.6g}"
            if int(round(float(text) * scale)) == ns:
                return f"{text}{unit}"
    return value


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(pretty_duration(v))
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} to a scenario file")


def toml_text(doc: Mapping[str, Any], prefix: str = "") -> str:
    """A scenario document (nested tables as dicts) as TOML."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in doc.items() if not isinstance(v, Mapping)]
    for k, v in doc.items():
        if isinstance(v, Mapping):
            name = f"{prefix}{_key(k)}"
            if any(not isinstance(x, Mapping) for x in v.values()) or not v:
                lines += ["", f"[{name}]"]
            body = toml_text(v, name + ".")
            if body.strip():
                lines.append(body.rstrip("\n"))
    text = "\n".join(lines) + "\n"
    return text if prefix else text.lstrip("\n")


def scenario_doc(ev: Evaluator, e: Evaluation, name: str, description: str) -> dict[str, Any]:
    """The finding's scenario document: under the searched policy's profile and patches."""
    doc = ev.doc(e.values, e.duration)
    side = ev.spec.policy
    head = {"name": name, "description": description}
    if side.profile:
        head["profile"] = side.profile
    body = {k: v for k, v in doc.items() if k not in ("name", "description", "profile")}
    if "profile" in doc and "profile" not in head:
        head["profile"] = doc["profile"]
    if side.policy:
        body["policies"] = [*doc.get("policies", []), *side.policy]
    if side.sysctl:
        body["sysctl"] = {**doc.get("sysctl", {}), **side.sysctl}
    return {**head, **body}


def write_finding(out: Path, ev: Evaluator, e: Evaluation, best: Evaluation,
                  threshold: float) -> dict[str, Any]:
    """Write OUT/finding/ for the minimised evaluation `e` (of the search's best `best`)."""
    spec = ev.spec
    folder = out / "finding"
    folder.mkdir(parents=True, exist_ok=True)
    desc = (f"found by tcpsim search {spec.name}: {spec.objective} = {e.objective:.4g} "
            f"(threshold {threshold:g})")
    doc = scenario_doc(ev, e, f"{spec.name}-finding", desc)
    (folder / "scenario.toml").write_text(
        f"# {desc}\n# Reproduce: tcpsim run {folder / 'scenario.toml'}\n" + toml_text(doc))
    record = {
        "search": spec.name, "objective": spec.objective, "value": e.objective,
        "sides": {_side_label(spec.policy): e.sides.get("policy"),
                  **({_side_label(spec.vs): e.sides.get("vs")} if spec.vs else {})},
        "threshold": threshold, "search_best": best.objective,
        "fields": {k: pretty_duration(v) for k, v in e.values.items()},
        "search_fields": {k: pretty_duration(v) for k, v in best.values.items()},
        "duration_s": e.duration / 1e9, "search_duration_s": best.duration / 1e9,
        "peaks": {role: {k: s.get(k) for k in ("peak_sk_rmem_alloc", "peak_sk_rcvbuf", "drops",
                                                "zero_windows_sent", "goodput_mbps", "died_at_s",
                                                *STALL_FIELDS) if k in s or k not in STALL_FIELDS}
                  for role, s in e.summaries.items()},
    }
    (folder / "finding.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    _compare(folder, ev, doc)
    return record


def _side_label(side: PolicySpec | None) -> str:
    return side.label() if side is not None else ""


def _compare(folder: Path, ev: Evaluator, doc: dict[str, Any]) -> None:
    """`tcpsim compare` of the two sides (the policy and `vs`; without `vs`: the policy and
    its autotuning-alone reference, or the profile without the patches) on the finding."""
    from tcpsim import api
    from tcpsim.report import format_table
    from tcpsim.searching.reference import reference_spec
    spec = ev.spec
    scen = {k: v for k, v in doc.items() if k not in ("policies",)}
    mine: dict[str, Any] = {"policy": list(spec.policy.policy),
                            "sysctl": dict(spec.policy.sysctl) or None}
    if spec.policy.profile:
        mine["profile"] = spec.policy.profile
    variants: dict[str, dict[str, Any]] = {spec.policy.label(str(doc.get("profile", ""))): mine}
    if spec.vs is not None:
        other: dict[str, Any] = {"policy": list(spec.vs.policy), "sysctl": dict(spec.vs.sysctl) or None}
        if spec.vs.profile:
            other["profile"] = spec.vs.profile
        variants[spec.vs.label(str(doc.get("profile", "")))] = other
    elif spec.policy.policy:
        variants["without the patches"] = {**mine, "policy": []}
    else:
        variants["autotuning alone (reference)"] = {**mine, "policy": [reference_spec()]}
    for kw in variants.values():
        if kw.get("sysctl") is None:
            kw.pop("sysctl", None)
    comp = api.compare(scen, variants)
    (folder / "compare.txt").write_text(format_table(comp.rows) + "\n")
    comp.report(folder / "compare.html")
