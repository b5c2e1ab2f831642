"""The host's TCP memory pool: what `struct proto` keeps for all TCP sockets of a host.

Linux charges every TCP socket's memory, in whole pages, to one pool per protocol
(tcp_prot: `memory_allocated`, `per_cpu_fw_alloc`, `memory_pressure`, `sysctl_mem`,
`sockets_allocated` [net/ipv4/tcp_ipv4.c, include/net/sock.h]). A socket takes pages from it
when its forward-alloc quota runs short (`__sk_mem_schedule`) and gives whole pages back
when it frees memory (`sk_mem_reclaim`); the pool's total, held against
`net.ipv4.tcp_mem`, decides whether the host is under memory pressure and whether a socket
may take more (`__sk_mem_raise_allocated` [net/core/sock.c]).

Since 6.0 a socket's pages go first to a per-CPU counter, which is flushed into the global
one only when it reaches `mem_pcpu_rsv` pages either way (`sk_memory_allocated_add` /
`sk_memory_allocated_sub` [include/net/proto_memory.h, 6.10+; include/net/sock.h, 6.0-6.9];
a constant SK_MEMORY_PCPU_RESERVE of 1 MB of pages until the sysctl net.core.mem_pcpu_rsv
made it tunable in 6.7). The global figure, the one `/proc/net/sockstat` prints as
`TCP: ... mem N` and the one the limits are checked against, therefore lags the truth by up
to ncpus x mem_pcpu_rsv pages. Before 6.0 every charge went straight to the global counter:
`pcpu_rsv = 0` models that.

A single socket gets a private pool built from its sysctls (TcpSocket.__init__); a host
makes its sockets share one with `TcpSocket.set_proto(pool, cpu)`. The pool is plain state
(sans-IO): the socket's memory room (core/memory.py) calls it; it never calls back.
"""

from __future__ import annotations

from typing import Any

from tcpsim.core.constants import NS_PER_MS

# SK_MEMORY_PCPU_RESERVE [include/net/sock.h, 6.0+]: 1 MB per CPU, in 4 KiB pages; the
# default of net.core.mem_pcpu_rsv (6.7+).
SK_MEMORY_PCPU_RESERVE = 256
# percpu_counter_batch [lib/percpu_counter.c: compute_batch_value()]: max(32, 2 x online
# CPUs), the batch of every percpu_counter added to without one of its own --
# tcp_sockets_allocated among them (sk_sockets_allocated_inc/dec [include/net/sock.h]).
PERCPU_COUNTER_BATCH_MIN = 32


def percpu_counter_batch(ncpus: int) -> int:
    """Models compute_batch_value() [lib/percpu_counter.c]: max(32, 2 x CPUs)."""
    return max(PERCPU_COUNTER_BATCH_MIN, 2 * ncpus)


