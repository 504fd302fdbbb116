"""Blind writes on FoundationDB: a bulk write in small transactions, many in flight at once,
each checked against its fences.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from .api import (
    BlindWrites,
    KeyValue,
    StoreError,
)
from .fdb_binding import _LIMIT_ERRORS, _TRANSACTION_TIMED_OUT, _fdb_direct

# The database, whose module imports this one: typed loosely here.
FdbDatabase = Any

# FoundationDB's advice for bulk loads: transactions of about 10 kB of writes, about 50 of them in
# flight per client process.
BLIND_CHUNK_BYTES = 10_000
BLIND_IN_FLIGHT = 50
_FENCE_READS_AHEAD = 16  # chunks written before the oldest one's fence read is waited for


class PipelinedBlindWrites(BlindWrites):
    """:class:`BlindWrites` on FoundationDB: each chunk a transaction of its own, committed while
    the next ones are written, up to ``in_flight`` commits outstanding (the oldest is waited for
    before another starts).  A chunk's writes are sets, so a retryable error or an unknown commit
    result writes it again in a new attempt of the same transaction; the store's ``timeout``
    bounds each, retries included.  With fences, a chunk's reads of the fence keys are issued with
    its writes and waited for a few chunks later, just before its commit (a conflict on such a key,
    which another process changed, then retries it and finds so)."""

    def __init__(
        self,
        db: FdbDatabase,
        chunk_bytes: int = BLIND_CHUNK_BYTES,
        in_flight: int = BLIND_IN_FLIGHT,
        fences: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        super().__init__(db, chunk_bytes, fences)
        self.fdb_db = db
        self.in_flight = in_flight
        self._written: deque[tuple[Any, list[KeyValue], list[Any]]] = deque()  # (tr, chunk, fence reads)
        self._committing: deque[tuple[Any, list[KeyValue], Any]] = deque()  # (tr, chunk, commit)

    def _commit(self, chunk: list[KeyValue]) -> None:
        if self.fdb_db._db is None:
            raise StoreError(f"database {self.fdb_db.url} is closed")
        tr = self.fdb_db._db.create_transaction()
        tr.options.set_timeout(self.fdb_db._timeout_ms)
        self._written.append((tr, chunk, self._write(tr, chunk)))
        if len(self._written) > _FENCE_READS_AHEAD:
            self._start_commit(*self._written.popleft())
        while len(self._committing) >= self.in_flight:
            self._settle(*self._committing.popleft())

    def _write(self, tr: Any, chunk: list[KeyValue]) -> list[Any]:
        """Issue the fence keys' reads and write ``chunk`` in ``tr``; the reads' futures."""
        fences = [tr.get(key) for key, _ in self.fences]
        writer = _fdb_direct.Transaction(tr) if self.fdb_db.direct else tr
        for key, value in chunk:
            writer.set(key, value)
        return fences

    def _start_commit(self, tr: Any, chunk: list[KeyValue], fences: list[Any]) -> None:
        commit = self._checked_commit(tr, fences)
        self._committing.append((tr, chunk, commit))

    def _checked_commit(self, tr: Any, fences: list[Any]) -> Any:
        if fences:
            found = [read.wait() for read in fences]
            self.check_fences([bytes(value) if value.present() else None for value in found])
        return tr.commit()

    def _settle(self, tr: Any, chunk: list[KeyValue], commit: Any) -> None:
        fdb, retries = self.fdb_db._fdb, 0
        while True:
            try:
                commit.wait()
                break
            except fdb.FDBError as error:
                mapped = _LIMIT_ERRORS.get(error.code)
                if mapped is not None:
                    raise mapped(f"FoundationDB error {error.code}: {error.description}") from error
                try:
                    if error.code == _TRANSACTION_TIMED_OUT:
                        raise
                    tr.on_error(error).wait()  # raises when the error is not retryable
                except fdb.FDBError as final:
                    if final.code == _TRANSACTION_TIMED_OUT:
                        raise self.fdb_db._timed_out(True, self.fdb_db._timeout_ms, False, False) from final
                    raise
                retries += 1
                commit = self._checked_commit(tr, self._write(tr, chunk))
        size = sum(len(key) + len(value) for key, value in chunk)
        self.fdb_db.stats.add(transactions=1, commits=1, retries=retries, writes=len(chunk), bytes_written=size)

    def flush(self) -> None:
        super().flush()
        while self._written:
            self._start_commit(*self._written.popleft())
        while self._committing:
            self._settle(*self._committing.popleft())
