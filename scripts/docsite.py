"""MkDocs hooks of the documentation site (mkdocs.yml: `hooks: [scripts/docsite.py]`).

    python3 -m mkdocs build --strict        # the site, in site/
    python3 -m mkdocs serve                 # the same, live

What the hooks add to docs/:

* Figures made by running the experiment. A page holds, in an HTML comment (invisible where
  the Markdown is shown as is), a TOML block naming the experiment:

      <!-- tcpsim-figure
      scenario = "seed-default-fill"
      duration = "1s"
      figures = ["window"]
      table = ["peak_sk_rcvbuf", "TcpExtTCPWantZeroWindowAdv"]
      variants = [{label = "6.1", profile = "linux-6.1"}, {label = "6.18", profile = "linux-6.18"}]
      -->

  The hook runs it through the public API (tcpsim.run / tcpsim.compare), puts the plotly
  figures (plotly.js is served from the site: no network needed), an optional table of
  summary fields and counters, and the command and Python that reproduce it in the page's
  place. A single run may have a `label` (how the page names it; its profile otherwise). A run or variant may also have `policy`, `sysctl` (a table), `hz`, and `set` (scenario
  fields by their dotted names, e.g. `{"receiver.device" = "nic-4k"}`) and `timing` (a host
  preset or "exact", as `--timing`). Above the figures the page states each run's
  conditions (scenario, profile and patches, timing, duration, seed), read from the run
  itself. Results are cached in
  .cache/docs-figures/ (TCPSIM_DOCS_CACHE overrides) under the hash of the block, the scenario
  file and every source file of the simulator: a change to the model reruns the figures.
* Host figures: a block whose `scenario` is a host file (docs/hosts.md) runs the host on
  each variant (`set` may change the host's fields, e.g. `{"class.bad.count" = 20}`) and
  draws the host report's figures (tcpsim/report/host.py): `host-memory` (sockstat mem
  against tcp_mem, pressure shaded), `host-classes` (per class: goodput, read latency, drops,
  zero windows) and, with `sweep = {field = "class.bad.count", values = [0, 5, 10, 20]}`
  (every variant at every value, labelled `LABEL @ VALUE`), `host-sweep`. A host run's
  summary keys are tcpsim/host/run.py `host_summary`'s (`pressure_onset_s`,
  `in_pressure_ms`, `peak_sockstat_mem`, `memory_pressures`, `CLASS.FIELD`) and its nstat.
* Numbers the prose states, taken from the run: `{{LABEL: key}}` anywhere on a page with a
  figure block is replaced by that run's summary field or counter (LABEL: a variant's label,
  or the profile of a single run), e.g. `{{linux-6.1: peak_sk_rcvbuf}}`; `{{LABEL: key |
  exact}}` prints every digit. A block's `checks` are claims about its runs that the build
  verifies (a false one fails the build) and the page lists as checked:
  `checks = ["linux-6.1: zero_windows_sent == 0", "linux-6.1: peak_sk_rcvbuf > 100 *
  linux-6.1 + shrink-window: peak_sk_rcvbuf"]` (sides: a number, or `[NUMBER *] LABEL:
  key`; operators == != < <= > >=). tests/test_docs_numbers.py reruns every block and
  holds each stated number, table cell and check against the fresh run.
* One page per kernel profile and patch (profiles/NAME.md), cut from what scripts/docgen.py
  renders from the classes.
* The command-line reference (cli.md), from the typer commands' options and help.
* plotly.min.js from the installed plotly package (assets/javascripts/plotly.min.js).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:                   # this checkout's tcpsim, not an installed one
    sys.path.insert(0, str(ROOT))

FIGURE_BLOCK = re.compile(r"<!--\s*tcpsim-figure\s*\n(.*?)-->", re.S)
PLACEHOLDER = '<div class="tcpsim-placeholder" data-n="{n}"></div>'
PLOTLY_JS = "assets/javascripts/plotly.min.js"
SPEC_KEYS = {"scenario", "duration", "figures", "table", "variants", "profile", "policy",
             "sysctl", "hz", "set", "seed", "timing", "checks", "label", "sweep"}
VARIANT_KEYS = {"label", "profile", "policy", "sysctl", "hz", "set", "seed", "timing"}
VALUE = re.compile(r"\{\{\s*([^{}|]+?)\s*:\s*([A-Za-z_][\w.]*)\s*(?:\|\s*(exact)\s*)?\}\}")
CHECK_OPS = {"==": "=", "!=": "≠", "<=": "≤", ">=": "≥", "<": "<", ">": ">"}

RESULT_FORMAT = "2"                              # what run_spec returns; a change reruns
_pending: dict[str, list[str]] = {}             # page src_uri -> figure HTML per placeholder
_used: set[str] = set()                         # cache files this build read or wrote


try:                                            # a build error MkDocs prints as one line
    from mkdocs.exceptions import PluginError as _BuildError
except ImportError:  # pragma: no cover - the hooks run inside mkdocs
    _BuildError = ValueError  # type: ignore[misc,assignment]


class FigureSpecError(_BuildError):
    """A tcpsim-figure block that cannot run: names the page and the key."""


# -- running the experiments ------------------------------------------------------------------------

def cache_dir() -> Path:
    return Path(os.environ.get("TCPSIM_DOCS_CACHE") or ROOT / ".cache" / "docs-figures")


_code_hash: str | None = None


def code_hash() -> str:
    """Hash of every file that decides a run's result: the simulator, models, experiments."""
    global _code_hash
    if _code_hash is None:
        h = hashlib.sha256()
        for folder, pattern in (("tcpsim", "*.py"), ("models", "*.py"), ("experiments", "*.toml")):
            for p in sorted((ROOT / folder).rglob(pattern)):
                h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes())
        _code_hash = h.hexdigest()
    return _code_hash


