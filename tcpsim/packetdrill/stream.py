"""A cursor over the token list, with the error helpers every parser module shares."""

from __future__ import annotations

from typing import NoReturn

from .errors import PacketdrillSyntaxError
from .lexer import Kind, Token


class TokenStream:
    """Look-ahead, consumption and packetdrill-style errors over a list of tokens."""

    def __init__(self, tokens: list[Token], filename: str) -> None:
        self.tokens = tokens
        self.filename = filename
        self.index = 0

    def peek(self, ahead: int = 0) -> Token:
        """The token `ahead` positions on (the EOF token past the end)."""
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def next(self) -> Token:
        token = self.peek()
        if token.kind is not Kind.EOF:
            self.index += 1
        return token

    def at_end(self) -> bool:
        return self.peek().kind is Kind.EOF

    def accept_punct(self, char: str) -> Token | None:
        """Consume and return the punctuation `char` if it is next."""
        return self.next() if self.peek().is_punct(char) else None

    def accept_word(self, word: str) -> Token | None:
        """Consume and return the word `word` if it is next."""
        return self.next() if self.peek().is_word(word) else None

    def expect_punct(self, char: str, context: str) -> Token:
        token = self.accept_punct(char)
        if token is None:
            self.fail(f"expected '{char}' {context}, got {self.peek().describe()}")
        return token

    def expect(self, kind: Kind, context: str) -> Token:
        if self.peek().kind is not kind:
            self.fail(f"expected {kind.value} {context}, got {self.peek().describe()}")
        return self.next()

    def expect_int(self, context: str) -> int:
        """An INT or HEX token's value."""
        token = self.peek()
        if token.kind not in (Kind.INT, Kind.HEX):
            self.fail(f"expected integer {context}, got {token.describe()}")
        self.next()
        return int(token.value)  # type: ignore[arg-type]

    def fail(self, message: str, line: int | None = None) -> NoReturn:
        """Raise a syntax error at `line`; by default the line of the next token, or of the
        last token when the script ended early."""
        raise PacketdrillSyntaxError(self.filename, line or self._error_line(), message)

    def _error_line(self) -> int:
        if self.at_end() and self.index > 0:
            return self.tokens[self.index - 1].line
        return self.peek().line

    def unsupported(self, construct: str, line: int | None = None) -> NoReturn:
        self.fail(f"unsupported: {construct}", line)
