"""tcpsim.latency_file: the compact form of the captured wakeup-lateness sequences -- the
document it was made from comes back whole, a capture is decoded only when indexed, and a
damaged or foreign file is refused with what is wrong."""

from __future__ import annotations

import struct

import pytest

from tcpsim import latency_file as lf

DOC = {"about": "test", "made": "now", "method": "by hand", "unit_ns": 1000,
       "block_wakeups": 2, "captures": [{"run": "a"}, {"run": "b"}],
       "sequences": {"periodic_writer": [[0, 5, 70], [1, 2]],
                     "periodic_reader": [[3, 3, 3, 101110], [9, 8]]}}


def test_the_document_comes_back_in_nanoseconds() -> None:
    packed = lf.read(lf.encode(DOC))
    assert {k: v for k, v in packed.header.items() if k != "sequences"} == \
        {k: v for k, v in DOC.items() if k != "sequences"}
    assert sorted(packed.kinds()) == ["periodic_reader", "periodic_writer"]
    for kind, seqs in DOC["sequences"].items():
        caps = packed.captures(kind)
        assert len(caps) == len(seqs)
        assert [list(c) for c in caps] == [[x * 1000 for x in s] for s in seqs]
        assert [e["count"] for e in packed.header["sequences"][kind]] == [len(s) for s in seqs]
    assert list(packed.captures("periodic_reader")[-1]) == [9000, 8000]


def test_a_capture_is_decoded_only_when_indexed() -> None:
    data = bytearray(lf.encode(DOC))
    header = lf.read(bytes(data)).header["sequences"]
    start = len(data) - sum(e["size"] for entries in header.values() for e in entries)
    data[start + header["periodic_writer"][1]["offset"] + 2] ^= 0xFF   # damage capture 1 only
    caps = lf.read(bytes(data)).captures("periodic_writer")
    assert len(caps) == 2 and list(caps[0]) == [0, 5000, 70000]
    with pytest.raises(lf.LatencyFileError, match="periodic_writer: sequence 1: corrupt"):
        caps[1]


@pytest.mark.parametrize(("data", "message"), [
    (b"PAR1", "too short"),
    (b"NOTALATENCYFILE!", "not a tcpsim latency file"),
    (struct.pack("<8sII", lf.MAGIC, 2, 2) + b"{}", "format version 2; this tcpsim reads 1"),
    (struct.pack("<8sII", lf.MAGIC, 1, 3) + b"{x}", "unreadable header"),
])
def test_a_foreign_or_newer_file_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(lf.LatencyFileError, match=message):
        lf.read(data, "x.bin")