class ProtoMemory:
    """tcp_prot's memory fields: the host's TCP pool, in pages, and its pressure state.

    `allocated`         tcp_memory_allocated, the global counter (pages; sockstat's mem)
    `per_cpu_fw_alloc`  tcp_memory_per_cpu_fw_alloc, one per CPU (pages not yet flushed)
    `pcpu_rsv`          net.core.mem_pcpu_rsv (6.7+) / SK_MEMORY_PCPU_RESERVE (6.0-6.6),
                        0 before 6.0 (every charge goes to the global counter at once)
    `tcp_mem`           net.ipv4.tcp_mem (min, pressure, max), pages
    `memory_pressure`   tcp_memory_pressure: when the host entered pressure (ns), -1 if not
    `sockets_allocated` tcp_sockets_allocated: sockets using the pool, exactly (what
                        percpu_counter_sum() adds up: sockstat's `alloc`)
    `sockets_count`     tcp_sockets_allocated's global part (`fbc->count`), all that
                        percpu_counter_read() -- and so the fair-share rule -- sees
    `per_cpu_sockets`   its per-CPU parts, each folded into `sockets_count` once it reaches
                        percpu_counter_batch (32 up to 16 CPUs) either way
    `TCPMemoryPressures`, `TCPMemoryPressuresChrono` the host's nstat counters (entries;
                        ms spent under pressure, counted when pressure is left)
    """

    __slots__ = ("tcp_mem", "ncpus", "pcpu_rsv", "allocated", "per_cpu_fw_alloc",
                 "memory_pressure", "sockets_allocated", "sockets_count",
                 "per_cpu_sockets", "sockets_batch", "TCPMemoryPressures",
                 "TCPMemoryPressuresChrono")

    def __init__(self, tcp_mem: tuple[int, int, int], ncpus: int = 1,
                 pcpu_rsv: int = 0) -> None:
        if ncpus < 1:
            raise ValueError(f"ProtoMemory: ncpus must be at least 1, got {ncpus}")
        self.tcp_mem: tuple[int, int, int] = (tcp_mem[0], tcp_mem[1], tcp_mem[2])
        self.ncpus = ncpus
        self.pcpu_rsv = pcpu_rsv
        self.allocated = 0
        self.per_cpu_fw_alloc = [0] * ncpus
        self.memory_pressure = -1
        self.sockets_allocated = 0
        self.sockets_count = 0
        self.per_cpu_sockets = [0] * ncpus
        self.sockets_batch = percpu_counter_batch(ncpus)
        self.TCPMemoryPressures = 0
        self.TCPMemoryPressuresChrono = 0

    # -- the counters -------------------------------------------------------------------------

    def memory_allocated(self) -> int:
        """Models `proto_memory_allocated()` / `sk_memory_allocated()` [include/net/sock.h]:
        the global counter, without the per-CPU reserves (what the limits see)."""
        return self.allocated

    def memory_allocated_add(self, cpu: int, pages: int) -> None:
        """Models `sk_memory_allocated_add()` [6.0+]: add to this CPU's counter; once it
        reaches `pcpu_rsv` pages, flush it whole into the global one (before 6.0,
        pcpu_rsv = 0: every add is global at once)."""
        local = self.per_cpu_fw_alloc[cpu] + pages
        if local >= self.pcpu_rsv:
            self.allocated += local
            local = 0
        self.per_cpu_fw_alloc[cpu] = local

    def memory_allocated_sub(self, cpu: int, pages: int) -> None:
        """Models `sk_memory_allocated_sub()` [6.0+]: the mirror of the add; flushed once
        this CPU's counter falls to -pcpu_rsv pages."""
        local = self.per_cpu_fw_alloc[cpu] - pages
        if local <= -self.pcpu_rsv:
            self.allocated += local
            local = 0
        self.per_cpu_fw_alloc[cpu] = local

    def sockets_allocated_add(self, cpu: int, n: int) -> None:
        """Models sk_sockets_allocated_inc()/_dec() [include/net/sock.h]:
        percpu_counter_add_batch() [lib/percpu_counter.c] of `n` on this CPU's part, folded
        whole into the global part once its magnitude reaches the batch. `sockets_allocated`
        keeps the exact total."""
        self.sockets_allocated += n
        local = self.per_cpu_sockets[cpu] + n
        if abs(local) >= self.sockets_batch:
            self.sockets_count += local
            local = 0
        self.per_cpu_sockets[cpu] = local

    def sockets_allocated_read_positive(self) -> int:
        """Models sk_sockets_allocated_read_positive() [include/net/sock.h, 5.15-6.18]:
        percpu_counter_read_positive(), the global part only (per-CPU parts not yet
        folded in are not seen; never below 0) -- the socket count the fair-share rule of
        __sk_mem_raise_allocated() divides tcp_mem[2] by. On a host whose sockets open on
        one CPU it lags the truth by up to 31, so a few hundred sockets' fair share is
        larger than their exact count gives; a lone socket's pool reads 0."""
        return max(self.sockets_count, 0)

    def total_pages(self) -> int:
        """Pages charged by the sockets, per-CPU reserves included (the truth the global
        counter lags)."""
        return self.allocated + sum(self.per_cpu_fw_alloc)

    # -- pressure -------------------------------------------------------------------------------

    def under_pressure(self) -> bool:
        """Models `tcp_under_memory_pressure()` without a memcg [include/net/tcp.h]: the
        global `tcp_memory_pressure` is set."""
        return self.memory_pressure >= 0

    def enter_pressure(self, now: int) -> None:
        """Models `tcp_enter_memory_pressure()` [net/ipv4/tcp.c]: set the flag to the
        current time and count the entry (TCPMemoryPressures), once per entry."""
        if self.memory_pressure < 0:
            self.memory_pressure = now
            self.TCPMemoryPressures += 1

    def leave_pressure(self, now: int) -> None:
        """Models `tcp_leave_memory_pressure()` [net/ipv4/tcp.c]: clear the flag and add
        the time spent under pressure, in ms, to TCPMemoryPressuresChrono."""
        if self.memory_pressure >= 0:
            self.TCPMemoryPressuresChrono += (now - self.memory_pressure) // NS_PER_MS
            self.memory_pressure = -1

    def snapshot(self) -> dict[str, Any]:
        """Every field as plain data (the native pool returns the same dict)."""
        return {"tcp_mem": list(self.tcp_mem), "ncpus": self.ncpus, "pcpu_rsv": self.pcpu_rsv,
                "allocated": self.allocated, "per_cpu_fw_alloc": list(self.per_cpu_fw_alloc),
                "memory_pressure": self.memory_pressure,
                "sockets_allocated": self.sockets_allocated,
                "sockets_count": self.sockets_count,
                "per_cpu_sockets": list(self.per_cpu_sockets),
                "TCPMemoryPressures": self.TCPMemoryPressures,
                "TCPMemoryPressuresChrono": self.TCPMemoryPressuresChrono}
