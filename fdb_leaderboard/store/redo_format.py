"""What the embedded store's redo log writes: records, segments, the checkpoint file, the head.

The log itself (appends, checkpoints, recovery) is ``redo_log.py``; this module only encodes
and decodes, so a reader of the format finds all of it in one place.

**Records.**  A commit's write set (``encode_writes``) behind a 16-byte header ``(payload
length, crc32, txn id)``.  Format 2 (this release) seeds the checksum with the session's
random id and the segment's number, so the bytes a recycled or preallocated segment still
holds from an earlier use, or from another session, never read as a record of this one.
Format 1 (the release before) checksummed the txn id and payload only; it is read for
recovery of a store left by that release.

**Segments** ``redo.<n>.log``.  Format 2 segments are preallocated (zero-filled, or recycled
from a retired segment) so that a commit's ``fdatasync`` writes its data and nothing of the file
system's metadata; records start at offset 0 and the first bytes that are not a valid record end
the segment.  A segment that outgrew its preallocation (a record longer than the room left, and no
spare ready) grows as an ordinary appended file.  A record with txn id T supersedes any earlier
record with a txn id at or above T: LMDB gives a transaction's id to the next one only when it did
not commit, so such an earlier record belongs to a commit that never happened (its process died
between logging and committing).

**The checkpoint file** ``redo.checkpoint``: a magic line, then the checkpoint's txn id, the first
segment still needed, the session id, LMDB's page size, both meta pages as the synced data file held
them, and a crc32.  The magic line is the log's **format marker**: ``fdb-leaderboard redo checkpoint
2`` here, ``... 1`` from the release before.  A release that does not know the marker refuses to open
the store (rather than open the data file without the commits only the log holds).  The file exists
exactly while the log may hold commits the data file lacks; a clean close of the store's last
process removes it and the log, leaving a plain LMDB store that every release reads.

**The head** ``redo.head``: one page shared (``mmap``) by the processes of a session: the current
segment, where its next record goes and how much room it has, the last record's txn id and offset,
the spare segment ready for use, and the last checkpoint.  Only a holder of LMDB's write lock changes
it.  It is never synced: recovery does not read it.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from collections.abc import Iterator, Sequence

from .api import StoreError

SET, CLEAR, CLEAR_RANGE = 1, 2, 3
Write = tuple[int, bytes, bytes]  # (SET, key, value) | (CLEAR, key, b"") | (CLEAR_RANGE, begin, end)

FORMAT = 2  # of the log and checkpoint this release writes
CHECKPOINT_FILE = "redo.checkpoint"
HEAD_FILE = "redo.head"
SPARE_FILE = "redo.spare"  # a segment being made ready, not yet numbered
FILE_MODE = 0o600  # store files are the owner's only
DIRECTORY_MODE = 0o700

RECORD = struct.Struct("<IIQ")  # payload length, crc32, txn id
_WRITE = struct.Struct("<BHI")  # kind, length of the key (or begin), length of the value (or end)
_SALT = struct.Struct("<QQ")  # session id, segment number
_TXNID = struct.Struct("<Q")
_CHECKPOINT_V1 = struct.Struct("<QQI")  # txn id, first log segment, meta page size
_CHECKPOINT_V2 = struct.Struct("<QQQI")  # txn id, first log segment, session id, meta page size
_MAGIC_V1 = b"fdb-leaderboard redo checkpoint 1\n"
_MAGIC_V2 = b"fdb-leaderboard redo checkpoint 2\n"
_META_MAGIC = 0xBEEFC0DE
_META_MAGIC_OFFSET = 16  # after the page header
# MDB_meta.mm_txnid: after the page header, magic, version, address, map size, two MDB_db and last page
_META_TXNID_OFFSET = 144


class RedoLogError(StoreError):
    """The redo log or its checkpoint is unreadable, or a log write failed."""


# -- write sets and records ---------------------------------------------------------------------


def encode_writes(writes: Sequence[Write]) -> bytes:
    pack = _WRITE.pack
    return b"".join(pack(kind, len(a), len(b)) + a + b for kind, a, b in writes)


def decode_writes(payload: bytes) -> Iterator[Write]:
    position, end, unpack = 0, len(payload), _WRITE.unpack_from
    while position < end:
        kind, a_length, b_length = unpack(payload, position)
        position += _WRITE.size
        a = payload[position : position + a_length]
        position += a_length
        yield kind, a, payload[position : position + b_length]
        position += b_length


def segment_seed(session: int, segment: int) -> int:
    """The checksum seed of format-2 records in segment ``segment`` of session ``session``."""
    return zlib.crc32(_SALT.pack(session, segment))


def record_crc(seed: int, txnid: int, payload: bytes) -> int:
    """A record's checksum covers its txn id (and, in format 2, its session and segment: ``seed``),
    so a record cannot pass for another's."""
    return zlib.crc32(payload, zlib.crc32(_TXNID.pack(txnid), seed))


