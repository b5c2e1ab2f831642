"""A host model held to a real-kernel host capture (tcpsim.capture.host).

Both sides are reduced to the same summary (`tcpsim.capture.host.summary()` for the kernel;
the host engine's result for the model): when the host first entered TCP memory pressure,
the peak of `/proc/net/sockstat`'s `mem` (pages), how many times it entered pressure, and
what each class of connection got delivered (receivers' `tcpi_bytes_received` summed).

Scored (issue 27): onset and peak `mem` within 25 % of the kernel's, the same pressure-count
class ("0", "1", "many"), every class's delivered bytes within 25 %. A quantity one side does
not have (no pressure, so no onset) is scored as agreement only when both lack it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LIMIT = 0.25


@dataclass(frozen=True)
class HostMetric:
    """One compared quantity: kernel and model values, relative error, verdict."""

    name: str
    kernel: Any
    model: Any
    error: float | None
    ok: bool

    def line(self) -> str:
        """`name  kernel  model  error  PASS|FAIL`, unknowns as an em dash."""
        def show(v: Any) -> str:
            if v is None:
                return "—"
            return f"{v:.3g}" if isinstance(v, float) else str(v)
        err = "—" if self.error is None else f"{self.error:.1%}"
        return (f"{self.name:<28} {show(self.kernel):>14} {show(self.model):>14} {err:>8}  "
                f"{'PASS' if self.ok else 'FAIL'}")


def _relative(name: str, kernel: float | None, model: float | None) -> HostMetric:
    if kernel is None or model is None:
        return HostMetric(name, kernel, model, None, kernel is None and model is None)
    if kernel == 0:
        return HostMetric(name, kernel, model, None if model else 0.0, model == 0)
    err = abs(model - kernel) / abs(kernel)
    return HostMetric(name, kernel, model, err, err <= LIMIT)


def pressure_class(entries: int) -> str:
    """"0", "1" or "many" pressure entries."""
    return "0" if entries == 0 else "1" if entries == 1 else "many"


def score(kernel: dict[str, Any], model: dict[str, Any]) -> list[HostMetric]:
    """Compare two host summaries (keys: pressure_onset_s, peak_sockstat_mem, pressures,
    delivered {class: bytes})."""
    out = [
        _relative("pressure onset (s)", kernel.get("pressure_onset_s"),
                  model.get("pressure_onset_s")),
        _relative("peak sockstat mem (pages)", kernel.get("peak_sockstat_mem"),
                  model.get("peak_sockstat_mem")),
    ]
    kc, mc = pressure_class(kernel.get("pressures", 0)), pressure_class(model.get("pressures", 0))
    out.append(HostMetric("pressure entries (class)", kc, mc, None, kc == mc))
    kd, md = kernel.get("delivered", {}), model.get("delivered", {})
    for name in sorted(set(kd) | set(md)):
        out.append(_relative(f"delivered: {name} (bytes)", kd.get(name), md.get(name)))
    return out


def passed(metrics: list[HostMetric]) -> bool:
    """Every metric within its limit."""
    return all(m.ok for m in metrics)
