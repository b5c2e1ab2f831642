"""The host's TCP pool (tcpsim/core/protmem.py): per-CPU reserves, pressure bookkeeping,
and sockets sharing one pool (TcpSocket.set_proto)."""

import json
from pathlib import Path

import pytest

from tcpsim.catalog import get_profile
from tcpsim.core.constants import NS_PER_MS, PAGE_SIZE
from tcpsim.core.protmem import SK_MEMORY_PCPU_RESERVE, ProtoMemory
from tcpsim.core.socket import TcpSocket
from tcpsim.core.sysctl import SysctlError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "host"


def test_per_cpu_reserve_lags_the_global_counter():
    """sk_memory_allocated_add/sub [6.0+]: a CPU's pages reach the global counter only once
    they add up to mem_pcpu_rsv either way; before that only total_pages() sees them."""
    p = ProtoMemory((200, 400, 600), ncpus=2, pcpu_rsv=256)
    p.memory_allocated_add(0, 255)
    assert (p.memory_allocated(), p.total_pages()) == (0, 255)
    p.memory_allocated_add(0, 1)
    assert p.memory_allocated() == 256 and p.per_cpu_fw_alloc == [0, 0]
    p.memory_allocated_add(1, 10)
    p.memory_allocated_sub(1, 20)
    assert p.memory_allocated() == 256 and p.per_cpu_fw_alloc == [0, -10]
    p.memory_allocated_sub(1, 246)
    assert p.memory_allocated() == 0 and p.total_pages() == 0


def test_no_reserve_before_6_0():
    """5.15: every charge is global at once (pcpu_rsv 0), whichever CPU makes it."""
    p = ProtoMemory((200, 400, 600), ncpus=4, pcpu_rsv=0)
    p.memory_allocated_add(3, 1)
    assert p.memory_allocated() == 1
    p.memory_allocated_sub(2, 1)
    assert p.memory_allocated() == 0


def test_pressure_entries_and_chrono():
    p = ProtoMemory((1, 2, 3))
    assert not p.under_pressure()
    p.enter_pressure(5 * NS_PER_MS)
    p.enter_pressure(6 * NS_PER_MS)          # already in pressure: not a second entry
    assert p.under_pressure()
    p.leave_pressure(12 * NS_PER_MS + 1)
    p.leave_pressure(20 * NS_PER_MS)         # not in pressure: nothing to add
    assert not p.under_pressure()
    assert (p.TCPMemoryPressures, p.TCPMemoryPressuresChrono) == (1, 7)
    with pytest.raises(ValueError):
        ProtoMemory((1, 2, 3), ncpus=0)


@pytest.mark.parametrize("profile, rsv", [("linux-5.15", 0), ("linux-6.1", SK_MEMORY_PCPU_RESERVE),
                                          ("linux-6.18", SK_MEMORY_PCPU_RESERVE)])
def test_a_socket_has_a_private_pool_from_its_sysctls(profile, rsv):
    prof = get_profile(profile)
    sk = TcpSocket(prof.policy(), prof.default_sysctls())
    assert sk.proto.tcp_mem == prof.default_sysctls().tcp_mem
    assert (sk.proto.pcpu_rsv, sk.proto.ncpus, sk.cpu) == (rsv, 1, 0)
    assert sk.proto.sockets_allocated == 1


def test_set_proto_moves_the_socket_and_its_pages():
    prof = get_profile("linux-6.18")
    pool = ProtoMemory((200, 400, 600), ncpus=2, pcpu_rsv=0)
    a, b = (TcpSocket(prof.policy(), prof.default_sysctls(), name=n) for n in "ab")
    b.mem.sk_forward_alloc = 3 * PAGE_SIZE             # pages b holds in its private pool
    b.proto.memory_allocated_add(0, 3)
    own = b.proto
    a.set_proto(pool, 0)
    b.set_proto(pool, 1)
    assert a.proto is b.proto is pool and b.cpu == 1
    assert pool.sockets_allocated == 2 and pool.memory_allocated() == 3
    assert own.sockets_allocated == 0 and own.memory_allocated() == 0
    with pytest.raises(ValueError, match="cpu 2"):
        a.set_proto(pool, 2)


