"""A memory cgroup's socket accounting: the container case of the host's TCP memory.

A socket created (or accepted) by a task of a memory cgroup belongs to it (`sk->sk_memcg`,
mem_cgroup_sk_alloc() [mm/memcontrol.c]), and every page the socket takes from the protocol's
pool is charged to the cgroup as well: `__sk_mem_raise_allocated()` adds the pages to the pool
and then charges them to the memcg (mem_cgroup_charge_skmem(), 6.1; mem_cgroup_sk_charge(),
6.17+ [net/core/sock.c]); a refused charge skips every tcp_mem rule (no guaranteed
minimum, no fair share) and goes straight to the refusal. `sk_forced_mem_schedule()` charges
with __GFP_NOFAIL (forced past the limit), and so does a refused send charge at its sndbuf.
`__sk_mem_reduce_allocated()` uncharges. `tcp_under_memory_pressure()` [include/net/tcp.h]
is true when the memcg is under socket pressure, whatever the host's tcp_mem says.

Two hierarchies, two counters (both in the 6.1 and 6.18 sources):

* cgroup v1 (`version = 1`): socket pages go to their own counter, `memcg->tcpmem`
  (memory.kmem.tcp.usage_in_bytes), limited by memory.kmem.tcp.limit_in_bytes, and nothing
  else is in it. A charge that would pass the limit fails and sets `tcpmem_pressure`; the
  next charge that succeeds clears it (memcg1_charge_skmem() [mm/memcontrol-v1.c, 6.12+;
  mem_cgroup_charge_skmem() in mm/memcontrol.c before]); a __GFP_NOFAIL charge sets it and
  charges anyway. mem_cgroup_under_socket_pressure() [include/linux/memcontrol.h] reads the
  flag. The counter's failcnt is counted in 6.1; 6.18's tcpmem counter does not track it
  (page_counter `track_failcnt`, set only for v1's `memory` counter [mm/memcontrol.c
  mem_cgroup_css_alloc, 6.18]), so memory.kmem.tcp.failcnt reads 0 there (measured, E12).
* cgroup v2 (`version = 2`): socket pages are charged to the cgroup's one `memory` counter
  (memory.current), beside its other memory, and counted in memory.stat `sock`; memory.max
  limits the sum (try_charge_memcg() [mm/memcontrol.c]). The receive path charges from
  softirq with gfp_memcg_charge() [include/net/sock.h]: GFP_ATOMIC since "net-memcg: avoid
  stalls when under memory pressure" (6.1-rc3, a fix of 5.15's 4b1327be9fe5, backported to
  5.15.y at a sublevel not checked here) -- __GFP_HIGH, so an over-limit charge is *forced*
  past memory.max with one `max` event in memory.events, and the receive path drops nothing
  for the cgroup; 5.15 as released used GFP_NOWAIT: no reclaim, the charge fails, no event
  (`atomic` chooses: the profile's MEMCG_SOFTIRQ_ATOMIC). A forced (__GFP_NOFAIL) charge
  goes past the limit with one `max` event in any era. Socket pressure in v2 is set by
  vmpressure() [mm/vmpressure.c] when reclaim in the cgroup scans pages and frees few of
  them (`socket_pressure` = now + 1 s).

Not modelled, and said so: v2's reclaim and everything driven by it -- the cgroup's other
memory (`other`) is a constant the host file declares, never reclaimed, and the cgroup's
tasks allocate nothing, so vmpressure never fires and v2 socket pressure stays off (in the
kernel, the tasks' own allocations over memory.max reclaim, and when the sockets' forced
pages leave little to reclaim, vmpressure turns socket pressure on for a second at a time);
a charge from process context (a send) that the kernel would retry after reclaim (and could
end in the memcg OOM killer) fails, counting one `max` event. The per-CPU charge stock
(MEMCG_CHARGE_BATCH, 64 pages per CPU: memory.current runs up to that far ahead of the
charges) and memory.high. The memcg holds the host's own sockets only: with
`peers = "local"` the peers' sockets are outside it (their tasks run in another cgroup).

Plain state (sans-IO), shared by the host's sockets as the pool is (core/protmem.py).
"""

from __future__ import annotations

from typing import Any

MEMCG_VERSIONS = (1, 2)


