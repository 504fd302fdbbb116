"""Dump files: a dump's parts (``snapshot.py``) one after the other, each checked as it is read.

A file starts with the line ``fdb-leaderboard dump 1`` (the format version), then holds one frame
per part: 4 bytes of length (big-endian; the top bit set when the part is zlib-compressed), 4 bytes
of the CRC-32 of the bytes stored, and the part's deterministic serialization, compressed when
that saves a tenth or more.  The last part, the dump's end, holds the SHA-256 of every part before
it: :func:`check_dump` reads a whole file and compares, so a restore refuses a damaged or cut
file before it writes anything.  A dump is written to ``FILE.partial`` and renamed to ``FILE``
once its end is written, so a file with the final name is complete.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from ..proto import service_pb2 as pb
from .snapshot import FORMAT_VERSION, Checksum, DumpError

MAGIC = b"fdb-leaderboard dump "
COMPRESSED = 0x8000_0000
MAX_PART_BYTES = 256 << 20  # far above any part a dump writes: a larger length is damage
_FRAME = struct.Struct(">II")


def _frame(part: pb.DumpPart) -> bytes:
    data = part.SerializeToString(deterministic=True)
    length = len(data)
    if length > 256:
        packed = zlib.compress(data, 1)
        if len(packed) <= length * 0.9:
            data, length = packed, len(packed) | COMPRESSED
    return _FRAME.pack(length, zlib.crc32(data)) + data


def write_dump(
    parts: Iterable[pb.DumpPart], path: str | Path, progress: Callable[[pb.DumpPart, int], None] | None = None
) -> pb.DumpEnd:
    """Write a dump's parts to ``path`` (through ``path.partial``); returns its end.  Raises
    DumpError, leaving no file at ``path``, if the parts do not end with a matching checksum."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    checksum = Checksum()
    written = 0
    try:
        with open(partial, "wb") as file:
            file.write(MAGIC + b"%d\n" % FORMAT_VERSION)
            for part in parts:
                frame = _frame(part)
                file.write(frame)
                written += len(frame)
                if progress is not None:
                    progress(part, written)
                if part.WhichOneof("part") == "end":
                    if part.end.sha256 != checksum.digest():
                        raise DumpError("the dump's checksum does not match the parts received")
                    file.flush()
                    os.fsync(file.fileno())
                    break
                checksum.add(part)
            else:
                raise DumpError("the dump stopped before its end")
        os.replace(partial, path)
        return part.end
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _open(file: BinaryIO, name: str) -> None:
    line = file.readline(64)
    if not line.startswith(MAGIC):
        raise DumpError(f"{name} is not an fdb-leaderboard dump")
    version = line[len(MAGIC) :].strip()
    if version != b"%d" % FORMAT_VERSION:
        raise DumpError(
            f"{name} is a dump in format version {version.decode(errors='replace')}; "
            f"this version of fdb-leaderboard reads version {FORMAT_VERSION}"
        )


def read_dump(path: str | Path) -> Iterator[pb.DumpPart]:
    """The parts of the dump file at ``path``, each frame's CRC checked (DumpError if damaged)."""
    name = str(path)
    with open(path, "rb") as file:
        _open(file, name)
        number = 0
        while True:
            head = file.read(_FRAME.size)
            if not head:
                return
            if len(head) < _FRAME.size:
                raise DumpError(f"{name} is cut short in part {number + 1}")
            length, crc = _FRAME.unpack(head)
            size = length & ~COMPRESSED
            if size > MAX_PART_BYTES:
                raise DumpError(f"{name} is damaged: part {number + 1} claims {size} bytes")
            data = file.read(size)
            if len(data) < size:
                raise DumpError(f"{name} is cut short in part {number + 1}")
            if zlib.crc32(data) != crc:
                raise DumpError(f"{name} is damaged: part {number + 1} does not match its CRC")
            if length & COMPRESSED:
                data = zlib.decompress(data)
            number += 1
            yield pb.DumpPart.FromString(data)


def check_dump(path: str | Path) -> tuple[pb.DumpHeader, pb.DumpEnd]:
    """Read the whole file: every frame's CRC and the end's SHA-256 of the parts; returns the
    dump's header and end (DumpError if damaged, cut short, or not a dump)."""
    checksum = Checksum()
    header: pb.DumpHeader | None = None
    for part in read_dump(path):
        if part.WhichOneof("part") == "end":
            if header is None:
                raise DumpError(f"{path} has no header")
            if part.end.sha256 != checksum.digest() or part.end.parts != checksum.parts:
                raise DumpError(f"{path} is damaged: its checksum does not match its parts")
            return header, part.end
        if part.WhichOneof("part") == "header":
            header = part.header
        checksum.add(part)
    raise DumpError(f"{path} is cut short: it has no end")
