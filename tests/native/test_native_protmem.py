"""The host's TCP pool on both engines: the same operations leave the same pool
(tcpsim/core/protmem.py and native/src/protmem.rs), and native sockets share a pool the
way Python sockets do (set_proto)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tcpsim.core.protmem import ProtoMemory
from tcpsim.core.snapshot import first_difference

from harness import established

ops = st.lists(st.one_of(
    st.tuples(st.sampled_from(["memory_allocated_add", "memory_allocated_sub"]),
              st.integers(0, 1), st.integers(0, 700)),
    st.tuples(st.sampled_from(["enter_pressure", "leave_pressure"]),
              st.integers(0, 10**10)),
    st.tuples(st.just("sockets_allocated_add"), st.integers(0, 1),
              st.sampled_from([1, -1, 20, -20]))), max_size=40)


@settings(max_examples=60, deadline=None)
@given(ops=ops, rsv=st.sampled_from([0, 256, 300]))
def test_same_pool_after_the_same_operations(native, ops, rsv):
    """sk_memory_allocated_add/sub with per-CPU reserves, entering and leaving pressure: the
    Rust twin's fields (per-CPU counters, pressure time, counters) equal the Python
    model's after every operation."""
    py = ProtoMemory((200, 400, 600), ncpus=2, pcpu_rsv=rsv)
    rs = native.ProtoMemory((200, 400, 600), 2, rsv)
    assert rs.snapshot() == py.snapshot()
    for name, *args in ops:
        getattr(py, name)(*args)
        getattr(rs, name)(*args)
        assert rs.snapshot() == py.snapshot(), (name, args)
        assert rs.total_pages() == py.total_pages()
        assert rs.under_pressure() == py.under_pressure()
        assert rs.sockets_allocated_read_positive() == py.sockets_allocated_read_positive()


def test_native_sockets_share_one_pool(native):
    """Two native sockets given one pool count in its sockets_allocated, as Python's do."""
    pool_py = ProtoMemory((200, 400, 600), ncpus=2, pcpu_rsv=0)
    pool_rs = native.ProtoMemory((200, 400, 600), 2, 0)
    socks = []
    for cpu, engine in ((0, "python"), (1, "python"), (0, "native"), (1, "native")):
        sk = established("linux-6.18", engine=engine).sk
        sk.set_proto(pool_py if engine == "python" else pool_rs, cpu)
        socks.append(sk)
    assert pool_rs.snapshot() == pool_py.snapshot()
    assert socks[2].proto.same(socks[3].proto) and socks[3].cpu == 1
    assert pool_rs.snapshot()["sockets_allocated"] == 2


def test_engines_agree_on_a_host_sharing_a_tiny_pool(native):
    """Three connection pairs (six sockets) on one pool of tcp_mem 8/12/16 pages, two CPUs
    with per-CPU reserves: the pool and every socket (queues, windows, counters) end the
    same on both engines -- pressure entered, drops, forced charges and all."""
    from pool_host import run_host
    kw = dict(tcp_mem=(8, 12, 16), ncpus=2, pcpu_rsv=4, seconds=0.6)
    py = run_host(3, engine="python", **kw)
    rs = run_host(3, engine="native", **kw)
    assert py["pool"]["TCPMemoryPressures"] >= 1 and py["counters"]["TCPRcvQDrop"] > 0
    assert rs["pool"] == py["pool"]
    assert rs["samples"] == py["samples"]
    for a, b in zip(py["sockets"], rs["sockets"]):
        assert first_difference(a, b) is None, first_difference(a, b)


def test_release_memory_returns_pages_and_ends_pressure(native):
    """A destroyed socket gives every page back (here: the whole host's, ending pressure)
    and leaves sockets_allocated -- the same on both engines."""
    out = {}
    for engine, pool in (("python", ProtoMemory((2, 4, 6), 1, 0)),
                         ("native", native.ProtoMemory((2, 4, 6), 1, 0))):
        peer = established("linux-6.18", engine=engine)
        sk = peer.sk
        sk.set_proto(pool, 0)
        for _ in range(20):
            peer.send(1448)
        assert pool.snapshot()["TCPMemoryPressures"] == 1 and pool.under_pressure()
        sk.release_memory(peer.now + 5_000_000)
        out[engine] = pool.snapshot()
        assert out[engine]["allocated"] == 0 and not pool.under_pressure()
        assert out[engine]["sockets_allocated"] == 0
    assert out["python"] == out["native"]
