"""A host capture's memory cgroup: the host file's `[memcg]` on the real kernel.

The receiving sockets of a host capture belong to a fresh memory cgroup, as a server's do in
a container: the capture's one process moves itself into the cgroup around each accept() and
back out at once, so each accepted socket is the cgroup's (inet_csk_accept() ->
mem_cgroup_sk_alloc() takes the accepting task's memcg [net/ipv4/inet_connection_sock.c])
while the connecting peers' sockets stay outside it -- the model's `peers = "local"` with a
`[memcg]` (tcpsim/core/memcg.py).

Only cgroup v1's socket limit (`tcp_limit`: memory.kmem.tcp.limit_in_bytes) is captured: it
is the hierarchy the development machine's memory controller is mounted on (its cgroup v2
mount has no memory controller), and v1's tcp counter holds socket pages alone, so nothing
else the process allocates moves it. The cgroup is removed on every exit path (the process
moved back first; a cgroup whose sockets are gone is removable at once, and one still holding
charges is removed too -- the kernel keeps it offline until they drain).
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any

from tcpsim.core.constants import PAGE_SIZE
from tcpsim.errors import ScenarioError

V1_ROOT = Path("/sys/fs/cgroup/memory")
V1_FILES = {"usage": "memory.kmem.tcp.usage_in_bytes",
            "max_usage": "memory.kmem.tcp.max_usage_in_bytes",
            "failcnt": "memory.kmem.tcp.failcnt"}


def check_capturable(memcg: tuple[int, int, int] | None, where: str) -> None:
    """A ScenarioError unless this machine can capture `memcg` (None: nothing to check)."""
    if memcg is None:
        return
    if memcg[0] != 1:
        raise ScenarioError(f"{where}: memcg.max (cgroup v2) cannot be captured here: the "
                            "capture runs cgroup v1's tcp_limit (memory.kmem.tcp.*); use "
                            "tcp_limit, or run the model alone")
    if not (V1_ROOT / "memory.kmem.tcp.limit_in_bytes").exists():
        raise ScenarioError(f"{where}: memcg.tcp_limit needs cgroup v1's memory controller "
                            f"at {V1_ROOT} (memory.kmem.tcp.limit_in_bytes); it is not there")


def _own_v1_cgroup() -> str:
    """The memory cgroup (v1) of this process, as /proc/self/cgroup names it."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return path
    return "/"


class CaptureCgroup:
    """A v1 memory cgroup with a socket limit, for the duration of a `with` block."""

    def __init__(self, limit_pages: int) -> None:
        self.limit = limit_pages
        self.path = V1_ROOT / f"tcpsim-capture-{os.getpid()}"
        self.home = V1_ROOT / _own_v1_cgroup().lstrip("/")

    def __enter__(self) -> "CaptureCgroup":
        self.path.mkdir()
        try:
            # writing the limit also turns socket accounting on (memcg->tcpmem_active)
            (self.path / "memory.kmem.tcp.limit_in_bytes").write_text(
                f"{self.limit * PAGE_SIZE}\n")
        except OSError:
            self.path.rmdir()
            raise
        return self

    def _move(self, to: Path) -> None:
        (to / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def accept(self, listener: socket.socket) -> socket.socket:
        """accept() with this process in the cgroup: the new socket is the cgroup's."""
        self._move(self.path)
        try:
            conn, _ = listener.accept()
        finally:
            self._move(self.home)
        return conn

    def read(self) -> dict[str, int]:
        """usage and max_usage in pages, failcnt (0 on 6.18, which stops counting it)."""
        raw = {k: int((self.path / f).read_text()) for k, f in V1_FILES.items()}
        return {"usage_pages": raw["usage"] // PAGE_SIZE,
                "max_usage_pages": raw["max_usage"] // PAGE_SIZE, "failcnt": raw["failcnt"]}

    def __exit__(self, *exc: Any) -> None:
        if _own_v1_cgroup().rstrip("/") == "/" + self.path.name:
            self._move(self.home)
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
        self.path.rmdir()
