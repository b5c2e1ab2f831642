"""`validate --plain` (tcpsim/validate/plain.py): a capture's own scenario over N seeds against
every capture of it. Short fixtures (1-4 s) here; the 120 s reproducers only under -m slow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcpsim.cli import app
from tcpsim.validate.plain import (
    PlainError, compare_figures, figure_spread, outcome_counts, plain_scenario, quantile_of,
    run_plain, validate_plain,
)
from tcpsim.validate.summary import run_summary
from tcpsim.validate.trace import load, load_meta, view

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernel"
FILL = FIXTURES / "seed-rcvbuf32k-fill.parquet"
runner = CliRunner()


def _run(*outcomes: dict[str, str], **figs: object) -> dict:
    """A run summary with the given outcome labels (defaults: the quiet ones)."""
    base = {"memory": "bounded", "zero_window": "no zero window", "drops": "no drops",
            "stall": "no stall"}
    return {"outcomes": {**base, **(outcomes[0] if outcomes else {})}, **figs}


STALL = {"zero_window": "zero window", "stall": "stall"}


def _manifest_entry(name: str) -> dict:
    m = json.loads((FIXTURES / "manifest.json").read_text())
    return next(e for e in m["fixtures"] if e["name"] == name)


# -- the verdict ------------------------------------------------------------------------------

def test_the_kernels_majority_outcome_must_be_the_models_majority() -> None:
    kernel = [_run(STALL)] * 3
    assert outcome_counts(kernel, [_run(STALL)] * 6 + [_run()] * 4)["stall"]["verdict"] == "ok"
    o = outcome_counts(kernel, [_run(STALL)] * 1 + [_run()] * 9)["stall"]
    assert (o["kernel"], o["kernel_n"], o["model"], o["model_n"]) == (3, 3, 1, 10)
    assert o["verdict"] == "fail" and o["kernel_majority"] is True
    assert outcome_counts(kernel, [_run(STALL)] * 5 + [_run()] * 5)["stall"]["verdict"] == "fail"
    # a quiet majority must be quiet in the model too; an even split is not judged
    quiet = outcome_counts([_run()] * 2 + [_run(STALL)], [_run(STALL)] * 3)
    assert quiet["stall"]["verdict"] == "fail"
    assert outcome_counts([_run(), _run(STALL)], [_run()] * 3)["stall"]["verdict"] == "not judged"


def test_each_capture_is_placed_in_the_models_distribution() -> None:
    model = [1.0, 2.0, 3.0, 4.0]
    assert quantile_of(0.5, model) == 0.0 and quantile_of(9, model) == 1.0
    assert quantile_of(2.0, model) == 0.375 and quantile_of(2.5, model) == 0.5
    f = figure_spread([2.5, 3.0], model)
    assert (f["median"], f["min"], f["max"]) == (2.5, 1.0, 4.0)
    assert (f["marker"], f["in_range"]) == ("in range", 2)
    assert f["kernel_quantiles"] == [0.5, 0.625] and (f["q1"], f["q3"]) == (1.75, 3.25)
    assert f["ratio"] == 1.1                                   # kernel median 2.75 / model 2.5
    f = figure_spread([2.5, 7.0], model)
    assert f["marker"] == "outside" and f["in_range"] == 1
    assert figure_spread([1.0], [])["marker"] == "outside"      # the model never had it
    assert figure_spread([], model)["marker"] == "-"


def test_only_the_figures_the_captures_have_are_compared() -> None:
    old = [_run(STALL, stall_at_s=0.15, final_sk_rmem_alloc=100)]     # before counters were kept
    new = [_run(STALL, stall_at_s=0.2, final_sk_rmem_alloc=90, first_zero_window_s=0.2,
                counters={"TcpExtPruneCalled": 3}, sender_retrans_segs=0)]
    assert set(compare_figures(old, new)) == {"stall_at_s", "sk_rmem_alloc_end"}
    figs = compare_figures(new, new)
    assert {"first_zero_window_s", "prune_called", "retransmissions"} <= set(figs)
    assert "rcv_coalesce" not in figs


# -- the plain scenario -----------------------------------------------------------------------

def _setup(name: str, **kw: object):
    meta = load_meta(FIXTURES / f"{name}.parquet")
    return plain_scenario(FIXTURES / f"{name}.parquet", meta, **kw)


def test_plain_scenario_takes_the_capture_description() -> None:
    s = _setup("bulk-200mbit-tbf-cubic")
    sc = s.scenario
    link = (sc.link.kind, sc.link.burst, sc.link.limit, sc.link.rate_bps)
    assert link == ("tbf", 25000, 250000, 200_000_000)
    assert sc.sysctl["net.ipv4.tcp_rmem"] == [4096, 131072, 33554432]   # read back
    assert sc.sysctl["net.ipv4.tcp_shrink_window"] == 1
    assert (s.profile, s.hz, s.host) == ("linux-6.18", 250, "dev-vm-loaded")   # the manifest's
    # bulk writer and fast reader: exact under every preset (nothing measured for them)
    assert sc.writer.latency_table == "" and sc.reader.kind == "fast"
    assert sc.reader.latency_table == "" and not sc.reader.timed
    assert any("host preset dev-vm-loaded (manifest.json)" in n for n in s.notes)


def test_the_fixtures_host_preset_gives_the_apps_their_calibrated_timing() -> None:
    s = _setup("seed-unbounded-growth-shrink1-120s")
    assert s.host == "dev-vm-loaded" and s.scenario.reader.latency_host == "dev-vm-loaded"
    assert s.scenario.reader.latency_table == "periodic_reader_blocks"      # the default
    assert s.scenario.sysctl["net.ipv4.tcp_adv_win_scale"] == -2
    s = _setup("seed-unbounded-growth-shrink1-120s", host="dev-vm-spin")
    assert s.scenario.writer.latency_host == "dev-vm-spin"
    s = _setup("seed-unbounded-growth-shrink1-120s", host="exact")
    assert not s.scenario.writer.timed and not s.scenario.reader.timed
    with pytest.raises(PlainError, match="--host: expected one of"):
        _setup("seed-unbounded-growth-shrink1-120s", host="laptop")


def test_run_summary_is_the_manifests_for_the_shipped_capture() -> None:
    """The summary taken of every model run is the one the manifest holds for the capture
    shipped as the fixture file (same code, moved into the package)."""
    cols, meta = load(FIXTURES / "bulk-blocking-reader.parquet")
    got = run_summary(view(cols, meta), meta, 3 * 10**9)
    want = _manifest_entry("bulk-blocking-reader")["run_summaries"][0]
    assert got == {k: v for k, v in want.items() if k != "link_qdisc"}


# -- end to end ------------------------------------------------------------------------------------

def test_plain_validation_of_a_fill_passes_and_reports_counts() -> None:
    r = validate_plain(FILL, runs=2, engine="python")
    assert r.passed and r.seeds == [1, 2]
    assert any("all 2 seeds gave the same run" in n for n in r.setup.notes)   # nothing random
    o = r.outcomes["zero_window"]
    assert (o["kernel"], o["kernel_n"], o["model"], o["model_n"]) == (2, 2, 2, 2)
    assert r.outcomes["memory"]["model"] == 0 and r.outcomes["stall"]["verdict"] == "ok"
    assert r.figures["sk_rmem_alloc_end"]["kernel"] == [63312, 63312]


def test_plain_fails_when_the_model_misses_the_kernels_outcome(tmp_path: Path) -> None:
    """Captures that never reached a zero window, against a model that always does (the
    never-read fill): the verdict fails and the exit code says so."""
    shutil.copy(FILL, tmp_path / FILL.name)
    entry = {**_manifest_entry("seed-rcvbuf32k-fill"), "run_summaries": [_run()] * 3}
    (tmp_path / "manifest.json").write_text(json.dumps({"fixtures": [entry]}))
    lines: list[str] = []
    assert run_plain([tmp_path / FILL.name], runs=2, echo=lines.append, engine="python") == 1
    text = "\n".join(lines)
    assert "seed-rcvbuf32k-fill: FAIL" in text
    assert any(ln.split()[:2] == ["zero", "window"] and ln.split()[-1] == "fail"
               and "0/3" in ln and "2/2" in ln for ln in text.splitlines())
    assert "0/1 fixtures pass as plain scenarios" in text


def test_require_in_range_turns_a_figure_into_a_verdict() -> None:
    # the model's fill ends at 63312 as the kernel's (in range); its stall comes before the
    # kernel's 0.12 s (outside: the model's sender times its probes otherwise, validation.md)
    r = validate_plain(FILL, runs=1, engine="python", required=("sk_rmem_alloc_end",))
    assert r.figures["sk_rmem_alloc_end"]["marker"] == "in range" and r.passed
    r = validate_plain(FILL, runs=1, engine="python", required=("stall_at_s",))
    assert r.figures["stall_at_s"]["marker"] == "outside" and not r.passed


def test_cli_plain_json(tmp_path: Path) -> None:
    res = runner.invoke(app, ["validate", str(FILL), "--plain", "--runs", "2", "--seed", "5",
                              "--json", "--engine", "python"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["errors"] == [] and len(out["plain"]) == 1
    f = out["plain"][0]
    assert f["seeds"] == [5, 6] and f["passed"] and f["hz"] == 250
    assert f["capture_starts"] == {}                # never reads: no captured timing
    assert len(f["kernel_runs"]) == 2 and len(f["model_runs"]) == 2
    assert f["outcomes"]["stall"]["verdict"] == "ok"


@pytest.mark.parametrize("args, says", [
    (["--plain", "--runs", "0"], "--runs 0: give a number of runs of at least 1"),
    (["--plain", "--host", "laptop"], "--host: expected one of"),
    (["--plain", "--until", "1s"], "--until: an option of the replay"),
    (["--plain", "--html", "x.html"], "--html: an option of the replay"),
    (["--runs", "3"], "--runs: an option of plain validation; add --plain"),
    (["--host", "dev-vm-quiet"], "--host: an option of plain validation"),
    (["--plain", "--require-in-range", "memory"], "--require-in-range memory: not a figure"),
    (["--plain", "--set", "writer.kind=teleport"], "writer.kind"),
    (["--plain", "--hz", "7"], "--hz: 7 is not a kernel tick rate"),
    (["--plain", "--engine", "rust"], "--engine"),
])
def test_cli_plain_bad_input_is_one_error_line(args: list[str], says: str) -> None:
    res = runner.invoke(app, ["validate", str(FILL), *args])
    assert res.exit_code == 2
    errors = [ln for ln in res.output.splitlines() if ln.startswith("tcpsim: error:")]
    assert len(errors) == 1 and says in errors[0], res.output
    assert "Traceback" not in res.output


def test_cli_plain_without_a_scenario_in_the_trace(tmp_path: Path) -> None:
    from tcpsim.importers import import_file
    src = Path(__file__).resolve().parents[1] / "fixtures" / "importers" / "cloudflare-tcp-bt.txt"
    out = import_file("cloudflare-csv", src, tmp_path / "cf.parquet")
    res = runner.invoke(app, ["validate", str(out), "--plain", "--runs", "1"])
    assert res.exit_code == 2
    assert res.output.count("tcpsim: error:") == 1 and "no 'scenario'" in res.output


@pytest.mark.slow
def test_reproducer_with_captured_timing_stalls_in_most_seeds() -> None:
    """Issue 14's done-means, shrink 0: with the default timing (the captured wakeup
    sequences of dev-vm-loaded, the fixture's preset) the zero window and the stall come in
    most seeds, as in all three captures; with exact timing they never do (the verdict
    fails)."""
    name = FIXTURES / "seed-unbounded-growth-shrink0-120s.parquet"
    r = validate_plain(name, runs=5)
    assert r.setup.host == "dev-vm-loaded"
    assert r.outcomes["stall"]["verdict"] == "ok" and r.outcomes["zero_window"]["verdict"] == "ok"
    exact = validate_plain(name, runs=1, host="exact")
    assert exact.outcomes["stall"]["verdict"] == "fail" and not exact.passed


def test_plain_names_the_capture_starts_its_seeds_drew() -> None:
    """The fixture's preset replays captured sequences: the report says how many distinct
    captures the seeds drew (their first seconds are those captures'), JSON too."""
    from tcpsim.engine.apps import run_capture
    from tcpsim.validate.plain import report
    r = validate_plain(FIXTURES / "seed-unbounded-growth-shrink1-120s.parquet", runs=3,
                       engine="native")
    distinct = len({run_capture(s, 6) for s in r.seeds})
    want = {"host": "dev-vm-loaded", "captures": 6, "distinct": distinct}
    assert r.as_dict()["capture_starts"] == {"writer": want, "reader": want}
    assert f"  capture starts: writer {distinct}, reader {distinct} distinct of 6 " \
           "(dev-vm-loaded) in 3 seeds; seeds on one capture share its first block" in report(r)


def test_a_capture_without_a_manifest_is_its_own_single_kernel_run(tmp_path: Path) -> None:
    shutil.copy(FILL, tmp_path / FILL.name)
    r = validate_plain(tmp_path / FILL.name, runs=1, engine="python")
    assert len(r.kernel) == 1 and "1 capture (this trace)" in r.setup.notes[0]
    assert r.kernel[0]["final_sk_rmem_alloc"] == 63312 and r.passed
    assert "rcv_coalesce" in r.figures          # computed from the trace, counters included


def test_docs_block_replaces_only_its_own_part(tmp_path: Path) -> None:
    from tcpsim.validate.plain import PLAIN_BEGIN, PLAIN_END, docs_block
    from tcpsim.validate.run import BEGIN, END, replace_block
    r = validate_plain(FILL, runs=1, engine="python")
    doc = tmp_path / "v.md"
    doc.write_text(f"intro\n\n{BEGIN}\nreplay\n{END}\n\n{PLAIN_BEGIN}\nold\n{PLAIN_END}\n\ntail\n")
    block = docs_block([("scenario's own", [r])], "python scripts/plain_fixture_figures.py --write-docs")
    replace_block(doc, block, PLAIN_BEGIN, PLAIN_END)
    once = doc.read_text()
    assert "old" not in once and f"{BEGIN}\nreplay\n{END}" in once and once.endswith("tail\n")
    assert "| seed-rcvbuf32k-fill | scenario's own | 0/2 → 0/1 | 2/2 → 1/1 |" in once
    assert "seed-rcvbuf32k-fill: PASS" in once                 # the full report, in <details>
    replace_block(doc, block, PLAIN_BEGIN, PLAIN_END)
    assert doc.read_text() == once


def test_module_main_takes_plain_too(capsys: pytest.CaptureFixture[str]) -> None:
    from tcpsim.validate.run import main
    assert main([str(FILL), "--plain", "--runs", "1", "--engine", "python"]) == 0
    assert "seed-rcvbuf32k-fill: PASS" in capsys.readouterr().out
    assert main([str(FILL), "--plain", "--write-docs", "x.md"]) == 2
    assert main([str(FILL), "--host", "dev-vm-spin"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["validate: --write-docs: an option of the replay, not of --plain (a plain run "
                   "has no kernel timeline to cut or overlay, nor thresholds); leave it out",
                   "validate: --host: an option of plain validation; add --plain (or leave it out)"]


@pytest.mark.parametrize("name", ["bulk-200mbit-tbf-cubic-datadelay",
                                  "bulk-200mbit-tbf-bdp-cubic-datadelay"])
def test_token_bucket_loss_within_2x_of_the_captures_with_acks_as_sent(name: str) -> None:
    # issue 14's done-means, against the captures whose ACKs reach the sender as sent (the
    # whole RTT on the data direction; docs/app-latency.md#ack-path): retransmissions within
    # 2x of the captures' median, and no beyond-window drops where the captures have none
    meta = load_meta(FIXTURES / f"{name}.parquet")
    link = meta["scenario"]["link"]
    assert (link["delay_ab"], link["delay_ba"]) == ("20ms", "0ms")
    r = validate_plain(FIXTURES / f"{name}.parquet", runs=1, engine="native")
    rtx = r.figures["retransmissions"]
    assert 0.5 <= rtx["ratio"] <= 2.0, rtx
    assert r.figures["beyond_window"]["kernel"] == [0] * rtx["kernel_n"]
    assert r.figures["beyond_window"]["median"] == 0 and r.passed
