"""The fuzz suite's property: `tcpsim ARGV` through tcpsim.cli.main, in-process, in a fresh
directory, ends in exit 0 or in its documented failure exit with exactly one `tcpsim: error:`
line naming the file, field or option -- never a traceback, never an exception escaping."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from hypothesis import HealthCheck, settings

# Every example is a tiny simulation (a few simulated ms). The `ci` profile of conftest.py keeps
# the draw fixed; an explore session draws new ones, as many per test as TCPSIM_FUZZ_EXAMPLES:
#   HYPOTHESIS_PROFILE=explore TCPSIM_FUZZ_EXAMPLES=2000 python3 -m pytest tests/fuzz -n 2
FUZZ = settings(deadline=None, max_examples=int(os.environ.get("TCPSIM_FUZZ_EXAMPLES", "25")),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


@contextlib.contextmanager
def workdir() -> Iterator[Path]:
    """A fresh current directory (a command's default output lands there)."""
    with tempfile.TemporaryDirectory(prefix="tcpsim-fuzz-") as d, contextlib.chdir(d):
        yield Path(d)


def tcpsim(argv: Sequence[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `tcpsim ARGV`; an exception escaping main() is raised."""
    from tcpsim.cli import main
    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def check(result: tuple[int, str, str], names: Sequence[str] = (), fail: Sequence[int] = (2,),
          argv: Sequence[str] = (), verdict: int | None = None) -> str | None:
    """Assert the property; the error line (None on success). `verdict`: the command's exit
    status for a negative verdict printed on stdout (a failing packetdrill script, a sweep
    point that failed), which is not an error."""
    code, out, err = result
    context = f"tcpsim {' '.join(map(str, argv))}\nexit {code}\nstderr: {err[-2000:]}"
    assert "Traceback" not in err and "Traceback" not in out, context
    if code == 0:
        assert "tcpsim: error:" not in err, context
        assert out.strip() or err.strip(), f"exit 0 without a word: {context}"
        return None
    if code == verdict and out.strip() and "tcpsim: error:" not in err:
        return None
    assert code in fail, context
    lines = [line for line in err.splitlines() if line.startswith("tcpsim: error:")]
    assert len(lines) == 1, context
    if names:
        assert any(str(n) in lines[0] for n in names), f"names none of {list(names)}: {context}"
    return lines[0]
