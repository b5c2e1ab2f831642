"""The documentation site as a reader gets it: built pages opened in headless Chromium draw
every figure; the getting-started notebook runs.

Marked `docs`: .ci/run runs them after `mkdocs build --strict` (they use that site/, or build
one when it is missing). Run them by hand with `python3 -m pytest -m docs`. They skip when
mkdocs, Chromium (Debian's `chromium` package) or a Jupyter kernel is not installed.
"""

from __future__ import annotations

import html.parser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parent.parent
PAGES_WITH_FIGURES = ("tour/windows.html", "seeds/unbounded-growth.html", "since-6-18.html")


@pytest.fixture(scope="module")
def site() -> Path:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    out = ROOT / "site"
    if not all((out / p).is_file() for p in PAGES_WITH_FIGURES):
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=ROOT, check=True,
                       env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return out


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium (apt-get install chromium)")


class _Figures(html.parser.HTMLParser):
    """Per figure div (class tcpsim-figure): whether plotly took it over, and how many drawn
    lines (path.js-line with a non-empty d) and markers (path.point) it holds."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, dict[str, int]] = {}
        self._stack: list[str | None] = []          # the figure id each open element is inside

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        inside = self._stack[-1] if self._stack else None
        if tag == "div" and "tcpsim-figure" in classes:
            inside = a.get("id") or f"figure-{len(self.figures)}"
            self.figures[inside] = {"plotly": int("js-plotly-plot" in classes), "lines": 0,
                                    "points": 0}
        if inside and tag == "path":
            if "js-line" in classes and re.match(r"M\s*[-\d.]", a.get("d") or ""):
                self.figures[inside]["lines"] += 1
            if "point" in classes and (a.get("d") or "").strip():
                self.figures[inside]["points"] += 1
        if tag not in ("br", "img", "input", "meta", "link", "hr", "path", "rect", "line",
                       "circle", "use", "stop", "image"):
            self._stack.append(inside)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in ("br", "img", "input", "meta", "link", "hr", "path", "rect", "line",
                       "circle", "use", "stop", "image"):
            self._stack.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("br", "img", "input", "meta", "link", "hr", "path", "rect", "line",
                       "circle", "use", "stop", "image") and self._stack:
            self._stack.pop()


def _rendered_dom(chromium: str, page: Path) -> str:
    out = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--virtual-time-budget=30000", "--window-size=1400,1800", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.parametrize("page", PAGES_WITH_FIGURES)
def test_every_figure_on_the_page_draws_data(site, page):
    chromium = _chromium()
    source = (site / page).read_text()
    expected = source.count('class="tcpsim-figure"')
    assert expected >= 2, f"{page}: no figures were generated"
    assert not re.search(r"<script[^>]+src=\"https?:", source), f"{page}: loads a script from the network"
    parser = _Figures()
    parser.feed(_rendered_dom(chromium, site / page))
    assert len(parser.figures) == expected
    for fig_id, seen in parser.figures.items():
        assert seen["plotly"], f"{page}: {fig_id} was not drawn by plotly"
        assert seen["lines"] + seen["points"] > 0, f"{page}: {fig_id} has no data drawn: {seen}"


def test_the_getting_started_notebook_runs():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(ROOT / "docs" / "getting-started.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("application/vnd.plotly.v1+json" in o.get("data", {}) for o in outputs)
    assert any("<tcpsim.Run seed-unbounded-growth under linux-6.1" in
               o.get("data", {}).get("text/plain", "") for o in outputs)
