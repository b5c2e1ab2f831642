"""The running kernel's build configuration: CONFIG_HZ, which the model needs to replay a
capture's timers (tcpsim/core/clock.py).

Read from /proc/config.gz (CONFIG_IKCONFIG_PROC) or /boot/config-$(uname -r), the two places
a distribution kernel's config is found. Neither is guaranteed: when both are missing the
capture records that HZ is unknown (and says so), and a replay then runs on tcpsim's default
clock unless given --hz.
"""

from __future__ import annotations

import gzip
import platform
import re
from pathlib import Path

_HZ = re.compile(r"^CONFIG_HZ=(\d+)\s*$", re.M)


def config_paths(release: str | None = None) -> list[Path]:
    """Where the running kernel's config may be, in the order they are tried."""
    return [Path("/proc/config.gz"), Path(f"/boot/config-{release or platform.release()}")]


def read_config_hz(path: Path) -> int | None:
    """CONFIG_HZ from one config file (gzip or plain text), or None."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except OSError:
            return None
    m = _HZ.search(raw.decode("utf-8", "replace"))
    return int(m.group(1)) if m else None


def kernel_hz(paths: list[Path] | None = None) -> tuple[int | None, str]:
    """(CONFIG_HZ, where it was read) of the running kernel, or (None, why unknown)."""
    tried = paths if paths is not None else config_paths()
    for p in tried:
        hz = read_config_hz(p)
        if hz:
            return hz, str(p)
    return None, "unknown: no CONFIG_HZ in " + " or ".join(str(p) for p in tried)