def parse_spec(text: str, where: str) -> dict[str, Any]:
    """The TOML of a tcpsim-figure block, checked."""
    try:
        spec = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FigureSpecError(f"{where}: tcpsim-figure block is not valid TOML: {exc}") from None
    bad = set(spec) - SPEC_KEYS
    if bad:
        raise FigureSpecError(f"{where}: tcpsim-figure: unknown key {', '.join(sorted(bad))}")
    if "scenario" not in spec or not spec.get("figures"):
        raise FigureSpecError(f"{where}: tcpsim-figure needs scenario and figures")
    sweep = spec.get("sweep")
    if sweep is not None and (not isinstance(sweep, dict) or set(sweep) != {"field", "values"}
                              or not sweep["values"] or not _is_host(spec)):
        raise FigureSpecError(f"{where}: tcpsim-figure: sweep is a host block's "
                              "{field = \"class.bad.count\", values = [0, 5, 10, 20]}")
    if _is_host(spec):
        from tcpsim.report.host import FIGURES as HOST_FIGURES
        for name in spec["figures"]:
            if name not in HOST_FIGURES:
                raise FigureSpecError(f"{where}: tcpsim-figure: {name}: not a host figure; a "
                                      f"host block draws {', '.join(HOST_FIGURES)}")
            if name == "host-sweep" and not sweep:
                raise FigureSpecError(f"{where}: tcpsim-figure: host-sweep: needs sweep = "
                                      "{field = \"class.bad.count\", values = [0, 5, 10]}")
    shadowed = sorted(set(spec) & VARIANT_KEYS) if spec.get("variants") else []
    if shadowed:
        raise FigureSpecError(f"{where}: tcpsim-figure: {', '.join(shadowed)} at the top would be "
                              "ignored beside variants; give it to each variant")
    for v in spec.get("variants", []):
        bad = set(v) - VARIANT_KEYS
        if bad or "label" not in v:
            raise FigureSpecError(f"{where}: tcpsim-figure variant {v}: needs a label; "
                                  f"unknown key {', '.join(sorted(bad)) or '-'}")
    return spec


def _scenario_of(spec: dict[str, Any], changes: dict[str, Any] | None) -> Any:
    import tcpsim
    if not changes:
        return spec["scenario"]
    doc = tcpsim.scenario_dict(spec["scenario"])
    from tcpsim.scenario import set_field
    for key, value in changes.items():
        set_field(doc, key, value)
    return doc


