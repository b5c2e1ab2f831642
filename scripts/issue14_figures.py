"""Issue 14's done-means figures: each new fixture validated as a plain scenario over N seeds
against every capture of it -- now `tcpsim validate --plain` (tcpsim/validate/plain.py).

    python scripts/issue14_figures.py [--runs N] [--json] [--only NAME,...] [--engine E]

is `python -m tcpsim.cli validate FIXTURES... --plain --runs N` on the five issue-14 fixtures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

from tcpsim.validate.plain import DEFAULT_RUNS, run_plain  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kernel"
NEW = ("seed-unbounded-growth-shrink0-120s", "seed-unbounded-growth-shrink1-120s",
       "bulk-200mbit-tbf-cubic", "bulk-200mbit-tbf-bdp-cubic", "bulk-blocking-reader")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    ap.add_argument("--only", default="")
    ap.add_argument("--engine", default=None)
    args = ap.parse_args(argv)
    names = [n for n in NEW if not args.only or n in args.only.split(",")]
    return run_plain([FIXTURES / f"{n}.parquet" for n in names], args.runs, args.json,
                     error=lambda msg: print(f"tcpsim: error: {msg}", file=sys.stderr),
                     engine=args.engine)


if __name__ == "__main__":
    sys.exit(main())
