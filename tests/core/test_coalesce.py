"""tcp_try_coalesce / skb_try_coalesce: delta charging, the 17-fragment limit, tailroom, clones,
the sender's page layout."""

import pytest

from tcpsim.core.devices import device
from tcpsim.core.skb import Skb

from harness import established


def test_veth_truesize_and_coalesce_charge_match_the_kernel():
    # E1: a new skb costs L + 832, segments 2..17 coalesce and cost exactly L, 18 starts anew
    p = established("linux-6.18")
    sk = p.sk
    for i in range(18):
        p.at(2 + i).send(100)
    assert sk.mib.TCPRcvCoalesce == 16
    assert len(sk.mem.receive_queue) == 2
    assert sk.mem.sk_rmem_alloc == (100 + 832) + 16 * 100 + (100 + 832)
    assert sk.mem.receive_queue[0].nfrags == 17


def test_a_segment_across_a_page_of_the_senders_stream_takes_two_fragments():
    # the writer's page frag is 32 KiB: segment 23 (bytes 31856..33304) crosses its first
    # boundary, so the second skb is full at 16 segments (17 fragments), as the 6.18
    # receiver's 1 B reader freed them in the seed reproducer (17, 16, 16 segments)
    p = established("linux-6.18")
    sk = p.sk
    for i in range(40):
        p.at(2 + i).send(1448)
    q = sk.mem.receive_queue
    assert [s.len // 1448 for s in q] == [17, 16, 7]
    assert [s.nfrags for s in q] == [17, 17, 7]
    assert [s.truesize for s in q] == [832 + 17 * 1448, 832 + 16 * 1448, 832 + 7 * 1448]
    assert sk.mib.TCPRcvCoalesce == 37


def test_coalescing_never_checks_rcvbuf():
    p = established("linux-6.1", so_rcvbuf=4608)          # rcvbuf 9216
    sk = p.sk
    for i in range(8):
        p.at(2 + i).send(1448)
    assert sk.mem.sk_rmem_alloc > sk.mem.sk_rcvbuf or sk.mib.TCPRcvQDrop == 0


def test_tailroom_copy_is_free_and_stolen_head_costs_buffer():
    p = established("linux-6.18", dev="nic-2k")
    sk = p.sk
    p.at(2).send(4)
    before = sk.mem.sk_rmem_alloc
    p.at(3).send(4)                                         # fits the linear tailroom: free
    assert sk.mem.sk_rmem_alloc == before and sk.mib.TCPRcvCoalesce == 1
    q = sk.mem.receive_queue[0]
    q.tailroom = 0                                          # force the head-steal branch
    p.at(4).send(1400)
    assert sk.mem.sk_rmem_alloc == before + 2048 + 256 - 256    # delta = truesize - sizeof(sk_buff)


def test_shared_skb_is_not_coalesced_until_the_peer_releases_it():
    p = established("linux-6.18", dev="veth-direct")
    sk = p.sk
    sk.on_peer_release(0)
    p.at(2).send(100)
    p.at(3).send(100)
    assert sk.mib.TCPRcvCoalesce == 0 and len(sk.mem.receive_queue) == 2
    sk.on_peer_release(sk.rcv.rcv_nxt)
    p.at(4).send(100)
    assert sk.mib.TCPRcvCoalesce == 1


@pytest.mark.parametrize("engine", ["python", "native"])
def test_without_tso_a_gso_skbs_segments_are_not_clones(engine):
    # tcp_transmit_skb() clones what it sends; a device without TSO has skb_segment() cut a
    # multi-segment skb into fresh skbs, so only a one-segment skb arrives as a clone
    # (the plain captures' closed window stays shut ~14 reads: their segments coalesced)
    for dev, segs, coalesced in (("loopback", 2, 0), ("loopback:tso=off", 2, 2),
                                 ("loopback:tso=off", 1, 0), ("loopback:tso=off", 0, 0)):
        p = established("linux-6.18", dev=dev, engine=engine)
        p.sk.on_peer_release(0)
        for i in range(3):
            p.at(2 + i).send(1448, tx_segs=segs)
        assert p.sk.mib.TCPRcvCoalesce == coalesced, (dev, segs)


def test_tun_linear_head_cannot_be_stolen():
    tun = device("tun")
    a = tun.make_skb(1, 3000, False)
    assert a.linear > 0 and not a.head_frag
    p = established("linux-6.18", dev="tun")
    sk = p.sk
    p.at(2).send(3000)
    p.at(3).send(3000)
    assert sk.mib.TCPRcvCoalesce == 0


def test_skb_repr_mentions_flags():
    s = Skb(1, 10, 842, head=256, linear=0, nfrags=1, fin=True)
    assert "FIN" in repr(s) and s.end_seq == 12


def test_skb_condense_makes_a_small_fresh_segment_linear_and_unstealable():
    """skb_condense() as tcp_add_backlog() runs it: a 32 B segment software GSO cut on a
    local pair fits the 64 B its small head leaves after MAX_TCP_HEADER, so it becomes linear
    (truesize its head's, 832) -- and skb_try_coalesce() cannot steal a kmalloc'd head, so it
    stays an skb of its own (the kernel's extra skb in veth-periodic-small-writes-shrink1 at
    337 ms). 65 B do not fit; a clone of the sender's skb is left alone until released."""
    from tcpsim.core.constants import skb_truesize
    from tcpsim.core.devices import device
    from tcpsim.core.memory import skb_condense, skb_try_coalesce
    soft = device("veth-direct:tso=off")
    small = soft.make_skb(1001, 32, False, 0, 13)
    assert (small.nfrags, small.tailroom, small.truesize) == (1, 64, 864)
    skb_condense(small, 0)
    assert (small.nfrags, small.linear, small.tailroom) == (0, 32, 32)
    assert small.truesize == skb_truesize(256) == 832
    to = soft.make_skb(1, 1000, False, 0, 13)
    assert skb_try_coalesce(to, small, 0) == -1
    big = soft.make_skb(1001, 65, False, 0, 13)
    skb_condense(big, 0)
    assert big.nfrags == 1
    clone = soft.make_skb(1001, 32, False, 0, 1)
    skb_condense(clone, 0)
    assert clone.nfrags == 1
    skb_condense(clone, 1033)
    assert clone.nfrags == 0
