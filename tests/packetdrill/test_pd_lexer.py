"""Tokenizing: longest match with numbers winning ties, ellipsis splitting, line numbers."""

from __future__ import annotations

from tcpsim.packetdrill.lexer import Kind, tokenize


def kinds_texts(text: str) -> list[tuple[str, str]]:
    return [(t.kind.name, t.text) for t in tokenize(text, "l.pkt")[:-1]]


def test_blocking_window_splits_around_ellipsis():
    assert kinds_texts("+0...0.250") == [
        ("PUNCT", "+"), ("INT", "0"), ("ELLIPSIS", "..."), ("FLOAT", "0.250")]
    assert kinds_texts("+.5...1") == [
        ("PUNCT", "+"), ("FLOAT", ".5"), ("ELLIPSIS", "..."), ("INT", "1")]


def test_numbers_words_and_flags():
    assert kinds_texts("0x1F 4096 -1 .04 S. FP. 12ab") == [
        ("HEX", "0x1F"), ("INT", "4096"), ("INT", "-1"), ("FLOAT", ".04"),
        ("WORD", "S"), ("PUNCT", "."), ("WORD", "FP"), ("PUNCT", "."), ("WORD", "12ab")]
    values = [t.value for t in tokenize("0x1F 4096 -1", "l.pkt")[:3]]
    assert values == [31, 4096, -1]


def test_sequence_range():
    assert kinds_texts("101:201(100)") == [
        ("INT", "101"), ("PUNCT", ":"), ("INT", "201"), ("PUNCT", "("), ("INT", "100"),
        ("PUNCT", ")")]


def test_options_strings_commands_code_comments():
    tokens = tokenize('--mss=900 --flag "a\\"b" `x\ny` %{ a }% // c\n/* d\n*/ z', "l.pkt")
    assert [(t.kind, t.text, t.line) for t in tokens] == [
        (Kind.OPTION, "--mss=900", 1), (Kind.OPTION, "--flag", 1), (Kind.STRING, 'a\\"b', 1),
        (Kind.SHELL, "x\ny", 1), (Kind.CODE, "a", 2), (Kind.WORD, "z", 4), (Kind.EOF, "", 4)]
    assert tokens[0].value == ("mss", "900") and tokens[1].value == ("flag", None)
