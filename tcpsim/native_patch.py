"""A user's Python patch on the native engine: the class the native kernel calls into.

`--policy ./my_patch.py:Class` is a mixin over a kernel era (tcpsim/policy.py). On the native
engine the era and the built-in patches are Rust; the user's classes are composed over
`NativeBase` instead of the Python era, in the order the Python engine would put them
(`Profile.policy_class()`: later patches first), so `super().point(sk, ...)` in a patch
reaches `NativeBase.point`, which asks the native kernel underneath (native/src/py_patch.rs
`NativeSuper`). The points the user's classes define are found here, once per composition,
and the native socket calls into Python only at those (`__native_overrides__`).

The `sk` a patch method receives on this engine is a view of the native socket
(tcpsim._native.SocketView): `sk.rcv.rcv_nxt`, `sk.mib.X += 1`, `sk.sysctl.x`, `sk.now`,
`sk.trace(event, detail)` read and write the native fields, during that call only.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tcpsim.policy import DECISION_POINTS, own_classes, patch_label

if TYPE_CHECKING:
    from tcpsim.policy import Profile


class NativePatchError(ValueError):
    """A Python patch the native engine cannot run (the message names the patch and fix)."""


def _points() -> tuple[str, ...]:
    from tcpsim import _native
    return tuple(_native.PY_PATCH_POINTS)


class NativeBase:
    """The native kernel underneath a Python patch: every point it may override asks the
    Rust era and built-in patches below (`_native_super`, set per socket by the native
    constructor)."""

    _native_super: Any


def _forward(name: str) -> Any:
    def point(self: NativeBase, *args: Any) -> Any:
        return self._native_super.call(name, args)
    point.__name__ = point.__qualname__ = name
    point.__doc__ = f"`{name}` of the native kernel underneath."
    return point


def _install() -> None:
    for name in _points():
        setattr(NativeBase, name, _forward(name))


def split_patches(profile: Profile) -> tuple[list[str], tuple[type, ...]]:
    """(built-in patch names, user patch classes) of `profile`; the native kernel composes the
    built-in ones, the user's go on top, so they must come after every built-in patch."""
    from tcpsim.catalog import builtin_patches
    builtin = builtin_patches()
    names: list[str] = []
    user: list[type] = []
    for p in profile.patches:
        label = patch_label(p)
        if builtin.get(label) is p:
            if user:
                raise NativePatchError(
                    f"--policy {label}: on the native engine built-in patches go before "
                    f"Python patches ({patch_label(user[0])}); reorder the --policy options "
                    "or use --engine python")
            names.append(label)
        else:
            user.append(p)
    return names, tuple(user)


@lru_cache(maxsize=None)
def composed_class(user: tuple[type, ...]) -> type:
    """The user's patch classes over NativeBase, with what the native constructor reads:
    `__native_overrides__` (the points they define), `__patch_counters__` and
    `__patch_sysctls__` (what they add)."""
    if not hasattr(NativeBase, "win_from_space"):
        _install()
    allowed = set(_points())
    cls = type("+".join(p.__name__ for p in user) + "+Native", (*reversed(user), NativeBase), {})
    overrides: list[str] = []
    for klass in own_classes(cls, NativeBase):
        for name in vars(klass):
            if name in DECISION_POINTS and name not in overrides:
                if name not in allowed:
                    raise NativePatchError(
                        f"--policy {patch_label(klass)}: decision point {name} cannot be "
                        "overridden by a Python patch on the native engine yet; use "
                        "--engine python")
                overrides.append(name)
    setattr(cls, "__native_overrides__", tuple(overrides))
    setattr(cls, "__patch_counters__", tuple((n, m) for p in user
                                             for n, m in getattr(p, "counters", {}).items()))
    setattr(cls, "__patch_sysctls__", tuple((s.name, s.default, s.lo, s.hi) for p in user
                                            for s in getattr(p, "new_sysctls", ())))
    return cls
