"""What a patch's decision point may answer, and what a patch may write into the socket:
one contract, checked the same way on both engines.

The declared signature (tcpsim/policy.py) gives the type: `-> int`, `-> bool`, `-> str`,
`-> tuple[int, int]`, `-> None` (a procedure: its answer is ignored). An int is a Python int
and not a bool, within the point's range (RANGES: a window is in [0, 2**31), like the 32-bit
field it ends in; other ints within the native engine's 64-bit integers); a bool is True or
False, never "no". A socket field written by a patch keeps its declared type (an int field
takes an int within 64 bits, a bool field a bool).

Only patches from outside the package (a user's FILE.py:Class, a test's class) are checked:
the built-in eras and patches (tcpsim/models) are trusted, so a run without user patches
pays nothing. On the Python engine `checked_class` wraps the user's methods; on the native
engine the Rust patch layer (native/src/py_patch.rs) applies the same ranges, given it as
`__native_answers__` by tcpsim/native_patch.py. Both fail with the line `wrong_answer` makes.
"""

from __future__ import annotations

import functools
import operator
from types import CodeType
from typing import Any, Callable

INT64 = (-(2**63), 2**63)
WINDOW = (0, 2**31)

# decision point -> [lo, hi) of its int answer (the others: INT64; win_from_space and
# space_from_win convert a budget that may be negative -- free space below zero -- so they
# keep the sign: tests/test_answers.py runs the built-in eras against this table)
RANGES: dict[str, tuple[int, int]] = {
    "initial_rcv_wnd": WINDOW, "select_window": WINDOW,
    "advertise_window": WINDOW, "nomem_window": WINDOW, "sequence_window": WINDOW,
    "prune_queue": (-1, 1),
    "rcv_space_gate_us": (-1, 2**63),
    "collapse_cost_ns": (0, 2**63), "delack_max": (0, 2**63),
    "tso_defer_ack_window": (0, 2**63), "loss_probe_timeout": (0, 2**63),
}

# code object of a patch method -> (the patch as the user gave it, decision point): filled by
# the patch loader (tcpsim/catalog.py), read by the error messages here and there
PATCH_CODE: dict[CodeType, tuple[str, str]] = {}


class PatchAnswerError(TypeError):
    """A patch's decision point answered what the kernel cannot take, or the patch wrote
    what a socket field cannot hold: the message is the whole line, naming the patch, the
    point, the value and what is allowed."""


def _bound(lo: int, hi: int) -> str:
    def show(n: int) -> str:
        for e in (63, 62, 31):
            if abs(n) == 2**e:
                return f"{'-' if n < 0 else ''}2**{e}"
        return str(n)
    return f"[{show(lo)}, {show(hi)})"


def expected(point: str, returns: str) -> str:
    """What the kernel takes from `point` (declared to return `returns`), in words."""
    if returns == "int":
        lo, hi = RANGES.get(point, INT64)
        what = " (a window)" if (lo, hi) == WINDOW else ""
        return f"an int in {_bound(lo, hi)}{what}"
    return {"bool": "a bool (True or False)", "str": 'a str (a drop reason, or "")',
            "tuple[int, int]": "a tuple (start, end) of two ints"}.get(returns, returns)


def _is_int(v: Any) -> bool:
    return type(v) is int


def check(point: str, returns: str, value: Any) -> bool:
    """Whether `value` is an answer the kernel takes from `point`."""
    if returns == "int":
        lo, hi = RANGES.get(point, INT64)
        return _is_int(value) and lo <= value < hi
    if returns == "bool":
        return type(value) is bool
    if returns == "str":
        return type(value) is str
    if returns == "tuple[int, int]":
        return (type(value) is tuple and len(value) == 2
                and all(_is_int(v) and INT64[0] <= v < INT64[1] for v in value))
    return True                          # a procedure: its answer is ignored (both engines)


def constant_ok(signature: str, value: Any) -> bool:
    """Whether `value` fits a constant of the era declared `signature` (": int", ...)."""
    declared = signature.lstrip(": ")
    if declared == "int":
        return _is_int(value) and INT64[0] <= value < INT64[1]
    if declared == "float":
        return type(value) in (int, float) and value == value and abs(value) != float("inf")
    if declared == "str":
        return type(value) is str
    if declared == "frozenset[str]":
        return isinstance(value, frozenset) and all(type(v) is str for v in value)
    return True


def method_at(method: object, point: str) -> tuple[str, str]:
    """(patch as given, " at FILE:LINE") of a patch's (bound) method."""
    fn = getattr(method, "__func__", method)
    code = getattr(fn, "__code__", None)
    patch, _ = PATCH_CODE.get(code, (getattr(fn, "__qualname__", point), point))  # type: ignore[arg-type]
    at = f" at {code.co_filename}:{code.co_firstlineno}" if isinstance(code, CodeType) else ""
    return patch, at


