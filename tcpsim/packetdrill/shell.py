"""The backquoted shell commands of a script, interpreted against the simulated host.

packetdrill runs these with `sh -c` in the test's network namespace. The corpus uses a small
vocabulary, which is what this understands:

* `sysctl [-q] [-w] net.ipv4.name=value ...` -> the host's sysctls (see sysctl_map); a read,
  `sysctl [-n] name`, prints a modelled value;
* `nstat [...]` -> the namespace's counters (see nstat.py);
* `grep [-q] [-v] [-c] [-w] [-F|-E|-i] PATTERN` as a pipeline stage;
* `./defaults.sh`, `../common/defaults.sh` or any `*.sh` path: that file's lines, read at run
  time from the script's folder (never copied). When the folder has no such file the parent
  folders are tried, and the run's notes say which file was used;
* no-ops for the simulated world: `ip tcp_metrics flush ...` (no metrics cache),
  `tc qdisc add|replace dev tun0 root pfifo...` (segments leave at once, as with pfifo),
  `true`, `:`, `false`, `echo`;
* `$((arithmetic))`, quotes, `a | b | c`, `;`, and output redirections to /dev/null.

Anything else fails with `unsupported: ...`: the interpreter cannot know what it would do.
A command's status is the last pipeline's, as in sh (a failing line in the middle of a file
does not stop it; its message is kept in the notes).
"""

from __future__ import annotations

import ast as pyast
import operator
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .nstat import Nstat, NstatError
from .sysctl_map import SysctlSettingError, UnsupportedSysctl


class ShellUnsupported(Exception):
    """A command outside the vocabulary (message starts with 'unsupported:')."""


@dataclass
class ShellResult:
    status: int = 0
    output: str = ""
    error: str = ""                      # why the status is non-zero, for the report
    notes: list[str] = field(default_factory=list)


@dataclass
class ShellContext:
    """What commands act on: the script's folder, the sysctl setter, the counters."""

    base_dir: Path
    set_sysctl: Callable[[str, str], str]      # (name, raw value) -> note ("" if applied)
    get_sysctl: Callable[[str], str]           # name -> value as sysctl prints it
    nstat: Nstat
    stop_dir: Path | None = None               # do not search for scripts above this folder


