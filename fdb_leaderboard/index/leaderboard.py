"""The index's facade: :class:`LeaderboardIndex`, one method per operation, each one transaction.

Every public method runs in one store transaction unless its docstring says it works in
bounded batches.  ``LeaderboardIndex.run(fn)`` composes several operations in one
transaction: ``fn(ops)`` receives the :class:`Operations` of that transaction, whose parts
are the concerns of this package (``ops.writer``, ``ops.windows``, ``ops.filler``,
``ops.trimmer``, and ``ops.txn``, the state they share).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..errors import AlreadyExists, NotFound
from ..proto import index_pb2
from ..store.api import Database, Transaction
from .checker import check_transaction
from .directory import ALL_TIME, Directory, Window, WindowUpdate
from .fill import Filler, FillProgress, batches
from .layout import IndexLayout
from .reads import IfAbsent, RankedEntry, RankMode, Reader, ScanPage, ScanType, WindowRef
from .records import Entry, RecordWriter
from .settings import IndexSettings
from .space import IndexSpace
from .transaction import IndexTransaction
from .trim import Trimmer
from .values import check_at_least, check_timestamp
from .windows import WindowEditor, WindowUpdateResult, plan_ahead

T = TypeVar("T")


class Operations:
    """The index's operations inside one transaction ``tr``, grouped by concern (each made on first use)."""

    def __init__(self, space: IndexSpace, tr: Any) -> None:
        self.tr = tr
        self.txn = IndexTransaction(space, tr)

    @functools.cached_property
    def writer(self) -> RecordWriter:
        return RecordWriter(self.txn)

    @functools.cached_property
    def windows(self) -> WindowEditor:
        return WindowEditor(self.txn)

    @functools.cached_property
    def filler(self) -> Filler:
        return Filler(self.txn, self.writer, self.windows)

    @functools.cached_property
    def trimmer(self) -> Trimmer:
        return Trimmer(self.txn)