def wrong_answer(method: object, point: str, value: object, returns: str) -> PatchAnswerError:
    """The error for patch method `method` whose answer `value` at `point` the kernel does
    not take (`returns`: the declared return type; the native layer passes it too)."""
    patch, at = method_at(method, point)
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return PatchAnswerError(
        f"patch {patch} failed in decision point {point}{at}: it returned {shown} "
        f"({type(value).__name__}) where the kernel takes {expected(point, returns)}")


class FieldWriteError(AttributeError):
    """A patch wrote what a socket field cannot hold (the native socket view raises it at
    the assignment; tcpsim.catalog.patch_failure adds the patch, point and line)."""


def _field_text(record: str, name: str, value: object, kind: str) -> str:
    takes = f"an int in {_bound(*INT64)}" if kind == "int" else "a bool (True or False)"
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"it set sk.{record}.{name} to {shown} ({type(value).__name__}) where the socket takes {takes}"


def field_error(record: str, name: str, value: object, kind: str) -> FieldWriteError:
    """The error for writing `value` into sk.RECORD.NAME, a `kind` field ("int", "bool")."""
    return FieldWriteError(_field_text(record, name, value, kind))


def wrong_field(method: object, point: str, record: str, name: str, value: object,
                kind: str) -> PatchAnswerError:
    """The error for a patch that left `value` in the socket field sk.RECORD.NAME, which
    holds a `kind` ("int" or "bool"): found after its method returned (the Python engine)."""
    patch, at = method_at(method, point)
    return PatchAnswerError(f"patch {patch} failed in decision point {point}{at}: "
                            + _field_text(record, name, value, kind))


# -- the Python engine: user patch methods wrapped ----------------------------------------------

RECORDS = ("conn", "rcv", "mem", "ack", "snd")


@functools.lru_cache(maxsize=None)
def _fields(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(int fields, bool fields) of a socket record class (tcpsim/core/state.py)."""
    import dataclasses
    ints, bools = [], []
    for f in dataclasses.fields(cls):
        t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        if t == "int":
            ints.append(f.name)
        elif t == "bool":
            bools.append(f.name)
    return tuple(ints), tuple(bools)


def _check_fields(sk: Any, method: object, point: str) -> None:
    """PatchAnswerError if a socket record field no longer holds its declared type."""
    for rec_name in RECORDS:
        rec = getattr(sk, rec_name, None)
        if rec is None:
            continue
        ints, bools = _fields(type(rec))
        if ints:
            values = operator.attrgetter(*ints)(rec) if len(ints) > 1 else (getattr(rec, ints[0]),)
            if set(map(type, values)) != {int} or min(values) < INT64[0] or max(values) >= INT64[1]:
                for n, v in zip(ints, values):
                    if type(v) is not int or not INT64[0] <= v < INT64[1]:
                        raise wrong_field(method, point, rec_name, n, v, "int")
        for n in bools:
            v = getattr(rec, n)
            if type(v) is not bool:
                raise wrong_field(method, point, rec_name, n, v, "bool")


def _check_mib(sk: Any, method: object, point: str) -> None:
    """PatchAnswerError if a counter of sk.mib no longer holds an int within 64 bits."""
    mib = getattr(sk, "mib", None)
    if mib is None:
        return
    from tcpsim.core.mib import COUNTERS
    values = operator.attrgetter(*COUNTERS)(mib)
    extra = getattr(mib, "__dict__", {})
    if set(map(type, values)) == {int} and all(type(v) is int for v in extra.values()) \
            and min(values) >= INT64[0] and max(values) < INT64[1]:
        return
    for n, v in [*zip(COUNTERS, values), *extra.items()]:
        if type(v) is not int or not INT64[0] <= v < INT64[1]:
            raise wrong_field(method, point, "mib", n, v, "int")


def checked_method(fn: Callable[..., Any], point: str, returns: str) -> Callable[..., Any]:
    """`fn` (a user patch's method for `point`) checking its answer (a decision) or, after a
    procedure -- the points that change the socket -- the socket's fields and counters."""
    if returns in ("int", "bool", "str", "tuple[int, int]"):
        @functools.wraps(fn)
        def point_checked(self: Any, sk: Any, *args: Any) -> Any:
            value = fn(self, sk, *args)
            if not check(point, returns, value):
                raise wrong_answer(fn, point, value, returns)
            return value
        return point_checked

    @functools.wraps(fn)
    def procedure_checked(self: Any, sk: Any, *args: Any) -> Any:
        value = fn(self, sk, *args)
        _check_fields(sk, fn, point)
        _check_mib(sk, fn, point)
        return value
    return procedure_checked
