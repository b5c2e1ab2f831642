"""The host's TCP pool (tcpsim/core/protmem.py): per-CPU reserves, pressure bookkeeping,
and sockets sharing one pool (TcpSocket.set_proto)."""

import pytest

from tcpsim.catalog import get_profile
from tcpsim.core.constants import NS_PER_MS, PAGE_SIZE
from tcpsim.core.protmem import SK_MEMORY_PCPU_RESERVE, ProtoMemory
from tcpsim.core.socket import TcpSocket
from tcpsim.core.sysctl import SysctlError


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
