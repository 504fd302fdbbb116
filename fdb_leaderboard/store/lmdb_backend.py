"""The embedded backend: LMDB, durable, safe for several processes on one machine.

LMDB allows one writer at a time (across processes, through its lock file) and any
number of concurrent readers on MVCC snapshots.  So write transactions never conflict
and never retry here; read-only work (``Database.read``) runs on a snapshot without
taking the write lock.

**Group commit.**  A durable commit costs an fsync.  Callers of ``run`` in one process
queue their functions; whichever caller gets the write lock first (the leader) runs
every queued function in one LMDB write transaction, each inside its own nested
transaction so a function that raises is rolled back alone, then commits once.  All
callers in that batch return after that single fsync.  A lone caller pays no nesting.

**Durability.**  ``durable=True`` (the default): an acknowledged write survives power loss.
By default a commit is made durable by the redo log: its writes are written to a preallocated
log segment and synced (one small write and one ``fdatasync``), instead of syncing every B-tree
page it changed, and a checkpoint syncs the data file about once a second (``redo_log.py``
explains why that survives an operating-system crash).  ``redo_log=False`` syncs the changed
pages at every commit instead (what LMDB does by itself).  ``durable=False`` skips the sync: a
process crash loses nothing, but an operating-system crash or power loss may lose recent commits
and, on a file system that reorders writes, damage the database.  Several processes may open one
store, all in the same one of these three modes (``store_lock.py``).  A durable opener that names
no mode joins the processes that have the store open: those syncing pages (``redo_log=False``, or
release 0.2.0, which has no shared log) keep their mode until the last of them closes, so both
releases serve one store side by side during an upgrade; with none open, it starts the redo log,
if the store is at store format 4 (``formats.REDO_LOG``; a new store is): below it, releases
before 0.3.0 may serve the store and cannot read the log, so it syncs pages.

**Limits.**  FoundationDB's value and transaction-size limits are enforced.  LMDB's own
key limit (511 bytes) is stricter than FoundationDB's 10,000 and is reported as such.

**Room.**  The data file grows up to the map size (``map_size``, 1 TiB of address space by
default) or until the disk is full.  A write that finds the map full fails with StoreFull
naming the map size to reopen the store with; :meth:`LmdbDatabase.room` tells long jobs (bulk
loads, builds) how much is left, so they stop before it is all used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import fdb.tuple
import lmdb

from .. import formats
from ..proto import index_pb2
from . import redo_log as redo
from .api import (
    MAX_KEY_SIZE,
    MAX_TRANSACTION_BYTES,
    MAX_VALUE_SIZE,
    Answered,
    Database,
    InvertedRange,
    KeyTooLarge,
    KeyValue,
    ReadOnlyTransaction,
    ReadRounds,
    StoreError,
    StoreFull,
    StoreStats,
    Transaction,
    TransactionTimedOut,
    TransactionTooLarge,
    ValueTooLarge,
    apply_add,
    apply_max,
    apply_min,
    option_boolean,
)
from .store_lock import LOG, NOT_DURABLE, SYNCED, StoreLock

T = TypeVar("T")

DEFAULT_MAP_SIZE = 1 << 40  # address space only; the file grows as data is written
DEFAULT_TRANSACTION_SECONDS = 5.0
_MAX_BATCH = 64  # logical transactions sharing one commit
# A leader waits for more calls to join its batch only if one queued behind a leader this recently.
_CONTENTION_SECONDS = 0.05
_DEADLINE_EVERY = 1023  # a range read checks the transaction's time limit every 1024 keys


# The service's catalog root (service.catalog.ROOT, which this layer may not import) and its
# store format's key there (service.releases.format_key).
CATALOG_ROOT = fdb.tuple.pack(("lb",))
_STORE_FORMAT_KEY = CATALOG_ROOT + fdb.tuple.pack(("format",))


def log_refused_by_format(env: lmdb.Environment) -> int | None:
    """The store's format if it is below the redo log's (a catalog there, its format recorded
    lower or not at all: releases before 0.3.0 serve it), else None: the log may be written.
    A store with nothing under the catalog's root (new, or used without a catalog) is written
    at the newest format."""
    with env.begin() as txn:
        raw = txn.get(_STORE_FORMAT_KEY)
        if raw is not None:
            version = index_pb2.StoreFormat.FromString(raw).version
            return version if version < formats.REDO_LOG else None
        cursor = txn.cursor()
        if cursor.set_range(CATALOG_ROOT) and cursor.key().startswith(CATALOG_ROOT):
            return formats.UNRECORDED_STORE
    return None


class _Env:
    """One LMDB environment per path per process (LMDB forbids opening it twice)."""

    registry: dict[str, _Env] = {}
    registry_lock = threading.Lock()

    def __init__(
        self,
        path: str,
        durable: bool,
        map_size: int,
        redo_log: bool | None,
        checkpoint_seconds: float,
        segment_bytes: int,
    ) -> None:
        """``redo_log`` None (the default of a durable opener): the redo log, unless other processes
        have the store open syncing pages (``redo_log=false``, or a release before the shared log,
        such as 0.2.0): such an opener joins them, so both releases serve one store during an upgrade.
        An opener starting a session (alone) takes the log only where the store's format allows it
        (:func:`log_refused_by_format`): below store format 4 it syncs pages, and ``redo_log=True``
        is refused."""
        os.makedirs(path, mode=redo.DIRECTORY_MODE, exist_ok=True)
        # One made beforehand (0755 by the usual umask) becomes the owner's only too (unless it is
        # another user's: its files are the owner's only all the same).
        if os.stat(path).st_mode & 0o077:
            with contextlib.suppress(PermissionError):
                os.chmod(path, redo.DIRECTORY_MODE)
        self.path = path
        self.durable = durable
        # Before LMDB opens its files: the checkpointer's lock must go before LMDB's at death.
        self.lock = StoreLock(path)

        def open_env() -> lmdb.Environment:
            return lmdb.open(
                path,
                map_size=map_size,
                sync=durable and not redo_log,
                metasync=durable and not redo_log,
                max_readers=1024,
                max_dbs=0,
                readahead=False,
                mode=redo.FILE_MODE,
            )

        try:
            with self.lock.gate():
                alone = self.lock.take()
                named = redo_log
                if redo_log is None:
                    redo_log = alone or self.lock.session_mode() != SYNCED
                # Only an opener holding the store alone may repair what a crashed redo-log session left.
                self.env = redo.recover(path, open_env, _apply_writes)[0] if alone else open_env()
                try:
                    # Alone, it starts the session: the log only where the store's format allows it.
                    if alone and redo_log and (version := log_refused_by_format(self.env)) is not None:
                        if named:
                            raise StoreError(
                                f"{path} holds a store at format {version}: the redo log needs store format "
                                f"{formats.REDO_LOG}, which releases before 0.3.0 cannot read (raise it with "
                                "`fdb-leaderboard store upgrade` once no such release serves it, or open it "
                                "with redo_log=false)"
                            )
                        self.env.close()
                        redo_log = False
                        self.env = open_env()
                    self.redo_log = redo_log
                    self.lock.hold_mode(LOG if redo_log else SYNCED if durable else NOT_DURABLE, alone)
                    if alone or not redo_log:
                        # Drop reader slots left by killed processes; in a redo-log session only its
                        # checkpointer may, once a pin of its own protects the last checkpoint.
                        self.env.reader_check()
                    self.log = (
                        redo.RedoLog(path, self.env, self.lock, alone, checkpoint_seconds, segment_bytes)
                        if redo_log
                        else None
                    )
                    if alone:
                        self.lock.shared()
                except BaseException:
                    self.env.close()
                    raise
        except BaseException:
            self.lock.close()
            raise
        self.users = 0

    @classmethod
    def acquire(
        cls,
        path: str,
        durable: bool,
        map_size: int,
        redo_log: bool | None,
        checkpoint_seconds: float,
        segment_bytes: int,
    ) -> _Env:
        path = os.path.realpath(path)
        with cls.registry_lock:
            shared = cls.registry.get(path)
            if shared is None:
                shared = cls.registry[path] = cls(path, durable, map_size, redo_log, checkpoint_seconds, segment_bytes)
            elif shared.durable != durable or redo_log not in (None, shared.redo_log):
                raise StoreError(
                    f"{path} is already open in this process with durable={shared.durable}, "
                    f"redo_log={shared.redo_log}; one process must open it with one durability setting"
                )
            shared.users += 1
            return shared

    def release(self) -> None:
        with self.registry_lock:
            self.users -= 1
            if self.users == 0:
                del self.registry[self.path]
                if self.log is None:
                    self._close()
                    return
                try:
                    # Inside the gate no other process opens or closes: the last one out ends the
                    # session, and the next opener finds everything closed.
                    with self.lock.gate():
                        try:
                            self.log.close(alone=self.lock.alone())
                        finally:
                            self._close()
                finally:
                    if self.lock.fd >= 0:  # the gate could not be taken: leave the session to the others
                        try:
                            self.log.close(alone=False)
                        finally:
                            self._close()

    def _close(self) -> None:
        self.env.close()
        self.lock.close()


def _apply_writes(txn: lmdb.Transaction, writes: Iterable[redo.Write]) -> None:
    """Make a logged write set again (recovery); the log holds only writes that were allowed."""
    cursor = txn.cursor()
    for kind, a, b in writes:
        if kind == redo.SET:
            txn.put(a, b)
        elif kind == redo.CLEAR:
            txn.delete(a)
        else:
            _clear_range(cursor, a, b)


def _clear_range(cursor: lmdb.Cursor, begin: bytes, end: bytes) -> None:
    if begin >= end or not _seek(cursor, begin):
        return
    while cursor.key() < end:
        if not cursor.delete():  # deletes and moves to the next key
            break
        if not cursor.key():  # past the last key
            break


class LmdbTransaction(Transaction):
    """A view of one LMDB transaction, enforcing FoundationDB's limits."""

    declares_conflicts = False  # writers are serialized: conflict ranges would be dead work

    __slots__ = (
        "_txn",
        "_cursor",
        "_writable",
        "_written",
        "_writes",
        "_deadline",
        "_log",
        "_rounds",
        "batched_reads",
    )

    def __init__(
        self,
        txn: lmdb.Transaction,
        writable: bool,
        deadline: float,
        log: list[redo.Write] | None = None,
        batched_reads: bool = False,
    ) -> None:
        self.batched_reads = batched_reads  # reads cost nothing here; true only to test that code path
        self._txn = txn
        self._cursor = txn.cursor()
        self._writable = writable
        self._written = 0  # bytes of keys and values written (StoreStats.bytes_written)
        self._writes = 0
        self._deadline = deadline
        self._log = log  # the writes made, for the redo log (None: not logged)
        self._rounds = ReadRounds()

    # -- reads ---------------------------------------------------------------------------

    @property
    def snapshot(self) -> LmdbTransaction:
        return self  # writers are serialized: there is nothing to conflict with

    @property
    def rounds(self) -> ReadRounds:
        return self._rounds

    def get(self, key: bytes) -> bytes | None:
        rounds = self._rounds
        rounds.count += 1
        rounds.reads += 1
        return self._get(key)

    def get_async(self, key: bytes) -> Answered[bytes | None]:
        return Answered(self._get(key), self._rounds)

    def _get(self, key: bytes) -> bytes | None:
        if not key or len(key) > _LMDB_MAX_KEY:
            return None  # such keys cannot be stored here (and LMDB rejects them as lookup keys)
        return self._txn.get(key)

    def get_range(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> list[KeyValue]:
        rounds = self._rounds
        rounds.count += 1
        rounds.reads += 1
        return self._get_range(begin, end, limit, reverse)

    def get_range_async(
        self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False
    ) -> Answered[list[KeyValue]]:
        return Answered(self._get_range(begin, end, limit, reverse), self._rounds)

    def _get_range(self, begin: bytes, end: bytes, limit: int, reverse: bool) -> list[KeyValue]:
        if time.monotonic() > self._deadline:
            self._timed_out()
        cursor = self._cursor
        out: list[KeyValue] = []
        if begin >= end:
            return out
        if not reverse:
            if not _seek(cursor, begin):
                return out
            for item in cursor.iternext():
                if item[0] >= end:
                    break
                out.append(item)
                if len(out) == limit:
                    break
                if not len(out) & _DEADLINE_EVERY and time.monotonic() > self._deadline:
                    self._timed_out()  # a long read checks the limit as it goes, not only at its start
        else:
            if _seek(cursor, end):
                if not cursor.prev():
                    return out
            elif not cursor.last():
                return out
            for item in cursor.iterprev():
                if item[0] < begin:
                    break
                out.append(item)
                if len(out) == limit:
                    break
                if not len(out) & _DEADLINE_EVERY and time.monotonic() > self._deadline:
                    self._timed_out()
        return out

    def last_keys(self, requests: Sequence[tuple[bytes, bytes]]) -> list[bytes | None]:
        self._rounds.count += 1
        self._rounds.reads += len(requests)
        cursor = self._cursor
        out: list[bytes | None] = []
        for begin, end in requests:
            moved = cursor.prev() if _seek(cursor, end) else cursor.last()
            key = cursor.key() if moved else b""
            out.append(key if moved and begin <= key < end else None)
        return out

    # -- writes --------------------------------------------------------------------------

    def _check_write(self, key: bytes, size: int) -> None:
        total = len(key) + size
        if 0 < len(key) <= _LMDB_MAX_KEY and self._writable and self._written + total <= MAX_TRANSACTION_BYTES:
            self._written += total  # the common case in one test: every write comes through here
            self._writes += 1
            return
        if not key:
            raise KeyTooLarge("the embedded (LMDB) store cannot hold the empty key")
        if len(key) > _LMDB_MAX_KEY:
            if len(key) > MAX_KEY_SIZE:
                raise KeyTooLarge(f"key of {len(key)} bytes exceeds FoundationDB's limit of {MAX_KEY_SIZE}")
            raise KeyTooLarge(
                f"key of {len(key)} bytes exceeds the embedded (LMDB) store's limit of {_LMDB_MAX_KEY} bytes"
            )
        self._account(len(key) + size)

    def _account(self, size: int) -> None:
        if not self._writable:
            raise ReadOnlyTransaction("this transaction was opened with Database.read and cannot write")
        self._written += size
        self._writes += 1
        if self._written > MAX_TRANSACTION_BYTES:
            raise TransactionTooLarge(
                f"transaction wrote {self._written} bytes, more than FoundationDB's limit of "
                f"{MAX_TRANSACTION_BYTES}; split the work into smaller transactions"
            )
        # The 5 s limit is checked by range reads, which every operation of any length makes.

    def add_stats(self, stats: StoreStats) -> None:
        """Add this transaction's reads and writes to ``stats``."""
        rounds = self._rounds
        stats.add(
            transactions=1,
            read_rounds=rounds.count,
            reads=rounds.reads,
            writes=self._writes,
            bytes_written=self._written,
        )

    def _timed_out(self) -> None:
        raise TransactionTimedOut(
            "transaction ran longer than FoundationDB's 5 second limit; split the work into smaller transactions"
        )

    def set(self, key: bytes, value: bytes) -> None:
        if len(value) > MAX_VALUE_SIZE:
            raise ValueTooLarge(f"value of {len(value)} bytes exceeds FoundationDB's limit of {MAX_VALUE_SIZE}")
        self._check_write(key, len(value))
        self._txn.put(key, value)
        if self._log is not None:
            self._log.append((redo.SET, key, value))

    def set_many(self, pairs: Sequence[KeyValue]) -> None:
        # One C call for the lot (py-lmdb's putmulti): a Python call per key costs more than LMDB's put.
        keys = sum(len(key) for key, _ in pairs)
        values = sum(len(value) for _, value in pairs)
        if (
            not self._writable
            or self._written + keys + values > MAX_TRANSACTION_BYTES
            or max((len(value) for _, value in pairs), default=0) > MAX_VALUE_SIZE
            or not all(0 < len(key) <= _LMDB_MAX_KEY for key, _ in pairs)
        ):
            super().set_many(pairs)  # raises the error set() gives, on the pair that has it
            return
        self._written += keys + values
        self._writes += len(pairs)
        self._cursor.putmulti(pairs)
        if self._log is not None:
            self._log.extend((redo.SET, key, value) for key, value in pairs)

    def clear(self, key: bytes) -> None:
        if not key or len(key) > _LMDB_MAX_KEY:
            # No such key can be stored here, so there is nothing to clear; FoundationDB likewise
            # ignores clears of keys longer than its limit instead of failing.
            self._account(0)
            return
        self._check_write(key, 0)
        if self._txn.delete(key) and self._log is not None:
            self._log.append((redo.CLEAR, key, b""))

    def clear_range(self, begin: bytes, end: bytes) -> None:
        if begin > end:
            raise InvertedRange(f"clear_range begin {begin!r} is after end {end!r}")
        self._account(len(begin) + len(end))
        # No stored key is longer than LMDB's limit, so cut bounds select the same keys (and
        # fit the redo log's records).
        begin, end = begin[: _LMDB_MAX_KEY + 1], end[: _LMDB_MAX_KEY + 1]
        started = time.monotonic()
        _clear_range(self._cursor, begin, end)
        if self._log is not None:
            self._log.append((redo.CLEAR_RANGE, begin, end))
        # FoundationDB clears a range in constant time; don't charge LMDB's per-key work.
        self._deadline += time.monotonic() - started

    def _mutate(self, key: bytes, param: bytes, op: Callable[[bytes | None, bytes], bytes]) -> None:
        if len(param) > MAX_VALUE_SIZE:
            raise ValueTooLarge(f"operand of {len(param)} bytes exceeds FoundationDB's limit of {MAX_VALUE_SIZE}")
        self._check_write(key, len(param))
        old = self._txn.get(key)
        new = op(old, param)
        if new != old:  # rewriting an equal value would still copy its page and the path to it
            self._txn.put(key, new)
            if self._log is not None:
                self._log.append((redo.SET, key, new))

    def add(self, key: bytes, param: bytes) -> None:
        self._mutate(key, param, apply_add)

    def max(self, key: bytes, param: bytes) -> None:
        self._mutate(key, param, apply_max)

    def min(self, key: bytes, param: bytes) -> None:
        self._mutate(key, param, apply_min)

    def add_read_conflict_range(self, begin: bytes, end: bytes) -> None:
        pass  # writers are serialized: no conflicts to declare


_LMDB_MAX_KEY = 511


def _seek(cursor: lmdb.Cursor, key: bytes) -> bool:
    """Position ``cursor`` at the first key >= ``key``; False if there is none."""
    if len(key) <= _LMDB_MAX_KEY:
        return cursor.set_range(key)
    # Stored keys are at most 511 bytes, so the only one between key[:511] and key is key[:511].
    if not cursor.set_range(key[:_LMDB_MAX_KEY]):
        return False
    return cursor.next() if cursor.key() == key[:_LMDB_MAX_KEY] else True


class _Pending:
    __slots__ = ("fn", "args", "kwargs", "done", "result", "error")

    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None


class _Together:
    """A ``commit_together`` block's transaction, its redo-log writes, and the calls it kept."""

    __slots__ = ("txn", "writes", "kept")

    def __init__(self, txn: lmdb.Transaction, writes: list[redo.Write] | None) -> None:
        self.txn = txn
        self.writes = writes
        self.kept = 0  # calls of the block that returned (their writes are in txn)


class LmdbDatabase(Database):
    """An LMDB environment in a directory; see the module docstring for the guarantees."""

    def __init__(
        self,
        path: str,
        *,
        durable: bool = True,
        group_commit: bool = True,
        map_size: int = DEFAULT_MAP_SIZE,
        transaction_seconds: float = DEFAULT_TRANSACTION_SECONDS,
        redo_log: bool | None = None,
        checkpoint_seconds: float = redo.DEFAULT_CHECKPOINT_SECONDS,
        log_segment_bytes: int = redo.DEFAULT_SEGMENT_BYTES,
        batched_reads: bool = False,
    ) -> None:
        if not durable and redo_log is None:
            redo_log = False
        if redo_log and not durable:
            raise ValueError("redo_log=True makes commits durable through a log: it cannot go with durable=False")
        if not checkpoint_seconds > 0:
            raise ValueError(f"checkpoint_seconds must be positive, not {checkpoint_seconds}")
        if log_segment_bytes < redo.MIN_SEGMENT_BYTES:
            raise ValueError(f"log_segment_bytes must be at least {redo.MIN_SEGMENT_BYTES}, not {log_segment_bytes}")
        self.path = path
        self.url = f"lmdb:{path}"
        self.durable = durable
        self.group_commit = group_commit
        self.batched_reads = batched_reads
        self._transaction_seconds = transaction_seconds if transaction_seconds > 0 else float("inf")
        self._shared = _Env.acquire(path, durable, map_size, redo_log, checkpoint_seconds, log_segment_bytes)
        self._env = self._shared.env
        self.redo_log = self._shared.log  # this process's RedoLog (its counters), or None
        self.shared_by_processes = True  # other processes may open it too, in the same mode
        self._queue: deque[_Pending] = deque()
        self._queue_lock = threading.Lock()
        self._turn = threading.Condition()  # guards _leading: one leader runs batches at a time
        self._leading = False
        self._contended = -_CONTENTION_SECONDS  # when a call last queued behind a running leader
        self._closed = False
        self._local = threading.local()  # .together: this thread's commit_together block, if any
        self.commits = 0  # durable commits made, for measuring group commit
        self.stats = StoreStats()
        self.on_commit: Callable[[int], object] | None = None  # told each commit's transaction count

    @property
    def commits_together(self) -> bool:  # type: ignore[override]
        return self.group_commit  # without group commit, each transaction is to commit on its own

    def _deadline(self) -> float:
        return time.monotonic() + self._transaction_seconds

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        pending = _Pending(fn, args, kwargs)
        together: _Together | None = getattr(self._local, "together", None)
        if together is not None:  # inside this thread's commit_together block: run now, commit with it
            self._execute(pending, together.txn, True, together.writes)
            if pending.error is not None:
                raise pending.error
            together.kept += 1
            return pending.result
        with self._queue_lock:  # close() fails what is queued under this lock, after marking closed
            self._check_open()
            self._queue.append(pending)
            if self._leading:  # read unlocked: a hint for the leader, not a guarantee
                self._contended = time.monotonic()
        try:
            while True:
                with self._turn:
                    # Callers whose work a leader already committed return without queueing for
                    # the leadership; one caller still waiting becomes the next leader.
                    while self._leading and not pending.done:
                        self._turn.wait()
                    if pending.done:
                        break
                    self._leading = True
                try:
                    self._run_batch()
                finally:
                    with self._turn:
                        self._leading = False
                        self._turn.notify_all()
        except BaseException as exc:
            # This caller gets an error (its batch's, or an interrupt): a call of its own still
            # queued must not run later.  One a leader already took is running or ran.
            with self._queue_lock:
                if not pending.done and pending in self._queue:
                    self._queue.remove(pending)
                    pending.error, pending.done = exc, True
            raise
        if pending.error is not None:
            raise pending.error
        return pending.result

    def _take(self) -> list[_Pending]:
        with self._queue_lock:
            if not self.group_commit:
                return [self._queue.popleft()] if self._queue else []
            batch = list(self._queue)
            self._queue.clear()
            return batch

    def _run_batch(self) -> None:
        """Run queued functions in one write transaction and commit once.

        Callers wake from the previous fsync one at a time (each needs the GIL to queue its next
        call), so while writers contend the leader does not commit as soon as its first functions
        ran: it yields the GIL and takes what queued meanwhile, until a round finds nothing new (or
        the batch is full), and only then pays the fsync.  A lone writer (no call has queued behind
        a leader for ``_CONTENTION_SECONDS``) commits at once: its yield would only hand the GIL to
        other threads and wait to get it back, 0.1-0.2 ms of CPU and more of latency per write.
        """
        batch = self._take()
        if not batch:
            return
        try:
            txn = self._env.begin(write=True)
        except BaseException as exc:
            for pending in batch:
                pending.error, pending.done = exc, True
            raise
        writes: list[redo.Write] | None = [] if self.redo_log is not None else None
        txnid = txn.id()
        try:
            if len(batch) == 1:  # a lone caller pays no nesting; if it fails, abort and stop here
                self._execute(batch[0], txn, False, writes)
                if batch[0].error is not None:
                    txn.abort()
                    return
            else:
                for pending in batch:
                    self._execute(pending, txn, True, writes)
            contended = time.monotonic() - self._contended < _CONTENTION_SECONDS
            while contended and self.group_commit and self.durable and len(batch) < _MAX_BATCH:
                time.sleep(0)  # let woken callers queue their next call
                more = self._take()
                if not more:
                    break
                for pending in more:
                    self._execute(pending, txn, True, writes)
                batch.extend(more)
            self._commit(txn, writes, sum(1 for p in batch if p.error is None))
        except BaseException as exc:
            if redo.committed(self._env, txnid):  # an interrupt after the commit: every result stands
                raise
            txn.abort()  # nothing in the batch was kept
            for pending in batch:
                if pending.error is None:
                    pending.error = self._full() if isinstance(exc, lmdb.MapFullError) else exc
        finally:
            for pending in batch:
                pending.done = True

    def _commit(self, txn: lmdb.Transaction, writes: list[redo.Write] | None, kept: int) -> None:
        """Commit ``txn``, holding ``kept`` logical transactions (abort it if that is none)."""
        if not kept:
            txn.abort()
            return
        if writes:  # logged and synced before LMDB commits: no reader sees a write a crash could undo
            self.redo_log.commit(txn, writes)  # type: ignore[union-attr]
        else:
            txn.commit()
        self.commits += 1
        self.stats.add(commits=1)
        if self.on_commit is not None:
            self.on_commit(kept)

    def commit_together(self) -> contextlib.AbstractContextManager[None]:
        """Make this thread's ``run`` calls inside the block share one write transaction, committed
        (and synced) once as the block ends, with the calls other threads queued meanwhile (each
        commits on its own without group commit: see ``_together``)."""
        return self._together() if self.group_commit else contextlib.nullcontext()

    @contextlib.contextmanager
    def _together(self) -> Iterator[None]:
        """The ``commit_together`` block of a store with group commit.

        For a server that runs many callers' writes on one thread: one commit and one thread
        hand-off for all of them instead of a thread and a wake-up each.  Each ``run`` in the block
        runs at once in a nested transaction of its own: one that raises is rolled back alone and
        raises to its caller; one that returns returns its result at once, but what it wrote is
        durable (and seen by other transactions) only once the block has ended without an
        exception.  A failed commit raises as the block ends, and nothing the block ran is kept;
        so does an exception raised out of the block.
        """
        with self._turn:
            while self._leading and not self._closed:
                self._turn.wait()
            self._check_open()
            self._leading = True
        try:
            txn = self._env.begin(write=True)
            together = _Together(txn, [] if self.redo_log is not None else None)
            txnid = txn.id()
            queued: list[_Pending] = []
            try:
                self._local.together = together
                try:
                    yield
                finally:
                    self._local.together = None
                queued = self._take()
                for pending in queued:
                    self._execute(pending, txn, True, together.writes)
                self._commit(txn, together.writes, together.kept + sum(1 for p in queued if p.error is None))
            except BaseException as exc:
                if redo.committed(self._env, txnid):  # an interrupt after the commit: every result stands
                    raise
                txn.abort()
                for pending in queued:
                    if pending.error is None:
                        pending.error = exc
                raise
            finally:
                for pending in queued:
                    pending.done = True
        finally:
            with self._turn:
                self._leading = False
                self._turn.notify_all()

    def _execute(
        self, pending: _Pending, parent: lmdb.Transaction, nested: bool, writes: list[redo.Write] | None
    ) -> None:
        """Run one function; a nested transaction's writes join ``writes`` only if it succeeds."""
        txn = self._env.begin(write=True, parent=parent) if nested else parent
        own = [] if nested and writes is not None else writes
        tr = LmdbTransaction(txn, True, self._deadline(), own, self.batched_reads)
        try:
            pending.result = pending.fn(tr, *pending.args, **pending.kwargs)
        except BaseException as exc:
            pending.error = self._full() if isinstance(exc, lmdb.MapFullError) else exc
            if nested:
                txn.abort()
            return
        finally:
            tr.add_stats(self.stats)
        if nested:
            txn.commit()
            if writes is not None:
                writes.extend(own)  # type: ignore[arg-type]

    def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self._check_open()
        txn = self._env.begin(write=False)
        tr = LmdbTransaction(txn, False, self._deadline(), batched_reads=self.batched_reads)
        try:
            return fn(tr, *args, **kwargs)
        finally:
            txn.abort()
            tr.add_stats(self.stats)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"database {self.url} is closed")

    def close(self) -> None:
        """Close after the running batch; calls still queued fail with StoreError."""
        with self._turn:
            while self._leading and not self._closed:
                self._turn.wait()
            if self._closed:
                return
            self._closed = True
            self._leading = True  # no batch may start on a closed environment
            with self._queue_lock:
                for pending in self._queue:
                    pending.error, pending.done = StoreError(f"database {self.url} was closed"), True
                self._queue.clear()
            self._shared.release()
            self._turn.notify_all()

    def disk_usage(self) -> int:
        """Bytes of the LMDB data file up to its last page (free pages kept for reuse included)."""
        info = self._env.info()
        return (info["last_pgno"] + 1) * self._env.stat()["psize"]

    def map_size(self) -> int:
        """The environment's map size: the largest the data file may grow."""
        return self._env.info()["map_size"]

    def room(self) -> tuple[int, str]:
        """Bytes the data file may still grow by: to the map size, or as the disk allows."""
        in_map = self.map_size() - self.disk_usage()
        on_disk = shutil.disk_usage(self.path).free
        if in_map <= on_disk:
            return in_map, f"the map size of {self.map_size():,} bytes (URL option map_size)"
        return on_disk, f"the free space of the disk holding {self.path}"

    def _full(self) -> StoreFull:
        size = self.map_size()
        return StoreFull(
            f"the embedded store {self.path} is full: its data file ({self.disk_usage():,} bytes) reached its "
            f"map size ({size:,} bytes); reopen it with a larger one (URL option map_size={2 * size}), or free "
            "room (expire windows, trim entries, drop indexes)"
        )

    @property
    def closed(self) -> bool:
        return self._closed

    def tree_bytes(self) -> int:
        """Bytes of the pages that hold data (branch, leaf and overflow pages): the live B-tree."""
        stat = self._env.stat()
        return (stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]) * stat["psize"]