def encode_record(seed: int, txnid: int, writes: Sequence[Write]) -> bytes:
    payload = encode_writes(writes)
    return RECORD.pack(len(payload), record_crc(seed, txnid, payload), txnid) + payload


def read_records(data: bytes | memoryview, seed: int = 0) -> tuple[list[tuple[int, bytes]], int]:
    """The whole records at the start of ``data`` as (txn id, payload), and where they end.

    A record cut short, empty or failing its checksum ends the valid part: a record is written
    only after the one before it was synced, so only the last one can be torn, and what follows
    it is the segment's earlier content (zeros, or records of an earlier use with another seed).
    ``seed`` 0 reads format 1 (no session, no segment in the checksum).
    """
    records, position, size = [], 0, len(data)
    while position + RECORD.size <= size:
        length, crc, txnid = RECORD.unpack_from(data, position)
        start = position + RECORD.size
        if not length or start + length > size:
            break
        payload = bytes(data[start : start + length])
        if record_crc(seed, txnid, payload) != crc:
            break
        records.append((txnid, payload))
        position = start + length
    return records, position


def superseding(records: Iterator[tuple[int, bytes]], after: int) -> list[tuple[int, bytes]]:
    """The records to replay, in commit order: those after txn ``after``, each record dropping the
    earlier ones it supersedes (a txn id at or above its own: commits that never happened)."""
    kept: list[tuple[int, bytes]] = []
    for txnid, payload in records:
        while kept and kept[-1][0] >= txnid:
            kept.pop()
        if txnid > after:
            kept.append((txnid, payload))
    return kept


# -- segments ---------------------------------------------------------------------------------


def segment_name(number: int) -> str:
    return f"redo.{number:012d}.log"


def segments(path: str) -> list[tuple[int, str]]:
    """The log segments in ``path``, oldest first."""
    found = []
    for name in os.listdir(path):
        if name.startswith("redo.") and name.endswith(".log") and name[5:-4].isdigit():
            found.append((int(name[5:-4]), os.path.join(path, name)))
    return sorted(found)


def fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def zero_fill(fd: int, size: int, chunk: int = 1 << 20) -> None:
    """Write ``size`` zero bytes from offset 0 and sync them: later overwrites then change no
    block allocation, and an ``fdatasync`` of them writes data only."""
    zeros = bytes(min(chunk, size))
    offset = 0
    while offset < size:
        offset += os.pwrite(fd, zeros[: size - offset], offset)
    os.fsync(fd)


# -- LMDB's meta pages ----------------------------------------------------------------------


def meta_txnid(page: bytes) -> int | None:
    """The transaction id an LMDB meta page names, or None if it is not a meta page."""
    if len(page) < _META_TXNID_OFFSET + 8:
        return None
    if struct.unpack_from("<I", page, _META_MAGIC_OFFSET)[0] != _META_MAGIC:
        return None
    return struct.unpack_from("<Q", page, _META_TXNID_OFFSET)[0]


# -- the checkpoint file ----------------------------------------------------------------------


class Checkpoint:
    """The last durable checkpoint: LMDB's state at txn ``txnid`` and where the log resumes.

    ``session`` is the id format-2 records are checksummed with; a checkpoint of format 1 (read
    only, for recovery) has ``format`` 1 and no session.
    """

    __slots__ = ("txnid", "first_segment", "metas", "session", "format")

    def __init__(self, txnid: int, first_segment: int, metas: bytes, session: int, format: int = FORMAT) -> None:
        self.txnid = txnid
        self.first_segment = first_segment
        self.metas = metas  # both meta pages, as the data file held them when txnid was synced
        self.session = session
        self.format = format

    def encode(self) -> bytes:
        fields = _CHECKPOINT_V2.pack(self.txnid, self.first_segment, self.session, len(self.metas) // 2)
        body = _MAGIC_V2 + fields + self.metas
        return body + struct.pack("<I", zlib.crc32(body))

    @classmethod
    def decode(cls, raw: bytes, where: str) -> Checkpoint:
        body, crc = raw[:-4], raw[-4:]
        if body.startswith(_MAGIC_V2):
            magic, layout, version = _MAGIC_V2, _CHECKPOINT_V2, 2
        elif body.startswith(_MAGIC_V1):
            magic, layout, version = _MAGIC_V1, _CHECKPOINT_V1, 1
        else:
            marker = raw.split(b"\n", 1)[0][:80]
            raise RedoLogError(
                f"{where} is not a redo-log checkpoint this release reads ({marker!r}); a newer release may "
                "have written it: open the store with that release, which recovers its log"
            )
        if len(raw) < len(magic) + layout.size + 4:
            raise RedoLogError(f"{where} is cut short: the store cannot be recovered safely")
        if struct.unpack("<I", crc)[0] != zlib.crc32(body):
            raise RedoLogError(f"{where} fails its checksum: the store cannot be recovered safely")
        if version == 2:
            txnid, first_segment, session, page_size = layout.unpack_from(body, len(magic))
        else:
            (txnid, first_segment, page_size), session = layout.unpack_from(body, len(magic)), 0
        metas = body[len(magic) + layout.size :]
        if len(metas) != 2 * page_size:
            raise RedoLogError(f"{where} holds {len(metas)} bytes of meta pages, not two of {page_size}")
        return cls(txnid, first_segment, metas, session, version)

    def save(self, path: str) -> None:
        """Replace the checkpoint file atomically and durably."""
        target = os.path.join(path, CHECKPOINT_FILE)
        temporary = target + ".tmp"
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "wb") as out:
            out.write(self.encode())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
        fsync_directory(path)

    @classmethod
    def load(cls, path: str) -> Checkpoint | None:
        target = os.path.join(path, CHECKPOINT_FILE)
        try:
            with open(target, "rb") as source:
                return cls.decode(source.read(), target)
        except FileNotFoundError:
            return None


