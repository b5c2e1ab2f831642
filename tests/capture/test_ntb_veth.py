"""scripts/ntb_veth_capture.py: ntb_netdev's receive charging on veth (docs/ntb-jumbo-rx.md).

The charging check runs on the real kernel (root, namespaces, tc with libbpf and llc); it is
skipped without them. The endpoint's framing is checked everywhere."""

from __future__ import annotations

import pytest

from scripts import load_script
from tcpsim.capture.netns import netns_available

capture = load_script("ntb_veth_capture")
sshlike = load_script("ntb_sshlike")


def test_ssh_messages_are_framed_like_ssh2_packets():
    # a WINDOW_ADJUST (8 payload bytes) and a 20-byte message are 48-byte packets: the
    # "48-byte ssh message" of the incident report; a data packet adds 32 bytes to 32 KiB
    assert len(sshlike.frame(sshlike.MSG_ADJUST, 8, 123)) == 48
    assert len(sshlike.frame(sshlike.MSG_IGNORE, 20)) == 48
    assert len(sshlike.frame(sshlike.MSG_DATA, 32768)) == 32800
    # every packet is a multiple of the 16-byte block plus the MAC, with >= 4 padding bytes
    for n in range(0, 200):
        b = sshlike.frame(sshlike.MSG_IGNORE, n)
        assert (len(b) - 16) % 16 == 0 and len(b) - 16 - 5 - n >= 4


def test_an_end_sends_a_window_adjust_once_half_its_channel_window_is_consumed():
    end = sshlike.End({"role": "srv", "chanwin": "1000"})
    end.inb += sshlike.frame(sshlike.MSG_DATA, 400) + sshlike.frame(sshlike.MSG_DATA, 200)
    end.parse()
    assert end.st["recv_data"] == 600 and end.st["adjusts"] == 1
    assert end.out == sshlike.frame(sshlike.MSG_ADJUST, 8, 600)


@pytest.mark.root
@pytest.mark.skipif(not netns_available() or capture.missing_tools() != [],
                    reason="needs root, `ip netns`, tc (with libbpf) and llc")
@pytest.mark.parametrize("copybreak, low, high", [(0, 131000, 140000), (256, 1, 4096)])
def test_one_48_byte_message_is_charged_a_128k_buffer_unless_copied(tmp_path, copybreak,
                                                                    low, high):
    # ntb: netdev_alloc_skb(mtu + ETH_HLEN) is a 128 KiB kmalloc (truesize 131328); the
    # program gives veth the same head, and the fixed driver's copybreak a right-sized one
    with capture.network() as net:
        net.charge(capture.build_program(copybreak, tmp_path))
        skmem = capture.one_message(net, 48)
        names = (net.a, net.r, net.b)
    assert low <= skmem["r"] <= high, skmem
    left = capture.sh("ip", "netns", "list")
    assert not any(n in left for n in names)
