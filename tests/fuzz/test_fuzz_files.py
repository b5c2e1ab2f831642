"""Fuzz: files other tools and tcpsim wrote -- traces and Parquet files (truncated, foreign
schemas, empty) for report, validate and compare --trace; every import format (ss,
cloudflare-csv, rcvbuf-grow, pcap); packetdrill scripts; patch files."""

from __future__ import annotations

import functools
import shutil
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
import pyarrow.parquet as pq
from hypothesis import example, given, strategies as st

from fuzz_harness import FUZZ, check, tcpsim, workdir
from fuzz_strategies import identifiers, mangled, toml_values

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KERNEL_TRACE = FIXTURES / "kernel" / "seed-default-fill.parquet"
PKT = Path("/work/shared/peer-tests/packetdrill/kernel-selftests")


@functools.cache
def model_files() -> dict[str, bytes]:
    """A model trace and a pcap of a tiny run, made once."""
    with workdir() as d:
        code, _, err = tcpsim(["run", "seed-never-reads", "-d", "20ms", "--no-progress",
                               "-o", "t.parquet", "--pcap", "t.pcap"])
        assert code == 0, err
        return {"trace": (d / "t.parquet").read_bytes(), "pcap": (d / "t.pcap").read_bytes()}


def _foreign_parquet(columns: dict[str, list]) -> bytes:
    with workdir() as d:
        pq.write_table(pa.table(columns) if columns else pa.table({}), "f.parquet")
        return (d / "f.parquet").read_bytes()


foreign_tables = st.dictionaries(
    st.sampled_from(["t", "t_ns", "event", "rcv_wnd", "seq", "x", "kind", "window", "ack"]),
    st.lists(st.integers(-5, 5), min_size=2, max_size=2), max_size=4)

trace_bytes = st.one_of(
    st.sampled_from(["trace", "kernel"]).flatmap(
        lambda which: mangled(model_files()["trace"] if which == "trace"
                              else KERNEL_TRACE.read_bytes())),
    foreign_tables.map(_foreign_parquet))


@FUZZ
@given(trace_bytes, st.sampled_from(["report", "compare"]))
@example(b"", "report")
def test_traces_for_report_compare(data, command):
    _trace_command(data, command)


@FUZZ
@given(trace_bytes)
def test_traces_for_validate(data):
    _trace_command(data, "validate")


def _trace_command(data: bytes, command: str) -> None:
    with workdir():
        Path("t.parquet").write_bytes(data)
        argv = {"report": ["report", "t.parquet", "-o", "r.html"],
                "validate": ["validate", "t.parquet", "--until", "20ms"],
                "compare": ["compare", "seed-never-reads", "-d", "5ms", "-p", "linux-6.1",
                            "--trace", "t.parquet", "-o", "c.html"]}[command]
        check(tcpsim(argv), ["t.parquet"], argv=argv, verdict=1 if command == "validate" else None)


IMPORTS = {"ss": "ss-tmi.txt", "cloudflare-csv": "cloudflare-tcp-bt.txt",
           "rcvbuf-grow": "rcvbuf-grow.txt", "pcap": None}


def _import_source(fmt: str) -> bytes:
    return model_files()["pcap"] if IMPORTS[fmt] is None else (FIXTURES / "importers" / IMPORTS[fmt]).read_bytes()


@FUZZ
@given(st.sampled_from(sorted(IMPORTS)).flatmap(lambda f: st.tuples(st.just(f), mangled(_import_source(f)))),
       st.lists(st.sampled_from([["--port", "0"], ["--port", "99999"], ["--flow", "1"],
                                 ["--wscale", "x"], ["--wscale", "7,7"], ["--delay", "-1ms"],
                                 ["--reader", "bogus"], ["--rcvbuf", "0"],
                                 ["--workload", "no/such/dir/w.toml"]]), max_size=2))
def test_import_formats(src, options):
    fmt, data = src
    with workdir():
        Path("in.dat").write_bytes(data)
        argv = ["import", fmt, "in.dat", "-o", "out.parquet", *[a for o in options for a in o]]
        result = tcpsim(argv)
        check(result, ["in.dat", *[o[0] for o in options], "out.parquet", "no/such/dir"],
              argv=argv)
        if result[0] == 0:
            assert Path("out.parquet").is_file(), argv


def _pkt_scripts() -> list[str]:
    return sorted(p.name for p in PKT.glob("*.pkt")) if PKT.is_dir() else []


pkt_edits = st.sampled_from(["truncate", "garbage-line", "unknown-syscall", "drop-line", "bytes"])


