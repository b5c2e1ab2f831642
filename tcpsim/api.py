"""tcpsim as a library: run scenarios from Python and get tables and figures back.

    import tcpsim
    r = tcpsim.run("seed-unbounded-growth", profile="linux-6.1", duration="20s")
    r.summary["peak_sk_rcvbuf"]          # the numbers `tcpsim run` prints
    df = r.trace.to_pandas()            # one row per event, kernel field names
    r.figure("memory")                  # a plotly figure (renders inline in Jupyter)
    r.report("run.html")                # the page `tcpsim report` writes

    c = tcpsim.compare("seed-unbounded-growth", ["linux-6.1", "linux-6.18"], duration="20s")
    t = tcpsim.sweep("seed-never-reads", {"hz": [250, 1000]}, duration="2s")

`tcpsim run`, `compare`, `report` and `profiles` call these (through `run_with`, which
takes the options the command has already parsed), and `sweep` runs tcpsim.sweeps as
`tcpsim sweep` does: the same seed gives the same numbers as `tcpsim run`. A bad argument raises
`ValueError` (or `TypeError` for a value of the wrong kind) whose message starts with the
argument's name and says what to write instead.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, Union

if TYPE_CHECKING:  # heavy imports stay out of `import tcpsim`
    import plotly.graph_objects as go
    import pyarrow as pa

    from tcpsim.report.runs import Run as _ReportRun
    from tcpsim.runner import RunOptions
    from tcpsim.scenario import Scenario

__all__ = ["run", "compare", "sweep", "search", "load_trace", "profiles", "patches", "scenarios",
           "scenario_dict", "Run", "Comparison", "SweepTable", "ENGINES", "FIGURES",
           "use_static_images"]

ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any], "Scenario"]
DurationLike = Union[str, int, float, None]
PolicyLike = Union[str, Sequence[str]]

ENGINES: tuple[str, ...] = ("python", "native")
"""Engines `run(engine=...)` accepts (None means the default: "native" where the extension
is built, else "python"; the results are identical)."""

FIGURES: tuple[str, ...] = ("memory", "events", "recvq", "window", "delivery", "rates",
                            "sender", "segments", "packets")
"""Names `Run.figure()` and `Comparison.figure()` accept, in a report's reading order."""


# -- arguments ---------------------------------------------------------------------------------

def _scenario(scenario: ScenarioLike, timing: str | None = None) -> "Scenario":
    """A validated Scenario from a file path, a built-in experiment's name, a dict shaped
    like a scenario file, or a Scenario; `timing`: its `[timing] host` (a host preset or
    "exact"), for a file, a name or a dict."""
    from tcpsim.scenario import Scenario, ScenarioError, load_scenario, scenario_from_dict, set_timing
    if isinstance(scenario, Scenario):
        if timing is not None:
            raise ScenarioError("timing: a Scenario's applications already have their timing; "
                                "pass the file, the experiment's name or a dict with it")
        return scenario
    if isinstance(scenario, Mapping):
        raw = dict(scenario)
        if timing is not None:
            raw = {**raw, "timing": {**dict(raw.get("timing") or {})}}
            set_timing(raw, timing, "timing")
        try:
            return scenario_from_dict(raw)
        except ScenarioError as exc:
            raise ScenarioError(f"scenario: {exc}") from None
    if isinstance(scenario, (str, os.PathLike)):
        if timing is not None:
            set_timing({}, timing, "timing")    # a bad value names `timing`, not the file
        try:
            return load_scenario(scenario, timing)
        except ScenarioError as exc:
            raise ScenarioError(f"scenario: {exc}") from None
    raise TypeError(f"scenario: expected a file path, a built-in experiment's name or a dict, "
                    f"got {type(scenario).__name__}")


def _duration(value: DurationLike, where: str = "duration") -> int | None:
    """Seconds (a number) or a string such as "60s" / "250ms" -> ns; None stays None."""
    from tcpsim.scenario import ScenarioError, parse_duration
    if value is None:
        return None
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise TypeError(f'{where}: expected seconds or a string such as "60s", '
                        f"got {type(value).__name__}")
    ns = parse_duration(value, where)
    if ns <= 0:
        raise ScenarioError(f"{where}: must be longer than zero, got {value!r}")
    return ns


def _policies(policy: PolicyLike | None) -> tuple[str, ...]:
    if policy is None:
        return ()
    if isinstance(policy, str):
        return (policy,) if policy and policy != "none" else ()
    if not isinstance(policy, Sequence) or not all(isinstance(p, str) for p in policy):
        raise TypeError('policy: expected a patch name ("shrink-window"), "FILE.py:Class", '
                        "or a list of them")
    return tuple(policy)


