"""The `tcpsim` command. Thin: parse arguments, call the public API (tcpsim.api) or tcpsim.runner / tcpsim.catalog, print.

Every user mistake ends in one line on stderr naming what to fix and exit status 2 -- never
a traceback.
"""

# No `from __future__ import annotations` here: typer reads every command's signature at
# each start, and string annotations cost it an eval per parameter (~7 ms a start).

import atexit
import json
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from tcpsim.cli_files import FileClash, check_files, command_files, guard_files
from tcpsim.cli_params import plain_params
from tcpsim import interrupt
from tcpsim.core.sysctl import SysctlError
from tcpsim.capture.placement import HELP as PLACEMENT_HELP
from tcpsim.catalog import ProfileError, get_profile
from tcpsim.engines import EngineError
from tcpsim.scenario import Scenario, ScenarioError, builtin_experiments, load_scenario
from tcpsim.sysctl_parse import parse_options as parse_sysctl_options
from tcpsim.workload import describe_timing
from tcpsim.units import parse_duration, parse_size

class _TcpsimGroup(TyperGroup):
    """The top command: the argument parser's own refusals (an unknown option or command, a
    missing argument, `--seed abc`) end in the common one-line `tcpsim: error:` form, exit
    2, instead of click's usage panel -- however the command is run (main(), CliRunner)."""

    def main(self, args=None, prog_name=None, complete_var=None,  # type: ignore[no-untyped-def]
             standalone_mode=True, **extra):
        plain_params(self)                     # no pydantic for plain values (cli_params.py)
        guard_files(self, lambda msg: _fail(msg))   # outputs never clobber inputs (cli_files.py)
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        twice = self._repeated(list(sys.argv[1:] if args is None else args))
        if twice:
            typer.echo(f"tcpsim: error: {twice}", err=True)
            sys.exit(2)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except _CLICK_EXCEPTION as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":    # the help, on stderr
                exc.show()
                sys.exit(exc.exit_code)
            typer.echo(f"tcpsim: error: {_click_error(exc, self._command_of(args))}", err=True)
            sys.exit(exc.exit_code)              # 2 for a usage error, as before
        except typer.Abort:                  # click's form of KeyboardInterrupt
            signame = interrupt.requested() or "SIGINT"
            typer.echo(f"tcpsim: interrupted by {signame}: stopped before anything was kept",
                       err=True)
            sys.exit(interrupt.exit_code(signame))
        sys.exit(rv if isinstance(rv, int) else 0)

    def _repeated(self, args: list[str]) -> str:
        """A refusal if an option that takes one value is given twice (click keeps the last
        without a word): "run: --seed given twice (1, then 2); give it once". Options that
        may repeat (lists, compare's variant options) and flags are not counted."""
        names = self._command_of(args)
        command: Any = self
        for n in names:
            command = command.commands[n]
        if isinstance(command, _SweepGroup):        # `sweep TARGET ...` is `sweep run`
            command, names = command.commands["run"], [*names, "run"]
            args = [*args[:len(names) - 1], "run", *args[len(names) - 1:]]
        if getattr(command, "commands", None) or not names:
            return ""
        single: dict[str, str] = {}
        takes_value: set[str] = set()
        for param in getattr(command, "params", ()):
            opts = [*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())]
            if getattr(param, "param_type_name", "") != "option" or getattr(param, "is_flag", False):
                continue
            takes_value.update(opts)
            if not getattr(param, "multiple", False) and not (names == ["compare"] and
                                                              param.opts[0] in _VARIANT_OPTIONS):
                for o in opts:
                    single[o] = param.opts[0]
        seen: dict[str, str] = {}
        it = iter(args[len(names):])
        for arg in it:
            if arg == "--":
                break
            opt, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            if opt not in takes_value:
                continue
            if not eq:
                value = next(it, "")
            key = single.get(opt)
            if key is None:
                continue
            if key in seen:
                return (f"{' '.join(names)}: {opt} given twice ({seen[key]}, then {value}); "
                        f"give it once")
            seen[key] = value
        return ""

    def _command_of(self, args) -> list[str]:  # type: ignore[no-untyped-def]
        """The (sub)command `args` name, `sweep report` included (for a refusal click raised
        without its context)."""
        names: list[str] = []
        group: Any = self
        for arg in list(sys.argv[1:] if args is None else args):
            commands = getattr(group, "commands", None)
            if not commands or arg not in commands:
                break
            names.append(arg)
            group = commands[arg]
        return names


# click's base exception, whether typer vendors click (0.29: typer._click) or uses it
_CLICK_EXCEPTION = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _click_error(exc: Exception, fallback: list[str]) -> str:
    """click's message on one line, led by the command (`fallback` when click gave no
    context) and ending in where to look:
    "run: no such option: --frob (did you mean --from?); see tcpsim run --help"."""
    msg = " ".join(exc.format_message().split()).rstrip(".")
    msg = msg[:1].lower() + msg[1:]
    msg = re.sub(r"\.? (?:did you mean (.*?)\??|\(possible options: (.*)\))$",
                 lambda m: f" (did you mean {m[1] or m[2]}?)", msg, flags=re.I)
    names, ctx = [], getattr(exc, "ctx", None)
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    names = list(reversed(names)) if names else fallback
    lead = f"{' '.join(names)}: " if names else ""
    return f"{lead}{msg}; see {' '.join(['tcpsim', *names])} --help"


# Help pages in click's plain layout (rich_markup_mode=None): typer's rich panels import
# rich, ~70 ms of every `--help` (docs/performance.md, "Start-up").
HELP_LAYOUT: Any = {"rich_markup_mode": None}
app = typer.Typer(cls=_TcpsimGroup, add_completion=False, no_args_is_help=True,
                  help="Simulate the Linux TCP receive path, per kernel version and patch.",
                  **HELP_LAYOUT)
profiles_app = typer.Typer(help="List kernel profiles and patches.", invoke_without_command=True,
                           **HELP_LAYOUT)
app.add_typer(profiles_app, name="profiles")

USER_ERRORS = (ScenarioError, SysctlError, ProfileError, EngineError, FileClash)
ENGINE_HELP = "python (the reference) or native (Rust; the default where it is built)"
TIMING_HELP = ("application timing: a host preset whose calibrated wakeup latencies the apps "
               "get (dev-vm-loaded, the default; dev-vm-quiet, dev-vm-duty50, dev-vm-spin) or "
               "exact (apps on time); replaces the scenario's [timing] host")


def _timing_option() -> Any:
    """`--timing PRESET|exact` of the commands that run scenario files (run, compare, sweep;
    tcpsim.scenario.set_timing checks it)."""
    return typer.Option(None, "--timing", help=TIMING_HELP)
PACKAGE_OF = {"ip": "iproute2", "tc": "iproute2", "sysctl": "procps"}   # Debian package of a tool


@app.callback()
def _options(debug: bool = typer.Option(
        False, "--debug", help="when a patch fails, show the full traceback instead of one "
                               "line (accepted anywhere on the command line)")) -> None:
    """Simulate the Linux TCP receive path, per kernel version and patch."""


def _fail(msg: str) -> None:
    typer.echo(f"tcpsim: error: {msg}", err=True)
    raise typer.Exit(2)


def _executor_options(jobs: int, executor: str, scheduler: str | None) -> str:
    """--jobs, --executor and --scheduler of `sweep` and `search` checked; the executor
    (a scheduler's address implies dask)."""
    if jobs < 0:
        _fail(f"--jobs {jobs}: use a positive number of workers (0 = one per CPU)")
    if executor not in ("local", "dask"):
        _fail(f"--executor {executor}: use local or dask")
    if scheduler is not None:
        if not scheduler.startswith(("tcp://", "tls://", "ws://", "wss://", "inproc://")):
            _fail(f"--scheduler {scheduler}: give the scheduler's address, e.g. tcp://10.0.0.5:8786")
        return "dask"
    return executor


def _renamed(old_value: Optional[Path], old_name: str, value: Optional[Path],
             name: str) -> Optional[Path]:
    """An output option under its old name (`-o`, which wrote a trace in `run`, a table in
    `sweep` and a page in `compare`): still honoured, with a note naming the new option."""
    if old_value is None:
        return value
    if value is not None:
        _fail(f"{old_name} is the old name of {name}: give {name} only")
    typer.echo(f"tcpsim: note: {old_name} is deprecated here; write {name} {old_value}", err=True)
    return old_value


# Suffixes of files that are not Parquet: a trace (always Parquet) is not written under them.
_NOT_PARQUET = {".csv": "sweep --table", ".json": "run --json", ".html": "report --html",
                ".htm": "report --html", ".txt": "", ".tsv": "", ".toml": "", ".pcap": "run --pcap",
                ".pcapng": "run --pcap"}


def _check_trace_out(option: str, trace: Optional[Path]) -> None:
    """--trace OUT: a Parquet file name (`run -o out.csv` wrote Parquet into a .csv)."""
    if trace is None or trace.suffix.lower() not in _NOT_PARQUET:
        return
    other = _NOT_PARQUET[trace.suffix.lower()]
    also = f" ({other} writes {trace.suffix.lower()})" if other else ""
    _fail(f"{option} {trace}: a trace is a Parquet file; name it {trace.with_suffix('.parquet')}"
          + also)


