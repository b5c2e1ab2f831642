"""Fuzz: search files through `tcpsim search` -- every [search] field and every [space]
dimension with any value, broken TOML: a search (of one tiny workload) or one error line
naming the file and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import example, given, strategies as st

from fuzz_harness import FUZZ, check, tcpsim, workdir
from fuzz_strategies import mangled, toml_document, toml_values

GOOD: dict[str, Any] = {
    "search": {"objective": "rcvbuf_ratio", "profile": "linux-6.1", "budget": 1, "batch": 1,
               "seed": 1, "duration": "20ms"},
    "space": {"writer.bytes": {"range": "1B..64KiB"}, "link.rtt": {"range": "1ms..20ms"}},
}
SEARCH_KEYS = ["objective", "profile", "policy", "sysctl", "budget", "batch", "seed", "duration",
               "threshold", "keep", "vs", "optimiser", "scenario"]
SPACE_KEYS = ["writer.bytes", "writer.every", "reader.kind", "link.rtt", "link.mtu",
              "receiver.device", "sysctl.net.ipv4.tcp_rmem", "timing.host"]


def search_file(text: str | bytes) -> tuple[tuple[int, str, str], list[str]]:
    p = Path("search.toml")
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    argv = ["search", str(p), "-j", "1", "-o", "out", "--no-minimise"]
    return tcpsim(argv), argv


@FUZZ
@given(st.sampled_from(SEARCH_KEYS), toml_values)
@example("budget", 0)
@example("objective", [])                   # TypeError: unhashable type: list
@example("vs", {"profile": "linux-0"})
@example("policy", ["no-such-patch"])
def test_every_search_field_with_any_value(key: str, value: Any) -> None:
    doc = {"search": {**GOOD["search"], key: value}, "space": GOOD["space"]}
    if key == "budget" and isinstance(value, int) and not isinstance(value, bool) and value > 1:
        doc["search"]["budget"] = 1                     # keep the example tiny
    with workdir():
        result, argv = search_file(toml_document(doc))
        line = check(result, ["search.toml"], argv=argv)
        if line is not None:
            assert key in line or "search" in line, line


@FUZZ
@given(st.sampled_from(SPACE_KEYS), st.one_of(
    toml_values,
    st.fixed_dictionaries({"range": st.one_of(toml_values, st.sampled_from(
        ["1..2", "1B..64KiB", "0.1ms..100ms", "5ms..1ms", "1ms..5KiB", "0..0", "-1..1"]))},
        optional={"scale": st.one_of(toml_values, st.sampled_from(["log", "lin"])),
                  "default": toml_values}),
    st.fixed_dictionaries({"choices": st.one_of(toml_values, st.lists(toml_values, max_size=3))}),
))
@example("link.mtu", {"range": "100..200"})
@example("reader.kind", {"choices": ["never", "oscillating"]})
def test_every_space_dimension_with_any_value(key: str, dim: Any) -> None:
    doc = {"search": GOOD["search"], "space": {key: dim}}
    with workdir():
        result, argv = search_file(toml_document(doc))
        check(result, ["search.toml"], argv=argv)


@FUZZ
@given(mangled(toml_document(GOOD).encode()))
def test_a_broken_search_file_searches_or_names_the_file(data: bytes) -> None:
    with workdir():
        result, argv = search_file(data)
        check(result, ["search.toml"], argv=argv)
