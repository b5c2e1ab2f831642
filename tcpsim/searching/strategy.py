"""A search space as a Hypothesis strategy, and Hypothesis as a search engine.

`search_workloads(spec)` draws {field: value} dicts from a SearchSpec's dimensions: each
field absent (its default) or drawn from its range on a grid of 64 log- (or linear-) spaced
steps, or from its choices. Hypothesis shrinks a failing example toward absent fields and
the low ends of ranges -- toward the base scenario -- which makes its shrinker a minimiser of
findings: on the generic space it reduces a ratcheting workload to Cloudflare's reproducer
(1 B reads on the base's 1448 B / 1 ms writer, tcp_rmem[2] = 256 MiB).

`optimiser = "hypothesis"` runs a search as a property, "the objective stays below the
threshold", with `hypothesis.target(objective)` steering generation and the shrinker
minimising the counterexample; examples run one after another in this process (no
parallelism: use "tpe" for that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from tcpsim.searching.space import Dim, SearchError, SearchSpec

if TYPE_CHECKING:
    from tcpsim.searching.driver import Progress, SearchResult
    from tcpsim.searching.evaluate import Evaluation, Evaluator

STEPS = 64


def _hypothesis() -> Any:
    try:
        import hypothesis
    except ImportError:
        raise SearchError('search.optimiser: "hypothesis" needs Hypothesis: pip install '
                          "hypothesis (or use optimiser = \"tpe\")") from None
    return hypothesis


def _dim_values(dim: Dim) -> Any:
    from hypothesis import strategies as st
    if dim.kind == "choice":
        return st.sampled_from(range(len(dim.choices))).map(dim.value)

    def at(i: int) -> Any:
        f = i / STEPS
        x = dim.lo * (dim.hi / dim.lo) ** f if dim.log else dim.lo + (dim.hi - dim.lo) * f
        return dim.value(x)
    return st.integers(0, STEPS).map(at)


def search_workloads(spec: SearchSpec) -> Any:
    """The strategy of `spec`'s workloads ({field: value}; absent fields at their defaults)."""
    _hypothesis()
    from hypothesis import strategies as st

    @st.composite
    def draw_workload(draw: Callable[[Any], Any]) -> dict[str, Any]:
        out = {}
        for dim in spec.dims:
            value = draw(st.one_of(st.none(), _dim_values(dim)))
            if value is not None:
                out[dim.key] = value
        return out
    return draw_workload()


class _Finding(Exception):
    """The property failed: the objective reached the threshold."""


def run_hypothesis(spec: SearchSpec, ev: "Evaluator", result: "SearchResult",
                   progress: "Progress | None", minimise: bool) -> "Evaluation | None":
    """Search with Hypothesis: `spec.budget` examples (plus the shrinker's); returns the
    shrunk finding (the last failing example Hypothesis replays), or None."""
    hyp = _hypothesis()
    from hypothesis import HealthCheck, Phase, given, settings, target
    failing: list[Evaluation] = []
    phases = [Phase.generate, Phase.target] + ([Phase.shrink] if minimise else [])

    @hyp.seed(spec.seed)  # type: ignore[untyped-decorator]
    @settings(max_examples=spec.budget, deadline=None, database=None, phases=phases,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
              derandomize=False, print_blob=False)
    @given(workload=search_workloads(spec))
    def prop(workload: dict[str, Any]) -> None:
        e = ev.evaluate([(workload, spec.duration)])[0]
        result.evaluations.append(e)
        if e.objective is not None and (result.best is None
                                        or e.objective > (result.best.objective or 0.0)):
            result.best = e
        if progress is not None:
            progress(len(result.evaluations), spec.budget, result.best)
        if e.objective is None:
            hyp.assume(False)
            return
        target(e.objective, label=spec.objective)
        if e.objective >= result.threshold:
            failing.append(e)
            raise _Finding()

    try:
        prop()
    except _Finding:
        return failing[-1] if failing else None
    except hyp.errors.Unsatisfiable:
        return None
    return None
