"""The documentation site's hooks (scripts/docsite.py) without building the site: every
figure block in docs/ is valid, and the commands shown beside figures are well formed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from scripts import load_script

docsite = load_script("docsite")
DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCKS = [(p.relative_to(DOCS).as_posix(), m.group(1))
          for p in sorted(DOCS.rglob("*.md")) for m in docsite.FIGURE_BLOCK.finditer(p.read_text())]


def test_the_tour_and_the_seeds_have_figures():
    pages = {page for page, _ in BLOCKS}
    for name in ("truesize", "coalescing", "memory", "windows", "shrink", "prune-collapse",
                 "rcv-ssthresh", "autotuning", "delayed-acks"):
        assert f"tour/{name}.md" in pages, name
    for name in ("unbounded-growth", "oscillating-reader", "window-not-fully-open"):
        assert f"seeds/{name}.md" in pages, name


@pytest.mark.parametrize("page, text", BLOCKS, ids=[f"{p}#{i}" for i, (p, _) in enumerate(BLOCKS)])
def test_every_figure_block_is_valid(page, text):
    import tcpsim
    from tcpsim.host.scenario import is_host_file
    from tcpsim.report.host import FIGURES as HOST_FIGURES
    spec = docsite.parse_spec(text, page)
    host = is_host_file(spec["scenario"])
    assert set(spec["figures"]) <= set(HOST_FIGURES if host else tcpsim.FIGURES)
    assert spec["scenario"] in tcpsim.scenarios()
    compile(docsite.python_snippet(spec), page, "exec")
    cmd = docsite.cli_command(spec)
    if cmd is not None:
        words = shlex.split(cmd)
        assert words[:2] in (["tcpsim", "run"], ["tcpsim", "compare"]) + (
            (["tcpsim", "sweep"],) if host else ())
        assert spec["scenario"] in words


@pytest.mark.parametrize("text, message", [
    ('scenario = "x"\nfigures = ["memory"]\ncolour = 1', "unknown key colour"),
    ('figures = ["memory"]', "needs scenario and figures"),
    ('scenario = "x"\nfigures = ["memory"]\nvariants = [{profile = "linux-6.1"}]', "needs a label"),
    ('scenario = "x"\nfigures = ["memory"]\nprofile = "linux-6.1"\nvariants = [{label = "a"}]',
     "profile at the top would be ignored"),
    ("scenario = ", "not valid TOML"),
    ('scenario = "seed-never-reads"\nfigures = ["memory"]\nsweep = {field = "x", values = [1]}',
     "sweep is a host block's"),
    ('scenario = "host-seed-mix"\nfigures = ["host-memory"]\nsweep = {field = "x"}',
     "sweep is a host block's"),
    ('scenario = "host-seed-mix"\nfigures = ["memory"]', "memory: not a host figure"),
    ('scenario = "host-seed-mix"\nfigures = ["host-sweep"]', "host-sweep: needs sweep"),
])
def test_bad_figure_blocks_name_the_page_and_the_problem(text, message):
    with pytest.raises(docsite.FigureSpecError, match=f"page.md: .*{message}"):
        docsite.parse_spec(text, "page.md")


def test_commands_for_a_comparison_and_for_scenario_changes():
    spec = {"scenario": "seed-never-reads", "duration": "3s", "figures": ["window"],
            "variants": [{"label": "a", "profile": "linux-6.18"},
                         {"label": "b", "profile": "linux-6.18", "policy": ["shrink-window"],
                          "sysctl": {"net.ipv4.tcp_rmem": [4096, 131072, 8388608]}}]}
    assert docsite.cli_command(spec) == (
        'tcpsim compare seed-never-reads -d 3s --profile linux-6.18 --vs linux-6.18 '
        '--policy shrink-window -s "net.ipv4.tcp_rmem=4096 131072 8388608"')
    spec["variants"][1]["set"] = {"receiver.device": "nic-4k"}
    assert docsite.cli_command(spec) is None
    snippet = docsite.python_snippet(spec)
    assert "sc1.setdefault('receiver', {})['device'] = 'nic-4k'" in snippet
    assert re.search(r"'b': \{.*'scenario': sc1\}", snippet)


def test_profile_pages_cover_every_profile_and_patch():
    import tcpsim
    pages = docsite.profile_pages()
    for name in [*tcpsim.profiles(), *tcpsim.patches()]:
        assert f"profiles/{name}.md" in pages, name
        assert pages[f"profiles/{name}.md"].startswith(f"# `{name}`")


def test_cli_reference_lists_every_command_and_option():
    import typer.main

    from tcpsim.cli import app
    page = docsite.cli_page()
    group = typer.main.get_command(app)
    for name, cmd in group.commands.items():
        assert f"## `tcpsim {name}" in page, name
        for p in cmd.params:
            if p.param_type_name == "option":
                assert f"`{p.opts[0]}`" in page, (name, p.opts[0])


SUMMARIES = {"6.1": {"drops": 0, "peak_sk_rcvbuf": 29927320, "zero_windows_sent": 0},
             "6.1 + shrink": {"drops": 7, "peak_sk_rcvbuf": 131072, "zero_windows_sent": 1}}


def test_a_false_claim_fails_the_build_and_says_what_the_run_shows():
    ok = docsite.checks_html({"checks": ["6.1: peak_sk_rcvbuf > 100 * 6.1 + shrink: peak_sk_rcvbuf",
                                         "6.1 + shrink: drops == 7"]}, SUMMARIES, "p.md")
    assert ok.count("✓") == 2 and "data-check" in ok
    with pytest.raises(docsite.FigureSpecError, match=r"p.md: the page claims '6.1: drops == 1' "
                       r"but its run shows 6.1: drops for memory or window \(0\) = 1"):
        docsite.checks_html({"checks": ["6.1: drops == 1"]}, SUMMARIES, "p.md")
    with pytest.raises(docsite.FigureSpecError, match="no run labelled '6.18'"):
        docsite.checks_html({"checks": ["6.18: drops == 0"]}, SUMMARIES, "p.md")


def test_prose_numbers_come_from_the_run():
    text = docsite.VALUE.sub(lambda m: docsite.value_html(SUMMARIES, m.group(1).strip(), m.group(2),
                                                          bool(m.group(3)), "p.md"),
                             "grows to {{6.1: peak_sk_rcvbuf}} ({{6.1: peak_sk_rcvbuf | exact}} B)")
    assert ">28.5 MiB</span>" in text and "29\u202f927\u202f320</span>" in text
    assert 'data-value="29927320"' in text
    with pytest.raises(docsite.FigureSpecError, match="not a summary field"):
        docsite.value_html(SUMMARIES, "6.1", "colour", False, "p.md")


def test_the_conditions_are_stated_from_the_run():
    out = docsite.conditions_html({"6.1": {"scenario": "s", "profile": "linux-6.1", "patches": [],
                                           "timing_host": "exact", "duration_s": 20.0, "seed": 1,
                                           "hz": None, "sysctl": {}}})
    assert "timing <code>exact</code> (applications on time)" in out and "20 s simulated" in out
    assert "seed 1" in out and "no patch" in out


def test_the_glossary_names_every_quantity_once():
    from tcpsim.report.summary import FIELDS_BY_KEY, MARK_FIELDS, mark_label
    from tcpsim.trace.schema import COLUMN_NAMES
    page = docsite.glossary_page()
    for key, f in FIELDS_BY_KEY.items():
        assert f"| {f.label} | `{key}` |" in page
    for kind, key in MARK_FIELDS.items():
        assert f"| {kind} | {mark_label(kind)} | `{key}` |" in page
    for col in COLUMN_NAMES:
        assert f"| `{col}` |" in page
    labels = [f.label for f in FIELDS_BY_KEY.values()]
    assert len(labels) == len(set(labels)), "two quantities share a name"


def test_commands_for_host_blocks():
    spec = {"scenario": "host-seed-mix", "duration": "5s", "figures": ["host-classes"],
            "variants": [{"label": "a", "profile": "linux-6.1"},
                         {"label": "b", "profile": "linux-6.1", "policy": "shrink-window",
                          "set": {"class.bad.count": 20}}]}
    assert docsite.cli_command(spec) == (
        "tcpsim compare host-seed-mix -d 5s --profile linux-6.1 --vs linux-6.1 "
        "--policy shrink-window --set class.bad.count=20")
    sweep = {**spec, "figures": ["host-sweep"], "sweep": {"field": "class.bad.count",
                                                          "values": [0, 10]}}
    del sweep["variants"][1]["set"]
    assert docsite.cli_command(sweep) == (
        "tcpsim sweep host-seed-mix -d 5s -p linux-6.1 -x class.bad.count=0,10 "
        "-x policy=none,shrink-window")
    one = {"scenario": "host-seed-mix", "figures": ["host-memory"], "profile": "linux-6.18"}
    assert docsite.cli_command(one) == ("tcpsim run host-seed-mix -p linux-6.18 --report "
                                        "host.html")
    snippet = docsite.python_snippet(sweep)
    assert "host_figure('host-sweep', runs, ('class.bad.count', points))" in snippet


def test_a_host_block_runs_and_labels_its_sweep(tmp_path):
    host = tmp_path / "tiny.toml"
    host.write_text('name = "tiny"\nprofile = "linux-6.1"\nduration = "500ms"\nseed = 3\n'
                    '[sysctl]\n"net.ipv4.tcp_mem" = [30, 40, 60]\n'
                    '[class.bad]\nbase = "seed-unbounded-growth"\ncount = 1\n'
                    '[class.good]\nbase = "request-response"\ncount = 2\n')
    spec = docsite.parse_spec(f'scenario = "{host}"\nfigures = ["host-sweep", "host-classes"]\n'
                              'sweep = {field = "class.bad.count", values = [0, 2]}\n'
                              'table = ["peak_sockstat_mem", "bad.drops"]\n'
                              'variants = [{label = "6.1", profile = "linux-6.1"}]', "page.md")
    out = docsite.run_spec(spec)
    assert list(out["summary"]) == ["6.1 @ 0", "6.1 @ 2"]
    assert out["summary"]["6.1 @ 2"]["bad.connections"] == 2
    assert out["table"]["6.1 @ 0"] == {"peak_sockstat_mem": out["summary"]["6.1 @ 0"]["peak_sockstat_mem"],
                                       "bad.drops": 0}
    c = out["conditions"]["6.1 @ 2"]
    assert (c["profile"], c["seed"], c["duration_s"]) == ("linux-6.1", 3, 0.5)
    assert len(out["figures"]) == 2
    holds, words = docsite.evaluate_check("6.1 @ 2: peak_sockstat_mem >= 6.1 @ 0: peak_sockstat_mem",
                                          out["summary"], "page.md")
    assert holds and "peak sockstat mem, pages" in words
