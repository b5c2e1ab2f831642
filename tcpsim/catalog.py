"""The catalogue of kernel profiles and patches shipped in models/, plus user policy files.

`get_profile("linux-6.1", patches=["shrink-window", "./my.py:MyPatch"])` returns a Profile
ready to build sockets. Built-in names come from every module in tcpsim.models (a module
defines PROFILE or PATCH); a user policy is `path.py:ClassName`.

Every patch is checked against the declaration in tcpsim/policy.py before it is applied
(`check_patch`): its public methods must be declared decision points with the declared
parameters, its upper-case attributes declared constants, and no patch may be applied twice.
When a patch raises while a simulation runs, `patch_failure()` turns the exception into one
line naming the patch, the decision point and the line.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import pkgutil
import sys
import traceback
from pathlib import Path
from types import CodeType, ModuleType

import tcpsim.models
from tcpsim import answers
from tcpsim.answers import PatchAnswerError
import tcpsim.models.patches
from tcpsim.core.sysctl import SysctlSpec
from tcpsim.policy import (
    DECISION_POINTS, PATCH_ATTRIBUTES, POINTS, KernelPolicy, Patch, Profile, declare_additions,
    own_classes, patch_label,
)


class ProfileError(ValueError):
    """An unknown profile or patch, or a policy file that cannot be loaded."""


def _modules(package: ModuleType) -> list[ModuleType]:
    mods = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.ispkg:
            mods.append(importlib.import_module(f"{package.__name__}.{info.name}"))
    return mods


def builtin_profiles() -> dict[str, Profile]:
    """Every PROFILE defined in models/, in release order."""
    found = [m.PROFILE for m in _modules(tcpsim.models) if hasattr(m, "PROFILE")]
    found.sort(key=lambda p: tuple(int(x) for x in p.kernel.RELEASE.split(".")))
    return {p.name: p for p in found}


def builtin_patches() -> dict[str, type]:
    """Every PATCH defined in models/patches/ (each checked like a user's patch)."""
    found = {m.PATCH.name: m.PATCH for m in _modules(tcpsim.models.patches) if hasattr(m, "PATCH")}
    for cls in found.values():
        check_patch(cls)
    return found


# code object of a patch's method -> (patch, decision point), for patch_failure()
_PATCH_CODE = answers.PATCH_CODE


def check_patch(cls: type, spec: str = "") -> type:
    """Check a patch class against the declared decision points; ProfileError (one line) if
    a public method is not a decision point, takes other parameters than declared, or an
    upper-case attribute is not a declared constant. Returns the class."""
    where = f"--policy {spec or patch_label(cls)}"
    if issubclass(cls, KernelPolicy):
        era = next(k for k in cls.__mro__[1:] if issubclass(k, KernelPolicy))
        raise ProfileError(f"{where}: {cls.__name__} subclasses the kernel class {era.__name__}; "
                           "a patch is a mixin: derive it from tcpsim.policy.Patch (or nothing) "
                           "and choose the kernel with -p")
    for klass in own_classes(cls, object):
        for name, value in vars(klass).items():
            if name.startswith("_") or name in PATCH_ATTRIBUTES:
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if callable(value):
                _check_method(where, klass, name, value)
            elif name.isupper() and name not in POINTS:
                raise ProfileError(f"{where}: {klass.__name__}.{name} is not a constant of the "
                                   f"era{_nearest(name)}")
            elif name in POINTS and not answers.constant_ok(POINTS[name].signature, value):
                decl = POINTS[name].signature.lstrip(": ")
                raise ProfileError(f"{where}: {klass.__name__}.{name} = {value!r}: {name} is "
                                   f"declared as {decl}; give a value of that type")
    _check_additions(where, cls)
    if not any(name in POINTS for klass in own_classes(cls, object) for name in vars(klass)):
        raise ProfileError(f"{where}: {cls.__name__} overrides no decision point, so it would "
                           "change nothing; define one of the methods tcpsim profiles show "
                           "lists (e.g. def shrink_allowed(self, sk) -> bool)")
    return cls


def _check_additions(where: str, cls: type) -> None:
    """The sysctls and counters a patch declares: the right shapes, no core counter."""
    counters = getattr(cls, "counters", {})
    if not isinstance(counters, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in counters.items()):
        raise ProfileError(f"{where}: counters must be a dict {{name: one-line meaning}}")
    specs = getattr(cls, "new_sysctls", ())
    if not isinstance(specs, tuple) or not all(isinstance(s, SysctlSpec) for s in specs):
        raise ProfileError(f"{where}: new_sysctls must be a tuple of "
                           "tcpsim.core.sysctl.SysctlSpec(name, default, lo, hi, doc)")
    for klass in own_classes(cls, object):
        try:
            declare_additions(klass)
        except ValueError as exc:
            raise ProfileError(f"{where}: {exc}; a patch's counters must be new") from None


def _check_method(where: str, klass: type, name: str, fn: object) -> None:
    point = POINTS.get(name)
    if point is None or not point.is_method:
        raise ProfileError(f"{where}: {klass.__name__}.{name} is not a decision point"
                           f"{_nearest(name)}; private helpers start with _")
    try:
        params = tuple(inspect.signature(fn).parameters)[1:]   # type: ignore[arg-type]
    except (TypeError, ValueError):
        params = ()
    if params != point.params:
        raise ProfileError(f"{where}: {klass.__name__}.{name} takes ({', '.join(params)}); "
                           f"the decision point is {name}{point.signature}")
    code = getattr(fn, "__code__", None)
    if isinstance(code, CodeType):
        _PATCH_CODE[code] = (where.split(" ", 1)[1], name)


def _nearest(name: str) -> str:
    close = difflib.get_close_matches(name, DECISION_POINTS, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else " (tcpsim profiles show linux-6.18 lists them)"


def patch_spec(klass: type, method: str) -> str:
    """How the user named the patch defining `method` (`./my.py:Class` as given to
    --policy; the patch's label when it was not loaded from a file)."""
    code = getattr(vars(klass).get(method), "__code__", None)
    return _PATCH_CODE.get(code, (patch_label(klass), ""))[0]  # type: ignore[arg-type]


def wrong_answer(method: object, point: str, value: object, expected: str) -> PatchAnswerError:
    """The error for a patch method `method` (bound) whose answer `value` at `point` the
    kernel does not take (native/src/py_patch.rs calls this; the Python engine's check makes
    the same line: tcpsim/answers.py). `expected` is ignored: the declaration says."""
    return answers.wrong_answer(method, point, value, POINTS[point].returns)


def changed_argument(method: object, point: str, arg: str) -> PatchAnswerError:
    """The error for a patch method that changed its `seg`/`skb` argument on the native
    engine, where it is a copy (the change would be lost; native/src/py_patch.rs)."""
    patch, at = answers.method_at(method, point)
    return PatchAnswerError(
        f"patch {patch} failed in decision point {point}{at}: it changed its {arg} argument, "
        "a copy on the native engine (the kernel would not see the change); --engine python "
        "runs it")


def patch_failure(exc: BaseException) -> str:
    """One line for an exception raised inside a patch's method while a simulation ran
    ("" when no patch method is on the traceback: not the patch's fault)."""
    if isinstance(exc, PatchAnswerError):
        return str(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    codes = _tb_codes(exc)
    for frame, code in zip(reversed(frames), reversed(codes)):
        hit = _PATCH_CODE.get(code)
        if hit is None:
            continue
        patch, point = hit
        raised = frames[-1]
        at = f"{frame.filename}:{frame.lineno}"
        deeper = "" if raised is frame else f" (raised at {raised.filename}:{raised.lineno})"
        if isinstance(exc, answers.FieldWriteError):   # named as the Python engine names it
            return (f"patch {patch} failed in decision point {point} at {frame.filename}:"
                    f"{code.co_firstlineno}: {exc}")
        return (f"patch {patch} failed in decision point {point} at {at}{deeper}: "
                f"{type(exc).__name__}: {exc}")
    applied = _patches_in_play(exc)
    if not applied:
        return ""
    raised = frames[-1]
    points = ", ".join(sorted({point for _, point in applied}))
    labels = ", ".join(sorted({patch for patch, _ in applied}))
    return (f"the kernel failed at {raised.filename}:{raised.lineno} with patch {labels} "
            f"applied: {type(exc).__name__}: {exc} (check what its decision points {points} "
            "return)")


def _patches_in_play(exc: BaseException) -> list[tuple[str, str]]:
    """(patch, decision point) of every patch method of the kernel object (a frame's `self`)
    whose method raised: a patch's wrong return value fails in the kernel code using it."""
    tb = exc.__traceback__
    while tb is not None:
        obj = tb.tb_frame.f_locals.get("self")
        hits = [_PATCH_CODE[code] for klass in type(obj).__mro__ for attr in vars(klass).values()
                if (code := getattr(attr, "__code__", None)) in _PATCH_CODE] if obj is not None else []
        if hits:
            return hits
        tb = tb.tb_next
    return []


def _tb_codes(exc: BaseException) -> list[CodeType]:
    codes = []
    tb = exc.__traceback__
    while tb is not None:
        codes.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    return codes


def load_policy_file(spec: str) -> type:
    """Load `path.py:ClassName` (a user's patch) without touching the package; `path.py`
    alone when the file defines one patch class (see `_the_patch_class`)."""
    path_s, _, cls_name = spec.rpartition(":")
    if not path_s and spec.endswith(".py"):
        path_s, cls_name = spec, ""
    if not path_s or (not cls_name and not path_s.endswith(".py")):
        raise ProfileError(f"--policy {spec}: expected a built-in patch name or FILE.py:ClassName")
    path = Path(path_s)
    if not path.is_file():
        raise ProfileError(f"--policy {spec}: file {path} not found")
    mod_name = f"tcpsim_user_policy_{abs(hash(str(path.resolve())))}"
    if mod_name in sys.modules:                  # the same file twice: the same classes
        return _class_of(spec, path, sys.modules[mod_name], cls_name)
    module_spec = importlib.util.spec_from_file_location(mod_name, path)
    if module_spec is None or module_spec.loader is None:
        raise ProfileError(f"--policy {spec}: cannot load {path} as Python")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    try:
        module_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a user's file: report, do not crash (or exit)
        del sys.modules[mod_name]
        raise ProfileError(f"--policy {spec}: {path} failed to import: {type(exc).__name__}: {exc}") from None
    return _class_of(spec, path, module, cls_name)


def _class_of(spec: str, path: Path, module: ModuleType, cls_name: str) -> type:
    if not cls_name:
        return _the_patch_class(spec, path, module)
    cls = getattr(module, cls_name, None)
    if not isinstance(cls, type):
        raise ProfileError(f"--policy {spec}: {path} defines no class {cls_name}")
    return check_patch(cls, spec)


def _the_patch_class(spec: str, path: Path, module: ModuleType) -> type:
    """The one patch class a file defines (`--policy FILE.py`): a public class of the file
    itself (not imported) that passes `check_patch` and overrides or declares something.
    None or several: ProfileError naming the fix."""
    found, refused = [], []
    for name, cls in vars(module).items():
        if name.startswith("_") or not isinstance(cls, type) or cls.__module__ != module.__name__:
            continue
        if issubclass(cls, KernelPolicy) or not any(
                not k.startswith("_") for klass in own_classes(cls, object) for k in vars(klass)):
            continue
        try:
            found.append(check_patch(cls, f"{path}:{name}"))
        except ProfileError as exc:
            refused.append(str(exc))
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(f"{path}:{c.__name__}" for c in found)
        raise ProfileError(f"--policy {spec}: {path} defines {len(found)} patch classes; "
                           f"name one: {names}")
    why = f" ({refused[0]})" if len(refused) == 1 else ""
    raise ProfileError(f"--policy {spec}: {path} defines no patch class{why}; "
                       "see docs/writing-a-patch.md")


def get_patch(spec: str) -> type:
    """A built-in patch by name, or a user class from `file.py:Class`."""
    patches = builtin_patches()
    if spec in patches:
        return patches[spec]
    if ":" in spec or spec.endswith(".py"):
        return load_policy_file(spec)
    raise ProfileError(f"unknown patch {spec!r}; built-in patches: {', '.join(patches) or 'none'}; "
                       "or give FILE.py:ClassName (FILE.py alone when it holds one patch class)")


def get_profile(name: str, patches: list[str] | tuple[str, ...] = ()) -> Profile:
    """A profile by name with patches applied in order (each at most once)."""
    profiles = builtin_profiles()
    builtin_patches()           # declares the built-in patches' sysctls and counters
    if name not in profiles:
        raise ProfileError(f"unknown profile {name!r}; choose one of: {', '.join(profiles)}")
    profile = profiles[name]
    if not patches:
        return profile
    classes = [get_patch(p) for p in patches]
    for i, cls in enumerate(classes):
        if cls in classes[:i]:
            raise ProfileError(f"--policy {patches[i]}: the patch is given twice; apply each "
                               "patch once")
    profile = profile.with_patches(*classes)
    try:
        profile.policy_class()
    except TypeError as exc:    # e.g. no consistent method resolution order
        raise ProfileError(f"--policy {'+'.join(patches)}: these patches cannot be combined "
                           f"on {name}: {exc}") from None
    except Exception as exc:    # a user's class refusing to be composed (__init_subclass__)
        raise ProfileError(f"--policy {'+'.join(patches)}: the kernel class with the patch "
                           f"cannot be made: {type(exc).__name__}: {exc}") from None
    return profile


__all__ = ["Patch", "Profile", "ProfileError", "builtin_patches", "builtin_profiles",
           "check_patch", "get_patch", "get_profile", "load_policy_file", "patch_failure"]
