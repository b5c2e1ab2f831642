"""Ingress devices: every device's skb layout and truesize, native against devices.py."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpsim.core.devices import DEVICES, device

from strategies import nat_payload, nat_seq

SKB_FIELDS = ("seq", "end_seq", "len", "truesize", "head", "linear", "nfrags", "head_frag",
              "tailroom", "fin", "cloned_until")


def test_same_devices_in_the_same_order(native):
    assert native.device_names() == list(DEVICES)


@given(name=st.sampled_from(list(DEVICES)), seq=nat_seq, length=nat_payload, fin=st.booleans())
def test_skb_layout_and_truesize(native, name, seq, length, fin):
    want = DEVICES[name].make_skb(seq, length, fin)
    got = native.make_skb(name, seq, length, fin)
    for f in SKB_FIELDS:
        assert got[f] == getattr(want, f) and type(got[f]) is type(getattr(want, f)), f
    assert got["repr"] == repr(want)


def test_unknown_device_says_the_same(native):
    with pytest.raises(ValueError) as py_err:
        device("eth0")
    with pytest.raises(ValueError) as rs_err:
        native.make_skb("eth0", 0, 1, False)
    assert str(rs_err.value) == str(py_err.value)
