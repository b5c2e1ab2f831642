"""Run a parsed packetdrill script against the sans-IO TCP core, in virtual time.

    result = run_file("tcp_rcv_toobig.pkt", "linux-6.18")
    result.passed, result.message   # message: packetdrill's first error line, '' on a pass

What a run is made of:

* **a host** (host.py): one TcpSocket per connection on the `tun` device profile, the fd
  table, the capture of outbound segments, every socket's timers;
* **a clock**: integer virtual time. Before an event at time t every timer due at or before
  t runs at its own deadline (`on_timer`), so delayed ACKs and retransmissions appear on the
  capture exactly when the core decides to send them;
* **events** in script order. Times resolve as packetdrill resolves them (timing.py: a
  relative time counts from when the previous event finished; two inbound packets in a row
  anchor on the first one's script time). Inbound packets are built with `inbound_segment`
  and injected at their time. An outbound line takes the next segment the socket under test
  sent -- possibly one sent earlier, which then fails the timing check as it would on a real
  kernel -- and, if none is waiting, lets timers run until one is sent (up to
  `WAIT_CAP_USECS` past its expected time). It is compared with `match_outbound`;
* **system calls** (syscalls.py). A call written `t1...t2` may block: it is retried after
  every inbound segment and timer until it returns, and its return time is checked against
  t2. Other calls run at once, as in packetdrill's main thread; one that would block fails
  the script (packetdrill would hang there);
* **shell commands** (shell.py): sysctls, nstat and grep, defaults.sh;
* **`%{ }%` blocks** (pycode.py, tcpinfo.py): tcp_info is collected at the block's time and
  the Python runs after the last event, as packetdrill runs its collected code at the end.

The first failure ends the run. Its message is packetdrill's line, e.g.
`tcp_rcv_toobig.pkt:32: error handling packet: timing error: expected outbound packet at
0.147979 sec but happened at 0.235739 sec; tolerance 0.004000 sec`. Scripts or calls outside
the subset fail with a message containing `unsupported:`; internal errors are reported, never
raised. Conventions of the host that a real packetdrill run gets from its environment are
in HOST_ENVIRONMENT.
"""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from tcpsim.core.devices import device
from tcpsim.core.sysctl import long_name, short_name
from tcpsim.catalog import get_profile
from tcpsim.trace.schema import EVENT_FIELDS, TraceEvent

from .ast import (
    CodeEvent, CommandEvent, Direction, Event, PacketEvent, Script, SyscallEvent,
)
from .errors import PacketdrillSyntaxError
from .host import Host, HarnessError
from .inbound import InboundError, inbound_segment
from .match import MatchConfig, failure_line, match_outbound
from .nstat import Nstat
from .parser import parse
from .pycode import run_block
from .render import render_segment
from .shell import Shell, ShellContext, ShellUnsupported
from .sysctl_map import apply_setting
from .syscalls import Outcome, SyscallError, Syscalls
from .tcpinfo import snapshot
from .timing import ExpectedTime, anchor_usecs, check_block_end, resolve

# Global (not per-namespace) sysctls of the machines the corpus README's results come from:
# net.core.rmem_max = 4194304 there (docs/kernel-measurements.md), and it bounds SO_RCVBUF
# and enters the window-scale choice inside packetdrill's namespace too.
HOST_ENVIRONMENT: dict[str, Any] = {"net.core.rmem_max": 4194304}

# How far past its expected time an outbound line lets timers run before giving up.
WAIT_CAP_USECS = 60_000_000

OPTIONS_HANDLED = {"mss", "tolerance_usecs", "tcp_ts_tick_usecs"}


@dataclass
class ScriptResult:
    """The verdict on one script."""

    name: str                      # as reported (the file name, or a path relative to a root)
    passed: bool
    message: str = ""              # the first failure in packetdrill's words; '' on a pass
    line: int | None = None        # the script line of that failure
    kind: str = ""                 # '', 'mismatch', 'unsupported', 'syntax', 'unreadable', 'internal'
    detail: str = ""               # more lines: the script and actual packets, a reason
    notes: list[str] = field(default_factory=list)   # harness decisions worth knowing
    trace: list[str] = field(default_factory=list)   # the run, event by event (trace=True)

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["verdict"] = self.verdict
        return out


class Failure(Exception):
    """Ends a run: `message` is the packetdrill-style line."""

    def __init__(self, message: str, line: int | None, kind: str = "mismatch",
                 detail: str = "") -> None:
        super().__init__(message)
        self.message, self.line, self.kind, self.detail = message, line, kind, detail


