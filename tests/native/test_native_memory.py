"""The memory room (rmem/forward-alloc accounting, coalesce, collapse, OFO helpers): a native
socket and a Python one get the same queues and the same operations, and after every
operation hold the same memory record, receive record and counters."""

from hypothesis import example, given
from hypothesis import strategies as st

from tcpsim.core.devices import DEVICES
from tcpsim.core.socket import TcpSocket
from tcpsim.catalog import builtin_profiles

from native_compare import assert_same_fields, field, home, plain
from strategies import nat_mem_ops, nat_payload

PROFILES = builtin_profiles()
# Every built-in profile: the memory room calls the era's win_from_space.
MEM_PROFILES = list(PROFILES)


def _skb_dict(skb) -> dict:
    return plain(skb)


class Pair:
    """A Python and a native socket with the same profile, device and sysctls."""

    def __init__(self, native, profile: str, dev: str, adv_win_scale: int, rcvbuf: int) -> None:
        prof = PROFILES[profile]
        sysctls = prof.default_sysctls().with_overrides(
            {"net.ipv4.tcp_adv_win_scale": adv_win_scale})
        self.dev = DEVICES[dev]
        self.py = TcpSocket(prof.policy(), sysctls, self.dev)
        self.rs = native.NativeSocket(profile, device=dev, tcp_rmem=sysctls.tcp_rmem,
                                      tcp_wmem=sysctls.tcp_wmem,
                                      tcp_adv_win_scale=adv_win_scale)
        self.set("mem", "sk_rcvbuf", rcvbuf)

    def set(self, record: str, name: str, value: int) -> None:
        setattr(home(self.py, record), name, value)
        self.rs.set_field(record, name, value)

    def queue(self, which: str, skb) -> None:
        """Schedule, charge and queue `skb` on both sockets (as tcp_data_queue would)."""
        for sk in (self.py, self.rs):
            sk.rmem_schedule(skb.truesize)
            sk.charge(skb.truesize)
        q = field(self.py, "mem", "receive_queue" if which == "receive" else "ofo_queue")
        q.append(skb)
        self.rs.push_skb(which, _skb_dict(skb))

    def check(self, step: str) -> None:
        got = self.rs.state()
        assert_same_fields(got, self.py, ("mem", "rcv"), f"after {step}")
        assert got["mib"] == {k: getattr(self.py.mib, k) for k in got["mib"]}, f"after {step}"


@st.composite
def queues(draw):
    """An in-order receive queue from copied_seq, then an OFO queue beyond a hole."""
    lens = draw(st.lists(st.one_of(st.integers(1, 200), nat_payload.filter(bool)), max_size=40))
    holes = draw(st.lists(st.tuples(st.integers(0, 5000).map(lambda g: g or 1),
                                    st.one_of(st.integers(1, 3000), nat_payload.filter(bool))),
                          max_size=20))
    fin = draw(st.booleans())
    return lens, holes, fin


@given(profile=st.sampled_from(MEM_PROFILES), dev=st.sampled_from(list(DEVICES)),
       adv_win_scale=st.integers(-2, 4), rcvbuf=st.sampled_from([4608, 65536, 131072, 1 << 22]),
       ratio=st.one_of(st.none(), st.integers(1, 255)), released=st.integers(0, 1 << 20),
       qs=queues(), ops=nat_mem_ops)
# an OFO range of exactly one page of payload (SKB_WITH_OVERHEAD_PAGE) is collapsed
@example(profile="linux-5.15", dev="tun", adv_win_scale=1, rcvbuf=131072, ratio=None, released=0,
         qs=([], [(1, 3776)], False), ops=[("collapse_ofo", 0)])
def test_memory_room_in_lockstep(native, profile, dev, adv_win_scale, rcvbuf, ratio, released,
                                 qs, ops):
    pair = Pair(native, profile, dev, adv_win_scale, rcvbuf)
    if ratio is not None and field(pair.py, "rcv", "scaling_ratio") > 0:
        pair.set("rcv", "scaling_ratio", ratio)
    pair.set("rcv", "peer_released", released)
    lens, holes, fin = qs
    seq = 1
    for i, n in enumerate(lens):
        skb = pair.dev.make_skb(seq, n, fin and i == len(lens) - 1)
        pair.queue("receive", skb)
        seq = skb.end_seq
    pair.set("rcv", "copied_seq", 1)
    pair.set("rcv", "rcv_nxt", seq)
    oseq = seq
    for gap, n in holes:
        skb = pair.dev.make_skb(oseq + gap, n, False)
        pair.queue("ofo", skb)
        oseq = skb.end_seq
    pair.check("queueing")
    ofo = field(pair.py, "mem", "ofo_queue")
    rcvq = field(pair.py, "mem", "receive_queue")
    for op, arg in ops:
        if op == "coalesce":
            which, gap, n = arg
            q = rcvq if which == "receive" else ofo
            if not q:
                continue
            frm = pair.dev.make_skb(q[-1].end_seq + gap, n, False)
            assert pair.rs.coalesce_into(which, _skb_dict(frm)) == \
                pair.py.coalesce_into(q[-1], frm)
        elif op == "collapse_receive":
            pair.py.collapse_receive_queue()
            pair.rs.collapse_receive_queue()
        elif op == "collapse_ofo":
            pair.py.collapse_ofo_queue()
            pair.rs.collapse_ofo_queue()
        elif op == "drop_last":
            want = _skb_dict(pair.py.ofo_drop_last()) if ofo else None
            if want is None:
                assert pair.rs.ofo_drop_last() is None
            else:
                assert pair.rs.ofo_drop_last() == want
        elif op == "index":
            assert pair.rs.ofo_index(seq + arg) == pair.py.ofo_index(seq + arg)
        elif op == "read":                      # the reader moved on: collapse starts later
            new = min(field(pair.py, "rcv", "copied_seq") + arg, seq)
            pair.set("rcv", "copied_seq", new)
        else:                                   # schedule / charge / uncharge
            getattr(pair.py, op)(arg)
            getattr(pair.rs, op)(arg)
        pair.check(f"{op} {arg}")


@given(profile=st.sampled_from(MEM_PROFILES), space=st.integers(0, 1 << 30),
       adv_win_scale=st.integers(-31, 31), ratio=st.integers(1, 255))
def test_win_from_space(native, profile, space, adv_win_scale, ratio):
    pair = Pair(native, profile, "veth", adv_win_scale, 131072)
    if field(pair.py, "rcv", "scaling_ratio") > 0:
        pair.set("rcv", "scaling_ratio", ratio)
    assert pair.rs.win_from_space(space) == pair.py.k.win_from_space(pair.py, space)