class Shell:
    """Runs command text; raises ShellUnsupported for unknown commands."""

    MAX_DEPTH = 4

    def __init__(self, ctx: ShellContext) -> None:
        self.ctx = ctx

    # -- lines and pipelines -------------------------------------------------------------------

    def run(self, text: str, depth: int = 0) -> ShellResult:
        result = ShellResult()
        for line in _logical_lines(text):
            for part in _split_list(line):
                last = self._pipeline(part, depth)
                result.notes.extend(last.notes)
                if last.status and last.error:
                    result.notes.append(f"`{part}`: {last.error} (status {last.status})")
                result.status, result.error = last.status, last.error
                result.output += last.output
        return result

    def _pipeline(self, line: str, depth: int) -> ShellResult:
        words = _words(_expand_arithmetic(line))
        stages: list[list[str]] = [[]]
        for w in words:
            if w == "|":
                stages.append([])
            else:
                stages[-1].append(w)
        data = ""
        result = ShellResult()
        for stage in stages:
            argv = _strip_redirections(stage)
            if not argv:
                raise ShellUnsupported(f"unsupported: empty command in `{line}`")
            result = self._command(argv, data, depth)
            data = result.output
        return result

    # -- commands ------------------------------------------------------------------------------

    def _command(self, argv: list[str], stdin: str, depth: int) -> ShellResult:
        name = argv[0]
        if name == "sysctl":
            return self._sysctl(argv[1:])
        if name == "nstat":
            try:
                return ShellResult(output=self.ctx.nstat.run(argv[1:]))
            except NstatError as exc:
                raise ShellUnsupported(str(exc)) from None
        if name == "grep":
            return _grep(argv[1:], stdin)
        if name in ("true", ":"):
            return ShellResult()
        if name == "false":
            return ShellResult(status=1, error="false")
        if name == "echo":
            return ShellResult(output=" ".join(argv[1:]) + "\n")
        if name == "ip" and argv[1:3] == ["tcp_metrics", "flush"]:
            return ShellResult()           # no destination metrics are cached in the model
        if name == "tc" and _is_pfifo_root(argv):
            return ShellResult()           # the simulated link has no qdisc: pfifo behaviour
        if name.endswith(".sh") or "/" in name:
            return self._script(name, depth)
        raise ShellUnsupported(f"unsupported: shell command `{' '.join(argv)}`")

    def _sysctl(self, args: list[str]) -> ShellResult:
        out = ShellResult()
        settings = [a for a in args if not a.startswith("-")]
        opts = {a for a in args if a.startswith("-")}
        if opts - {"-q", "-w", "-n", "-e"}:
            raise ShellUnsupported(f"unsupported: sysctl option {sorted(opts)}")
        for item in settings:
            name, sep, value = item.partition("=")
            if not sep:
                try:
                    shown = self.ctx.get_sysctl(name)
                except KeyError:
                    raise ShellUnsupported(f"unsupported: sysctl {name} is not modelled") from None
                out.output += (shown if "-n" in opts else f"{name} = {shown}") + "\n"
                continue
            try:
                note = self.ctx.set_sysctl(name.strip(), value)
            except UnsupportedSysctl as exc:
                raise ShellUnsupported(str(exc)) from None
            except SysctlSettingError as exc:
                out.status, out.error = 255, str(exc)
                continue
            if note:
                out.notes.append(note)
        return out

    def _script(self, name: str, depth: int) -> ShellResult:
        if depth >= self.MAX_DEPTH:
            raise ShellUnsupported(f"unsupported: scripts nested deeper than {self.MAX_DEPTH}")
        path = self._find(name)
        if path is None:
            return ShellResult(status=127, error=f"{name}: No such file or directory")
        result = self.run(path.read_text(), depth + 1)
        wanted = (self.ctx.base_dir / name).resolve()
        if path != wanted:
            result.notes.insert(0, f"{name} not in the script's folder; used {path}")
        return result

    def _find(self, name: str) -> Path | None:
        """`name` relative to the script's folder, else relative to a parent (google's
        runner starts scripts one folder up: gtests/net/tcp/gro/x.pkt's
        `../common/defaults.sh` is gtests/net/common/defaults.sh), else the same file name
        in a parent."""
        first = (self.ctx.base_dir / name).resolve()
        if first.is_file():
            return first
        folder = self.ctx.base_dir.resolve()
        stop = self.ctx.stop_dir.resolve() if self.ctx.stop_dir else None
        while folder.parent != folder and folder != stop:
            folder = folder.parent
            for candidate in (folder / name, folder / Path(name).name):
                if candidate.is_file():
                    return candidate.resolve()
        return None


# --------------------------------------------------------------------------- words


