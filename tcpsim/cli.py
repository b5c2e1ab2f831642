"""The `tcpsim` command. Thin: parse arguments, call tcpsim.runner / tcpsim.profiles, print.

Every user mistake ends in one line on stderr naming what to fix and exit status 2 -- never
a traceback.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

import typer

from tcpsim.core.sysctl import SysctlError
from tcpsim.profiles import ProfileError, builtin_patches, builtin_profiles, get_profile
from tcpsim.scenario import ScenarioError, builtin_experiments, load_scenario, parse_duration

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Simulate the Linux TCP receive path, per kernel version and patch.")
profiles_app = typer.Typer(help="List kernel profiles and patches.", invoke_without_command=True)
app.add_typer(profiles_app, name="profiles")

USER_ERRORS = (ScenarioError, SysctlError, ProfileError)


@app.callback()
def _options(debug: bool = typer.Option(
        False, "--debug", help="when a patch fails, show the full traceback instead of one "
                               "line (accepted anywhere on the command line)")) -> None:
    """Simulate the Linux TCP receive path, per kernel version and patch."""


def _fail(msg: str) -> None:
    typer.echo(f"tcpsim: error: {msg}", err=True)
    raise typer.Exit(2)


def _parse_sysctls(items: list[str]) -> dict:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            _fail(f"--sysctl {item}: expected NAME=VALUE, e.g. net.ipv4.tcp_shrink_window=1")
        value = value.strip()
        parts = value.split()
        try:
            out[name.strip()] = [int(p) for p in parts] if len(parts) > 1 else int(value)
        except ValueError:
            _fail(f"--sysctl {item}: value must be an integer (or three for tcp_rmem)")
    return out


@app.command()
def run(
    scenario: str = typer.Argument(..., help="scenario TOML file, or the name of a built-in experiment"),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help="kernel profile (tcpsim profiles)"),
    policy: List[str] = typer.Option([], "--policy", help="patch name or FILE.py:Class (repeatable)"),
    sysctl: List[str] = typer.Option([], "--sysctl", "-s", help="NAME=VALUE receiver sysctl (repeatable)"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d", help='override, e.g. "60s"'),
    seed: Optional[int] = typer.Option(None, "--seed"),
    hz: Optional[int] = typer.Option(None, "--hz", help="the kernel's CONFIG_HZ: 100, 250, 300 or 1000 "
                                     "(default: the scenario's hz, else tcpsim's 1 ms clock)"),
    trace: Optional[Path] = typer.Option(None, "--trace", "-o", help="write the per-event trace (Parquet)"),
    no_skip: bool = typer.Option(False, "--no-skip", help="tick by tick (no time skipping)"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON on stdout"),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="progress bar on stderr"),
) -> None:
    """Run one scenario and print its summary, counters and ss-style snapshot."""
    from tcpsim.runner import RunOptions, run as run_scenario
    try:
        sc = load_scenario(scenario)
        opts = RunOptions(profile=profile, policies=tuple(policy), sysctl=_parse_sysctls(sysctl),
                          duration=parse_duration(duration, "--duration") if duration else None,
                          seed=seed, hz=hz, skip=not no_skip, trace=trace,
                          progress=sys.stderr.isatty() if progress is None else progress)
        result, _ = run_scenario(sc, opts)
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    if as_json:
        typer.echo(json.dumps({"scenario": result.scenario, "profile": result.profile,
                               "summary": result.summary, "counters": result.counters,
                               "ss": result.ss, "trace": str(trace) if trace else None},
                              indent=2, sort_keys=True))
        return
    _print_result(result, trace)


def _print_result(result, trace: Optional[Path]) -> None:
    s = result.summary
    tick = f" at HZ={s['hz']}" if s.get("hz") else ""
    typer.echo(f"{result.scenario} under {result.profile}{tick}: {s['duration_s']:g} s simulated "
               f"in {s['wall_s']:g} s ({s['events']} events)")
    width = max(len(k) for k in s)
    for k, v in s.items():
        if k not in ("duration_s", "wall_s", "events", "hz"):
            typer.echo(f"  {k:<{width}}  {v}")
    typer.echo("counters (nstat, non-zero):")
    for k, v in result.counters.items():
        if v:
            typer.echo(f"  {k:<32} {v}")
    typer.echo("ss -tmi:")
    for name, line in result.ss.items():
        typer.echo(f"  {name}: {line}")
    if trace:
        typer.echo(f"trace: {trace}")


@profiles_app.callback()
def profiles_list(ctx: typer.Context) -> None:
    """List the kernel profiles and patches with a one-line summary each."""
    if ctx.invoked_subcommand:
        return
    typer.echo("profiles:")
    for name, p in builtin_profiles().items():
        typer.echo(f"  {name:<12} {p.summary}")
    patches = builtin_patches()
    if patches:
        typer.echo("patches (--policy NAME):")
        for name, cls in patches.items():
            typer.echo(f"  {name:<20} {cls.summary}")


@profiles_app.command("show")
def profiles_show(name: str, source: Optional[str] = typer.Option(
        None, "--source", help="print the code of one decision point"),
        policy: List[str] = typer.Option([], "--policy", help="show it with this patch applied "
                                                              "(repeatable)")) -> None:
    """Show every decision point of a profile: its kind, the class that defines it (* = this
    era or patch changed it), the kernel function it models; then the sysctl defaults."""
    try:
        p = get_profile(name, policy)
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    if source:
        try:
            typer.echo(p.source_of(source))
        except (AttributeError, TypeError):
            _fail(f"--source {source}: no such decision point (or a constant: see profiles show)")
        return
    typer.echo(f"{p.name}: {p.summary}")
    typer.echo("decision points (* = changed by this profile's own era or its patches):")
    rows = p.decision_points()
    width = max(len(r.owner) for r in rows) + 2
    for r in rows:
        owner = r.owner + (" *" if r.changed else "")
        what = f"= {r.value}" if r.point.name not in ("SYSCTLS",) and not r.point.is_method \
            else r.point.models
        typer.echo(f"  {r.point.name:<24} {r.point.kind.value:<9} {owner:<{width}} {what}")
    typer.echo("sysctl defaults:")
    known = p.known_sysctls()
    for k, v in p.default_sysctls().as_dict().items():
        if k.split(".")[-1] in known:
            typer.echo(f"  {k} = {v}")
    if p.counters():
        typer.echo("counters the patches add: " + ", ".join(f"TcpExt{c}" for c in p.counters()))
    typer.echo("kernel tick (CONFIG_HZ): a build option, not part of the profile; set it per run "
               "with --hz or hz = 250 in the scenario (100, 250, 300, 1000; unset: tcpsim's 1 ms "
               "clock with exact timers)")


@app.command()
def experiments() -> None:
    """List the built-in experiments (scenario files shipped with tcpsim)."""
    for name in builtin_experiments():
        try:
            sc = load_scenario(name)
            typer.echo(f"  {name:<36} {sc.description}")
        except ScenarioError as exc:
            typer.echo(f"  {name:<36} (invalid: {exc})")


@app.command()
def sweep(
    scenario: str = typer.Argument(..., help="scenario TOML file, or the name of a built-in experiment"),
    vary: List[str] = typer.Option(..., "--vary", "-x",
                                   help="KEY=V1,V2,... (repeatable; the grid is their product), e.g. "
                                        "link.rtt=1ms,20ms  sysctl.net.ipv4.tcp_adv_win_scale=-2,1  "
                                        "profile=linux-6.1,linux-6.18  policy=none,shrink-window"),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help="profile of every point"),
    policy: List[str] = typer.Option([], "--policy", help="patch on every point (repeatable)"),
    sysctl: List[str] = typer.Option([], "--sysctl", "-s", help="NAME=VALUE on every point"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d", help='every point, e.g. "60s"'),
    jobs: int = typer.Option(0, "--jobs", "-j", help="worker processes (default: one per CPU)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="results as .csv or .json"),
    trace_dir: Optional[Path] = typer.Option(None, "--trace-dir", help="one Parquet trace per point here"),
    no_skip: bool = typer.Option(False, "--no-skip", help="tick by tick (no time skipping)"),
    as_json: bool = typer.Option(False, "--json", help="print every point's row as JSON"),
) -> None:
    """Run a scenario over a grid of parameter values, in parallel; one row per point."""
    import time

    from tcpsim.runner import RunOptions
    from tcpsim.sweep import build_points, parse_axis, run_sweep, table_lines, write_results
    if out is not None and out.suffix not in (".csv", ".json"):
        _fail(f"--out {out}: use a .csv or .json file name")
    if jobs < 0:
        _fail(f"--jobs {jobs}: use a positive number of workers (0 = one per CPU)")
    try:
        axes = [parse_axis(v) for v in vary]
        base = RunOptions(profile=profile, policies=tuple(policy), sysctl=_parse_sysctls(sysctl),
                          duration=parse_duration(duration, "--duration") if duration else None,
                          skip=not no_skip)
        points = build_points(scenario, axes, base)
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    show = sys.stderr.isatty() and not as_json

    def progress(_point, done: int) -> None:
        if show:
            sys.stderr.write(f"\r{done}/{len(points)} points")
            sys.stderr.flush()

    start = time.perf_counter()
    try:
        run_sweep(points, jobs=jobs, trace_dir=trace_dir, on_done=progress)
    except KeyboardInterrupt:
        done = sum(1 for p in points if p.summary is not None or p.error)
        where = f", written to {out}" if out is not None and write_results(points, out) else ""
        _fail(f"interrupted: {done} of {len(points)} points finished{where}")
        return
    if show:
        sys.stderr.write("\n")
    wall = time.perf_counter() - start
    if out is not None:
        write_results(points, out)
    if as_json:
        typer.echo(json.dumps([p.row() for p in points], indent=2, sort_keys=True))
    else:
        for line in table_lines(points, axes):
            typer.echo(line)
        typer.echo(f"{len(points)} points in {wall:.1f} s" + (f"; results: {out}" if out else ""))
    if any(p.error for p in points):
        raise typer.Exit(1)


@app.command()
def bench(
    quick: bool = typer.Option(False, "--quick", help="short durations (a smoke run)"),
    repeat: int = typer.Option(1, "--repeat", "-r", help="repetitions per case (median reported)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Benchmark the simulator: packets/s, simulated s per wall s, peak RSS."""
    from tcpsim.bench import run_benchmarks
    rows = run_benchmarks(quick=quick, repeat=repeat, echo=None if as_json else typer.echo)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))


