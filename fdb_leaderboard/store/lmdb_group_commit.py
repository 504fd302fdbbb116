"""Group commit on LMDB: callers' functions queued, one leader running them in one write
transaction (each nested, rolled back alone) and committing once for all; ``commit_together``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import lmdb

from . import redo_log as redo
from .lmdb_transactions import LmdbTransaction

T = TypeVar("T")

_MAX_BATCH = 64  # logical transactions sharing one commit
# A leader waits for more calls to join its batch only if one queued behind a leader this recently.
_CONTENTION_SECONDS = 0.05


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


class GroupCommit:
    """The write path of :class:`~.lmdb_backend.LmdbDatabase`: ``run`` and ``commit_together``."""

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
