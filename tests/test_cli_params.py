"""tcpsim/cli_params.py: the plain converters give what typer's own (pydantic) conversion
gives, and hand everything else to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List

import pytest

cli_params = pytest.importorskip("tcpsim.cli_params")
if cli_params.RuntimeParam is None:  # pragma: no cover - a typer without adapters
    pytest.skip("this typer converts values with click's types", allow_module_level=True)

from typer._coercion import build_runtime_param, resolve_type_descriptor  # noqa: E402
from typer.models import ArgumentInfo, OptionInfo  # noqa: E402

VALUES: dict[Any, list[Any]] = {
    int: ["5", "-5", "+5", "007", " 5", "5 ", "1_000", "5.0", "\u0665", "9" * 30, "9" * 120,
          1, True, "abc", "", "0x10"],
    float: ["1", "1.5", "-1.5", "+.5", "5.", "1e3", "inf", "nan", "", "x", ".", 1, 2.5, True],
    str: ["a", "", " b ", "é", 1],
    bool: [True, False, "true", "", 0],
    Path: ["a", "", ".", "x/y", "-", Path("p"), 3],
    List[str]: [(), ("a", "b"), ["x"], "ab", ("a", 1)],
    List[Path]: [(), ("a", "b/c"), ("a", 3)],
}


def _outcome(runtime: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", runtime._coerce_value(value, None, None)
    except Exception as exc:  # the same refusal, class and message
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("info", [OptionInfo, ArgumentInfo])
@pytest.mark.parametrize("annotation", list(VALUES), ids=repr)
def test_plain_conversion_is_typers(annotation: Any, info: type) -> None:
    desc = resolve_type_descriptor(annotation, info())
    convert = cli_params._converter(annotation, desc.parameter_info)
    assert convert is not None
    plain = cli_params.PlainParam(parameter_info=desc.parameter_info, annotation=annotation,
                                  convert=convert, descriptor=desc)
    typers = build_runtime_param(desc)
    for value in VALUES[annotation]:
        got, want = _outcome(plain, value), _outcome(typers, value)
        assert repr(got) == repr(want), value          # repr: nan is nan
        assert type(got[1]) is type(want[1]), value


def test_every_parameter_of_tcpsim_is_plain() -> None:
    """Each option and argument of every command gets the plain converter (a new one of
    another type would bring pydantic back into every run)."""
    import typer.main

    from tcpsim.cli import app

    top = typer.main.get_command(app)
    cli_params.plain_params(top)
    missed: list[str] = []

    def walk(command: Any, path: str) -> None:
        for param in command.params:
            if not isinstance(param._runtime_param, cli_params.PlainParam):
                missed.append(f"{path} {param.name}: {param.type_descriptor.annotation}")
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(top, "tcpsim")
    assert not missed
