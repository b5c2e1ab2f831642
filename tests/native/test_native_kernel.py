"""The kernel eras and patches in Rust (native/src/kernel.rs, models/, patches/) against the
Python eras: the registry, what patches add, and every decision point that can be called
alone, over Hypothesis-drawn socket states, sysctls and arguments, for every profile and
patch. Both sides start from the same fresh socket, set the same fields, call the point, and
must return the same value and leave every field and counter the same."""

import os
import re
from collections import deque
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tcpsim.core.devices import DEVICES
from tcpsim.core.segment import Segment
from tcpsim.core.skb import Skb
from tcpsim.core.socket import TcpSocket
from tcpsim.policy import DECISION_POINTS, POINTS, overrides
from tcpsim.catalog import ProfileError, builtin_patches, builtin_profiles, get_profile

from native_compare import field, home
from strategies import nat_kernel_args, nat_kernel_fields, nat_kernel_sysctls

PROFILES = builtin_profiles()
PATCHES = builtin_patches()

# The points kernel_decision can call alone: all but those working on the queues (admission,
# pruning, collapse, coalescing), which the lockstep tests of the whole socket drive.
CALLABLE = [
    "RELEASE", "RMEM2_DEFAULT", "PINGPONG_THRESH", "DEFAULT_SCALING_RATIO", "COLLAPSE_NS_FIXED",
    "MEMCG_SOFTIRQ_ATOMIC",
    "initial_scaling_ratio", "pingpong_thresh", "win_from_space", "space_from_win",
    "initial_rcv_wnd", "select_initial_window", "init_rcv_ssthresh", "set_window_clamp",
    "rcv_rtt_update", "rcv_rtt_measure", "ts_rtt_sample_us", "measure_rcv_mss",
    "ofo_measure_rcv_mss", "pressure_adjust", "shrink_allowed", "end_beyond_window",
    "zero_window_accepts", "can_ingest", "needs_clamp", "collapse_cost_ns", "ofo_prune_done",
    "ofo_dsack", "rcv_space_gate_us", "rcv_space_copied", "rcvbuf_grow_term", "comp_sack_delay_ns", "delack_max",
    "dec_quickack_mode", "may_update_window", "rtx_probe0_timed_out", "tso_rtt_bytes",
    "new_data_checks_space",
    "tso_defer_ack_window", "grow_window", "grow_under_pressure", "select_window",
    "advertise_window", "nomem_window", "tcp_sequence", "sequence_window", "overwindow_drop",
    "init_buffer_space", "on_rcvbuf_set", "rcv_rtt_measure_ts", "clamp_window",
    "rcv_space_adjust", "grow_rcvbuf", "rcvbuf_grow", "ofo_rcvbuf_grow", "loss_probe_timeout",
    "grow_skb", "hystart_ack_delay", "hystart_round_reset_first",
]


def _combos() -> list[tuple[str, tuple[str, ...]]]:
    """Every profile bare, and with each built-in patch that applies to it."""
    out = [(p, ()) for p in PROFILES]
    for p in PROFILES:
        for patch in PATCHES:
            try:
                get_profile(p, [patch])
            except ProfileError:
                continue
            out.append((p, (patch,)))
    out.append(("linux-6.18", ("rfc7323-retraction", "collapse-max-bytes", "initrwnd")))
    return out


COMBOS = _combos()


def _owner(profile: str, patches: tuple[str, ...], name: str) -> str:
    """The class that defines point `name` for the profile with the patches (`profiles show`)."""
    cls = get_profile(profile, list(patches)).policy_class()
    return next(k.__qualname__ for k in cls.__mro__ if name in vars(k))


# (point, the class defining it) -> the profile-and-patch combinations where that class does:
# each era's and patch's version of every point is tested, on combinations drawn among those
# that use it (the era underneath varies, so what the point calls varies too).
CASES: dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]] = {}
for _name in CALLABLE:
    for _combo in COMBOS:
        CASES.setdefault((_name, _owner(*_combo, _name)), []).append(_combo)
# per (point, defining class); explore digs deeper
EXAMPLES = 300 if os.environ.get("HYPOTHESIS_PROFILE") == "explore" else 12


def test_the_declared_points_are_pythons(native):
    """The Rust declaration names every point of tcpsim/policy.py, and only those."""
    assert set(CALLABLE) <= set(DECISION_POINTS)
    with pytest.raises(KeyError):
        native.kernel_decision("linux-6.6", [], "grow_window", {}, {}, {})


def test_registry(native):
    profiles, patches = native.kernel_registry()
    assert list(profiles) == list(PROFILES)
    for name, (cls, release, summary) in profiles.items():
        prof = PROFILES[name]
        assert (cls, release, summary) == (prof.kernel.__name__, prof.kernel.RELEASE,
                                           prof.summary)
    assert sorted(p[0] for p in patches) == sorted(PATCHES)
    for name, cls, summary in patches:
        assert (cls, summary) == (PATCHES[name].__name__, PATCHES[name].summary)


