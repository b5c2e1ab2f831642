"""Generated documentation is up to date with the code."""

from scripts import load_script

docgen = load_script("docgen")
DOC, render = docgen.DOC, docgen.render


def test_profiles_doc_is_generated_from_the_classes():
    assert DOC.read_text() == render(), "run: python scripts/docgen.py"


def test_every_era_says_what_it_changed():
    text = render()
    for name in ("linux-6.6", "linux-6.17", "linux-6.18"):
        section = text.split(f"## `{name}`")[1].split("## ")[0]
        assert section.count("* `") >= 2, name