def _run_kwargs(d: dict[str, Any]) -> dict[str, Any]:
    return {k: d[k] for k in ("profile", "policy", "sysctl", "hz", "seed", "timing") if k in d}


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Run the experiment; returns figures (plotly JSON), table rows, every run's summary
    (the simulator's, the report's and the counters, one dict per label) and conditions,
    as cached."""
    import tcpsim
    if _is_host(spec):
        return run_host_spec(spec)
    if spec.get("variants"):
        variants = {v["label"]: {**_run_kwargs(v), "scenario": _scenario_of(spec, v.get("set"))}
                    for v in spec["variants"]}
        result = tcpsim.compare(spec["scenario"], variants, duration=spec.get("duration"))
        runs, figure = result.runs, result.figure
    else:
        one = tcpsim.run(_scenario_of(spec, spec.get("set")), duration=spec.get("duration"),
                         **_run_kwargs(spec))
        runs, figure = {spec.get("label") or one.profile: one}, one.figure
    summaries = {label: _summary(r) for label, r in runs.items()}
    keys = list(spec.get("table", []))
    keys += [k for k in _shown_counts(spec["figures"]) if k not in keys
             and any(summaries[lab].get(k) for lab in runs)]
    table = {label: {k: _metric(r, k, summaries[label]) for k in keys}
             for label, r in runs.items()}
    return {"figures": [figure(name).to_json() for name in spec["figures"]], "table": table,
            "summary": summaries,
            "conditions": {label: _conditions(spec, label, r) for label, r in runs.items()}}


def _is_host(spec: dict[str, Any]) -> bool:
    from tcpsim.host.scenario import is_host_file
    return is_host_file(spec["scenario"])


def _host_sides(spec: dict[str, Any]) -> list[tuple[str | None, dict[str, Any], Any]]:
    """(label, run options, sweep value) of every host run of a block, in order."""
    sides = spec.get("variants") or [{k: v for k, v in spec.items() if k in VARIANT_KEYS}]
    sweep = spec.get("sweep")
    out = []
    for side in sides:
        if "hz" in side:
            raise FigureSpecError(f"tcpsim-figure {spec['scenario']}: hz is not a host's option; "
                                  "set it in the host's classes")
        for value in (sweep["values"] if sweep else [None]):
            out.append((side.get("label"), side, value))
    return out


def run_host_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """run_spec of a host block: the host on every variant (and sweep value), its figures,
    table, summaries (host_summary and the host's nstat) and conditions."""
    from tcpsim.host.populations import expand
    from tcpsim.host.run import host_summary, load_host_with, run_host
    from tcpsim.report.host import host_figure, host_run, run_label
    from tcpsim.units import parse_duration
    dur = parse_duration(spec["duration"], "duration") if spec.get("duration") else None
    sweep = spec.get("sweep")
    runs: dict[str, Any] = {}
    summaries: dict[str, dict[str, Any]] = {}
    conditions: dict[str, dict[str, Any]] = {}
    points = []
    for label, side, value in _host_sides(spec):
        sets = tuple((side.get("set") or {}).items())
        if sweep:
            sets += ((sweep["field"], value),)
        pol = side.get("policy", [])
        host = load_host_with(spec["scenario"], profile=side.get("profile"),
                              policies=tuple([pol] if isinstance(pol, str) else pol),
                              sysctl=side.get("sysctl"), duration=dur, seed=side.get("seed"),
                              sets=sets)
        res = run_host(host, timing=side.get("timing"))
        base = label or run_label(res.as_json())
        full = f"{base} @ {value}" if sweep else base
        runs[full] = host_run(full, res)
        if sweep:
            points.append((base, value, runs[full]))
        summaries[full] = json.loads(json.dumps({**host_summary(res), **res.nstat}))
        timings = {f.scenario.timing or "exact" for f in expand(host, side.get("timing")).flows}
        conditions[full] = {
            "scenario": spec["scenario"], "profile": host.profile, "patches": list(host.policies),
            "timing": " / ".join(sorted(timings)), "timing_host": " / ".join(sorted(timings)),
            "duration_s": res.duration / 1e9, "seed": host.seed, "hz": None,
            "sysctl": {**host.sysctl, **(side.get("sysctl") or {}),
                       **({sweep["field"]: value} if sweep else {}),
                       **dict(side.get("set") or {})}}
    order = list(runs.values())
    figures = [host_figure(name, order, (sweep["field"], points) if sweep else None).to_json()
               for name in spec["figures"]]
    table = {}
    for label in runs:
        row = {}
        for key in spec.get("table", []):
            if key not in summaries[label]:
                raise FigureSpecError(f"tcpsim-figure table: {key}: not a host summary field "
                                      "(tcpsim/host/run.py host_summary) or nstat counter")
            row[key] = summaries[label][key]
        table[label] = row
    return {"figures": figures, "table": table, "summary": summaries, "conditions": conditions}


def _summary(run: Any) -> dict[str, Any]:
    """Everything a page may state about a run: the report's summary (the names and counts
    the figures use), the simulator's summary on top, and the counters."""
    from tcpsim.report.summary import summarize
    rr = run._as_report_run()
    out = {k: v for k, v in summarize(rr.trace, rr.meta).items()}
    out.update(run.summary)
    out.update(run.counters)
    return json.loads(json.dumps(out, default=str))


def _shown_counts(figures: list[str]) -> list[str]:
    """Summary fields whose counts the figures' legends and event strips print: the table
    under them shows the same numbers under the same names."""
    from tcpsim.report.summary import MARK_FIELDS
    if not {"memory", "events", "window", "sender"} & set(figures):
        return []
    return list(dict.fromkeys(MARK_FIELDS.values()))


def _conditions(spec: dict[str, Any], label: str, run: Any) -> dict[str, Any]:
    """What a reader needs to reproduce the run, read from the run itself."""
    from tcpsim.workload import describe_timing
    sc = run.meta.get("scenario") or {}
    patches = run.profile.split("+")[1:]
    return {"scenario": spec["scenario"], "profile": run.profile.split("+")[0],
            "patches": patches, "timing": describe_timing(sc) or "exact",
            "timing_host": sc.get("timing") or "exact",
            "duration_s": run.summary.get("duration_s"), "seed": sc.get("seed"),
            "hz": run.summary.get("hz"),
            "sysctl": {**(spec.get("sysctl") or {}), **_variant(spec, label).get("sysctl", {})}}


def _variant(spec: dict[str, Any], label: str) -> dict[str, Any]:
    return next((v for v in spec.get("variants") or [] if v["label"] == label), {})


def _metric(run: Any, key: str, summary: dict[str, Any] | None = None) -> Any:
    """A summary field, a counter, or one of the trace measures the tour uses:
    `acks_sent` (segments the receiver sent) and `ack_gap_ms` (their median spacing over the
    second half of the run)."""
    if key in ("acks_sent", "ack_gap_ms"):
        import numpy as np
        import pyarrow.compute as pc
        tr = run.trace
        sent = tr.filter(pc.and_(pc.equal(tr["sock"], "rcv"), pc.equal(tr["event"], "tx")))
        t_ms = sent["t_ns"].to_numpy() / 1e6
        if key == "acks_sent":
            return int(len(t_ms))
        late = t_ms[t_ms >= t_ms[-1] / 2] if len(t_ms) else t_ms
        return round(float(np.median(np.diff(late))), 2) if len(late) > 1 else None
    for values in (summary or {}, run.summary, run.counters):
        if key in values:
            return values[key]
    raise FigureSpecError(f"tcpsim-figure table: {key}: not a summary field, counter, acks_sent "
                          "or ack_gap_ms")


def cached_run(spec: dict[str, Any]) -> dict[str, Any]:
    from tcpsim.scenario import read_scenario_file
    _, source = read_scenario_file(spec["scenario"])
    h = hashlib.sha256(json.dumps(spec, sort_keys=True).encode() + Path(source).read_bytes()
                       + code_hash().encode() + RESULT_FORMAT.encode())
    for run in spec.get("variants") or [spec]:           # a user patch file is part of the run
        pol = run.get("policy", [])
        for p in [pol] if isinstance(pol, str) else pol:
            path = Path(p.rpartition(":")[0])
            if ":" in p and path.is_file():
                h.update(path.read_bytes())
    key = h.hexdigest()[:32]
    path = cache_dir() / f"{key}.json"
    _used.add(path.name)
    if path.is_file():
        return json.loads(path.read_text())
    out = run_spec(spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(path)
    return out


# -- what the page shows ---------------------------------------------------------------------------

def _cli_words(d: dict[str, Any], profile_flag: str) -> list[str]:
    words = [profile_flag, d["profile"]] if d.get("profile") else []
    pol = d.get("policy", [])
    for p in [pol] if isinstance(pol, str) else pol:
        words += ["--policy", p]
    sysctls = {**(d.get("sysctl") or {}),
               **{k[len("sysctl."):]: v for k, v in (d.get("set") or {}).items() if k.startswith("sysctl.")}}
    for k, v in sysctls.items():
        words += ["-s", f"{k}={' '.join(map(str, v)) if isinstance(v, list) else v}"]
    if "hz" in d:
        words += ["--hz", str(d["hz"])]
    return words


def _quote(word: str) -> str:
    return f'"{word}"' if re.search(r"[\s*]", word) else word


def cli_command(spec: dict[str, Any]) -> str | None:
    """The tcpsim command that shows the same runs, or None when a run changes scenario
    fields other than sysctls (the Python snippet does that)."""
    if _is_host(spec):
        return host_cli_command(spec)
    runs = spec.get("variants") or [spec]
    if any(not k.startswith("sysctl.") for r in runs for k in r.get("set") or {}) \
            or any("seed" in r for r in runs):
        return None
    dur = ["-d", spec["duration"]] if spec.get("duration") else []
    timings = {r.get("timing") for r in runs}
    if len(timings) > 1:                             # --timing is one for all runs
        return None
    dur += ["--timing", str(timings.pop())] if runs[0].get("timing") else []
    if not spec.get("variants"):
        words = ["tcpsim", "run", spec["scenario"], *_cli_words(spec, "-p"), *dur,
                 "--trace", "run.parquet", "&&", "tcpsim", "report", "run.parquet"]
    elif any("hz" in v for v in runs) and len({v.get("hz") for v in runs}) > 1:
        return None
    else:
        words = ["tcpsim", "compare", spec["scenario"], *dur]
        for i, v in enumerate(runs):
            words += _cli_words(v, "--profile" if i == 0 else "--vs")
    return " ".join(_quote(w) for w in words)


def host_cli_command(spec: dict[str, Any]) -> str | None:
    """The command that shows a host block's runs: `tcpsim run HOST --report`, `tcpsim
    compare HOST --profile A ... --vs B ...`, or (a sweep whose variants differ only in
    their patches) `tcpsim sweep HOST -x FIELD=... -x policy=...`."""
    runs = spec.get("variants") or [spec]
    dur = ["-d", spec["duration"]] if spec.get("duration") else []
    if len({str(r.get("timing")) for r in runs}) > 1 or any("seed" in r for r in runs):
        return None
    dur += ["--timing", str(runs[0]["timing"])] if runs[0].get("timing") else []

    def side(r: dict[str, Any], flag: str) -> list[str]:
        words = _cli_words(r, flag)
        for k, v in (r.get("set") or {}).items():
            if not k.startswith("sysctl."):
                words += ["--set", f"{k}={v}"]
        return words

    sweep = spec.get("sweep")
    if sweep:
        if len({r.get("profile") for r in runs}) > 1 or any(r.get("set") or r.get("sysctl")
                                                           for r in runs):
            return None
        words = ["tcpsim", "sweep", spec["scenario"], *dur]
        words += ["-p", runs[0]["profile"]] if runs[0].get("profile") else []
        words += ["-x", f"{sweep['field']}={','.join(map(str, sweep['values']))}"]
        pols = ["+".join([r["policy"]] if isinstance(r.get("policy"), str) else r.get("policy") or [])
                or "none" for r in runs]
        if len(runs) > 1:
            words += ["-x", f"policy={','.join(pols)}"]
        elif pols[0] != "none":
            words += ["--policy", pols[0]]
        return " ".join(_quote(w) for w in words)
    if not spec.get("variants"):
        words = ["tcpsim", "run", spec["scenario"], *side(spec, "-p"), *dur, "--report",
                 "host.html"]
        if any(w == "--set" for w in words):
            return None
    else:
        words = ["tcpsim", "compare", spec["scenario"], *dur]
        for i, v in enumerate(runs):
            words += side(v, "--profile" if i == 0 else "--vs")
    return " ".join(_quote(w) for w in words)


def host_python_snippet(spec: dict[str, Any]) -> str:
    """A host block through the Python modules the commands use."""
    sweep = spec.get("sweep")
    lines = ["from tcpsim.host.run import load_host_with, run_host",
             "from tcpsim.report.host import host_figure, host_run, run_label", "",
             "runs, points = [], []"]
    dur = f", duration={spec['duration']!r}" if spec.get("duration") else ""
    if dur:
        lines.insert(0, "from tcpsim.units import parse_duration")
        dur = f", duration=parse_duration({spec['duration']!r}, 'duration')"
    sides = spec.get("variants") or [{k: v for k, v in spec.items() if k in VARIANT_KEYS}]
    lines.append("for label, kw, sets in [")
    for s in sides:
        pol = s.get("policy", [])
        kw = {"profile": s.get("profile"), "policies": tuple([pol] if isinstance(pol, str) else pol)}
        kw.update({k: s[k] for k in ("sysctl", "seed") if k in s})
        lines.append(f"        ({s.get('label')!r}, {kw!r}, {tuple((s.get('set') or {}).items())!r}),")
    lines.append("]:")
    if sweep:
        lines += [f"    for value in {sweep['values']!r}:",
                  f"        host = load_host_with({spec['scenario']!r}, **kw{dur}, "
                  f"sets=sets + (({sweep['field']!r}, value),))",
                  "        r = run_host(host)",
                  "        base = label or run_label(r.as_json())",
                  "        run = host_run(f'{base} @ {value}', r)",
                  "        runs.append(run)", "        points.append((base, value, run))"]
        lines += [f"host_figure({n!r}, runs, ({sweep['field']!r}, points))" for n in spec["figures"]]
    else:
        lines += [f"    host = load_host_with({spec['scenario']!r}, **kw{dur}, sets=sets)",
                  "    r = run_host(host)",
                  "    runs.append(host_run(label or run_label(r.as_json()), r))"]
        lines += [f"host_figure({n!r}, runs)" for n in spec["figures"]]
    return "\n".join(lines)


def python_snippet(spec: dict[str, Any]) -> str:
    """The same experiment through the public API."""
    if _is_host(spec):
        return host_python_snippet(spec)
    lines = ["import tcpsim", ""]
    sc = repr(spec["scenario"])

    def scenario_expr(changes: dict[str, Any] | None, var: str) -> str:
        if not changes:
            return sc
        lines.append(f"{var} = tcpsim.scenario_dict({sc})")
        for key, value in changes.items():
            if key.startswith("sysctl."):
                lines.append(f"{var}.setdefault('sysctl', {{}})[{key[7:]!r}] = {value!r}")
            elif "." in key:
                table, name = key.split(".", 1)
                lines.append(f"{var}.setdefault({table!r}, {{}})[{name!r}] = {value!r}")
            else:
                lines.append(f"{var}[{key!r}] = {value!r}")
        return var

    dur = f", duration={spec['duration']!r}" if spec.get("duration") else ""
    if spec.get("variants"):
        items = []
        for i, v in enumerate(spec["variants"]):
            kw = dict(_run_kwargs(v))
            expr = scenario_expr(v.get("set"), f"sc{i}")
            if expr != sc:
                kw["scenario"] = expr
            body = ", ".join(f"{k!r}: {val if k == 'scenario' else repr(val)}" for k, val in kw.items())
            items.append(f"    {v['label']!r}: {{{body}}},")
        lines += [f"c = tcpsim.compare({sc}, {{", *items, f"}}{dur})"]
        lines += [f"c.figure({name!r})" for name in spec["figures"]]
    else:
        expr = scenario_expr(spec.get("set"), "sc")
        kw = "".join(f", {k}={v!r}" for k, v in _run_kwargs(spec).items())
        lines += [f"r = tcpsim.run({expr}{kw}{dur})", "r.summary"]
        lines += [f"r.figure({name!r})" for name in spec["figures"]]
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "—" if v is None else str(v).lower()
    if isinstance(v, int):
        return f"{v:,}".replace(",", "\u202f")
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v)) or "—"


