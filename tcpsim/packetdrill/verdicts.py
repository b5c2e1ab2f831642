"""The receive-path packetdrill scripts tcpsim knows, and their known results per kernel release.

`tcpsim/data/packetdrill_verdicts.json` is data, not scripts (those are GPL-2.0 and stay where
the user has them): for each script a one-line summary and its range in the kernel tree, and
per release the verdicts measured on a real kernel or inferred (each with its basis). This
module answers two questions:

* `script_key(root, path)`: which known script a file under a folder is. Kernel selftests are
  known by file name (`tcp_rcv_toobig.pkt`, in `tools/testing/selftests/net/packetdrill/` of a
  kernel tree, or any folder laid out like it); files under `not-in-mainline/` or named
  `name@commit.pkt` under `variants/` are those entries; a google/packetdrill script by its
  folder and name (`gro/gro-mss-option.pkt` -> "google gro/gro-mss-option").
* `known_verdict(key, release)`: what the real kernel of that release does with it -- measured,
  inferred, or PASS because the script ships in that release's selftests -- or why nothing is
  known (outside the script's range in the tree, or a script that never was in mainline).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

SELFTESTS = Path("tools/testing/selftests/net/packetdrill")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A real kernel's result for one script: PASS, or FAIL at `line`; `basis` says how it is
    known."""

    passed: bool
    line: int | None
    basis: str

    def __str__(self) -> str:
        return "PASS" if self.passed else f"FAIL at line {self.line}"


@dataclass(frozen=True, slots=True)
class Unknown:
    """No known result for this script on this release, and why."""

    reason: str


def _data() -> dict[str, Any]:
    return _load()


@lru_cache(maxsize=1)
def _load() -> dict[str, Any]:
    text = resources.files("tcpsim").joinpath("data/packetdrill_verdicts.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def known_scripts() -> dict[str, dict[str, Any]]:
    """key -> {"checks", "in_tree", ...} for every receive-path script tcpsim knows."""
    scripts: dict[str, dict[str, Any]] = _data()["scripts"]
    return scripts


def _version(release: str) -> tuple[int, int]:
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


def _parse(text: str, basis: str) -> Verdict:
    if text == "PASS":
        return Verdict(True, None, basis)
    line = text.partition(":")[2]
    return Verdict(False, int(line) if line else None, basis)


def known_verdict(key: str, release: str) -> Verdict | Unknown:
    """The real kernel's result for script `key` on `release` (a profile's RELEASE, e.g.
    "6.18", "6.18.0", "7.1")."""
    kernels = _data()["kernels"]
    entry = kernels.get(release)
    if entry and key in entry["verdicts"]:
        v = entry["verdicts"][key]
        if isinstance(v, dict):
            return _parse(v["verdict"], v["basis"])
        return _parse(v, entry["basis"])
    info = known_scripts().get(key)
    if info is None:
        return Unknown("not a receive-path script tcpsim knows")
    rng = info.get("in_tree")
    if rng is None:
        return Unknown(f"not a mainline script; measured only on {_measured_kernels(key)}")
    here, first = _version(release), _version(rng["from"])
    until = rng.get("until")
    if here < first:
        return Unknown(f"not in {release}'s tree (added in {rng['from']})")
    if until and here >= _version(until):
        return Unknown(f"not in {release}'s tree (removed in {until})")
    return Verdict(True, None, f"ships in {release}'s selftests, which pass on it")


def _measured_kernels(key: str) -> str:
    found = [e.get("kernel", r) for r, e in _data()["kernels"].items() if key in e["verdicts"]]
    return ", ".join(found) or "no kernel"


def release_basis(release: str) -> str:
    """One line: where the verdicts for `release` come from."""
    entry = _data()["kernels"].get(release)
    if entry and entry["verdicts"] and all(isinstance(v, str) for v in entry["verdicts"].values()):
        return str(entry["basis"])
    extra = f"; {entry['basis']}" if entry else ""
    return (f"Linux {release}: the scripts in its selftests pass on it (upstream CI){extra}; "
            "others unknown")


def script_key(root: Path, path: Path) -> str | None:
    """The known script `path` (found under the folder `root`) is, or None."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        rel = Path(path.name)
    parts = rel.parts
    stem = path.stem
    scripts = known_scripts()
    if stem.startswith("tcp_"):
        if "@" in stem:
            key = f"variants/{stem}"
        elif "not-in-mainline" in parts:
            key = f"not-in-mainline/{stem}"
        else:
            key = stem
    else:
        folder = path.parent.name
        key = f"google {folder}/{stem}"
    return key if key in scripts else None


def search_root(path: Path) -> Path:
    """Where to look for scripts under `path`: a kernel tree's packetdrill selftests folder,
    a google/packetdrill checkout's gtests, else `path` itself."""
    for sub in (SELFTESTS, Path("gtests")):
        if (path / sub).is_dir():
            return path / sub
    return path
