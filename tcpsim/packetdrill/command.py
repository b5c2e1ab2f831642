"""`tcpsim packetdrill PATH... [--profile P] [--policy X] [--json] [--engine python|native]`:
run scripts, print verdicts.

`run_paths()` is the whole command; the CLI only parses arguments and calls it. A PATH is a
.pkt file or a folder (searched recursively for *.pkt). Output, one block per script:

    PASS kernel-selftests/tcp_rcv_big_endseq.pkt
    FAIL kernel-selftests/tcp_rcv_toobig.pkt
      tcp_rcv_toobig.pkt:32: error handling packet: timing error: expected outbound ...
      script packet: > . 1:1(0) ack 80001 win 0
      actual packet: > . 1:1(0) ack 80001 win 0
    ...
    14 passed, 11 failed

The indented first line is packetdrill's own error line. With `--json`, one JSON document
instead: {"profile", "policies", "results": [...], "passed", "failed", "summary"}.
Exit status: 0 when every script passed, 1 when one failed, 2 for a bad profile, patch, path
or engine (`--engine native` without the native socket built).

Without the CLI: `python -m tcpsim.packetdrill PATH... [--trace]`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Iterable

from tcpsim.engines import ENGINES, EngineError, check_engine, native_policy
from tcpsim.catalog import ProfileError, get_profile

from .interpreter import ScriptResult, run_file


def collect(paths: Iterable[str | Path]) -> list[tuple[Path, str]]:
    """(file, display name) for every script under `paths`, in order, without repeats.
    Files found in a folder are named relative to it."""
    out: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = [(p, str(p.relative_to(path))) for p in sorted(path.rglob("*.pkt"))]
        elif path.is_file():
            found = [(path, str(raw))]
        else:
            raise FileNotFoundError(f"{raw}: no such file or folder")
        for p, name in found:
            key = p.resolve()
            if key not in seen:
                seen.add(key)
                out.append((p, name))
    return out


def run_paths(paths: Iterable[str | Path], profile: str | None = None,
              policies: Iterable[str] = (), as_json: bool = False,
              echo: Callable[[str], None] = print, *, trace: bool = False,
              engine: str = "python", error: Callable[[str], None] | None = None) -> int:
    """Run every script under `paths` and print the verdicts (`echo`); a usage error is one
    `tcpsim: error:` line to `error` (default: stderr). `engine`: the socket implementation,
    "python" (the reference) or "native". Returns the exit status."""
    error = error or (lambda line: print(line, file=sys.stderr))
    profile = profile or "linux-6.18"
    policies = list(policies)
    try:
        check_engine(engine)
        prof = get_profile(profile, policies)
        if engine == "native":
            native_policy(prof)          # a Python patch it cannot run: one line, now
        files = collect(paths)
    except (ProfileError, FileNotFoundError, EngineError) as exc:
        error(f"tcpsim: error: {exc}")
        return 2
    if not files:
        error("tcpsim: error: no .pkt scripts found")
        return 2
    results: list[ScriptResult] = []
    broken: list[str] = []               # scripts that cannot be read or parsed: user errors
    for path, name in files:
        result = run_file(path, profile, policies, name=name, trace=trace, engine=engine)
        if result.kind in ("syntax", "unreadable"):
            broken.append(" ".join(result.message.replace(": error: ", ": ", 1).split()))
            continue
        results.append(result)
        if not as_json:
            echo(_text(result, trace))
    if broken and not results:
        for line in broken:
            error(f"tcpsim: error: {line}")
        return 2
    passed = sum(r.passed for r in results)
    failed = len(results) - passed
    summary = f"{passed} passed, {failed} failed"
    if as_json:
        echo(json.dumps({
            "profile": profile, "policies": policies,
            "results": [_json(r, trace) for r in results],
            "passed": passed, "failed": failed, "summary": summary,
        }, indent=2))
    else:
        echo(summary)
    for line in broken:
        error(f"tcpsim: error: {line}")
    if broken:
        return 2
    return 0 if failed == 0 else 1


def _text(result: ScriptResult, trace: bool) -> str:
    lines = [f"{result.verdict} {result.name}"]
    if not result.passed:
        lines.append(f"  {result.message}")
        extra = result.detail.splitlines()
        if extra and extra[0] == result.message.split(": error handling packet: ")[-1]:
            extra = extra[1:]
        if result.kind != "internal":
            lines.extend(f"  {ln}" for ln in extra)
    if trace:
        lines.extend(f"  note: {n}" for n in result.notes)
        lines.extend(f"    {t}" for t in result.trace)
    return "\n".join(lines)


def _json(result: ScriptResult, trace: bool) -> dict:
    out = result.as_dict()
    if not trace:
        out.pop("trace")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tcpsim.packetdrill",
        description="Run packetdrill scripts against the simulated TCP receive path.")
    parser.add_argument("paths", nargs="+", help=".pkt files or folders")
    parser.add_argument("--profile", "-p", default=None, help="kernel profile (default linux-6.18)")
    parser.add_argument("--policy", action="append", default=[], help="patch name or FILE.py:Class")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--trace", action="store_true", help="print each run event by event")
    parser.add_argument("--engine", default="python", choices=ENGINES,
                        help="socket implementation (default python, the reference)")
    args = parser.parse_args(argv)
    return run_paths(args.paths, args.profile, args.policy, args.json, print, trace=args.trace,
                     engine=args.engine)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
