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


def test_generated_pages_are_markdown_a_reader_can_follow():
    import re
    text = render()
    lines = text.splitlines()
    for before, line in zip(lines, lines[1:]):       # a list needs a blank line before it
        if line.startswith("* ") and before.strip():
            assert before.startswith("* "), f"a list glued to its paragraph: {before!r}"
    section = text.split("## `linux-6.6`")[1].split("\n## ")[0]
    assert "What 6.6 changed in the receive path:\n\n* from 6.5" in section
    assert "](https://git.kernel.org/" in section                # commits are links
    for name in re.findall(r"[\w/-]+\.md\b", text):               # only documents on the site
        assert (docgen.DOCS / name.removeprefix("docs/")).is_file(), name


def test_a_docstring_becomes_paragraphs_and_lists():
    md = docgen.as_markdown("Title line.\n\nWhat changed (commits cited in nowhere.md §3):\n"
                            "* one thing\n  continued\n* another (abcdef012345)\n\nLast words\n"
                            "wrapped.")
    assert md == ("Title line.\n\nWhat changed:\n\n* one thing continued\n* another "
                  f"([abcdef012345]({docgen.KERNEL_COMMIT.format('abcdef012345')}))\n\n"
                  "Last words wrapped.")
