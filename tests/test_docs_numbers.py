"""Pages that never contradict their own runs: every figure block in docs/ is run again,
fresh (not from the build's cache), and what the built page says is held against it --
the numbers its prose states ({{LABEL: key}}), every cell of the table under a figure,
every claim the block checks, the conditions stated above the figures, and the counts the
figures print in their legends and event strips (named as the summary names them).

Marked `docs`, like tests/test_docs_site.py (which it shares the built site/ with): .ci/run
runs it after `mkdocs build --strict`; by hand: `python3 -m pytest -m docs tests/test_docs_numbers.py`.
"""

from __future__ import annotations

import functools
import html.parser
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scripts import load_script

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
docsite = load_script("docsite")
PAGES = sorted({p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                if docsite.FIGURE_BLOCK.search(p.read_text())})


@pytest.fixture(scope="module")
def site() -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    out = ROOT / "site"
    if not all((out / p.replace(".md", ".html")).is_file() for p in PAGES):
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=ROOT, check=True,
                       env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return out


class _Stated(html.parser.HTMLParser):
    """What a built page states about its runs: values in prose, table cells, checks,
    conditions (by their data- attributes)."""

    def __init__(self) -> None:
        super().__init__()
        self.values: list[dict[str, str]] = []
        self.cells: list[dict[str, str]] = []
        self.checks: list[str] = []
        self.conditions: list[dict[str, str]] = []
        self.condition_blocks = 0
        self.figures = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        a["block"] = str(self.condition_blocks - 1)            # the figure block it belongs to
        if tag == "span" and "tcpsim-value" in classes:
            self.values.append(a)
        elif tag == "td" and "data-key" in a:
            self.cells.append(a)
        elif tag == "li" and "data-check" in a:
            self.checks.append(a["data-check"])
        elif tag == "li" and "data-timing" in a:
            self.conditions.append(a)
        elif tag == "div" and "tcpsim-conditions" in classes:
            self.condition_blocks += 1
        elif tag == "div" and "tcpsim-figure" in classes:
            self.figures += 1


@functools.lru_cache(maxsize=None)
def _fresh(page: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The page's blocks and each one's result, run now."""
    specs = [docsite.parse_spec(m.group(1), page)
             for m in docsite.FIGURE_BLOCK.finditer((DOCS / page).read_text())]
    return specs, [docsite.run_spec(spec) for spec in specs]


def _same(stated: Any, fresh: Any) -> bool:
    if isinstance(stated, float) or isinstance(fresh, float):
        return stated is not None and fresh is not None and abs(stated - fresh) <= 1e-9 * max(1, abs(fresh))
    return stated == fresh


@pytest.mark.parametrize("page", PAGES)
def test_every_number_a_page_states_is_its_runs(site, page):
    specs, results = _fresh(page)
    stated = _Stated()
    stated.feed((site / page.replace(".md", ".html")).read_text())

    assert stated.condition_blocks == len(specs), f"{page}: a figure block states no conditions"
    for c in stated.conditions:                                  # conditions read from the run
        fresh = results[int(c["block"])]["conditions"][c["data-label"]]
        assert c["data-timing"] == fresh["timing_host"], (page, c)
        assert c["data-profile"] == fresh["profile"], (page, c)
        assert c["data-seed"] == str(fresh["seed"]), (page, c)
        assert float(c["data-duration"]) == fresh["duration_s"], (page, c)

    for v in stated.cells:                                       # the tables under figures
        label, key = v["data-label"], v["data-key"]
        want = results[int(v["block"])]["table"][label][key]
        assert _same(json.loads(v["data-value"]), want), \
            f"{page}: its table says {label}: {key} = {v['data-value']}, its run gives {want!r}"
    for v in stated.values:                                      # numbers in the prose
        label, key = v["data-label"], v["data-key"]
        wants = [r["summary"][label][key] for r in results if label in r["summary"]]
        assert wants and all(_same(json.loads(v["data-value"]), w) for w in wants), \
            f"{page}: states {label}: {key} = {v['data-value']}, its run gives {wants!r}"

    expected_checks = [c for spec in specs for c in spec.get("checks", [])]
    assert stated.checks == expected_checks, f"{page}: checks on the page differ from its blocks"
    for spec, result in zip(specs, results):
        for check in spec.get("checks", []):
            holds, words = docsite.evaluate_check(check, result["summary"], page)
            assert holds, f"{page}: claims {check!r}; its run shows {words}"


def _legend_counts(fig_json: str) -> list[tuple[str, str, int]]:
    """(run label or "", summary label, count) of every trace named "NAME (N..." in a figure,
    where NAME may carry a run's label ("6.1: segments dropped (5)", "6.1 · RTO timer
    expiries (18)")."""
    fig = json.loads(fig_json)
    names = [tr.get("name") or "" for tr in fig["data"]]
    names += list((fig["layout"].get("yaxis") or {}).get("ticktext") or [])   # event strip rows
    out = []
    for name in names:
        m = re.match(r"^(?:(.*?)(?::| ·) )?(.+?) \((\d+)(?:[,)])", name)
        if m:
            out.append((m.group(1) or "", m.group(2), int(m.group(3))))
        m = re.match(r"^(.+): none in any run$", name)
        if m:
            out.append(("*", m.group(1), 0))
    return out


@pytest.mark.parametrize("page", PAGES)
def test_the_counts_figures_print_are_the_summary_counts(page):
    from tcpsim.report.figures import TIMELINE_KINDS
    from tcpsim.report.summary import FIELDS_BY_KEY, MARK_FIELDS
    by_name = {FIELDS_BY_KEY[f].label: f for f in MARK_FIELDS.values()}
    specs, results = _fresh(page)
    for spec, result in zip(specs, results):
        checked = 0
        labels = list(result["summary"])
        for fig in result["figures"]:
            for run, name, n in _legend_counts(fig):
                field = by_name.get(name)
                if field is None:
                    continue
                runs = [run] if run in labels else labels if len(labels) == 1 or run == "*" else []
                for label in runs:
                    assert result["summary"][label][field] == n, \
                        f"{page}: a figure prints {name} ({n}) for {label}; its summary says " \
                        f"{field} = {result['summary'][label][field]}"
                    checked += 1
        if "events" in spec["figures"]:     # the strip counts every kind it always shows,
            shown = [f for k, f in MARK_FIELDS.items()      # and the others where they happened
                     if k in TIMELINE_KINDS or any(s[f] for s in result["summary"].values())]
            assert checked >= len(labels) * len(shown), f"{page}: event counts unchecked"
