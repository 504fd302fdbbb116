"""A redo log that makes an LMDB commit durable with one small write instead of a B-tree flush.

LMDB makes a commit durable by writing every page the transaction changed (leaves and the
branch pages above them, scattered over the file) and fsyncing them: 36 scattered pages for one
score at 50,000 records, 54 at 1,000,000, 1.5-3 ms on the disk measured in docs/benchmarks.md.
With the log (the default) a commit instead writes its write set (the keys it set and cleared,
about 1 KB for one score) into a preallocated log segment and fdatasyncs that, then commits to
LMDB without syncing (``MDB_NOSYNC``).  A checkpoint syncs the data file about once a second.

``MDB_NOSYNC`` alone is unsafe after an operating-system crash, for two reasons, and this
module removes both:

1. LMDB reuses a page as soon as no open snapshot needs it, so an unsynced commit may overwrite
   pages of the last snapshot that reached the disk.  Here a read transaction opened at the
   checkpoint's transaction (``C``) stays open until the next checkpoint is durable: LMDB then
   reuses no page that snapshot ``C`` holds.
2. Unsynced commits rewrite LMDB's two meta pages (which name the current snapshot), and the
   disk may hold a meta page whose snapshot's pages never arrived.  A checkpoint saves both
   meta pages as they were when ``C`` was synced; recovery writes them back, so LMDB opens at
   ``C``, and then replays, in order, every logged write set after ``C``.

A write set is logged and synced before its LMDB commit, so no reader ever sees a write that
a crash could take back.  The log records writes, not operations: replaying a range clear on
the same state clears the same keys, so replay is exact.

**Several processes** share one log (``serve --processes N``, reader processes, a CLI next to a
server).  Records are written by whichever process holds LMDB's write lock, so they stay in
commit order; the shared head (``redo.head``, see ``redo_format.py``) says where the next one
goes.  One process, the checkpointer (it holds ``redo.checkpointer``, see ``store_lock.py``),
makes the checkpoints and holds their pin.  Every commit of another process first checks that a
checkpointer is alive; if none is (it closed, or died and took its pin with it), that process
becomes the checkpointer and makes a checkpoint of the last commit before its own commit writes
any page, so the pages of the last durable checkpoint are never overwritten unprotected.  A
process that died between logging a commit and committing it leaves a record no commit
followed: the next writer writes over it (its txn id says so), and recovery drops it in any case.

**Segments** are preallocated (zero-filled once, then recycled: a segment retired by a
checkpoint becomes the next spare), so a commit's ``fdatasync`` changes no file-system metadata
and costs one data write and a cache flush.  A session's first segment, and any segment a record
overflows when no spare is ready, grows as an ordinary appended file instead.

The last process to close a store syncs the data file and removes the checkpoint and the log: a
cleanly closed store is a plain LMDB store, which every release reads.  After a crash, the next
opener that finds the store free recovers it, in any mode.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .redo_format import (
    CHECKPOINT_FILE,
    CLEAR,
    CLEAR_RANGE,
    DIRECTORY_MODE,
    FILE_MODE,
    HEAD_FILE,
    RECORD,
    SET,
    SPARE_FILE,
    Checkpoint,
    Cursor,
    Head,
    RedoLogError,
    Write,
    decode_writes,
    encode_writes,
    fsync_directory,
    meta_txnid,
    read_records,
    record_crc,
    segment_name,
    segment_seed,
    segments,
    superseding,
    zero_fill,
)
from .store_lock import StoreLock

_log = logging.getLogger(__name__)

DEFAULT_CHECKPOINT_SECONDS = 1.0
DEFAULT_SEGMENT_BYTES = 4 << 20  # zero-filled in milliseconds; about 4,000 commits of one score
MIN_SEGMENT_BYTES = 64 << 10
_POLL_SECONDS = 0.1  # how often a process looks at what other processes of its session did
# A session prepares a preallocated segment only once it has logged this much: a short session
# (a CLI command, a test) never pays for zero-filling one.
_PREALLOCATE_AFTER = 256 << 10


def committed(env: Any, txnid: int) -> bool:
    """Whether LMDB committed write transaction ``txnid``: an interrupt may follow a commit."""
    return env.info()["last_txnid"] >= txnid


def recover(
    path: str, open_env: Callable[[], Any], apply: Callable[[Any, Iterator[Write]], None]
) -> tuple[Any, int | None]:
    """Bring a store whose redo-log session did not close cleanly back to its last logged commit.

    Call with the store held alone.  Restores the checkpoint's meta pages, then opens LMDB with
    ``open_env()`` and replays the logged write sets after the checkpoint in commit order, one
    transaction each (``apply(txn, writes)`` makes the writes).  A read transaction holds the
    checkpoint's snapshot meanwhile, so a crash during recovery leaves it intact for the next
    attempt.  Removes the checkpoint and the log once the data file is synced.  Reads the
    checkpoints and logs of this release and of the one before.  Returns the environment and how
    many write sets were replayed (None: nothing to recover).
    """
    checkpoint = Checkpoint.load(path)
    if checkpoint is None:
        finish(path)  # log files left by a clean close that stopped before removing them
        return open_env(), None
    replay = logged_after(path, checkpoint)
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


def logged_after(path: str, checkpoint: Checkpoint) -> list[tuple[int, bytes]]:
    """The logged write sets committed after ``checkpoint``, in commit order."""
    needed = [(number, segment) for number, segment in segments(path) if number >= checkpoint.first_segment]
    if checkpoint.format == 1:
        return _logged_after_v1(checkpoint, needed)
    found: list[tuple[int, bytes]] = []
    expected, gap = checkpoint.first_segment, None
    for number, segment in needed:
        with open(segment, "rb") as source:
            records, _ = read_records(source.read(), segment_seed(checkpoint.session, number))
        if number != expected and gap is None:
            gap = expected  # fine if no later segment holds a record: spares are numbered ahead
        if records and gap is not None:
            raise RedoLogError(
                f"{path}: log segment {gap} is missing and a later one holds commits: the store cannot be "
                "recovered safely"
            )
        found.extend(records)
        expected = number + 1
    return superseding(iter(found), checkpoint.txnid)


def _logged_after_v1(checkpoint: Checkpoint, needed: list[tuple[int, str]]) -> list[tuple[int, bytes]]:
    """The same for a log of the release before: appended segments, records checksummed without a seed."""
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
    fsync_directory(path)
    for _, segment in segments(path):
        os.unlink(segment)
    # (and what a crash may leave of a spare being zero-filled or a checkpoint being saved)
    for name in (SPARE_FILE, SPARE_FILE + ".tmp", CHECKPOINT_FILE + ".tmp", HEAD_FILE):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(path, name))


class _Chosen:
    """A checkpoint chosen under the write lock, to be made durable after it."""

    __slots__ = ("pin", "txnid", "metas", "first_segment", "logged")

    def __init__(self, pin: Any, txnid: int, metas: bytes, first_segment: int, logged: int) -> None:
        self.pin, self.txnid, self.metas, self.first_segment, self.logged = pin, txnid, metas, first_segment, logged


class RedoLog:
    """One process's part of a redo-log session: its appends, and checkpoints while it is the checkpointer.

    ``commit`` logs a write transaction's writes and then commits it, while the transaction
    holds LMDB's write lock (so records are in commit order); ``checkpoint`` takes the write
    lock itself for the moment it needs commits to stop.  ``first``: this process opened the
    store alone and starts the session (its head, first segment and first checkpoint).
    """

    def __init__(
        self,
        path: str,
        env: Any,
        lock: StoreLock,
        first: bool,
        checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self.path = path
        self.env = env
        self.lock = lock
        self.page_size = env.stat()["psize"]
        self.checkpoint_seconds = checkpoint_seconds
        self.failed: BaseException | None = None
        self.checkpoints = 0  # made by this process
        self.logged_bytes = 0  # appended by this process, for measurements
        self.append_seconds = 0.0  # spent writing and syncing the log
        self.checkpoint_sync_seconds = 0.0  # spent syncing the data file
        self.takeovers = 0  # times this process found no checkpointer and became it
        self._pin: Any = None  # the read transaction holding the last durable checkpoint's pages
        self._pinned = False  # this process is the checkpointer and made a checkpoint
        self._checkpointed_at = time.monotonic()
        self._lock = threading.Lock()  # one checkpoint at a time
        self._wake = threading.Event()
        self._stopping = False
        self._fd, self._fd_segment = -1, 0  # the segment this process last wrote
        self._seeds: dict[int, int] = {}
        self.data_fd = os.open(os.path.join(path, "data.mdb"), os.O_RDONLY)
        try:
            self.head = self._start(segment_bytes) if first else Head(path)
        except BaseException:
            if self._pin is not None:
                self._pin.abort()
            os.close(self.data_fd)
            raise
        self._thread = threading.Thread(target=self._run, name=f"redo-log checkpoints {path}", daemon=True)
        self._thread.start()

    @property
    def segment_bytes(self) -> int:
        """The size of the session's preallocated segments (its first process's choice)."""
        return self.head.segment_bytes

    @property
    def checkpoint_bytes(self) -> int:
        """A checkpoint is due once this much was logged since the last one: full segments are soon
        retired (and recycled), so a session writing fast keeps few of them."""
        return 2 * self.head.segment_bytes

    def _start(self, segment_bytes: int) -> Head:
        """A new session: nothing of an earlier one is left (recovery or a clean close removed it)."""
        finish(self.path)
        self.head = Head(self.path, create=(random.getrandbits(63) | 1, segment_bytes))
        self._create_segment(1)
        self.head.set_cursor(Cursor(1, 0, 0, 0, 0, 0))
        if not self.lock.take_checkpointer():
            raise RedoLogError(f"{self.path}: another process makes the checkpoints of a store opened alone")
        writer = self.env.begin(write=True)
        try:
            self._take_over(writer.id())  # before any unsynced commit: every later one must be recoverable
        finally:
            writer.abort()
        return self.head

    # -- appends -----------------------------------------------------------------------------

    def commit(self, txn: Any, writes: Sequence[Write]) -> None:
        """Log the write transaction ``txn``'s writes durably, then commit it to LMDB.

        A commit that fails after its record was synced takes the record back: LMDB gives its
        transaction id to the next write transaction, and a replay must not apply writes whose
        caller was told they failed.
        """
        txnid = txn.id()
        segment, start = self.append(txnid, writes)
        try:
            txn.commit()
        except BaseException as exc:
            if not committed(self.env, txnid):
                self._withdraw(txnid, segment, start, exc)
            raise

    def append(self, txnid: int, writes: Sequence[Write]) -> tuple[int, int]:
        """Log one commit's writes durably (the caller holds LMDB's write lock with transaction
        ``txnid``, and commits only after this returns); returns the record's segment and offset."""
        if self.failed is not None:
            raise RedoLogError(f"the redo log of {self.path} failed earlier; reopen the store") from self.failed
        if not self._pinned and self.lock.take_checkpointer():
            self._take_over(txnid)  # nothing protects the last checkpoint's pages until this returns
        payload = encode_writes(writes)
        size = RECORD.size + len(payload)
        head = self.head
        cursor = head.cursor()
        if cursor.last_txnid >= txnid:
            cursor.end = cursor.last_start  # a record whose commit never happened: write over it
        if cursor.room and cursor.end + size > cursor.room:
            self._next_segment(cursor, size)
        fd = self._segment_fd(cursor.segment)
        record = RECORD.pack(len(payload), record_crc(self._seed(cursor.segment), txnid, payload), txnid) + payload
        start = cursor.end
        started = time.perf_counter()
        try:
            written = 0
            while written < size:  # a regular file takes it whole unless the disk is full
                written += os.pwrite(fd, record[written:], start + written)
            os.fdatasync(fd)
        except BaseException as exc:  # an interrupt too: the caller is told this commit failed
            self._erase(fd, start, exc)
            if isinstance(exc, OSError):
                raise RedoLogError(f"could not write the redo log of {self.path}: {exc}") from exc
            raise
        cursor.last_txnid, cursor.last_start = txnid, start
        cursor.end, cursor.logged = start + size, cursor.logged + size
        head.set_cursor(cursor)
        self.logged_bytes += size
        self.append_seconds += time.perf_counter() - started
        return cursor.segment, start

    def _seed(self, segment: int) -> int:
        seed = self._seeds.get(segment)
        if seed is None:
            if len(self._seeds) > 64:
                self._seeds.clear()
            seed = self._seeds[segment] = segment_seed(self.head.session, segment)
        return seed

    def _segment_fd(self, segment: int) -> int:
        if segment != self._fd_segment:
            fd = os.open(os.path.join(self.path, segment_name(segment)), os.O_RDWR)
            if self._fd >= 0:
                os.close(self._fd)
            self._fd, self._fd_segment = fd, segment
        return self._fd

    def _create_segment(self, number: int) -> None:
        """A segment that grows with each record (no spare is ready); its name survives a crash."""
        os.close(
            os.open(os.path.join(self.path, segment_name(number)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
        )
        fsync_directory(self.path)

    def _next_segment(self, cursor: Cursor, size: int) -> None:
        """Under the write lock: move ``cursor`` to the next segment, the ready spare if there is one."""
        number = cursor.segment + 1
        if self.head.spare() == number:
            self.head.set_spare(0)
            room = self.segment_bytes if size <= self.segment_bytes else 0
        else:
            self._create_segment(number)
            room = 0
        cursor.segment, cursor.end, cursor.room, cursor.last_start = number, 0, room, 0
        self._wake.set()

    def _erase(self, fd: int, start: int, error: BaseException) -> None:
        """Make the record at ``start`` unreadable, durably; if even that fails, refuse every later write.

        (A record left behind that way is dropped by a clean close, or superseded by the next
        commit's; only a crash with nothing logged after it replays it.)
        """
        try:
            os.pwrite(fd, bytes(RECORD.size), start)
            os.fdatasync(fd)
        except OSError:
            self.failed = error

    def _withdraw(self, txnid: int, segment: int, start: int, error: BaseException) -> None:
        """Take back the record of a commit that failed after it was logged.

        LMDB released the write lock with the failed commit, so it is taken again: another
        process may meanwhile have written over the record (its commit has the same txn id) or
        after it, and then there is nothing to take back (its record supersedes this one).
        """
        try:
            writer = self.env.begin(write=True)
        except BaseException:
            self.failed = error
            return
        try:
            cursor = self.head.cursor()
            if (cursor.segment, cursor.last_start, cursor.last_txnid) != (segment, start, txnid):
                return
            self._erase(self._segment_fd(segment), start, error)
            if self.failed is None:
                size = cursor.end - start
                cursor.end, cursor.last_txnid, cursor.logged = start, txnid - 1, cursor.logged - size
                self.head.set_cursor(cursor)
                self.logged_bytes -= size
        finally:
            writer.abort()

    # -- checkpoints -------------------------------------------------------------------------

    def _choose(self, txnid: int) -> _Chosen:
        """Under the write lock, with ``txnid`` the last commit: pin it as the next checkpoint."""
        pin = self.env.begin()
        try:
            metas = os.pread(self.data_fd, 2 * self.page_size, 0)
            pages = (metas[i * self.page_size : (i + 1) * self.page_size] for i in (0, 1))
            named = sorted(meta_txnid(page) or 0 for page in pages)
            if pin.id() != txnid or named[1] != txnid:
                raise RedoLogError(
                    f"LMDB's meta pages name transactions {named}, not {txnid}: unexpected data file layout"
                )
            cursor = self.head.cursor()
            return _Chosen(pin, txnid, metas, cursor.segment, cursor.logged)
        except BaseException:
            pin.abort()
            raise

    def _make_durable(self, chosen: _Chosen) -> None:
        """Sync the data file and save ``chosen`` as the checkpoint; then its pin replaces the old one."""
        try:
            started = time.perf_counter()
            os.fdatasync(self.data_fd)  # every page of the chosen snapshot, and its meta page
            self.checkpoint_sync_seconds += time.perf_counter() - started
            Checkpoint(chosen.txnid, chosen.first_segment, chosen.metas, self.head.session).save(self.path)
        except BaseException:
            chosen.pin.abort()  # the previous checkpoint, its pin and its log segments still hold
            raise
        if self._pin is not None:
            self._pin.abort()  # the older snapshot's pages may now be reused
        self._pin = chosen.pin
        self.head.set_checkpointed(chosen.txnid, chosen.logged)
        self._checkpointed_at = time.monotonic()
        self.checkpoints += 1
        self._retire(chosen.first_segment)
        # Read transactions of processes that died (a pin among them) may go now: ours protects
        # the checkpoint just made.
        self.env.reader_check()

    def _take_over(self, txnid: int) -> None:
        """Under the write lock of transaction ``txnid``, as the new checkpointer: checkpoint ``txnid - 1``.

        The last checkpoint's pin may have gone with the process that held it, and this
        transaction may already have taken pages of that checkpoint's snapshot for its own; none is
        written before it commits, and by then the checkpoint made here protects what a crash needs.
        """
        self._make_durable(self._choose(txnid - 1))
        self._pinned = True
        if self.head.cursor().logged:  # not the session's start
            _log.info(
                "%s: no process was making the redo log's checkpoints; process %d now does", self.path, os.getpid()
            )
        self.takeovers += 1

    def checkpoint(self) -> bool:
        """Make the data file durable up to the last commit; False if nothing was new, or if another
        process makes the checkpoints.

        Commits wait only while the snapshot is chosen; the data file's sync runs while they go on
        (their pages are not part of the snapshot).
        """
        with self._lock:
            if not self.lock.take_checkpointer():
                return False
            writer = self.env.begin(write=True)
            try:
                if not self._pinned:  # the checkpointer went away and no commit came to take over
                    self._take_over(writer.id())
                    return True
                txnid = writer.id() - 1
                if txnid == self.head.checkpointed()[0]:
                    return False
                chosen = self._choose(txnid)
            finally:
                writer.abort()
            self._make_durable(chosen)
            return True

    def _retire(self, first_segment: int) -> None:
        """Drop the segments before ``first_segment``; a full-size one becomes the next spare."""
        spare = os.path.join(self.path, SPARE_FILE)
        for number, segment in segments(self.path):
            if number >= first_segment:
                break
            if not os.path.exists(spare) and os.path.getsize(segment) == self.segment_bytes:
                os.rename(segment, spare)
            else:
                os.unlink(segment)

    def _keep_a_spare(self) -> None:
        """Once the session logs, keep a preallocated segment ready for the next switch: the one a
        checkpoint recycled (``redo.spare``), or one zero-filled here."""
        if self.head.cursor().logged < min(_PREALLOCATE_AFTER, self.segment_bytes // 4):
            return
        spare = os.path.join(self.path, SPARE_FILE)
        if not self.head.spare():
            self._zero_filled(spare)
            writer = self.env.begin(write=True)
            try:
                cursor = self.head.cursor()
                number = cursor.segment + 1
                os.rename(spare, os.path.join(self.path, segment_name(number)))
                fsync_directory(self.path)  # the name must survive a crash before a record goes in
                if cursor.room == 0:  # a growing segment: move to the preallocated one at once
                    cursor.segment, cursor.end, cursor.room, cursor.last_start = number, 0, self.segment_bytes, 0
                    self.head.set_cursor(cursor)
                else:
                    self.head.set_spare(number)
            finally:
                writer.abort()

    def _zero_filled(self, spare: str) -> None:
        if not os.path.exists(spare):
            fd = os.open(spare + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
            try:
                zero_fill(fd, self.segment_bytes)
            finally:
                os.close(fd)
            os.rename(spare + ".tmp", spare)

    def _due(self) -> bool:
        logged = self.head.checkpointed()[1]
        if self.head.cursor().logged - logged >= self.checkpoint_bytes:
            return True
        return time.monotonic() - self._checkpointed_at >= self.checkpoint_seconds

    def _run(self) -> None:
        poll = min(self.checkpoint_seconds, _POLL_SECONDS)
        while not self._stopping:
            self._wake.wait(poll)
            self._wake.clear()
            if self._stopping:
                break
            try:
                if not self._pinned or self._due():
                    self.checkpoint()
                if self._pinned:
                    self._keep_a_spare()
            except Exception:  # the last durable checkpoint and its pin still hold: try again later
                _log.exception("redo-log checkpoint of %s failed", self.path)

    def close(self, alone: bool) -> None:
        """End this process's part; ``alone`` (no other process has the store open) ends the session
        cleanly: sync the data file, then drop the checkpoint and the log."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
        with self._lock:
            if alone:
                writer = self.env.begin(write=True)
                writer.abort()  # no commit is in flight: the last one's pages were handed to the OS
                os.fdatasync(self.data_fd)
                finish(self.path)
            # Another process must take over before its next commit: give up the role, then the pin.
            self.lock.give_up_checkpointer()
            if self._pin is not None:
                self._pin.abort()
                self._pin = None
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            self.head.close()
            os.close(self.data_fd)


__all__ = [
    "CHECKPOINT_FILE",
    "CLEAR",
    "CLEAR_RANGE",
    "DEFAULT_CHECKPOINT_SECONDS",
    "DEFAULT_SEGMENT_BYTES",
    "DIRECTORY_MODE",
    "FILE_MODE",
    "MIN_SEGMENT_BYTES",
    "SET",
    "Checkpoint",
    "RedoLog",
    "RedoLogError",
    "StoreLock",
    "Write",
    "committed",
    "finish",
    "read_records",
    "recover",
]