class LeaderboardIndex(IndexSpace):
    """A time-windowed leaderboard index under key prefix ``prefix`` of store ``db``."""

    def __init__(self, db: Database, prefix: bytes, settings: IndexSettings) -> None:
        super().__init__(prefix, settings)
        self.db = db

    # -- creation ----------------------------------------------------------------------------

    @classmethod
    def create(cls, db: Database, prefix: bytes, settings: IndexSettings | None = None) -> LeaderboardIndex:
        """Create the index (or open it if it exists with the same settings)."""
        settings = settings or IndexSettings()
        layout = IndexLayout(prefix)

        def create(tr: Transaction) -> None:
            stored = tr.get(layout.options_key)
            if stored is not None:
                existing = IndexSettings.from_proto(index_pb2.IndexOptions.FromString(stored))
                if existing != settings:
                    raise AlreadyExists(f"an index exists at {prefix!r} with other settings: {existing}")
                return
            tr.set(layout.options_key, settings.to_proto().SerializeToString())

        db.run(create)
        return cls(db, prefix, settings)

    @classmethod
    def open(cls, db: Database, prefix: bytes) -> LeaderboardIndex:
        stored = db.read(lambda tr: tr.get(IndexLayout(prefix).options_key))
        if stored is None:
            raise NotFound(f"no index at {prefix!r}")
        return cls(db, prefix, IndexSettings.from_proto(index_pb2.IndexOptions.FromString(stored)))

    # -- plumbing ------------------------------------------------------------------------------

    def run(self, fn: Callable[[Operations], T]) -> T:
        """Run ``fn(ops)`` in one read-write transaction."""
        return self.db.run(lambda tr: fn(Operations(self, tr)))

    def read(self, fn: Callable[[Operations], T]) -> T:
        return self.db.read(lambda tr: fn(Operations(self, tr)))

    # -- writes -------------------------------------------------------------------------------

    def add_score(self, pk: object, score: int | float, timestamp: int, context: tuple = (), group: tuple = ()) -> int:
        """Add one entry to a record; returns the number of window values that changed."""
        return self.run(lambda ops: ops.writer.add_entries(pk, [Entry(score, timestamp, context, group)]))

    def add_entries(self, pk: object, entries: Sequence[Entry]) -> int:
        return self.run(lambda ops: ops.writer.add_entries(pk, entries))

    def save_record(self, pk: object, entries: Sequence[Entry]) -> int:
        return self.run(lambda ops: ops.writer.save_record(pk, entries))

    def delete_record(self, pk: object) -> bool:
        return self.run(lambda ops: ops.writer.delete_record(pk))

    def write_batch(self, records: Sequence[tuple[object, Sequence[Entry]]], replace: bool = True) -> None:
        """Save (or add to, with ``replace=False``) many records in one transaction."""

        def write(ops: Operations) -> None:
            # The records' heads are read together (one round trip), not one by one.
            ops.txn.prefetch(heads=[ops.txn.pk(pk)[1] for pk, _ in records])
            for pk, entries in records:
                if replace:
                    ops.writer.save_record(pk, entries)
                else:
                    ops.writer.add_entries(pk, entries)

        self.run(write)

    def bulk_load(
        self,
        records: Iterable[tuple[object, Sequence[Entry]]],
        batch_size: int = 500,
        progress: Callable[[int], None] | None = None,
        defer_ranks: bool = True,
        max_entries: int = 20_000,
    ) -> int:
        """Save records in transactions of ``batch_size``; returns how many were written.

        With ``defer_ranks``, windows that hold no value when the first transaction starts are
        built the way a fill builds a new window: the load writes their primary B-trees only,
        and their ranked sets are then built in key order (appending, about one write per
        entry instead of a skip-list insert per entry).  Until that ends those windows raise
        WindowNotReady on reads, as filling windows do.  If a record is refused (or the store
        fails), the transactions before it stay saved and those windows are still built before
        the error is raised; if the process dies midway, ``fill()`` finishes them.  Windows
        holding values are kept up to date entry by entry, as by any write.  The deferred ranked
        sets are built in fill steps of ``batch_size`` records and ``max_entries`` entries.
        """
        check_at_least(batch_size, 1, "batch_size")
        deferred = False
        written = 0
        try:
            for batch in batches(records, batch_size):
                if defer_ranks and not deferred:
                    self.run(lambda ops: ops.filler.defer_ranks_of_empty_windows())
                    deferred = True
                self.write_batch(batch)
                written += len(batch)
                if progress:
                    progress(written)
        finally:  # also after a refused record: the deferred windows must not stay filling
            if deferred:
                self.fill(max_records=batch_size, max_entries=max_entries)
        return written

    # -- windows -------------------------------------------------------------------------------

    def update_windows(self, update: WindowUpdate) -> WindowUpdateResult:
        return self.run(lambda ops: ops.windows.update_windows(update))

    def directory(self) -> Directory | None:
        return self.read(lambda ops: ops.txn.directory())

    def save_sub_directory(self, group: tuple, high_score_first: bool) -> None:
        self.run(lambda ops: ops.windows.save_sub_directory(group, high_score_first))

    def sub_directories(self) -> dict[tuple, bool]:
        return self.read(lambda ops: ops.windows.sub_directories())

    def expire(self, before: int) -> tuple[Window, ...]:
        """Delete windows ending at or before ``before``; repeated calls are harmless."""
        return self.run(lambda ops: ops.windows.expire(before))

    def fill_step(self, max_records: int = 200, max_entries: int = 20_000) -> FillProgress:
        return self.run(lambda ops: ops.filler.fill_step(max_records, max_entries))

    def fill(
        self, max_records: int = 200, max_entries: int = 20_000, progress: Callable[[FillProgress], None] | None = None
    ) -> int:
        """Fill every window being filled, batch by batch, until done; returns records processed.

        Each batch is its own transaction and records its position in the store, so an
        interrupted fill resumes where it stopped, from any process.
        """
        total = 0
        while True:
            step = self.fill_step(max_records, max_entries)
            total += step.records_processed
            if progress:
                progress(step)
            if step.done:
                return total

    def keep_ahead(
        self,
        now: int,
        types: Sequence[tuple[int, int, int, int]],
        horizon: int,
        certain_within: int = 0,
        rng: random.Random | None = None,
        nlevels: int | None = None,
    ) -> tuple[Window, ...]:
        """Add the regular windows needed from ``now`` until ``now + horizon``.

        ``types`` lists ``(type, base, increment, duration)``.  A window that has started (or
        starts within ``certain_within``) is always added; a later one with a probability
        falling linearly to 0 at the horizon, so many servers calling this at once rarely
        all write the directory.  Returns the windows added.
        """
        rng = rng or random.Random()
        wanted = plan_ahead(now, types, horizon, certain_within, rng)
        if not wanted:
            return ()

        return self.run(lambda ops: ops.windows.add_missing(wanted, now, nlevels or 6))

    # -- reads (see reads.py for the semantics) -------------------------------------------

    def _reader(self, fn: Callable[[Reader], T]) -> T:
        return self.db.read(lambda tr: fn(Reader(IndexTransaction(self, tr))))

    def rank(
        self,
        pk: object,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> int | None:
        """The record's 0-based rank in the window, or None if it has no value there."""
        return self._reader(lambda r: r.rank(pk, WindowRef(window_type, timestamp), group, mode or RankMode.ORDINAL))

    def rank_and_entry(
        self,
        pk: object,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> RankedEntry | None:
        return self._reader(
            lambda r: r.rank_and_entry(pk, WindowRef(window_type, timestamp), group, mode or RankMode.ORDINAL)
        )

    def top(
        self,
        n: int,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> list[RankedEntry]:
        return self._reader(lambda r: r.top(n, WindowRef(window_type, timestamp), group, mode or RankMode.ORDINAL))

    def around(
        self,
        pk: object,
        above: int,
        below: int,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
        if_absent: IfAbsent | None = None,
    ) -> list[RankedEntry]:
        return self._reader(
            lambda r: r.around(
                pk,
                above,
                below,
                WindowRef(window_type, timestamp),
                group,
                mode or RankMode.ORDINAL,
                if_absent or IfAbsent.EMPTY,
            )
        )

    def count(self, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()) -> int:
        return self._reader(lambda r: r.count(WindowRef(window_type, timestamp), group))

    def score_for_rank(
        self, rank: int, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> int | float | None:
        return self._reader(lambda r: r.score_for_rank(rank, WindowRef(window_type, timestamp), group))

    def rank_for_score(
        self, score: int | float, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> int:
        return self._reader(lambda r: r.rank_for_score(score, WindowRef(window_type, timestamp), group))

    def scan(self, scan_type: ScanType, **kwargs: Any) -> ScanPage:
        """One page of a BY_VALUE, BY_RANK or BY_TIME_WINDOW scan (see ``Reader.scan``)."""
        return self._reader(lambda r: r.scan(scan_type, **kwargs))

    def trim(self, before: int, max_records: int = 200) -> int:
        """Drop entries before ``before`` that no window's value depends on, in batches.

        BEST and LATEST keep every entry that is some window's value; SUM keeps entries in
        any window but all-time and folds the rest into a carried total per group.  Windows
        starting before ``before`` cannot be added afterwards.  Returns entries removed.
        """
        before = check_timestamp(before)
        removed = 0
        cursor: bytes | None = None
        while True:
            count, cursor = self.run(lambda ops, c=cursor: ops.trimmer.trim_step(before, c, max_records))
            removed += count
            if cursor is None:
                return removed

    def check(self, max_problems: int = 100) -> list[str]:
        """Every inconsistency found (at most ``max_problems``); empty when the index is sound."""
        return self.read(lambda ops: check_transaction(ops.txn, ops.writer, max_problems))
