"""LMDB transactions as the store's: reads on a snapshot, writes checked against FoundationDB's
limits (and LMDB's stricter key limit), their time limit, and the redo log's record of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

import lmdb

from . import redo_log as redo
from .api import (
    MAX_KEY_SIZE,
    MAX_TRANSACTION_BYTES,
    MAX_VALUE_SIZE,
    Answered,
    InvertedRange,
    KeyTooLarge,
    KeyValue,
    ReadOnlyTransaction,
    ReadRounds,
    StoreStats,
    Transaction,
    TransactionTimedOut,
    TransactionTooLarge,
    ValueTooLarge,
    apply_add,
    apply_max,
    apply_min,
)

_DEADLINE_EVERY = 1023  # a range read checks the transaction's time limit every 1024 keys


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
