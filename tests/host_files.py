"""Small host files for the host tests: reproducer sessions ("bad") among request/response
sessions with churn ("good") and a tcp_mem small enough to reach pressure within a second."""

from __future__ import annotations


def tiny_host(duration: str = "1s", bad: int = 2, good: int = 3, lifetime: str = "300ms",
              policies: tuple[str, ...] = ()) -> str:
    """The host file's text; `policies` (patch names) for the whole host."""
    pol = f"policies = {list(policies)!r}\n".replace("'", '"') if policies else ""
    return f"""
name = "tiny"
profile = "linux-6.1"
duration = "{duration}"
{pol}seed = 3
cpus = 1
[sysctl]
"net.ipv4.tcp_mem" = [30, 40, 60]
[class.bad]
base = "seed-unbounded-growth"
count = {bad}
[class.good]
base = "request-response"
count = {good}
lifetime = {{exponential = "{lifetime}"}}
"""
