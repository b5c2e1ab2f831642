"""Search files: parsing, validation, and one `tcpsim: error:` line per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from tcpsim.searching import SearchError, load_search, parse_search, with_overrides
from tcpsim.searching.space import builtin_searches, parse_dim
from tests.cli_entry import run_main

GENERIC = "rcvbuf-growth"


def test_shipped_searches_load() -> None:
    assert {"rcvbuf-growth", "rpc-admission"} <= set(builtin_searches())
    for name in builtin_searches():
        spec = load_search(name)
        assert spec.dims and spec.budget >= 1


def test_ranges_take_units_and_scales() -> None:
    size = parse_dim("writer.bytes", {"range": "1B..64KiB"}, "space.writer.bytes")
    assert (size.kind, size.lo, size.hi, size.log) == ("size", 1, 65536, True)
    assert size.value(1000.4) == 1000 and size.value(1e9) == 65536
    dur = parse_dim("link.rtt", {"range": "0.1ms..100ms", "scale": "lin"}, "space.link.rtt")
    assert (dur.kind, dur.lo, dur.hi, dur.log) == ("duration", 100_000, 100_000_000, False)
    assert dur.value(14_486_834) == "14490000ns"     # four significant digits
    ch = parse_dim("reader.kind", {"choices": ["fast", "periodic"]}, "space.reader.kind")
    assert ch.value(1) == "periodic"
    num = parse_dim("link.loss", {"range": "0..0.1"}, "space.link.loss")
    assert num.kind == "number" and not num.log


@pytest.mark.parametrize("doc, field", [
    ({}, "no [search] table"),
    ({"search": {"objective": "nope"}, "space": {}}, "search.objective"),
    ({"search": {"objective": "drops", "budget": 0}, "space": {}}, "search.budget"),
    ({"search": {"objective": "drops", "bogus": 1}}, "search.bogus"),
    ({"search": {"objective": "drops"}}, "space: nothing to search"),
    ({"search": {"objective": "drops"}, "space": {"link.rtt": {"range": "5ms..1ms"}}},
     "space.link.rtt.range"),
    ({"search": {"objective": "drops"}, "space": {"link.rtt": {"range": "1ms..5KiB"}}},
     "space.link.rtt.range"),
    ({"search": {"objective": "drops"}, "space": {"link.rtt": [1, 2]}}, "space.link.rtt"),
    ({"search": {"objective": "drops"}, "space": {"nothing.here": {"choices": [1]}}},
     "space.nothing.here"),
    ({"search": {"objective": "drops"}, "space": {"profile": {"choices": ["linux-6.1"]}}},
     "space.profile"),
    ({"search": {"objective": "drops", "keep": 2}, "space": {"link.rtt": {"range": "1ms..5ms"}}},
     "search.keep"),
    ({"search": {"objective": "drops", "vs": 3}, "space": {"link.rtt": {"range": "1ms..5ms"}}},
     "search.vs"),
    # a condition names a choice dim declared above, and values among its choices
    ({"search": {"objective": "drops"}, "space": {
        "reader.every": {"range": "1ms..5ms", "when": {"reader.kind": "periodic"}}}},
     "space.reader.every.when.reader.kind"),
    ({"search": {"objective": "drops"}, "space": {
        "reader.kind": {"choices": ["fast", "periodic"]},
        "reader.every": {"range": "1ms..5ms", "when": {"reader.kind": "slow"}}}},
     "space.reader.every.when.reader.kind: 'slow'"),
    ({"search": {"objective": "drops"}, "space": {
        "reader.kind": {"choices": ["fast", "periodic"]},
        "reader.every": {"range": "1ms..5ms", "when": "periodic"}}}, "space.reader.every.when"),
])
def test_bad_documents_name_the_field(doc: dict, field: str) -> None:
    with pytest.raises(SearchError, match=field.replace("[", r"\[").replace(".", r"\.")):
        parse_search(doc)


def test_another_objective_over_the_same_space() -> None:
    """--objective / objective=: the file's space and policies, another objective with its own
    default threshold, and its own results folder name."""
    spec = load_search("rpc-admission")
    other = with_overrides(spec, objective="time_stalled")
    assert (other.objective, other.threshold, other.name) == \
        ("time_stalled", None, "rpc-admission-time_stalled")
    assert other.dims == spec.dims and other.vs == spec.vs and spec.objective == "inwindow_drops"
    assert with_overrides(spec, objective="inwindow_drops").name == "rpc-admission"
    assert with_overrides(spec, objective="time_stalled", threshold=2.0).threshold == 2.0


def test_goodput_lost_needs_two_sides() -> None:
    spec = parse_search({"search": {"objective": "goodput_lost"},
                         "space": {"link.rtt": {"range": "1ms..5ms"}}})
    with pytest.raises(SearchError, match="search.vs"):
        with_overrides(spec)


@pytest.mark.parametrize("body, field", [
    ('[search]\nobjective = "drops"\n[space]\n"link.rtt" = { range = "1ms..5ms", scale = "cubic" }\n',
     "space.link.rtt.scale"),
    ('[search]\nobjective = "drops"\n[space]\n"link.mtu" = { range = "100..200" }\n',
     "space.link.mtu"),                                   # below what the field takes
    ('[search]\nobjective = "drops"\nprofile = "linux-0.1"\n[space]\n"link.rtt" = { range = "1ms..5ms" }\n',
     "profile"),
    ('[search\n', "not valid TOML"),
])
def test_cli_bad_search_files_one_error_line(tmp_path: Path, body: str, field: str,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(body)
    code, out, err = run_main(["search", str(f), "-n", "2", "-o", str(tmp_path / "o"), "-j", "1"],
                              monkeypatch, capsys)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcpsim: error:"), err
    assert field in lines[0] and "Traceback" not in err


def test_cli_bad_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    for args, word in ((["--budget", "0"], "--budget"), (["--executor", "mpi"], "--executor"),
                       (["--policy", "no-such-patch"], "no-such-patch"),
                       (["--objective", "time_wasted"], "time_stalled")):
        code, _, err = run_main(["search", GENERIC, "-o", str(tmp_path), *args], monkeypatch, capsys)
        assert code != 0 and err.startswith("tcpsim: error:") and word in err, err
        assert len(err.strip().splitlines()) == 1
    code, _, err = run_main(["search", "no-such-search"], monkeypatch, capsys)
    assert code != 0 and "no-such-search" in err and len(err.strip().splitlines()) == 1


def test_conditional_fields_apply_only_in_their_setting() -> None:
    """`when`: a periodic reader's period is part of a workload only while the reader is
    periodic -- also when the reader kind is left at the base scenario's value."""
    spec = parse_search({"search": {"objective": "drops"}, "space": {
        "reader.kind": {"choices": ["blocking", "periodic"]},
        "reader.every": {"range": "1ms..5ms", "when": {"reader.kind": ["periodic"]}}}})
    every = spec.dims[1]
    assert every.when == (("reader.kind", ("periodic",)),)
    from tcpsim.searching.space import active_values
    base = {"reader.kind": "periodic"}.get
    assert active_values(spec.dims, {"reader.kind": "blocking", "reader.every": "2ms"}, base) \
        == {"reader.kind": "blocking"}
    assert active_values(spec.dims, {"reader.every": "2ms"}, base) == {"reader.every": "2ms"}
    assert active_values(spec.dims, {"reader.every": "2ms"}, {}.get) == {}


def test_an_unminimised_best_over_the_threshold_is_not_called_nothing() -> None:
    from tcpsim.searching import report_lines
    from tcpsim.searching.driver import SearchResult
    from tcpsim.searching.evaluate import Evaluation
    spec = load_search("rpc-admission")
    best = Evaluation({"link.rtt": "1ms"}, 2_000_000_000, objective=3.0,
                      sides={"policy": 3.0, "vs": 0.0})
    text = "\n".join(report_lines(SearchResult(spec, [best], best, threshold=1.0)))
    assert "not minimised" in text and "nothing reached" not in text
    below = Evaluation({}, 2_000_000_000, objective=0.5, sides={"policy": 0.5, "vs": 0.0})
    assert "nothing reached the threshold 1" in "\n".join(
        report_lines(SearchResult(spec, [below], below, threshold=1.0)))
