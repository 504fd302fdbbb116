"""Store operations per operation: a counting proxy around the store, and the cost model on top.

:class:`CountingDatabase` runs every transaction of a store through a
:class:`CountingTransaction`, which counts each kind of call (and the rows range reads return)
before passing it on.  With ``rollback`` each write transaction is aborted after its body
returns, so writes can be counted without changing the data.  :func:`per_op_counts` averages
the counts over the operations made; :func:`op_totals` sums them into gets, ranges, rows,
atomic operations and store operations in all; :func:`modelled_us` prices them with raw
per-operation costs measured on the same store (:mod:`bench.rawstore`): the store-bound cost
of one operation.

:class:`StoreCounters` reads a store's own counters (``Database.stats``: read rounds, reads,
writes, bytes written, commits, retries, conflicts) around a timed run, per call, with the CPU
time it took: the calling process's (every thread, FoundationDB's network thread included) and,
on a FoundationDB cluster whose processes run on this machine, the ``fdbserver`` processes'
(``/proc``), in microseconds per call (``client_cpu_us``, ``server_cpu_us``).  The
counting proxy also tells which reads add read conflict ranges on FoundationDB: every read not
made through ``tr.snapshot`` adds one (``conflict_reads``), as does each explicit
``add_read_conflict_range``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from fdb_leaderboard.store import Database, KeyValue, ReadView, Transaction
from fdb_leaderboard.store.api import Future, RangeRequest, ReadRounds
from fdb_leaderboard.store.fdb_backend import FdbDatabase

from .cpu import CpuMeter, fdbserver_pids

T = TypeVar("T")


class CountingTransaction(Transaction):
    """Delegates to a store transaction, counting each kind of call in ``counts``.

    Keys: get, get_many (calls) and get_many_keys, get_range (calls), get_ranges (calls) and
    get_ranges_ranges, set, clear, clear_range, add, max, min, conflict_range; for every
    range read, forward_ranges / reverse_ranges, forward_rows / reverse_rows and
    forward_extra_rows / reverse_extra_rows (rows beyond the first); and conflict_reads, the
    keys and ranges read outside ``snapshot`` (each a read conflict range on FoundationDB).
    """

    def __init__(self, inner: ReadView, counts: Counter[str], snapshot: bool = False) -> None:
        self._inner = inner
        self.counts = counts
        self._conflicts = "snapshot_reads" if snapshot else "conflict_reads"

    @property
    def snapshot(self) -> CountingTransaction:
        inner = self._inner
        return CountingTransaction(inner.snapshot if isinstance(inner, Transaction) else inner, self.counts, True)

    def _ranged(self, rows: list[KeyValue], reverse: bool) -> None:
        way = "reverse" if reverse else "forward"
        self.counts[f"{way}_ranges"] += 1
        self.counts[f"{way}_rows"] += len(rows)
        self.counts[f"{way}_extra_rows"] += max(0, len(rows) - 1)

    def get(self, key: bytes) -> bytes | None:
        self.counts["get"] += 1
        self.counts[self._conflicts] += 1
        return self._inner.get(key)

    def get_async(self, key: bytes) -> Future[bytes | None]:
        self.counts["get"] += 1
        self.counts[self._conflicts] += 1
        return self._inner.get_async(key)

    def get_range_async(
        self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False
    ) -> Future[list[KeyValue]]:
        self.counts["get_range"] += 1
        self.counts[self._conflicts] += 1
        return _CountedRange(self._inner.get_range_async(begin, end, limit, reverse), self, reverse)

    def last_keys(self, requests: Sequence[tuple[bytes, bytes]]) -> list[bytes | None]:
        """Counted as the one-row reverse range reads they are (the store may answer them faster)."""
        self.counts["get_ranges"] += 1
        self.counts["get_ranges_ranges"] += len(requests)
        self.counts[self._conflicts] += len(requests)
        keys = self._inner.last_keys(requests)
        for key in keys:
            self._ranged([(key, b"")] if key is not None else [], True)
        return keys

    @property
    def rounds(self) -> ReadRounds:
        return self._inner.rounds

    def get_many(self, keys: Sequence[bytes]) -> list[bytes | None]:
        self.counts["get_many"] += 1
        self.counts["get_many_keys"] += len(keys)
        self.counts[self._conflicts] += len(keys)
        return self._inner.get_many(keys)

    def get_range(self, begin: bytes, end: bytes, limit: int = 0, reverse: bool = False) -> list[KeyValue]:
        self.counts["get_range"] += 1
        self.counts[self._conflicts] += 1
        rows = self._inner.get_range(begin, end, limit, reverse)
        self._ranged(rows, reverse)
        return rows

    def get_ranges(self, requests: Sequence[RangeRequest]) -> list[list[KeyValue]]:
        self.counts["get_ranges"] += 1
        self.counts["get_ranges_ranges"] += len(requests)
        self.counts[self._conflicts] += len(requests)
        results = self._inner.get_ranges(requests)
        for request, rows in zip(requests, results, strict=True):
            self._ranged(rows, request[3])
        return results

    def _writer(self) -> Transaction:
        assert isinstance(self._inner, Transaction)
        return self._inner

    def set(self, key: bytes, value: bytes) -> None:
        self.counts["set"] += 1
        self._writer().set(key, value)

    def clear(self, key: bytes) -> None:
        self.counts["clear"] += 1
        self._writer().clear(key)

    def clear_range(self, begin: bytes, end: bytes) -> None:
        self.counts["clear_range"] += 1
        self._writer().clear_range(begin, end)

    def add(self, key: bytes, param: bytes) -> None:
        self.counts["add"] += 1
        self._writer().add(key, param)

    def max(self, key: bytes, param: bytes) -> None:
        self.counts["max"] += 1
        self._writer().max(key, param)

    def min(self, key: bytes, param: bytes) -> None:
        self.counts["min"] += 1
        self._writer().min(key, param)

    def add_read_conflict_range(self, begin: bytes, end: bytes) -> None:
        self.counts["conflict_range"] += 1  # a no-op on LMDB; not a store access
        self._writer().add_read_conflict_range(begin, end)


class _CountedRange:
    """A range read in flight through a CountingTransaction: its rows are counted when waited on."""

    def __init__(self, inner: Future[list[KeyValue]], counter: CountingTransaction, reverse: bool) -> None:
        self._inner = inner
        self._counter = counter
        self._reverse = reverse
        self._rows: list[KeyValue] | None = None

    @property
    def value(self) -> list[KeyValue]:
        if self._rows is None:
            self._rows = self._inner.value
            self._counter._ranged(self._rows, self._reverse)
        return self._rows


class StoreCounters:
    """A store's own counters (``Database.stats``) and the CPU time spent from now on:
    :meth:`per_call` divides what they grew by since by the calls made (transactions, read
    rounds, reads, writes, bytes written, commits, retries, conflicts, unknown results; client
    and fdbserver CPU in microseconds)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.before = db.stats.snapshot()
        self.cpu = CpuMeter(server_pids(db))

    def per_call(self, calls: int) -> dict[str, float]:
        after = self.db.stats.snapshot()
        spent = self.cpu.read()
        out = {name: (after[name] - self.before[name]) / calls for name in after}
        out["client_cpu_us"] = spent["client_cpu_s"] * 1e6 / calls
        if "server_cpu_s" in spent:
            out["server_cpu_us"] = spent["server_cpu_s"] * 1e6 / calls
        return out


