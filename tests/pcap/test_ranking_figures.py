"""scripts/pcap_ranking_figures.py: the counts of issue 28's two fidelity figures, and the
generated block of docs/bring-your-own-capture.md agreeing with its own table."""

from __future__ import annotations

import re
from pathlib import Path

from scripts import load_script

F = load_script("pcap_ranking_figures")
DOC = Path(__file__).resolve().parents[2] / "docs" / "bring-your-own-capture.md"


def ranked(grades: dict[str, float], within: float, offloads: str = "tso/gso/gro off",
           fits: bool = True) -> dict:
    verdict = "consistent" if fits else "undecided"
    return {"fits_well": fits, "wall_s": 3.0,
            "truth": {"offloads": offloads, "reader": "never", "writer": "bulk"},
            "profiles": [{"label": label, "verdict": verdict,
                          "grade": {"total": g, "within_unit_fraction": within}}
                         for label, g in grades.items()]}


def test_a_tie_with_a_newer_kernel_counts_as_first_and_only_mss_sized_captures_count():
    rows = [F.summary("tie", ranked({"linux-6.14": 0.7, "linux-6.18": 0.7, "linux-6.1": 0.5}, 0.9)),
            F.summary("old", ranked({"linux-6.10": 0.7, "linux-7.1 + shrink-window": 0.69}, 0.1)),
            F.summary("split", ranked({"linux-6.18": 0.5, "linux-6.6": 0.4}, 0.95, "on", False))]
    assert [r["newer_first"] for r in rows] == [True, False, True]
    assert [r["mss_sized"] for r in rows] == [True, True, False]
    block = F.table(rows, "cmd")
    assert "on 2 of the 3 captures" in block and "on 1 of the 2 MSS-sized" in block
    assert "| tie (never, writer bulk) | 6.14 = 6.18: 0.700, 90.0 % | yes (tied) |" in block
    assert "| split, `--split-gso` (never, writer bulk) |" in block and "undecided" in block


def test_the_pages_generated_block_agrees_with_its_table():
    text = DOC.read_text()
    block = text[text.index(F.BEGIN):text.index(F.END)]
    rows = [line for line in block.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(list(F.PCAPS.glob("*.pcap.gz")))
    first = sum(" | yes" in r for r in rows)
    m = re.search(r"first \(alone or tied\) on (\d+) of the (\d+) captures", block)
    assert m and int(m.group(1)) == first
    close = [r for r in rows if "--split-gso" not in r
             and float(re.search(r": [\d.]+, ([\d.]+) %", r).group(1)) >= 80]
    m = re.search(r"on (\d+) of the (\d+) MSS-sized", block)
    assert m and int(m.group(1)) == len(close)