def _logical_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined, without blanks and comments."""
    text = text.replace("\\\n", " ")
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _split_list(line: str) -> list[str]:
    """`a ; b` -> ['a', 'b'] (';' outside quotes). `&&`, `||`, `&` are not supported."""
    words = _words(line, keep_ops=True)
    if any(w in ("&&", "||", "&") for w in words):
        raise ShellUnsupported(f"unsupported: shell operator in `{line}`")
    if ";" not in words:
        return [line]
    parts, quote, cur = [], "", ""
    for ch in line:
        if ch in "'\"" and (not quote or quote == ch):
            quote = "" if quote else ch
        if ch == ";" and not quote:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def _words(line: str, keep_ops: bool = False) -> list[str]:
    if "$" in line.replace("$((", ""):
        raise ShellUnsupported(f"unsupported: shell variable or substitution in `{line}`")
    if "`" in line:
        raise ShellUnsupported(f"unsupported: nested command substitution in `{line}`")
    lex = shlex.shlex(line, posix=True, punctuation_chars="|;&<>")
    lex.whitespace_split = True
    try:
        return list(lex)
    except ValueError as exc:
        raise ShellUnsupported(f"unsupported: cannot split `{line}` into words: {exc}") from None


def _strip_redirections(words: list[str]) -> list[str]:
    """Drop `> /dev/null`, `2>&1`, `2> /dev/null`; anything else is unsupported."""
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in (">", ">>", ">&", "<", "&>"):
            if out and out[-1].isdigit() and len(out[-1]) == 1:
                out.pop()                       # the fd number of `2>` / `2>&1`
            target = words[i + 1] if i + 1 < len(words) else ""
            if w == "<" or not (target == "/dev/null" or (w == ">&" and target.isdigit())):
                raise ShellUnsupported(f"unsupported: redirection `{w} {target}`")
            i += 2
            continue
        out.append(w)
        i += 1
    return out


def _is_pfifo_root(argv: list[str]) -> bool:
    return (len(argv) >= 6 and argv[1] == "qdisc" and argv[2] in ("add", "replace")
            and argv[3] == "dev" and "root" in argv and argv[-1].startswith("pfifo"))


# --------------------------------------------------------------------------- grep


def _grep(args: list[str], stdin: str) -> ShellResult:
    flags, pattern = set(), None
    for a in args:
        if a.startswith("-") and pattern is None and len(a) > 1:
            for ch in a[1:]:
                if ch not in "qvcwFEi":
                    raise ShellUnsupported(f"unsupported: grep option -{ch}")
                flags.add(ch)
        elif pattern is None:
            pattern = a
        else:
            raise ShellUnsupported("unsupported: grep with a file argument")
    if pattern is None:
        raise ShellUnsupported("unsupported: grep without a pattern")
    regex = re.escape(pattern) if "F" in flags else _bre(pattern, "E" in flags)
    if "w" in flags:
        regex = rf"(?<!\w)(?:{regex})(?!\w)"
    rx = re.compile(regex, re.IGNORECASE if "i" in flags else 0)
    hits = [ln for ln in stdin.splitlines() if bool(rx.search(ln)) != ("v" in flags)]
    status = 0 if hits else 1
    if "q" in flags:
        return ShellResult(status=status)
    if "c" in flags:
        return ShellResult(status=status, output=f"{len(hits)}\n")
    return ShellResult(status=status, output="".join(h + "\n" for h in hits))


def _bre(pattern: str, extended: bool) -> str:
    """Basic (or extended) regular expression to Python's: in a BRE `+ ? | ( ) { }` are
    literal unless escaped."""
    if extended:
        return pattern
    out, i = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out += nxt if nxt in "+?|(){}" else "\\" + nxt
            i += 2
            continue
        out += "\\" + ch if ch in "+?|(){}" else ch
        i += 1
    return out


# --------------------------------------------------------------------------- $(( ))


def _expand_arithmetic(line: str) -> str:
    out, i = "", 0
    while True:
        j = line.find("$((", i)
        if j < 0:
            return out + line[i:]
        depth, k = 2, j + 3
        while k < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[k], 0)
            k += 1
        if depth:
            raise ShellUnsupported(f"unsupported: unbalanced $(( in `{line}`")
        out += line[i:j] + str(_arith(line[j + 3:k - 2]))
        i = k


_OPS = {pyast.Add: operator.add, pyast.Sub: operator.sub, pyast.Mult: operator.mul,
        pyast.FloorDiv: operator.floordiv, pyast.Mod: operator.mod,
        pyast.LShift: operator.lshift, pyast.RShift: operator.rshift,
        pyast.BitOr: operator.or_, pyast.BitAnd: operator.and_}


def _arith(expr: str) -> int:
    """Integer arithmetic of `$(( ))`: + - * / % << >> | & and parentheses."""
    try:
        tree = pyast.parse(expr.strip().replace("/", "//"), mode="eval")
    except SyntaxError:
        raise ShellUnsupported(f"unsupported: arithmetic $(({expr}))") from None

    def ev(node: pyast.AST) -> int:
        if isinstance(node, pyast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, pyast.BinOp) and type(node.op) in _OPS:
            rhs = ev(node.right)
            if isinstance(node.op, (pyast.LShift, pyast.RShift)) and not 0 <= rhs < 64:
                raise ShellUnsupported(f"unsupported: shift by {rhs} in $(({expr}))")
            return _OPS[type(node.op)](ev(node.left), rhs)
        if isinstance(node, pyast.UnaryOp) and isinstance(node.op, (pyast.USub, pyast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, pyast.USub) else v
        raise ShellUnsupported(f"unsupported: arithmetic $(({expr}))")

    return ev(tree.body)