@dataclass
class _Pending:
    event: SyscallEvent
    expected: ExpectedTime
    attempt: Callable[[], Outcome | None]


class _TraceSink:
    """Keeps the core's drop / collapse / autotune / state rows as text for --trace."""

    EVENTS = ("drop", "collapse", "autotune", "state")

    def __init__(self, lines: list[str] | None) -> None:
        self.lines = lines

    def wants(self, sock: str) -> bool:
        return self.lines is not None

    def record(self, ev: TraceEvent) -> None:
        f = dict(zip(EVENT_FIELDS, ev))
        if self.lines is None or f["event"] not in self.EVENTS:
            return
        seg, reason = f["seg"], f["drop_reason"]
        what = f" {render_segment(seg)}" if seg is not None else ""
        why = f" [{reason}]" if reason else ""
        self.lines.append(
            f"{f['t_ns'] / 1e9:.6f}   core {f['event']} {f['detail']}{what}{why} "
            f"(rcv_nxt {f['rcv_nxt']} rcv_wnd {f['rcv_wnd']} rmem {f['sk_rmem_alloc']} "
            f"rcvbuf {f['sk_rcvbuf']})")


class Interpreter:
    """One run of one script under one kernel profile."""

    def __init__(self, script: Script, profile: str = "linux-6.18",
                 policies: tuple[str, ...] | list[str] = (), *, base_dir: Path | None = None,
                 stop_dir: Path | None = None, ip_version: str = "ipv4",
                 env: dict[str, Any] | None = None, trace: bool = False,
                 engine: str = "python") -> None:
        self.script = script
        self.file = script.filename
        self.profile = get_profile(profile, list(policies))
        known = self.profile.known_sysctls()
        base = self.profile.default_sysctls()
        env = HOST_ENVIRONMENT if env is None else env
        sysctls = base.with_overrides(env, known=known, profile=self.profile.name)
        self.trace: list[str] | None = [] if trace else None
        self.host = Host(self.profile, sysctls, device("tun"), _TraceSink(self.trace), engine)
        self.syscalls = Syscalls(self.host)
        self.config = MatchConfig.from_script(script, ip_version)
        self.tolerance = script.tolerance_usecs
        self.nstat = Nstat(self.host.counters)
        self.shell = Shell(ShellContext(base_dir or Path("."), self._set_sysctl,
                                        self._get_sysctl, self.nstat, stop_dir))
        self.prev: Event | None = None
        self.prev_expected: ExpectedTime | None = None
        self.pending: _Pending | None = None
        self.code_blocks: list[tuple[CodeEvent, dict[str, int]]] = []
        self.ignored_sysctls: list[str] = []

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> ScriptResult:
        try:
            self._check_options()
            self._init_command()
            for event in self.script.events:
                self._event(event)
            self._finish()
        except Failure as f:
            return self._result(False, f.message, f.line, f.kind, f.detail)
        except HarnessError as exc:
            return self._result(False, f"{self.file}: internal error: {exc}", None, "internal")
        except Exception as exc:  # noqa: BLE001 - a broken run is reported, never raised
            from tcpsim.catalog import patch_failure   # the error path only
            detail = "".join(traceback.format_exception(exc))
            what = patch_failure(exc) or f"internal error: {type(exc).__name__}: {exc}"
            return self._result(False, f"{self.file}: {what}", None, "internal", detail)
        return self._result(True)

    def _result(self, passed: bool, message: str = "", line: int | None = None,
                kind: str = "", detail: str = "") -> ScriptResult:
        notes = list(self.host.notes)
        if self.ignored_sysctls:
            notes.append("sysctls without a receive-path counterpart, accepted and not "
                         "modelled: " + ", ".join(self.ignored_sysctls))
        return ScriptResult(self.file, passed, message, line, kind, detail, notes,
                            list(self.trace or []))

    @property
    def now_us(self) -> int:
        return self.host.now_ns // 1000

    def _log(self, text: str) -> None:
        if self.trace is not None:
            self.trace.append(f"{self.now_us / 1e6:.6f} {text}")

    def _fail(self, event: Event | None, text: str, kind: str = "mismatch",
              detail: str = "") -> None:
        line = event.line if event is not None else None
        prefix = f"{self.file}:{line}: " if line is not None else f"{self.file}: "
        raise Failure(prefix + text, line, kind, detail)

    def _check_options(self) -> None:
        for opt in self.script.options.raw:
            if opt.name in OPTIONS_HANDLED:
                continue
            if opt.name == "ip_version" and opt.value == self.config.ip_version:
                continue
            raise Failure(f"{self.file}:{opt.line}: error: unsupported: script option "
                          f"--{opt.name}", opt.line, "unsupported")

    def _init_command(self) -> None:
        init = self.script.init_command
        if init is None:
            return
        self._log(f"init `{init.command.strip()}`")
        try:
            result = self.shell.run(init.command)
        except ShellUnsupported as exc:
            raise Failure(f"{self.file}: error executing init command: {exc}", init.line,
                          "unsupported") from None
        self._absorb_notes(result.notes)
        if result.status:
            raise Failure(f"{self.file}: error executing init command: non-zero status "
                          f"{result.status}", init.line, "mismatch", result.error)

    def _event(self, event: Event) -> None:
        anchor = anchor_usecs(self.prev, self.prev_expected, event, self.now_us)
        expected = resolve(event.timing, anchor)
        if isinstance(event, PacketEvent) and event.packet.direction is Direction.OUTBOUND:
            self._outbound(event, expected)
        else:
            self._advance_to(expected.usecs)
            if isinstance(event, PacketEvent):
                self._inbound(event)
            elif isinstance(event, SyscallEvent):
                self._syscall(event, expected)
            elif isinstance(event, CommandEvent):
                self._command(event)
            else:
                self._log(f"line {event.line}: collect tcp_info for %{{ }}%")
                self.code_blocks.append((event, snapshot(self.host.under_test,
                                                         self.host.now_ns)))
        self.prev, self.prev_expected = event, expected

    def _finish(self) -> None:
        if self.pending is not None:
            self._fail(self.pending.event, "runtime error: exiting while a blocking system "
                       "call is in progress")
        for event, names in self.code_blocks:
            problem = run_block(event.code, names)
            if problem is not None:
                kind = "unsupported" if problem.unsupported else "mismatch"
                self._fail(event, f"error in Python code: {problem.message}", kind)
        cleanup = self.script.cleanup_command
        if cleanup is not None:
            try:
                result = self.shell.run(cleanup.command)
                self._absorb_notes(result.notes)
            except ShellUnsupported as exc:
                self.host.note(f"cleanup command not run: {exc}")

    # -- time ----------------------------------------------------------------------------------

    def _advance_to(self, usecs: int) -> None:
        limit = usecs * 1000
        while self.host.fire_timers(limit):
            self._poll_pending()
        self.host.now_ns = max(self.host.now_ns, limit)

    # -- packets -------------------------------------------------------------------------------

    def _inbound(self, event: PacketEvent) -> None:
        sk = self.host.under_test
        try:
            seg = inbound_segment(event.packet, self.script.options.mss, self.host.ts_map(sk))
        except InboundError as exc:
            self._fail(event, f"error handling packet: {exc}")
        self._log(f"<{render_segment(seg)[1:]}   (line {event.line})")
        self.host.inject(seg)
        self._poll_pending()

    def _outbound(self, event: PacketEvent, expected: ExpectedTime) -> None:
        end = expected.end_usecs if expected.end_usecs is not None else expected.usecs
        give_up = max(end, self.now_us) + WAIT_CAP_USECS
        while True:
            sent = self.host.pop_capture()
            if sent is not None:
                break
            if not self.host.fire_timers(give_up * 1000):
                if self.host.next_deadline():
                    why = (f"timed out waiting for outbound packet: nothing sent by "
                           f"{give_up / 1e6:.6f} sec")
                else:
                    why = ("no outbound packet: nothing was sent and no timer is armed "
                           "(packetdrill would wait forever)")
                self._fail(event, f"error handling packet: {why}")
            self._poll_pending()
        self.host.now_ns = max(self.host.now_ns, sent.usecs * 1000)
        self._log(f"{render_segment(sent.seg)} sent at {sent.usecs / 1e6:.6f}   "
                  f"(line {event.line})")
        problem = match_outbound(event, sent.seg, sent.usecs, expected, self.config,
                                 self.host.ts_map(sent.sk))
        if problem is not None:
            raise Failure(failure_line(self.file, event, problem), event.line, "mismatch",
                          problem.report())

    # -- system calls --------------------------------------------------------------------------

    def _syscall(self, event: SyscallEvent, expected: ExpectedTime) -> None:
        if event.is_blocking and self.pending is not None:
            self._fail(event, f"runtime error in {event.name} call: blocking system call while "
                       "another blocking system call is already in progress")
        attempt = self._call(event, self.syscalls.prepare)
        outcome = self._call(event, lambda _e: attempt())
        self._log(f"{event.name}() line {event.line} -> "
                  f"{'blocks' if outcome is None else _show(outcome)}")
        if outcome is None:
            if event.is_blocking:
                self.pending = _Pending(event, expected, attempt)
                return
            self._fail(event, f"runtime error in {event.name} call: the call blocks and the "
                       "script does not mark it as blocking (t1...t2 syscall); packetdrill "
                       "would hang here")
        self._returned(event, expected, outcome)

    def _call(self, event: SyscallEvent, fn: Callable[[SyscallEvent], Any]) -> Any:
        try:
            return fn(event)
        except SyscallError as exc:
            kind = "unsupported" if exc.unsupported else "mismatch"
            self._fail(event, f"runtime error in {event.name} call: {exc}", kind)

    def _returned(self, event: SyscallEvent, expected: ExpectedTime, outcome: Outcome) -> None:
        problem = self._call(event, lambda e: Syscalls.check(e, outcome))
        if problem:
            self._fail(event, f"runtime error in {event.name} call: {problem}")
        if event.is_blocking:
            late = check_block_end(expected, self.now_us, self.tolerance)
            if late:
                self._fail(event, late)

    def _poll_pending(self) -> None:
        pending = self.pending
        if pending is None:
            return
        outcome = self._call(pending.event, lambda _e: pending.attempt())
        if outcome is None:
            return
        self.pending = None
        self._log(f"{pending.event.name}() line {pending.event.line} returns {_show(outcome)}")
        self._returned(pending.event, pending.expected, outcome)

    # -- shell ---------------------------------------------------------------------------------

    def _command(self, event: CommandEvent) -> None:
        self._log(f"`{event.command}`")
        try:
            result = self.shell.run(event.command)
        except ShellUnsupported as exc:
            self._fail(event, f"error executing `{event.command}` command: {exc}", "unsupported")
        self._absorb_notes(result.notes)
        if result.status:
            self._fail(event, f"error executing `{event.command}` command: non-zero status "
                       f"{result.status}", detail=result.error)

    def _absorb_notes(self, notes: list[str]) -> None:
        for note in notes:
            self.host.note(note)

    def _set_sysctl(self, name: str, raw: str) -> str:
        applied = apply_setting(self.host.sysctls, name, raw, self.profile.known_sysctls(),
                                self.profile.name)
        if applied.ignored:
            short = short_name(name)
            if short not in self.ignored_sysctls:
                self.ignored_sysctls.append(short)
            return ""
        self.host.set_sysctls(applied.sysctls)
        return ""

    def _get_sysctl(self, name: str) -> str:
        value = self.host.sysctls.as_dict()[long_name(short_name(name))]
        return "\t".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _show(outcome: Outcome) -> str:
    err = f" errno {outcome.errno}" if outcome.errno else ""
    return f"{outcome.value}{err}"