def _field(key: str) -> tuple[str, str]:
    """(label, unit) of a summary field, a counter or a trace measure."""
    from tcpsim.report.host import summary_field
    from tcpsim.report.summary import FIELDS_BY_KEY
    f = FIELDS_BY_KEY.get(key)
    if f is not None:
        return f.label, f.unit
    host = summary_field(key)
    if host is not None:
        return host
    return {"acks_sent": ("ACKs sent", "count"), "ack_gap_ms": ("median ACK gap, ms", "")}.get(
        key, (key, "count"))


def table_html(table: dict[str, dict[str, Any]]) -> str:
    """The numbers under a figure: one row per field, its name as the figures and `tcpsim
    run` print it and its key, one column per run; cells carry the value for the docs test."""
    labels = list(table)
    keys = list(next(iter(table.values()), {}))
    if not keys:
        return ""
    head = "".join(f"<th>{html.escape(lab)}</th>" for lab in labels)
    rows = []
    for k in keys:
        name, _ = _field(k)
        cells = "".join(f'<td data-label="{html.escape(lab)}" data-key="{html.escape(k)}" '
                        f'data-value="{html.escape(json.dumps(table[lab][k]))}">'
                        f"{_fmt(table[lab][k])}</td>" for lab in labels)
        shown = html.escape(name) if name == k else f"{html.escape(name)} <code>{html.escape(k)}</code>"
        rows.append(f"<tr><td>{shown}</td>{cells}</tr>")
    return (f'<table class="tcpsim-numbers"><tr><th>this page\'s run</th>{head}</tr>'
            f'{"".join(rows)}</table>')


