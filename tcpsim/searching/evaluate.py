"""Evaluating candidate workloads: each becomes one validated scenario per side (the policy,
its reference run, the `vs` policy, its reference), all of a batch run at once on the sweep
executors (tcpsim.sweeps.execute: this process, a local pool, a Dask cluster), each run
stored under its content hash (tcpsim.sweeps.grid.point_hash) so that a search run again
reads back what it already computed.
"""

from __future__ import annotations

import copy
import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcpsim.catalog import ProfileError
from tcpsim.core.sysctl import SysctlError
from tcpsim.errors import ScenarioError
from tcpsim.runner import RunOptions
from tcpsim.scenario import read_scenario_file, set_field
from tcpsim.searching.objective import OBJECTIVES, Objective, Outcome, evaluate
from tcpsim.searching.reference import reference_spec
from tcpsim.searching import stall
from tcpsim.searching.space import PolicySpec, SearchSpec, active_values
from tcpsim.searching.stall import STALL_FIELDS
from tcpsim.sweeps import execute
from tcpsim.sweeps.grid import Point, _build_point

USER_ERRORS = (ScenarioError, ProfileError, SysctlError)


@dataclass
class Evaluation:
    """One workload's result: its values, the objective (None if a run failed), each side's."""

    values: dict[str, Any]
    duration: int
    objective: float | None = None
    sides: dict[str, float] = field(default_factory=dict)      # "policy", "vs" -> objective
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)  # role -> summary
    error: str = ""


