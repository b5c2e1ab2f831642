"""Running a sweep's points: in this process, a local process pool, or a Dask cluster.

Every executor runs the same function on the same point (the seed is part of the point,
never of the worker), so the results are identical whatever runs them. Each hands every
finished point to `on_done` in the calling thread as it finishes -- that is where the row
is written. A worker that dies mid-point (killed, out of memory) has its point run again,
up to MAX_ATTEMPTS times; an exception raised by the model is the point's error at once
(it would raise again).
"""

from __future__ import annotations

import logging
import os
import socket
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

from tcpsim.core.sysctl import SysctlError
from tcpsim.catalog import ProfileError, patch_failure
from tcpsim.runner import RunOptions, run
from tcpsim.scenario import ScenarioError
from tcpsim.sweeps.grid import Point
from tcpsim.sweeps.lifeline import watch_parent

MAX_ATTEMPTS = 3
EXECUTORS = ("local", "dask")

Outcome = tuple[dict[str, Any] | None, dict[str, int], str]     # summary, counters, error
TraceOf = Callable[[Point], "str | None"]
OnDone = Callable[[Point], None]
Attempt = Callable[[Point, "str | None"], Outcome]   # runs one point on a worker


class ExecutorError(RuntimeError):
    """The executor cannot start (Dask missing, scheduler unreachable): a user error."""


def _run_point(point: Point, trace: str | None) -> tuple[dict[str, Any], dict[str, int]]:
    if point.host is not None:
        from tcpsim.host.run import host_summary, run_host
        r = run_host(point.host, engine=point.scenario.engine, skip=point.skip)
        return host_summary(r), dict(r.nstat)
    opts = RunOptions(skip=point.skip, trace=trace)
    result, _ = run(point.scenario, opts)
    return result.summary, result.counters


def attempt(point: Point, trace: str | None) -> Outcome:
    """Run one point where it lands (a worker); the model's exceptions become its error."""
    return guarded(_run_point, point, trace)


def guarded(run_point: Callable[[Point, "str | None"], tuple[dict[str, Any], dict[str, int]]],
            point: Point, trace: str | None) -> Outcome:
    """`run_point(point, trace)` as an Outcome: a scenario, profile or sysctl error, or any
    exception the model raises, becomes the point's error (a model bug in one point must not
    lose the rest)."""
    try:
        summary, counters = run_point(point, trace)
        return summary, counters, ""
    except (ScenarioError, ProfileError, SysctlError) as exc:
        return None, {}, str(exc)
    except Exception as exc:  # noqa: BLE001 -- a model bug in one point must not lose the rest
        return None, {}, patch_failure(exc) or f"internal error: {type(exc).__name__}: {exc}"


def _settle(point: Point, outcome: Outcome) -> None:
    point.summary, point.counters, point.error = outcome


def _gave_up(point: Point, why: str) -> None:
    point.summary, point.counters = None, {}
    point.error = f"worker died {MAX_ATTEMPTS} times running this point ({why})"


# -- in this process / local pool ---------------------------------------------------------------

def run_local(points: list[Point], jobs: int, trace_of: TraceOf, on_done: OnDone,
              fn: Attempt = attempt) -> None:
    """`jobs` worker processes (1: in this process). At most `jobs` points are in flight. A
    dying worker breaks the whole pool: the points in flight then are suspects, each run
    again alone in a pool of its own, so that only the point that kills its worker is
    charged an attempt (and fails after MAX_ATTEMPTS). `fn` runs a point (`attempt`, or a
    module-level function of the same signature: a search's run that keeps its trace)."""
    if jobs == 1:
        for p in points:
            _settle(p, fn(p, trace_of(p)))
            on_done(p)
        return
    todo = list(reversed(points))
    suspects: list[Point] = []
    deaths = {p.index: 0 for p in points}
    while todo or suspects:
        if suspects:
            batch, width = [suspects.pop()], 1
        else:
            batch, width = todo, jobs
        with ProcessPoolExecutor(max_workers=min(width, len(batch)), initializer=watch_parent,
                                 initargs=(os.getpid(),)) as pool:
            broken = _drain_pool(pool, batch, width, trace_of, on_done, fn)
        if len(broken) > 1:
            suspects.extend(broken)
            continue
        for p in broken:                       # it was alone: it killed its worker
            deaths[p.index] += 1
            if deaths[p.index] >= MAX_ATTEMPTS:
                _gave_up(p, "its worker process was killed")
                on_done(p)
            else:
                suspects.append(p)