def open_lmdb(path: str, options: dict[str, str]) -> LmdbDatabase:
    """Open from URL options: durable, group_commit, redo_log (default: the log when durable, as the
    module docstring says), batched_reads
    (booleans), map_size, transaction_seconds, checkpoint_seconds, log_segment_bytes."""
    known = {
        "durable",
        "group_commit",
        "redo_log",
        "map_size",
        "transaction_seconds",
        "checkpoint_seconds",
        "log_segment_bytes",
        "batched_reads",
    }
    unknown = set(options) - known
    if unknown:
        raise ValueError(f"unknown lmdb option(s) {sorted(unknown)}; known: {sorted(known)}")
    return LmdbDatabase(
        path,
        durable=option_boolean(options.get("durable", "true"), "durable"),
        group_commit=option_boolean(options.get("group_commit", "true"), "group_commit"),
        map_size=int(options.get("map_size", DEFAULT_MAP_SIZE)),
        transaction_seconds=float(options.get("transaction_seconds", DEFAULT_TRANSACTION_SECONDS)),
        redo_log=option_boolean(options["redo_log"], "redo_log") if "redo_log" in options else None,
        checkpoint_seconds=float(options.get("checkpoint_seconds", redo.DEFAULT_CHECKPOINT_SECONDS)),
        log_segment_bytes=int(options.get("log_segment_bytes", redo.DEFAULT_SEGMENT_BYTES)),
        batched_reads=option_boolean(options.get("batched_reads", "false"), "batched_reads"),
    )


__all__ = ["LmdbDatabase", "LmdbTransaction", "open_lmdb"]
