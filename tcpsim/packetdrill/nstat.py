"""`nstat` over the simulated network namespace's SNMP counters.

The kernel's counters are per network namespace; the model keeps them per socket
(`sk.mib`), so the namespace's value is the sum over every socket the script created. Like
iproute2's nstat, this keeps a history (the values at the last update) and prints increments
since then, leaving out zeros unless `-z`:

    nstat -n        update the history, print nothing
    nstat           print increments, update the history
    nstat -s        print increments, keep the history
    nstat -a        print absolute values
    nstat -r        forget the history first

Each printed line is `Name<spaces>value<spaces>rate`, the layout `grep " 3 "` relies on.
The rate column is always 0.0 (no rate estimator in a virtual-time run).
"""

from __future__ import annotations

from typing import Callable


class NstatError(ValueError):
    """An nstat option this implementation does not have (message starts 'unsupported:')."""


class Nstat:
    """nstat's history file for one run."""

    def __init__(self, counters: Callable[[], dict[str, int]]) -> None:
        self._counters = counters
        self._history: dict[str, int] | None = None

    def run(self, args: list[str]) -> str:
        flags = set()
        patterns = []
        for arg in args:
            if arg.startswith("--"):
                long = {"--nooutput": "n", "--noupdate": "s", "--zeros": "z",
                        "--reset": "r", "--ignore": "", "--json": "j"}.get(arg)
                if long is None or long == "j":
                    raise NstatError(f"unsupported: nstat option {arg}")
                flags.add(long)
            elif arg.startswith("-"):
                for ch in arg[1:]:
                    if ch not in "nszar":
                        raise NstatError(f"unsupported: nstat option -{ch}")
                    flags.add(ch)
            else:
                patterns.append(arg)
        if "r" in flags:
            self._history = None
        now = self._counters()
        base = {} if ("a" in flags or self._history is None) else self._history
        lines = []
        if "n" not in flags:
            lines.append("#kernel")
            for name in sorted(now):
                if patterns and not any(_glob(p, name) for p in patterns):
                    continue
                value = now[name] - base.get(name, 0)
                if value or "z" in flags:
                    lines.append(f"{name:<31} {value:<15} {0.0:>6.1f}")
        if "s" not in flags:
            self._history = dict(now)
        return "".join(line + "\n" for line in lines)


def _glob(pattern: str, name: str) -> bool:
    from fnmatch import fnmatchcase
    return fnmatchcase(name, pattern)
