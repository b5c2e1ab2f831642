"""The shared packetdrill corpus and its record of real-kernel results.

The corpus (third-party GPL scripts) lives outside the repository, at
`../shared/peer-tests/packetdrill/` next to the checkout; nothing of it is copied here. Its
README has a table of what packetdrill reported on the development machines' kernel, one row
per script:

    | script | ipv4 | ipv6 | first failure line |
    | tcp_rcv_toobig | FAIL | FAIL | `tcp_rcv_toobig.pkt:32: error handling packet: ...` (...) |

`kernel_results()` reads that table so tests and reports compare against it at run time
instead of restating it. Row names map to files: `tcp_x` -> kernel-selftests/tcp_x.pkt,
`not-in-mainline/x` and `variants/x@h` under kernel-selftests/, `google d/x` ->
google-gtests/d/x.pkt; anything after the name (`(+0 > version)`) is a remark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

def _find_corpus() -> Path:
    """../shared/peer-tests/packetdrill next to the checkout (or a worktree of it): the first
    ancestor of this file that has one."""
    here = Path(__file__).resolve()
    for up in here.parents:
        cand = up / "shared" / "peer-tests" / "packetdrill"
        if cand.is_dir():
            return cand
    return here.parents[3] / "shared" / "peer-tests" / "packetdrill"


DEFAULT_CORPUS = _find_corpus()

_HEADER = re.compile(r"^\|\s*script\s*\|\s*ipv4\s*\|\s*ipv6\s*\|\s*first failure line\s*\|")
_LINE_NO = re.compile(r":(\d+):")


@dataclass(frozen=True, slots=True)
class KernelResult:
    """One README row: verdicts per IP version and the first failure as written."""

    script: str            # path relative to the corpus root
    ipv4: str              # 'PASS' or 'FAIL'
    ipv6: str
    failure: str           # the backquoted failure text ('' for a pass)
    line: int | None       # its line number, when the text has one

    @property
    def passed(self) -> bool:
        return self.ipv4 == "PASS"


def corpus_dir(root: Path | None = None) -> Path:
    return root or DEFAULT_CORPUS


def scripts(root: Path | None = None) -> list[Path]:
    """Every .pkt file of the corpus, sorted."""
    return sorted(corpus_dir(root).rglob("*.pkt"))


def row_to_path(name: str) -> str:
    """The corpus-relative file of a README row name."""
    name = name.strip().strip("`")
    if name.startswith("google "):
        return f"google-gtests/{name[len('google '):].split()[0]}.pkt"
    return f"kernel-selftests/{name.split()[0]}.pkt"


def kernel_results(root: Path | None = None) -> dict[str, KernelResult]:
    """The README's results table, keyed by corpus-relative path. Empty without a README."""
    readme = corpus_dir(root) / "README.md"
    if not readme.is_file():
        return {}
    rows: dict[str, KernelResult] = {}
    in_table = False
    for line in readme.read_text().splitlines():
        if _HEADER.match(line):
            in_table = True
            continue
        if not in_table:
            continue
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or set(cells[0]) <= {"-", " "}:
            continue
        name, ipv4, ipv6 = cells[0], cells[1], cells[2]
        failure_cell = "|".join(cells[3:])
        quoted = re.search(r"`([^`]+)`", failure_cell)
        failure = quoted.group(1) if quoted else ""
        number = _LINE_NO.search(failure) if failure else None
        path = row_to_path(name)
        rows[path] = KernelResult(path, ipv4.upper(), ipv6.upper(), failure,
                                  int(number.group(1)) if number else None)
    return rows


@dataclass(frozen=True, slots=True)
class Comparison:
    """A simulated run next to the real kernel's record for the same script."""

    script: str
    kernel: KernelResult
    model_passed: bool
    model_line: int | None
    model_message: str

    @property
    def agrees(self) -> bool:
        """Same verdict and, when both fail, the same first failing line."""
        if self.model_passed != self.kernel.passed:
            return False
        return self.model_passed or self.model_line == self.kernel.line

    @property
    def summary(self) -> str:
        model = "PASS" if self.model_passed else f"FAIL at line {self.model_line}"
        kernel = "PASS" if self.kernel.passed else f"FAIL at line {self.kernel.line}"
        return f"{self.script}: model {model}, kernel {kernel}"


def compare(script: str, result, kernel: KernelResult) -> Comparison:
    """`result` is the interpreter's ScriptResult for corpus-relative `script`."""
    return Comparison(script, kernel, result.passed, result.line, result.message)
