from tcpsim.capture.probe_csv import (ADJUST_FIELDS, DROP_FIELDS, GROW_FIELDS, PROBE_FIELDS,
                                      drop_reason_names, parse_line, parse_lines)

PROBE = ("P,469125835314,33,833,1,2435899601,2435899601,2435899601,64512,64088,64088,536,128,"
         "14480,0,0,131072,0,0,612774894,612774894,65160,10,1448,10,10,1,2435899601,2435899602,41000")


def test_probe_line():
    kind, rec = parse_line(PROBE)
    assert kind == "probe"
    assert set(rec) == set(PROBE_FIELDS)
    assert rec["truesize"] == 833 and rec["data_len"] == 1 and rec["scaling_ratio"] == 128
    assert rec["end_seq"] - rec["seq"] == 1 and rec["sport"] == 41000


def test_other_kinds():
    g = "G," + ",".join(str(i) for i in range(len(GROW_FIELDS)))
    a = "A," + ",".join(str(i) for i in range(len(ADJUST_FIELDS)))
    d = "D," + ",".join(str(i) for i in range(len(DROP_FIELDS)))
    assert parse_line(g)[0] == "grow"
    assert parse_line(a)[0] == "adjust"
    assert parse_line(d)[1] == {"t_ns": 0, "len": 1, "reason": 2}


def test_noise_is_skipped_and_time_order_restored():
    later = PROBE.replace("469125835314", "469125835999")
    out = parse_lines(["Attaching 6 probes...\n", "READY\n", later, PROBE, "P,1,2\n", "P,x" + PROBE[1:]])
    assert [r["t_ns"] for r in out["probe"]] == [469125835314, 469125835999]
    assert out["drop"] == []


def test_drop_reason_names():
    fmt = 'print fmt: "...", __print_symbolic(REC->reason, { 2, "NOT_SPECIFIED" }, { 41, "TCP_OLD_SEQUENCE" })'
    assert drop_reason_names(fmt) == {2: "NOT_SPECIFIED", 41: "TCP_OLD_SEQUENCE"}
