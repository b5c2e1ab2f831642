"""Replay a kernel trace through the model and score how closely the model follows it.

    tcpsim validate TRACE.parquet [...]            # or directories of fixtures
    python -m tcpsim.validate --all tests/fixtures/kernel --write-docs

Rooms: `trace` reads a kernel trace into a view, `replay` runs the same workload through the
model, `outcomes` classifies both runs, `scores` compares them, `report` and `html` present
the result; `run` ties them together for the CLI.
"""

from tcpsim.validate.run import ValidateError, Validation, main, run_validate, validate_trace

__all__ = ["ValidateError", "Validation", "main", "run_validate", "validate_trace"]