def _seconds(s: Any) -> str:
    if s is None:
        return "?"
    return f"{s / 60:g} min" if s >= 120 else f"{s:g} s"


def conditions_html(conditions: dict[str, dict[str, Any]]) -> str:
    """One line per run: scenario, profile and patches, timing, duration, seed (and HZ,
    sysctls when set) -- read from the run, so the page cannot state other conditions."""
    items = []
    for label, c in conditions.items():
        parts = [f"profile <code>{html.escape(c['profile'])}</code>",
                 "patch " + ", ".join(f"<code>{html.escape(p)}</code>" for p in c["patches"])
                 if c["patches"] else "no patch",
                 f"timing <code>{html.escape(c['timing_host'])}</code>"
                 + (" (applications on time)" if c["timing_host"] == "exact" else
                    f" (applications woken with {html.escape(c['timing_host'])}'s measured latencies)"),
                 f"{_seconds(c['duration_s'])} simulated", f"seed {c['seed']}"]
        if c.get("hz"):
            parts.append(f"HZ {c['hz']}")
        for k, v in (c.get("sysctl") or {}).items():
            parts.append(f"<code>{html.escape(k)}={html.escape(' '.join(map(str, v)) if isinstance(v, list) else str(v))}</code>")
        items.append(f'<li data-label="{html.escape(label)}" data-profile="{html.escape(c["profile"])}" '
                     f'data-patches="{html.escape(",".join(c["patches"]))}" '
                     f'data-timing="{html.escape(c["timing_host"])}" '
                     f'data-duration="{c["duration_s"]}" data-seed="{c["seed"]}">'
                     f"<b>{html.escape(label)}</b>: {'; '.join(parts)}</li>")
    scen = next(iter(conditions.values()))["scenario"]
    return (f'<div class="tcpsim-conditions"><p>Conditions of the runs below (scenario '
            f'<code>{html.escape(scen)}</code>):</p><ul>{"".join(items)}</ul></div>')


