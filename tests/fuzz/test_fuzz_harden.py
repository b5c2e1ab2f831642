"""Fuzz, issue 31's classes: outputs colliding with inputs and each other, interrupts at any
moment of a run, patch answers of every declared type on both engines, fields a workload kind
does not read, binary and non-UTF-8 files on every command that reads one, snaplen-cut pcaps."""

from __future__ import annotations

import functools
import os
import struct
from pathlib import Path

import pyarrow.parquet as pq
from hypothesis import example, given, strategies as st

from fuzz_harness import FUZZ, check, tcpsim, workdir
from fuzz_strategies import toml_document
from tcpsim.engines import native_available

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tcpsim" / "experiments" / "seed-never-reads.toml"
ENGINES = ["python", *(["native"] if native_available() else [])]

# -- outputs never clobber inputs ---------------------------------------------------------------

# names a command's files may take: the scenario itself, other spellings of it, fresh names
NAMES = ["X.toml", "./X.toml", "sub/../X.toml", "hard.pcap", "soft.pcap", "a.parquet",
         "a.pcap", "a.html", "b.parquet"]


def _setup_names() -> bytes:
    data = SCENARIO.read_bytes()
    Path("X.toml").write_bytes(data)
    Path("sub").mkdir()
    os.link("X.toml", "hard.pcap")
    Path("soft.pcap").symlink_to("X.toml")
    return data


@FUZZ
@given(st.sampled_from(["run", "compare", "import", "report"]),
       st.lists(st.sampled_from(NAMES), min_size=1, max_size=3))
@example("run", ["X.toml", "X.toml"])                 # #31: --pcap X.toml overwrote the scenario
@example("run", ["a.parquet", "a.parquet"])           # #31: --trace P --pcap P kept one
def test_outputs_never_clobber_inputs(command, names):
    with workdir():
        before = _setup_names()
        if command == "run":
            outs = names[:2]
            argv = ["run", "X.toml", "-d", "5ms", "--no-progress"]
            for flag, name in zip(["--trace", "--pcap"], outs):
                argv += [flag, name]
        elif command == "compare":
            outs = names[:2]
            argv = ["compare", "X.toml", "-d", "5ms", "-p", "linux-6.1", "--vs", "linux-6.6",
                    "--html", outs[0]]
            if len(outs) > 1:      # its pcaps are OUT-1-LABEL.pcap, ...: they clash with nothing
                argv += ["--pcap", outs[1]]
                outs = outs[:1]
        elif command == "import":
            outs = names[:2]
            argv = ["import", "pcap", "X.toml", "--out", outs[0]]
            if len(outs) > 1:
                argv += ["--workload", outs[1]]
        else:
            outs = names[:1]
            argv = ["report", "X.toml", "--html", outs[0]]
        code, out, err = tcpsim(argv)
        check((code, out, err), argv=argv)
        assert Path("X.toml").read_bytes() == before, f"{argv}: the scenario was overwritten"
        spelled = {os.path.realpath(n) for n in outs}
        if len(spelled) < len(outs) or os.path.realpath("X.toml") in spelled:
            assert code == 2, f"{argv}: a clash accepted"


# -- interrupts at any moment --------------------------------------------------------------------

@FUZZ
@given(st.sampled_from(ENGINES), st.sampled_from(["SIGINT", "SIGTERM"]),
       st.floats(0, 120), st.booleans(), st.booleans())
