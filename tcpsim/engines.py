"""The socket factory: one call that builds a Python or a native TcpSocket.

Both engines offer the same sans-IO surface (tcpsim/core/socket.py's theory of operation;
the native class is tcpsim._native.TcpSocket): callers that go through `make_socket()` never
know which one runs. "python" is the reference implementation, "native" the Rust twin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tcpsim.core.devices import Device, device as make_device
from tcpsim.core.sysctl import short_name

if TYPE_CHECKING:
    from tcpsim.core.sysctl import Sysctls
    from tcpsim.policy import Profile

ENGINES = ("python", "native")


class EngineError(ValueError):
    """An engine that does not exist or is not built (the message names the fix)."""


def native_socket_class() -> type:
    """tcpsim._native.TcpSocket, or EngineError saying what is missing and how to build it."""
    try:
        from tcpsim import _native
    except ImportError as exc:
        raise EngineError(
            f"engine 'native': the extension tcpsim._native is not built ({exc}); build it with "
            "`python3 -m pip install -e .` (or `python3 -c 'import setuptools; "
            "setuptools.setup()' build_rust --inplace --release`), or use --engine python"
        ) from None
    cls = getattr(_native, "TcpSocket", None)
    if cls is None:
        raise EngineError("engine 'native': this build of tcpsim._native has no TcpSocket yet "
                          "(the native socket is not built); use --engine python")
    return cls


def native_available() -> bool:
    """Whether make_socket("native", ...) can build a socket."""
    try:
        native_socket_class()
    except EngineError:
        return False
    return True


def check_engine(engine: str) -> str:
    """`engine` if it names an engine that can run here, else EngineError."""
    if engine not in ENGINES:
        raise EngineError(f"unknown engine {engine!r}; choose one of: {', '.join(ENGINES)}")
    if engine == "native":
        native_socket_class()
    return engine


def patch_names(profile: Profile) -> list[str]:
    """The built-in names of the patches applied to `profile`, in order (the native
    registry composes a kernel from the profile's base name and these; a user's Python
    patches go on top, tcpsim/native_patch.py)."""
    from tcpsim.native_patch import split_patches
    return split_patches(profile)[0]


def base_profile_name(profile: Profile) -> str:
    """The profile's name without its patches ("linux-6.6+foo" -> "linux-6.6")."""
    return profile.name.split("+", 1)[0]


def make_socket(engine: str, profile: Profile, sysctl: Sysctls, device: str | Device,
                **kw: Any) -> Any:
    """A TcpSocket of `engine` ("python" or "native") for `profile` with `sysctl`, receiving
    through `device` (a device name or Device object, tcpsim/core/devices.py; the native
    engine is given its name). Keywords: name, mtu, initcwnd, nodelay, init_rwnd, hz -- and, Python
    engine only, sink and clock (objects the native engine cannot take). A profile with a
    user's Python patch (`--policy FILE.py:Class`) runs it on either engine: on the native
    one the Rust kernel calls into it at the points it overrides (tcpsim/native_patch.py)."""
    check_engine(engine)
    if engine == "python":
        from tcpsim.core.socket import TcpSocket
        dev = make_device(device) if isinstance(device, str) else device
        return TcpSocket(profile.policy(), sysctl, dev, **kw)
    name = device if isinstance(device, str) else device.name
    python_only = sorted(set(kw) & {"sink", "clock"})
    if python_only:
        raise EngineError(f"engine 'native' has no {', '.join(python_only)} argument; its "
                          "events come from take_events()")
    short = {short_name(name): value for name, value in sysctl.as_dict().items()}
    builtin, py_policy = native_policy(profile)
    if py_policy is not None:
        kw["py_policy"] = py_policy
    return native_socket_class()(base_profile_name(profile), builtin, short, name, **kw)


def native_policy(profile: Profile) -> tuple[list[str], list[tuple[int, type]] | None]:
    """How the native engine runs `profile`'s patches: the built-in ones by name, and the
    layers of the user's Python patches, each a class with the number of built-in patches
    below it (None without any; tcpsim/native_patch.py). EngineError (one line naming the
    patch and the fix) when the native engine cannot run them -- callers check once,
    before a run."""
    from tcpsim.native_patch import NativePatchError, native_layers
    try:
        builtin, layers = native_layers(profile)
        return builtin, layers or None
    except NativePatchError as exc:
        raise EngineError(str(exc)) from None