def _side(text: str, summaries: dict[str, dict[str, Any]], where: str) -> tuple[float, str]:
    """One side of a check: a number, or `[NUMBER *] LABEL: key` -> (value, words)."""
    text = text.strip()
    factor = 1.0
    m = re.match(r"^([-\d.]+)\s*\*\s*(.+)$", text)
    if m:
        factor, text = float(m.group(1)), m.group(2).strip()
    if ":" not in text:
        try:
            return factor * float(text), text
        except ValueError:
            raise FigureSpecError(f"{where}: check {text!r}: expected a number or LABEL: key") from None
    label, key = (x.strip() for x in text.rsplit(":", 1))
    value = _lookup(summaries, label, key, where)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise FigureSpecError(f"{where}: check: {label}: {key} is {value!r}, not a number")
    words = f"{html.escape(label)}: {html.escape(_field(key)[0])} ({_fmt(value)})"
    return factor * value, (f"{m.group(1)} × " if m else "") + words


def _lookup(summaries: dict[str, dict[str, Any]], label: str, key: str, where: str) -> Any:
    if label not in summaries:
        raise FigureSpecError(f"{where}: {{{{{label}: {key}}}}}: no run labelled {label!r} on "
                              f"this page; runs: {', '.join(summaries)}")
    if key not in summaries[label]:
        raise FigureSpecError(f"{where}: {{{{{label}: {key}}}}}: not a summary field or "
                              "counter of the run")
    return summaries[label][key]


def evaluate_check(check: str, summaries: dict[str, dict[str, Any]],
                   where: str) -> tuple[bool, str]:
    """(holds, the check in words with the run's values)."""
    m = re.match(r"^(.*?)\s*(==|!=|<=|>=|<|>)\s*(.*)$", check)
    if not m:
        raise FigureSpecError(f"{where}: check {check!r}: needs one of {' '.join(CHECK_OPS)}")
    (a, wa), op, (b, wb) = _side(m.group(1), summaries, where), m.group(2), \
        _side(m.group(3), summaries, where)
    holds = {"==": a == b, "!=": a != b, "<=": a <= b, ">=": a >= b, "<": a < b, ">": a > b}[op]
    return holds, f"{wa} {CHECK_OPS[op]} {wb}"


def checks_html(spec: dict[str, Any], summaries: dict[str, dict[str, Any]], where: str) -> str:
    items = []
    for check in spec.get("checks", []):
        holds, words = evaluate_check(check, summaries, where)
        if not holds:
            raise FigureSpecError(f"{where}: the page claims {check!r} but its run shows "
                                  f"{words}")
        items.append(f'<li data-check="{html.escape(check)}">{words} ✓</li>')
    if not items:
        return ""
    return ('<div class="tcpsim-checks"><p>What the text says of these runs, checked against '
            f'them when this site was built:</p><ul>{"".join(items)}</ul></div>')


def value_html(summaries: dict[str, dict[str, Any]], label: str, key: str, exact: bool,
               where: str) -> str:
    """A number the prose states, from the run (the docs test holds it against a rerun)."""
    v = _lookup(summaries, label, key, where)
    _, unit = _field(key)
    if exact or unit not in ("bytes", "bit/s", "s"):
        text = _fmt(v)
    else:
        from tcpsim.report.tables import fmt_value
        text = html.escape(fmt_value(v, unit))
    return (f'<span class="tcpsim-value" data-label="{html.escape(label)}" '
            f'data-key="{html.escape(key)}" data-value="{html.escape(json.dumps(v))}" '
            f'title="{html.escape(label)}: {html.escape(key)} = {html.escape(str(v))}">{text}</span>')


def figure_html(fig_json: str, div_id: str) -> str:
    fig = json.loads(fig_json)
    height = (fig.get("layout") or {}).get("height") or 420
    data = fig_json.replace("</", "<\\/")
    return (f'<div class="tcpsim-figure" id="{div_id}" style="height:{height}px"></div>\n'
            f'<script>document.addEventListener("DOMContentLoaded",function(){{'
            f'var f={data};Plotly.newPlot("{div_id}",f.data,f.layout,'
            f'{{responsive:true,displaylogo:false}});}});</script>')


def block_html(spec: dict[str, Any], result: dict[str, Any], page_id: str, n: int,
               where: str = "page") -> str:
    out = [conditions_html(result["conditions"])]
    out += [figure_html(f, f"tcpsim-fig-{page_id}-{n}-{i}") for i, f in enumerate(result["figures"])]
    out.append(table_html(result["table"]))
    out.append(checks_html(spec, result["summary"], where))
    cmd = cli_command(spec)
    dur = f" ({spec['duration']} simulated)" if spec.get("duration") else ""
    out.append(f'<p class="tcpsim-reproduce">Made by running the experiment when this site was '
               f'built{dur}. Reproduce it:</p>')
    if cmd:
        out.append(f'<pre><code class="language-sh">{html.escape(cmd)}</code></pre>')
    out.append(f'<pre><code class="language-python">{html.escape(python_snippet(spec))}</code></pre>')
    return "\n".join(out)


