"""Ingress devices: every device's skb layout and truesize, native against devices.py --
the six presets and devices described by their buffer strategy (spec strings)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tcpsim.core.devices import DEVICES, device

from strategies import nat_payload, nat_seq

SKB_FIELDS = ("seq", "end_seq", "len", "truesize", "head", "linear", "nfrags", "head_frag",
              "tailroom", "fin", "cloned_until")

# Described devices: each strategy, with and without copybreak and GRO, small and jumbo MTUs.
SPECS = [
    "kmalloc:mtu=65536", "kmalloc:mtu=65536,rx_copybreak=256", "kmalloc:buf=9014,mtu=9000",
    "kmalloc:buf=1600,rx_copybreak=1600", "kmalloc:buf=200",
    "page-frag:buf=2048,rx_copybreak=256", "page-frag:buf=3072,gro=off",
    "page:buf=4096,mtu=1500,rx_copybreak=1024", "nic-2k:rx_copybreak=128", "sender:head=512",
]


def assert_same_skb(got, want):
    for f in SKB_FIELDS:
        assert got[f] == getattr(want, f) and type(got[f]) is type(getattr(want, f)), f
    assert got["repr"] == repr(want)


def test_same_devices_in_the_same_order(native):
    assert native.device_names() == list(DEVICES)


@given(name=st.sampled_from(list(DEVICES)), seq=nat_seq, length=nat_payload, fin=st.booleans())
def test_skb_layout_and_truesize(native, name, seq, length, fin):
    assert_same_skb(native.make_skb(name, seq, length, fin), DEVICES[name].make_skb(seq, length, fin))


@given(spec=st.sampled_from(SPECS), seq=nat_seq,
       length=st.one_of(nat_payload, st.integers(0, 300), st.integers(60000, 65483)),
       fin=st.booleans())
def test_described_devices_agree(native, spec, seq, length, fin):
    assert_same_skb(native.make_skb(spec, seq, length, fin), device(spec).make_skb(seq, length, fin))


@given(spec=st.sampled_from([*DEVICES, *SPECS, "loopback:tso=off", "page-frag:buf=2048,gro=off"]),
       seq=nat_seq, frames=st.integers(1, 45), gso_size=st.sampled_from([1448, 8948, 32768]),
       tx_segs=st.integers(0, 45), fin=st.booleans())
def test_gso_skbs_agree(native, spec, seq, frames, gso_size, tx_segs, fin):
    """A GSO skb of `frames` frames (a GRO train, or a TSO local pair's whole transmission):
    both engines build it from gso_size and the sender's segment count alike."""
    length = frames * gso_size - (gso_size // 3 if frames > 1 else 0)
    assert_same_skb(native.make_skb(spec, seq, length, fin, gso_size, tx_segs),
                    device(spec).make_skb(seq, length, fin, gso_size, tx_segs))


@pytest.mark.parametrize("spec", ["eth0", "kmalloc:buf=1500,mtu=9000", "kmalloc:buf=x",
                                  "page-frag:buf=2048,rx_copybreak=4000", "sender:mtu=1500",
                                  "page:buf=2048", "kmalloc", "page-frag:bogus=1",
                                  "kmalloc:mtu=65536,gro=maybe"])
def test_bad_device_says_the_same(native, spec):
    with pytest.raises(ValueError) as py_err:
        device(spec)
    with pytest.raises(ValueError) as rs_err:
        native.make_skb(spec, 0, 1, False)
    assert str(rs_err.value) == str(py_err.value)
