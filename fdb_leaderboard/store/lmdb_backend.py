"""The embedded backend: LMDB, durable, safe for several processes on one machine.

This module holds the database (opening, reads, closing, room) and open_lmdb; the environment
shared per process is ``lmdb_environment.py``'s, transactions ``lmdb_transactions.py``'s and
group commit ``lmdb_group_commit.py``'s.

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

import shutil
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from . import redo_log as redo
from .api import (
    Database,
    StoreError,
    StoreFull,
    StoreStats,
    option_boolean,
)
from .lmdb_environment import _Env
from .lmdb_group_commit import _CONTENTION_SECONDS, GroupCommit, _Pending
from .lmdb_transactions import LmdbTransaction

T = TypeVar("T")

DEFAULT_MAP_SIZE = 1 << 40  # address space only; the file grows as data is written
DEFAULT_TRANSACTION_SECONDS = 5.0


class LmdbDatabase(GroupCommit, Database):
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
