"""The catalogue of kernel profiles and patches shipped in models/, plus user policy files.

`get_profile("linux-6.1", patches=["shrink-window", "./my.py:MyPatch"])` returns a Profile
ready to build sockets. Built-in names come from every module in tcpsim.models (a module
defines PROFILE or PATCH); a user policy is `path.py:ClassName`.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from pathlib import Path

import tcpsim.models
import tcpsim.models.patches
from tcpsim.policy import Patch, Profile


class ProfileError(ValueError):
    """An unknown profile or patch, or a policy file that cannot be loaded."""


def _modules(package) -> list:
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
    """Every PATCH defined in models/patches/."""
    return {m.PATCH.name: m.PATCH for m in _modules(tcpsim.models.patches) if hasattr(m, "PATCH")}


def load_policy_file(spec: str) -> type:
    """Load `path.py:ClassName` (a user's patch) without touching the package."""
    path_s, _, cls_name = spec.rpartition(":")
    if not path_s or not cls_name:
        raise ProfileError(f"--policy {spec}: expected a built-in patch name or FILE.py:ClassName")
    path = Path(path_s)
    if not path.is_file():
        raise ProfileError(f"--policy {spec}: file {path} not found")
    mod_name = f"tcpsim_user_policy_{abs(hash(str(path.resolve())))}"
    module_spec = importlib.util.spec_from_file_location(mod_name, path)
    if module_spec is None or module_spec.loader is None:
        raise ProfileError(f"--policy {spec}: cannot load {path} as Python")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:  # a user's file: report, do not crash
        raise ProfileError(f"--policy {spec}: {path} failed to import: {type(exc).__name__}: {exc}") from None
    cls = getattr(module, cls_name, None)
    if not isinstance(cls, type):
        raise ProfileError(f"--policy {spec}: {path} defines no class {cls_name}")
    return cls


def get_patch(spec: str) -> type:
    """A built-in patch by name, or a user class from `file.py:Class`."""
    patches = builtin_patches()
    if spec in patches:
        return patches[spec]
    if ":" in spec:
        return load_policy_file(spec)
    raise ProfileError(f"unknown patch {spec!r}; built-in patches: {', '.join(patches) or 'none'}; "
                       "or give FILE.py:ClassName")


def get_profile(name: str, patches: list[str] | tuple[str, ...] = ()) -> Profile:
    """A profile by name with patches applied in order."""
    profiles = builtin_profiles()
    if name not in profiles:
        raise ProfileError(f"unknown profile {name!r}; choose one of: {', '.join(profiles)}")
    profile = profiles[name]
    if patches:
        profile = profile.with_patches(*(get_patch(p) for p in patches))
    return profile


__all__ = ["Patch", "Profile", "ProfileError", "builtin_patches", "builtin_profiles",
           "get_patch", "get_profile", "load_policy_file"]
