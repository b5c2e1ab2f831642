"""The user-input error the scenario loader, the units and the command line share."""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario or option value that cannot run; the message names the field (or option)
    and says what to write instead. The CLI prints it as one `tcpsim: error:` line."""