class Evaluator:
    """Builds, runs and scores candidate workloads of one search."""

    def __init__(self, spec: SearchSpec, cache: Path | None = None, jobs: int = 1,
                 executor: str = "local", scheduler: str | None = None) -> None:
        self.spec = spec
        self.objective: Objective = OBJECTIVES[spec.objective]
        raw, self.source = read_scenario_file(spec.scenario)
        for key, value in spec.fixed.items():
            set_field(raw, key, value, f"set.{key}")
        self.raw = raw
        self.cache = cache
        self.memo: dict[str, Outcome] = {}
        self.jobs = jobs or os.cpu_count() or 1
        self.executor = executor
        self.scheduler = scheduler
        self._client: Any = None
        self._cluster: Any = None
        self._pool: Any = None
        self.runs = 0                 # runs actually simulated (not read back)
        if cache is not None:
            cache.mkdir(parents=True, exist_ok=True)

    # -- the sides ---------------------------------------------------------------------------------

    def roles(self) -> dict[str, PolicySpec]:
        """Every run a workload needs, by role."""
        out = {"policy": self.spec.policy}
        if self.spec.vs is not None:
            out["vs"] = self.spec.vs
        if self.objective.reference:
            for role in list(out):
                side = out[role]
                out[f"{role}_ref"] = PolicySpec(side.profile, (*side.policy, reference_spec()),
                                                side.sysctl)
        return out

    def base_value(self, key: str) -> Any:
        """The base scenario's own value of field `key` (None where it sets none)."""
        if key.startswith("sysctl."):
            return self.raw.get("sysctl", {}).get(key[len("sysctl."):])
        table: Any = self.raw
        for part in key.split("."):
            if not isinstance(table, dict) or part not in table:
                return None
            table = table[part]
        return table

    def doc(self, values: dict[str, Any], duration: int) -> dict[str, Any]:
        """The scenario document of a workload (base + [set] + values), duration included."""
        doc = copy.deepcopy(self.raw)
        set_field(doc, "duration", f"{duration}ns")
        for key, value in values.items():
            set_field(doc, key, value, f"space.{key}")
        return doc

    def build(self, values: dict[str, Any], duration: int) -> dict[str, Point]:
        """One validated Point per role (a ScenarioError/ProfileError/SysctlError if the
        workload is not a valid scenario)."""
        doc = self.doc(values, duration)
        out = {}
        for role, side in self.roles().items():
            opts = RunOptions(profile=side.profile, policies=side.policy,
                              sysctl=dict(side.sysctl) or None)
            out[role] = _build_point(0, doc, self.source, {}, opts)
        return out

    # -- running ---------------------------------------------------------------------------------

    def evaluate(self, batch: list[tuple[dict[str, Any], int]]) -> list[Evaluation]:
        """Evaluate workloads (values, duration ns), running what is not stored yet in
        parallel; results in the order given."""
        evals = []
        for v, d in batch:
            vals = active_values(self.spec.dims, dict(v), self.base_value)
            if "duration" in vals:            # a searched duration is the evaluation's own
                from tcpsim.units import parse_duration
                d = parse_duration(vals.pop("duration"), "space.duration", positive=True)
            evals.append(Evaluation(vals, d))
        built: list[dict[str, Point] | None] = []
        for ev in evals:
            try:
                built.append(self.build(ev.values, ev.duration))
            except USER_ERRORS as exc:
                ev.error = f"not a valid scenario: {exc}"
                built.append(None)
        todo: dict[str, Point] = {}
        for pts in built:
            for p in (pts or {}).values():
                if p.hash not in todo and self._stored(p.hash) is None:
                    todo[p.hash] = p
        self._run(list(todo.values()))
        for ev, pts in zip(evals, built):
            if pts is not None:
                self._score(ev, pts)
        return evals

    def _score(self, ev: Evaluation, pts: dict[str, Point]) -> None:
        outcomes = {role: self._stored(p.hash) for role, p in pts.items()}
        for role, out in outcomes.items():
            if out is None or out[0].get("error"):
                err = "did not run" if out is None else out[0]["error"]
                ev.error = f"{role}: {err}"
                return
            ev.summaries[role] = dict(out[0])
        for side in ("policy", "vs"):
            if side in outcomes:
                ref = outcomes.get(f"{side}_ref")
                ev.sides[side] = evaluate(self.objective, outcomes[side], ref)  # type: ignore[arg-type]
        ev.objective = ev.sides["policy"] - ev.sides.get("vs", 0.0)

    def _stored(self, key: str) -> Outcome | None:
        if key in self.memo:
            return self.memo[key]
        if self.cache is not None:
            path = self.cache / f"{key}.json"
            if path.is_file():
                doc = json.loads(path.read_text())
                out = (doc["summary"], doc["counters"])
                if self.objective.trace and not doc["summary"].get("error") and not all(
                        f in doc["summary"] for f in STALL_FIELDS):
                    return None          # stored by a search that kept no trace: run again
                self.memo[key] = out
                return out
        return None

    @property
    def _attempt(self) -> Any:
        """What runs one point on a worker: with the stall times when the objective reads
        them (tcpsim.searching.stall), else the sweeps' plain run."""
        return stall.attempt if self.objective.trace else execute.attempt

    def _store(self, p: Point) -> None:
        summary = dict(p.summary or {})
        if p.error:
            summary["error"] = p.error
        summary.pop("wall_s", None)          # how long it took is not a result
        out = (summary, dict(p.counters))
        self.memo[p.hash] = out
        if self.cache is not None:
            tmp = self.cache / f".{p.hash}.{uuid.uuid4().hex}.tmp"
            tmp.write_text(json.dumps({"summary": summary, "counters": out[1]}, sort_keys=True,
                                      default=str))
            os.replace(tmp, self.cache / f"{p.hash}.json")

    def _run(self, points: list[Point]) -> None:
        if not points:
            return
        for i, p in enumerate(points):
            p.index = i
        self.runs += len(points)
        if self.executor == "dask":
            if self._client is None:
                self._client, self._cluster = execute.dask_client(self.jobs, self.scheduler)
            execute.run_dask(points, self._client, lambda p: None, self._store, self._attempt)
        elif self.jobs > 1 and len(points) > 1:
            self._run_pool(points)
        else:
            execute.run_local(points, 1, lambda p: None, self._store, self._attempt)

    def _run_pool(self, points: list[Point]) -> None:
        """On a process pool kept for the whole search (a pool per batch would spend more
        starting workers than running short points); a pool that breaks (a worker killed)
        hands the batch to execute.run_local, which retries point by point."""
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool
        if self._pool is None:          # its workers die with this process (sweeps/lifeline.py)
            from tcpsim.sweeps.lifeline import watch_parent
            self._pool = ProcessPoolExecutor(max_workers=self.jobs, initializer=watch_parent,
                                             initargs=(os.getpid(),))
        futures = [(p, self._pool.submit(self._attempt, p, None)) for p in points]
        try:
            for p, fut in futures:
                p.summary, p.counters, p.error = fut.result()
                self._store(p)
        except BrokenProcessPool:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
            left = [p for p in points if p.hash not in self.memo]
            execute.run_local(left, min(self.jobs, len(left)), lambda p: None, self._store,
                              self._attempt)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        if self._client is not None:
            self._client.close()
            if self._cluster is not None:
                self._cluster.close()
            self._client = self._cluster = None
