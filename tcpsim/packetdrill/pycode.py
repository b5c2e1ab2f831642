"""Evaluate a `%{ }%` block in a restricted namespace.

The blocks in packetdrill scripts are short assertions over tcp_info values
(`assert 990 <= tcpi_last_data_recv <= 1010, tcpi_last_data_recv`). The code is parsed with
`ast` and must use only: assignments to plain names, `assert`, `if`/`pass`, expressions made
of literals, names, arithmetic, comparisons, boolean logic, conditional expressions, tuples
and lists, and calls of a few pure built-ins (abs, min, max, int, float, round, len, bool,
print). No attribute access, subscripts, imports, definitions, loops or comprehensions: with
those gone, no name leads to Python's internals. It runs with no built-ins other than those.

`run_block()` returns None when the block passes, else a `CodeFailure` with the message
packetdrill's Python would print (`AssertionError: 1460`), or an `unsupported:` message for a
construct or name outside the subset (an unknown `tcpi_` field, for instance).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

_NODES: tuple[type, ...] = (
    ast.Module, ast.Expr, ast.Assert, ast.Assign, ast.If, ast.Pass,
    ast.Name, ast.Load, ast.Store, ast.Constant, ast.Tuple, ast.List,
    ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod,
    ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift,
    ast.USub, ast.UAdd, ast.Not, ast.Invert, ast.And, ast.Or,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
    ast.JoinedStr, ast.FormattedValue,
)

_MAX_SHIFT = 256


@dataclass(frozen=True, slots=True)
class CodeFailure:
    message: str
    unsupported: bool = False


def _builtins(out: list[str]) -> dict[str, Any]:
    def _print(*args: Any, **kwargs: Any) -> None:
        out.append(" ".join(str(a) for a in args))
    return {"abs": abs, "min": min, "max": max, "int": int, "float": float, "round": round,
            "len": len, "bool": bool, "print": _print, "True": True, "False": False,
            "None": None}


def check_code(code: str) -> CodeFailure | None:
    """None if `code` stays inside the subset, else why not (without running it)."""
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as exc:
        return CodeFailure(f"SyntaxError: {exc.msg}")
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            return CodeFailure(f"unsupported: Python construct {type(node).__name__} in %{{ }}% "
                               "code", unsupported=True)
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _builtins([])):
            return CodeFailure("unsupported: only abs, min, max, int, float, round, len, bool "
                               "and print may be called in %{ }% code", unsupported=True)
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            return CodeFailure(f"unsupported: name {node.id} in %{{ }}% code", unsupported=True)
        if (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.LShift, ast.RShift))
                and not (isinstance(node.right, ast.Constant)
                         and isinstance(node.right.value, int)
                         and 0 <= node.right.value <= _MAX_SHIFT)):
            return CodeFailure("unsupported: shifts need a constant count in %{ }% code",
                               unsupported=True)
    return None


def run_block(code: str, names: dict[str, Any]) -> CodeFailure | None:
    """Run one block against `names` (a tcp_info snapshot); None when it passes."""
    problem = check_code(code)
    if problem is not None:
        return problem
    printed: list[str] = []
    scope = dict(names)
    try:
        exec(compile(ast.parse(code, mode="exec"), "<packetdrill code>", "exec"),  # noqa: S102
             {"__builtins__": _builtins(printed)}, scope)
    except AssertionError as exc:
        detail = f": {exc}" if str(exc) else ""
        return CodeFailure(f"AssertionError{detail}")
    except NameError as exc:
        name = getattr(exc, "name", None) or str(exc)
        if name.startswith("tcpi_"):
            return CodeFailure(f"unsupported: tcp_info field {name} is not modelled",
                               unsupported=True)
        if name.startswith("SK_MEMINFO_"):
            return CodeFailure(f"unsupported: meminfo field {name} is not modelled",
                               unsupported=True)
        return CodeFailure(f"NameError: {exc}")
    except Exception as exc:  # noqa: BLE001 - any error in the user's code is its failure
        return CodeFailure(f"{type(exc).__name__}: {exc}")
    return None
