"""A redo log that makes an LMDB commit durable with one small append instead of a B-tree flush.

LMDB makes a commit durable by writing every page the transaction changed (leaves and the
branch pages above them, scattered over the file) and fsyncing them: about 54 scattered pages
for one score at 1,000,000 records, 1.5-3 ms on the disk measured in docs/benchmarks.md.  In
redo-log mode a commit instead appends its write set (the keys it set and cleared, 1-1.5 KB
for one score) to a log and fdatasyncs that, then commits to LMDB without syncing
(``MDB_NOSYNC``).  A checkpoint thread syncs the data file about once a second.

``MDB_NOSYNC`` alone is unsafe after an operating-system crash, for two reasons, and this
module removes both:

1. LMDB reuses a page as soon as no open snapshot needs it, so an unsynced commit may overwrite
   pages of the last snapshot that reached the disk.  Here a read transaction opened at the
   checkpoint's transaction (``C``) stays open until the next checkpoint is durable: LMDB then
   reuses no page that snapshot ``C`` (or ``C - 1``) holds.
2. Unsynced commits rewrite LMDB's two meta pages (which name the current snapshot), and the
   disk may hold a meta page whose snapshot's pages never arrived.  A checkpoint saves both
   meta pages as they were when ``C`` was synced; recovery writes them back, so LMDB opens at
   ``C``, and then replays, in order, every logged write set after ``C``.

A write set is logged and synced before its LMDB commit, so no reader ever sees a write that
a crash could take back.  The log records writes, not operations: replaying a range clear on
the same state clears the same keys, so replay is exact.

Files in the store directory:

| file | content |
|---|---|
| ``redo.lock`` | ``flock``: exclusive for a redo-log session, shared for other openers |
| ``redo.gate`` | ``flock`` held while one opener takes its lock (and recovers, if it must) |
| ``redo.checkpoint`` | txn id ``C``, the first log segment still needed, both meta pages, CRC |
| ``redo.<n>.log`` | records ``(length, crc32, txn id, write set)`` appended in commit order |

``redo.checkpoint`` exists exactly while a redo-log session is open or after one crashed: any
opener that finds it, in either mode, recovers first.  A redo-log session needs the store to
itself (one process); a clean close syncs the data file and removes the checkpoint and log.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .api import StoreError

_log = logging.getLogger(__name__)

SET, CLEAR, CLEAR_RANGE = 1, 2, 3
Write = tuple[int, bytes, bytes]  # (SET, key, value) | (CLEAR, key, b"") | (CLEAR_RANGE, begin, end)

_RECORD = struct.Struct("<IIQ")  # payload length, crc32 of txn id and payload, txn id
_WRITE = struct.Struct("<BHI")  # kind, length of the key (or begin), length of the value (or end)
_CHECKPOINT = struct.Struct("<QQI")  # txn id, first log segment, meta page size
_MAGIC = b"fdb-leaderboard redo checkpoint 1\n"
_META_MAGIC = 0xBEEFC0DE
_META_MAGIC_OFFSET = 16  # after the page header
# MDB_meta.mm_txnid: after the page header, magic, version, address, map size, two MDB_db and last page
_META_TXNID_OFFSET = 144

LOCK_FILE = "redo.lock"
DURABLE_FILE = "durable.lock"  # held (shared) by every durable opener
FAST_FILE = "not-durable.lock"  # held (shared) by every opener with durable=false
FILE_MODE = 0o600  # store files are the owner's only
DIRECTORY_MODE = 0o700
GATE_FILE = "redo.gate"
CHECKPOINT_FILE = "redo.checkpoint"
DEFAULT_CHECKPOINT_SECONDS = 1.0
DEFAULT_CHECKPOINT_BYTES = 64 << 20  # a segment this long triggers a checkpoint early


class RedoLogError(StoreError):
    """The redo log or its checkpoint is unreadable, or a log write failed."""


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


def _record_crc(txnid: int, payload: bytes) -> int:
    """A record's checksum covers its transaction id, so a record cannot pass for another's."""
    return zlib.crc32(payload, zlib.crc32(struct.pack("<Q", txnid)))


def meta_txnid(page: bytes) -> int | None:
    """The transaction id an LMDB meta page names, or None if it is not a meta page."""
    if len(page) < _META_TXNID_OFFSET + 8:
        return None
    if struct.unpack_from("<I", page, _META_MAGIC_OFFSET)[0] != _META_MAGIC:
        return None
    return struct.unpack_from("<Q", page, _META_TXNID_OFFSET)[0]


def committed(env: Any, txnid: int) -> bool:
    """Whether LMDB committed write transaction ``txnid``: an interrupt may follow a commit."""
    return env.info()["last_txnid"] >= txnid


def _fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _segment_name(number: int) -> str:
    return f"redo.{number:012d}.log"


def _segments(path: str) -> list[tuple[int, str]]:
    """The log segments in ``path``, oldest first."""
    found = []
    for name in os.listdir(path):
        if name.startswith("redo.") and name.endswith(".log") and name[5:-4].isdigit():
            found.append((int(name[5:-4]), os.path.join(path, name)))
    return sorted(found)


def read_records(data: bytes) -> tuple[list[tuple[int, bytes]], int]:
    """The whole records at the start of ``data`` as (txn id, payload), and where they end.

    A record cut short or failing its CRC ends the valid part: only the last append can be
    torn, because the next one starts after the previous one's sync.
    """
    records, position = [], 0
    while position + _RECORD.size <= len(data):
        length, crc, txnid = _RECORD.unpack_from(data, position)
        start = position + _RECORD.size
        payload = data[start : start + length]
        if len(payload) < length or _record_crc(txnid, payload) != crc:
            break
        records.append((txnid, payload))
        position = start + length
    return records, position


class Checkpoint:
    """The last durable checkpoint: LMDB's state at txn ``txnid`` and where the log resumes."""

    __slots__ = ("txnid", "first_segment", "metas")

    def __init__(self, txnid: int, first_segment: int, metas: bytes) -> None:
        self.txnid = txnid
        self.first_segment = first_segment
        self.metas = metas  # both meta pages, as the data file held them when txnid was synced

    def encode(self) -> bytes:
        body = _MAGIC + _CHECKPOINT.pack(self.txnid, self.first_segment, len(self.metas) // 2) + self.metas
        return body + struct.pack("<I", zlib.crc32(body))

    @classmethod
    def decode(cls, raw: bytes, where: str) -> Checkpoint:
        body, crc = raw[:-4], raw[-4:]
        if len(raw) < len(_MAGIC) + _CHECKPOINT.size + 4 or not body.startswith(_MAGIC):
            raise RedoLogError(f"{where} is not a redo-log checkpoint")
        if struct.unpack("<I", crc)[0] != zlib.crc32(body):
            raise RedoLogError(f"{where} fails its checksum: the store cannot be recovered safely")
        txnid, first_segment, page_size = _CHECKPOINT.unpack_from(body, len(_MAGIC))
        metas = body[len(_MAGIC) + _CHECKPOINT.size :]
        if len(metas) != 2 * page_size:
            raise RedoLogError(f"{where} holds {len(metas)} bytes of meta pages, not two of {page_size}")
        return cls(txnid, first_segment, metas)

    def save(self, path: str) -> None:
        """Replace the checkpoint file atomically and durably."""
        target = os.path.join(path, CHECKPOINT_FILE)
        temporary = target + ".tmp"
        with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "wb") as out:
            out.write(self.encode())
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
        _fsync_directory(path)

    @classmethod
    def load(cls, path: str) -> Checkpoint | None:
        target = os.path.join(path, CHECKPOINT_FILE)
        try:
            with open(target, "rb") as source:
                return cls.decode(source.read(), target)
        except FileNotFoundError:
            return None