def test_tcp_mem_and_mem_pcpu_rsv_are_sysctls_of_their_eras():
    six18 = get_profile("linux-6.18")
    s = six18.default_sysctls().with_overrides(
        {"net.ipv4.tcp_mem": "200 400 600", "net.core.mem_pcpu_rsv": 512},
        six18.known_sysctls(), "linux-6.18")
    assert (s.tcp_mem, s.mem_pcpu_rsv) == ((200, 400, 600), 512)
    with pytest.raises(SysctlError, match="min <= default <= max"):
        s.with_overrides({"net.ipv4.tcp_mem": [600, 400, 200]})
    with pytest.raises(SysctlError, match="out of range"):
        s.with_overrides({"net.core.mem_pcpu_rsv": 255})
    for old in ("linux-5.15", "linux-6.6", "linux-6.8"):
        prof = get_profile(old)
        with pytest.raises(SysctlError, match="6.9"):
            prof.default_sysctls().with_overrides({"net.core.mem_pcpu_rsv": 512},
                                                  prof.known_sysctls(), old)


# -- the pool at work: __sk_mem_raise_allocated / __sk_mem_reduce_allocated ------------------

def _on_pool(pool, cpu=0, profile="linux-6.18"):
    """A socket charging `pool` on `cpu` (no connection needed for the accounting)."""
    prof = get_profile(profile)
    sk = TcpSocket(prof.policy(), prof.default_sysctls())
    sk.set_proto(pool, cpu)
    return sk


def _crowd(pool, total=32):
    """Other sockets on `pool`'s CPU 0 up to `total` sockets: 32 is one percpu_counter batch,
    so the count the fair-share rule reads (percpu_counter_read_positive) sees them all."""
    for _ in range(total - pool.sockets_allocated):
        pool.sockets_allocated_add(0, 1)
    assert pool.sockets_allocated_read_positive() == pool.sockets_allocated == total


def _fill(sk, nbytes):
    """Charge `nbytes` of receive memory the way skb_set_owner_r() does after a granted
    sk_rmem_schedule(); False when the pool refused."""
    if not sk.rmem_schedule(nbytes):
        return False
    sk.charge(nbytes)
    return True


def test_pressure_is_entered_above_tcp_mem1_and_left_below_tcp_mem0():
    pool = ProtoMemory((10, 20, 30))
    sk = _on_pool(pool)
    sk.now = 3 * NS_PER_MS
    assert _fill(sk, 20 * PAGE_SIZE) and not sk.under_memory_pressure()    # 20: not above
    assert _fill(sk, PAGE_SIZE) and sk.under_memory_pressure()             # 21 > tcp_mem[1]
    assert pool.TCPMemoryPressures == 1 and pool.memory_pressure == 3 * NS_PER_MS
    sk.now = 10 * NS_PER_MS
    sk.uncharge(11 * PAGE_SIZE)                 # 10 pages left: not below tcp_mem[0]
    assert sk.under_memory_pressure() and pool.allocated == 10
    sk.uncharge(PAGE_SIZE)
    assert not sk.under_memory_pressure()
    assert (pool.TCPMemoryPressures, pool.TCPMemoryPressuresChrono) == (1, 7)


def test_hard_limit_refuses_and_undoes_the_add():
    pool = ProtoMemory((10, 20, 30))
    sk = _on_pool(pool)
    assert _fill(sk, 30 * PAGE_SIZE)
    fwd = sk.mem.sk_forward_alloc
    assert not sk.rmem_schedule(PAGE_SIZE)               # 31 > tcp_mem[2]
    assert pool.allocated == 30 and sk.mem.sk_forward_alloc == fwd
    assert sk.under_memory_pressure()


def test_receive_guarantee_below_tcp_rmem0_under_pressure():
    """Under pressure and over the fair share, a socket holding less than tcp_rmem[0]
    still gets its pages (the RFC 7323 minimum), below the hard limit."""
    pool = ProtoMemory((1, 2, 640))
    big, small = _on_pool(pool), _on_pool(pool)
    _crowd(pool)
    assert _fill(big, 10 * PAGE_SIZE) and pool.under_pressure()
    assert not _fill(big, 10 * PAGE_SIZE)                # 32 x 21 pages >= 640: over its share
    assert _fill(small, 100)                             # guaranteed
    assert _fill(small, 25 * PAGE_SIZE)                  # 100 < tcp_rmem[0]: still guaranteed
    assert pool.allocated == 36
    assert not _fill(small, PAGE_SIZE)                   # over tcp_rmem[0] and its share