def _drain_pool(pool: ProcessPoolExecutor, todo: list[Point], jobs: int, trace_of: TraceOf,
                on_done: OnDone, fn: Attempt = attempt) -> list[Point]:
    """Feed the pool from the end of `todo` until it is empty; returns the points in flight
    when the pool broke ([] if it did not)."""
    pending: dict[Future, Point] = {}
    try:
        while todo or pending:
            while todo and len(pending) < jobs:
                p = todo.pop()
                try:
                    pending[pool.submit(fn, p, trace_of(p))] = p
                except BrokenProcessPool:      # broke since the last wait: p never ran
                    todo.append(p)
                    return _cancel(pending)
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                p = pending.pop(fut)
                try:
                    _settle(p, fut.result())
                except BrokenProcessPool:
                    return [p, *_cancel(pending)]
                on_done(p)
    except KeyboardInterrupt:
        _cancel(pending)
        _stop_workers(pool)
        raise
    return []


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's workers now (a stopped sweep does not wait for the points they are
    running: those are not stored and run again next time). A terminal's Ctrl-C reaches them
    too; a SIGTERM sent to the sweep alone does not."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            proc.terminate()
        except (OSError, ValueError):       # already gone
            pass
    pool.shutdown(wait=False, cancel_futures=True)


def _cancel(pending: dict[Future, Point]) -> list[Point]:
    for fut in pending:
        fut.cancel()
    out = list(pending.values())
    pending.clear()
    return out


# -- Dask ---------------------------------------------------------------------------------------

def _dask():
    try:
        import distributed
    except ImportError:
        raise ExecutorError("--executor dask needs Dask: pip install 'tcpsim[dask]' "
                            "(or: pip install distributed)") from None
    return distributed


def dask_client(jobs: int, scheduler: str | None):
    """A Client on `scheduler`, or on a new LocalCluster of `jobs` single-threaded worker
    processes listening on loopback only. Returns (client, cluster or None)."""
    distributed = _dask()
    if scheduler:
        try:
            _reachable(scheduler)
            return distributed.Client(scheduler, timeout="10s"), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise ExecutorError(f"--scheduler {scheduler}: cannot connect ({exc}); give the "
                                "address a Dask scheduler prints, e.g. tcp://10.0.0.5:8786") from None
    # The workers' own log lines stay quiet up to CRITICAL: what happens to each point (done,
    # failed, retried after a lost worker) the sweep reports itself, and on a loaded machine a
    # worker logs a missed heartbeat as an ERROR it then recovers from.
    cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       silence_logs=logging.CRITICAL)
    client = distributed.Client(cluster)
    client.register_plugin(_lifeline(distributed, os.getpid()))   # workers die with us
    return client, cluster


def _lifeline(distributed: Any, parent: int) -> Any:
    """A Dask worker plugin: each worker of a LocalCluster this process started (and any
    worker its nanny restarts) dies with this process (tcpsim/sweeps/lifeline.py)."""

    class Lifeline(distributed.WorkerPlugin):  # type: ignore[misc,name-defined]
        name = "tcpsim-lifeline"

        def setup(self, worker: Any) -> None:
            watch_parent(parent)
    return Lifeline()


def _reachable(address: str) -> None:
    """Fail at once (OSError) on a tcp:// address nothing listens on, rather than after the
    client's connect timeout."""
    if not address.startswith("tcp://"):
        return
    host, _, port = address[len("tcp://"):].rpartition(":")
    if not port.isdigit():
        raise ValueError("expected tcp://HOST:PORT")
    socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()


def run_dask(points: list[Point], client: Any, trace_of: TraceOf, on_done: OnDone,
             fn: Attempt = attempt) -> None:
    """Submit every point to the cluster and settle them as they complete. The scheduler
    already reschedules the tasks of a worker that died; a point it gives up on (KilledWorker)
    is submitted again under a new key, up to MAX_ATTEMPTS submissions."""
    distributed = _dask()
    tries = {p.index: 1 for p in points}

    def submit(p: Point) -> Any:
        return client.submit(fn, p, trace_of(p), pure=False,
                             key=f"tcpsim-point-{p.hash}-{tries[p.index]}-{os.getpid()}")

    by_key = {}
    futures = []
    for p in points:
        fut = submit(p)
        by_key[fut.key] = p
        futures.append(fut)
    queue = distributed.as_completed(futures)
    try:
        for fut in queue:
            p = by_key.pop(fut.key)
            try:
                _settle(p, fut.result())
            except Exception as exc:  # noqa: BLE001 -- KilledWorker, lost connection: infrastructure
                if tries[p.index] >= MAX_ATTEMPTS:
                    _gave_up(p, type(exc).__name__)
                else:
                    tries[p.index] += 1
                    again = submit(p)
                    by_key[again.key] = p
                    queue.add(again)
                    continue
            finally:
                fut.release()
            on_done(p)
    except KeyboardInterrupt:
        client.cancel(list(queue.futures))
        raise
