"""The sender's counters beside a capture's sender's (shown, never scored): in a run's
metadata where a capture keeps them (summary.sender.counters), in `tcpsim validate`'s replay
counter table and in `--plain`'s report."""

from __future__ import annotations

from pathlib import Path

from tcpsim.api import run
from tcpsim.engines import native_available
from tcpsim.validate.plain import (
    compare_sender_counters, report, sender_kernel_counters, validate_plain,
)
from tcpsim.validate.scores import counter_rows
from tcpsim.validate.trace import load_meta

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kernel"
BULK = FIXTURES / "bulk-blocking-reader.parquet"


def test_a_run_keeps_its_senders_counters_where_a_capture_does() -> None:
    r = run("bulk-1gbit", duration="0.2s", trace=False)
    sender = r.meta["summary"]["sender"]["counters"]
    assert sender == r.sender_counters
    assert sender["TcpOutSegs"] >= sender["TcpExtTCPOrigDataSent"] > 1000
    assert r.counters["TcpExtTCPOrigDataSent"] == 0          # the receiver sends no data
    assert run_capture_sender(BULK)["TcpOutSegs"] == 25968   # read the same way


def run_capture_sender(path: Path) -> dict[str, int]:
    from tcpsim.api import load_trace
    return load_trace(path).sender_counters


def test_counter_rows_leave_out_a_mib_the_capture_did_not_record() -> None:
    model = {"TcpExtTCPOFOQueue": 3, "TcpInSegs": 9, "TcpExtTCPHPHits": 0}
    rows = counter_rows({"TcpExtTCPRcvCoalesce": 5}, model)
    assert rows == [("TcpExtTCPOFOQueue", 0, 3), ("TcpExtTCPRcvCoalesce", 5, 0)]
    rows = counter_rows({"TcpExtTCPRcvCoalesce": 5, "TcpOutSegs": 1}, model)
    assert ("TcpInSegs", 0, 9) in rows and ("TcpOutSegs", 1, 0) in rows


def test_the_captures_sender_counters_come_from_the_summaries_else_the_file() -> None:
    meta = load_meta(BULK)
    own = sender_kernel_counters([{"outcomes": {}}], meta)
    assert own == [meta["summary"]["sender"]["counters"]]
    runs = [{"sender_counters": {"TcpOutSegs": 7}}, {"sender_counters": {"TcpOutSegs": 9}}]
    assert sender_kernel_counters(runs, meta) == [{"TcpOutSegs": 7}, {"TcpOutSegs": 9}]
    assert sender_kernel_counters([], {"summary": {}}) == []
    assert compare_sender_counters([], [{"sender_counters": {"TcpOutSegs": 1}}]) == {}
    c = compare_sender_counters([{"TcpOutSegs": 10, "TcpExtTW": 0}],
                                [{"sender_counters": {"TcpOutSegs": 8}},
                                 {"sender_counters": {"TcpOutSegs": 12}}])
    assert list(c) == ["TcpOutSegs"] and c["TcpOutSegs"]["marker"] == "in range"


def test_plain_validation_shows_the_senders_counters() -> None:
    r = validate_plain(BULK, runs=1, engine="native" if native_available() else "python")
    out = r.sender_counters["TcpOutSegs"]
    assert out["kernel"] == [25968] and out["median"] > 20000
    assert r.sender_counters["TcpExtTCPSackShifted" if "TcpExtTCPSackShifted" in
                             r.sender_counters else "TcpPassiveOpens"]["median"] == 0
    assert r.as_dict()["sender_counters"] == r.sender_counters
    lines = report(r)
    assert any(line.strip().startswith("sender counter (shown)") for line in lines)
    assert r.passed == all(o["verdict"] != "fail" for o in r.outcomes.values())


def test_the_replay_shows_the_senders_counters_beside_the_captures() -> None:
    from tcpsim.validate.report import text
    from tcpsim.validate.run import validate_trace
    v = validate_trace(BULK, until_s=0.5)
    rows = {n: (k, m) for n, k, m in v.score.sender_counters}
    assert rows["TcpOutSegs"][0] == 25968 and rows["TcpOutSegs"][1] > 0
    assert rows["TcpExtTCPOrigDataSent"][1] > 0
    # the receiver's capture kept TcpExt only: the model's TcpInSegs is not put beside a 0
    assert all(n.startswith("TcpExt") for n, _, _ in v.score.counters)
    assert "sender counter (shown)" in text(v.score)
    assert v.score.as_dict()["sender_counters"][0]["name"] == v.score.sender_counters[0][0]


def test_metadata_without_sender_counters_has_none() -> None:
    from tcpsim.engine.result import sender_counters
    assert sender_counters({"summary": {"sender": "10.0.0.1:5001"}}) == {}   # a pcap import's
    assert sender_counters({"summary": "x"}) == {} and sender_counters({}) == {}
    assert sender_counters({"summary": {"sender": {"counters": {"TcpOutSegs": 3}}}}) == \
        {"TcpOutSegs": 3}
