"""The compact file of a host preset's captured wakeup-lateness sequences (format 1).

A host preset (tcpsim.app_latency.HOSTS) ships its captures as ``app_latency_blocks*.bin``:
a run replays ONE capture per application kind, so the file lets a process decode only the
capture its run draws -- a few hundred kB of zlib, ~1 ms -- where the json.gz document it
replaces (same content) had to be decoded whole (1.2 MB of gzip, a million Python ints,
~0.6 s and +75 MiB in every process using the default timing). docs/app-latency.md,
"Host presets", describes the format for readers of the data.

Layout (little-endian)::

    0   8 bytes   magic b"TCPSIMLB"
    8   u32       format version (VERSION)
    12  u32       header length H
    16  H bytes   header: UTF-8 JSON -- the document's provenance as scripts/
                  app_latency_blocks.py writes it ("about", "machine", "made", "method",
                  "unit_ns" (the resolution the lateness was rounded to), "block_wakeups",
                  "captures") and "sequences": {kind: [{"offset", "size", "count", "min_ns",
                  "max_ns", "crc32"}, ...]} in capture order
    16+H          the sequences: each `size` bytes at `offset` (from here) of zlib holding
                  `count` int64 lateness values in nanoseconds, in wakeup order; `crc32`
                  is zlib.crc32 of the decompressed bytes

    write(doc, path)       the json.gz document's shape (sequences in `unit_ns`) -> file
    read(data) -> Packed   Packed.header, Packed.captures(kind) (decoded on first access)
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from array import array
from pathlib import Path
from typing import Any, Iterator, Sequence, overload

MAGIC = b"TCPSIMLB"
VERSION = 1
_FIXED = struct.Struct("<8sII")


class LatencyFileError(ValueError):
    """The file is not a readable format-1 sequence file (what is wrong, and where)."""


def _int64(values: Sequence[int]) -> "array[int]":
    a = array("q", values)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def encode(doc: dict[str, Any]) -> bytes:
    """The file of a sequence document (scripts/app_latency_blocks.py `build`'s shape: the
    lateness in `unit_ns` steps)."""
    unit = int(doc["unit_ns"])
    header = {k: v for k, v in doc.items() if k != "sequences"}
    blobs: list[bytes] = []
    offset = 0
    index: dict[str, list[dict[str, int]]] = {}
    for kind, seqs in doc["sequences"].items():
        for seq in seqs:
            ns = _int64([x * unit for x in seq])
            raw = ns.tobytes()
            blob = zlib.compress(raw, 9)
            index.setdefault(kind, []).append({
                "offset": offset, "size": len(blob), "count": len(ns),
                "min_ns": min(ns), "max_ns": max(ns), "crc32": zlib.crc32(raw)})
            blobs.append(blob)
            offset += len(blob)
    header["sequences"] = index
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    return _FIXED.pack(MAGIC, VERSION, len(text)) + text + b"".join(blobs)


def write(doc: dict[str, Any], path: Path) -> None:
    path.write_bytes(encode(doc))


class Captures(Sequence["array[int]"]):
    """One kind's captures of a file: len() from the header, each capture (an int64 array of
    nanoseconds) decompressed and checked on first access."""

    def __init__(self, name: str, payload: memoryview, index: list[dict[str, int]]) -> None:
        self._name, self._payload, self._index = name, payload, index
        self._done: dict[int, array[int]] = {}

    def __len__(self) -> int:
        return len(self._index)

    @overload
    def __getitem__(self, i: int) -> array[int]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[array[int]]: ...
    def __getitem__(self, i: int | slice) -> array[int] | Sequence[array[int]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        if i not in self._done:
            self._done[i] = self._decode(i)
        return self._done[i]

    def __iter__(self) -> Iterator[array[int]]:
        return (self[i] for i in range(len(self)))

    def _decode(self, i: int) -> array[int]:
        e = self._index[i]
        where = f"{self._name}: sequence {i}"
        try:
            raw = zlib.decompress(self._payload[e["offset"]:e["offset"] + e["size"]])
        except zlib.error as exc:
            raise LatencyFileError(f"{where}: corrupt ({exc})") from None
        if len(raw) != 8 * e["count"] or zlib.crc32(raw) != e["crc32"]:
            raise LatencyFileError(f"{where}: corrupt (length or crc32 differs from the header)")
        a: array[int] = array("q")
        a.frombytes(raw)
        if sys.byteorder != "little":
            a.byteswap()
        return a


class Packed:
    """A read file: `header` (the provenance, the sequences' index) and `captures(kind)`."""

    def __init__(self, data: bytes, name: str = "latency file") -> None:
        if len(data) < _FIXED.size:
            raise LatencyFileError(f"{name}: too short for a tcpsim latency file")
        magic, version, hlen = _FIXED.unpack_from(data)
        if magic != MAGIC:
            raise LatencyFileError(f"{name}: not a tcpsim latency file (magic {magic!r})")
        if version != VERSION:
            raise LatencyFileError(f"{name}: format version {version}; this tcpsim reads "
                                   f"{VERSION} (rebuild it with scripts/app_latency_blocks.py)")
        start = _FIXED.size + hlen
        try:
            self.header: dict[str, Any] = json.loads(data[_FIXED.size:start])
        except ValueError as exc:
            raise LatencyFileError(f"{name}: unreadable header ({exc})") from None
        self.name = name
        self._payload = memoryview(data)[start:]

    def kinds(self) -> list[str]:
        return list(self.header["sequences"])

    def captures(self, kind: str) -> Captures:
        return Captures(f"{self.name} {kind}", self._payload, self.header["sequences"][kind])


def read(data: bytes, name: str = "latency file") -> Packed:
    return Packed(data, name)