def test_fair_share_under_pressure():
    """Under pressure, below tcp_mem[2]: granted while sockets_allocated x this socket's
    pages < tcp_mem[2] -- the small socket gets pages the big one is refused."""
    pool = ProtoMemory((1, 2, 1600))
    big, small = _on_pool(pool), _on_pool(pool)
    _crowd(pool)
    assert _fill(big, 49 * PAGE_SIZE)                    # entered pressure (rmem was < tcp_rmem[0])
    assert _fill(small, 2 * PAGE_SIZE)                   # 32 x 3 pages < 1600
    assert not _fill(big, PAGE_SIZE)                     # 32 x 50 pages = 1600: not below
    assert _fill(small, 40 * PAGE_SIZE)                  # 32 x 43 < 1600
    assert pool.allocated == 91 and pool.allocated <= pool.tcp_mem[2]


def test_sockets_allocated_is_a_percpu_counter_read_without_its_cpu_parts():
    """tcp_sockets_allocated is a percpu_counter: sk_sockets_allocated_inc/dec add to this
    CPU's part, folded whole into the global count once it reaches percpu_counter_batch
    (max(32, 2 x CPUs)) either way; percpu_counter_read_positive() sees the global count only,
    while the exact total (percpu_counter_sum: sockstat's alloc) is kept beside it."""
    p = ProtoMemory((1, 2, 3), ncpus=2)
    assert p.sockets_batch == 32 and ProtoMemory((1, 2, 3), ncpus=64).sockets_batch == 128
    for _ in range(31):
        p.sockets_allocated_add(0, 1)
    assert (p.sockets_allocated, p.sockets_allocated_read_positive()) == (31, 0)
    p.sockets_allocated_add(0, 1)                        # the 32nd: CPU 0's part folds
    assert (p.sockets_allocated_read_positive(), p.per_cpu_sockets) == (32, [0, 0])
    for _ in range(31):
        p.sockets_allocated_add(1, -1)                   # closed on the other CPU: unseen
    assert (p.sockets_allocated, p.sockets_allocated_read_positive()) == (1, 32)
    p.sockets_allocated_add(1, -1)
    assert (p.sockets_allocated, p.sockets_allocated_read_positive()) == (0, 0)
    p.sockets_allocated_add(1, -32)                      # a negative global count reads 0
    assert p.sockets_count == -32 and p.sockets_allocated_read_positive() == 0


def test_the_fair_share_divides_by_the_count_the_cpu_parts_have_reached():
    """__sk_mem_raise_allocated() reads the socket count with
    sk_sockets_allocated_read_positive(): with 31 sockets opened on one CPU it reads 0 and
    every socket gets its pages under pressure (below tcp_mem[2]); the 32nd folds them in
    and the same charge is over the socket's share. On a host of a few hundred sockets the
    share is that much larger than the exact count gives (the 6.18 host fixture
    seed-mix-200-tight: healthy receivers keep a whole 16 KiB burst)."""
    pool = ProtoMemory((1, 2, 100))
    big = _on_pool(pool)
    for _ in range(30):
        pool.sockets_allocated_add(0, 1)
    assert _fill(big, 60 * PAGE_SIZE) and pool.under_pressure()     # read as 0 sockets
    assert pool.sockets_allocated == 31
    pool.sockets_allocated_add(0, 1)                                 # 32: folded in
    assert not _fill(big, PAGE_SIZE)                                 # 32 x 62 >= 100
    assert pool.allocated == 60


def test_forced_charges_exceed_the_hard_limit_without_touching_pressure():
    pool = ProtoMemory((10, 20, 30))
    sk = _on_pool(pool)
    sk.forced_mem_schedule(40 * PAGE_SIZE)
    assert pool.allocated == 40 and not pool.under_pressure()
    assert not sk.rmem_schedule(sk.mem.sk_forward_alloc + 1)


def test_per_cpu_reserve_delays_pressure():
    """6.0+: pages charged on a CPU reach the global counter only 256 at a time, so
    pressure (and the hard limit) see them late -- and a CPU's leftover stays invisible."""
    pool = ProtoMemory((200, 400, 600), ncpus=2, pcpu_rsv=256)
    a, b = _on_pool(pool, 0), _on_pool(pool, 1)
    assert _fill(a, 255 * PAGE_SIZE) and _fill(b, 255 * PAGE_SIZE)
    assert pool.allocated == 0 and pool.total_pages() == 510      # 510 > 400: no pressure
    assert not pool.under_pressure()
    assert _fill(a, PAGE_SIZE)                                    # flush: 256 global
    assert pool.allocated == 256 and not pool.under_pressure()
    flat = ProtoMemory((200, 400, 600), ncpus=2, pcpu_rsv=0)     # 5.15: no reserve
    c, d = _on_pool(flat, 0, "linux-5.15"), _on_pool(flat, 1, "linux-5.15")
    assert _fill(c, 255 * PAGE_SIZE) and _fill(d, 255 * PAGE_SIZE)
    assert flat.allocated == 510 and flat.under_pressure()


