"""Fuzz: scenario files through `tcpsim run` -- broken TOML, every field with a wrong type or an
absurd value, unknown keys and tables, empty files and tables."""

from __future__ import annotations

from pathlib import Path

from hypothesis import example, given, strategies as st

from fuzz_harness import FUZZ, check, tcpsim, workdir
from fuzz_strategies import BASE, TABLES, field_edits, identifiers, mangled, toml_document, with_field

RUN = ("-d", "5ms", "--no-progress")


def run_file(text: str | bytes) -> tuple[tuple[int, str, str], list[str]]:
    p = Path("scenario.toml")
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    argv = ["run", str(p), *RUN]
    return tcpsim(argv), argv


@FUZZ
@given(field_edits)
@example((("", "profile"), ""))             # #18: unknown profile did not name the file
@example((("", "policies"), ["nosuch"]))    # #18: unknown patch did not name the file
@example((("receiver", "device"), []))      # #18: TypeError: unhashable type: 'list'
@example((("writer", "kind"), {"a": 1}))    # #18: TypeError: unhashable type: 'dict'
@example((("sysctl", "tcp_rmem"), {"_": ""}))  # #18: the error named "_", not tcp_rmem._
def test_every_field_with_any_value_runs_or_names_file_and_field(edit):
    (table, key), value = edit
    with workdir():
        result, argv = run_file(toml_document(with_field(table, key, value)))
        names = [key.split(".")[-1]] if table == "sysctl" else [key]
        line = check(result, names, argv=argv)
        if line is not None:
            assert "scenario.toml" in line, line


@FUZZ
@given(st.sampled_from(("", *TABLES)), identifiers, st.integers(0, 3))
def test_an_unknown_key_is_refused_by_name(table, key, value):
    known = {"": set(BASE) | {"description", "hz", "seed", "policies", "sender", "sysctl"},
             "link": {"rtt", "delay", "delay_ab", "delay_ba", "rate", "queue_limit", "loss",
                      "mtu", "jitter"},
             "receiver": {"role", "device", "so_rcvbuf", "initrwnd"},
             "sender": {"initcwnd", "nodelay"},
             "writer": {"kind", "bytes", "bytes2", "every", "every2", "period", "fast_for",
                        "slow_for", "fraction", "start"}}
    known["reader"] = known["writer"]
    if table == "sysctl" or key in known[table]:
        key = f"{key}_x_unknown"
    with workdir():
        result, argv = run_file(toml_document(with_field(table, key, value)))
        assert result[0] == 2, f"unknown key {table}.{key} accepted silently: {result}"
        check(result, [key], argv=argv)


@FUZZ
@given(mangled(toml_document(BASE).encode()))
def test_a_broken_file_runs_or_names_the_file(data):
    with workdir():
        result, argv = run_file(data)
        line = check(result, ["scenario.toml"], argv=argv)
        if result[0] == 0:
            assert data.strip(), "an empty scenario file ran the defaults without a word"


@FUZZ
@given(st.sets(st.sampled_from(TABLES), max_size=len(TABLES)))
def test_empty_tables_mean_the_defaults(empty):
    doc = {k: ({} if k in empty else v) for k, v in BASE.items()}
    doc.update({t: {} for t in empty})
    with workdir():
        result, argv = run_file(toml_document(doc))
        assert result[0] == 0, result
        check(result, argv=argv)


def test_an_empty_scenario_file_is_refused_by_name():
    """Regression (#18): an empty file ran the built-in defaults without a word."""
    for text in ("", "\n# only a comment\n"):
        with workdir():
            result, argv = run_file(text)
            line = check(result, ["scenario.toml"], argv=argv)
            assert line is not None and "sets nothing" in line, result
