"""The documentation site as a reader gets it: built pages opened in headless Chromium draw
every figure; the getting-started notebook runs.

Marked `docs`: .ci/run runs them after `mkdocs build --strict` (they use that site/, or build
one when it is missing). Run them by hand with `python3 -m pytest -m docs`. They skip when
mkdocs, Chromium (Debian's `chromium` package) or a Jupyter kernel is not installed.
"""

from __future__ import annotations

import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
# every page a figure block draws on, and the notebook's page
PAGES_WITH_FIGURES = tuple(sorted(
    {p.relative_to(DOCS).with_suffix(".html").as_posix() for p in DOCS.rglob("*.md")
     if "<!-- tcpsim-figure" in p.read_text()} | {"getting-started-notebook.html"}))


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
                                    "points": 0, "legend": []}
        if inside and tag == "text" and "legendtext" in classes:
            self._legend = inside
        if inside and tag == "path":
            if "js-line" in classes and re.match(r"M\s*[-\d.]", a.get("d") or ""):
                self.figures[inside]["lines"] += 1
            if "point" in classes and (a.get("d") or "").strip():
                self.figures[inside]["points"] += 1
        if inside and tag == "g" and "point" in classes:          # a bar of a bar chart
            self.figures[inside]["points"] += 1
        if tag not in ("br", "img", "input", "meta", "link", "hr", "path", "rect", "line",
                       "circle", "use", "stop", "image"):
            self._stack.append(inside)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in ("br", "img", "input", "meta", "link", "hr", "path", "rect", "line",
                       "circle", "use", "stop", "image"):
            self._stack.pop()

    _legend: str | None = None

    def handle_data(self, data: str) -> None:
        if self._legend:
            self.figures[self._legend]["legend"].append(data)
            self._legend = None

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
    assert expected >= 1, f"{page}: no figures were generated"
    assert not re.search(r"<script[^>]+src=\"https?:", source), f"{page}: loads a script from the network"
    parser = _Figures()
    parser.feed(_rendered_dom(chromium, site / page))
    assert len(parser.figures) == expected
    sources = _figure_sources(source)
    for fig_id, seen in parser.figures.items():
        assert seen["plotly"], f"{page}: {fig_id} was not drawn by plotly"
        assert seen["lines"] + seen["points"] > 0, f"{page}: {fig_id} has no data drawn: {seen}"
        fig = sources.get(fig_id)
        if fig is None:
            continue
        # every series the figure holds is drawn and named in its legend, as in its data
        named = [t.get("name") for t in fig["data"]
                 if t.get("showlegend", True) is not False and t.get("name")
                 and len(t.get("x") or ()) and not t.get("name", "").startswith("http")]
        drawn = [" ".join(x.split()) for x in seen["legend"]]
        missing = [n for n in named if " ".join(n.split()) not in drawn]
        assert not missing, f"{page}: {fig_id}: legend lacks {missing}; drawn: {drawn}"


def _figure_sources(source: str) -> dict[str, dict]:
    """The plotly JSON each figure div of the built page was given, by div id."""
    out = {}
    for m in re.finditer(r'Plotly\.newPlot\("([^"]+)",', source):
        start = source.rfind("var f=", 0, m.start())
        if start < 0:
            continue
        text = source[start + len("var f="):source.rfind(";", start, m.start())]
        try:
            out[m.group(1)] = json.loads(text.replace("<\\/", "</"))
        except ValueError:
            continue
    return out


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
    figures = [o["data"] for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return
    # static pictures beside the interactive figures, for viewers without JavaScript
    assert all("image/png" in d for d in figures)