def run_script(script: Script, profile: str = "linux-6.18",
               policies: tuple[str, ...] | list[str] = (), **kwargs: Any) -> ScriptResult:
    """Run a parsed script (see Interpreter for the keyword arguments)."""
    return Interpreter(script, profile, policies, **kwargs).run()


def run_file(path: str | Path, profile: str = "linux-6.18",
             policies: tuple[str, ...] | list[str] = (), *, name: str | None = None,
             **kwargs: Any) -> ScriptResult:
    """Parse and run one .pkt file. Errors are in the result (profile errors raise)."""
    path = Path(path)
    shown = name or path.name
    try:
        script = parse(path.read_text(encoding="utf-8"), path.name)
    except PacketdrillSyntaxError as exc:
        kind = "unsupported" if exc.unsupported else "syntax"
        return ScriptResult(shown, False, str(exc), exc.line, kind)
    except UnicodeDecodeError:
        return ScriptResult(shown, False, f"{shown}: not a text file (not UTF-8): a packetdrill "
                            "script is text", None, "unreadable")
    except OSError as exc:
        return ScriptResult(shown, False, f"{shown}: cannot read: {exc.strerror}", None,
                            "unreadable")
    kwargs.setdefault("base_dir", path.parent)
    result = run_script(script, profile, policies, **kwargs)
    result.name = shown
    return result