# -- the head ---------------------------------------------------------------------------------

_HEAD_MAGIC = b"fdblbhd2"
_HEAD_FIXED = struct.Struct("<8sQQ")  # magic, session id, segment size of the session
# What a commit reads and writes: segment, next offset, room (0: grows), last record's txn id and
# offset, bytes logged in the session.
_HEAD_CURSOR = struct.Struct("<QQQQQQ")
_HEAD_SPARE = struct.Struct("<Q")  # the ready spare segment, 0: none (changed under the write lock)
_HEAD_CHECKPOINTED = struct.Struct("<QQ")  # last checkpoint's txn id + 1 (0: none), bytes logged then
_CURSOR_OFFSET = _HEAD_FIXED.size
_SPARE_OFFSET = _CURSOR_OFFSET + _HEAD_CURSOR.size
_CHECKPOINTED_OFFSET = _SPARE_OFFSET + _HEAD_SPARE.size
HEAD_SIZE = 4096


class Cursor:
    """Where the next record of a session goes (a copy of the head's fields)."""

    __slots__ = ("segment", "end", "room", "last_txnid", "last_start", "logged")

    def __init__(self, segment: int, end: int, room: int, last_txnid: int, last_start: int, logged: int) -> None:
        self.segment = segment
        self.end = end
        self.room = room  # the segment's preallocated size; 0: it grows with each record
        self.last_txnid = last_txnid
        self.last_start = last_start
        self.logged = logged


class Head:
    """A session's shared page (``redo.head``), mapped in each of its processes.

    The cursor and the spare change only under LMDB's write lock; the last checkpoint only in the
    checkpointer.
    """

    def __init__(self, path: str, create: tuple[int, int] | None = None) -> None:
        """Map the head of ``path``; ``create`` (session id, segment size) makes a new one."""
        name = os.path.join(path, HEAD_FILE)
        flags = os.O_RDWR | (os.O_CREAT | os.O_TRUNC if create else 0)
        try:
            fd = os.open(name, flags, FILE_MODE)
        except FileNotFoundError:
            raise RedoLogError(f"{name} is missing: the store's redo-log session is not running") from None
        try:
            if create:
                os.ftruncate(fd, HEAD_SIZE)
            elif os.fstat(fd).st_size < HEAD_SIZE:
                raise RedoLogError(f"{name} is cut short: the store's redo-log session is not running")
            self.map = mmap.mmap(fd, HEAD_SIZE)
        finally:
            os.close(fd)
        if create:
            _HEAD_FIXED.pack_into(self.map, 0, _HEAD_MAGIC, *create)
        magic, self.session, self.segment_bytes = _HEAD_FIXED.unpack_from(self.map, 0)
        if magic != _HEAD_MAGIC:
            self.map.close()
            raise RedoLogError(f"{name} is not a redo-log head of this release")

    def cursor(self) -> Cursor:
        return Cursor(*_HEAD_CURSOR.unpack_from(self.map, _CURSOR_OFFSET))

    def set_cursor(self, cursor: Cursor) -> None:
        _HEAD_CURSOR.pack_into(
            self.map,
            _CURSOR_OFFSET,
            cursor.segment,
            cursor.end,
            cursor.room,
            cursor.last_txnid,
            cursor.last_start,
            cursor.logged,
        )

    def spare(self) -> int:
        return _HEAD_SPARE.unpack_from(self.map, _SPARE_OFFSET)[0]

    def set_spare(self, segment: int) -> None:
        _HEAD_SPARE.pack_into(self.map, _SPARE_OFFSET, segment)

    def checkpointed(self) -> tuple[int, int]:
        """(the last checkpoint's txn id, or -1 if none yet; bytes logged in the session at it)."""
        txnid, logged = _HEAD_CHECKPOINTED.unpack_from(self.map, _CHECKPOINTED_OFFSET)
        return txnid - 1, logged

    def set_checkpointed(self, txnid: int, logged: int) -> None:
        _HEAD_CHECKPOINTED.pack_into(self.map, _CHECKPOINTED_OFFSET, txnid + 1, logged)

    def close(self) -> None:
        self.map.close()
