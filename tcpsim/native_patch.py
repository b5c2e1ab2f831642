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

from tcpsim.answers import INT64, RANGES
from tcpsim.policy import DECISION_POINTS, POINTS, own_classes, patch_label

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


# The constants of the era (tcpsim/policy.py Kind.CONSTANT) as the native kernel takes them:
# Rust method -> how the Python policy of the whole profile gives its value.
CONSTANTS: dict[str, Any] = {
    "release": lambda k: str(k.RELEASE),
    "sysctls": lambda k: sorted(k.SYSCTLS),
    "rmem2_default": lambda k: int(k.RMEM2_DEFAULT),
    "pingpong_thresh": lambda k: int(k.pingpong_thresh()),
    "default_scaling_ratio": lambda k: int(getattr(k, "DEFAULT_SCALING_RATIO", -1)),
    "collapse_ns_per_byte": lambda k: float(k.COLLAPSE_NS_PER_BYTE),
    "collapse_ns_fixed": lambda k: int(k.COLLAPSE_NS_FIXED),
    "initial_scaling_ratio": lambda k: int(k.initial_scaling_ratio()),
}
# what a patch may define for them (class attributes and methods of tcpsim/policy.py)
CONSTANT_NAMES = frozenset({"RELEASE", "SYSCTLS", "RMEM2_DEFAULT", "PINGPONG_THRESH",
                            "DEFAULT_SCALING_RATIO", "COLLAPSE_NS_PER_BYTE", "COLLAPSE_NS_FIXED",
                            "default_sysctls", "initial_scaling_ratio", "pingpong_thresh"})


def answer_range(point: str) -> tuple[int, int]:
    """The inclusive [lo, hi] of `point`'s int answer, as the native layer checks it."""
    lo, hi = RANGES.get(point, INT64)
    return lo, hi - 1


def split_patches(profile: Profile) -> tuple[list[str], list[tuple[int, tuple[type, ...]]]]:
    """(built-in patch names, Python layers) of `profile`: the native kernel composes the
    built-in patches in order, and each run of consecutive user patch classes becomes one
    Python layer, given with how many built-in patches lie below it (the Python engine's
    MRO: later patches first, so `super()` from a layer reaches the patches before it)."""
    from tcpsim.catalog import builtin_patches
    builtin = builtin_patches()
    names: list[str] = []
    layers: list[tuple[int, tuple[type, ...]]] = []
    run: list[type] = []
    for p in profile.patches:
        if builtin.get(patch_label(p)) is p:
            if run:
                layers.append((len(names), tuple(run)))
                run = []
            names.append(patch_label(p))
        else:
            run.append(p)
    if run:
        layers.append((len(names), tuple(run)))
    _check_order(profile, layers)
    return names, layers


def _check_order(profile: Profile, layers: list[tuple[int, tuple[type, ...]]]) -> None:
    """NativePatchError when a built-in patch after a Python one would not win where the
    Python engine's MRO makes it lose: the native kernel stacks each built-in patch on top
    of the layers before it, but a built-in patch whose mixin the era also has (shrink-window
    on linux-6.6, whose era has ShrinkWindowSysctl) sits below them in the MRO."""
    from tcpsim.catalog import builtin_patches
    if not layers or all(below == len(profile.patches) for below, _ in layers):
        return
    builtin = {p: patch_label(p) for p in builtin_patches().values()}
    mro = profile.policy_class().__mro__
    user_below: set[type] = set()
    for p in profile.patches:
        if p not in builtin:
            user_below.update(own_classes(p))
            continue
        mine = set(own_classes(p))
        for klass in own_classes(p):
            for name in vars(klass):
                if name not in DECISION_POINTS:
                    continue
                first = next(c for c in mro if name in vars(c))
                if first not in mine and first in user_below:
                    raise NativePatchError(
                        f"--policy {builtin[p]}: on {profile.name.split('+')[0]} this built-in "
                        f"patch's {name} sits below the Python patch "
                        f"{patch_label(first)} given before it; on the native engine give "
                        "built-in patches first, or use --engine python")


@lru_cache(maxsize=None)
def composed_class(user: tuple[type, ...]) -> type:
    """The user's patch classes over NativeBase, with what the native constructor reads:
    `__native_overrides__` (the points they define), `__patch_counters__` and
    `__patch_sysctls__` (what they add). A point the native kernel cannot call into Python
    for is NativePatchError (one line naming it and --engine python)."""
    if not hasattr(NativeBase, "win_from_space"):
        _install()
    allowed = set(_points())
    cls = type("+".join(p.__name__ for p in user) + "+Native", (*reversed(user), NativeBase), {})
    overrides: list[str] = []
    constants = False
    for klass in own_classes(cls, NativeBase):
        for name in vars(klass):
            if name in CONSTANT_NAMES:
                constants = True
            elif name in DECISION_POINTS and name not in overrides:
                if name not in allowed:
                    from tcpsim.catalog import patch_spec
                    raise NativePatchError(
                        f"--policy {patch_spec(klass, name)}: decision point {name} cannot be "
                        "overridden by a Python patch on the native engine yet (its arguments "
                        "are native objects the patch would change in place); --engine python "
                        "runs it")
                overrides.append(name)
    setattr(cls, "__native_overrides__", tuple(overrides))
    setattr(cls, "__native_answers__", tuple(     # the int answers' ranges (tcpsim/answers.py)
        (name, *answer_range(name)) for name in overrides
        if name in POINTS and POINTS[name].returns == "int"))
    setattr(cls, "__native_defines_constants__", constants)
    setattr(cls, "__patch_counters__", tuple((n, m) for p in user
                                             for n, m in getattr(p, "counters", {}).items()))
    setattr(cls, "__patch_sysctls__", tuple((s.name, s.default, s.lo, s.hi) for p in user
                                            for s in getattr(p, "new_sysctls", ())))
    return cls


@lru_cache(maxsize=None)
def profile_class(user: tuple[type, ...], profile: Profile) -> type:
    """composed_class(user) for one profile: the era's constants as the Python engine's
    whole composition gives them (`__native_constants__`, which the native layer returns
    when the user's classes define any constant; `profile.policy()` is the reference), and
    as attributes and methods of NativeBase's side, so a patch method reading
    `self.RMEM2_DEFAULT` or calling `self.pingpong_thresh()` gets what it would on the
    Python engine."""
    base = composed_class(user)
    k = profile.policy()
    values = {name: get(k) for name, get in CONSTANTS.items()}
    attrs: dict[str, Any] = {"__native_constants__": values if base.__native_defines_constants__
                             else None}
    for name in ("RELEASE", "SYSCTLS", "RMEM2_DEFAULT", "PINGPONG_THRESH",
                 "DEFAULT_SCALING_RATIO", "COLLAPSE_NS_PER_BYTE", "COLLAPSE_NS_FIXED"):
        if hasattr(k, name) and not hasattr(base, name):
            attrs[name] = getattr(k, name)
    for name in ("default_sysctls", "initial_scaling_ratio", "pingpong_thresh"):
        if not hasattr(base, name):
            attrs[name] = getattr(type(k), name)
    return type(base.__name__, (base,), attrs)


def native_layers(profile: Profile) -> tuple[list[str], list[tuple[int, type]]]:
    """(built-in patch names, [(built-in patches below, class)] of its Python layers): what
    the native socket and engine take (`py_policy`); NativePatchError when they cannot."""
    names, layers = split_patches(profile)
    return names, [(below, profile_class(user, profile)) for below, user in layers]
