"""The one exception the packetdrill front end raises."""

from __future__ import annotations


class PacketdrillSyntaxError(Exception):
    """A script is malformed, or uses syntax outside the supported subset.

    ``str()`` reads like packetdrill's own diagnostics: ``file.pkt:LINE: error: message``.
    Messages for valid packetdrill that this front end does not handle start with
    ``unsupported:`` so a caller can tell "bad script" from "not modelled yet".
    """

    def __init__(self, filename: str, line: int, message: str) -> None:
        super().__init__(filename, line, message)
        self.filename = filename
        self.line = line
        self.message = message

    @property
    def unsupported(self) -> bool:
        """True when the script is (probably) valid packetdrill outside our subset."""
        return self.message.startswith("unsupported:")

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}: error: {self.message}"
