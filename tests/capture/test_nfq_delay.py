import struct

from tcpsim.capture import nfq_delay as nq


def packet_msg(pkt_id):
    hdr = nq.nla(nq.NFQA_PACKET_HDR, struct.pack("!IHB", pkt_id, 0x0800, 2))
    return nq.nfq_msg(nq.NFQNL_MSG_PACKET, 0, hdr, seq=0)


def test_nla_padding_and_message_length():
    a = nq.nla(1, b"abcde")
    assert len(a) == 12 and struct.unpack_from("=H", a)[0] == 9
    m = nq.nfq_msg(nq.NFQNL_MSG_CONFIG, 3, a, seq=7)
    length, mtype = struct.unpack_from("=IH", m)
    assert length == len(m) and mtype == (3 << 8) | 2


def test_parse_packet_ids_from_a_batch():
    assert nq.parse_packet_ids(packet_msg(5) + packet_msg(6)) == [5, 6]


def test_error_message_raises():
    err = struct.pack("=IHHII", 36, nq.NLMSG_ERROR, 0, 0, 0) + struct.pack("=i", -1) + b"\0" * 16
    try:
        nq.parse_packet_ids(err)
    except OSError as exc:
        assert exc.errno == 1
    else:
        raise AssertionError("no error raised")


def test_release_due_accepts_in_order_with_one_batch_verdict():
    d = nq.Delayer.__new__(nq.Delayer)
    sent = []
    d.sock = type("S", (), {"send": lambda self, b: sent.append(b)})()
    d.queue, d.seq, d.lateness = 0, 0, []
    d.pending = nq.collections.deque([(1, 100), (2, 150), (3, 300)])
    d.release_due(200)
    assert list(d.pending) == [(3, 300)] and d.lateness == [100, 50]
    (msg,) = sent
    verdict, pkt_id = struct.unpack_from("!II", msg, len(msg) - 8)
    assert (verdict, pkt_id) == (nq.NF_ACCEPT, 2)