def test_a_stop_at_any_moment_keeps_what_it_says(engine, signame, at_s, trace, pcap):
    import pytest

    from tcpsim import interrupt
    mp = pytest.MonkeyPatch()

    def bar(total_ns, enabled):
        def hook(now):
            if now >= at_s * 1e9 and interrupt.requested() is None:
                interrupt.request(signame)
        return hook
    mp.setattr("tcpsim.runner.progress_bar", bar)
    try:
        with workdir():
            argv = ["run", "seed-unbounded-growth", "-d", "150s", "--engine", engine]
            argv += ["--trace", "t.parquet"] if trace else []
            argv += ["--pcap", "t.pcap"] if pcap else []
            code, out, err = tcpsim(argv)
            assert "Traceback" not in err
            if code == 0:                    # the run ended before the stop was looked at
                return
            assert code == (130 if signame == "SIGINT" else 143), err
            lines = err.strip().splitlines()
            assert lines[-1].startswith(f"tcpsim: interrupted by {signame}: the run stopped at ")
            assert "bytes_read" in out
            if trace:
                meta = pq.read_schema("t.parquet").metadata
                assert b"cut_short" in meta and not Path("t.parquet.partial").exists()
            if pcap:
                assert Path("t.pcap").stat().st_size >= 24
    finally:
        mp.undo()


# -- answers of every declared type -------------------------------------------------------------

POINTS_TRIED = ["select_window", "advertise_window", "nomem_window", "shrink_allowed",
                "zero_window_accepts", "delack_max", "collapse_cost_ns", "prune_queue",
                "rcv_space_gate_us", "win_from_space"]
ASKED_ALWAYS = ("select_window", "shrink_allowed")       # at every ACK of this run
VALUES = ["-1", "0", "1", "2**31 - 1", "2**31", "2**63", "-(2**63) - 1", "1.5", "True", "False",
          "None", "'no'", "''", "[1]", "(1, 2)", "float('nan')"]


@FUZZ
@given(st.sampled_from(POINTS_TRIED), st.sampled_from(VALUES))
@example("shrink_allowed", "'no'")                      # #31: taken as True on both engines
@example("select_window", "-1")                         # #31: ran on both, changed the results
def test_patch_answers_are_judged_alike_on_both_engines(point, value):
    from tcpsim import answers
    from tcpsim.policy import POINTS
    args = ", ".join(("sk", *POINTS[point].params[1:]))
    body = f"class P:\n    def {point}(self, {args}):\n        return {value}\n"
    ok = answers.check(point, POINTS[point].returns, eval(value))   # noqa: S307 -- our own list
    lines = {}
    with workdir():
        Path("p.py").write_text(body)
        for engine in ENGINES:
            argv = ["run", "seed-unbounded-growth", "-d", "50ms", "--engine", engine,
                    "--policy", "p.py:P"]
            result = tcpsim(argv)
            line = check(result, ["p.py:P"], argv=argv)
            if not ok and point in ASKED_ALWAYS:
                assert line is not None and "it returned" in line and point in line, (argv, line)
            lines[engine] = line
    if not ok:              # a point the run never asks is judged by neither engine, alike
        assert len(set(lines.values())) == 1, lines


# -- fields a kind does not read --------------------------------------------------------------

APP_FIELDS = {"bytes": 100, "every": "1ms", "bytes2": 10, "every2": "2ms", "period": "10ms",
              "fast_for": "1s", "slow_for": "1s", "fraction": 0.5, "start": "1ms",
              "latency": "none", "call_cost": "1us", "copy_rate": "1gbit"}


@FUZZ
@given(st.sampled_from(["writer", "reader"]).flatmap(lambda side: st.tuples(
    st.just(side), st.sampled_from(sorted(__import__("tcpsim.workload", fromlist=["KINDS"])
                                          .KINDS[side])),
    st.sets(st.sampled_from(sorted(APP_FIELDS)), max_size=3))))
@example(("writer", "periodic", {"fraction"}))          # #31: accepted and ignored
@example(("reader", "never", {"bytes"}))
def test_fields_a_kind_does_not_read_are_refused(case):
    from tcpsim.workload import KINDS, TIMED_KINDS, TIMING_FIELDS
    side, kind, given_fields = case
    spec = KINDS[side][kind]
    table = {"kind": kind, **{k: APP_FIELDS[k] for k in (*spec.required, *given_fields)}}
    doc = {"name": "f", "duration": "5ms", "writer": {"kind": "bulk"}, "reader": {"kind": "fast"}}
    doc[side] = table
    timed = TIMING_FIELDS if kind in TIMED_KINDS[side] else ()
    if side == "writer":
        timed = ("latency",) if timed else ()
    reads = {"kind", "start", *spec.required, *spec.reads, *timed}
    with workdir():
        Path("s.toml").write_text(toml_document(doc))
        argv = ["run", "s.toml", "--no-progress"]
        code, out, err = tcpsim(argv)
        line = check((code, out, err), argv=argv)
        stray = set(table) - reads
        if stray:
            assert line is not None and f"{side}." in line, (argv, table, line)