class StoreLock:
    """The ``flock`` that keeps a redo-log session alone with its store.

    Openers decide, recover and turn an exclusive lock into a shared one inside ``gate()``, one
    at a time: ``flock`` may drop a lock before granting its new mode, and another opener must
    not take the store alone in between.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(os.path.join(path, LOCK_FILE), os.O_RDWR | os.O_CREAT, FILE_MODE)
        self.mode_fd = -1

    @contextlib.contextmanager
    def gate(self, wait_seconds: float = 60.0) -> Iterator[None]:
        """Hold the store's opening gate (an ``flock`` on its own file) for the block."""
        fd = os.open(os.path.join(self.path, GATE_FILE), os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            deadline = time.monotonic() + wait_seconds
            while not _try_flock(fd, fcntl.LOCK_EX):
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.path} has been opening in another process for {wait_seconds:g} s (recovering "
                        "after a crash, or stuck); try again once it is open"
                    )
                time.sleep(0.01)
            yield
        finally:
            os.close(fd)  # releases the gate

    def take(self, alone: bool) -> bool:
        """Inside the gate: hold the store exclusively if no one else has it (True), else share it.

        ``alone`` (a redo-log session) refuses to share.
        """
        if _try_flock(self.fd, fcntl.LOCK_EX):
            return True
        if alone:
            raise StoreError(f"{self.path} is open in another process; a redo-log session needs the store to itself")
        self.shared()
        return False

    def shared(self) -> None:
        """Take the shared lock; inside the gate only a redo-log session can hold it exclusively."""
        if not _try_flock(self.fd, fcntl.LOCK_SH):
            raise StoreError(
                f"{self.path} is open in redo-log mode by another process, which needs it alone; reach the "
                "store through that process (its gRPC service) or close it first"
            )

    def hold_durability(self, durable: bool) -> None:
        """Inside the gate: refuse if another process has the store open with the other durability,
        then mark this opener's (a shared ``flock`` on a file per setting, released at close or death).

        A non-durable opener would otherwise commit without syncing into a store whose server
        promises durable writes (or the reverse)."""
        mine, other = (DURABLE_FILE, FAST_FILE) if durable else (FAST_FILE, DURABLE_FILE)
        probe = os.open(os.path.join(self.path, other), os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            if not _try_flock(probe, fcntl.LOCK_EX):
                raise StoreError(
                    f"{self.path} is open in another process with durable={not durable}; open it with the same "
                    "durability (or reach it through that process)"
                )
        finally:
            os.close(probe)
        self.mode_fd = os.open(os.path.join(self.path, mine), os.O_RDWR | os.O_CREAT, FILE_MODE)
        fcntl.flock(self.mode_fd, fcntl.LOCK_SH)

    def close(self) -> None:
        if self.mode_fd >= 0:
            os.close(self.mode_fd)
            self.mode_fd = -1
        if self.fd >= 0:
            os.close(self.fd)  # releases the lock
            self.fd = -1


def _try_flock(fd: int, operation: int) -> bool:
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise


def recover(
    path: str, open_env: Callable[[], Any], apply: Callable[[Any, Iterator[Write]], None]
) -> tuple[Any, int | None]:
    """Bring a store whose redo-log session did not close cleanly back to its last logged commit.

    Call with the store locked exclusively.  Restores the checkpoint's meta pages, then opens
    LMDB with ``open_env()`` and replays the logged write sets after the checkpoint in commit
    order, one transaction each (``apply(txn, writes)`` makes the writes).  A read transaction
    holds the checkpoint's snapshot meanwhile, so a crash during recovery leaves it intact for
    the next attempt.  Removes the checkpoint and the log once the data file is synced.
    Returns the environment and how many write sets were replayed (None: nothing to recover).
    """
    checkpoint = Checkpoint.load(path)
    if checkpoint is None:
        finish(path)  # log segments left by a clean close that stopped before removing them
        return open_env(), None
    replay = _logged_after(path, checkpoint)
    fd = os.open(os.path.join(path, "data.mdb"), os.O_RDWR)
    try:
        os.pwrite(fd, checkpoint.metas, 0)
        os.fsync(fd)
    finally:
        os.close(fd)
    env = open_env()
    pin = env.begin()
    try:
        if pin.id() != checkpoint.txnid:
            raise RedoLogError(
                f"after restoring checkpoint {checkpoint.txnid}, LMDB opened {path} at transaction {pin.id()}"
            )
        for _, payload in replay:
            with env.begin(write=True) as txn:
                apply(txn, decode_writes(payload))
        env.sync(True)
        finish(path)
    finally:
        pin.abort()
    return env, len(replay)


def _logged_after(path: str, checkpoint: Checkpoint) -> list[tuple[int, bytes]]:
    """The logged write sets committed after ``checkpoint``, in commit order."""
    needed = [(number, segment) for number, segment in _segments(path) if number >= checkpoint.first_segment]
    replay: list[tuple[int, bytes]] = []
    for position, (_, segment) in enumerate(needed):
        with open(segment, "rb") as source:
            data = source.read()
        records, end = read_records(data)
        if end < len(data) and position < len(needed) - 1:
            raise RedoLogError(
                f"{segment} is damaged at byte {end} and a later segment follows: the store cannot be recovered safely"
            )
        replay.extend(record for record in records if record[0] > checkpoint.txnid)
    return replay


def finish(path: str) -> None:
    """End a session after the data file was synced: without a checkpoint nothing is recovered."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(path, CHECKPOINT_FILE))
    _fsync_directory(path)
    for _, segment in _segments(path):
        os.unlink(segment)


class RedoLog:
    """The log of one redo-log session, its checkpoints and the snapshot they pin.

    ``commit`` logs a write transaction's writes and then commits it, while the transaction
    holds LMDB's write lock (so records are in commit order); ``checkpoint`` takes the write
    lock itself for the moment it needs commits to stop.
    """

    def __init__(
        self,
        path: str,
        env: Any,
        checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS,
        checkpoint_bytes: int = DEFAULT_CHECKPOINT_BYTES,
    ) -> None:
        self.path = path
        self.env = env
        self.page_size = env.stat()["psize"]
        self.data_fd = os.open(os.path.join(path, "data.mdb"), os.O_RDONLY)
        self.checkpoint_seconds = checkpoint_seconds
        self.checkpoint_bytes = checkpoint_bytes
        self.failed: BaseException | None = None
        self.checkpoints = 0
        self.logged_bytes = 0  # appended by this session, for measurements
        self.append_seconds = 0.0  # spent writing and syncing the log
        self.checkpoint_sync_seconds = 0.0  # spent syncing the data file
        self._segment_number = 0
        self._segment_fd = -1
        self._segment_size = 0
        self._pin: Any = None  # the read transaction holding the last durable checkpoint's pages
        self._checkpointed_txnid = -1
        self._lock = threading.Lock()  # one checkpoint at a time
        self._wake = threading.Event()
        self._stopping = False
        self.checkpoint()  # before any unsynced commit: every later one must be recoverable
        self._thread = threading.Thread(target=self._run, name=f"redo-log checkpoints {path}", daemon=True)
        self._thread.start()

    # -- appends -----------------------------------------------------------------------------

    def commit(self, txn: Any, writes: Sequence[Write]) -> None:
        """Log the write transaction ``txn``'s writes durably, then commit it to LMDB.

        A commit that fails after its record was synced takes the record back: LMDB gives its
        transaction id to the next write transaction, and a replay must not apply writes whose
        caller was told they failed.
        """
        size, txnid = self._segment_size, txn.id()
        self.append(txnid, writes)
        try:
            txn.commit()
        except BaseException as exc:
            if not committed(self.env, txnid):
                self._undo_append(size, exc)
            raise

    def append(self, txnid: int, writes: Sequence[Write]) -> None:
        """Log one commit's writes durably; the caller commits to LMDB only after this returns."""
        if self.failed is not None:
            raise RedoLogError(f"the redo log of {self.path} failed earlier; reopen the store") from self.failed
        payload = encode_writes(writes)
        record = _RECORD.pack(len(payload), _record_crc(txnid, payload), txnid) + payload
        size = self._segment_size
        started = time.perf_counter()
        try:
            written = 0
            while written < len(record):  # a regular file takes it whole unless the disk is full
                written += os.write(self._segment_fd, record[written:])
            os.fdatasync(self._segment_fd)
        except BaseException as exc:  # an interrupt too: the caller is told this commit failed
            self._undo_append(size, exc)
            if isinstance(exc, OSError):
                raise RedoLogError(f"could not write the redo log of {self.path}: {exc}") from exc
            raise
        self._segment_size = size + len(record)
        self.logged_bytes += len(record)
        self.append_seconds += time.perf_counter() - started
        if self._segment_size >= self.checkpoint_bytes:
            self._wake.set()

    def _undo_append(self, size: int, error: BaseException) -> None:
        """Cut the log back to ``size`` bytes; if even that fails, refuse every later write.

        (A record left behind that way is dropped by a clean close; only a crash replays it.)
        """
        try:
            os.ftruncate(self._segment_fd, size)
            os.lseek(self._segment_fd, size, os.SEEK_SET)
            os.fdatasync(self._segment_fd)
            self.logged_bytes -= self._segment_size - size
            self._segment_size = size
        except OSError:
            self.failed = error

    # -- checkpoints -------------------------------------------------------------------------

    def checkpoint(self) -> bool:
        """Make the data file durable up to the last commit; False if nothing was new.

        Commits wait only while the snapshot is chosen and the log switches to a new segment;
        the data file's sync runs while they go on (their pages are not part of the snapshot).
        """
        with self._lock:
            pin = None
            try:
                writer = self.env.begin(write=True)  # holds commits back while the snapshot is chosen
                try:
                    txnid = writer.id() - 1
                    if txnid == self._checkpointed_txnid:
                        return False
                    pin = self.env.begin()
                    metas = os.pread(self.data_fd, 2 * self.page_size, 0)
                    pages = (metas[i * self.page_size : (i + 1) * self.page_size] for i in (0, 1))
                    named = sorted(meta_txnid(page) or 0 for page in pages)
                    if pin.id() != txnid or named[1] != txnid:
                        raise RedoLogError(
                            f"LMDB's meta pages name transactions {named}, not {txnid}: unexpected data file layout"
                        )
                    previous_fd = self._segment_fd
                    self._open_segment(self._segment_number + 1)
                finally:
                    writer.abort()
                if previous_fd >= 0:
                    os.close(previous_fd)
                started = time.perf_counter()
                os.fdatasync(self.data_fd)  # every page of snapshot txnid, and its meta page
                self.checkpoint_sync_seconds += time.perf_counter() - started
                Checkpoint(txnid, self._segment_number, metas).save(self.path)
            except BaseException:
                if pin is not None:
                    pin.abort()  # the previous checkpoint, its pin and its log segments still hold
                raise
            for number, segment in _segments(self.path):
                if number < self._segment_number:
                    os.unlink(segment)
            if self._pin is not None:
                self._pin.abort()  # the older snapshot's pages may now be reused
            self._pin = pin
            self._checkpointed_txnid = txnid
            self.checkpoints += 1
            return True

    def _open_segment(self, number: int) -> None:
        name = os.path.join(self.path, _segment_name(number))
        self._segment_fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, FILE_MODE)
        _fsync_directory(self.path)  # the segment must still be found after a crash
        self._segment_number = number
        self._segment_size = 0

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self.checkpoint_seconds)
            self._wake.clear()
            if self._stopping:
                break
            try:
                self.checkpoint()
            except Exception:  # the last durable checkpoint and its pin still hold: try again later
                _log.exception("redo-log checkpoint of %s failed", self.path)

    def close(self) -> None:
        """End the session cleanly: sync the data file, then drop the checkpoint and the log."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        with self._lock:
            writer = self.env.begin(write=True)
            writer.abort()  # no commit is in flight: the last one's pages were handed to the OS
            os.fdatasync(self.data_fd)
            finish(self.path)
            if self._pin is not None:
                self._pin.abort()
                self._pin = None
            os.close(self._segment_fd)
            os.close(self.data_fd)