def test_send_charge_refused_moderates_sndbuf():
    """An SK_MEM_SEND charge the pool refuses (sk_wmem_schedule past tcp_mem[2]) cuts
    sk_sndbuf to half the queue (sk_stream_moderate_sndbuf) and is then granted, the queue
    being at its new sndbuf ("fail only if under sndbuf"): the writer is held back by the
    buffer, not by a failed charge."""
    pool = ProtoMemory((1, 2, 3))
    sk = _on_pool(pool)
    sk.forced_mem_schedule(4 * PAGE_SIZE)                # the pool is past tcp_mem[2]
    sk.mem.sk_forward_alloc = 0
    sk.mem.wmem_charged = 20000                          # queued before (above tcp_wmem[0])
    sk.snd.sk_sndbuf = 87040
    from tcpsim.core.memory import SK_MEM_SEND
    assert sk.mem_schedule(PAGE_SIZE, SK_MEM_SEND)
    assert sk.snd.sk_sndbuf == 10000 and pool.allocated == 5


def test_pressure_stops_clamp_window_raising_rcvbuf():
    """tcp_clamp_window() raises sk_rcvbuf to the memory in use -- not under pressure."""
    for pressure, want in ((False, 300000), (True, 100000)):
        pool = ProtoMemory((10**6, 2 * 10**6, 3 * 10**6))
        sk = _on_pool(pool)
        sk.mem.sk_rcvbuf, sk.mem.sk_rmem_alloc = 100000, 300000
        if pressure:
            pool.enter_pressure(0)
        sk.k.clamp_window(sk)
        assert sk.mem.sk_rcvbuf == want


def test_loopback_host_goes_past_tcp_mem2_as_the_kernel_does():
    """The kernel measurement (tests/fixtures/host/stuck-40: `python -m tcpsim.capture.host`
    on 6.18.44, 2 CPUs, tcp_mem 200 400 600, 40 loopback connections whose receivers never
    read, 1448-byte writes): one pressure entry, drops on every connection, sockstat mem
    plateauing past tcp_mem[2] (765-846 pages over several runs). The model's host gets there
    the same way: the limits see only the global counter, which the per-CPU reserve keeps
    up to 255 pages behind, and sk_forced_mem_schedule() charges the first segment of an
    empty receive queue with no limit at all."""
    from pool_host import run_host
    kernel = json.loads((FIXTURES / "stuck-40.json").read_text())["summary"]
    r = run_host(40, 1.0)
    pool = r["pool"]
    assert pool["TCPMemoryPressures"] == kernel["pressures"] == 1
    assert r["counters"]["TCPRcvQDrop"] >= 40 and r["counters"]["PruneCalled"] >= 40
    assert r["peak_mem"] > pool["tcp_mem"][2]
    lo, hi = kernel["spread"]["peak_sockstat_mem"]          # the kernel's runs: 523-846
    assert 0.75 * lo <= r["peak_mem"] <= 1.25 * hi            # pages over all captures so far
    assert pool["per_cpu_fw_alloc"][0] > 0                    # charged, not yet global


def test_a_6_19_socket_bypassing_the_pool_is_not_charged_nor_pressured():
    """net.core.bypass_prot_mem (6.19): the socket's pages stay out of the pool and the
    host's pressure does not hold it back."""
    prof = get_profile("linux-6.19")
    sysctls = prof.default_sysctls().with_overrides({"net.core.bypass_prot_mem": 1},
                                                    prof.known_sysctls(), "linux-6.19")
    pool = ProtoMemory((1, 2, 3))
    sk = TcpSocket(prof.policy(), sysctls)
    sk.set_proto(pool, 0)
    pool.enter_pressure(0)
    assert _fill(sk, 10 * PAGE_SIZE) and pool.allocated == 0
    assert not sk.under_memory_pressure()
