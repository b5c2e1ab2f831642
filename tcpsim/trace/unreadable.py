"""Why a trace file cannot be read, in the user's words rather than pyarrow's.

pyarrow's messages name Thrift, carry control characters from the broken bytes and span
lines ("Couldn't deserialize thrift: don't know what type: \\x0e"). `reason()` turns the
exception into one short line that says what the file is and what to do; `unfinished()`
recognises the '.partial' a killed run leaves (tcpsim/trace/recorder.py)."""

from __future__ import annotations

import re
from pathlib import Path

PARTIAL = ".partial"
_MAGIC = b"PAR1"


def unfinished(path: Path) -> bool:
    """Whether `path` is the '.partial' file of a trace whose run never closed it."""
    return path.name.endswith(PARTIAL)


def _has_footer(path: Path) -> bool | None:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 4))
            return head == _MAGIC and f.read(4) == _MAGIC and size >= 12
    except OSError:
        return None


def reason(path: Path, exc: BaseException) -> str:
    """One line saying why `path` could not be read as a trace (`exc`: what pyarrow raised)."""
    if unfinished(path):
        return ("an unfinished trace: its run was killed before it closed the file, and a "
                "Parquet file without its footer (the list of its row groups) cannot be read; "
                "run again -- a run stopped by Ctrl-C or SIGTERM closes its trace")
    if isinstance(exc, IsADirectoryError):
        return "a directory, not a file"
    if isinstance(exc, PermissionError):
        return "permission denied"
    footer = _has_footer(path)
    if footer is False:
        with open(path, "rb") as f:
            parquet = f.read(4) == _MAGIC
        return ("a Parquet file cut short (no footer): it was not closed by what wrote it"
                if parquet else "not a Parquet file")
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(exc)).split())
    text = re.sub(r"^Could not open Parquet input source '[^']*': ", "", text)
    if "thrift" in text.lower() or "deserialize" in text.lower():
        return "a damaged Parquet file (its footer cannot be decoded)"
    return text[:200] or type(exc).__name__


def missing_file(path: Path, what: str = "no such file") -> str:
    """What to say of a trace `path` that is not a file: a directory, the '.partial' of a
    killed run beside it, or `what`."""
    if path.is_dir():
        return "a directory, not a trace file"
    partial = path.with_name(path.name + PARTIAL)
    if partial.is_file():
        return (f"{what}; {partial} beside it is the unfinished trace of a run that was "
                "killed before it closed it (a Parquet file without its footer cannot be read); "
                "run again -- a run stopped by Ctrl-C or SIGTERM closes its trace")
    return what
