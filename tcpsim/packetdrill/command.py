"""`tcpsim packetdrill PATH... [--profile P] [--policy X] [--baseline B] [--json] [--engine E]`:
run scripts, print verdicts, and say whether the model agrees with the real kernel.

`run_paths()` is the whole command; the CLI only parses arguments and calls it. A PATH is a
.pkt file, or a folder: a kernel tree (its tools/testing/selftests/net/packetdrill), a
google/packetdrill checkout (its gtests) or any folder of scripts, searched recursively. When
a folder holds receive-path scripts tcpsim knows (tcpsim/packetdrill/verdicts.py), only those
run and the others are counted as skipped; a folder of other scripts runs them all. Output,
one block per script, then the totals:

    PASS kernel-selftests/tcp_rcv_big_endseq.pkt   [6.18: PASS -- agrees]
    FAIL kernel-selftests/tcp_rcv_toobig.pkt   [6.18: FAIL at line 32 -- agrees]
      tcp_rcv_toobig.pkt:32: error handling packet: timing error: expected outbound ...
      script packet: > . 1:1(0) ack 80001 win 0
      actual packet: > . 1:1(0) ack 80001 win 0
    ...
    16 passed, 9 failed
    agrees with 6.18: 25/25 (Linux 6.18.44: measured with packetdrill ...)

The bracket is the real kernel's known result on the profile's release (measured, inferred,
or PASS because the script ships in that release's selftests; tcpsim/data/
packetdrill_verdicts.json) and whether the model agrees: the same verdict and, when both
fail, the same line. A script outside its kernel range (removed upstream, or added later)
says so and is not counted. `--baseline B` runs every script under profile B as well and
lists the verdicts that differ: what a patch (or a newer kernel) changes.

With `--json`, one JSON document instead: {"profile", "policies", "release", "basis",
"results": [...], "passed", "failed", "summary", "agreement", "skipped", "baseline"}.
Exit status: with known kernel results, 0 when the model agrees on every one of them, else 1;
for scripts without any, 0 when every script passed; 2 for a bad profile, patch, path or
engine (`--engine native` without the native socket built).

Without the CLI: `python -m tcpsim.packetdrill PATH... [--trace]`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from tcpsim.engines import ENGINES, EngineError, check_engine, native_policy
from tcpsim.catalog import ProfileError, get_profile

from .interpreter import ScriptResult, run_file
from .verdicts import Unknown, Verdict, known_verdict, release_basis, script_key, search_root


@dataclass(frozen=True)
class Found:
    """A script to run: its file, the name reported, and the known script it is (or None)."""

    path: Path
    name: str
    key: str | None


def collect(paths: Iterable[str | Path]) -> list[tuple[Path, str]]:
    """(file, display name) for every script under `paths`, in order, without repeats."""
    return [(f.path, f.name) for f in find(paths)[0]]


def find(paths: Iterable[str | Path]) -> tuple[list[Found], int]:
    """The scripts to run under `paths`, and how many others were skipped. Files found in a
    folder are named relative to where they were searched (a kernel tree's packetdrill
    folder, a google checkout's gtests, else the folder given)."""
    out: list[Found] = []
    seen: set[Path] = set()
    skipped = 0
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            root = search_root(path)
            found = [Found(p, str(p.relative_to(root)), script_key(root, p))
                     for p in sorted(root.rglob("*.pkt"))]
            if any(f.key for f in found):
                skipped += sum(f.key is None for f in found)
                found = [f for f in found if f.key]
        elif path.is_file():
            found = [Found(path, str(raw), script_key(path.parent, path))]
        else:
            raise FileNotFoundError(f"{raw}: no such file or folder")
        for f in found:
            key = f.path.resolve()
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out, skipped


def _known(found: Found, release: str) -> Verdict | Unknown | None:
    return known_verdict(found.key, release) if found.key else None


def agrees(result: ScriptResult, kernel: Verdict) -> bool:
    """Same verdict as the kernel and, when both fail, the same first failing line (a kernel
    verdict without a line agrees with any failure line)."""
    if result.passed != kernel.passed:
        return False
    return result.passed or kernel.line is None or result.line == kernel.line


def run_paths(paths: Iterable[str | Path], profile: str | None = None,
              policies: Iterable[str] = (), as_json: bool = False,
              echo: Callable[[str], None] = print, *, trace: bool = False,
              engine: str = "python", error: Callable[[str], None] | None = None,
              baseline: str | None = None) -> int:
    """Run every script under `paths` and print the verdicts (`echo`); a usage error is one
    `tcpsim: error:` line to `error` (default: stderr). `engine`: the socket implementation,
    "python" (the reference) or "native". `baseline`: a profile to run the scripts under as
    well, to list what changes. Returns the exit status."""
    error = error or (lambda line: print(line, file=sys.stderr))
    profile = profile or "linux-6.18"
    policies = list(policies)
    try:
        check_engine(engine)
        prof = get_profile(profile, policies)
        base_prof = get_profile(baseline) if baseline else None
        if engine == "native":
            native_policy(prof)          # a Python patch it cannot run: one line, now
        files, skipped = find(paths)
    except (ProfileError, FileNotFoundError, EngineError) as exc:
        error(f"tcpsim: error: {exc}")
        return 2
    if not files:
        error("tcpsim: error: no .pkt scripts found")
        return 2
    release = prof.kernel.RELEASE
    rows = []
    broken: list[str] = []               # scripts that cannot be read or parsed: user errors
    for f in files:
        result = run_file(f.path, profile, policies, name=f.name, trace=trace, engine=engine)
        if result.kind in ("syntax", "unreadable"):
            broken.append(" ".join(result.message.replace(": error: ", ": ", 1).split()))
            continue
        base = (run_file(f.path, baseline, (), name=f.name, engine=engine)
                if base_prof is not None and baseline else None)
        rows.append((f, result, _known(f, release), base))
        if not as_json:
            echo(_text(result, trace, release, rows[-1][2]))
    if broken and not rows:
        for line in broken:
            error(f"tcpsim: error: {line}")
        return 2
    passed = sum(r.passed for _, r, _, _ in rows)
    failed = len(rows) - passed
    summary = f"{passed} passed, {failed} failed"
    known = [(r, k) for _, r, k, _ in rows if isinstance(k, Verdict)]
    agree = sum(agrees(r, k) for r, k in known)
    agreement = f"agrees with {release}: {agree}/{len(known)}" if known else ""
    changes = [(f, r, b, k) for f, r, k, b in rows
               if b is not None and (r.passed, r.line) != (b.passed, b.line)]
    if as_json:
        echo(json.dumps({
            "profile": profile, "policies": policies, "release": release,
            "basis": release_basis(release) if known else "",
            "results": [_json(r, trace, k, b) for _, r, k, b in rows],
            "passed": passed, "failed": failed, "summary": summary,
            "agreement": {"agree": agree, "known": len(known), "text": agreement},
            "skipped": skipped,
            "baseline": None if not baseline else {
                "profile": baseline,
                "changed": [r.name for _, r, _, _ in changes],
                "agree": sum(agrees(b, k) for _, _, k, b in rows
                             if isinstance(k, Verdict) and b is not None)},
        }, indent=2))
    else:
        echo(summary)
        if skipped:
            echo(f"({skipped} other script{'s' if skipped != 1 else ''} skipped: not receive-path "
                 "scripts tcpsim knows; give a script's file to run it anyway)")
        if known:
            echo(f"{agreement} ({release_basis(release)})")
            unknown = [f.name for f, _, k, _ in rows if isinstance(k, Unknown)]
            if unknown:
                echo(f"  not counted, no known {release} result: {', '.join(unknown)}")
        if baseline:
            for line in _baseline_text(baseline, profile, policies, release, rows, changes):
                echo(line)
    for line in broken:
        error(f"tcpsim: error: {line}")
    if broken:
        return 2
    if known:
        return 0 if agree == len(known) else 1
    return 0 if failed == 0 else 1


def _label(result: ScriptResult) -> str:
    return "PASS" if result.passed else f"FAIL at line {result.line}"


def _baseline_text(baseline: str, profile: str, policies: list[str], release: str,
                   rows: list[Any], changes: list[Any]) -> list[str]:
    run = "+".join([profile, *policies])
    lines = [f"against {baseline}: "
             + (f"{len(changes)} verdict{'s' if len(changes) != 1 else ''} change"
                if changes else "no verdict changes")]
    for f, r, b, k in changes:
        kern = f"; {release}: {k}" if isinstance(k, Verdict) else ""
        lines.append(f"  {r.name}: {_label(b)} -> {_label(r)}{kern}")
    base_known = [(b, k) for _, _, k, b in rows if isinstance(k, Verdict) and b is not None]
    if base_known:
        lines.append(f"  {baseline} agrees with {release}: "
                     f"{sum(agrees(b, k) for b, k in base_known)}/{len(base_known)}; {run}: "
                     f"{sum(agrees(r, k) for _, r, k, _ in rows if isinstance(k, Verdict))}"
                     f"/{len(base_known)}")
    return lines


def _text(result: ScriptResult, trace: bool, release: str = "",
          kernel: Verdict | Unknown | None = None) -> str:
    head = f"{result.verdict} {result.name}"
    if isinstance(kernel, Verdict):
        head += f"   [{release}: {kernel} -- {'agrees' if agrees(result, kernel) else 'DIFFERS'}]"
    elif isinstance(kernel, Unknown):
        head += f"   [{release}: unknown, {kernel.reason}]"
    lines = [head]
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


def _json(result: ScriptResult, trace: bool, kernel: Verdict | Unknown | None = None,
          base: ScriptResult | None = None) -> dict[str, Any]:
    out = result.as_dict()
    if not trace:
        out.pop("trace")
    if isinstance(kernel, Verdict):
        out["kernel"] = {"verdict": "PASS" if kernel.passed else "FAIL", "line": kernel.line,
                         "basis": kernel.basis, "agrees": agrees(result, kernel)}
    elif isinstance(kernel, Unknown):
        out["kernel"] = {"verdict": None, "reason": kernel.reason}
    if base is not None:
        out["baseline"] = {"verdict": base.verdict, "line": base.line}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tcpsim.packetdrill",
        description="Run packetdrill scripts against the simulated TCP receive path.")
    parser.add_argument("paths", nargs="+", help=".pkt files or folders")
    parser.add_argument("--profile", "-p", default=None, help="kernel profile (default linux-6.18)")
    parser.add_argument("--policy", action="append", default=[], help="patch name or FILE.py:Class")
    parser.add_argument("--baseline", default=None,
                        help="also run under this profile and list the verdicts that change")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--trace", action="store_true", help="print each run event by event")
    parser.add_argument("--engine", default="python", choices=ENGINES,
                        help="socket implementation (default python, the reference)")
    args = parser.parse_args(argv)
    return run_paths(args.paths, args.profile, args.policy, args.json, print, trace=args.trace,
                     engine=args.engine, baseline=args.baseline)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
