"""A claim's figures under another application timing than its own (docs/claims.md, "Timing:
the seed's lab, not the development VM"): the table's columns beside the claims' own timing.

    python scripts/claims_timing.py                         # dev-vm-quiet: unbounded-13, shrink-13
    python scripts/claims_timing.py --timing dev-vm-spin --only shrink-13 [--quick] [--json]

`tcpsim claims` runs each claim under its own timing and, for the claims that choose one
(seed 001's, `timing = "exact"`), under the default host preset too; this runs the chosen
claims' checks (tcpsim/claims.py) under `--timing` (a host preset or "exact") instead, with
the engine of `--engine` (default native, as the table's columns).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # this checkout's tcpsim

from tcpsim.app_latency import check_timing  # noqa: E402
from tcpsim.claims import CLAIMS, Runner  # noqa: E402
from tcpsim.runner import set_default_engine  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timing", default="dev-vm-quiet")
    ap.add_argument("--only", default="unbounded-13,shrink-13", help="comma-separated claims")
    ap.add_argument("--engine", default="native")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    keys = args.only.split(",")
    claims = {c.key: c for c in CLAIMS}
    unknown = [k for k in keys if k not in claims]
    try:
        check_timing(args.timing)
        if unknown:
            raise ValueError(f"--only {','.join(unknown)}: no such claim; the claims are "
                             f"{', '.join(claims)}")
    except ValueError as exc:
        print(f"claims_timing: error: {exc}", file=sys.stderr)
        return 2
    set_default_engine(args.engine)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        runner = Runner(Path(tmp), args.quick)
        runner.timing = args.timing
        for key in keys:
            out = claims[key].check(runner)
            rows.append({"claim": key, "timing": args.timing, "engine": args.engine,
                         "result": "PASS" if out.ok else "FAIL", "measured": out.measured})
            if not args.json:
                print(f"{rows[-1]['result']}  {key:<14} under {args.timing}: {out.measured}",
                      flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
