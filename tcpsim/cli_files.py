"""The files a command reads and writes, checked before it runs: an output never names one
of the command's inputs, nor another of its outputs (`tcpsim run X.toml --pcap X.toml` would
overwrite the scenario with packets; `--trace P --pcap P` would keep only one of the two).

One table (ROLES) says, per command, which parameters are inputs and which are outputs;
`guard_files` wraps every command's callback with the check, so a new command gets it by
adding its row. Paths are compared resolved (symbolic links, `..`) and by inode (hard links).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# command path -> ({input parameter: what it is}, {output parameter: its option})
ROLES: dict[tuple[str, ...], tuple[dict[str, str], dict[str, str]]] = {
    ("run",): ({"scenario": "the scenario file", "policy": "the patch file"},
               {"trace": "--trace", "old_out": "-o", "pcap": "--pcap"}),
    ("compare",): ({"scenario": "the scenario file", "trace": "the recorded trace"},
                   {"html": "--html", "old_out": "-o", "pcap": "--pcap"}),
    ("sweep", "run"): ({"target": "the study or scenario file", "policy": "the patch file"},
                       {"table": "--table", "old_out": "--out", "results": "--results"}),
    ("sweep", "report"): ({"results": "the results directory"}, {"out": "--html"}),
    ("report",): ({"trace": "the trace"}, {"out": "--html"}),
    ("import",): ({"src": "the file to import"}, {"out": "--out", "workload": "--workload"}),
    ("replay",): ({"capture": "the capture", "policy": "the patch file"}, {"html": "--html"}),
    ("validate",): ({"traces": "the trace", "policy": "the patch file"}, {"html": "--html"}),
    ("capture",): ({"scenario": "the scenario file"}, {"out": "--out"}),
    ("search",): ({"target": "the search file", "policy": "the patch file",
                   "vs_policy": "the patch file"}, {"out": "--out"}),
}

# What an output is checked against when the command derives it from an input (report's
# default --html is the trace with .html): parameter -> (input parameter, its suffix).
DEFAULTS: dict[tuple[str, ...], dict[str, tuple[str, str]]] = {
    ("report",): {"out": ("trace", ".html")},
}


# an output's old option name -> its new one: given both, the command says so itself
OLD_NAMES = {"old_out": ("trace", "html", "table")}


class FileClash(Exception):
    """An output names an input or another output of the same command."""


def _paths(value: Any) -> list[Path]:
    """The file names a parameter's value gives (a list option gives several; a patch
    `FILE.py:Class` gives FILE.py; a built-in experiment's name gives none)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [p for v in value for p in _paths(v)]
    text = str(value)
    if text.endswith(".py") or ".py:" in text:
        text = text.rsplit(":", 1)[0] if ".py:" in text else text
    path = Path(text)
    if isinstance(value, Path) or path.exists():
        return [path]
    return []


def same_file(a: Path, b: Path) -> bool:
    """Whether `a` and `b` name one file: the same resolved path, or (both existing) the
    same inode -- a hard link or a bind mount."""
    try:
        if a.resolve() == b.resolve():
            return True
    except (OSError, RuntimeError):      # a symlink loop: compared by inode below if it can be
        pass
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_files(inputs: Iterable[tuple[str, Path]],
                outputs: Iterable[tuple[str, Path]]) -> None:
    """FileClash naming the option and the file if an output is one of the inputs, or two
    outputs are one file. `inputs`: (what it is, path); `outputs`: (option, path)."""
    ins = list(inputs)
    outs = list(outputs)
    for i, (opt, out) in enumerate(outs):
        for what, path in ins:
            if path.exists() and same_file(out, path):
                raise FileClash(f"{opt} {out}: that is {what} this command reads ({path}); "
                                "writing there would destroy it: give the output another name")
        for other_opt, other in outs[:i]:
            if same_file(out, other):
                raise FileClash(f"{other_opt} {other} and {opt} {out}: the same file; give each "
                                "output its own name")


def command_files(command: tuple[str, ...], params: dict[str, Any]
                  ) -> tuple[list[tuple[str, Path]], list[tuple[str, Path]]]:
    """(inputs, outputs) of `command` called with `params` (its callback's arguments)."""
    roles = ROLES.get(command)
    if roles is None:
        return [], []
    in_roles, out_roles = roles
    inputs = [(what, p) for name, what in in_roles.items() for p in _paths(params.get(name))]
    outputs = [(opt, p) for name, opt in out_roles.items() for p in _paths(params.get(name))
               if isinstance(params.get(name), (Path, list, tuple))
               and not any(params.get(new) is not None for new in OLD_NAMES.get(name, ()))]
    for name, (source, suffix) in DEFAULTS.get(command, {}).items():
        if params.get(name) is None and isinstance(params.get(source), Path):
            src = params[source]
            outputs.append((f"{out_roles[name]} (default)", src.with_suffix(suffix)))
    return inputs, outputs


def guard_files(group: Any, fail: Callable[[str], None], prefix: tuple[str, ...] = ()) -> None:
    """Wrap the callback of every command under `group` (a click group) so that its files
    are checked (check_files) before it runs; a clash ends in `fail(message)`."""
    for name, sub in getattr(group, "commands", {}).items():
        path = (*prefix, name)
        if getattr(sub, "commands", None):
            guard_files(sub, fail, path)
        callback = getattr(sub, "callback", None)
        if path not in ROLES or callback is None or getattr(callback, "_files_guarded", False):
            continue
        sub.callback = _guarded(callback, path, fail)


def _guarded(callback: Callable[..., Any], path: tuple[str, ...],
             fail: Callable[[str], None]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            check_files(*command_files(path, kwargs))
        except FileClash as exc:
            fail(str(exc))
        return callback(*args, **kwargs)
    run._files_guarded = True  # type: ignore[attr-defined]
    return run
