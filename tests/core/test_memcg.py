"""A memory cgroup's socket accounting (tcpsim/core/memcg.py): v1's tcp counter and its
pressure flag, v2's memory counter shared with the cgroup's other memory, forced charges, and
a socket charging its memcg beside the pool (core/memory.py)."""

import pytest

from tcpsim.catalog import get_profile
from tcpsim.core.constants import PAGE_SIZE
from tcpsim.core.memcg import MemCgroup
from tcpsim.core.memory import SK_MEM_RECV
from tcpsim.core.socket import TcpSocket


def test_v1_a_refusal_sets_pressure_and_the_next_success_clears_it():
    """memcg1_charge_skmem(): fail -> tcpmem_pressure = 1; success -> 0; NOFAIL charges past
    the limit with the flag set; an uncharge leaves the flag alone."""
    m = MemCgroup(1, 10)
    assert m.charge_skmem(8, 0, False, False)
    assert not m.charge_skmem(3, 5, False, False)
    assert m.under_socket_pressure() and m.usage == 8
    assert m.charge_skmem(3, 7, True, False) and m.usage == 11
    m.uncharge_skmem(5)
    assert m.under_socket_pressure()
    assert m.charge_skmem(1, 15, False, False) and not m.under_socket_pressure()
    assert (m.pressure_entries, m.pressure_ns, m.watermark, m.refused) == (1, 10, 11, 2)


def test_v2_counts_other_memory_and_max_events_but_no_socket_pressure():
    """try_charge_memcg(): memory.max holds sockets and the cgroup's other memory. 5.15's
    softirq charges (GFP_NOWAIT) are refused without a `max` event, one that could block
    counts one, a forced charge counts one and goes past memory.max; vmpressure is not
    modelled: never socket pressure."""
    m = MemCgroup(2, 10, other=6, atomic=False)
    assert m.usage == 6 and m.charge_skmem(4, 0, False, False)
    assert not m.charge_skmem(1, 0, False, False) and m.events_max == 0
    assert not m.charge_skmem(1, 0, False, True) and m.events_max == 1
    assert m.charge_skmem(1, 0, True, False) and m.events_max == 2
    assert (m.usage, m.sock) == (11, 5) and not m.under_socket_pressure()


def test_v2_softirq_charges_are_forced_since_6_1():
    """6.1+: gfp_memcg_charge() is GFP_ATOMIC in softirq, whose __GFP_HIGH makes
    try_charge_memcg() force the charge past memory.max (one `max` event); a charge that could
    block is still refused (its reclaim is not modelled)."""
    m = MemCgroup(2, 10, other=6)
    assert m.charge_skmem(4, 0, False, False)
    assert m.charge_skmem(2, 0, False, False) and m.events_max == 1 and m.usage == 12
    assert not m.charge_skmem(1, 0, False, True) and m.events_max == 2


def test_the_era_decides_the_softirq_gfp():
    from tcpsim.host.plan import HostPlan, memcg_config
    plan = HostPlan(flows=(), duration=1, memcg=(2, 10, 0))
    assert memcg_config(plan, get_profile("linux-5.15")) == (2, 10, 0, False)
    assert memcg_config(plan, get_profile("linux-6.18")) == (2, 10, 0, True)


@pytest.mark.parametrize("bad", [dict(version=3, limit=1), dict(version=1, limit=-1),
                                 dict(version=1, limit=5, other=1)])
def test_bad_memcg_is_refused(bad):
    with pytest.raises(ValueError):
        MemCgroup(**bad)


def _socket(memcg: MemCgroup) -> TcpSocket:
    sk = TcpSocket(get_profile("linux-6.18").policy())
    sk.set_memcg(memcg)
    return sk


def test_a_refused_memcg_charge_skips_every_tcp_mem_rule():
    """__sk_mem_raise_allocated(): the memcg refusal goes straight to suppress_allocation --
    even a socket under its guaranteed minimum (sk_rmem_alloc < tcp_rmem[0]) is refused, and
    the pages leave the pool again."""
    m = MemCgroup(1, 2)
    sk = _socket(m)
    assert sk.mem.sk_rmem_alloc < sk.sysctl.tcp_rmem[0]
    before = sk.proto.total_pages()
    assert sk.mem_schedule(2 * PAGE_SIZE, SK_MEM_RECV)
    assert not sk.mem_schedule(PAGE_SIZE, SK_MEM_RECV)
    assert sk.proto.total_pages() == before + 2 and m.usage == 2
    assert sk.under_memory_pressure() and sk.memcg_pressure()
    assert sk.proto.memory_pressure < 0          # the host's pool is not in pressure


def test_forced_charges_pass_the_limit_and_reclaim_uncharges():
    """sk_forced_mem_schedule() charges with __GFP_NOFAIL; sk_mem_reclaim() gives whole pages
    back to the pool and the memcg."""
    m = MemCgroup(1, 1)
    sk = _socket(m)
    sk.forced_mem_schedule(3 * PAGE_SIZE)
    assert m.usage == 3 and m.watermark == 3 and m.tcpmem_pressure
    sk.mem.sk_forward_alloc -= 3 * PAGE_SIZE
    sk.mem_reclaim(3 * PAGE_SIZE)
    assert m.usage == 0 and m.sock == 0


def test_without_a_memcg_nothing_changes():
    sk = TcpSocket(get_profile("linux-6.18").policy())
    assert sk.memcg is None and not sk.memcg_pressure()
    assert sk.mem_schedule(PAGE_SIZE, SK_MEM_RECV)
