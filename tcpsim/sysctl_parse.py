"""Sysctl settings as users write them -> (name, value) the profile validates: the one parser
behind a scenario's `[sysctl]` table, `--sysctl NAME=VALUE` on `run`/`sweep`/`compare`, a
sweep's `sysctl.NAME` axis, the capture tool and packetdrill's `sysctl -w`.

Accepted forms of a value, wherever it is written:

* an integer: `2`, `-2`, `"2"`, `0x10` (hexadecimal as the kernel's `proc_dointvec` reads it);
* a name, for `tcp_congestion_control` (`cubic`, `reno`);
* several integers -- `tcp_rmem`, `tcp_wmem` -- as a TOML list `[4096, 131072, 6291456]`
  (also `"[4096,131072,6291456]"` on the command line) or as the kernel prints and takes them,
  `"4096 131072 6291456"` (tabs or commas between them work too).

A name may be written with or without its `net.ipv4.` / `net.core.` prefix (or as a path,
`net/ipv4/tcp_rmem`). Whether the name exists on the kernel and the value is in range is the
profile's to say (`Sysctls.with_overrides`, whose messages name the sysctl and the fix); this
module adds where the setting came from (the scenario file, `--sysctl`).
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from tcpsim.core.sysctl import (STRING_SYSCTLS, SysctlError, Sysctls, known_name, long_name,
                                short_name, unknown_sysctl)

_INT = re.compile(r"^[-+]?(0[xX][0-9a-fA-F]+|0|[1-9][0-9]*)$")
FORMS = "an integer, or three integers as [4096,131072,6291456] or \"4096 131072 6291456\""


def _int(word: str, name: str, raw: Any) -> int:
    word = word.strip()
    if not _INT.match(word):
        if re.fullmatch(r"[-+]?0[0-7]+", word):
            raise SysctlError(f"sysctl {name}: {word!r} has a leading zero (the kernel reads it as "
                              "octal); write the number in decimal")
        raise SysctlError(f"sysctl {name}: expected {FORMS}, got {raw!r}")
    return int(word, 0)


def parse_value(value: Any, name: str) -> Any:
    """A value in any accepted form -> an int or a list of ints. TOML integers, booleans and
    lists pass through unchanged (the profile's validation refuses what it must, with its
    own message); strings are read as the kernel would read them. A value that cannot be
    read under a name tcpsim does not know blames the name (a misspelling), not the value."""
    if not isinstance(value, str) or short_name(name) in STRING_SYSCTLS:
        return value
    try:
        return _parse_text(value, name)
    except SysctlError:
        if not known_name(name):
            raise SysctlError(unknown_sysctl(name)) from None
        raise


def _parse_text(value: str, name: str) -> Any:
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            raise SysctlError(f"sysctl {name}: expected {FORMS}, got {value!r}") from None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in parsed):
            raise SysctlError(f"sysctl {name}: expected {FORMS}, got {value!r}")
        return parsed
    words = [w for w in re.split(r"[\s,]+", text) if w]
    if len(words) > 1:
        return [_int(w, name, value) for w in words]
    return _int(text, name, value)


def parse_option(item: str, option: str = "--sysctl") -> tuple[str, Any]:
    """'NAME=VALUE' (a `--sysctl` argument) -> (NAME, value)."""
    name, sep, value = item.partition("=")
    name = name.strip()
    if not sep or not name or not value.strip():
        raise SysctlError(f"{option} {item}: expected NAME=VALUE, e.g. "
                          "net.ipv4.tcp_shrink_window=1 or net.ipv4.tcp_rmem=[4096,131072,6291456]")
    try:
        return name, parse_value(value, name)
    except SysctlError as exc:
        raise SysctlError(_from(option, str(exc))) from None


def parse_options(items: list[str], option: str = "--sysctl") -> dict[str, Any]:
    """Every `--sysctl NAME=VALUE` -> {NAME: value} (a later one wins)."""
    return dict(parse_option(item, option) for item in items)


def parse_table(table: dict[str, Any], where: str = "sysctl", prefix: str = "") -> dict[str, Any]:
    """A scenario's [sysctl] table -> {name: value}. Names keep their spelling; an unquoted
    dotted key (`net.ipv4.tcp_rmem = ...`, which TOML reads as nested tables) is joined back
    into its dotted name, the name an error gives (`prefix`: the keys above this table)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(parse_table(value, where, f"{name}."))
        else:
            out[name] = parse_value(value, name)
    return out


def kernel_name(name: str) -> str:
    """The name `sysctl -w` takes: a bare receive-path name gets its prefix (`tcp_rmem` ->
    `net.ipv4.tcp_rmem`, `rmem_max` -> `net.core.rmem_max`); a path becomes dotted; a full
    name is kept."""
    name = name.replace("/", ".")
    return name if "." in name else long_name(name)


def check(settings: dict[str, Any], profile: Any, where: str = "") -> Sysctls:
    """The profile's sysctls with `settings` applied, validated against the names and ranges
    that profile's kernel has; an error starts with `where` (a file name, `--sysctl`)."""
    try:
        return profile.default_sysctls().with_overrides(settings, known=profile.known_sysctls(),
                                                        profile=profile.name)
    except SysctlError as exc:
        raise SysctlError(_from(where, str(exc)) if where else str(exc)) from None


def _from(where: str, msg: str) -> str:
    """Prefix a sysctl message with where it came from: `--sysctl NAME: ...`, `FILE: sysctl ...`."""
    if where.startswith("-") and msg.startswith("sysctl "):
        return where + msg[len("sysctl"):]
    return f"{where}: {msg}"