# -- generated pages ----------------------------------------------------------------------------------

def _docgen() -> Any:
    """scripts/docgen.py as a module (its render() is the profiles page)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("tcpsim_script_docgen", ROOT / "scripts" / "docgen.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def profile_pages() -> dict[str, str]:
    """{"profiles/NAME.md": markdown} for every profile and patch, cut from docgen's page."""
    text = _docgen().render()
    pages: dict[str, str] = {}
    for part in re.split(r"(?m)^(?=#{2,3} `)", text)[1:]:
        m = re.match(r"#{2,3} `([^`]+)`(.*)", part)
        if not m:
            continue
        name, rest = m.group(1), part.split("\n", 1)[1] if "\n" in part else ""
        rest = rest.split("\n## Patches", 1)[0]
        rest = re.sub(r"\]\((?!https?:|\.\./|#)([\w-]+\.md)", r"](../\1", rest)   # one folder down
        pages[f"profiles/{name}.md"] = (f"# `{name}`{m.group(2)}\n\nGenerated from the classes in "
                                        f"`models/` (see [all profiles](../profiles.md)).\n"
                                        f"{rest}\n")
    return pages


def glossary_page() -> str:
    """One name per quantity: every summary field (the name `tcpsim run`, `compare`, the
    reports and the figures print, and its key in `--json`, `Run.summary` and sweeps), which
    chart marks count which field, and every trace column -- from tcpsim/report/summary.py,
    tcpsim/engine/counts.py and tcpsim/trace/schema.py."""
    import inspect

    from tcpsim.engine import counts
    from tcpsim.report.summary import MARK_FIELDS, REVERSE_FIELDS, SUMMARY_FIELDS, mark_label
    from tcpsim.report import style
    from tcpsim.trace.schema import COLUMNS

    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    out = ["# Glossary: one name per quantity", "",
           "Generated from `tcpsim/report/summary.py`, `tcpsim/engine/counts.py` and "
           "`tcpsim/trace/schema.py`. The *name* is what `tcpsim run`, `tcpsim compare`, the "
           "reports, the figures' legends and event strips and these pages print; the *key* "
           "is the same quantity in `--json`, `Run.summary`, sweep tables and the tables "
           "under this site's figures.", "",
           "## Summary fields", "", "| name | key | unit | what it counts |", "|---|---|---|---|"]
    for f in SUMMARY_FIELDS + REVERSE_FIELDS:
        out.append(f"| {cell(f.label)} | `{f.key}` | {f.unit} | {cell(f.hint) or '—'} |")
    out += ["", "## Counts that could mean more than one thing", "",
            "Each has one name and one definition (`tcpsim/engine/counts.py`):", "",
            "```text", (inspect.getdoc(counts) or "").split("\n\n", 1)[1].strip(), "```", "",
            "## What the figures mark", "",
            "A legend entry or event-strip row reads *name (count)*; where a summary field "
            "counts the same events, the name is that field's and the count is its value.", "",
            "| mark | name in figures | summary key |", "|---|---|---|"]
    for kind in style.MARK_STYLE:
        if kind in ("queued", "coalesced", "ofo"):
            continue
        key = MARK_FIELDS.get(kind)
        out.append(f"| {kind} | {mark_label(kind)} | {f'`{key}`' if key else '— (trace rows of this event)'} |")
    out += ["", "Kinds with more than 60 marks are drawn as a density strip (one tick per time "
            "bin, darker where more events fell) so they never cover a curve.", "",
            "## Trace columns", "",
            "One row per event at one socket; kernel field names, so a row can be held against "
            "`ss -tmi`, bpftrace or `nstat`. -1 (or \"\") means unknown, never zero.", "",
            "| column | type | meaning |", "|---|---|---|"]
    out += [f"| `{name}` | {kind} | {cell(meaning)} |" for name, kind, meaning in COLUMNS]
    return "\n".join(out) + "\n"


def cli_page() -> str:
    """The command-line reference from the typer commands."""
    import click
    import typer.main

    from tcpsim.cli import app
    group = typer.main.get_command(app)
    out = ["# Command-line reference", "",
           "Generated from the `tcpsim` command's definitions (`tcpsim/cli.py`); "
           "`tcpsim COMMAND --help` prints the same.", ""]

    def command(path: str, cmd: click.Command) -> None:
        if isinstance(cmd, click.Group):
            if cmd.callback is not None and cmd.help:
                command_doc(path, cmd)
            for name, sub in cmd.commands.items():
                command(f"{path} {name}", sub)
        else:
            command_doc(path, cmd)

    def command_doc(path: str, cmd: click.Command) -> None:
        args = " ".join(p.name.upper() + ("..." if getattr(p, "nargs", 1) == -1 else "")
                        for p in cmd.params if p.param_type_name == "argument")
        out.extend([f"## `{path}`", "", (cmd.help or "").strip(), "", "```sh",
                    f"{path} [OPTIONS] {args}".rstrip(), "```", ""])
        rows = []
        for p in cmd.params:
            names = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts]) \
                if p.param_type_name == "option" else f"`{p.name.upper()}`"
            default = p.default if p.param_type_name == "option" else None
            shown = "" if default in (None, [], (), False) else f" (default: `{default}`)"
            help_text = (getattr(p, "help", None) or "").replace("|", "\\|")
            rows.append(f"| {names} | {help_text}{shown} |")
        if rows:
            out.extend(["| argument / option | |", "|---|---|", *rows, ""])

    for name, cmd in group.commands.items():
        command(f"tcpsim {name}", cmd)
    return "\n".join(out).rstrip() + "\n"


