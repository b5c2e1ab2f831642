"""Ingress devices as data: each preset pins its measured/derived figures, the buffer
strategies follow the kernel's allocation rules, and bad descriptions give one line."""

import csv
from pathlib import Path

import pytest

from tcpsim.core.constants import kmalloc_size
from tcpsim.core.devices import DEVICES, build, device, netdev_alloc_skb, sender_frags
from tcpsim.scenario import ScenarioError, scenario_from_dict

E1 = Path(__file__).parents[2] / "docs" / "measurements" / "e1_truesize.csv"


def test_veth_preset_matches_e1_truesize_measured_on_6_18():
    # docs/kernel-measurements.md E1: a new skb of L payload bytes has truesize L + 832
    rows = [r for r in csv.DictReader(E1.open()) if r["k"] == "0"]
    assert rows
    for r in rows:
        size = int(r["size"])
        assert device("veth").make_skb(0, size, False).truesize == int(r["truesize"]) == size + 832


@pytest.mark.parametrize("name,length,truesize,head,tailroom,frags,head_frag,cloned", [
    # E1; tailroom: the 64 B a small head leaves after MAX_TCP_HEADER (skb_condense())
    ("veth", 1448, 2280, 256, 64, 1, False, 0),
    ("veth-direct", 1448, 2280, 256, 64, 1, False, 1449),  # E1: clone of the sender's skb
    ("loopback", 100, 932, 256, 64, 1, False, 101),
    ("tun", 100, 1280, 704, 488, 0, False, 0),          # 52 + 100 bytes in a 1 KiB kmalloc head
    ("tun", 1448, 2304, 1728, 164, 0, False, 0),        # a 2 KiB kmalloc head
    ("nic-2k", 1448, 2304, 1728, 150, 0, True, 0),      # half-page buffer + sk_buff
    ("nic-4k", 1448, 4352, 3776, 2198, 0, True, 0),     # full page + sk_buff
])
def test_each_preset_pins_its_figures(name, length, truesize, head, tailroom, frags, head_frag,
                                      cloned):
    skb = DEVICES[name].make_skb(1, length, False)
    assert (skb.truesize, skb.head, skb.tailroom, skb.nfrags, skb.head_frag, skb.cloned_until) \
        == (truesize, head, tailroom, frags, head_frag, cloned)


@pytest.mark.parametrize("seq,length,frags", [
    (1, 1448, 1), (31857, 1448, 2), (32769 - 1448, 1448, 1), (32769, 1448, 1),
    (32768, 1, 1), (32768, 2, 2), (1, 65536, 2), (2, 65536, 3), (1, 0, 0),
])
def test_sender_skb_fragments_follow_the_writers_32k_pages(seq, length, frags):
    # stream offset seq - 1 laid out in SKB_FRAG_PAGE_SIZE pages: one fragment per page touched
    assert sender_frags(seq, length) == frags
    assert device("veth").make_skb(seq, length, False).nfrags == frags


def test_presets_are_descriptions_of_their_strategy():
    assert {n: d.spec for n, d in DEVICES.items()} == {
        "veth": "sender", "veth-direct": "sender:shared=on", "loopback": "sender:shared=on",
        "tun": "tun", "nic-2k": "page-frag:buf=2048", "nic-4k": "page:buf=4096"}
    for d in DEVICES.values():                          # the spec builds the same skbs
        twin = device(d.spec)
        assert repr(twin.make_skb(5, 3000, True)) == repr(d.make_skb(5, 3000, True))


def test_kmalloc_size_classes():
    # mm/slab_common.c [6.18]: powers of two with the 96 and 192 classes; page orders above
    assert [kmalloc_size(n) for n in (1, 65, 97, 129, 193, 4097, 65984)] == \
        [32, 96, 128, 192, 256, 8192, 131072]


def test_netdev_alloc_skb_branches():
    assert netdev_alloc_skb(100) == (256, 832, False)           # small-head kmalloc cache
    assert netdev_alloc_skb(1514) == (1600, 2176, True)         # page fragment, head_frag
    assert netdev_alloc_skb(65550) == (130752, 131328, False)   # 128 KiB kmalloc object


def test_ntb_buffer_charges_128k_per_frame_and_copybreak_right_sizes():
    ntb = build("kmalloc", {}, link_mtu=65536)
    assert ntb.name == "kmalloc:buf=65550,mtu=65536"
    assert [ntb.make_skb(0, n, False).truesize for n in (0, 40, 1448)] == [131328] * 3
    cb = build("kmalloc", {"rx_copybreak": 256}, link_mtu=65536)
    # frames (66 header bytes + n) under 256 are copied: up to 192 bytes + NET_SKB_PAD fit
    # the small-head cache (832), larger ones a page fragment of SKB_HEAD_ALIGN(frame + 64)
    assert [cb.make_skb(0, n, False).truesize for n in (0, 126, 127, 189, 190, 1448)] == \
        [832, 832, 896, 896, 131328, 131328]


def test_gro_off_charges_an_sk_buff_per_extra_frame():
    on = build("page-frag", {"buf": 2048})
    off = build("page-frag", {"buf": 2048, "gro": False})
    assert off.make_skb(0, 4344, False, 1448).truesize == \
        on.make_skb(0, 4344, False, 1448).truesize + 2 * 256
    assert off.make_skb(0, 1448, False, 1448).truesize == on.make_skb(0, 1448, False).truesize


def sc(dev, mtu=9000):
    return scenario_from_dict({"name": "d", "link": {"mtu": mtu}, "receiver": {"device": dev}})


def test_scenario_device_table_and_string():
    assert sc("nic-4k").device == "nic-4k"
    assert sc({"preset": "veth"}).device == "veth"
    assert sc({"strategy": "kmalloc", "rx_copybreak": 256}, 65536).device == \
        "kmalloc:buf=65550,mtu=65536,rx_copybreak=256"
    assert sc({"preset": "nic-2k", "gro": False}).device == "page-frag:buf=2048,mtu=9000,gro=off"
    assert sc({"preset": "loopback", "tso": False}).device == "sender:shared=on,tso=off"
    assert device("loopback:tso=off").spec == "sender:shared=on,tso=off"


@pytest.mark.parametrize("dev,msg", [
    ({"strategy": "kmalloc", "buf": 1500}, "receiver.device.buf: 1500 bytes is smaller than a frame"),
    ({"strategy": "kmalloc", "rx_copybreak": 20000}, "receiver.device.rx_copybreak: 20000 is larger"),
    ({"strategy": "jumbo"}, "receiver.device.strategy: unknown strategy 'jumbo'"),
    ({"strategy": "kmalloc", "mtu": 1500}, "receiver.device.mtu: 1500 differs from the link's"),
    ({"preset": "veth", "strategy": "tun"}, "receiver.device: give either preset"),
    ({"strategy": "page-frag", "buf": 100}, "receiver.device.buf: a page fragment holds"),
    ({"strategy": "tun", "rx_copybreak": 64}, "receiver.device.rx_copybreak: the tun strategy"),
    ({"strategy": "kmalloc", "bufsize": 1}, "receiver.device.bufsize: unknown field"),
    ({"strategy": "tun", "tso": False}, "receiver.device: head, shared, tso and reuse belong to the "
                                        "sender strategy"),
    ({"preset": "loopback", "tso": 0}, "receiver.device.tso: expected true or false"),
    ("e1000", "receiver.device: expected one of veth"),
])
def test_bad_device_descriptions_give_one_line(dev, msg):
    with pytest.raises(ScenarioError) as err:
        sc(dev)
    assert str(err.value).startswith(msg) and "\n" not in str(err.value)
