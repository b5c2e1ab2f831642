"""Small host files for the host tests: reproducer sessions ("bad") among request/response
sessions with churn ("good") and a tcp_mem small enough to reach pressure within a second."""

from __future__ import annotations

from pathlib import Path


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


def connection_trace_tables(text: str, out: Path) -> dict[str, list]:
    """Each engine's per-connection traces (Arrow tables) of the host `text` with its classes
    `bad` and `good` traced, written under `out / ENGINE` -- what the engines are held alike
    on."""
    import pyarrow.parquet as pq

    from tcpsim.host.run import run_host
    from tcpsim.host.scenario import read_host_text
    from tcpsim.host.traces import ConnectionTraces
    tables = {}
    for engine in ("python", "native"):
        sink = ConnectionTraces(out / engine / "h.parquet", group_rows=100)
        plans: list = []
        r = run_host(read_host_text(text), engine=engine, sink=sink, traced=["bad", "good"],
                     plan_ready=plans.append)
        tables[engine] = [pq.read_table(p) for p in sink.close(r, plans[0])]
    return tables
