"""FoundationDB transactions as the store's: reads (through the binding or the direct calls),
their futures counted in read rounds, and writes checked against FoundationDB's limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .api import (
    METADATA_VERSION_KEY,
    CountedRead,
    KeyValue,
    ReadOnlyTransaction,
    ReadRounds,
    ReadView,
    Transaction,
)
from .fdb_binding import _fdb_direct


class _ValueFuture(CountedRead[bytes | None]):
    """A point read in flight."""

    __slots__ = ("_future",)

    def __init__(self, future: Any, rounds: ReadRounds) -> None:
        super().__init__(rounds)
        self._future = future

    def _answer(self) -> bytes | None:
        return self._future.value


class _RangeFuture(CountedRead[list[KeyValue]]):
    """A range read in flight (the bindings' FDBRange sends its first request when made)."""

    __slots__ = ("_range",)

    def __init__(self, fetched: Any, rounds: ReadRounds) -> None:
        super().__init__(rounds)
        self._range = fetched

    def _answer(self) -> list[KeyValue]:
        return [(kv.key, kv.value) for kv in self._range]


class _DirectFuture(CountedRead[Any]):
    """A read in flight through ``_fdb_direct``: its ``wait`` gives the answer as the store API has it."""

    __slots__ = ("_future",)

    def __init__(self, future: Any, rounds: ReadRounds) -> None:
        super().__init__(rounds)
        self._future = future

    def _answer(self) -> Any:
        return self._future.wait()


class _Reads(ReadView):
    """Reads counted in a transaction's :class:`ReadRounds`: the plain forms wait on the async ones."""

    __slots__ = ()

    batched_reads = True
    _rounds: ReadRounds

    @property
    def rounds(self) -> ReadRounds:
        return self._rounds

    def get(self, key: bytes) -> bytes | None:
        return self.get_async(key).value

    def get_range(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> list[KeyValue]:
        return self.get_range_async(begin, end, limit, reverse).value


# FoundationDB's greatest row limit: a larger one (a batch size a caller may send, up to 2**32 - 1)
# asks for no fewer rows than any range holds in one transaction.
_MAX_LIMIT = 2**31 - 1


class _FdbReads(_Reads):
    """Reads through an fdb transaction or its ``snapshot``."""

    __slots__ = ("_tr", "_fdb", "_rounds")

    def __init__(self, tr: Any, fdb: Any, rounds: ReadRounds) -> None:
        self._tr = tr
        self._fdb = fdb
        self._rounds = rounds

    def get_async(self, key: bytes) -> _ValueFuture:
        return _ValueFuture(self._tr.get(key), self._rounds)

    def get_range_async(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> _RangeFuture:
        limit = min(limit, _MAX_LIMIT)
        mode = self._fdb.StreamingMode.exact if limit else self._fdb.StreamingMode.want_all
        fetched = self._tr.get_range(begin, end, limit=limit, reverse=reverse, streaming_mode=mode)
        return _RangeFuture(fetched, self._rounds)


class _DirectReads(_Reads):
    """Reads through ``_fdb_direct`` (plain, or snapshot reads): the same requests as :class:`_FdbReads`."""

    __slots__ = ("_direct", "_is_snapshot", "_rounds")

    def __init__(self, direct: Any, snapshot: bool, rounds: ReadRounds) -> None:
        self._direct = direct
        self._is_snapshot = snapshot
        self._rounds = rounds

    def get_async(self, key: bytes) -> _DirectFuture:
        return _DirectFuture(self._direct.get(key, self._is_snapshot), self._rounds)

    def get_range_async(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> _DirectFuture:
        limit = min(limit, _MAX_LIMIT)
        return _DirectFuture(self._direct.get_range(begin, end, limit, reverse, self._is_snapshot), self._rounds)


# The parameter of SET_VERSIONSTAMPED_VALUE that makes a value of the commit's versionstamp
# alone: 10 bytes it replaces, then the little-endian offset where it goes (API 520 and later).
_STAMP_ONLY = b"\x00" * 14


class _Writes(Transaction):
    """The writes of one attempt, through ``_writer`` (the binding's transaction, or
    ``_fdb_direct``'s on it: both offer these methods), with the counts StoreStats sums."""

    _writer: Any
    _binding: Any  # the binding's transaction (for the calls _fdb_direct does not make)
    _writable: bool
    writes: int
    bytes_written: int
    clears_ranges_at_once = True  # a range clear is one mutation, whatever it holds
    _stamp: Any = None  # the metadata version's read, once issued
    metadata_changed = False

    def changed_metadata(self) -> None:
        self._write(len(METADATA_VERSION_KEY) + len(_STAMP_ONLY))
        self.metadata_changed = True
        self._binding.set_versionstamped_value(METADATA_VERSION_KEY, _STAMP_ONLY)

    def metadata_stamp(self) -> Any:
        if self.metadata_changed:  # FoundationDB refuses to read it after this transaction set it
            return None
        if self._stamp is None:
            self._stamp = self.snapshot.get_async(METADATA_VERSION_KEY)
        return self._stamp

    def _write(self, size: int) -> None:
        if not self._writable:
            raise ReadOnlyTransaction("this transaction was opened with Database.read and cannot write")
        self.writes += 1
        self.bytes_written += size

    def set(self, key: bytes, value: bytes) -> None:
        self._write(len(key) + len(value))
        self._writer.set(key, value)

    def clear(self, key: bytes) -> None:
        self._write(len(key))
        self._writer.clear(key)

    def clear_range(self, begin: bytes, end: bytes) -> None:
        self._write(len(begin) + len(end))
        self._writer.clear_range(begin, end)

    def add(self, key: bytes, param: bytes) -> None:
        self._write(len(key) + len(param))
        self._writer.add(key, param)

    def max(self, key: bytes, param: bytes) -> None:
        self._write(len(key) + len(param))
        self._writer.max(key, param)

    def min(self, key: bytes, param: bytes) -> None:
        self._write(len(key) + len(param))
        self._writer.min(key, param)

    def add_read_conflict_range(self, begin: bytes, end: bytes) -> None:
        self._writer.add_read_conflict_range(begin, end)


class FdbTransaction(_FdbReads, _Writes):
    """One attempt of a transaction, through the binding."""

    __slots__ = ("_snapshot", "_writer", "_binding", "_writable", "writes", "bytes_written")

    def __init__(self, tr: Any, fdb: Any, writable: bool) -> None:
        rounds = ReadRounds()
        super().__init__(tr, fdb, rounds)
        self._snapshot = _FdbReads(tr.snapshot, fdb, rounds)
        self._writer = self._binding = tr
        self._writable = writable
        self.writes = 0
        self.bytes_written = 0

    @property
    def snapshot(self) -> ReadView:
        return self._snapshot


class DirectFdbTransaction(_DirectReads, _Writes):
    """One attempt of a transaction, through ``_fdb_direct`` on the binding's transaction."""

    __slots__ = ("_snapshot", "_writer", "_binding", "_writable", "writes", "bytes_written")

    def __init__(self, tr: Any, writable: bool) -> None:
        rounds = ReadRounds()
        direct = _fdb_direct.Transaction(tr)
        super().__init__(direct, False, rounds)
        self._snapshot = _DirectReads(direct, True, rounds)
        self._writer = direct
        self._binding = tr
        self._writable = writable
        self.writes = 0
        self.bytes_written = 0

    @property
    def snapshot(self) -> ReadView:
        return self._snapshot

    def add_read_conflict_ranges(self, ranges: Sequence[tuple[bytes, bytes]]) -> None:
        self._writer.add_read_conflict_ranges(ranges)


# Errors after which a commit may or may not have happened (commit_unknown_result,
# transaction_timed_out, cluster_version_changed): the retry must find out before redoing it.
# A timed-out call is not retried (its ``timeout`` is spent) but still records the attempt,
# so its StoreUnavailable can say whether the write may have committed.