@dataclass
class Variant:
    """One side of a comparison: a profile with its own patches and sysctls."""

    profile: str
    policies: list = field(default_factory=list)
    sysctl: list = field(default_factory=list)

    def label(self) -> str:
        extra = [*self.policies, *self.sysctl]
        return self.profile + (" + " + " ".join(extra) if extra else "")


def _parse_variants(args: list[str]) -> list[Variant]:
    """--profile A [--policy X] [--sysctl S] --vs B [--policy Y] ... (options bind to the
    profile before them)."""
    variants: list[Variant] = []
    it = iter(args)
    for arg in it:
        value = next(it, None)
        if value is None:
            _fail(f"{arg}: missing its value")
        if arg in ("--profile", "-p", "--vs"):
            variants.append(Variant(value))
        elif arg in ("--policy", "--sysctl", "-s"):
            if not variants:
                _fail(f"{arg} {value}: put it after the --profile or --vs it applies to")
            (variants[-1].policies if arg == "--policy" else variants[-1].sysctl).append(value)
        else:
            _fail(f"{arg}: unknown option; use --profile A [--policy X] [--sysctl N=V] --vs B ...")
    if len(variants) < 2:
        _fail("compare needs at least two variants: --profile A ... --vs B ...")
    return variants


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def compare(
    ctx: typer.Context,
    scenario: str = typer.Argument(..., help="scenario TOML file or built-in experiment"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="HTML report (default compare-NAME.html)"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d"),
    as_json: bool = typer.Option(False, "--json", help="print the comparison table as JSON"),
    hz: Optional[int] = typer.Option(None, "--hz", help="the kernel's CONFIG_HZ for every variant"),
) -> None:
    """Run one workload under several profiles/patches; write a side-by-side HTML report.

    Example: tcpsim compare seed-unbounded-growth --profile linux-6.1 --vs linux-6.1
    --policy shrink-window
    """
    from tcpsim.report import compare_runs, format_table, simulate, table_json
    from tcpsim.runner import RunOptions
    variants = _parse_variants(list(ctx.args))
    try:
        sc = load_scenario(scenario)
        dur = parse_duration(duration, "--duration") if duration else None
        runs = []
        for v in variants:
            opts = RunOptions(profile=v.profile, policies=tuple(v.policies),
                              sysctl=_parse_sysctls(v.sysctl), duration=dur, hz=hz)
            columns, meta = simulate(sc, opts)
            runs.append((v.label(), columns, meta))
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    page, rows = compare_runs(runs)
    target = out or Path(f"compare-{sc.name}.html")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page, encoding="utf-8")
    typer.echo(table_json(rows) if as_json else format_table(rows))
    if not as_json:
        typer.echo(f"report: {target}")


