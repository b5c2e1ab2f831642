"""Constants, size helpers and sysctl/MIB tables: tcpsim._native against the Python rooms."""

from hypothesis import given
from hypothesis import strategies as st

import tcpsim.core.constants as py_constants
import tcpsim.core.devices as py_devices
import tcpsim.core.sender as py_sender
from tcpsim.core.mib import COUNTERS, Mib
from tcpsim.core.sysctl import Sysctls, long_name, short_name

from strategies import nat_payload


def _int_constants(module) -> dict[str, int]:
    return {k: v for k, v in vars(module).items()
            if k.isupper() and type(v) is int and not k.startswith("_")}


def test_every_constant_of_constants_py_has_its_native_twin(native):
    assert native.module_constants("constants") == _int_constants(py_constants)


def test_sender_and_device_constants_match(native):
    for room, module in (("sender", py_sender), ("devices", py_devices)):
        for name, value in native.module_constants(room).items():
            assert getattr(module, name) == value, (room, name)


@given(n=st.one_of(nat_payload, st.integers(0, 1 << 24)))
def test_size_helpers(native, n):
    assert native.skb_truesize(n) == py_constants.skb_truesize(n)
    assert native.kmalloc_size(n) == py_constants.kmalloc_size(n)
    assert native.data_align(n) == py_constants.data_align(n)


@given(x=st.integers(-(1 << 40), 1 << 40), shift=st.integers(0, 20))
def test_align_and_round_down(native, x, shift):
    unit = 1 << shift
    assert native.align_up(x, unit) == py_constants.align_up(x, unit)
    assert native.round_down(x, unit) == py_constants.round_down(x, unit)


def test_mib_counters_in_order(native):
    assert native.mib_counters() == list(COUNTERS.items())


@given(values=st.dictionaries(st.sampled_from(list(COUNTERS)), st.integers(0, 1 << 40)))
def test_mib_as_nstat(native, values):
    mib = Mib()
    for name, v in values.items():
        setattr(mib, name, v)
    assert dict(native.mib_nstat(list(values.items()))) == mib.as_nstat()
    assert [k for k, _ in native.mib_nstat([])] == list(mib.as_nstat())


def test_default_sysctls(native):
    assert native.default_sysctls() == Sysctls().as_dict()
    assert list(native.default_sysctls()) == list(Sysctls().as_dict())


@given(short=st.sampled_from(list(Sysctls.__dataclass_fields__)),
       prefix=st.sampled_from(["", "net.ipv4.", "net.core.", "net/ipv4/", "net/core/", "x."]))
def test_sysctl_names(native, short, prefix):
    assert native.sysctl_long_name(short) == long_name(short)
    assert native.sysctl_short_name(prefix + short) == short_name(prefix + short)
