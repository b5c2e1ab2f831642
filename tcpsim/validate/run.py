"""Hold the model to real-kernel traces: replay each trace's workload and score agreement.

    python -m tcpsim.validate TRACE.parquet [...]       # or directories
    python -m tcpsim.validate --all tests/fixtures/kernel --write-docs
    python -m tcpsim.validate T.parquet --profile linux-6.6 --html out/v.html --json

For each trace: the workload is replayed in the simulator (tcpsim.validate.replay: the
scenario from the metadata, the captured sysctls, the measured link delay, the applications'
real tick times) under the matching profile (linux-6.18 for a 6.18 capture; --profile
overrides) and the two are compared (tcpsim.validate.scores): outcome classes,
final/peak/series errors of sk_rmem_alloc and sk_rcvbuf, exact advertised-window matches,
counters. The exit code is 0 when every trace passes the thresholds, 1 when one does not,
2 when a trace cannot be read or replayed (one error line says which and why).

`run_validate()` is the entry point for the CLI (`tcpsim validate`).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from tcpsim.validate.replay import ReplayError, ReplayResult, capture_hz, replay
from tcpsim.validate.outcomes import DEFAULT_STALL_GAP_NS, outcomes
from tcpsim.validate.report import markdown_table, text
from tcpsim.validate.scores import Score, Thresholds, score
from tcpsim.validate.trace import TraceFileError, TraceView, load, view
from tcpsim.units import seconds_option

DOCS = Path(__file__).resolve().parents[2] / "docs" / "validation.md"
BEGIN, END = "<!-- BEGIN GENERATED: validate --write-docs -->", "<!-- END GENERATED -->"


class ValidateError(ValueError):
    """A trace that cannot be validated (unreadable, no scenario, unknown profile, ...)."""


@dataclass
class Validation:
    """One validated trace: the score and both views (model moved to the kernel's axis)."""

    path: Path
    score: Score
    kernel: TraceView
    model: TraceView
    replay: ReplayResult


def fixture_field(meta: dict[str, Any], path: Path, key: str) -> Any:
    """A fixture's `key`: from the trace metadata's fixture entry, else the manifest's."""
    fx = meta.get("fixture") or {}
    if key in fx:
        return fx[key]
    manifest = path.parent / "manifest.json"
    if manifest.is_file():
        try:
            entries = json.loads(manifest.read_text()).get("fixtures", [])
        except ValueError:
            return None
        for e in entries:
            if e.get("file") == path.name:
                return e.get(key)
    return None


def timing_dependent(meta: dict[str, Any], path: Path) -> list[str]:
    """What jitter decides in this trace: the metadata's fixture entry, else the manifest."""
    return list(fixture_field(meta, path, "timing_dependent") or [])


def known_divergence(meta: dict[str, Any], path: Path) -> dict[str, str]:
    """Where today's model is known to differ from this capture ({class or "numbers":
    figures}; issue 14's fixtures): the fixture entry, else the manifest."""
    return dict(fixture_field(meta, path, "known_divergence") or {})


def _manifest(path: Path) -> dict[str, Any]:
    manifest = path.parent / "manifest.json"
    if manifest.is_file():
        try:
            return json.loads(manifest.read_text())
        except ValueError:
            return {}
    return {}


def replay_hz(meta: dict[str, Any], path: Path, override: int | None = None) -> tuple[int | None, str]:
    """The HZ to replay a trace at: --hz, else the capture's (capture_hz())."""
    if override is not None:
        return override, "--hz"
    return capture_hz(meta, _manifest(path))


def validate_trace(path: str | Path, profile: str | None = None,
                   thresholds: Thresholds | None = None, until_s: float | None = None,
                   stall_gap_ns: int = DEFAULT_STALL_GAP_NS,
                   policies: tuple[str, ...] = (), hz: int | None = None,
                   engine: str | None = None) -> Validation:
    """Replay one trace and score the model against it (at the capture's HZ unless `hz`;
    on `engine`, default: the native engine where built)."""
    from tcpsim.catalog import ProfileError
    from tcpsim.engines import EngineError
    from tcpsim.scenario import ScenarioError

    p = Path(path)
    th = thresholds or Thresholds()
    try:
        cols, meta = load(p)
        k = view(cols, meta)
        until_ns = None if until_s is None else int(until_s * 1e9)
        replay_at, hz_source = replay_hz(meta, p, hz)
        rp = replay(k, profile, policies, until_ns, replay_at, hz_source, engine)
    except (TraceFileError, ReplayError, ScenarioError, ProfileError, EngineError) as exc:
        raise ValidateError(f"{p}: {exc}" if str(p) not in str(exc) else str(exc)) from None
    return score_replay(p, meta, k, rp, th, stall_gap_ns, timing_dependent(meta, p),
                        known_divergence(meta, p))


def score_replay(p: Path, meta: dict[str, Any], k: TraceView, rp: ReplayResult, th: Thresholds,
                 stall_gap_ns: int = DEFAULT_STALL_GAP_NS,
                 timing: list[str] | None = None,
                 known: dict[str, str] | None = None,
                 model: TraceView | None = None) -> Validation:
    """Score a model run (rp) against the trace it replayed (k, its metadata meta); `model`:
    the run's view (on the trace's axis) when the caller has made it already."""
    end = rp.plan.end_ns
    m = model if model is not None else view(
        rp.columns, {"source": "tcpsim", "counters": rp.result.counters}).shifted(-rp.plan.shift_ns)
    timing = timing or []
    ko = outcomes(k, end, stall_gap_ns, counters_known="counters" in meta)
    mo = outcomes(m, end, stall_gap_ns)
    name = str((meta.get("fixture") or {}).get("name") or (meta.get("scenario") or {}).get("name")
               or p.stem)
    s = score(name, rp.plan.profile, k, m, ko, mo, end, th, timing, rp.result.counters, known,
              rp.result.sender_counters)
    s.info = {"kernel": meta.get("profile", "?"), "file": str(p), "link": rp.plan.link,
              "hz": rp.plan.hz,
              "notes": rp.plan.notes, "shift_ns": rp.plan.shift_ns,
              "replay": {"write_ticks": rp.write_ticks,
                         "write_size_mismatch": rp.write_size_mismatch,
                         "read_ticks": rp.read_ticks, "read_size_mismatch": rp.read_size_mismatch},
              "kernel_bytes_received": _received(k, end), "model_bytes_received": _received(m, end)}
    return Validation(p, s, k, m, rp)


def _received(v: TraceView, end: int) -> int | None:
    acks = [a for a in v.acks if a.t_ns <= end]
    return acks[-1].ack_seq - 1 if acks else None


def collect(paths: Iterable[str | Path]) -> list[Path]:
    """Trace files from paths; a directory gives its *.parquet (manifest order first)."""
    out: list[Path] = []
    for item in paths:
        p = Path(item)
        if p.is_dir():
            files = sorted(p.glob("*.parquet"))
            manifest = p / "manifest.json"
            if manifest.is_file():
                try:
                    order = [e.get("file") for e in json.loads(manifest.read_text()).get("fixtures", [])]
                except ValueError:
                    order = []
                files.sort(key=lambda f: order.index(f.name) if f.name in order else len(order))
            out += files
        else:
            out.append(p)
    return out


def collect_or_say(paths: Iterable[str | Path], error: Callable[[str], Any]) -> list[Path]:
    """collect(paths), saying through `error` when there is nothing to validate."""
    files = collect(paths)
    if not files:
        error("validate: no traces given (pass .parquet files or a directory of them)")
    return files


def run_validate(paths: Iterable[str | Path], profile: str | None = None,
                 thresholds: Thresholds | None = None, html_out: str | Path | None = None,
                 as_json: bool = False, echo: Callable[[str], Any] = print,
                 until_s: float | None = None, write_docs: str | Path | None = None,
                 policies: tuple[str, ...] = (), hz: int | None = None,
                 error: Callable[[str], Any] | None = None, engine: str | None = None) -> int:
    """Validate traces (files or directories); print reports through `echo` and errors
    through `error` (default: `echo`; `tcpsim validate` prints them as ``tcpsim: error:``
    lines on stderr).

    Returns 0 if all pass, 1 if any fails its thresholds, 2 if a trace cannot be read or
    replayed (reported as one line per trace; the others are still validated)."""
    error = error or echo
    if hz is not None:
        from tcpsim.core.clock import parse_hz
        try:
            hz = parse_hz(hz, "--hz")
        except ValueError as exc:
            error(f"validate: {exc}")
            return 2
    files = collect_or_say(paths, error)
    if not files:
        return 2
    results: list[Validation] = []
    errors: list[str] = []
    from tcpsim import interrupt
    stopped: interrupt.Interrupted | None = None
    for f in files:
        try:
            results.append(validate_trace(f, profile, thresholds, until_s, policies=policies, hz=hz,
                                          engine=engine))
        except ValidateError as exc:
            errors.append(f"validate: {exc}")
        except interrupt.Interrupted as exc:      # the traces validated whole are reported
            stopped = exc
            break
    if as_json:
        echo(json.dumps({"traces": [r.score.as_dict() for r in results], "errors": errors},
                        indent=1, default=str))
    else:
        for r in results:
            echo(text(r.score))
            echo("")
        for e in errors:
            error(e)
        if results:
            passed = sum(r.score.passed for r in results)
            echo(f"{passed}/{len(results)} traces pass" + (f", {len(errors)} not validated" if errors else ""))
    if as_json and error is not echo:          # stdout holds the JSON; errors go their own way
        for e in errors:
            error(e)
    if html_out and results:
        from tcpsim.validate.html import write_html
        write_html(html_out, [(r.score, r.kernel, r.model, text(r.score)) for r in results])
    if write_docs and results and stopped is None:
        update_docs(Path(write_docs), [r.score for r in results])
    if stopped is not None:
        stopped.kept = (f"{len(results)} of {len(files)} traces validated"
                        + (": their reports above" if results else "")
                        + (f" and in {html_out}" if html_out and results else ""))
        raise stopped
    if errors:
        return 2
    return 0 if all(r.score.passed for r in results) else 1


def docs_block(scores: list[Score]) -> str:
    """The generated part of docs/validation.md: the table and each trace's report."""
    th = Thresholds()
    limits = ", ".join(f"{f.name} = {getattr(th, f.name)}" for f in fields(th))
    parts = [BEGIN, "", "Regenerate: `python -m tcpsim.validate --all "
             "tests/fixtures/kernel --write-docs` (no root needed).", "",
             f"Default thresholds: {limits}. (t-d) = timing-dependent, (k-d) = a known "
             "divergence of today's model (both reported, not scored; the report below gives "
             "the figures).", "",
             markdown_table(scores), "", "<details><summary>Full reports</summary>", "", "```"]
    for s in scores:
        parts += [text(s), ""]
    parts += ["```", "", "</details>", "", END]
    return "\n".join(parts)


def update_docs(path: Path, scores: list[Score]) -> Path:
    """Replace the generated block of `path` (or create the file with it)."""
    return replace_block(path, docs_block(scores), BEGIN, END)


def replace_block(path: Path, block: str, begin: str, end: str) -> Path:
    """Replace the part of `path` from `begin` to `end` by `block` (which starts with `begin`
    and ends with `end`); append it if there is none, create the file if there is none."""
    if path.is_file():
        old = path.read_text()
        if begin in old and end in old:
            head, _, rest = old.partition(begin)
            _, _, tail = rest.partition(end)
            path.write_text(head + block + tail)
            return path
        path.write_text(old.rstrip() + "\n\n" + block + "\n")
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Validation against real-kernel traces\n\n" + block + "\n")
    return path


def thresholds_from(args: argparse.Namespace) -> Thresholds:
    th = Thresholds()
    changes = {f.name: getattr(args, f.name) for f in fields(th)
               if getattr(args, f.name, None) is not None}
    return replace(th, **changes)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tcpsim.validate",
                                 description="Replay kernel traces in the model and score agreement.")
    ap.add_argument("paths", nargs="*", help="trace files or directories")
    ap.add_argument("--all", metavar="DIR", action="append", default=[],
                    help="every trace in DIR (e.g. tests/fixtures/kernel)")
    ap.add_argument("--profile", default=None, help="model profile (default: the capture's kernel)")
    ap.add_argument("--policy", action="append", default=[], help="patch on top of the profile")
    ap.add_argument("--until", type=seconds_option("--until"), default=None,
                    help='compare only the first part, e.g. "2s" or 2 (seconds)')
    ap.add_argument("--hz", default=None, help="replay at this CONFIG_HZ (default: the capture's)")
    ap.add_argument("--html", default=None, help="write the overlay page here")
    ap.add_argument("--engine", default=None, choices=("python", "native"),
                    help="replay on this engine (default: native where built)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of text")
    ap.add_argument("--write-docs", nargs="?", const=str(DOCS), default=None,
                    help=f"rewrite the generated table of {DOCS.name} (or the given file)")
    th = Thresholds()
    ap.add_argument("--no-outcomes", dest="outcomes", action="store_const", const=False,
                    default=None, help="do not fail on outcome-class differences")
    for f in fields(th):
        if f.name != "outcomes":
            ap.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=float,
                            default=None, help=f"default {getattr(th, f.name)}")
    ap.add_argument("--plain", action="store_true",
                    help="run each capture's scenario over --runs seeds against all its captures")
    ap.add_argument("--runs", type=int, default=None, help="--plain: seeds (default 10)")
    ap.add_argument("--host", default=None, help="--plain: the [timing] host preset")
    ap.add_argument("--seed", type=int, default=None, help="--plain: first seed")
    ap.add_argument("--set", dest="sets", action="append", default=[],
                    help="--plain: FIELD=VALUE on the plain scenario (repeatable)")
    ap.add_argument("--require-in-range", dest="required", action="append", default=[],
                    help="--plain: fail when a capture's FIGURE is outside the model's range")
    args = ap.parse_args(argv)
    paths = list(args.paths) + list(args.all)
    if args.plain or args.runs is not None or args.host or args.seed is not None or args.sets \
            or args.required:
        return _plain_main(args, paths)
    return run_validate(paths, args.profile, thresholds_from(args), args.html, args.json,
                        print, args.until, args.write_docs, tuple(args.policy), args.hz,
                        engine=args.engine)


def _plain_main(args: argparse.Namespace, paths: list[str]) -> int:
    """`python -m tcpsim.validate --plain ...` (tcpsim/validate/plain.py)."""
    from tcpsim.validate.plain import DEFAULT_RUNS, mixed_options, run_plain
    replay_only = {"--until": args.until, "--html": args.html, "--write-docs": args.write_docs,
                   "--no-outcomes": args.outcomes,
                   **{"--" + f.name.replace("_", "-"): getattr(args, f.name, None)
                      for f in fields(Thresholds) if f.name != "outcomes"}}
    mixed = mixed_options(args.plain, replay_only,
                          {"--runs": args.runs, "--host": args.host, "--seed": args.seed,
                           "--set": args.sets, "--require-in-range": args.required})
    if mixed:
        print(f"validate: {mixed}", file=sys.stderr)
        return 2
    return run_plain(paths, DEFAULT_RUNS if args.runs is None else args.runs, args.json,
                     error=lambda msg: print(msg, file=sys.stderr), profile=args.profile,
                     policies=tuple(args.policy), host=args.host, sets=tuple(args.sets),
                     hz=args.hz, engine=args.engine, seed=args.seed,
                     required=tuple(args.required))


if __name__ == "__main__":
    sys.exit(main())