def notebook_outputs(path: Path) -> list[list[dict[str, Any]]]:
    """The outputs of every code cell of the notebook, executed with nbclient (cached like
    the figures, under the hash of the notebook and the simulator's code)."""
    import nbformat
    key = hashlib.sha256(path.read_bytes() + code_hash().encode()).hexdigest()[:32]
    cached = cache_dir() / f"notebook-{key}.json"
    _used.add(cached.name)
    if cached.is_file():
        return json.loads(cached.read_text())
    import nbclient
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [[dict(o) for o in c.outputs] for c in nb.cells if c.cell_type == "code"]
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(outputs))
    return outputs


def notebook_page(path: Path, page_id: str) -> tuple[str, list[str]]:
    """The notebook as a page: its Markdown, its code, and what the code printed and drew
    (plotly figures as on the tour pages). Returns the Markdown and the figure HTML that
    replaces each placeholder."""
    import nbformat
    nb = nbformat.read(path, as_version=4)
    outputs = iter(notebook_outputs(path))
    md: list[str] = [f"*Generated from [{path.name}]({path.name}), run when this site was built.*", ""]
    blocks: list[str] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            md += [cell.source, ""]
            continue
        md += ["```python", cell.source, "```", ""]
        for out in next(outputs):
            data = out.get("data") or {}
            if "application/vnd.plotly.v1+json" in data:
                fig = json.dumps(data["application/vnd.plotly.v1+json"])
                blocks.append(figure_html(fig, f"tcpsim-fig-{page_id}-{len(blocks)}"))
                md += ["", PLACEHOLDER.format(n=len(blocks) - 1), ""]
            elif "text/html" in data:
                blocks.append(f'<div class="tcpsim-output">{data["text/html"]}</div>')
                md += ["", PLACEHOLDER.format(n=len(blocks) - 1), ""]
            elif "text/plain" in data or "text" in out:
                md += ["```text", str(data.get("text/plain", out.get("text", ""))).rstrip(), "```", ""]
    return "\n".join(md), blocks


NOTEBOOK = ROOT / "docs" / "getting-started.ipynb"
NOTEBOOK_PAGE = "getting-started-notebook.md"


# -- MkDocs hooks -------------------------------------------------------------------------------------

def on_config(config: Any) -> Any:
    """Fill the "Kernel profiles" section of the navigation with the generated pages."""
    pages = list(profile_pages())            # release order, then the patches
    for section in config["nav"] or []:
        if isinstance(section, dict) and "Kernel profiles" in section:
            entries = section["Kernel profiles"]
            entries.extend({p.split("/")[1][:-3]: p} for p in pages)
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File
    import plotly
    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    files.append(File.generated(config, PLOTLY_JS, abs_src_path=str(js)))
    for uri, text in profile_pages().items():
        files.append(File.generated(config, uri, content=text))
    files.append(File.generated(config, "cli.md", content=cli_page()))
    files.append(File.generated(config, "glossary.md", content=glossary_page()))
    files.append(File.generated(config, NOTEBOOK_PAGE, content="# The API in a notebook\n"))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Run each tcpsim-figure block and leave a placeholder for its HTML."""
    where = page.file.src_uri
    page_id = re.sub(r"[^a-z0-9]+", "-", where.lower()).strip("-")
    blocks: list[str] = []
    if where == NOTEBOOK_PAGE:
        body, blocks = notebook_page(NOTEBOOK, page_id)
        _pending[where] = blocks
        return markdown + "\n" + body

    summaries: dict[str, dict[str, Any]] = {}

    def replace(m: re.Match) -> str:
        spec = parse_spec(m.group(1), where)
        try:
            result = cached_run(spec)
        except (ValueError, TypeError) as exc:      # the API's errors name the argument
            raise FigureSpecError(f"{where}: tcpsim-figure: {exc}") from None
        for label, summary in result["summary"].items():
            if label in summaries and summaries[label] != summary:
                summaries[label] = {}                 # two different runs under one label
            else:
                summaries[label] = summary
        blocks.append(block_html(spec, result, page_id, len(blocks), where))
        return "\n\n" + PLACEHOLDER.format(n=len(blocks) - 1) + "\n\n"

    markdown = FIGURE_BLOCK.sub(replace, markdown)

    def value(m: re.Match) -> str:
        label = m.group(1).strip()
        if label in summaries and not summaries[label]:
            raise FigureSpecError(f"{where}: {m.group(0)}: two runs on this page are labelled "
                                  f"{label!r}; label them apart")
        return value_html(summaries, label, m.group(2), bool(m.group(3)), where)

    if summaries:
        markdown = VALUE.sub(value, markdown)
    if blocks:
        _pending[where] = blocks
    return markdown


def on_page_content(content: str, page: Any, config: Any, files: Any) -> str:
    blocks = _pending.pop(page.file.src_uri, [])
    for n, block in enumerate(blocks):
        content = content.replace(PLACEHOLDER.format(n=n), block)
    return content


def on_post_build(config: Any) -> None:
    """Forget cached results no page asked for (older code, edited blocks)."""
    if not _used:
        return
    for stale in cache_dir().glob("*.json"):
        if stale.name not in _used:
            stale.unlink()