# -- binary and non-UTF-8 files ---------------------------------------------------------------

blobs = st.one_of(st.binary(max_size=300),
                  st.text(max_size=80).map(lambda t: t.encode("utf-16")),
                  st.text(max_size=80).map(lambda t: t.encode("latin-1", "replace") + b"\xff"))


@FUZZ
@given(blobs, st.sampled_from(["run", "compare", "sweep", "report", "validate", "replay",
                               "packetdrill", "import-pcap", "import-ss", "policy"]))
@example(b"\xff\xfe\x00garbage", "packetdrill")          # #31: a UnicodeDecodeError traceback
def test_binary_files_on_every_command(data, command):
    with workdir():
        name = {"packetdrill": "f.pkt", "policy": "p.py", "report": "f.parquet",
                "validate": "f.parquet", "replay": "f.pcap", "import-pcap": "f.pcap"}.get(
                    command, "f.toml" if command in ("run", "compare", "sweep") else "f.txt")
        Path(name).write_bytes(data)
        argv = {"run": ["run", name, "-d", "5ms"],
                "compare": ["compare", name, "-p", "linux-6.1", "--vs", "linux-6.6"],
                "sweep": ["sweep", name, "-x", "seed=1,2", "-j", "1"],
                "report": ["report", name], "validate": ["validate", name],
                "replay": ["replay", name], "packetdrill": ["packetdrill", name],
                "import-pcap": ["import", "pcap", name, "--out", "o.parquet"],
                "import-ss": ["import", "ss", name, "--out", "o.parquet"],
                "policy": ["run", "seed-never-reads", "-d", "5ms", "--policy", f"{name}:P"],
                }[command]
        check(tcpsim(argv), [name], argv=argv, verdict=1 if command == "packetdrill" else None)


# -- snaplen-cut pcaps ----------------------------------------------------------------------------

@functools.cache
def _capture() -> bytes:
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "c.pcap"
        code, _, err = tcpsim(["run", "seed-unbounded-growth", "-d", "2s", "--pcap", str(out),
                               "--no-progress"])
        assert code == 0, err
        return out.read_bytes()


def snaplen_cut(data: bytes, snaplen: int) -> bytes:
    """`data` (a little-endian pcap) as tcpdump -s SNAPLEN would have written it."""
    head = bytearray(data[:24])
    head[16:20] = struct.pack("<I", snaplen)
    out = [bytes(head)]
    i = 24
    while i + 16 <= len(data):
        sec, usec, incl, orig = struct.unpack("<IIII", data[i:i + 16])
        frame = data[i + 16:i + 16 + incl]
        keep = min(incl, snaplen)
        out.append(struct.pack("<IIII", sec, usec, keep, orig) + frame[:keep])
        i += 16 + incl
    return b"".join(out)


@FUZZ
@given(st.sampled_from([0, 1, 14, 20, 34, 40, 54, 60, 66, 68, 96, 128]),
       st.sampled_from(["replay", "import"]))
@example(54, "replay")
def test_snaplen_cut_pcaps(snaplen, command):
    with workdir():
        Path("c.pcap").write_bytes(snaplen_cut(_capture(), snaplen))
        argv = (["replay", "c.pcap"] if command == "replay"
                else ["import", "pcap", "c.pcap", "--out", "o.parquet"])
        check(tcpsim(argv), ["c.pcap"], argv=argv, verdict=1 if command == "replay" else None)
