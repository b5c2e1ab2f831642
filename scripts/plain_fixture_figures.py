"""Issue 14's done-means figures: each new fixture validated as a plain scenario over N seeds
against every capture of it, with `tcpsim validate --plain` (tcpsim/validate/plain.py).

    python scripts/plain_fixture_figures.py [--runs N] [--json] [--only NAME,...] [--engine E]
    python scripts/plain_fixture_figures.py --write-docs     # the generated block of docs/validation.md

Two timings: the scenario's own (what `tcpsim validate FIXTURE --plain` runs), and the
captured application timing where the model has it (`--set writer.latency=... --set
reader.latency=...`: the reproducer's captured wakeup sequences, the blocking reader's
measured wakeup latency; docs/app-latency.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

from tcpsim.validate.plain import (  # noqa: E402
    DEFAULT_RUNS, PLAIN_BEGIN, PLAIN_END, PlainError, docs_block, report, validate_plain,
)
from tcpsim.validate.run import DOCS, replace_block  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "kernel"
NEW = ("seed-unbounded-growth-shrink0-120s", "seed-unbounded-growth-shrink1-120s",
       "bulk-200mbit-tbf-cubic", "bulk-200mbit-tbf-bdp-cubic", "bulk-200mbit-tbf-cubic-rxcpu",
       "bulk-200mbit-tbf-bdp-cubic-rxcpu", "bulk-200mbit-tbf-cubic-datadelay",
       "bulk-200mbit-tbf-bdp-cubic-datadelay", "bulk-blocking-reader")
BLOCKS = ("writer.latency=periodic_writer_blocks", "reader.latency=periodic_reader_blocks")
# (label, fixtures, --set settings)
VARIANTS = (
    ("scenario's own", NEW, ()),
    ("captured sequences", NEW[:2], BLOCKS),
    ("blocking_reader latency", ("bulk-blocking-reader",), ("reader.latency=blocking_reader",)),
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    ap.add_argument("--only", default="", help="comma-separated fixture names")
    ap.add_argument("--engine", default=None)
    ap.add_argument("--write-docs", nargs="?", const=str(DOCS), default=None,
                    help=f"rewrite the generated plain-validation block of {DOCS.name}")
    args = ap.parse_args(argv)
    done = []
    for label, names, sets in VARIANTS:
        chosen = [n for n in names if not args.only or n in args.only.split(",")]
        try:
            results = [validate_plain(FIXTURES / f"{n}.parquet", args.runs, sets=sets,
                                      engine=args.engine) for n in chosen]
        except PlainError as exc:
            print(f"tcpsim: error: validate: {exc}", file=sys.stderr)
            return 2
        done.append((label, results))
        if not args.json:
            for r in results:
                print(f"[{label}]", *report(r), "", sep="\n", flush=True)
    if args.json:
        print(json.dumps({label: [r.as_dict() for r in rs] for label, rs in done}, indent=1,
                         default=str))
    if args.write_docs:
        cmd = f"python scripts/plain_fixture_figures.py --runs {args.runs} --write-docs"
        print(replace_block(Path(args.write_docs), docs_block(done, cmd), PLAIN_BEGIN, PLAIN_END))
    return 0


if __name__ == "__main__":
    sys.exit(main())