def test_unknown_names_are_refused(native):
    with pytest.raises(ValueError, match="unknown profile"):
        native.kernel_additions("linux-9.9", [])
    with pytest.raises(ValueError, match="unknown patch"):
        native.kernel_additions("linux-6.6", ["no-such-patch"])
    with pytest.raises(ValueError, match="given twice"):
        native.kernel_additions("linux-6.6", ["initrwnd", "initrwnd"])


@pytest.mark.parametrize("profile,patches", COMBOS)
def test_what_patches_add(native, profile, patches):
    """Counters, new sysctls, made-available sysctls, the era's sysctls and the defaults."""
    prof = get_profile(profile, list(patches))
    counters, specs, extra, known, defaults = native.kernel_additions(profile, list(patches))
    assert counters == list(prof.counters())
    assert specs == [(s.name, s.default, s.lo, s.hi) for s in prof.new_sysctls()]
    assert set(extra) | set(known) | {s[0] for s in specs} == set(prof.known_sysctls())
    assert set(known) == set(prof.kernel.SYSCTLS)
    want = {k.split(".", 2)[-1]: tuple(v) if isinstance(v, list) else v
            for k, v in prof.default_sysctls().as_dict().items()}
    assert defaults == want


def _py_args(sk, name: str, a: dict):
    """The Python call's positional arguments, by the declared parameter names."""
    seg = Segment(a["seg_seq"], a["seg_len"], a["seg_flags"], 0, 0, gso_size=a["seg_gso_size"])
    skb = Skb(a["skb_seq"], a["skb_len"], a["skb_truesize"], head=0, linear=0, nfrags=0,
              fin=bool(a["skb_fin"]))
    by_name = dict(a, sk=sk, seg=seg, skb=skb, dropped=skb, win_dep=bool(a["win_dep"]),
                   adjust=bool(a["adjust"]), q=deque([a["q0"], a["q1"], a["q2"]]))
    return [by_name[p] for p in POINTS[name].params]


def _py_socket(profile: str, patches: tuple[str, ...], fields: dict, sysctl: dict):
    prof = get_profile(profile, list(patches))
    sysctls = replace(prof.default_sysctls(), **sysctl)
    sk = TcpSocket(prof.policy(), sysctls, DEVICES["veth"])
    for key, v in fields.items():
        rec, _, name = key.rpartition(".")
        target = home(sk, rec) if rec else sk
        if name == "state":
            v = type(sk.conn.state)(v)
        setattr(target, name, v)
    return sk


@pytest.mark.parametrize("name,owner", list(CASES), ids=[f"{n}-{o}" for n, o in CASES])
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), fields=nat_kernel_fields, sysctl=nat_kernel_sysctls, args=nat_kernel_args)
def test_decisions_agree(native, name, owner, data, fields, sysctl, args):
    profile, patches = data.draw(st.sampled_from(CASES[name, owner]), label="profile, patches")
    sk = _py_socket(profile, patches, fields, sysctl)
    if name.isupper():
        want = getattr(sk.k, name)
    else:
        call = _py_args(sk, name, args)
        want = getattr(sk.k, name)(*call)
        if name == "grow_skb":
            want = list(call[1])
    got, after, mib = native.kernel_decision(profile, list(patches), name, args, fields, sysctl)
    assert got == want, f"{name} returned {got!r}, Python {want!r}"
    assert type(got) is type(want) or want is None, name
    for key, v in after.items():
        rec, name_ = key.split(".")
        assert v == field(sk, rec, name_), f"{name}: {key} is {v}, Python {field(sk, rec, name_)}"
    assert mib == {c: getattr(sk.mib, c) for c in mib}


# -- each Rust era and patch overrides exactly what its Python class overrides -----------------

NATIVE = Path(__file__).resolve().parents[2] / "native" / "src"
# trait methods that are not decision points: the chain and what patches add
_NOT_POINTS = {"base", "class_name", "counters", "new_sysctls", "extra_sysctls"}


def _rust_overrides(path: Path) -> set[str]:
    """The methods of the file's `impl Kernel for ...` block."""
    text = path.read_text()
    block = text[text.index("impl Kernel for"):]
    return set(re.findall(r"^    fn (\w+)\(", block, re.M)) - _NOT_POINTS


def _python_points(names: list[str]) -> set[str]:
    """Declared points as the Rust trait names them (constants as lower-case methods)."""
    return {n.lower() for n in names}


@pytest.mark.parametrize("profile", list(PROFILES))
def test_each_era_file_overrides_what_python_overrides(profile):
    kernel = PROFILES[profile].kernel
    module = kernel.__module__.rsplit(".", 1)[-1]
    rust = _rust_overrides(NATIVE / "models" / f"{module}.rs")
    python = _python_points(overrides(kernel))
    if "default_scaling_ratio" in python:
        python.add("initial_scaling_ratio")   # sk-less constants: see src/kernel.rs
    assert rust == python


@pytest.mark.parametrize("patch", list(PATCHES))
def test_each_patch_file_overrides_what_python_overrides(patch):
    cls = PATCHES[patch]
    module = cls.__module__.rsplit(".", 1)[-1]
    rust = _rust_overrides(NATIVE / "patches" / f"{module}.rs")
    assert rust == _python_points(overrides(cls, object))
