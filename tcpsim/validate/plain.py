"""Plain-scenario validation: the capture's own scenario run as a user would run it, over N
seeds, against every capture of it (`tcpsim validate FIXTURE --plain --runs N`).

A replay (tcpsim/validate/replay.py) drives the model with the real applications' tick times;
a plain run takes only the capture's *description*: its scenario, the receiver sysctls read
back on the real receiver, the link as configured (a `tc tbf` bottleneck as a token-bucket
link), the capturing kernel's profile and CONFIG_HZ, and the application timing the scenario
implies (its own `latency` fields, else the scenario defaults; `--host` names the `[timing]
host` preset). Its outcome is a distribution (issue 14): each seed is one draw of the
model's, and the captures are draws of the kernel's -- every capture of the fixture (the
manifest's `run_summaries`), not only the one shipped as its file.

Both sides are summarized the same way (tcpsim.validate.summary.run_summary), and compared:

* **outcome classes** as counts -- "stall: model 9/10, kernel 3/3" -- and the verdict: for
  each class, the value most captures show (a strict majority; a tie is not judged) must be
  the strict majority of the model's runs. This is what fails the fixture (exit code 1).
* **figures** (first zero window, stall, sk_rmem_alloc at the end, PruneCalled,
  TCPRcvCoalesce, zero-window ACKs, retransmissions, beyond-window drops, bytes received;
  only those the captures have): the model's median, quartiles and range, each capture's
  place in the model's distribution (its mid-rank quantile), the kernel's median over the
  model's (k/m, for issue 14's "within 2x / 30 %"), and "in range" when every
  capture lies within the model's range, else "outside". A figure fails the verdict only
  when asked (`--require-in-range FIGURE`).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from tcpsim.engine.result import sender_counters
from tcpsim.validate.outcomes import LABELS
from tcpsim.validate.run import collect_or_say, fixture_field, replay_hz
from tcpsim.validate.summary import SUMMARY_OUTCOMES, run_summary

DEFAULT_RUNS = 10


class PlainError(ValueError):
    """A fixture that cannot be validated as a plain scenario, or a bad option; one line."""


@dataclass(frozen=True)
class Figure:
    """One compared figure: its key, a label for the table, and how to read it from a run
    summary (None: the run has no such value, e.g. no zero window; a summary without the
    figure's field at all does not have the figure)."""

    key: str
    label: str
    field: str
    counter: bool = False

    def has(self, s: dict[str, Any]) -> bool:
        return self.field in (s.get("counters") or {}) if self.counter else self.field in s

    def get(self, s: dict[str, Any]) -> float | int | None:
        return (s.get("counters") or {}).get(self.field) if self.counter else s.get(self.field)


FIGURES = (
    Figure("first_zero_window_s", "first zero window (s)", "first_zero_window_s"),
    Figure("stall_at_s", "stall at (s)", "stall_at_s"),
    Figure("sk_rmem_alloc_end", "sk_rmem_alloc at the end", "final_sk_rmem_alloc"),
    Figure("prune_called", "TcpExtPruneCalled", "TcpExtPruneCalled", counter=True),
    Figure("rcv_coalesce", "TcpExtTCPRcvCoalesce", "TcpExtTCPRcvCoalesce", counter=True),
    Figure("zero_window_acks", "zero-window ACKs", "zero_window_acks"),
    Figure("retransmissions", "retransmissions", "sender_retrans_segs"),
    Figure("beyond_window", "TcpExtBeyondWindow", "TcpExtBeyondWindow", counter=True),
    Figure("bytes_received", "bytes received", "bytes_received"),
)
FIGURE_KEYS = tuple(f.key for f in FIGURES)
# the outcome class a run "has" (tcpsim.validate.outcomes labels)
POSITIVE = {"memory": "unbounded", **{c: words[0] for c, words in LABELS.items()}}
CLASS_WORDS = {"memory": "unbounded memory", "zero_window": "zero window", "drops": "drops",
               "stall": "stall"}


@dataclass
class PlainSetup:
    """The plain scenario of one capture and where each of its parts came from."""

    scenario: Any
    profile: str
    hz: int | None
    host: str | None                  # the [timing] host the scenario runs with
    notes: list[str] = field(default_factory=list)


@dataclass
class PlainValidation:
    """One fixture validated as a plain scenario."""

    path: Path
    name: str
    setup: PlainSetup
    seeds: list[int]
    kernel: list[dict[str, Any]]
    model: list[dict[str, Any]]
    outcomes: dict[str, dict[str, Any]]
    figures: dict[str, dict[str, Any]]
    required: tuple[str, ...] = ()
    capture_starts: dict[str, dict[str, Any]] = field(default_factory=dict)   # tcpsim.runs
    sender_counters: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per sender counter, the captures' values in the model's spread (shown only)."""

    @property
    def passed(self) -> bool:
        ok = all(o["verdict"] != "fail" for o in self.outcomes.values())
        return ok and all(self.figures[k]["marker"] == "in range"
                          for k in self.required if k in self.figures)

    def as_dict(self) -> dict[str, Any]:
        return {"fixture": self.name, "file": str(self.path), "passed": self.passed,
                "profile": self.setup.profile, "hz": self.setup.hz, "host": self.setup.host,
                "notes": self.setup.notes, "seeds": self.seeds, "required": list(self.required),
                "outcomes": self.outcomes, "figures": self.figures,
                "capture_starts": self.capture_starts,
                "sender_counters": self.sender_counters,
                "kernel_runs": self.kernel, "model_runs": self.model}


# -- the plain scenario ------------------------------------------------------------------------

def _tbf_link(meta: dict[str, Any], path: Path) -> dict[str, int] | None:
    """The capture's `tc tbf` bottleneck (burst and limit in bytes), if it had one: the
    qdisc the capture read back (`summary.link_qdisc`), else the fixture's settings."""
    q = (meta.get("summary") or {}).get("link_qdisc") or {}
    if q.get("kind") == "tbf" and q.get("burst") and q.get("limit"):
        return {"burst": int(q["burst"]), "limit": int(q["limit"])}
    burst, limit = (fixture_field(meta, path, k) for k in ("tbf_burst", "tbf_limit"))
    return {"burst": int(burst), "limit": int(limit)} if burst and limit else None


def plain_document(meta: dict[str, Any], path: Path, profile: str,
                   policies: tuple[str, ...] = ()) -> tuple[dict[str, Any], list[str]]:
    """The capture's scenario as a scenario document: its metadata's scenario, the receiver
    sysctls read back on the real receiver (those `profile` models), and its token bucket."""
    from tcpsim.catalog import get_profile
    from tcpsim.validate.replay import replay_sysctls

    if str(meta.get("source", "")) == "tcpsim":
        raise PlainError(f"{path}: a simulated trace (source 'tcpsim'): validate holds the model "
                         "to real-kernel captures; compare simulated runs with tcpsim compare")
    raw = meta.get("scenario")
    if not isinstance(raw, dict) or not raw:
        raise PlainError(f"{path}: trace metadata has no 'scenario': --plain runs the capture's "
                         "own scenario, which only captures (tcpsim capture) record")
    doc = json.loads(json.dumps({k: v for k, v in raw.items() if k != "profile"}))
    notes = []
    sysctls, skipped = replay_sysctls(meta.get("sysctls") or {},
                                      get_profile(profile, policies).known_sysctls())
    doc["sysctl"] = {**(doc.get("sysctl") or {}), **sysctls}
    if skipped:
        notes.append(f"sysctls not modelled on {profile}: {', '.join(sorted(skipped))}")
    tbf = _tbf_link(meta, path)
    if tbf:
        link = {k: v for k, v in (doc.get("link") or {}).items() if k != "queue_limit"}
        doc["link"] = {**link, "kind": "tbf", **tbf}
        notes.append(f"link: tc tbf as captured (burst {tbf['burst']} B, limit {tbf['limit']} B)")
    return doc, notes


def fixture_host(meta: dict[str, Any], path: Path) -> tuple[str | None, str]:
    """The host preset (tcpsim.app_latency.HOSTS) the fixture's captures were made under,
    if its metadata or the manifest names one (`host`), and where it says so."""
    host = fixture_field(meta, path, "host")
    where = "trace metadata" if (meta.get("fixture") or {}).get("host") else "manifest.json"
    return (str(host), where) if host else (None, "")


def plain_scenario(path: Path, meta: dict[str, Any], profile: str | None = None,
                   policies: tuple[str, ...] = (), host: str | None = None,
                   sets: tuple[str, ...] = (), hz: int | None = None) -> PlainSetup:
    """The plain scenario of a capture (module docstring). `host`: --host (a host preset or
    "exact"), else the preset the fixture's captures were made under, if it names one; it is
    the run's `[timing] host`, so applications without a `latency` of their own get that
    preset's calibrated default (tcpsim.app_latency.DEFAULT_TIMING); `sets`: FIELD=VALUE
    settings on top (compare --set's)."""
    from tcpsim.app_latency import check_timing
    from tcpsim.scenario import ScenarioError, apply_settings, scenario_from_dict
    from tcpsim.validate.replay import matching_profile

    notes: list[str] = []
    if profile is None:
        profile, note = matching_profile(str(meta.get("profile", "")))
        notes += [note] if note else []
    doc, more = plain_document(meta, path, profile, policies)
    notes += more
    try:
        apply_settings(doc, sets)
    except ScenarioError as exc:
        raise PlainError(str(exc)) from None
    where = f"{path}: plain scenario" + (f" (--set {' '.join(sets)})" if sets else "")
    try:
        sc = scenario_from_dict(doc)
    except ScenarioError as exc:
        raise PlainError(f"{where}: {exc}") from None
    if host is not None:
        try:
            host = check_timing(host)
        except ValueError as exc:
            raise PlainError(f"--host: {exc}") from None
        src = "--host"
    else:
        host, src = fixture_host(meta, path)
    if host is not None:       # the run's [timing] host: the calibrated default of each app
        try:
            sc = scenario_from_dict({**doc, "timing": {"host": host}})
        except ScenarioError as exc:
            raise PlainError(f"{where}, [timing] host = {host!r} ({src}): {exc}") from None
    notes.append(timing_note(sc, host, src))
    hz, hz_src = replay_hz(meta, path, hz)
    notes.append(f"HZ {hz} ({hz_src})" if hz else f"{hz_src}: tcpsim's default clock")
    return PlainSetup(sc, profile, hz, host, notes)


def timing_note(sc: Any, host: str | None, src: str) -> str:
    """What timing the plain scenario's applications run with."""
    parts = []
    for role in ("writer", "reader"):
        a = getattr(sc, role)
        if a is None:
            continue
        lat = a.latency_table or (f"{a.latency_ns / 1e6:g} ms" if a.latency_ns else "")
        parts.append(f"{role} {a.kind} " + (f"latency {lat}" if lat else "exact" if not a.timed
                                           else "call cost/copy rate only"))
    where = f"; host preset {host} ({src})" if host else ""
    return "timing: " + ", ".join(parts) + where


def kernel_summaries(meta: dict[str, Any], path: Path) -> tuple[list[dict[str, Any]], str]:
    """Every capture's run summary: the manifest's `run_summaries`, else the one of the
    trace itself (a capture that is not a fixture)."""
    runs = fixture_field(meta, path, "run_summaries")
    if runs:
        return list(runs), f"{len(runs)} captures (manifest.json run_summaries)"
    from tcpsim.validate.trace import load, view
    summary = meta.get("summary") or {}
    v = view(*load(path))
    end = int(float(summary.get("duration_s", 0)) * 1e9) or v.end_ns
    return [run_summary(v, meta, end)], "1 capture (this trace)"


# -- the comparison ----------------------------------------------------------------------------

Summaries = list[dict[str, Any]]


def outcome_counts(kernel: Summaries, model: Summaries) -> dict[str, dict[str, Any]]:
    """Per outcome class: how many kernel captures and model runs have it, and the verdict
    ("ok", "fail", or "not judged" when the captures are split evenly)."""
    out = {}
    for c in SUMMARY_OUTCOMES:
        ks = [x for x in ((s.get("outcomes") or {}).get(c) for s in kernel) if _known(x)]
        ms = [x for x in ((s.get("outcomes") or {}).get(c) for s in model) if _known(x)]
        k, m = sum(x == POSITIVE[c] for x in ks), sum(x == POSITIVE[c] for x in ms)
        if not ks or 2 * k == len(ks):
            want, verdict = None, "not judged"
        else:
            want = 2 * k > len(ks)
            got = 2 * m > len(ms) if want else 2 * m < len(ms)
            verdict = "ok" if got else "fail"
        out[c] = {"kernel": k, "kernel_n": len(ks), "model": m, "model_n": len(ms),
                  "kernel_majority": want, "verdict": verdict}
    return out


def _known(label: str | None) -> bool:
    return label is not None and label != "unknown"


def quantile_of(x: float, values: list[float]) -> float:
    """x's mid-rank place in `values` (0: below all, 1: above all, 0.5: the median)."""
    below = sum(v < x for v in values)
    equal = sum(v == x for v in values)
    return (below + 0.5 * equal) / len(values)


def figure_spread(kernel: list[float], model: list[float]) -> dict[str, Any]:
    """The model's spread of one figure, where each kernel capture sits in it, and the
    kernel's median over the model's (`ratio`; None when either is missing or zero)."""
    out: dict[str, Any] = {"kernel": kernel, "model_n": len(model)}
    if model:
        q = (statistics.quantiles(model, n=4, method="inclusive") if len(model) > 1
             else [model[0]] * 3)
        out.update({"median": statistics.median(model), "q1": q[0], "q3": q[2],
                    "min": min(model), "max": max(model)})
        out["kernel_quantiles"] = [round(quantile_of(k, model), 3) for k in kernel]
        inside = [out["min"] <= k <= out["max"] for k in kernel]
    else:
        out["kernel_quantiles"] = [None] * len(kernel)
        inside = [False] * len(kernel)
    out["kernel_median"] = statistics.median(kernel) if kernel else None
    out["ratio"] = (round(out["kernel_median"] / out["median"], 3)
                    if kernel and model and out["median"] else None)
    out["in_range"] = sum(inside)
    out["marker"] = "-" if not kernel else "in range" if all(inside) else "outside"
    return out


def compare_figures(kernel: Summaries, model: Summaries) -> dict[str, dict[str, Any]]:
    """Every figure the captures have (FIGURES), as figure_spread()."""
    out = {}
    for f in FIGURES:
        if not any(f.has(s) for s in kernel):
            continue
        ks = [f.get(s) for s in kernel if f.has(s)]
        ms = [f.get(s) for s in model]
        out[f.key] = {"label": f.label,
                      **figure_spread([x for x in ks if x is not None],
                                      [x for x in ms if x is not None]),
                      "kernel_n": len(ks), "model_runs": len(ms)}
    return out


# -- one fixture, many -------------------------------------------------------------------------

def validate_plain(path: str | Path, runs: int = DEFAULT_RUNS, profile: str | None = None,
                   policies: tuple[str, ...] = (), host: str | None = None,
                   sets: tuple[str, ...] = (), hz: int | None = None, engine: str | None = None,
                   seed: int | None = None, required: tuple[str, ...] = ()) -> PlainValidation:
    """Run the capture's plain scenario over `runs` seeds (tcpsim.runs.run_seeds: the
    scenario's seed, +1, ...) and compare with its captures."""
    from tcpsim.catalog import ProfileError
    from tcpsim.engines import EngineError
    from tcpsim.runner import RunOptions
    from tcpsim.runs import capture_starts, run_seeds
    from tcpsim.scenario import ScenarioError
    from tcpsim.validate.trace import TraceFileError, load_meta

    p = Path(path)
    try:
        meta = load_meta(p)
        setup = plain_scenario(p, meta, profile, policies, host, sets, hz)
        kernel, source = kernel_summaries(meta, p)
        opts = RunOptions(profile=setup.profile, policies=policies, hz=setup.hz, seed=seed,
                          engine=engine)
        done = run_seeds(setup.scenario, opts, runs, measure=_model_summary)
    except (TraceFileError, ScenarioError, ProfileError, EngineError) as exc:
        raise PlainError(f"{p}: {exc}" if str(p) not in str(exc) else str(exc)) from None
    setup.notes.insert(0, f"kernel: {source}")
    model = [r.measured for r in done]
    if len(model) > 1 and all(m == model[0] for m in model):
        setup.notes.append(f"model: all {len(model)} seeds gave the same run (nothing in this "
                           "scenario draws from the seed)")
    name = str((meta.get("fixture") or {}).get("name") or setup.scenario.name or p.stem)
    seeds = [r.seed for r in done]
    return PlainValidation(p, name, setup, seeds, kernel, model,
                           outcome_counts(kernel, model), compare_figures(kernel, model),
                           tuple(required), capture_starts(setup.scenario.as_dict(), seeds),
                           compare_sender_counters(sender_kernel_counters(kernel, meta), model))


def _model_summary(v: Any, run: Any, end_ns: int) -> dict[str, Any]:
    """A model run's summary, as a capture's (run_seeds' measure), with the sender's
    counters (`sender_counters`; the manifest's run summaries of captures do not keep
    them, see sender_kernel_counters)."""
    return {**run_summary(v, {"counters": run.counters, "summary": run.summary}, end_ns),
            "sender_counters": dict(run.sender_counters)}


def sender_kernel_counters(kernel: Summaries, meta: dict[str, Any]) -> list[dict[str, int]]:
    """The captures' sender counters: those of the kernel run summaries that list them, else
    the fixture file's own capture's (its metadata's summary.sender.counters; the manifest's
    run summaries of the older captures do not keep them)."""
    have = [s["sender_counters"] for s in kernel if s.get("sender_counters")]
    if have:
        return have
    own = sender_counters(meta)
    return [own] if own else []


def compare_sender_counters(kernel: list[dict[str, int]],
                            model: Summaries) -> dict[str, dict[str, Any]]:
    """Every sender counter the captures or the model count (shown, never scored), as
    figure_spread(): the kernel's values against the model's seeds. Empty when the
    captures kept no sender counters."""
    if not kernel:
        return {}
    ms = [s.get("sender_counters") or {} for s in model]
    names = sorted({n for c in kernel for n, v in c.items() if v}
                   | {n for c in ms for n, v in c.items() if v})
    return {n: figure_spread([int(c.get(n, 0)) for c in kernel],
                             [int(c.get(n, 0)) for c in ms]) for n in names}


def mixed_options(plain: bool, replay_only: dict[str, Any], plain_only: dict[str, Any]) -> str:
    """The error of a command line that mixes the replay's options with --plain's ("" if
    none): `replay_only`/`plain_only` map each option to its value (None/empty: not given)."""
    given = [k for k, v in (replay_only if plain else plain_only).items()
             if v is not None and v != [] and v != () and v is not False]
    if not given:
        return ""
    if plain:
        return (f"{given[0]}: an option of the replay, not of --plain (a plain run has no kernel "
                "timeline to cut or overlay, nor thresholds); leave it out")
    return f"{given[0]}: an option of plain validation; add --plain (or leave it out)"


def check_options(runs: int, required: Iterable[str]) -> None:
    """--runs and --require-in-range, checked before anything runs."""
    if runs < 1:
        raise PlainError(f"--runs {runs}: give a number of runs of at least 1")
    for r in required:
        if r not in FIGURE_KEYS:
            raise PlainError(f"--require-in-range {r}: not a figure; one of "
                             f"{', '.join(FIGURE_KEYS)}")


def run_plain(paths: Iterable[str | Path], runs: int = DEFAULT_RUNS, as_json: bool = False,
              echo: Callable[[str], Any] = print, error: Callable[[str], Any] | None = None,
              **kw: Any) -> int:
    """`tcpsim validate --plain`: validate each fixture, print the reports (or JSON); 0 when
    every verdict holds, 1 when one fails, 2 when a fixture cannot be validated (one error
    line each; the others are still validated). `kw`: validate_plain()'s options."""
    from tcpsim.core.clock import parse_hz
    error = error or echo
    try:
        check_options(runs, kw.get("required", ()))
        if kw.get("hz") is not None:
            kw["hz"] = parse_hz(kw["hz"], "--hz")
    except ValueError as exc:                          # PlainError, or parse_hz's
        error(f"validate: {exc}")
        return 2
    files = collect_or_say(paths, error)
    if not files:
        return 2
    results, errors = [], []
    for f in files:
        try:
            results.append(validate_plain(f, runs, **kw))
        except PlainError as exc:
            errors.append(f"validate: {exc}")
            continue
        if not as_json:
            echo("\n".join(report(results[-1])))
            echo("")
    if as_json:
        echo(json.dumps({"plain": [r.as_dict() for r in results], "errors": errors},
                        indent=1, default=str))
    for e in errors:
        error(e)
    if not as_json and results:
        passed = sum(r.passed for r in results)
        echo(f"{passed}/{len(results)} fixtures pass as plain scenarios"
             + (f", {len(errors)} not validated" if errors else ""))
    if errors:
        return 2
    return 0 if all(r.passed for r in results) else 1


# -- the report --------------------------------------------------------------------------------

def _num(x: float | int | None) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not x.is_integer():
        return f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"
    return str(int(x))


def report(r: PlainValidation) -> list[str]:
    """The human report of one fixture."""
    from tcpsim.runs import format_capture_starts
    n = len(r.seeds)
    runs = f"{n} run{'s' if n != 1 else ''}, seeds {r.seeds[0]}..{r.seeds[-1]}"
    lines = [f"{r.name}: {'PASS' if r.passed else 'FAIL'}  (plain scenario under "
             f"{r.setup.profile}, {runs})"]
    lines += [f"  {note}" for note in r.setup.notes]
    if r.capture_starts:
        lines.append(f"  {format_capture_starts(r.capture_starts, n)}")
    lines.append(f"  {'outcome':<18} {'kernel':>8} {'model':>8}")
    for c, o in r.outcomes.items():
        lines.append(f"  {CLASS_WORDS[c]:<18} {o['kernel']:>4}/{o['kernel_n']:<3} "
                     f"{o['model']:>4}/{o['model_n']:<3} {o['verdict']}")
    lines.append(f"  {'figure':<24} {'model median [q1, q3]':>28} {'range':>24} {'k/m':>6}  "
                 "kernel captures (quantile in the model)")
    for key, f in r.figures.items():
        if f["model_n"]:
            mid = f"{_num(f['median'])} [{_num(f['q1'])}, {_num(f['q3'])}]"
            rng = f"{_num(f['min'])} .. {_num(f['max'])}"
            if f["model_n"] != f["model_runs"]:
                rng += f" ({f['model_n']}/{f['model_runs']})"
        else:
            mid, rng = "none", ""
        caps = ", ".join(f"{_num(k)} ({'-' if q is None else f'{q:.2f}'})"
                         for k, q in zip(f["kernel"], f["kernel_quantiles"])) or "none"
        if len(f["kernel"]) != f["kernel_n"]:
            caps += f" ({f['kernel_n'] - len(f['kernel'])} of {f['kernel_n']} without)"
        marker = f["marker"] if f["marker"] != "outside" else \
            f"outside ({f['in_range']}/{len(f['kernel'])} in range)"
        req = " [required]" if key in r.required else ""
        ratio = "-" if f["ratio"] is None else f"{f['ratio']:.2f}"
        lines.append(f"  {f['label']:<24} {mid:>28} {rng:>24} {ratio:>6}  {caps}  {marker}{req}")
    if r.sender_counters:
        lines.append(f"  {'sender counter (shown)':<30} {'model median [q1, q3]':>22} "
                     f"{'range':>20} {'k/m':>6}  kernel")
        for name, f in r.sender_counters.items():
            mid = f"{_num(f['median'])} [{_num(f['q1'])}, {_num(f['q3'])}]"
            rng = f"{_num(f['min'])} .. {_num(f['max'])}"
            ratio = "-" if f["ratio"] is None else f"{f['ratio']:.2f}"
            lines.append(f"  {name:<30} {mid:>22} {rng:>20} {ratio:>6}  "
                         f"{', '.join(_num(k) for k in f['kernel'])}  {f['marker']}")
    return lines


# -- the generated block of docs/validation.md -------------------------------------------------

PLAIN_BEGIN = "<!-- BEGIN GENERATED: validate --plain -->"
PLAIN_END = "<!-- END GENERATED: validate --plain -->"


def _cell(o: dict[str, Any]) -> str:
    cell = f"{o['kernel']}/{o['kernel_n']} → {o['model']}/{o['model_n']}"
    return cell + (" **fail**" if o["verdict"] == "fail" else "")


def markdown_tables(variants: list[tuple[str, list[PlainValidation]]]) -> list[str]:
    """The outcome table and the figure table of validated fixtures, per timing variant."""
    head = ["| fixture | timing | " + " | ".join(CLASS_WORDS[c] for c in SUMMARY_OUTCOMES)
            + " | verdict |", "|---|---|" + "---|" * (len(SUMMARY_OUTCOMES) + 1)]
    figs = ["| fixture | timing | figure | kernel captures | model median [q1, q3] | model range "
            "| k/m | captures in range |", "|---|---|---|---|---|---|---|---|"]
    for label, results in variants:
        for r in results:
            head.append(f"| {r.name} | {label} | "
                        + " | ".join(_cell(r.outcomes[c]) for c in SUMMARY_OUTCOMES)
                        + f" | {'pass' if r.passed else '**fail**'} |")
            for f in r.figures.values():
                if not any(f["kernel"]) and not (f["model_n"] and (f["min"] or f["max"])):
                    continue                  # none, or 0 in every capture and every run
                mid = (f"{_num(f['median'])} [{_num(f['q1'])}, {_num(f['q3'])}]"
                       if f["model_n"] else "none")
                rng = f"{_num(f['min'])} – {_num(f['max'])}" if f["model_n"] else ""
                if f["model_n"] and f["model_n"] != f["model_runs"]:
                    rng += f" ({f['model_n']} of {f['model_runs']} runs)"
                ratio = "" if f["ratio"] is None else f"{f['ratio']:.2f}"
                inside = f"{f['in_range']}/{len(f['kernel'])}" if f["kernel"] else "-"
                figs.append(f"| {r.name} | {label} | {f['label']} | "
                            f"{', '.join(_num(k) for k in f['kernel']) or 'none'} | {mid} | {rng} "
                            f"| {ratio} | {inside} |")
    return head + [""] + figs


def docs_block(variants: list[tuple[str, list[PlainValidation]]], command: str) -> str:
    """The generated part of docs/validation.md for plain validation."""
    parts = [PLAIN_BEGIN, "", f"Regenerate: `{command}` (no root needed).", "",
             "Outcome classes: captures with it / all → model runs with it / all; **fail** where "
             "the captures' majority is not the model's. Figures: the model's spread over its "
             "runs, k/m = the captures' median over the model's; a figure that is 0 (or "
             "absent) in every capture and every run is left out.", ""]
    parts += markdown_tables(variants)
    parts += ["", "<details><summary>Full reports</summary>", "", "```"]
    for label, results in variants:
        for r in results:
            parts += [f"[{label}]", *report(r), ""]
    parts += ["```", "", "</details>", "", PLAIN_END]
    return "\n".join(parts)