@FUZZ
@given(st.sampled_from(_pkt_scripts() or ["<none>"]), pkt_edits, st.data())
def test_packetdrill_scripts(name, edit, data):
    text = (PKT / name).read_text() if PKT.is_dir() else "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
    lines = text.splitlines()
    i = data.draw(st.integers(0, max(0, len(lines) - 1)))
    if edit == "truncate":
        body = text[:data.draw(st.integers(0, len(text)))]
    elif edit == "garbage-line":
        lines.insert(i, data.draw(st.text(max_size=40)))
        body = "\n".join(lines)
    elif edit == "unknown-syscall":
        lines.insert(i, f"+0 {data.draw(identifiers)}(3, ..., 1000) = 0")
        body = "\n".join(lines)
    elif edit == "drop-line":
        body = "\n".join(lines[:i] + lines[i + 1:])
    else:
        body = data.draw(mangled(text.encode())).decode("latin-1")
    with workdir():
        Path("t.pkt").write_text(body, encoding="utf-8", errors="surrogateescape")
        argv = ["packetdrill", "t.pkt"]
        check(tcpsim(argv), ["t.pkt"], argv=argv, verdict=1)


PATCH_BODIES = [
    "class P:\n    def shrink_allowed(self, sk):\n        return True\n",
    "class P:\n    def shrink_allowed(self, sk, extra):\n        return True\n",
    "class P:\n    def shrink_alowed(self, sk):\n        return True\n",
    "class P:\n    def shrink_allowed(self, sk):\n        raise RuntimeError('boom')\n",
    "class P:\n    def select_window(self, sk):\n        return 'x'\n",
    "class P:\n    def win_from_space(self, sk, space):\n        return None\n",
    "class P:\n    PINGPONG_THRESH = 'x'\n",
    "class P:\n    name = 3\n",
    "P = 3\n",
    "def P(): pass\n",
    "class P(:\n",
    "import nosuchmodule\nclass P: pass\n",
    "raise SystemExit(0)\n",
    "class P:\n    def __init_subclass__(cls): raise ValueError\n",
    "from tcpsim.models.linux_6_6 import Linux66\nclass P(Linux66): pass\n",
    "class P:\n    new_sysctls = 3\n",
    "class P:\n    def select_window(self, sk):\n        return super().select_window(sk) + 1\n",
]


@FUZZ
@example(PATCH_BODIES[5], "P", "run")     # #18: a patch returning None: a kernel traceback
@example(PATCH_BODIES[0], "Q", "packetdrill")   # #18: the error went to stdout
@example("raise SystemExit(0)\n", "P", "run")    # #18: exit 0, nothing run, not a word
@example(PATCH_BODIES[13], "P", "run")    # #18: __init_subclass__ raising: a traceback
@example(PATCH_BODIES[6], "P", "run")     # #31 (explore): PINGPONG_THRESH = 'x' a ValueError
@given(st.sampled_from(PATCH_BODIES), st.sampled_from(["P", "Q", ""]),
       st.sampled_from(["run", "compare", "sweep", "packetdrill"]))
def test_patch_files(body, cls, command):
    with workdir():
        Path("my_patch.py").write_text(textwrap.dedent(body))
        spec = f"my_patch.py:{cls}"
        argv = {"run": ["run", "seed-never-reads", "-d", "5ms", "--no-progress", "--policy", spec],
                "compare": ["compare", "seed-never-reads", "-d", "5ms", "-p", "linux-6.1",
                            "--policy", spec, "--vs", "linux-6.6", "-o", "c.html"],
                "sweep": ["sweep", "seed-never-reads", "-d", "3ms", "-j", "1", "-r", "res",
                          "-x", f"policy=none,{spec}"],
                "packetdrill": ["packetdrill", str(PKT / "tcp_dsack_mult.pkt"), "--policy", spec]
                }[command]
        check(tcpsim(argv), ["my_patch.py", "--policy"], argv=argv,
              verdict=1 if command in ("packetdrill", "sweep") else None)


def test_a_sweep_point_whose_patch_fails_names_the_patch():
    """Regression (#18): a sweep point failing in a user's patch said "internal error"."""
    with workdir():
        Path("my_patch.py").write_text(PATCH_BODIES[5])     # win_from_space returns None
        argv = ["sweep", "seed-never-reads", "-d", "3ms", "-j", "1", "-r", "res",
                "-x", "policy=none,my_patch.py:P"]
        code, out, err = tcpsim(argv)
        # the Python kernel fails using the answer, the native one refuses it (default engine)
        assert code == 1 and ("with patch my_patch.py:P applied: TypeError" in out
                              or ("patch my_patch.py:P failed in decision point win_from_space "
                                  "at " in out and "my_patch.py:2: it returned None" in out)), out
        assert "internal error" not in out
