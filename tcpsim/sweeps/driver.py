"""One sweep from start to end: find the points already stored, run the others on the chosen
executor, store each as it finishes, count it on the progress display."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from tcpsim.sweeps import dataset, execute
from tcpsim.sweeps.dataset import Results
from tcpsim.sweeps.grid import Point
from tcpsim.sweeps.progress import Progress

# Stored columns that are neither an axis, a summary field nor a counter.
_META = {"hash", "engine", "tcpsim_version", "profile", "policies", "seed", "hz", "scenario",
         "sysctls"}


def run_sweep(points: list[Point], jobs: int = 0, trace_dir: Path | None = None,
              on_done: Callable[[Point, int], None] | None = None, *,
              results: Results | None = None, traces: bool = False, fresh: bool = False,
              executor: str = "local", scheduler: str | None = None,
              progress: Progress | None = None) -> list[Point]:
    """Run every point and fill in its summary or error; returns the points in grid order.

    With `results`, points whose content hash is stored there are read back instead of run
    (unless `fresh`), and every point that finishes is stored at once; `traces` puts each
    point's trace beside its row. Without, `trace_dir` gets one trace per point
    (point-NNNN.parquet). `executor` is "local" (`jobs` processes, 1 = this process, 0 = one
    per CPU) or "dask" (a LocalCluster of `jobs` workers, or the cluster at `scheduler`).
    On Ctrl-C the points finished so far keep their results and KeyboardInterrupt propagates.
    """
    jobs = jobs or os.cpu_count() or 1
    trace_of = _tracer(trace_dir, results if traces else None)
    todo = points if results is None or fresh else _resume(points, results, traces)
    state: dict[str, Any] = {"schema": None, "done": len(points) - len(todo)}
    if progress is not None:
        progress.set_resumed(state["done"])
        progress.workers = min(jobs, len(todo)) if executor != "dask" or scheduler is None \
            else progress.workers

    def finished(p: Point) -> None:
        if results is not None and p.summary is not None:
            if state["schema"] is None:
                state["schema"] = dataset.schema_for(points, p)
                for q in points:
                    dataset.coerce(q, state["schema"])
            results.write(p, state["schema"])
        state["done"] += 1
        if progress is not None:
            progress.point_done(bool(p.error), (p.summary or {}).get("wall_s"))
        if on_done:
            on_done(p, state["done"])

    if not todo:
        return points
    if executor == "dask":
        client, cluster = execute.dask_client(jobs, scheduler)
        try:
            execute.run_dask(todo, client, trace_of, finished)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    else:
        execute.run_local(todo, min(jobs, len(todo)), trace_of, finished)
    return points


def _tracer(trace_dir: Path | None, results: Results | None) -> Callable[[Point], str | None]:
    if results is not None:
        def in_results(p: Point) -> str:
            path = results.trace_path(p)
            path.parent.mkdir(parents=True, exist_ok=True)
            return str(path)
        return in_results
    if trace_dir is not None:
        trace_dir.mkdir(parents=True, exist_ok=True)
        return lambda p: str(trace_dir / f"point-{p.index:04d}.parquet")
    return lambda p: None


def _resume(points: list[Point], results: Results, traces: bool) -> list[Point]:
    """Fill in the stored points; return the others (also those whose trace is wanted and
    missing)."""
    rows = results.read_rows(p.hash for p in points)
    todo = []
    for p in points:
        row = rows.get(p.hash)
        if row is None or (traces and not results.trace_path(p).exists()):
            todo.append(p)
            continue
        keys = [k for k in row if k not in p.values and k not in _META and not k.startswith("counter.")]
        dataset.restore(p, row, keys)
    return todo

