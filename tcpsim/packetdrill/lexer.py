"""Split packetdrill script text into tokens, each with the line it starts on.

The token classes follow packetdrill's scanner: numbers, words, `...`, `--options`,
strings, backquoted shell commands, `%{ }%` code blocks and single punctuation characters.
`//` and `/* */` comments and all whitespace (newlines included) are skipped: the grammar is
free-form, so a system call may span lines.

Where two classes could match, the longest wins and numbers win ties, so `0x2f` is a hex
number, `0.100` a float, `4096` an integer, and `S` a word. `+0...0.100` scans as `+`, `0`,
`...`, `0.100`.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from .errors import PacketdrillSyntaxError


class Kind(enum.Enum):
    INT = "integer"
    HEX = "hex integer"
    FLOAT = "number"
    WORD = "word"
    STRING = "string"
    SHELL = "shell command"
    CODE = "code block"
    ELLIPSIS = "'...'"
    OPTION = "script option"
    PUNCT = "punctuation"
    EOF = "end of file"


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    text: str       # the source text (for SHELL/CODE/STRING: the contents, unquoted)
    line: int
    value: object = None  # int for INT/HEX; (name, raw value | None) for OPTION

    def is_punct(self, char: str) -> bool:
        return self.kind is Kind.PUNCT and self.text == char

    def is_word(self, word: str) -> bool:
        return self.kind is Kind.WORD and self.text == word

    def describe(self) -> str:
        """How to name the token in an error message."""
        if self.kind is Kind.EOF:
            return "end of file"
        if self.kind in (Kind.SHELL, Kind.CODE):
            return self.kind.value
        return f"'{self.text}'"


# Candidates for a token starting at a position; earlier entries win ties in length.
_CANDIDATES: tuple[tuple[Kind, re.Pattern[str]], ...] = (
    (Kind.ELLIPSIS, re.compile(r"\.\.\.")),
    (Kind.OPTION, re.compile(r"--([A-Za-z0-9_]+)(?:=(\S+))?")),
    (Kind.HEX, re.compile(r"0x[0-9a-fA-F]+")),
    (Kind.FLOAT, re.compile(r"-?[0-9]*\.[0-9]+")),
    (Kind.INT, re.compile(r"-?[0-9]+")),
    (Kind.WORD, re.compile(r"[A-Za-z0-9_]+")),
)

_SPACE = re.compile(r"\s+")
_LINE_COMMENT = re.compile(r"//[^\n]*")
_STRING = re.compile(r'"((?:\\.|[^"\\])*)"', re.DOTALL)
_SHELL = re.compile(r"`((?:\\.|[^`\\])*)`", re.DOTALL)


def tokenize(text: str, filename: str) -> list[Token]:
    """All tokens of `text`, ending with one EOF token."""
    return list(_Scanner(text, filename).tokens())


class _Scanner:
    """One pass over the text; `pos` and `line` advance together."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.pos = 0
        self.line = 1

    def tokens(self):
        while self.pos < len(self.text):
            token = self._next()
            if token is not None:
                yield token
        yield Token(Kind.EOF, "", self.line)

    def _advance(self, length: int) -> str:
        chunk = self.text[self.pos:self.pos + length]
        self.pos += length
        self.line += chunk.count("\n")
        return chunk

    def _error(self, message: str, line: int | None = None) -> PacketdrillSyntaxError:
        return PacketdrillSyntaxError(self.filename, line or self.line, message)

    def _next(self) -> Token | None:
        """The token at `pos`, or None after skipping whitespace or a comment."""
        text, pos = self.text, self.pos
        for skip in (_SPACE, _LINE_COMMENT):
            m = skip.match(text, pos)
            if m:
                self._advance(m.end() - pos)
                return None
        if text.startswith("/*", pos):
            return self._block_comment()
        if text.startswith("%{", pos):
            return self._code()
        if text[pos] == '"':
            return self._quoted(_STRING, Kind.STRING, "string (missing closing \")")
        if text[pos] == "`":
            return self._quoted(_SHELL, Kind.SHELL, "shell command (missing closing `)")
        return self._word_or_number() or self._punct()

    def _block_comment(self) -> None:
        end = self.text.find("*/", self.pos + 2)
        if end < 0:
            raise self._error("unterminated /* comment")
        self._advance(end + 2 - self.pos)
        return None

    def _code(self) -> Token:
        line = self.line
        end = self.text.find("}%", self.pos + 2)
        if end < 0:
            raise self._error("unterminated %{ code block (missing closing }%)")
        body = self._advance(end + 2 - self.pos)[2:-2]
        return Token(Kind.CODE, body.strip(" \t"), line)

    def _quoted(self, pattern: re.Pattern[str], kind: Kind, what: str) -> Token:
        line = self.line
        m = pattern.match(self.text, self.pos)
        if m is None:
            raise self._error(f"unterminated {what}")
        self._advance(m.end() - self.pos)
        return Token(kind, m.group(1), line)

    def _word_or_number(self) -> Token | None:
        best: tuple[Kind, re.Match[str]] | None = None
        for kind, pattern in _CANDIDATES:
            m = pattern.match(self.text, self.pos)
            if m and (best is None or m.end() > best[1].end()):
                best = (kind, m)
        if best is None:
            return None
        kind, m = best
        line = self.line
        self._advance(m.end() - self.pos)
        return Token(kind, m.group(0), line, _token_value(kind, m))

    def _punct(self) -> Token:
        line = self.line
        return Token(Kind.PUNCT, self._advance(1), line)


def _token_value(kind: Kind, m: re.Match[str]) -> object:
    if kind is Kind.INT:
        return int(m.group(0))
    if kind is Kind.HEX:
        return int(m.group(0), 16)
    if kind is Kind.OPTION:
        return (m.group(1), m.group(2))
    return None
