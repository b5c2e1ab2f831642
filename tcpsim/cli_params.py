"""Plain command-line values (str, int, float, bool, Path and lists of them) converted
without pydantic.

typer 0.29 converts every parameter's value, even an absent one, through a pydantic
TypeAdapter it builds on first use: importing pydantic and building the adapters of one
command takes about 0.1 s, a fifth of `tcpsim run` on a short scenario. `plain_params()`
gives each parameter of a plain type a converter that returns what typer's adapter returns
for the values a command line gives (a decimal integer, a decimal number, a string, a
flag's bool, a file name) and hands any other value to typer's own adapter -- so a bad
value (`--seed abc`) is refused by typer with its usual message. With a typer that has no
such adapters (older versions use click's types) nothing is changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, List, Optional

try:  # typer >= 0.29: coercion through pydantic TypeAdapters, built lazily per parameter
    from typer._coercion import RuntimeParam, build_runtime_param
    from typer._param_types import coerce_cli_path
except (ImportError, AttributeError):  # pragma: no cover - another typer: its own stays
    RuntimeParam = None  # type: ignore[assignment,misc]

_DECLINE = object()          # "not a plain value": typer's own adapter converts it
_INT = re.compile(r"[+-]?[0-9]{1,100}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]{1,100}\.?[0-9]{0,100}|\.[0-9]{1,100})")


def _int(value: Any, param: Any, ctx: Any) -> Any:
    if type(value) is int:
        return value
    if type(value) is str and _INT.fullmatch(value):
        return int(value)
    return _DECLINE


def _float(value: Any, param: Any, ctx: Any) -> Any:
    if type(value) is float:
        return value
    if type(value) is int or (type(value) is str and _FLOAT.fullmatch(value)):
        return float(value)
    return _DECLINE


def _str(value: Any, param: Any, ctx: Any) -> Any:
    return value if type(value) is str else _DECLINE


def _bool(value: Any, param: Any, ctx: Any) -> Any:
    return value if type(value) is bool else _DECLINE


def _path(info: Any) -> Callable[[Any, Any, Any], Any]:
    """A file name: typer's own checks (exists, readable, ...) on a Path made here."""
    def convert(value: Any, param: Any, ctx: Any) -> Any:
        if type(value) is str:
            value = Path(value)
        if not isinstance(value, Path):
            return _DECLINE
        return coerce_cli_path(value, info, path_type=Path, param=param, ctx=ctx)
    return convert


def _converter(annotation: Any, info: Any) -> Optional[Callable[[Any, Any, Any], Any]]:
    """The plain converter of `annotation`, None if it has none."""
    if annotation in (int, float, str, bool):
        return {int: _int, float: _float, str: _str, bool: _bool}[annotation]
    if annotation is Path and info.path_type is None:
        return _path(info)
    if annotation in (List[str], List[Path], list[str], list[Path]):
        item = _converter(annotation.__args__[0], info)
        return None if item is None else _listing(item)
    return None


def _listing(item: Callable[[Any, Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    def convert(value: Any, param: Any, ctx: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return _DECLINE
        out = [item(v, param, ctx) for v in value]
        return _DECLINE if any(v is _DECLINE for v in out) else out
    return convert


if RuntimeParam is not None:
    @dataclass(frozen=True)
    class PlainParam(RuntimeParam):  # type: ignore[misc,valid-type]
        """A parameter's conversion: the plain converter, else typer's adapter."""

        convert: Callable[[Any, Any, Any], Any]
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            out = self.convert(value, param, ctx)
            if out is _DECLINE:
                out = build_runtime_param(self.descriptor)._coerce_value(value, param, ctx)
            return out


def plain_params(command: Any) -> None:
    """Give every plain parameter of `command` and its subcommands, their --help options
    included, the plain converter (before typer builds its adapter)."""
    if RuntimeParam is None:
        return
    for param in command.params:
        _plain(param)
    made = getattr(command, "get_help_option", None)
    if made is not None and "get_help_option" not in vars(command):  # made on first use

        def get_help_option(ctx: Any) -> Any:
            option = made(ctx)
            if option is not None:
                _plain(option)
            return option
        command.get_help_option = get_help_option
    for sub in getattr(command, "commands", {}).values():
        plain_params(sub)


def _plain(param: Any) -> None:
    """`param`'s conversion: the plain converter, if its type has one and typer has not
    built its own yet. Whatever this typer does not have as expected stays typer's."""
    desc = getattr(param, "type_descriptor", None)
    info = getattr(desc, "parameter_info", None)
    if info is None or getattr(param, "_runtime_param", 0) is not None \
            or getattr(desc, "file_annotation", 0) is not None \
            or getattr(info, "parser", 0) is not None:
        return
    convert = _converter(desc.annotation, info)
    if convert is None:
        return
    try:
        plain = PlainParam(parameter_info=info, annotation=desc.annotation, convert=convert,
                           descriptor=desc)
    except TypeError:  # pragma: no cover - another typer's RuntimeParam
        return
    param._runtime_param = plain