_server_pids: dict[str, list[int]] = {}


def server_pids(db: Database) -> list[int]:
    """The fdbserver processes on this machine behind ``db`` (none for the embedded store)."""
    if not db.url.startswith("fdb:"):
        return []
    if db.url not in _server_pids:
        raw = db.inner if hasattr(db, "inner") else db
        _server_pids[db.url] = fdbserver_pids(raw) if isinstance(raw, FdbDatabase) else []
    return _server_pids[db.url]


class RolledBack(Exception):
    """Ends a counting transaction so that nothing it wrote is kept."""


class CountingDatabase(Database):
    """Runs every transaction of ``inner`` through a CountingTransaction adding to ``counts``.

    With ``rollback`` every ``run`` aborts its transaction after ``fn`` returns (and returns
    what ``fn`` returned), so writes can be counted without changing the data.
    """

    def __init__(self, inner: Database, rollback: bool) -> None:
        self.inner = inner
        self.url = inner.url
        self.rollback = rollback
        self.counts: Counter[str] = Counter()
        self.transactions = 0

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def body(tr: Any) -> T:
            self.transactions += 1
            result = fn(CountingTransaction(tr, self.counts), *args, **kwargs)
            if self.rollback:
                raise RolledBack(result)
            return result

        try:
            return self.inner.run(body)
        except RolledBack as rolled_back:
            return rolled_back.args[0]

    def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self.transactions += 1
        return self.inner.read(lambda tr: fn(CountingTransaction(tr, self.counts), *args, **kwargs))

    def close(self) -> None:
        pass


def per_op_counts(counts: Counter[str], ops: int) -> dict[str, float]:
    """Each counted kind averaged over ``ops`` operations, in key order."""
    return {key: value / ops for key, value in sorted(counts.items())}


@dataclass(frozen=True)
class OpTotals:
    """Per-operation sums of :func:`per_op_counts`: the columns the reports show."""

    gets: float  # single keys read, by get or get_many
    ranges: float  # range reads, by get_range or get_ranges
    rows: float  # rows those range reads returned
    atomic: float  # add, max and min
    total: float  # store operations: gets, ranges, atomic operations, sets and clears


def op_totals(per_op: dict[str, float]) -> OpTotals:
    gets = per_op.get("get", 0) + per_op.get("get_many_keys", 0)
    ranges = per_op.get("get_range", 0) + per_op.get("get_ranges_ranges", 0)
    atomic = sum(per_op.get(k, 0) for k in ("add", "max", "min"))
    return OpTotals(
        gets=gets,
        ranges=ranges,
        rows=per_op.get("forward_rows", 0) + per_op.get("reverse_rows", 0),
        atomic=atomic,
        total=gets + ranges + atomic + sum(per_op.get(k, 0) for k in ("set", "clear", "clear_range")),
    )


def modelled_us(per_op: dict[str, float], cost: dict[str, float]) -> float:
    """The store-bound cost of one operation in microseconds, given raw per-op costs by kind.

    Gets at the get cost; forward ranges at the 1-key range cost plus, per row beyond the
    first, the slope between the 1-key and 16-key range costs; reverse ranges likewise from the
    reverse 1-key cost; sets, clears and adds at theirs; MAX and MIN as an atomic add; range
    clears as a 1-key range read.  (``per_op`` needs the ``gets`` sum of :func:`op_totals`.)
    """
    slope = (cost["range16"] - cost["range1"]) / 15
    return (
        per_op.get("gets", 0) * cost["get"]
        + per_op.get("forward_ranges", 0) * cost["range1"]
        + per_op.get("forward_extra_rows", 0) * slope
        + per_op.get("reverse_ranges", 0) * cost["rev_range1"]
        + per_op.get("reverse_extra_rows", 0) * slope
        + per_op.get("set", 0) * cost["put"]
        + per_op.get("clear", 0) * cost["clear"]
        + per_op.get("add", 0) * cost["add"]
        + (per_op.get("max", 0) + per_op.get("min", 0)) * cost["add"]
        + per_op.get("clear_range", 0) * cost["range1"]
    )