def _sysctls(sysctl: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if sysctl is None:
        return None
    if not isinstance(sysctl, Mapping) or not all(isinstance(k, str) for k in sysctl):
        raise TypeError('sysctl: expected a dict such as {"net.ipv4.tcp_shrink_window": 1}')
    return dict(sysctl)


def _seed(seed: int | None) -> int | None:
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise TypeError(f"seed: expected an integer, got {type(seed).__name__}")
    return seed


def _engine(engine: str | None) -> str | None:
    if engine is None:
        return None
    if engine not in ENGINES:
        raise ValueError(f"engine: unknown engine {engine!r}; available: {', '.join(ENGINES)} "
                         "(None picks the default)")
    from tcpsim.engines import EngineError, check_engine
    try:
        return check_engine(engine)
    except EngineError as exc:
        raise ValueError(f"engine: {exc}") from None


def _options(profile: str | None, policy: PolicyLike | None, sysctl: Mapping[str, Any] | None,
             duration: DurationLike, seed: int | None, hz: int | None) -> "RunOptions":
    from tcpsim.runner import RunOptions
    if profile is not None and not isinstance(profile, str):
        raise TypeError(f'profile: expected a profile name such as "linux-6.1", '
                        f"got {type(profile).__name__}")
    from tcpsim.scenario import check_hz
    return RunOptions(profile=profile, policies=_policies(policy), sysctl=_sysctls(sysctl),
                      duration=_duration(duration), seed=_seed(seed),
                      hz=None if hz is None else check_hz(hz, "hz"), sysctl_origin="")


def _user_error(exc: Exception) -> Exception:
    """Profile errors name an option the way the command line spells it (``--policy``) or
    none at all; from Python the argument is ``profile`` or ``policy``. (Sysctl errors
    already start with ``sysctl``.)"""
    from tcpsim.catalog import ProfileError
    msg = str(exc)
    if not isinstance(exc, ProfileError):
        return exc
    if msg.startswith("--policy"):
        return ProfileError("policy" + msg[len("--policy"):])
    if msg.startswith("unknown profile"):
        return ProfileError(f"profile: {msg}")
    if msg.startswith("unknown patch"):
        return ProfileError(f"policy: {msg}")
    return exc


# -- a run ---------------------------------------------------------------------------------------

@dataclass(repr=False)
class Run:
    """One simulated (or loaded) run: its numbers, its trace, its figures.

    Attributes:
        scenario: the scenario's name.
        profile: the kernel profile, with patches (``linux-6.1+shrink-window``).
        summary: the numbers ``tcpsim run`` prints (peaks, zero windows, drops, goodput, ...).
        counters: the receiver's ``nstat`` counters (``TcpExtTCPRcvCoalesce``, ...), zeros
            included; the sender's are ``sender_counters``.
        ss: the final ``ss -tmi``-style line of each socket.
        meta: everything the trace file's metadata holds (scenario as a dict, sysctls, ...).
    """

    scenario: str
    profile: str
    summary: dict[str, Any]
    counters: dict[str, int]
    ss: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    _table: "pa.Table | None" = None
    _report_run: "_ReportRun | None" = None
    trace_path: Path | None = None
    """The Parquet file holding the trace, when it was written to one."""

    @property
    def trace(self) -> "pa.Table":
        """One row per event, kernel field names (tcpsim/trace/schema.py), as an Arrow
        table: ``.to_pandas()`` makes a DataFrame, ``polars.from_arrow()`` reads it."""
        if self._table is None and self.trace_path is not None:
            import pyarrow.parquet as pq
            self._table = pq.read_table(self.trace_path)
        if self._table is None:
            raise ValueError("trace: this run kept no trace (run it with trace=True or a path)")
        return self._table

    @property
    def sender_counters(self) -> dict[str, int]:
        """The sending socket's ``nstat`` counters (``TcpOutSegs``, ``TcpExtTCPDelivered``,
        ...): a simulated run's, or a capture's sender's, both kept in ``meta`` under
        ``summary.sender.counters``; empty when the run has none."""
        from tcpsim.engine.result import sender_counters
        return sender_counters(self.meta)

    @property
    def label(self) -> str:
        """How figures and tables name this run (its profile)."""
        return self.profile

    def figure(self, name: str) -> "go.Figure":
        """A plotly figure of the run by name (see `FIGURES`): ``memory`` (skmem_r, skmem_rb,
        Recv-Q), ``window``, ``delivery``, ``events``, ... -- those of ``tcpsim report``."""
        return _figure(name, [self._as_report_run()])

    def report(self, path: str | os.PathLike[str]) -> Path:
        """Write the interactive HTML report (what ``tcpsim report`` writes); returns the path."""
        from tcpsim.report.html import report_html, write_page
        return write_page(Path(path), report_html(self._as_report_run()))

    def save_trace(self, path: str | os.PathLike[str]) -> Path:
        """Write the trace as Parquet with its metadata (what ``tcpsim run --trace`` writes)."""
        import pyarrow.parquet as pq
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(self.trace, out, compression="zstd")
        return out

    def _as_report_run(self) -> "_ReportRun":
        if self._report_run is None:
            from tcpsim.report.runs import Run as ReportRun
            from tcpsim.report.trace import Trace
            self._report_run = ReportRun(self.label, Trace.from_arrow(self.trace), self.meta)
        return self._report_run

    def __repr__(self) -> str:
        s = self.summary
        parts = [f"{k}={s[k]!r}" for k in ("duration_s", "peak_sk_rmem_alloc", "peak_sk_rcvbuf",
                                           "zero_windows_sent", "drops", "goodput_mbps",
                                           "error") if s.get(k) not in (None, "")]
        rows = (f", {self._table.num_rows} trace rows" if self._table is not None
                else f", trace in {self.trace_path}" if self.trace_path is not None else "")
        return f"<tcpsim.Run {self.scenario} under {self.profile}: {', '.join(parts)}{rows}>"

    def _repr_html_(self) -> str:
        from tcpsim.report.summary import FIELDS_BY_KEY
        rows = [{"metric": f.label, "key": k, "unit": f.unit, "values": {self.label: self.summary[k]}}
                for k, f in FIELDS_BY_KEY.items() if self.summary.get(k) not in (None, "")]
        return _rows_html(rows, [self.label], f"tcpsim.Run {self.scenario}")


def _figure(name: str, runs: list["_ReportRun"]) -> "go.Figure":
    from tcpsim.report import figures as f
    makers: dict[str, Callable[[], Any]] = {
        "memory": lambda: f.memory_figure(runs), "events": lambda: f.timeline_figure(runs),
        "recvq": lambda: f.recvq_figure(runs), "window": lambda: f.window_figure(runs),
        "delivery": lambda: f.delivery_figure(runs), "rates": lambda: f.rate_figure(runs),
        "sender": lambda: f.sender_figure(runs), "segments": lambda: f.segments_figure(runs),
        "packets": lambda: f.packet_figure(runs[0]) if len(runs) == 1 else None,
    }
    if name not in makers:
        raise ValueError(f"figure: unknown figure {name!r}; choose one of {', '.join(FIGURES)}")
    fig = makers[name]()
    if fig is None:
        raise ValueError(f"figure: no {name!r} figure for this run (the per-packet view needs "
                         f"one run of at most {f.PACKET_VIEW_MAX} ingress packets)")
    return fig


def _with_metadata(table: "pa.Table", meta: Mapping[str, Any]) -> "pa.Table":
    return table.replace_schema_metadata({k: json.dumps(v, sort_keys=True) for k, v in meta.items()})


def run(scenario: ScenarioLike, *, profile: str | None = None, policy: PolicyLike = (),
        sysctl: Mapping[str, Any] | None = None, duration: DurationLike = None,
        seed: int | None = None, engine: str | None = None, hz: int | None = None,
        trace: bool | str | os.PathLike[str] = True, skip: bool = True,
        progress: bool = False, timing: str | None = None) -> Run:
    """Run one scenario and return its `Run` (summary, counters, trace, figures).

    Args:
        scenario: a scenario file's path, a built-in experiment's name
            (``"seed-unbounded-growth"``; ``scenarios()`` lists them) or a dict shaped like
            a scenario file (``scenario_dict()`` gives one to edit).
        profile: the kernel profile, overriding the scenario's (``profiles()`` lists them).
        policy: a patch name or ``"FILE.py:Class"``, or a list of them, applied after the
            scenario's own.
        sysctl: receiver sysctls on top of the scenario's, e.g.
            ``{"net.ipv4.tcp_shrink_window": 1}``.
        duration: simulated time: seconds as a number, or ``"60s"``, ``"250ms"``, ``"35min"``.
        seed: the random seed (same seed, same results).
        engine: ``"native"`` (Rust) or ``"python"`` (the reference); ``None``: native
            where it is built (a ``FILE.py:Class`` patch runs on the Python engine).
        hz: the kernel's CONFIG_HZ (100, 250, 300, 1000), overriding the scenario's.
        trace: keep the per-event trace in memory (``Run.trace``, figures, reports);
            ``False`` keeps none; a file path streams it to Parquet, as ``tcpsim run
            --trace`` does (for long runs: memory stays flat, ``Run.trace`` reads the file).
        skip: time skipping (``False``: tick by tick, as ``--no-skip``; identical results).
        progress: a progress bar on stderr.
        timing: the applications' timing, overriding the scenario's ``[timing] host``: a
            host preset whose calibrated wakeup latencies apps without a ``latency`` get
            (``"dev-vm-loaded"``, the default; ``"dev-vm-quiet"``, ...) or ``"exact"``
            (docs/app-latency.md).

    Raises:
        ValueError: a bad value; the message starts with the argument's name
            (``ScenarioError``, ``ProfileError`` and ``SysctlError`` are ValueErrors).
        TypeError: an argument of the wrong kind.
    """
    from tcpsim.core.sysctl import SysctlError
    from tcpsim.catalog import ProfileError
    chosen = _engine(engine)
    sc = _scenario(scenario, timing)
    opts = _options(profile, policy, sysctl, duration, seed, hz)
    opts.engine = chosen
    path = Path(trace) if isinstance(trace, (str, os.PathLike)) else None
    opts.trace, opts.memory_trace = path, path is None and bool(trace)
    opts.skip, opts.progress = bool(skip), bool(progress)
    try:
        return run_with(sc, opts)
    except (ProfileError, SysctlError) as exc:
        raise _user_error(exc) from None


def run_with(scenario: "Scenario", opts: "RunOptions") -> Run:
    """The run behind `run`, for a caller that has turned its arguments into
    `tcpsim.runner.RunOptions` itself -- the ``tcpsim`` command, whose options name
    themselves in its error messages (``--sysctl``, ``--duration``). Errors are raised as
    tcpsim.runner raises them. The trace is kept in memory if ``opts.memory_trace``,
    streamed to ``opts.trace`` if set (``Run.trace`` then reads the file), else not kept."""
    from tcpsim.runner import run as run_scenario
    result, rec = run_scenario(scenario, opts)
    meta = result.metadata()
    table = _with_metadata(rec.table(), meta) if rec is not None else None
    return Run(result.scenario, result.profile, result.summary, result.counters, result.ss,
               meta, table, trace_path=Path(opts.trace) if opts.trace else None)


class TraceFileError(ValueError):
    """`load_trace` was given a file that is not a readable tcpsim trace; ``reason`` says
    why (the message is ``path: FILE: not a readable tcpsim trace (REASON)``)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"path: {path}: not a readable tcpsim trace ({reason})")
        self.path, self.reason = path, reason


def load_trace(path: str | os.PathLike[str]) -> Run:
    """A trace file written by ``tcpsim run --trace``, ``tcpsim capture`` or
    ``tcpsim import`` (or `Run.save_trace`), as a `Run`.

    Traces from captures and imports carry no simulator summary; theirs is computed from
    the trace, as ``tcpsim report`` does. Only the columns figures and reports use are read
    now; ``Run.trace`` reads the whole table when first asked.

    Raises:
        ValueError: no such file; `TraceFileError` (a ValueError): not a tcpsim trace.
    """
    from tcpsim.report.runs import Run as ReportRun
    from tcpsim.report.summary import summarize
    from tcpsim.report.trace import load_trace as read_trace
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path: {p}: no such trace file")
    try:
        trace, meta = read_trace(p)
    except (OSError, ValueError) as exc:   # pyarrow's errors are these: the same user error
        from tcpsim.trace.unreadable import reason
        raise TraceFileError(p, reason(p, exc)) from None
    label = str(meta.get("profile") or p.stem)
    report_run = ReportRun(label, trace, meta)
    summary = dict(meta.get("summary") or {}) or summarize(trace, meta)
    name = str((meta.get("scenario") or {}).get("name") or p.stem)
    return Run(name, label, summary, dict(meta.get("counters") or {}), {}, meta, None,
               report_run, trace_path=p)


def recorded_run(label: str, columns: Mapping[str, Sequence[Any]],
                 meta: Mapping[str, Any]) -> Run:
    """A `Run` of a trace already read as ``{column: values}`` with its metadata (what
    ``tcpsim compare --trace`` shows beside simulated runs); it holds no Arrow table."""
    from tcpsim.report.runs import make_run
    from tcpsim.report.summary import summarize
    report_run = make_run(label, columns, meta)
    summary = dict(meta.get("summary") or {}) or summarize(report_run.trace, report_run.meta)
    name = str((meta.get("scenario") or {}).get("name") or label)
    return Run(name, label, summary, dict(meta.get("counters") or {}), {}, dict(meta), None,
               report_run)


# -- several runs --------------------------------------------------------------------------------

@dataclass(repr=False)
class Comparison:
    """Several runs of one workload, by label: side-by-side table, overlaid figures, report."""

    runs: dict[str, Run]
    _rows_cache: list[dict[str, Any]] | None = None
    _report_cache: "list[_ReportRun] | None" = None
    _summaries_cache: dict[str, dict[str, Any]] | None = None

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The comparison's rows as ``tcpsim compare`` prints them (`format_table` /
        `table_json` in tcpsim.report): section, metric, unit, values per run, deltas."""
        if self._rows_cache is None:
            from tcpsim.report.compare import comparison_rows
            self._rows_cache = comparison_rows(self._report_runs(), self._summaries())
        return self._rows_cache

    @property
    def table(self) -> "pa.Table":
        """The numbers ``tcpsim compare`` prints (summary fields and counters), one row per
        metric and one column per run, as an Arrow table of numbers (``int64`` where every
        value is whole, else ``float64``; null where a run has no value), with ``section``,
        ``metric`` (the key), ``label`` and ``unit`` columns. Text rows (profiles, sysctls
        and other config differences, drop reasons, errors) are in `text`."""
        import pyarrow as pa
        rows = [r for r in self.rows if r["unit"] != "text" and r["section"] != "config"]
        labels = list(self.runs)
        cols: dict[str, Any] = {"section": [r["section"] for r in rows],
                                "metric": [r["key"] for r in rows],
                                "label": [r["metric"] for r in rows],
                                "unit": [r["unit"] for r in rows]}
        for lab in labels:
            values = [_number(r["values"].get(lab)) for r in rows]
            whole = all(v is None or isinstance(v, int) or float(v).is_integer() for v in values)
            cols[lab] = pa.array([None if v is None else (int(v) if whole else float(v))
                                  for v in values], pa.int64() if whole else pa.float64())
        return pa.table(cols)

    @property
    def text(self) -> dict[str, dict[str, str]]:
        """The rows of words, ``{metric: {label: value}}``: config differences (profile,
        sysctls, ...), drop reasons, errors."""
        return {r["key"]: {lab: _cell(v) for lab, v in r["values"].items()}
                for r in self.rows if r["unit"] == "text" or r["section"] == "config"}

    def figure(self, name: str) -> "go.Figure":
        """A figure with every run overlaid (or as small multiples); names as `Run.figure`."""
        return _figure(name, self._report_runs())

    def report(self, path: str | os.PathLike[str]) -> Path:
        """Write the comparison page (what ``tcpsim compare`` writes); returns the path."""
        from tcpsim.report.compare import comparison_html
        from tcpsim.report.html import write_page
        return write_page(Path(path), comparison_html(self._report_runs(), self.rows,
                                                      self._summaries()))

    def _report_runs(self) -> list["_ReportRun"]:
        if self._report_cache is None:
            from tcpsim.report.compare import check_labels
            from tcpsim.report.runs import Run as ReportRun
            check_labels(list(self.runs))
            self._report_cache = [ReportRun(label, r._as_report_run().trace, r.meta)
                                  for label, r in self.runs.items()]
        return self._report_cache

    def _summaries(self) -> dict[str, dict[str, Any]]:
        """Each run's summary as the report computes it (from the trace and metadata)."""
        if self._summaries_cache is None:
            from tcpsim.report.summary import summarize
            self._summaries_cache = {r.label: summarize(r.trace, r.meta)
                                     for r in self._report_runs()}
        return self._summaries_cache

    def __repr__(self) -> str:
        from tcpsim.report.tables import format_table
        head = f"<tcpsim.Comparison of {len(self.runs)} runs: {', '.join(self.runs)}>"
        return head + "\n" + format_table(self.rows)

    def _repr_html_(self) -> str:
        return _rows_html(self.rows, list(self.runs), "tcpsim.Comparison")


def _rows_html(rows: Sequence[Mapping[str, Any]], labels: Sequence[str], title: str) -> str:
    """A notebook table of summary rows: label (key) then one value per run, with units."""
    import html as _html
    from tcpsim.report.tables import fmt_value
    head = "".join(f"<th>{_html.escape(lab)}</th>" for lab in labels)
    body = "".join(
        f"<tr><td>{_html.escape(str(r['metric']))} <code>{_html.escape(str(r['key']))}</code></td>"
        + "".join(f"<td style='text-align:right'>"
                  f"{_html.escape(fmt_value(r['values'].get(lab), str(r.get('unit', ''))))}</td>"
                  for lab in labels) + "</tr>" for r in rows)
    return (f"<table><caption style='text-align:left'><b>{_html.escape(title)}</b></caption>"
            f"<thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>")


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _number(value: Any) -> int | float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None if value in (None, "") else int(value)
    if isinstance(value, (int, float)):
        return value
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _variant_label(kw: Mapping[str, Any]) -> str:
    pol = _policies(kw.get("policy"))
    sysctl = [f"{k}={v}" for k, v in (kw.get("sysctl") or {}).items()]
    return " + ".join([str(kw.get("profile") or "scenario's profile"), *pol, *sysctl])


_VARIANT_KEYS = frozenset({"scenario", "profile", "policy", "sysctl", "duration", "seed", "hz",
                           "timing"})


def _variants(variants: Any) -> dict[str, dict[str, Any]]:
    """{label: run() keyword arguments} from a list of profile names / dicts, or a dict
    {label: profile name or dict}."""
    items: list[tuple[str | None, Any]]
    if isinstance(variants, Mapping):
        items = list(variants.items())
    elif isinstance(variants, Sequence) and not isinstance(variants, str):
        items = [(None, v) for v in variants]
    else:
        raise TypeError('variants: expected a list such as ["linux-6.1", {"profile": "linux-6.1", '
                        '"policy": "shrink-window"}] or a dict {label: variant}')
    out: dict[str, dict[str, Any]] = {}
    for label, v in items:
        kw = {"profile": v} if isinstance(v, str) else v
        if not isinstance(kw, Mapping):
            raise TypeError(f"variants: {v!r}: expected a profile name or a dict of run() arguments")
        bad = sorted(set(kw) - _VARIANT_KEYS)
        if bad:
            raise ValueError(f"variants: unknown key {', '.join(bad)}; use "
                             + ", ".join(sorted(_VARIANT_KEYS)))
        label = label if label is not None else _variant_label(kw)
        if label in out:
            raise ValueError(f"variants: two variants are labelled {label!r}; pass a dict "
                             "{label: variant} to name them")
        out[str(label)] = dict(kw)
    if len(out) < 2:
        raise ValueError("variants: compare needs at least two variants")
    return out


def compare(scenario: ScenarioLike, variants: Sequence[str | Mapping[str, Any]] | Mapping[str, Any],
            *, duration: DurationLike = None, seed: int | None = None, hz: int | None = None,
            engine: str | None = None, timing: str | None = None) -> Comparison:
    """Run one workload under several profiles, patches or sysctls; like ``tcpsim compare``.

    Args:
        scenario: as for `run` (a variant may bring its own with a ``scenario`` key).
        variants: a list of profile names or dicts of `run` arguments (``profile``,
            ``policy``, ``sysctl``, ``scenario``, ``duration``, ``seed``, ``hz``, ``timing``),
            labelled from their contents; or a dict ``{label: profile name or dict}``.
        duration: for every variant (a variant's own value wins), as for `run`.
        seed: for every variant (a variant's own value wins).
        hz: for every variant (a variant's own value wins).
        engine: as for `run`.
        timing: the applications' timing for every variant (a variant's own value wins), as
            for `run`: a host preset or ``"exact"``.

    Example:
        ```python
        tcpsim.compare("seed-unbounded-growth",
                       {"6.1": "linux-6.1",
                        "6.1 + shrink": {"profile": "linux-6.1", "policy": "shrink-window"}},
                       duration="20s")
        ```
    """
    _engine(engine)
    specs = _variants(variants)
    common = {"duration": duration, "seed": seed, "hz": hz, "timing": timing}
    runs: dict[str, Run] = {}
    for label, kw in specs.items():
        kw = {**{k: v for k, v in common.items() if v is not None}, **kw}
        runs[label] = run(kw.pop("scenario", scenario), engine=engine, **kw)
    return Comparison(runs)


def sweep(scenario: str | os.PathLike[str] | Mapping[str, Any],
          vary: Mapping[str, Sequence[Any]], *, profile: str | None = None,
          policy: PolicyLike = (), sysctl: Mapping[str, Any] | None = None,
          duration: DurationLike = None, seed: int | None = None, jobs: int = 0,
          trace_dir: str | os.PathLike[str] | None = None,
          engine: str | None = None, hz: int | None = None,
          timing: str | None = None) -> "SweepTable":
    """Run a scenario over the product of several fields' values; like ``tcpsim sweep``.

    Args:
        scenario: a scenario file, a built-in experiment's name or a scenario dict.
        vary: ``{field: values}``, fields spelled as in a scenario file or ``--vary``:
            ``"link.rtt": ["1ms", "20ms"]``, ``"sysctl.net.ipv4.tcp_adv_win_scale": [-2, 1]``,
            ``"profile": ["linux-6.1", "linux-6.18"]``, ``"policy": ["none", "shrink-window"]``.
        profile: the profile of every point (unless ``profile`` is varied).
        policy: patches on every point (a varied ``policy`` adds to them).
        sysctl: sysctls on every point.
        duration: every point's simulated time, as for `run`.
        seed: every point's seed.
        engine: as for `run`.
        hz: every point's CONFIG_HZ, as for `run` (unless ``hz`` is varied).
        timing: every point's application timing, as for `run` (unless ``timing.host`` is
            varied).
        jobs: worker processes (0: one per CPU; 1: in this process).
        trace_dir: write one Parquet trace per point there.

    Returns:
        One row per point (in grid order): ``point``, the varied fields, every summary
        field, ``error`` and ``counter.NAME`` columns; an Arrow table (``.to_pandas()``).
        Every point is validated before any runs; a point that fails while running has its
        ``error`` set and the others keep their results.
    """
    import pyarrow as pa

    from tcpsim.core.sysctl import SysctlError
    from tcpsim.catalog import ProfileError
    from tcpsim.sweeps import build_points, run_sweep
    chosen = _engine(engine)
    axes = _axes(vary)
    if not isinstance(jobs, int) or jobs < 0:
        raise ValueError(f"jobs: expected 0 (one per CPU) or a positive number, got {jobs!r}")
    base = _options(profile, policy, sysctl, duration, seed, hz)
    base.engine = chosen
    if timing is not None:
        from tcpsim.scenario import set_timing
        set_timing({}, timing, "timing")        # a bad value names `timing`
    with _scenario_file(scenario) as path:
        try:
            points = build_points(path, axes, base, timing)
        except (ProfileError, SysctlError) as exc:
            raise _user_error(exc) from None
    run_sweep(points, jobs=jobs, trace_dir=Path(trace_dir) if trace_dir else None)
    rows = [dict(p.row(), **{f"counter.{k}": v for k, v in p.counters.items()}) for p in points]
    columns: list[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    from tcpsim.sweeps.table import SHOWN, table_lines
    shown = ["point"] + [k for a in axes for k in a.fields] + [*SHOWN, "error"]
    return SweepTable(pa.table({c: [r.get(c) for r in rows] for c in columns}),
                      table_lines(points, axes), shown)


class SweepTable:
    """What `sweep` returns: the points as an Arrow table (every attribute of
    ``pyarrow.Table`` works on it: ``.to_pandas()``, ``.column(...)``, ``.num_rows``), printed
    as ``tcpsim sweep`` prints it (``print(t)``; an HTML table in a notebook). ``.arrow`` is
    the ``pyarrow.Table`` itself."""

    def __init__(self, table: "pa.Table", lines: Sequence[str], shown: Sequence[str]) -> None:
        self.arrow = table
        self._lines = list(lines)
        self._shown = [c for c in shown if c in table.column_names]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("arrow", "_lines", "_shown"):
            raise AttributeError(name)
        return getattr(self.arrow, name)

    def __len__(self) -> int:
        return self.arrow.num_rows

    def __eq__(self, other: object) -> bool:
        return self.arrow.equals(other.arrow if isinstance(other, SweepTable) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        n = self.arrow.num_rows
        return (f"<tcpsim.SweepTable: {n} point{'s' * (n != 1)}, {self.arrow.num_columns} columns "
                "(.to_pandas(), .arrow)>\n" + "\n".join(self._lines))

    def _repr_html_(self) -> str:
        import html as _html
        from tcpsim.report.tables import fmt_value
        cells = "".join(f"<th>{_html.escape(c)}</th>" for c in self._shown)
        data = {c: self.arrow.column(c).to_pylist() for c in self._shown}
        rows = "".join("<tr>" + "".join(
            f"<td>{_html.escape(fmt_value(data[c][i], 'bytes' if c.startswith(('peak_', 'final_')) else ''))}</td>"
            for c in self._shown) + "</tr>" for i in range(self.arrow.num_rows))
        return (f"<table class='tcpsim-sweep'><thead><tr>{cells}</tr></thead><tbody>{rows}"
                f"</tbody></table><p>{self.arrow.num_rows} points; every summary field and "
                "counter is in <code>.to_pandas()</code></p>")


def search(spec: str | os.PathLike[str] | Mapping[str, Any], *, profile: str | None = None,
           policy: PolicyLike = (), vs: str | None = None, vs_policy: PolicyLike = (),
           budget: int | None = None, seed: int | None = None, duration: DurationLike = None,
           threshold: float | None = None, jobs: int = 1, out: str | os.PathLike[str] | None = None,
           executor: str = "local", minimise: bool = True, optimiser: str | None = None,
           progress: Callable[[int, int, Any], None] | None = None,
           objective: str | None = None) -> Any:
    """Search a declared workload space for the one that breaks a policy; like ``tcpsim search``.

    Args:
        spec: a search file, a shipped search's name (``"rcvbuf-growth"``) or a dict shaped
            like a search file ({"search": {...}, "space": {...}}).
        profile: the searched profile (replaces the file's).
        policy: patches added to the searched side.
        vs: a profile to compare against (the objective becomes the difference).
        vs_policy: patches on the `vs` side.
        budget: workloads to evaluate (as the file's [search] budget).
        seed: the optimiser's seed.
        duration: every evaluation's simulated time, as for `run`.
        threshold: an objective at or above it is a finding.
        jobs: worker processes (1: this process).
        executor: "local" or "dask".
        out: a directory to store every run (a second call resumes) and the finding.
        minimise: minimise the best when it is a finding.
        optimiser: "tpe" (the default), "random" or "hypothesis" (as the file's).
        progress: called after every batch as progress(done, budget, best evaluation).
        objective: search the same space for another objective (``"time_stalled"``, ...;
            tcpsim.searching.objective.OBJECTIVES), with its default threshold unless
            `threshold` is given.

    Returns:
        A `tcpsim.searching.SearchResult`: ``best``, ``finding`` (minimised, or None),
        ``evaluations``; ``tcpsim.searching.summary(result)`` is the JSON record.
    """
    from pathlib import Path as _P

    from tcpsim import searching
    if isinstance(spec, Mapping):
        parsed = searching.parse_search(dict(spec))
    elif isinstance(spec, (str, os.PathLike)):
        parsed = searching.load_search(spec)
    else:
        raise TypeError("spec: expected a search file, a shipped search's name or a dict")
    if executor not in ("local", "dask"):
        raise ValueError(f"executor: expected local or dask, got {executor!r}")
    if not isinstance(jobs, int) or jobs < 0:
        raise ValueError(f"jobs: expected 0 (one per CPU) or a positive number, got {jobs!r}")
    parsed = searching.with_overrides(
        parsed, profile=profile, policy=_policies(policy), vs_profile=vs,
        vs_policy=_policies(vs_policy), budget=budget, seed=seed, threshold=threshold,
        duration=_duration(duration), optimiser=optimiser, objective=objective)
    return searching.run(parsed, _P(out) if out is not None else None, jobs=jobs,
                         executor=executor, minimise=minimise, progress=progress)


def _axes(vary: Mapping[str, Sequence[Any]]) -> list[Any]:
    from tcpsim.scenario import ScenarioError
    from tcpsim.sweeps import Axis, parse_axis
    if not isinstance(vary, Mapping) or not vary:
        raise TypeError('vary: expected a dict {field: [values]}, e.g. {"link.rtt": ["1ms", "20ms"]}')
    axes = []
    for key, values in vary.items():
        try:
            parse_axis(f"{key}=0")              # the field name checks `--vary` makes
        except ScenarioError as exc:
            raise ScenarioError("vary" + str(exc)[len("--vary"):]) from None
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise TypeError(f"vary: {key}: expected a non-empty list of values")
        axes.append(Axis(key, tuple(values)))
    return axes


class _scenario_file:
    """A scenario as a path `tcpsim.sweeps` can read: a dict is written to a temporary TOML
    file for the duration of the `with` block."""

    def __init__(self, scenario: Any) -> None:
        self.scenario = scenario
        self.tmp: str | None = None

    def __enter__(self) -> str:
        if isinstance(self.scenario, (str, os.PathLike)):
            return str(self.scenario)
        if not isinstance(self.scenario, Mapping):
            raise TypeError("scenario: expected a file path, a built-in experiment's name or a dict")
        doc = {"name": "scenario", **self.scenario}
        _scenario(doc)                              # validate first: errors name `scenario`
        fd, self.tmp = tempfile.mkstemp(suffix=".toml", prefix="tcpsim-")
        with os.fdopen(fd, "w") as f:
            f.write(_toml(doc))
        return self.tmp

    def __exit__(self, *exc: object) -> None:
        if self.tmp:
            os.unlink(self.tmp)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, Sequence):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"scenario: cannot write {v!r} to a scenario file")


def _toml(doc: Mapping[str, Any]) -> str:
    """A scenario dict (top-level values and one level of tables) as TOML text."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, Mapping)]
    for table, body in doc.items():
        if isinstance(body, Mapping):
            lines += ["", f"[{table}]"] + [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in body.items()]
    return "\n".join(lines) + "\n"


# -- notebooks ------------------------------------------------------------------------------------

def use_static_images(enabled: bool = True) -> bool:
    """Give every figure a notebook shows a static PNG beside its interactive version, for
    viewers without JavaScript (GitHub's and VS Code's previews, nbconvert to PDF or
    Markdown): Jupyter shows the interactive figure, the others the picture. Needs kaleido
    (``pip install kaleido``) and a Chrome or Chromium it can drive; returns whether the
    pictures are on (False, with nothing changed, when kaleido is missing).
    ``use_static_images(False)`` turns them off."""
    import plotly.io as pio
    if not enabled:
        pio.renderers.default = "plotly_mimetype"
        return False
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False
    pio.renderers["png"].width, pio.renderers["png"].height = 1000, None
    pio.renderers.default = "plotly_mimetype+png"
    return True


# -- catalogues ----------------------------------------------------------------------------------

def profiles() -> dict[str, str]:
    """The kernel profiles, ``{name: one-line summary}``, in release order."""
    from tcpsim.catalog import builtin_profiles
    return {name: p.summary for name, p in builtin_profiles().items()}


def patches() -> dict[str, str]:
    """The built-in patches (``policy=``), ``{name: one-line summary}``."""
    from tcpsim.catalog import builtin_patches
    return {name: str(getattr(cls, "summary", "") or "") for name, cls in builtin_patches().items()}


def scenarios() -> dict[str, str]:
    """The built-in scenarios (the experiment files shipped with tcpsim, which ``tcpsim
    experiments`` lists), ``{name: description}``: each name is a valid ``scenario=``."""
    from tcpsim.scenario import builtin_experiments, read_scenario_file
    return {name: str(read_scenario_file(name)[0].get("description", ""))
            for name in builtin_experiments()}


def scenario_dict(scenario: str | os.PathLike[str]) -> dict[str, Any]:
    """A scenario file (or built-in experiment) as a dict to edit and pass to `run`.

    Example:
        ```python
        sc = tcpsim.scenario_dict("seed-rcvbuf32k-fill")
        sc["receiver"]["device"] = "nic-4k"
        tcpsim.run(sc, duration="2s")
        ```
    """
    from tcpsim.scenario import ScenarioError, read_scenario_file
    if not isinstance(scenario, (str, os.PathLike)):
        raise TypeError("scenario: expected a file path or a built-in experiment's name")
    try:
        return read_scenario_file(scenario)[0]
    except ScenarioError as exc:
        raise ScenarioError(f"scenario: {exc}") from None