class MemCgroup:
    """One memory cgroup's socket accounting, in pages.

    `version`        1 (memory.kmem.tcp.*) or 2 (memory.max / memory.current)
    `limit`          v1: memory.kmem.tcp.limit_in_bytes; v2: memory.max (pages)
    `other`          v2: the cgroup's memory other than sockets (pages, constant); 0 in v1
    `atomic`         v2: softirq charges are GFP_ATOMIC (forced past memory.max; 6.1+),
                     else GFP_NOWAIT (refused; 5.15 as released)
    `usage`          v1: memory.kmem.tcp.usage_in_bytes; v2: memory.current (pages)
    `sock`           the socket pages charged (v2: memory.stat `sock`)
    `watermark`      the peak of `usage` (v1 max_usage_in_bytes, v2 memory.peak)
    `tcpmem_pressure` v1's flag: the last charge failed
    `refused`        charges that found the limit in the way (forced ones included): what
                     6.1's memory.kmem.tcp.failcnt counts in v1
    `events_max`     v2: memory.events `max`
    `pressure_since` when socket pressure began (ns), -1 if none; `pressure_entries`,
                     `pressure_ns` how often and how long (ended spells)
    """

    __slots__ = ("version", "limit", "other", "atomic", "usage", "sock", "watermark", "tcpmem_pressure",
                 "refused", "events_max", "pressure_since", "pressure_entries", "pressure_ns")

    def __init__(self, version: int, limit: int, other: int = 0, atomic: bool = True) -> None:
        if version not in MEMCG_VERSIONS:
            raise ValueError(f"MemCgroup: version must be 1 or 2, got {version}")
        if limit < 0 or other < 0 or (version == 1 and other):
            raise ValueError("MemCgroup: limit and other must be >= 0 (other: v2 only)")
        self.version = version
        self.limit = limit
        self.other = other
        self.atomic = atomic
        self.usage = other
        self.sock = 0
        self.watermark = other
        self.tcpmem_pressure = False
        self.refused = 0
        self.events_max = 0
        self.pressure_since = -1
        self.pressure_entries = 0
        self.pressure_ns = 0

    def charge_skmem(self, pages: int, now: int, nofail: bool, blocking: bool) -> bool:
        """Models mem_cgroup_charge_skmem() / mem_cgroup_sk_charge() [mm/memcontrol.c, 6.1 /
        6.18]: charge `pages` if the counter stays within the limit (v1 clears
        tcpmem_pressure, memcg1_charge_skmem); else v1 sets tcpmem_pressure, v2 counts a
        `max` event for a charge that could have blocked (try_charge_memcg(); reclaim itself
        is not modelled), and a __GFP_NOFAIL charge -- or in v2 a softirq GFP_ATOMIC one
        (`atomic`) -- goes past the limit (v2: with its `max` event). Returns whether the
        pages were charged."""
        if self.usage + pages <= self.limit:
            self._add(pages)
            if self.version == 1:
                self._set_pressure(False, now)
            return True
        self.refused += 1
        if self.version == 1:
            self._set_pressure(True, now)
        elif blocking:
            self.events_max += 1
        if not (nofail or (self.version == 2 and self.atomic and not blocking)):
            return False
        if self.version == 2 and not blocking:
            self.events_max += 1
        self._add(pages)
        return True

    def uncharge_skmem(self, pages: int) -> None:
        """Models mem_cgroup_uncharge_skmem() / mem_cgroup_sk_uncharge(): give `pages` back
        (v2's refill of the per-CPU stock is not modelled: the pages leave memory.current
        at once). The v1 pressure flag stays as the last charge left it."""
        self.usage -= pages
        self.sock -= pages

    def under_socket_pressure(self) -> bool:
        """Models mem_cgroup_under_socket_pressure() [include/linux/memcontrol.h]: v1's
        tcpmem_pressure; v2's vmpressure-set socket_pressure is never set here (reclaim is
        not modelled)."""
        return self.tcpmem_pressure

    def _add(self, pages: int) -> None:
        self.usage += pages
        self.sock += pages
        if self.usage > self.watermark:
            self.watermark = self.usage

    def _set_pressure(self, on: bool, now: int) -> None:
        if on and not self.tcpmem_pressure:
            self.pressure_since = now
            self.pressure_entries += 1
        elif not on and self.tcpmem_pressure:
            self.pressure_ns += now - self.pressure_since
            self.pressure_since = -1
        self.tcpmem_pressure = on

    def pressure_ns_at(self, end: int) -> int:
        """Time under socket pressure up to `end` (an ongoing spell counted to `end`)."""
        return self.pressure_ns + (end - self.pressure_since if self.pressure_since >= 0 else 0)

    def snapshot(self) -> dict[str, Any]:
        """Every field as plain data (the native memcg returns the same dict)."""
        return {k: getattr(self, k) for k in self.__slots__}