@app.command()
def run(
    scenario: str = typer.Argument(..., help="scenario TOML file, or the name of a built-in experiment"),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help="kernel profile (tcpsim profiles)"),
    policy: List[str] = typer.Option([], "--policy", help="patch name or FILE.py:Class (repeatable)"),
    sysctl: List[str] = typer.Option([], "--sysctl", "-s", help="NAME=VALUE receiver sysctl (repeatable)"),
    sender_sysctl: List[str] = typer.Option([], "--sender-sysctl", "-S", help="NAME=VALUE sender "
                                            "sysctl, e.g. net.ipv4.tcp_congestion_control=reno "
                                            "(repeatable)"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d", help='override, e.g. "60s"'),
    seed: Optional[int] = typer.Option(None, "--seed"),
    hz: Optional[int] = typer.Option(None, "--hz", help="the kernel's CONFIG_HZ: 100, 250, 300 or 1000 "
                                     "(default: the scenario's hz, else tcpsim's 1 ms clock)"),
    trace: Optional[Path] = typer.Option(None, "--trace", help="write the per-event trace "
                                         "(Parquet: NAME.parquet)"),
    old_out: Optional[Path] = typer.Option(None, "-o", hidden=True, help="old name of --trace"),
    pcap: Optional[Path] = typer.Option(None, "--pcap", help="write the receiver's packets (both "
                                        "directions) as a pcap for Wireshark/tshark"),
    no_skip: bool = typer.Option(False, "--no-skip", help="tick by tick (no time skipping)"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as JSON on stdout"),
    progress: Optional[bool] = typer.Option(None, "--progress/--no-progress", help="progress bar on stderr"),
    engine: Optional[str] = typer.Option(None, "--engine", help=ENGINE_HELP),
    timing: Optional[str] = _timing_option(),
    runs: int = typer.Option(1, "--runs", help="run N seeds (seed, seed+1, ...) and report how "
                             "often each outcome happened and the spread (tcpsim/runs.py)"),
    connections: bool = typer.Option(False, "--connections", help="a host run: add one row per "
                                     "connection to --json (and a table of them)"),
    trace_conns: List[str] = typer.Option([], "--trace-connections", help="a host run with "
                                          "--trace: also write these connections' per-event "
                                          "traces, one file each (HOST.conn-N.parquet): class "
                                          "names and connection numbers, e.g. bad,17 "
                                          "(repeatable)"),
    report_out: Optional[Path] = typer.Option(None, "--report", help="also write the run's HTML "
                                              "report (a host's: sockstat mem against tcp_mem, "
                                              "per class; plotly.js beside it)"),
) -> None:
    """Run one scenario and print its summary, counters and ss-style snapshot; a host file
    ([class.NAME] tables, docs/hosts.md): its host summary and per-class table."""
    from tcpsim.api import run_with
    from tcpsim.runner import RunOptions
    _check_trace_out("-o" if old_out is not None else "--trace", old_out or trace)
    trace = _renamed(old_out, "-o", trace, "--trace")
    from tcpsim.host.scenario import is_host_file
    if is_host_file(scenario):
        _run_host(scenario, profile, policy, sysctl, sender_sysctl, duration, seed, hz, trace,
                  pcap, no_skip, as_json, progress, engine, timing, runs, connections, report_out,
                  trace_conns)
        return
    if trace_conns:
        _fail("--trace-connections: selects a host's connections; this scenario is one "
              "connection (its --trace has its rows)")
    if connections:
        _fail("--connections: per-connection rows are a host run's; this scenario is one "
              "connection (its trace has its rows: --trace)")
    try:
        sc = load_scenario(scenario, timing)
        opts = RunOptions(profile=profile, policies=tuple(policy), sysctl=parse_sysctl_options(sysctl),
                          sender_sysctl=parse_sysctl_options(sender_sysctl, "--sender-sysctl"),
                          duration=parse_duration(duration, "--duration", positive=True) if duration else None,
                          seed=seed, hz=hz, skip=not no_skip, trace=trace, pcap=pcap,
                          progress=sys.stderr.isatty() if progress is None else progress,
                          note=lambda msg: typer.echo(f"tcpsim: note: {msg}", err=True),
                          engine=engine, memory_trace=report_out is not None)
        _check_pcap_out(pcap)
        _check_out(trace, "--trace", "run.parquet")
        _check_out(report_out, "--report", "run.html")
        if report_out is not None and runs != 1:
            _fail("--report: one run's; with --runs, report one seed (--seed N --report ...)")
        with interrupt.stoppable():
            if runs != 1:
                _run_seeds(sc, opts, runs, trace, pcap, as_json)
                return
            result = run_with(sc, opts)
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    except interrupt.Interrupted as exc:      # run --runs, between seeds
        _stopped(exc.signame, "no spread is printed (it needs every seed)")
    cut = result.meta.get("cut_short")
    if report_out is not None:
        result.report(report_out)
    if as_json:
        typer.echo(json.dumps({"scenario": result.scenario, "profile": result.profile,
                               "summary": result.summary, "counters": result.counters,
                               "sender_counters": result.sender_counters, "ss": result.ss, "trace": str(trace) if trace else None,
                               "pcap": str(pcap) if pcap else None,
                               **({"cut_short": cut} if cut else {})},
                              indent=2, sort_keys=True))
    else:
        _print_result(result, trace)
        if pcap:
            typer.echo(f"pcap: {pcap}")
        if report_out is not None:
            typer.echo(f"report: {report_out}")
    if cut:
        kept = ", ".join(k for k, on in ((f"the trace {trace} (valid, marked cut short)", trace),
                                         (f"the pcap {pcap}", pcap), ("the summary above", True))
                         if on)
        _stopped(cut["signal"], f"the run stopped at {cut['at_s']:.6g} of {cut['duration_s']:.6g} "
                 f"simulated s; kept {kept}")


def _stopped(signame: str, what: str) -> None:
    """A command stopped by SIGINT/SIGTERM: one line saying what it kept; exit 128+signal."""
    typer.echo(f"tcpsim: interrupted by {signame}: {what}", err=True)
    raise typer.Exit(interrupt.exit_code(signame))


def _run_host(path: str, profile, policy, sysctl, sender_sysctl, duration, seed, hz, trace,
              pcap, no_skip: bool, as_json: bool, progress, engine, timing, runs: int,
              connections: bool, report_out: Optional[Path] = None,
              trace_conns: Optional[List[str]] = None) -> None:
    """`tcpsim run HOST.toml`: the host's summary (sockstat, nstat, pressure) and per-class
    table (tcpsim/host/outputs.py); --json carries it all."""
    from tcpsim.host.outputs import format_host
    from tcpsim.host.run import load_host_with, run_host
    for flag, given in (("--pcap", pcap), ("--sender-sysctl", sender_sysctl), ("--hz", hz)):
        if given:
            _fail(f"{flag}: not for a host run; set the field in the host file or its classes' "
                  "base scenarios")
    _check_out(trace, "--trace", "host.parquet")
    _check_out(report_out, "--report", "host.html")
    if runs != 1:
        _fail("--runs: run a host's seeds with --seed, or sweep them: tcpsim sweep HOST -x seed=1,2,3")
    if trace_conns and trace is None:
        _fail("--trace-connections: the connections' traces go beside the host's: add "
              "--trace host.parquet")
    sink = plan = None
    if trace is not None:
        from tcpsim.host.traces import ConnectionTraces
        sink = ConnectionTraces(trace)

    def keep_plan(p: Any) -> None:
        nonlocal plan
        plan = p
    try:
        host = load_host_with(
            path, profile=profile, policies=tuple(policy), sysctl=parse_sysctl_options(sysctl),
            duration=parse_duration(duration, "--duration", positive=True) if duration else None,
            seed=seed)
        show = sys.stderr.isatty() if progress is None else progress
        from tcpsim.engine.result import progress_bar
        result = run_host(host, engine=engine, skip=not no_skip, timing=timing,
                          progress=progress_bar(host.duration, show), sink=sink,
                          traced=tuple(trace_conns) if trace_conns else (
                              None if host.trace_connections else ()),
                          plan_ready=keep_plan)
        if show:
            sys.stderr.write("\n")
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    written = []
    if trace is not None:
        from tcpsim.host.outputs import write_host_trace
        written = write_host_trace(result, trace, connections)
        if sink is not None and plan is not None and plan.traced:
            written += sink.close(result, plan)
    if report_out is not None:
        from tcpsim.report.host import host_run, run_label, write_host_report
        write_host_report([host_run(run_label(result.as_json()), result)], report_out)
    if as_json:
        typer.echo(json.dumps(dict(result.as_json(connections), trace=written or None,
                                   report=str(report_out) if report_out else None),
                              indent=2, sort_keys=True))
        return
    for line in format_host(result):
        typer.echo(line)
    if written:
        typer.echo("trace: " + ", ".join(written))
    if report_out is not None:
        typer.echo(f"report: {report_out}")
    if connections:
        typer.echo("connections (index class start_s stop_s read_bytes drops peak_rmem):")
        for f in result.flows:
            c = f.counters
            drops = sum(c.get(k, 0) for k in ("TcpExtTCPRcvQDrop", "TcpExtTCPOFODrop",
                                              "TcpExtTCPZeroWindowDrop", "TcpExtBeyondWindow"))
            typer.echo(f"  {f.index:>6} {result.classes[f.cls]['class']:<12} "
                       f"{f.start / 1e9:8.3f} {f'{f.stop / 1e9:.3f}' if f.stop else '-':>8} "
                       f"{f.read_bytes:>12} {drops:>6} {f.peak_rmem:>10}")


def _run_seeds(sc, opts, runs: int, trace: Optional[Path], pcap: Optional[Path],
               as_json: bool) -> None:
    """`run --runs N`: N seeds, the outcome counts and the spread of the figures."""
    from tcpsim.runs import capture_starts, format_capture_starts, format_spread, run_seeds, spread
    if runs < 1:
        raise ScenarioError(f"--runs {runs}: give a number of runs of at least 1")
    if trace is not None or pcap is not None:
        raise ScenarioError("--runs: --trace and --pcap write one run's files; leave them out "
                            "with --runs (or run one seed with --seed)")
    s = spread(run_seeds(sc, opts, runs))
    starts = capture_starts(sc.as_dict(), s["seeds"])
    if as_json:
        typer.echo(json.dumps({"scenario": sc.name, "profile": opts.profile or sc.profile,
                               "timing": sc.as_dict().get("timing", ""), "spread": s,
                               "capture_starts": starts},
                              indent=2, sort_keys=True))
        return
    for line in format_spread(f"{sc.name} under {opts.profile or sc.profile}", s):
        typer.echo(line)
    timing = describe_timing(sc.as_dict())
    if timing:
        typer.echo(f"  timing: {timing}")
    if starts:
        typer.echo(f"  {format_capture_starts(starts, runs)}")


def _check_pcap_out(pcap: Optional[Path]) -> None:
    """--pcap OUT: a writable file name (checked before the run, not after it)."""
    _check_out(pcap, "--pcap", "run.pcap")


def _check_out(path: Optional[Path], option: str, example: str) -> None:
    """An output file's name given as `option`: not a directory, its folder made (a user
    error naming the option if it cannot be), checked before the work, not after it."""
    if path is None:
        return
    if path.is_dir():
        _fail(f"{option} {path}: is a directory; give a file name such as {example}")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        _fail(f"{option} {path}: {parent} is a file, not a folder")
    if not parent.exists():
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _fail(f"{option} {path}: cannot create its folder ({exc.strerror})")


def _print_result(result, trace: Optional[Path]) -> None:
    s = result.summary
    tick = f" at HZ={s['hz']}" if s.get("hz") else ""
    typer.echo(f"{result.scenario} under {result.profile}{tick}: {s['duration_s']:g} s simulated "
               f"in {s['wall_s']:g} s ({s['events']} events)")
    timing = describe_timing(result.meta.get("scenario", {}))
    if timing:
        typer.echo(f"  timing: {timing}")
    width = max(len(k) for k in s)
    for k, v in s.items():
        if k not in ("duration_s", "wall_s", "events", "hz"):
            typer.echo(f"  {k:<{width}}  {v}")
    for title, counters in (("counters (nstat, non-zero):", result.counters),
                            ("sender counters (nstat, non-zero):", result.sender_counters)):
        typer.echo(title)
        for k, v in counters.items():
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
    from tcpsim import api
    typer.echo("profiles:")
    for name, summary in api.profiles().items():
        typer.echo(f"  {name:<12} {summary}")
    patches = api.patches()
    if patches:
        typer.echo("patches (--policy NAME):")
        for name, summary in patches.items():
            typer.echo(f"  {name:<20} {summary}")


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
    from tcpsim.host.scenario import is_host_file, load_host
    for name in builtin_experiments():
        try:
            if is_host_file(name):
                host = load_host(name)
                typer.echo(f"  {name:<36} (host of {host.connections} connections) "
                           f"{host.description}")
                continue
            sc = load_scenario(name)
            typer.echo(f"  {name:<36} {sc.description}")
        except ScenarioError as exc:
            typer.echo(f"  {name:<36} (invalid: {exc})")


class _SweepGroup(TyperGroup):
    """`tcpsim sweep TARGET ...` runs a sweep (the `run` subcommand); `tcpsim sweep report
    RESULTS` writes its report."""

    def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


sweep_app = typer.Typer(cls=_SweepGroup, no_args_is_help=True,
                        help="Run a study or a scenario over a grid, in parallel, resumably: "
                             "`tcpsim sweep STUDY.toml`, `tcpsim sweep SCENARIO -x KEY=V1,V2` "
                             "(both are `sweep run`); `tcpsim sweep report RESULTS`.",
                        **HELP_LAYOUT)
app.add_typer(sweep_app, name="sweep")


@sweep_app.command("run")
def sweep(
    target: str = typer.Argument(..., help="a study file (TOML with [study]) or a scenario file / "
                                 "built-in experiment with --vary"),
    vary: List[str] = typer.Option([], "--vary", "-x",
                                   help="KEY=V1,V2,... (repeatable; the grid is their product), e.g. "
                                        "link.rtt=1ms,20ms  sysctl.net.ipv4.tcp_adv_win_scale=-2,1  "
                                        "sender.sysctl.net.ipv4.tcp_congestion_control=reno,cubic  "
                                        "profile=linux-6.1,linux-6.18  policy=none,shrink-window"),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help="profile of every point"),
    policy: List[str] = typer.Option([], "--policy", help="patch on every point (repeatable)"),
    sysctl: List[str] = typer.Option([], "--sysctl", "-s", help="NAME=VALUE on every point"),
    sender_sysctl: List[str] = typer.Option([], "--sender-sysctl", "-S",
                                            help="NAME=VALUE sender sysctl on every point"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d", help='every point, e.g. "60s"'),
    jobs: int = typer.Option(0, "--jobs", "-j", help="worker processes (default: one per CPU)"),
    results: Optional[Path] = typer.Option(None, "--results", "-r",
                                           help="results directory, a Parquet dataset "
                                                "(default: sweeps/NAME); a re-run resumes it"),
    fresh: bool = typer.Option(False, "--fresh", help="recompute points already in --results"),
    traces: bool = typer.Option(False, "--traces", help="store each point's trace in RESULTS/traces"),
    executor: str = typer.Option("local", "--executor", "-e", help="local (a process pool) or dask "
                                 "(a LocalCluster of --jobs workers)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="run on an existing Dask "
                                            "cluster, e.g. tcp://10.0.0.5:8786"),
    table: Optional[Path] = typer.Option(None, "--table", help="also export the rows as a .csv "
                                         "or .json table"),
    old_out: Optional[Path] = typer.Option(None, "--out", "-o", hidden=True, help="old name of --table"),
    no_skip: bool = typer.Option(False, "--no-skip", help="tick by tick (no time skipping)"),
    as_json: bool = typer.Option(False, "--json", help="print every point's row as JSON"),
    engine: Optional[str] = typer.Option(None, "--engine", help=ENGINE_HELP),
    timing: Optional[str] = _timing_option(),
) -> None:
    """Run a study or a scenario over a grid of values, in parallel, resumably.

    One row per point is stored in RESULTS as the point finishes; the same command run again
    runs only the points not stored yet."""
    from tcpsim.runner import RunOptions
    from tcpsim.sweeps import Results, parse_axis, run_sweep, table_lines, write_results
    from tcpsim.sweeps.execute import ExecutorError
    from tcpsim.sweeps.progress import Progress
    from tcpsim.sweeps.study import plan_sweep
    if (old_out or table) is not None and (old_out or table).suffix not in (".csv", ".json"):
        _fail(f"{'-o/--out' if old_out else '--table'} {old_out or table}: use a .csv or .json "
              "file name")
    out = _renamed(old_out, "-o/--out", table, "--table")
    executor = _executor_options(jobs, executor, scheduler)
    try:
        base = RunOptions(profile=profile, policies=tuple(policy), sysctl=parse_sysctl_options(sysctl),
                          sender_sysctl=parse_sysctl_options(sender_sysctl, "--sender-sysctl"),
                          duration=parse_duration(duration, "--duration", positive=True) if duration else None,
                          skip=not no_skip, engine=engine)
        plan = plan_sweep(target, [parse_axis(v) for v in vary], base, timing)
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    name, axes, points, metrics, study = plan.name, plan.axes, plan.points, plan.metrics, plan.study
    res = Results(results if results is not None else Path("sweeps") / name)
    res.prepare(axes, points, metrics, name, study.description if study else "",
                study.x if study else "")
    progress = Progress(len(points), 0, enabled=not as_json)
    try:
        with progress, interrupt.signals_interrupt():     # SIGTERM as Ctrl-C
            run_sweep(points, jobs=jobs, results=res, traces=traces, fresh=fresh,
                      executor=executor, scheduler=scheduler, progress=progress)
    except ExecutorError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _stopped(interrupt.requested() or "SIGINT",
                 f"{progress.done} of {len(points)} points stored in {res.root}; run the same "
                 "command again to finish")
    if out is not None:
        write_results(points, out)
    if as_json:
        from tcpsim.sweeps.dataset import row_of
        typer.echo(json.dumps([dict({"point": p.index}, **row_of(p)) for p in points],
                              indent=2, sort_keys=True, default=str))
    else:
        for line in table_lines(points, axes, tuple(metrics)):
            typer.echo(line)
    where = f"results: {res.root}" + (f", {out}" if out else "")
    if not as_json:
        typer.echo(progress.summary(where), err=True)
    if any(p.error for p in points):
        raise typer.Exit(1)


@sweep_app.command("report")
def sweep_report(
    results: Path = typer.Argument(..., help="a results directory written by tcpsim sweep"),
    out: Optional[Path] = typer.Option(None, "--html", "-o", "--out",
                                       help="HTML file (default: RESULTS/report.html)"),
    metric: List[str] = typer.Option([], "--metric", "-m", help="metric to offer (repeatable; "
                                     "default: the study's metrics)"),
    x: Optional[str] = typer.Option(None, "--x", help="the axis of the line chart (default: the study's x)"),
) -> None:
    """Write an interactive HTML page of a sweep's results (opens offline).

    A metric against one axis with a line per combination of the others, a heatmap for two
    axes, the table."""
    from tcpsim.sweeps.report import ReportError, write_report
    try:
        path = write_report(results, out, metrics=metric, x=x)
    except ReportError as exc:
        _fail(str(exc))
        return
    typer.echo(f"report: {path}")


@app.command()
def search(
    target: str = typer.Argument(..., help="a search file (TOML with [search] and [space]) or a "
                                 "shipped search's name (rcvbuf-growth, rpc-admission, "
                                 "sender-stalls)"),
    profile: Optional[str] = typer.Option(None, "--profile", "-p",
                                          help="the profile searched (replaces the file's)"),
    policy: List[str] = typer.Option([], "--policy", help="patch on the searched side "
                                     "(repeatable; added to the file's)"),
    vs: Optional[str] = typer.Option(None, "--vs", help="PROFILE to compare against: the "
                                     "objective becomes (searched side) - (this side)"),
    vs_policy: List[str] = typer.Option([], "--vs-policy", help="patch on the --vs side (repeatable)"),
    budget: Optional[int] = typer.Option(None, "--budget", "-n", help="workloads to evaluate"),
    seed: Optional[int] = typer.Option(None, "--seed", help="the optimiser's seed"),
    optimiser: Optional[str] = typer.Option(None, "--optimiser", help="tpe (Optuna, batches in "
                                            "parallel; the default), random, or hypothesis "
                                            "(targeted property search, shrunk; one process)"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d",
                                           help="every evaluation's simulated time"),
    threshold: Optional[float] = typer.Option(None, "--threshold",
                                              help="an objective at or above it is a finding"),
    objective: Optional[str] = typer.Option(None, "--objective", help="search the same space "
                                            "for another objective, e.g. time_stalled"),
    jobs: int = typer.Option(0, "--jobs", "-j", help="worker processes (default: one per CPU)"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="results directory (default "
                                       "searches/NAME); a re-run resumes it"),
    fresh: bool = typer.Option(False, "--fresh", help="forget the runs stored in --out"),
    no_minimise: bool = typer.Option(False, "--no-minimise", help="report the best, do not "
                                     "minimise it or write the finding"),
    executor: str = typer.Option("local", "--executor", "-e", help="local (a process pool) or "
                                 "dask (a LocalCluster of --jobs workers)"),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help="an existing Dask "
                                            "cluster, e.g. tcp://10.0.0.5:8786"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Search the workloads of a declared space for the one that breaks a policy.

    Prints the best objective so far as it goes; a finding is minimised and written as a
    scenario file with a comparison beside it (OUT/finding/). The same command run again
    resumes from the runs stored in OUT; the same seed gives the same search."""
    from tcpsim import searching
    from tcpsim.sweeps.execute import ExecutorError
    executor = _executor_options(jobs, executor, scheduler)
    if budget is not None and budget < 1:
        _fail(f"--budget {budget}: use a positive number of workloads")
    if seed is not None and seed < 0:
        _fail(f"--seed {seed}: use a number of at least 0")
    try:
        spec = searching.with_overrides(
            searching.load_search(target), profile=profile, policy=tuple(policy), vs_profile=vs,
            vs_policy=tuple(vs_policy), budget=budget, seed=seed, threshold=threshold,
            duration=parse_duration(duration, "--duration", positive=True) if duration else None,
            optimiser=optimiser, objective=objective)
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    root = out if out is not None else Path("searches") / spec.name

    def progress(done: int, total: int, best: Any) -> None:
        if as_json:
            return
        from tcpsim.searching.finding import pretty_duration
        shown = "none yet" if best is None or best.objective is None else (
            f"{best.objective:.4g}  (" + ", ".join(f"{k}={pretty_duration(v)}"
                                                   for k, v in best.values.items()) + ")")
        typer.echo(f"search {spec.name}: {done}/{total} workloads, best {spec.objective} "
                   f"{shown}", err=True)
    try:
        result = searching.run(spec, root, jobs=jobs, executor=executor, scheduler=scheduler,
                               fresh=fresh, minimise=not no_minimise, progress=progress)
    except ExecutorError as exc:
        _fail(str(exc))
        return
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    except KeyboardInterrupt:           # SIGINT, or SIGTERM (main: interrupt.signals_interrupt)
        _stopped(interrupt.requested() or "SIGINT",
                 f"the runs so far are stored in {root / 'runs'}; run the same command again "
                 "to resume")
        return
    record = searching.summary(result)
    if as_json:
        typer.echo(json.dumps(record, indent=2, sort_keys=True, default=str))
        return
    for line in searching.report_lines(result, root):
        typer.echo(line)


# how a benchmark prints its rows as it goes (None: quiet, the rows given as JSON at the end)
Echo = Optional[Callable[[str], None]]


@app.command()
def bench(
    quick: bool = typer.Option(False, "--quick", help="short durations (a smoke run)"),
    repeat: int = typer.Option(1, "--repeat", "-r", help="repetitions per case (median reported)"),
    as_json: bool = typer.Option(False, "--json"),
    socket: bool = typer.Option(False, "--socket",
                                help="only the socket alone, per engine (us per segment)"),
    engine: Optional[str] = typer.Option(None, "--engine", help="one engine only (default: both, "
                                         "and their ratio)"),
    hosts: bool = typer.Option(False, "--hosts", help="hosts of 1 000 and 10 000 connections of "
                               "the seed mix (--quick: 200 and 1 000), beside the single-"
                               "connection cases (docs/hosts.md)"),
    search_only: bool = typer.Option(False, "--search", help="only the search: evaluations per "
                                     "second, local pool and 2-worker Dask"),
    ns3_only: bool = typer.Option(False, "--ns3", help="only ns-3 beside tcpsim on the same "
                                  "cases (whole processes; an ns-3 build: $TCPSIM_NS3 or "
                                  "`pip install ns3`). Without it, a full run adds these rows "
                                  "when ns-3 is present"),
    against: Optional[str] = typer.Option(None, "--against", metavar="DIR", help="only the "
                                          "cases as `tcpsim run` processes (default timing, "
                                          "trace on and off), this checkout and the tcpsim "
                                          "checkout DIR alternating run by run: CPU ratios "
                                          "measured under the same load"),
    cases: str = typer.Option("abcd", "--cases", help="with --against: which cases (letters)"),
    pcap_only: bool = typer.Option(False, "--pcap", help="only the capture: import plus a fitted "
                                   "replay of a 5-second 1 Gbit/s capture (--quick: 1 s)"),
) -> None:
    """Benchmark the simulator: packets/s, simulated s per wall s, peak RSS, search evaluations/s,
    import and fit of a capture."""
    from tcpsim.bench_ns3 import Ns3Error
    reps = max(1, repeat)

    def pcap(echo: Echo) -> Any:
        from tcpsim.bench_pcap import pcap_benchmark
        return pcap_benchmark(seconds=1.0 if quick else 5.0, echo=echo)

    def ns3(echo: Echo) -> Any:
        from tcpsim.bench_ns3 import ns3_rows
        return ns3_rows(quick, reps, echo=echo)

    def against_rows(echo: Echo) -> Any:
        from tcpsim.bench import against as bench_against
        return bench_against(against, repeat=reps, quick=quick, engine=engine or "native",
                             cases=cases, echo=echo)

    def search(echo: Echo) -> Any:
        from tcpsim.bench import search_rows
        return search_rows(quick, echo=echo)

    def host_rows(echo: Echo) -> Any:
        from tcpsim.bench_host import host_benchmarks
        return host_benchmarks(quick=quick, echo=echo)

    def socket_rows(echo: Echo) -> Any:
        from tcpsim.bench_socket import socket_benchmark
        return socket_benchmark(2_000 if quick else 20_000, repeat=reps, echo=echo)

    def everything(echo: Echo) -> Any:
        from tcpsim.bench import run_benchmarks
        from tcpsim.bench_ns3 import find_ns3, ns3_rows
        rows = run_benchmarks(quick=quick, repeat=repeat, echo=echo, engine=engine)
        if find_ns3() is not None:              # ns-3's rows beside tcpsim's when it is there
            rows += ns3_rows(quick, reps, echo=echo)
        return rows

    # (chosen, rows, the errors that are the user's: one line each)
    user: tuple[type[Exception], ...] = (EngineError, Ns3Error)
    modes: list[tuple[bool, Callable[[Echo], Any], tuple[type[Exception], ...]]] = [
        (pcap_only, pcap, user), (ns3_only, ns3, user),
        (against is not None, against_rows, (*user, ValueError, RuntimeError)),
        (search_only, search, user), (hosts, host_rows, user), (socket, socket_rows, user)]
    make, errors = next(((fn, err) for chosen, fn, err in modes if chosen), (everything, user))
    try:
        rows = make(None if as_json else typer.echo)
    except errors as exc:
        _fail(str(exc))
        return
    if as_json:
        typer.echo(json.dumps(rows, indent=2))


@dataclass
class Variant:
    """One side of a comparison: a profile with its own patches, sysctls and scenario
    settings (`--set receiver.device.rx_copybreak=256`)."""

    profile: str
    policies: list = field(default_factory=list)
    sysctl: list = field(default_factory=list)
    sets: list = field(default_factory=list)

    def label(self) -> str:
        extra = [*self.policies, *self.sysctl, *self.sets]
        return self.profile + (" + " + " ".join(extra) if extra else "")


def _parse_variants(args: list[str], minimum: int = 2) -> list[Variant]:
    """--profile A [--policy X] [--sysctl S] [--set K=V] --vs B [--policy Y] ... (options
    bind to the profile before them)."""
    variants: list[Variant] = []
    it = iter(args)
    for arg in it:
        if arg not in (*_VARIANT_OPTIONS, "--set"):
            _fail(f"{arg}: {_unknown_in_compare(arg)}")
        value = next(it, None)
        if value is None:
            _fail(f"{arg}: missing its value; see tcpsim compare --help")
        if arg in ("--profile", "-p", "--vs"):
            variants.append(Variant(value))
        elif arg in ("--policy", "--sysctl", "-s", "--set"):
            if not variants:
                _fail(f"{arg} {value}: put it after the --profile or --vs it applies to")
            v = variants[-1]
            {"--policy": v.policies, "--set": v.sets}.get(arg, v.sysctl).append(value)
    if len(variants) < minimum:
        _fail("compare needs at least two variants: --profile A ... --vs B ..."
              if minimum > 1 else "compare needs a variant to run: --profile A ...")
    labels = [v.label() for v in variants]
    for i, label in enumerate(labels):
        if label in labels[:i]:
            _fail(f"--vs {label}: the same variant is given twice; give each a different "
                  "profile, --policy or --sysctl")
    return variants


_VARIANT_OPTIONS = ("--profile", "-p", "--vs", "--policy", "--sysctl", "-s", "--set")


def _unknown_in_compare(arg: str) -> str:
    """What is wrong with `arg` among compare's variant options, and the fix."""
    what = "unknown option" if arg.startswith("-") else "unexpected argument (one scenario, first)"
    return (f"{what}; use tcpsim compare SCENARIO --profile A [--policy X] [--sysctl N=V] "
            "[--set FIELD=V] --vs B ... (see tcpsim compare --help)")


class _CompareCommand(TyperCommand):
    """`tcpsim compare`: --profile/--vs/--policy/--sysctl bind to the variant before them, so
    they are taken out of the arguments in their order (ctx.meta["variants"]) before the
    rest is parsed; they are declared as options only for --help."""

    def parse_args(self, ctx, args):  # type: ignore[no-untyped-def]
        variants: list[str] = []
        rest: list[str] = []
        it = iter(args)
        for arg in it:
            name, eq, value = arg.partition("=")
            if arg in _VARIANT_OPTIONS:
                variants.append(arg)
                nxt = next(it, None)
                if nxt is not None:
                    variants.append(nxt)
            elif eq and name in _VARIANT_OPTIONS and name.startswith("--"):
                variants += [name, value]
            else:
                rest.append(arg)
        ctx.meta["variants"] = variants
        return super().parse_args(ctx, rest)


@app.command(cls=_CompareCommand,
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def compare(
    ctx: typer.Context,
    scenario: str = typer.Argument(..., help="scenario TOML file or built-in experiment"),
    html: Optional[Path] = typer.Option(None, "--html", help="HTML report (default "
                                        "compare-NAME.html)"),
    old_out: Optional[Path] = typer.Option(None, "--out", "-o", hidden=True, help="old name of --html"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d"),
    as_json: bool = typer.Option(False, "--json", help="print the comparison table as JSON"),
    hz: Optional[int] = typer.Option(None, "--hz", help="the kernel's CONFIG_HZ for every variant"),
    pcap: Optional[Path] = typer.Option(None, "--pcap", help="write each variant's packets as a "
                                        "pcap: OUT-1-LABEL.pcap, OUT-2-LABEL.pcap, ..."),
    trace: List[Path] = typer.Option([], "--trace", help="a recorded trace shown as one more "
                                     "side, first (tcpsim import pcap, tcpsim capture)"),
    _profile: Optional[str] = typer.Option(None, "--profile", "-p", help="the first side's kernel "
                                           "profile (tcpsim profiles)"),
    _vs: List[str] = typer.Option([], "--vs", help="PROFILE of one more side (repeatable)"),
    _policy: List[str] = typer.Option([], "--policy", help="patch name or FILE.py:Class on the "
                                      "--profile or --vs before it (repeatable)"),
    _sysctl: List[str] = typer.Option([], "--sysctl", "-s", help="NAME=VALUE receiver sysctl on "
                                      "the --profile or --vs before it (repeatable)"),
    engine: Optional[str] = typer.Option(None, "--engine", help=ENGINE_HELP),
    n_runs: int = typer.Option(1, "--runs", help="also run each side over N seeds and show how "
                               "often each outcome happened and the spread (tcpsim/runs.py)"),
    timing: Optional[str] = _timing_option(),
) -> None:
    """Run one workload under several profiles/patches; write a side-by-side HTML report.

    Example: tcpsim compare seed-unbounded-growth --profile linux-6.1 --vs linux-6.1
    --policy shrink-window
    """
    from tcpsim import api
    from tcpsim.progress import StepProgress
    from tcpsim.report import format_table, table_json
    from tcpsim.runner import RunOptions
    if scenario.startswith("-"):        # an unknown option stood where the scenario goes
        _fail(f"{scenario}: {_unknown_in_compare(scenario)}")
    out = _renamed(old_out, "-o/--out", html, "--html")
    variants = _parse_variants([*ctx.meta.get("variants", ()), *ctx.args],
                               minimum=1 if trace else 2)
    from tcpsim.host.scenario import is_host_file
    if is_host_file(scenario):
        for flag, given in (("--pcap", pcap), ("--trace", trace), ("--hz", hz),
                            ("--runs", n_runs != 1)):
            if given:
                _fail(f"{flag}: not for a host comparison; compare a host's seeds with tcpsim "
                      "sweep HOST -x seed=1,2,3" if flag == "--runs" else
                      f"{flag}: not for a host comparison; set it in the host file")
        _compare_hosts(scenario, variants, out, duration, as_json, engine, timing)
        return
    try:
        sc = load_scenario(scenario, timing)
        dur = parse_duration(duration, "--duration", positive=True) if duration else None
        runs = _recorded_runs(trace)
        _check_pcap_out(pcap)
        _check_out(out, "--html", "compare.html")
        pcaps = []
        if pcap is not None:
            from tcpsim.pcap.export import variant_path
            check_files(command_files(("compare",), {"scenario": scenario, "trace": trace})[0],
                        [(f"--pcap {pcap} (side {i})", variant_path(pcap, v.label(), i))
                         for i, v in enumerate(variants, start=1)])
        steps = StepProgress("compare")
        stopped: Optional[str] = None
        with interrupt.stoppable():
            for i, v in enumerate(variants, start=1):
                steps.start(i, len(variants), v.label())
                out_pcap = None
                if pcap is not None:
                    from tcpsim.pcap.export import variant_path
                    out_pcap = variant_path(pcap, v.label(), i)
                    pcaps.append(out_pcap)
                opts = RunOptions(profile=v.profile, policies=tuple(v.policies),
                                  sysctl=parse_sysctl_options(v.sysctl), duration=dur, hz=hz,
                                  pcap=out_pcap, memory_trace=True, engine=engine)
                side = api.run_with(with_settings(scenario, v.sets, timing) if v.sets else sc,
                                    opts)
                if side.meta.get("cut_short"):        # a stop: the sides run whole are kept
                    stopped = side.meta["cut_short"]["signal"]
                    break
                runs[v.label()] = side
            try:
                spreads = {} if stopped else _variant_spreads(scenario, sc, variants, n_runs,
                                                              dur, hz, engine, timing)
            except interrupt.Interrupted as exc:
                stopped, spreads = exc.signame, {}
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    comparison = api.Comparison(runs)
    target = out or Path(f"compare-{sc.name}.html")
    if stopped:
        _compare_stopped(stopped, comparison, target, len(runs), len(variants), pcaps)
    comparison.report(target)
    rows = comparison.rows
    if as_json and spreads:
        typer.echo(json.dumps({"table": json.loads(table_json(rows)), "spread": spreads},
                              indent=2, sort_keys=True))
        return
    typer.echo(table_json(rows) if as_json else format_table(rows))
    if not as_json:
        from tcpsim.runs import format_spread
        for label, s in spreads.items():
            for line in format_spread(label, s):
                typer.echo(line)
        typer.echo(f"report: {target}")
        for p in pcaps:
            typer.echo(f"pcap: {p}")


def _compare_hosts(path: str, variants: list, out: Optional[Path], duration: Optional[str],
                   as_json: bool, engine: Optional[str], timing: Optional[str]) -> None:
    """`tcpsim compare HOST --profile A ... --vs B ...`: the host under each variant, one
    page (tcpsim/report/host.py) and the table of the host's and each class's numbers."""
    from tcpsim.host.run import load_host_with, run_host
    from tcpsim.progress import StepProgress
    from tcpsim.report import format_table, table_json
    from tcpsim.report.host import host_rows, host_run, write_host_report
    _check_out(out, "--html", "compare.html")
    runs = []
    try:
        dur = parse_duration(duration, "--duration", positive=True) if duration else None
        steps = StepProgress("compare")
        with interrupt.stoppable():
            for i, v in enumerate(variants, start=1):
                steps.start(i, len(variants), v.label())
                sets = tuple(_setting(x) for x in v.sets)
                host = load_host_with(path, profile=v.profile, policies=tuple(v.policies),
                                      sysctl=parse_sysctl_options(v.sysctl), duration=dur,
                                      sets=sets)
                runs.append(host_run(v.label(), run_host(host, engine=engine, timing=timing)))
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    except interrupt.Interrupted as exc:
        _stopped(exc.signame, f"{len(runs)} of {len(variants)} sides ran whole; no report "
                 "written (run them one by one: tcpsim run HOST --report)")
    target = out or Path(f"compare-{runs[0].name}.html")
    write_host_report(runs, target)
    rows = host_rows(runs)
    typer.echo(table_json(rows) if as_json else format_table(rows))
    if not as_json:
        typer.echo(f"report: {target}")


def _setting(text: str) -> tuple[str, Any]:
    """--set FIELD=VALUE of a host side, as a sweep axis gives it (tcpsim/host/run.py
    host_with): VALUE read as TOML where it parses (numbers, lists, booleans), else text."""
    import tomllib
    name, eq, value = text.partition("=")
    if not eq or not name.strip():
        raise ScenarioError(f"--set {text}: expected FIELD=VALUE, e.g. class.bad.count=20")
    try:
        parsed: Any = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value
    return name.strip(), parsed


def _compare_stopped(signame: str, comparison: Any, target: Path, done: int, total: int,
                     pcaps: list) -> None:
    """compare stopped by a signal: the sides run whole, in the table and the report."""
    from tcpsim.report import format_table
    kept = []
    if comparison.runs:
        comparison.report(target)
        typer.echo(format_table(comparison.rows))
        kept.append(f"the table above and the report {target} of those")
    if pcaps:
        kept.append(f"the pcaps {', '.join(map(str, pcaps))} (the last cut short)")
    _stopped(signame, f"{done} of {total} sides ran whole; "
             + ("kept " + "; ".join(kept) if kept else "nothing kept"))


def _variant_spreads(scenario: str, sc: Scenario, variants: list, n_runs: int,
                     dur: Optional[int], hz: Optional[int], engine: Optional[str],
                     timing: Optional[str] = None) -> dict:
    """compare --runs N: {side label: spread over N seeds} ({} for one run)."""
    from tcpsim.runner import RunOptions
    from tcpsim.runs import run_seeds, spread
    if n_runs < 1:
        raise ScenarioError(f"--runs {n_runs}: give a number of runs of at least 1")
    if n_runs == 1:
        return {}
    out = {}
    for v in variants:
        opts = RunOptions(profile=v.profile, policies=tuple(v.policies),
                          sysctl=parse_sysctl_options(v.sysctl), duration=dur, hz=hz,
                          engine=engine)
        out[v.label()] = spread(run_seeds(with_settings(scenario, v.sets, timing) if v.sets else sc,
                                          opts, n_runs))
    return out


def with_settings(scenario: str, sets: list[str], timing: Optional[str] = None) -> Scenario:
    """The scenario file with `FIELD=VALUE` settings applied to its TOML document (a dotted
    path of any depth, e.g. receiver.device.rx_copybreak=256; VALUE an integer, true/false,
    or text), validated again: errors name the field as the file does. `timing`: --timing,
    before the settings (a `--set timing.host=...` wins)."""
    from tcpsim.scenario import apply_settings, read_scenario_file, scenario_from_dict, set_timing
    raw, source = read_scenario_file(scenario)
    if timing is not None:
        set_timing(raw, timing)
    apply_settings(raw, sets)
    try:
        return scenario_from_dict(raw, source=source)
    except ScenarioError as exc:
        raise ScenarioError(f"--set {' '.join(sets)}: {exc}") from None


def _recorded_runs(paths: List[Path]) -> dict:
    """compare --trace FILE: {label: tcpsim.api.Run} of each recorded trace."""
    from tcpsim.api import recorded_run
    from tcpsim.validate.trace import TraceFileError, load
    runs = {}
    for p in paths:
        from tcpsim.report.host import host_file_kind
        if host_file_kind(p) is not None:
            _fail(f"--trace {p}: a host run's, not a connection's trace; tcpsim report {p} "
                  "writes its page, tcpsim compare HOST --profile A --vs B compares hosts, and "
                  "--trace-connections writes connections' traces to compare")
        try:
            columns, meta = load(p)
        except TraceFileError as exc:
            _fail(f"--trace {exc}")
        label = f"{p.stem} ({meta.get('source') or 'trace'})"
        if label in runs:
            _fail(f"--trace {p}: given twice")
        runs[label] = recorded_run(label, columns, meta)
    return runs


@app.command()
def report(trace: Path = typer.Argument(..., help="a trace written by tcpsim run --trace or capture"),
           out: Optional[Path] = typer.Option(None, "--html", "-o", "--out",
                                              help="HTML file (default: TRACE with .html)")) -> None:
    """Write the interactive HTML report of one trace."""
    from tcpsim import api
    from tcpsim.trace.unreadable import missing_file, reason
    if not trace.is_file():
        _fail(f"{trace}: {missing_file(trace, 'no such trace file')}")
    _check_out(out, "--out", "report.html")
    from tcpsim.report.host import host_file_kind
    kind = host_file_kind(trace)
    if kind == "connections":
        host = trace.with_name(trace.name.removesuffix(".connections.parquet") + ".parquet")
        _fail(f"{trace}: a host run's table of its connections (--connections), not a trace; "
              f"the host's report is tcpsim report {host}, a connection's needs its trace "
              "(tcpsim run HOST --trace ... --trace-connections N)")
    if kind == "trace":
        from tcpsim.report.host import host_doc, host_run, run_label, write_host_report
        doc = host_doc(trace)
        typer.echo(f"report: {write_host_report([host_run(run_label(doc), doc)], out or trace.with_suffix('.html'))}")
        return
    try:
        path = api.load_trace(trace).report(out or trace.with_suffix(".html"))
    except (OSError, ValueError) as exc:
        why = exc.reason if isinstance(exc, api.TraceFileError) else reason(trace, exc)
        _fail(f"{trace}: not a readable tcpsim trace ({why})")
        return
    typer.echo(f"report: {path}")


@app.command()
def capture(
    scenario: str = typer.Argument(..., help="scenario TOML file or built-in experiment"),
    out: Path = typer.Option(Path("captures"), "--out", "-o", help="output folder"),
    duration: Optional[str] = typer.Option(None, "--duration", "-d"),
    no_bpftrace: bool = typer.Option(False, "--no-bpftrace", help="wire, samples and counters only"),
    tbf_burst: Optional[str] = typer.Option(None, "--tbf-burst",
                                            help="token bucket burst, e.g. 25000 or 32KiB "
                                                 "(needs a link.rate)"),
    tbf_limit: Optional[str] = typer.Option(None, "--tbf-limit",
                                            help="token bucket queue limit in bytes "
                                                 "(default: link.queue_limit full frames)"),
    cpu: int = typer.Option(0, "--cpu", help=PLACEMENT_HELP["cpu"]),
    reader_cpu: int = typer.Option(-1, "--reader-cpu", help=PLACEMENT_HELP["reader_cpu"]),
    rt: bool = typer.Option(False, "--rt", help=PLACEMENT_HELP["rt"]),
    host_load: Optional[str] = typer.Option(
        None, "--host-load", help="competing processes on that CPU for the whole capture: NxB/P "
                                  "= N processes busy B ms of every P ms, e.g. 1x5/10"),
) -> None:
    """Run the scenario over the real kernel (root; namespaces + veth) and record a trace."""
    import os

    from tcpsim.capture.hostload import parse_host_load
    try:
        load = parse_host_load(host_load) if host_load is not None else None
    except ValueError as exc:
        _fail(f"--host-load: {exc}")
    from tcpsim.capture.placement import Placement, placement_error
    if error := placement_error(Placement(cpu, reader_cpu, rt), os.cpu_count() or 1):
        _fail(error)
    if os.geteuid() != 0:
        _fail("capture needs root (network namespaces, tracepoints): run it with sudo")
    from tcpsim.capture.capture import capture as run_capture
    from tcpsim.capture.netns import missing_tools
    from tcpsim.capture.probe import available as bpf_available
    if missing := missing_tools():
        _fail(f"capture needs {', '.join(missing)} on PATH (apt-get install "
              f"{' '.join(PACKAGE_OF.get(t, t) for t in missing)})")
    if not no_bpftrace and not bpf_available():
        typer.echo("tcpsim: note: bpftrace is not on PATH: the trace gets the wire, samples and "
                   "counters but no per-segment kernel state (apt-get install bpftrace, or "
                   "pass --no-bpftrace)", err=True)
    try:
        sc = load_scenario(scenario)
        dur = parse_duration(duration, "--duration", positive=True) / 1e9 if duration else None
        burst = parse_size(tbf_burst, "--tbf-burst") if tbf_burst is not None else 0
        limit = parse_size(tbf_limit, "--tbf-limit") if tbf_limit is not None else 0
        for opt, given, value in (("--tbf-burst", tbf_burst, burst), ("--tbf-limit", tbf_limit, limit)):
            if given is not None and value <= 0:
                _fail(f"{opt}: must be at least one byte, got {given!r}")
        if (burst or limit) and not sc.link.rate_bps:
            _fail("--tbf-burst/--tbf-limit: the scenario has no [link] rate, so there is no "
                  "token bucket; give the link a rate")
        path = run_capture(sc.source or scenario, out, duration_s=dur, use_bpftrace=not no_bpftrace,
                           cpu=cpu, tbf_burst=burst, tbf_limit=limit, host_load=load,
                           reader_cpu=reader_cpu, rt=rt)
    except USER_ERRORS as exc:
        _fail(str(exc))
        return
    typer.echo(f"trace: {path}")


@app.command()
def validate(
    traces: List[Path] = typer.Argument(..., help="kernel traces (tcpsim capture) or folders"),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help="default: the capture's kernel"),
    policy: List[str] = typer.Option([], "--policy"),
    until: Optional[str] = typer.Option(None, "--until", help='compare only the first part, '
                                        'e.g. "2s" or 2 (seconds)'),
    html: Optional[Path] = typer.Option(None, "--html", help="kernel-vs-model overlay page"),
    min_ack_match: Optional[float] = typer.Option(None, "--min-ack-match", help="fraction, e.g. 0.95"),
    max_final_error: Optional[float] = typer.Option(None, "--max-final-error"),
    max_peak_error: Optional[float] = typer.Option(None, "--max-peak-error"),
    hz: Optional[int] = typer.Option(None, "--hz", help="replay at this CONFIG_HZ (default: the "
                                     "capture's, from its metadata or manifest.json)"),
    as_json: bool = typer.Option(False, "--json"),
    engine: Optional[str] = typer.Option(None, "--engine", help=ENGINE_HELP),
    plain: bool = typer.Option(False, "--plain", help="run each capture's own scenario as a plain "
                               "scenario over --runs seeds and compare the outcome distribution "
                               "with all its captures (docs/validation.md)"),
    runs: Optional[int] = typer.Option(None, "--runs", help="--plain: seeds to run (default 10)"),
    host: Optional[str] = typer.Option(None, "--host", help="--plain: the [timing] host preset "
                                       "(default: the fixture's, where its manifest names one)"),
    seed: Optional[int] = typer.Option(None, "--seed", help="--plain: first seed (default: the "
                                       "scenario's)"),
    sets: List[str] = typer.Option([], "--set", help="--plain: FIELD=VALUE on the plain scenario, "
                                   "e.g. reader.latency=periodic_reader_blocks (repeatable)"),
    require: List[str] = typer.Option([], "--require-in-range", help="--plain: fail when a "
                                      "capture's FIGURE lies outside the model's range "
                                      "(repeatable)"),
) -> None:
    """Replay a kernel trace's workload in the model and score the agreement (--plain: run
    its scenario over N seeds and compare outcome distributions). Host captures
    (tcpsim.capture.host) are scored as hosts: pressure onset, peak sockstat mem, pressure
    entries, delivered bytes per class."""
    from dataclasses import replace as dc_replace

    from tcpsim.validate.host import host_captures, validate_hosts
    hosts = host_captures(traces)
    if hosts is not None:
        raise typer.Exit(0 if validate_hosts(hosts, engine, profile, as_json) else 1)

    from tcpsim.validate import run_validate
    from tcpsim.validate.scores import Thresholds
    from tcpsim.validate.plain import mixed_options
    mixed = mixed_options(plain, {"--until": until, "--html": html, "--min-ack-match": min_ack_match,
                                  "--max-final-error": max_final_error,
                                  "--max-peak-error": max_peak_error},
                          {"--runs": runs, "--host": host, "--seed": seed, "--set": sets,
                           "--require-in-range": require})
    if mixed:
        _fail(mixed)
    if plain:
        _validate_plain(traces, runs, profile, tuple(policy), host, tuple(sets), hz, engine, seed,
                        tuple(require), as_json)
    th = Thresholds()
    for name, value in (("min_ack_match", min_ack_match), ("max_final_error", max_final_error),
                        ("max_peak_error", max_peak_error)):
        if value is not None:
            th = dc_replace(th, **{name: value})
    try:
        until_s = parse_duration(until, "--until", positive=True) / 1e9 if until else None
        _check_engine(engine)
    except (ScenarioError, EngineError) as exc:
        _fail(str(exc))
        return
    try:
        with interrupt.stoppable():
            code = run_validate([str(t) for t in traces], profile=profile, thresholds=th,
                                html_out=str(html) if html else None, as_json=as_json,
                                echo=typer.echo,
                                error=lambda msg: typer.echo(f"tcpsim: error: {msg}", err=True),
                                until_s=until_s, policies=tuple(policy), hz=hz, engine=engine)
    except interrupt.Interrupted as exc:
        _stopped(exc.signame, exc.kept)
    raise typer.Exit(code)


def _validate_plain(traces: List[Path], runs: Optional[int], profile: Optional[str],
                    policies: tuple, host: Optional[str], sets: tuple, hz: Optional[int],
                    engine: Optional[str], seed: Optional[int], required: tuple,
                    as_json: bool) -> None:
    """`validate --plain` (tcpsim/validate/plain.py); exits with its code."""
    from tcpsim.validate.plain import DEFAULT_RUNS, run_plain
    try:
        _check_engine(engine)
    except EngineError as exc:
        _fail(str(exc))
        return
    try:
        with interrupt.stoppable():
            code = run_plain([str(t) for t in traces], DEFAULT_RUNS if runs is None else runs,
                             as_json, echo=typer.echo,
                             error=lambda msg: typer.echo(f"tcpsim: error: {msg}", err=True),
                             profile=profile, policies=policies, host=host, sets=sets, hz=hz,
                             engine=engine, seed=seed, required=required)
    except interrupt.Interrupted as exc:
        _stopped(exc.signame, "nothing kept (the outcome distribution needs every seed)")
    raise typer.Exit(code)


# The options of the commands that read a capture (`import pcap`, `replay`), defined once.
_PCAP_HELP = {
    "--flow": "the connection, by an endpoint (PORT or ADDR:PORT; run without it to list them)",
    "--delay": "one-way link delay (default: half the handshake's round trip)",
    "--reader": "periodic:1B/1ms | oscillating:4096B/2ms,4096B/20ms,250ms | blocking | never "
                "(default: inferred from the window)",
    "--rcvbuf": "the receiver's SO_RCVBUF, if its application set one (the wire does not show it)",
}


_SPLIT_GSO_HELP = ("cut GSO/GRO super-segments (data larger than the MSS) into MSS-sized ones "
                   "instead of refusing the capture (approximate; see docs/pcap.md)")


def _pcap_option(flag: str, prefix: str = "") -> Any:
    """The option `flag` of a command that reads a capture (default None); `prefix` heads
    its help in a command that reads other formats too ("pcap: " in `import`)."""
    return typer.Option(None, flag, help=prefix + _PCAP_HELP[flag])


@app.command(name="import")
def import_trace(
    fmt: str = typer.Argument(..., help="cloudflare-csv | ss | rcvbuf-grow | pcap"),
    src: Path = typer.Argument(..., help="the other tool's output (text), or a pcap/pcapng file"),
    out: Path = typer.Option(..., "--out", "-o", help="Parquet trace to write"),
    port: Optional[int] = typer.Option(None, "--port", help="the receiver's local port"),
    flow: Optional[str] = _pcap_option("--flow", "pcap: "),
    wscale: Optional[str] = typer.Option(None, "--wscale", help="pcap without the handshake: the "
                                         "receiver's window scale [,the sender's]"),
    delay: Optional[str] = _pcap_option("--delay", "pcap: "),
    reader: Optional[str] = _pcap_option("--reader", "pcap: "),
    workload: Optional[Path] = typer.Option(None, "--workload", help="pcap: the workload scenario "
                                            "to write (default: OUT with .toml)"),
    rcvbuf: Optional[str] = _pcap_option("--rcvbuf", "pcap: "),
    split_gso: bool = typer.Option(False, "--split-gso", help="pcap: " + _SPLIT_GSO_HELP),
) -> None:
    """Convert another tool's trace (Cloudflare's bpftrace CSV, ss -tmi snapshots,
    tcp:tcp_rcvbuf_grow lines, a tcpdump/Wireshark capture) into a tcpsim trace for
    `tcpsim report`; a capture also gives a workload scenario (see docs/pcap.md)."""
    from tcpsim.importers import FORMATS, ImportFormatError, import_file
    if fmt not in FORMATS:
        _fail(f"import: unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not src.is_file():
        _fail(f"import: {src}: no such file")
    _check_out(out, "--out", "trace.parquet")
    _check_out(workload, "--workload", "workload.toml")
    if fmt == "pcap":
        try:
            opts = _pcap_opts(flow, wscale, delay, reader, rcvbuf, split_gso)
        except ScenarioError as exc:
            _fail(str(exc))
            return
        _import_pcap(src, out, workload, **opts)
        return
    if any(v is not None for v in (flow, wscale, delay, reader, workload, rcvbuf)) or split_gso:
        _fail(f"import {fmt}: --flow, --wscale, --delay, --reader, --rcvbuf and --workload are "
              "for pcap")
    try:
        path = import_file(fmt, src, out, **({"port": port} if port is not None else {}))
    except ImportFormatError as exc:
        _fail(str(exc))
        return
    typer.echo(f"trace: {path}")


def _pcap_opts(flow: Optional[str], wscale: Optional[str], delay: Optional[str],
               reader: Optional[str], rcvbuf: Optional[str], split_gso: bool = False) -> dict:
    """The options every pcap command shares, checked (ScenarioError names the option)."""
    from tcpsim.scenario import parse_size
    return {"flow": flow, "wscale": wscale, "reader": reader,
            "delay_ns": parse_duration(delay, "--delay") if delay else None,
            "rcvbuf": parse_size(rcvbuf, "--rcvbuf") if rcvbuf else None,
            "split_gso": split_gso}


def _pcap_flows_failure(src: Path, exc) -> None:
    """Several connections and no --flow: list them, then one error line saying how to pick."""
    from tcpsim.pcap.flows import listing
    typer.echo(f"{src}: {len(exc.conns)} TCP connections (sender -> receiver):")
    for line in listing(exc.conns):
        typer.echo(line)
    _fail(f"{src} holds {len(exc.conns)} TCP connections; pick one with --flow and its receiver "
          "endpoint from the list above (e.g. --flow " + exc.conns[0].line(1).rsplit("--flow ", 1)[1]
          .split()[0] + ")")


def _import_pcap(src: Path, out: Path, workload: Optional[Path], **opts) -> None:
    from tcpsim.importers import ImportFormatError
    from tcpsim.importers.pcap import import_file as import_pcap
    from tcpsim.pcap.flows import TooManyFlows
    try:
        trace, wl, imp = import_pcap(src, out, workload, **opts)
    except TooManyFlows as exc:
        _pcap_flows_failure(src, exc)
        return
    except (ImportFormatError, ScenarioError) as exc:
        _fail(str(exc))
        return
    s = imp.meta["summary"]
    typer.echo(f"{s['flow']}: {s['packets']} packets, {s['acks']} ACKs, {s['zero_windows']} zero "
               f"windows, {s['window_updates']} window updates, {s['right_edge_retreats']} "
               f"right-edge retreats, {s['retransmissions']} retransmissions, {s['probes']} probes")
    for note in imp.notes:
        typer.echo(f"  {note}")
    typer.echo(f"trace: {trace}")
    typer.echo(f"workload: {wl}")


@app.command()
def replay(
    capture: Path = typer.Argument(..., help="a pcap/pcapng file (tcpdump -w, Wireshark), or gzipped"),
    profile: str = typer.Option("linux-6.18", "--profile", "-p", help="kernel profile to replay under"),
    policy: List[str] = typer.Option([], "--policy", help="patch name or FILE.py:Class (repeatable)"),
    sysctl: List[str] = typer.Option([], "--sysctl", "-s", help="NAME=VALUE receiver sysctl the "
                                     "wire does not show, e.g. net.ipv4.tcp_adv_win_scale=-2"),
    flow: Optional[str] = _pcap_option("--flow"),
    delay: Optional[str] = _pcap_option("--delay"),
    reader: Optional[str] = _pcap_option("--reader"),
    rcvbuf: Optional[str] = _pcap_option("--rcvbuf"),
    split_gso: bool = typer.Option(False, "--split-gso", help=_SPLIT_GSO_HELP),
    hz: Optional[int] = typer.Option(None, "--hz", help="the kernel's CONFIG_HZ (default: tcpsim's "
                                     "1 ms clock; with --fit: fitted)"),
    fit: bool = typer.Option(False, "--fit", help="fit what the capture cannot say (writer "
                             "feed, reader, its phase and late reads, device, HZ, timing, tcp_rmem[1], "
                             "tcp_shrink_window, how long a read or a write owns the socket, the "
                             "writer's page reuse) by replaying candidates, then replay under "
                             "--profile; --writer-feed, --reader, --hz, --rcvbuf, --device, "
                             "--timing, --owns-socket, --write-owns-socket, --late-reads, "
                             "--page-reuse pin"),
    fit_profile: Optional[str] = typer.Option(None, "--fit-profile", help="--fit under this "
                                              "profile (the capture's kernel), then replay under "
                                              "--profile/--policy (default: --profile)"),
    profiles: Optional[str] = typer.Option(None, "--profiles", help="rank kernels: 'all' or "
                                           "P1,P2,...; each --policy is ranked too, on the "
                                           "newest profile and linux-6.1 (with --fit: each fitted)"),
    device: Optional[str] = typer.Option(None, "--device", help="pin the ingress device (veth, "
                                         "veth-direct, loopback, nic-2k, nic-4k, tun)"),
    timing: Optional[str] = typer.Option(None, "--timing", help="pin the application timing "
                                         "(a host preset or exact)"),
    owns_socket: Optional[str] = typer.Option(None, "--owns-socket", help="pin how long each "
                                              "read holds the socket (socket owned by user: "
                                              "arrivals wait in the backlog), e.g. 60us or 0"),
    writer_feed: Optional[str] = typer.Option(None, "--writer-feed", help="how the capture's "
                                              "bytes reach the model's sender: as-sent (each "
                                              "when it left; the default without --fit), bursts "
                                              "(a run of back-to-back segments as one write), paced "
                                              "(as sent, the sender's cwnd out of the way), "
                                              "pauses (backlogged but where the application "
                                              "was idle), backlogged; with --fit: pins it"),
    write_owns_socket: Optional[str] = typer.Option(None, "--write-owns-socket", help="pin how "
                                                    "long each write holds the socket (ACKs "
                                                    "wait in the sender's backlog), e.g. 30us"),
    late_reads: Optional[str] = typer.Option(None, "--late-reads", help="with --fit: pin which "
                                             "reads move to the read-drawn ACK that dates them: "
                                             "those at least this late after their tick (e.g. "
                                             "30us), or 0 (every read on its grid)"),
    page_reuse: Optional[str] = typer.Option(None, "--page-reuse", help="with --fit: pin "
                                             "whether the reader's frees reach the writer's "
                                             "page frag at once (immediate: one CPU; an "
                                             "emptied page restarts) or wait for its next "
                                             "transmission (deferred); see docs/pcap.md"),
    until: Optional[float] = typer.Option(None, "--until", help="compare only the first S seconds"),
    html: Optional[Path] = typer.Option(None, "--html", help="capture-vs-model overlay page"),
    as_json: bool = typer.Option(False, "--json"),
    engine: Optional[str] = typer.Option(None, "--engine", help=ENGINE_HELP),
) -> None:
    """Run a capture's workload in the model and score its advertised windows against the
    capture's (the scores and report of `tcpsim validate`); --fit estimates what the wire
    does not show first; --profiles ranks kernels by their best fit (docs/pcap.md)."""
    from tcpsim.importers import ImportFormatError
    from tcpsim.pcap.flows import TooManyFlows
    from tcpsim.pcap.replay import replay_capture
    if not capture.is_file():
        _fail(f"replay: {capture}: {'is a directory' if capture.is_dir() else 'no such file'}")
    if until is not None and not until > 0:
        _fail(f"--until {until:g}: give a positive number of seconds (the first S seconds "
              "are compared)")
    try:
        if hz is not None:
            from tcpsim.scenario import check_hz
            check_hz(hz, "--hz")
    except ScenarioError as exc:
        _fail(str(exc))
    try:
        opts = _pcap_opts(flow, None, delay, reader, rcvbuf, split_gso)
        sysctls = parse_sysctl_options(sysctl)
        eng = _check_engine(engine)
        with interrupt.stoppable():
            if fit or profiles:
                pins = _fit_pins(opts, hz, device, timing, sysctls, owns_socket, writer_feed,
                                 write_owns_socket, late_reads, page_reuse)
                if profiles:
                    code = _rank_capture(capture, profiles, tuple(policy), sysctls, until, pins,
                                         fit, eng, as_json, opts)
                else:
                    code = _fit_capture(capture, profile, tuple(policy), fit_profile, sysctls,
                                        until, pins, eng, as_json, html, opts)
                raise typer.Exit(code)
            if timing is not None:
                raise ScenarioError(f"--timing {timing}: pins the application timing of a "
                                    "fit; give --fit (or --profiles) with it")
            if owns_socket is not None:
                raise ScenarioError(f"--owns-socket {owns_socket}: pins an unknown of a fit; "
                                    "give --fit (or --profiles) with it")
            if write_owns_socket is not None:
                raise ScenarioError(f"--write-owns-socket {write_owns_socket}: pins an unknown "
                                    "of a fit; give --fit (or --profiles) with it")
            if late_reads is not None:
                raise ScenarioError(f"--late-reads {late_reads}: pins an unknown of a fit; "
                                    "give --fit (or --profiles) with it")
            if page_reuse is not None:
                raise ScenarioError(f"--page-reuse {page_reuse}: pins an unknown of a fit "
                                    "(without --fit: --device with reuse=on); give --fit "
                                    "(or --profiles) with it")
            _check_feed(writer_feed)
            if device is not None:
                _check_device(device)
            v = replay_capture(capture, profile=profile, policies=tuple(policy),
                               sysctl=sysctls, until_s=until, hz=hz, engine=eng,
                               device=device, feed=writer_feed or "as-sent", **opts)
    except interrupt.Interrupted as exc:
        _stopped(exc.signame, "nothing kept (a score needs the whole replay; --until S scores "
                 "the first S seconds)")
        return
    except TooManyFlows as exc:
        _pcap_flows_failure(capture, exc)
        return
    except (ImportFormatError, *USER_ERRORS) as exc:
        _fail(str(exc))
        return
    from tcpsim.validate.report import text
    if as_json:
        typer.echo(json.dumps(v.score.as_dict(), indent=1, default=str))
    else:
        typer.echo(text(v.score))
    if html:
        from tcpsim.validate.html import write_html
        write_html(str(html), [(v.score, v.kernel, v.model, text(v.score))])
        if not as_json:
            typer.echo(f"html: {html}")
    raise typer.Exit(0 if v.score.passed else 1)


def _check_device(device: str) -> None:
    """--device: a preset or a device spec, else one ScenarioError line."""
    from tcpsim.core.devices import DEVICES
    if device not in DEVICES:
        from tcpsim.core.devices import device as parse_device
        try:
            parse_device(device)
        except ValueError as exc:
            raise ScenarioError(f"--device {device}: {exc} (a preset: {', '.join(DEVICES)}, "
                                "or a spec such as sender:head=384,shared=on)") from None


def _check_feed(feed: Optional[str]) -> None:
    """--writer-feed: one of tcpsim.pcap.replay.FEEDS, else one ScenarioError line."""
    from tcpsim.pcap.replay import FEEDS
    if feed is not None and feed not in FEEDS:
        raise ScenarioError(f"--writer-feed {feed}: expected one of {', '.join(FEEDS)}")


def _whole_us(value: str, option: str) -> int:
    """A duration option given in whole microseconds (--owns-socket 60us) -> us."""
    from tcpsim.units import parse_duration
    ns = parse_duration(value, option)
    if ns % 1000:
        raise ScenarioError(f"{option} {value}: give whole microseconds (e.g. 60us)")
    return ns // 1000


def _fit_pins(opts: dict, hz: Optional[int], device: Optional[str], timing: Optional[str],
              sysctls: dict, owns_socket: Optional[str] = None,
              writer_feed: Optional[str] = None, write_owns_socket: Optional[str] = None,
              late_reads: Optional[str] = None, page_reuse: Optional[str] = None) -> dict:
    """The unknowns the user pinned (tcpsim.pcap.fit.Unknowns fields); the rest are fitted.
    --reader/--rcvbuf are taken out of the import options: the fit replays them."""
    from tcpsim.app_latency import timing_choices
    from tcpsim.core.devices import DEVICES
    from tcpsim.pcap.workload import parse_phased, parse_reader
    pins: dict = {}
    if opts.get("reader"):
        if opts["reader"].strip().startswith("phased:"):
            parse_phased(opts["reader"])
        else:
            parse_reader(opts["reader"])
        pins["reader"] = opts.pop("reader").strip()
    if late_reads is not None:
        pins["reads_us"] = _whole_us(late_reads, "--late-reads")
    if opts.get("rcvbuf"):
        pins["so_rcvbuf"] = opts.pop("rcvbuf")
    if hz is not None:
        pins["hz"] = hz
    if device is not None:
        _check_device(device)
        pins["device"] = device
    if timing is not None:
        if timing not in timing_choices():
            raise ScenarioError(f"--timing {timing}: expected one of {', '.join(timing_choices())}")
        pins["timing"] = timing
    if owns_socket is not None:
        pins["owns_us"] = _whole_us(owns_socket, "--owns-socket")
    if writer_feed is not None:
        _check_feed(writer_feed)
        pins["writer"] = writer_feed
    if write_owns_socket is not None:
        pins["wowns_us"] = _whole_us(write_owns_socket, "--write-owns-socket")
    if page_reuse is not None:
        from tcpsim.pcap.fit import REUSE_NAMES
        if page_reuse not in REUSE_NAMES:
            raise ScenarioError(f"--page-reuse {page_reuse}: expected one of "
                                f"{', '.join(REUSE_NAMES)}")
        pins["reuse"] = REUSE_NAMES.index(page_reuse)
    if any(k.endswith("tcp_rmem") for k in sysctls):
        pins["rmem1"] = 0
    if any(k.endswith("tcp_shrink_window") for k in sysctls):
        pins["shrink"] = 0
    return pins


def _fit_capture(capture: Path, profile: str, policies: tuple, fit_profile: Optional[str],
                 sysctls: dict, until: Optional[float], pins: dict, engine: Optional[str],
                 as_json: bool, html: Optional[Path], opts: dict) -> int:
    from tcpsim.pcap.fitreport import fit_json, fit_text
    from tcpsim.pcap.replay import fit_capture
    f, g, v = fit_capture(capture, profile, policies, fit_profile, sysctls, until, pins,
                          engine=engine or "native", **opts)
    if as_json:
        typer.echo(json.dumps(fit_json(f, g, v), indent=1, default=str))
    else:
        typer.echo(fit_text(capture, f, g, v))
    if html:
        from tcpsim.validate.html import write_html
        from tcpsim.validate.report import text
        write_html(str(html), [(v.score, v.kernel, v.model, text(v.score))])
    return 0


def _rank_capture(capture: Path, profiles: str, policies: tuple, sysctls: dict,
                  until: Optional[float], pins: dict, do_fit: bool, engine: Optional[str],
                  as_json: bool, opts: dict) -> int:
    from tcpsim.catalog import builtin_profiles
    from tcpsim.pcap.fit import Capture, all_variants, rank
    from tcpsim.pcap.fitreport import rank_text
    variants = all_variants(policies)
    if profiles.strip() != "all":
        want = [p.strip() for p in profiles.split(",") if p.strip()]
        bad = [p for p in want if p not in builtin_profiles()]
        if bad:
            raise ScenarioError(f"--profiles: unknown profile {bad[0]!r}; give 'all' or some of "
                                + ", ".join(builtin_profiles()))
        variants = [(p, ()) for p in want] + [(want[0], (pol,)) for pol in policies]
    cap = Capture(capture, sysctl=sysctls, until_s=until, engine=engine or "native", **opts)
    r = rank(cap, variants, pins, do_fit)
    if as_json:
        typer.echo(json.dumps({"capture": str(capture), "fit": do_fit, **r.as_dict()}, indent=1,
                              default=str))
    else:
        typer.echo(rank_text(capture, r, do_fit))
    return 0


timing_app = typer.Typer(help="Your host's application timing as a preset for --timing "
                         "(docs/app-latency.md, \"Your own host\").", no_args_is_help=True)
app.add_typer(timing_app, name="timing")


@timing_app.command("measure")
def timing_measure(
    name: str = typer.Argument(..., help="the preset's name (then --timing NAME)"),
    seconds: float = typer.Option(60.0, "--seconds", help="how long to measure (kept as "
                                  "10 000-wakeup stretches that runs' seeds pick among)"),
    period: str = typer.Option("1ms", "--period", help="the periodic applications' tick"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Measure this machine's wakeup lateness (periodic writer and reader, blocking reader;
    no root needed) and write it as the timing preset NAME."""
    from tcpsim.timing import TimingError, measure, summary
    try:
        period_ns = parse_duration(period, "--period")
        path = measure(name, seconds, period_ns)
    except (TimingError, ScenarioError) as exc:
        _fail(str(exc))
        return
    _timing_done(name, path, summary(path), as_json)


@timing_app.command("fit")
def timing_fit(
    name: str = typer.Argument(..., help="the preset's name (then --timing NAME)"),
    runs: List[Path] = typer.Argument(..., help="tcpsim capture run folders kept raw "
                                      "(<name>.raw with meta.json and <side>_events.csv)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Build the timing preset NAME from the application logs of tcpsim capture runs."""
    from tcpsim.timing import TimingError, fit, summary
    try:
        path = fit(name, list(runs))
    except TimingError as exc:
        _fail(str(exc))
        return
    _timing_done(name, path, summary(path), as_json)


@timing_app.command("list")
def timing_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """The timing presets: shipped and your own."""
    from tcpsim.app_latency import HOSTS, user_hosts
    mine = user_hosts()
    rows = [{"name": n, "about": h.about, "yours": n in mine} for n, h in sorted(HOSTS.items())]
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    for r in rows:
        typer.echo(f"{r['name']:16} {'(yours) ' if r['yours'] else ''}{r['about']}")


def _timing_done(name: str, path: Path, s: dict, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({"name": name, **s}, indent=1))
        return
    typer.echo(f"timing preset {name}: {path}")
    for k in ("periodic_writer", "periodic_reader"):
        v = s.get(k) or {}
        typer.echo(f"  {k}: {v.get('wakeups')} wakeups, median {v.get('p50_us'):.0f} us late, "
                   f"99th percentile {v.get('p99_us'):.0f} us, "
                   f"{v.get('late_2ms_per_1000'):.1f} per 1000 more than 2 ms late")
    typer.echo(f"  use it: tcpsim run SCENARIO --timing {name}, or [timing] host = \"{name}\"")


@app.command()
def packetdrill(
    paths: List[Path] = typer.Argument(..., help=".pkt scripts or folders of them"),
    profile: str = typer.Option("linux-6.18", "--profile", "-p"),
    policy: List[str] = typer.Option([], "--policy", help="patch name or FILE.py:Class (repeatable)"),
    baseline: Optional[str] = typer.Option(
        None, "--baseline", help="also run under this profile and list the verdicts that change "
                                 "(e.g. -p linux-6.18 --policy X --baseline linux-6.18)"),
    as_json: bool = typer.Option(False, "--json"),
    engine: str = typer.Option("python", "--engine",
                               help="socket implementation: python (the reference) or native"),
) -> None:
    """Run the kernel's packetdrill receive tests against the model (no tun device, no root).

    PATH: a kernel tree (its tools/testing/selftests/net/packetdrill), a google/packetdrill
    checkout, a folder of scripts or a .pkt file. Each known receive-path script is compared
    with the real kernel's known result for the profile's release."""
    from tcpsim.packetdrill.command import run_paths
    code = run_paths([str(p) for p in paths], profile, list(policy), as_json, typer.echo,
                     engine=engine, baseline=baseline)
    raise typer.Exit(code)


@app.command()
def claims(
    only: List[str] = typer.Option([], "--only", help="claim key (repeatable)"),
    quick: bool = typer.Option(False, "--quick", help="shorter runs (the death check is skipped)"),
    as_json: bool = typer.Option(False, "--json"),
    engine: Optional[str] = typer.Option(None, "--engine", help=ENGINE_HELP),
) -> None:
    """Run the seeds' claims as experiments and print a pass/fail table with the figures."""
    from tcpsim.claims import run_claims
    from tcpsim.progress import StepProgress
    try:
        _set_engine(engine)
        with interrupt.stoppable():
            rows = run_claims(keys=only or None, quick=quick,
                              echo=None if as_json else typer.echo,
                              progress=StepProgress("claims").start)
    except interrupt.Interrupted as exc:
        _stopped(exc.signame, exc.kept)
        return
    except ValueError as exc:
        _fail(str(exc))
        return
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    if any(r["result"] != "PASS" for r in rows):
        raise typer.Exit(1)


def _check_engine(engine: Optional[str]) -> Optional[str]:
    """--engine of a command that replays one capture (validate, replay), checked before
    anything runs: an engine that can run here, None for the default, else EngineError
    naming the option and the fix."""
    if engine is not None:
        from tcpsim.engines import check_engine
        from tcpsim.runner import check_engine_name
        check_engine(check_engine_name(engine))
    return engine


def _set_engine(engine: Optional[str]) -> None:
    """--engine of a command that runs many scenarios: the default of this process's runs."""
    from tcpsim.runner import set_default_engine
    set_default_engine(engine)


def main(argv: Optional[List[str]] = None) -> None:
    """Entry point of the console script (`argv`: the arguments, default sys.argv[1:]).

    A patch that raises while a simulation runs is reported in one line naming the patch,
    the decision point and the line; `--debug` (anywhere) shows the traceback instead."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    try:
        with interrupt.signals_interrupt():   # SIGTERM as Ctrl-C; the engines' own below
            app(args=[a for a in args if a != "--debug"])
    except USER_ERRORS as exc:  # pragma: no cover - safety net
        typer.echo(f"tcpsim: error: {exc}", err=True)
        sys.exit(2)
    except Exception as exc:
        from tcpsim.catalog import patch_failure   # the error path only
        line = "" if debug else patch_failure(exc)
        if not line:
            raise
        typer.echo(f"tcpsim: error: {line} (--debug shows the traceback)", err=True)
        sys.exit(2)


def entry() -> None:
    """The console script and `python -m tcpsim.cli`: main(), then the end of the process
    without the interpreter's teardown of every module and object (~0.03 s once pyarrow is
    loaded, a tenth of a short `run`). Exit handlers still run and stdout/stderr are
    flushed first; the ordinary exit is kept while another thread is alive, for an exit
    status that is not a number, or when flushing fails (a closed pipe)."""
    import os
    try:
        main()
        code: Any = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if not isinstance(code, int) or run_exit_handlers is None or threading.active_count() > 1:
        sys.exit(code)
    run_exit_handlers()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    entry()
