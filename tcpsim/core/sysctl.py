"""Sysctls that shape the receive path and the sender, under their kernel names.

`Sysctls` is a plain record; profiles supply per-era defaults and the set of names that exist
on that kernel, and `Sysctls.with_overrides()` applies a user's `net.ipv4.x = v` settings with
one clear error per bad value (the name, what is wrong, what to write instead).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Iterable


class SysctlError(ValueError):
    """A sysctl setting that the kernel would refuse (unknown name, wrong type, out of range)."""


@dataclass(frozen=True, slots=True)
class SysctlSpec:
    """A sysctl a patch adds (the core does not know it): its name, default and the range the
    patched kernel accepts. Declared in the patch (`Patch.new_sysctls`)."""

    name: str
    default: int
    lo: int = 0
    hi: int = 2**31 - 1
    doc: str = ""


@dataclass(frozen=True)
class Sysctls:
    """Receive-path and sender sysctls (net.ipv4.* unless the name says net.core).

    A patch's sysctls (`patched`) are plain attributes too, set in the instance dict when the
    record is made. (The record has no __getattr__ and no __slots__ on purpose: a class
    with __getattr__ defeats CPython's attribute caches, and every sysctl read on the
    per-packet path -- tcp_shrink_window, tcp_adv_win_scale, ... -- paid for it.)"""

    tcp_rmem: tuple[int, int, int] = (4096, 131072, 6291456)
    tcp_wmem: tuple[int, int, int] = (4096, 16384, 4194304)
    tcp_adv_win_scale: int = 1
    tcp_app_win: int = 31
    tcp_moderate_rcvbuf: int = 1
    tcp_shrink_window: int = 0
    tcp_timestamps: int = 1
    tcp_window_scaling: int = 1
    tcp_sack: int = 1
    tcp_retries2: int = 15
    tcp_invalid_ratelimit: int = 500  # ms
    tcp_rcvbuf_low_rtt: int = 1000    # us (6.19)
    tcp_workaround_signed_windows: int = 0
    tcp_backlog_ack_defer: int = 1
    tcp_comp_sack_nr: int = 44
    tcp_comp_sack_delay_ns: int = 1_000_000
    tcp_congestion_control: str = "cubic"   # the sender's algorithm (tcpsim/core/cong)
    tcp_notsent_lowat: int = 4294967295     # UINT_MAX: unsent bytes do not limit writes
    tcp_slow_start_after_idle: int = 1
    rmem_max: int = 212992            # net.core.rmem_max
    wmem_max: int = 212992            # net.core.wmem_max
    # the host's TCP pool (pages; tcpsim/core/protmem.py). The default is what
    # tcp_init_mem() [net/ipv4/tcp.c] computes on the 24 GB reference machine: limit =
    # max(nr_free_buffer_pages() / 16, 128), tcp_mem = (limit / 4 * 3, limit, 2 * that
    # first) -- 1.1 / 1.5 / 2.2 GB, which no single connection comes near.
    tcp_mem: tuple[int, int, int] = (287901, 383868, 575802)
    mem_pcpu_rsv: int = 256           # net.core.mem_pcpu_rsv, pages (6.9+; see protmem.py)
    # sysctls the applied patches add (SysctlSpec, value); read as attributes like the others
    patched: tuple[tuple[SysctlSpec, int], ...] = ()

    def __post_init__(self) -> None:
        for spec, value in self.patched:
            object.__setattr__(self, spec.name, value)

    if TYPE_CHECKING:   # a patch's sysctls are attributes set by name: tell the type checker
        def __getattr__(self, name: str) -> int: ...

    def with_specs(self, specs: Iterable[SysctlSpec]) -> "Sysctls":
        """A copy that also has the patches' sysctls `specs`, at their defaults."""
        have = {spec.name for spec, _ in self.patched}
        added = tuple((s, s.default) for s in specs if s.name not in have)
        return replace(self, patched=self.patched + added) if added else self

    def with_overrides(self, settings: dict[str, Any], known: frozenset[str] | None = None,
                       profile: str = "") -> "Sysctls":
        """Return a copy with `settings` ({"net.ipv4.tcp_rmem": [..], ...}) applied.

        `known` limits the names to those that exist on the profile's kernel.
        """
        changes: dict[str, Any] = {}
        patched = {spec.name: spec for spec, _ in self.patched}
        values = {spec.name: value for spec, value in self.patched}
        for full, value in settings.items():
            short = short_name(full)
            if short in patched:
                values[short] = _validate_spec(full, patched[short], value)
                continue
            if short in PATCH_SYSCTLS:
                raise SysctlError(f"sysctl {full}: does not exist on {profile or 'this kernel'}; "
                                  f"the patch {PATCH_SYSCTLS[short]} adds it: "
                                  f"add --policy {PATCH_SYSCTLS[short]}")
            if short not in _FIELD_TYPES and short in _MISSING_HINTS:
                raise SysctlError(f"sysctl {full}: does not exist on {profile or 'this kernel'}; "
                                  f"{_MISSING_HINTS[short]}")
            if short not in _FIELD_TYPES:
                raise SysctlError(unknown_sysctl(full))
            if known is not None and short not in known:
                hint = _MISSING_HINTS.get(short, "pick a profile that has it (tcpsim profiles) "
                                                 "or apply the patch that adds it (--policy)")
                raise SysctlError(f"sysctl {full}: does not exist on {profile or 'this kernel'}; {hint}")
            changes[short] = _validate(full, short, value)
        if self.patched:
            changes["patched"] = tuple((spec, values[spec.name]) for spec, _ in self.patched)
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """{kernel name: value}, e.g. {"net.ipv4.tcp_rmem": [4096, 131072, 6291456]}."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "patched":
                continue
            v = getattr(self, f.name)
            out[long_name(f.name)] = list(v) if isinstance(v, tuple) else v
        for spec, value in self.patched:
            out[long_name(spec.name)] = value
        return out


_FIELD_TYPES = {f.name: f.type for f in fields(Sysctls) if f.name != "patched"}
# sysctl name -> the patch that adds it, for the error that names the patch (filled by
# declare_patch_sysctl as patch classes are defined)
PATCH_SYSCTLS: dict[str, str] = {}


def unknown_sysctl(full: str) -> str:
    """The error for a sysctl name tcpsim does not know (the nearest names first)."""
    import difflib
    names = [long_name(n) for n in sorted(_FIELD_TYPES)]
    near = difflib.get_close_matches(short_name(full), sorted(_FIELD_TYPES), n=1, cutoff=0.7)
    hint = f" (did you mean {long_name(near[0])}?)" if near else ""
    return f"sysctl {full}: unknown to tcpsim{hint}; known: " + ", ".join(names)


def known_name(full: str) -> bool:
    """Whether tcpsim knows the sysctl `full` (a kernel's or a loaded patch's)."""
    short = short_name(full)
    return short in _FIELD_TYPES or short in PATCH_SYSCTLS


def declare_patch_sysctl(name: str, patch: str) -> None:
    """Record that the patch `patch` adds the sysctl `name` (for error messages)."""
    PATCH_SYSCTLS[name] = patch

_MISSING_HINTS = {
    "tcp_shrink_window": "it arrived in 6.5 and 6.1.59: use -p linux-6.1.59 (or later) "
                         "or --policy shrink-window",
    "tcp_rcvbuf_low_rtt": "it arrived in 6.19: use -p linux-6.19 (or later)",
    "tcp_comp_sack_rtt_percent": "it arrived in 6.19: use -p linux-6.19 (or later)",
    "bypass_prot_mem": "it arrived in 6.19: use -p linux-6.19 (or later)",
    "mem_pcpu_rsv": "it arrived in 6.9 (before, the per-CPU reserve is a fixed 256 pages "
                    "from 6.0 and absent before): use -p linux-6.10 (or later)",
}
_CORE = {"rmem_max", "wmem_max", "bypass_prot_mem", "mem_pcpu_rsv"}
_BOOLEAN = {"tcp_slow_start_after_idle", "tcp_moderate_rcvbuf", "tcp_shrink_window", "tcp_window_scaling", "tcp_sack",
            "tcp_workaround_signed_windows", "tcp_backlog_ack_defer"}
_RANGES = {
    "tcp_adv_win_scale": (-31, 31),
    "tcp_app_win": (0, 31),
    "tcp_timestamps": (0, 2),
    "tcp_retries2": (0, 255),
    "tcp_invalid_ratelimit": (0, 2**31 - 1),
    "tcp_rcvbuf_low_rtt": (0, 2**31 - 1),
    "tcp_comp_sack_nr": (0, 255),
    "tcp_comp_sack_delay_ns": (0, 2**63 - 1),
    "tcp_notsent_lowat": (0, 2**32 - 1),
    "rmem_max": (1, 2**31 - 1),
    "wmem_max": (1, 2**31 - 1),
    # proc_dointvec_minmax with extra1 = SK_MEMORY_PCPU_RESERVE [net/core/sysctl_net_core.c]
    "mem_pcpu_rsv": (256, 2**31 - 1),
}


def short_name(name: str) -> str:
    """'net.ipv4.tcp_rmem' -> 'tcp_rmem'; 'net.core.rmem_max' -> 'rmem_max'."""
    for prefix in ("net.ipv4.", "net.core.", "net/ipv4/", "net/core/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def long_name(short: str) -> str:
    """'tcp_rmem' -> 'net.ipv4.tcp_rmem'."""
    return f"net.core.{short}" if short in _CORE else f"net.ipv4.{short}"


# sysctls whose value is a name, and the names the model has
STRING_SYSCTLS = {"tcp_congestion_control": ("cubic", "reno")}


def _validate(full: str, short: str, value: Any) -> Any:
    if short in ("tcp_rmem", "tcp_wmem"):
        return _validate_triple(full, value)
    if short == "tcp_mem":
        return _validate_triple(full, value, "pages, e.g. [200, 400, 600]", hi=2**63 - 1)
    if short in STRING_SYSCTLS:
        return _validate_name(full, STRING_SYSCTLS[short], value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SysctlError(f"sysctl {full}: expected an integer, got {value!r}")
    if short in _BOOLEAN and value not in (0, 1):
        raise SysctlError(f"sysctl {full}: must be 0 or 1, got {value}")
    lo, hi = _RANGES.get(short, (-(2**31), 2**31 - 1))
    if not lo <= value <= hi:
        raise SysctlError(f"sysctl {full}: {value} is out of range; the kernel accepts {lo}..{hi}")
    return value


def _validate_name(full: str, names: tuple[str, ...], value: Any) -> str:
    """A name from `names` (tcp_congestion_control: the kernel refuses others, ENOENT)."""
    if not isinstance(value, str) or value.strip() not in names:
        raise SysctlError(f"sysctl {full}: {value!r} is not available; choose one of: "
                          + ", ".join(names))
    return value.strip()


def _validate_spec(full: str, spec: SysctlSpec, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SysctlError(f"sysctl {full}: expected an integer, got {value!r}")
    if not spec.lo <= value <= spec.hi:
        who = "patch" if spec.name in PATCH_SYSCTLS else "kernel"
        raise SysctlError(f"sysctl {full}: {value} is out of range; the {who} accepts "
                          f"{spec.lo}..{spec.hi}")
    return value


def _validate_triple(full: str, value: Any, example: str = "e.g. [4096, 131072, 6291456]",
                     hi: int | None = None) -> tuple[int, int, int]:
    """Three positive integers, non-decreasing: tcp_rmem / tcp_wmem (min default max,
    bytes) and tcp_mem (min pressure max, pages; the kernel itself takes any three longs,
    but a pool whose pressure threshold lies below its minimum is a typo, not a what-if)."""
    if isinstance(value, str):
        value = value.split()
    try:
        triple = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise SysctlError(f"sysctl {full}: expected three integers (min default max), "
                          f"{example}, got {value!r}") from None
    if len(triple) != 3:
        raise SysctlError(f"sysctl {full}: expected three integers (min default max), got {len(triple)}")
    lo, default, top = triple
    if lo < 1 or default < 1 or top < 1:
        raise SysctlError(f"sysctl {full}: values must be positive, got {list(triple)}")
    if hi is not None and top > hi:
        raise SysctlError(f"sysctl {full}: {top} is out of range; at most {hi}")
    if not lo <= default <= top:
        raise SysctlError(f"sysctl {full}: needs min <= default <= max, got {list(triple)}")
    return lo, default, top