@app.command()
def report(trace: Path = typer.Argument(..., help="a trace written by tcpsim run --trace or capture"),
           out: Optional[Path] = typer.Option(None, "--out", "-o")) -> None:
    """Write the interactive HTML report of one trace."""
    from tcpsim.report import build_report
    if not trace.is_file():
        _fail(f"{trace}: no such trace file")
    try:
        path = build_report(trace, out or trace.with_suffix(".html"))
    except (OSError, ValueError) as exc:
        _fail(f"{trace}: not a readable tcpsim trace ({exc})")
        return
    typer.echo(f"report: {path}")


@app.command()
def capture(
    scenario: str = typer.Argument(..., help="scenario TOML file or built-in experiment"),
    out: Path = typer.Option(Path("captures"), "--out", "-o", help="output folder"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d"),
    no_bpftrace: bool = typer.Option(False, "--no-bpftrace", help="wire, samples and counters only"),
) -> None:
    """Run the scenario over the real kernel (root; namespaces + veth) and record a trace."""
    import os
    if os.geteuid() != 0:
        _fail("capture needs root (network namespaces, tracepoints): run it with sudo")
    from tcpsim.capture.capture import capture as run_capture
    try:
        sc = load_scenario(scenario)
        dur = parse_duration(duration, "--duration") / 1e9 if duration else None
        path = run_capture(sc.source or scenario, out, duration_s=dur, use_bpftrace=not no_bpftrace)
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    typer.echo(f"trace: {path}")


@app.command()
def validate(
    traces: List[Path] = typer.Argument(..., help="kernel traces (tcpsim capture) or folders"),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help="default: the capture's kernel"),
    policy: List[str] = typer.Option([], "--policy"),
    until: Optional[float] = typer.Option(None, "--until", help="compare only the first S seconds"),
    html: Optional[Path] = typer.Option(None, "--html", help="kernel-vs-model overlay page"),
    min_ack_match: Optional[float] = typer.Option(None, "--min-ack-match", help="fraction, e.g. 0.95"),
    max_final_error: Optional[float] = typer.Option(None, "--max-final-error"),
    max_peak_error: Optional[float] = typer.Option(None, "--max-peak-error"),
    hz: Optional[int] = typer.Option(None, "--hz", help="replay at this CONFIG_HZ (default: the "
                                     "capture's, from its metadata or manifest.json)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Replay a kernel trace's workload in the model and score the agreement."""
    from dataclasses import replace as dc_replace

    from tcpsim.validate import run_validate
    from tcpsim.validate.scores import Thresholds
    th = Thresholds()
    for name, value in (("min_ack_match", min_ack_match), ("max_final_error", max_final_error),
                        ("max_peak_error", max_peak_error)):
        if value is not None:
            th = dc_replace(th, **{name: value})
    code = run_validate([str(t) for t in traces], profile=profile, thresholds=th,
                        html_out=str(html) if html else None, as_json=as_json, echo=typer.echo,
                        until_s=until, policies=tuple(policy), hz=hz)
    raise typer.Exit(code)


@app.command(name="import")
def import_trace(
    fmt: str = typer.Argument(..., help="cloudflare-csv | ss | rcvbuf-grow"),
    src: Path = typer.Argument(..., help="the other tool's output (text)"),
    out: Path = typer.Option(..., "--out", "-o", help="Parquet trace to write"),
    port: Optional[int] = typer.Option(None, "--port", help="the receiver's local port"),
) -> None:
    """Convert another tool's trace (Cloudflare's bpftrace CSV, ss -tmi snapshots,
    tcp:tcp_rcvbuf_grow lines) into a tcpsim trace for `tcpsim report`."""
    from tcpsim.importers import FORMATS, ImportFormatError, import_file
    if fmt not in FORMATS:
        _fail(f"import: unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not src.is_file():
        _fail(f"import: {src}: no such file")
    try:
        path = import_file(fmt, src, out, **({"port": port} if port is not None else {}))
    except ImportFormatError as exc:
        _fail(str(exc))
        return
    typer.echo(f"trace: {path}")


@app.command()
def packetdrill(
    paths: List[Path] = typer.Argument(..., help=".pkt scripts or folders of them"),
    profile: str = typer.Option("linux-6.18", "--profile", "-p"),
    policy: List[str] = typer.Option([], "--policy", help="patch name or FILE.py:Class (repeatable)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run the kernel's packetdrill receive tests against the model (no tun device, no root)."""
    from tcpsim.packetdrill.command import run_paths
    code = run_paths([str(p) for p in paths], profile, list(policy), as_json, typer.echo)
    raise typer.Exit(code)


@app.command()
def claims(
    only: List[str] = typer.Option([], "--only", help="claim key (repeatable)"),
    quick: bool = typer.Option(False, "--quick", help="shorter runs (the death check is skipped)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run the seeds' claims as experiments and print a pass/fail table with the figures."""
    from tcpsim.claims import run_claims
    rows = run_claims(keys=only or None, quick=quick, echo=None if as_json else typer.echo)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    if any(r["result"] != "PASS" for r in rows):
        raise typer.Exit(1)


def main(argv: Optional[List[str]] = None) -> None:
    """Entry point of the console script (`argv`: the arguments, default sys.argv[1:]).

    A patch that raises while a simulation runs is reported in one line naming the patch,
    the decision point and the line; `--debug` (anywhere) shows the traceback instead."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        app(args=[a for a in args if a != "--debug"])
    except USER_ERRORS as exc:  # pragma: no cover - safety net
        typer.echo(f"tcpsim: error: {exc}", err=True)
        sys.exit(2)
    except Exception as exc:
        from tcpsim.profiles import patch_failure   # the error path only
        line = "" if debug else patch_failure(exc)
        if not line:
            raise
        typer.echo(f"tcpsim: error: {line} (--debug shows the traceback)", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
