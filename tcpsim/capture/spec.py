"""What a capture needs from a scenario (TOML file or plain dict), validated with field names.

The project's own scenario loader lives elsewhere; this reads the documented format
(docs/scenarios.md) directly with `tomllib` so capture has no dependency on it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcpsim.sysctl_parse import kernel_name, parse_table as parse_sysctl_table
from tcpsim.units import parse_duration, parse_rate, parse_size
from tcpsim.workload import DEFAULT_READER, DEFAULT_WRITER, App, parse_app

@dataclass(frozen=True)
class CaptureSpec:
    """The parts of a scenario that shape the real-kernel capture."""

    name: str
    duration_ns: int
    sysctls: dict[str, Any]
    delay_ab_ns: int            # sender -> receiver one-way delay
    delay_ba_ns: int            # receiver -> sender
    rate_bps: int               # 0 = unlimited
    queue_limit: int
    loss: float
    mtu: int
    role: str                   # receiver is "client" or "server"
    device: str
    so_rcvbuf: int              # 0 = not set
    initcwnd: int
    nodelay: bool
    writer: App = DEFAULT_WRITER
    reader: App = DEFAULT_READER
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def delayed(self) -> bool:
        return self.delay_ab_ns > 0 or self.delay_ba_ns > 0


def load(source: dict[str, Any] | str | Path) -> dict[str, Any]:
    """A scenario as a dict: a dict is returned as is, a path or TOML text is parsed."""
    if isinstance(source, dict):
        return source
    p = Path(source) if not isinstance(source, str) or "\n" not in source else None
    if p is not None and p.exists():
        return tomllib.loads(p.read_text())
    return tomllib.loads(str(source))


def _get(d: dict[str, Any], table: str, key: str, default: Any) -> Any:
    return (d.get(table) or {}).get(key, default)


def _checked(table: str, key: str, fn, value):
    """fn(value, "table.key"): the units module's parsers name the field themselves."""
    return fn(value, f"{table}.{key}" if table else key)


def _one_way_preset_only(d: dict[str, Any]) -> None:
    """A capture builds one veth/tun topology with a writer on one side: described devices
    and data both ways are the simulator's only (an error, never silently ignored)."""
    rcv, snd = d.get("receiver") or {}, d.get("sender") or {}
    if isinstance(rcv.get("device"), dict):
        raise ValueError("receiver.device: a capture uses a preset device by name (veth, tun, "
                         "...); described devices ([receiver.device] tables) are simulated only")
    for where, table, key in (("receiver.writer", rcv, "writer"), ("sender.reader", snd, "reader"),
                              ("sender.device", snd, "device")):
        if key in table:
            raise ValueError(f"{where}: a capture sends data one way with the sender's own "
                             f"device; remove [{where}] to capture this scenario")


def parse(source: dict[str, Any] | str | Path) -> CaptureSpec:
    """Validate a scenario and return its CaptureSpec (errors name the offending field)."""
    d = load(source)
    link = d.get("link") or {}
    rtt = _checked("link", "rtt", parse_duration, link.get("rtt", 0))
    ab = _checked("link", "delay_ab", parse_duration, link.get("delay_ab", rtt / 2 / 1e9))
    ba = _checked("link", "delay_ba", parse_duration, link.get("delay_ba", rtt / 2 / 1e9))
    _one_way_preset_only(d)
    role = _get(d, "receiver", "role", "client")
    if role not in ("client", "server"):
        raise ValueError(f"receiver.role: {role!r} is not 'client' or 'server'")
    return CaptureSpec(
        name=str(d.get("name", "capture")),
        duration_ns=_checked("", "duration", parse_duration, d.get("duration", "10s")),
        sysctls={kernel_name(k): v for k, v in parse_sysctl_table(d.get("sysctl") or {}).items()},
        delay_ab_ns=ab, delay_ba_ns=ba,
        rate_bps=_checked("link", "rate", parse_rate, link["rate"]) if "rate" in link else 0,
        queue_limit=int(link.get("queue_limit", 1000)),
        loss=float(link.get("loss", 0.0)),
        mtu=int(link.get("mtu", 1500)),
        role=role,
        device=str(_get(d, "receiver", "device", "veth")),
        so_rcvbuf=_checked("receiver", "so_rcvbuf", parse_size, _get(d, "receiver", "so_rcvbuf", 0)),
        initcwnd=int(_get(d, "sender", "initcwnd", 10)),
        nodelay=bool(_get(d, "sender", "nodelay", True)),
        writer=parse_app(d.get("writer") or {}, "writer", DEFAULT_WRITER),
        reader=parse_app(d.get("reader") or {}, "reader", DEFAULT_READER),
        raw=d,
    )
