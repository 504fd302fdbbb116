"""The facade's reads: :class:`ReadMethods`, each read of :class:`LeaderboardIndex` one read
transaction, its listings with their records' metadata (see ``reads.py`` for the semantics).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import FailedPrecondition
from ..store.api import Transaction
from . import compat, leagues, pages, social
from . import movement as moves
from .columns import is_score_key
from .directory import ALL_TIME, Window
from .metadata import Metadata
from .operations import IndexRunner
from .reads import (
    GroupsPage,
    IfAbsent,
    Listing,
    RankedEntry,
    RankMode,
    Reader,
    ScanPage,
    ScanType,
    WindowRef,
    check_scan_arguments,
)
from .records import Entry
from .transaction import IndexTransaction

T = TypeVar("T")


class ReadMethods(IndexRunner):
    """The index's reads, one read transaction each."""

    def _reader(self, fn: Callable[[Reader], T]) -> T:
        return self.db.read(lambda tr: fn(Reader(IndexTransaction(self, tr))))

    def _listing(self, fn: Callable[[Reader], list[RankedEntry]]) -> Listing:
        """A listing with each record's metadata, read in the listing's own transaction, and the
        window it was read from."""

        def read(tr: Any) -> Listing:
            txn = IndexTransaction(self, tr)
            return Listing(Metadata(txn).attach_to(lambda: fn(Reader(txn))), txn.window_read)

        return self.db.read(read)

    def _mode(self, mode: RankMode | None) -> RankMode:
        """``mode`` (default ORDINAL), refused before any read if the index cannot compute it."""
        mode = mode or RankMode.ORDINAL
        if mode is RankMode.DENSE and not self.settings.dense_ranks:
            raise FailedPrecondition(
                "DENSE ranks need an index created with dense_ranks (it keeps each window's distinct scores ranked)"
            )
        return mode

    def rank(
        self,
        pk: object,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> int | None:
        """The record's 0-based rank in the window, or None if it has no value there."""
        board = WindowRef(window_type, timestamp, group)
        return self._reader(lambda r: r.rank(pk, board, self._mode(mode)))

    def rank_and_entry(
        self,
        pk: object,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> RankedEntry | None:
        found = self.rank_listing(pk, window_type, timestamp, group, mode)
        return found[0] if found else None

    def rank_listing(
        self,
        pk: object,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> Listing:
        """:meth:`rank_and_entry` as a listing of at most one entry, naming the window read."""
        mode, board = self._mode(mode), WindowRef(window_type, timestamp, group)
        return self._listing(lambda r: [e] if (e := r.rank_and_entry(pk, board, mode)) else [])

    def top(
        self,
        n: int,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> Listing:
        mode, board = self._mode(mode), WindowRef(window_type, timestamp, group)
        return self._listing(lambda r: r.top(n, board, mode))

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
    ) -> Listing:
        mode, board = self._mode(mode), WindowRef(window_type, timestamp, group)
        return self._listing(lambda r: r.around(pk, above, below, board, mode, if_absent or IfAbsent.EMPTY))

    def windows_in(self, tr: Transaction) -> tuple[Window, ...]:
        """The index's windows as transaction ``tr`` (another layer's, which also writes) sees them."""
        directory = IndexTransaction(self, tr).directory()
        return directory.windows if directory is not None else ()

    def standings_in(self, tr: Transaction, window: Window, n: int) -> tuple[int, list[RankedEntry]]:
        """In transaction ``tr``: the record count of ``window`` (of an index without groups) and
        its top ``n`` with their metadata: what a window-end event tells of an ended window."""
        if self.settings.group_size:
            raise FailedPrecondition("a grouped index has a top per group, not one per window")
        txn = IndexTransaction(self, tr)
        reader = Reader(txn)
        counted: list[int] = []

        def top() -> list[RankedEntry]:
            count, entries = reader.standings(window, n)
            counted.append(count)
            return entries

        entries = Metadata(txn).attach_to(top)
        return counted[0], entries

    def count(self, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()) -> int:
        board = WindowRef(window_type, timestamp, group)
        return self._reader(lambda r: r.count(board))

    def count_in_window(
        self, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> tuple[int, Window]:
        """:meth:`count` and the window counted."""
        board = WindowRef(window_type, timestamp, group)
        return self._reader(lambda r: (r.count(board), r.txn.window_read))

    def score_for_rank(
        self, rank: int, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> int | float | tuple | None:
        board = WindowRef(window_type, timestamp, group)
        return self._reader(lambda r: r.score_for_rank(rank, board))

    def rank_for_score(
        self,
        score: int | float | tuple | list,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
    ) -> int:
        """The rank a record with ``score`` would have: how many records score better.

        ``score`` may also be a score key ``(score, timestamp, context...)`` or a prefix of one,
        as the Record Layer takes it: records whose key sorts before it count (see compat.py).
        In a multi-column index a score is itself a tuple: a score key then starts with one.
        """
        board = WindowRef(window_type, timestamp, group)
        if is_score_key(score, self.settings.columns):
            return self._reader(lambda r: compat.rank_for_score_key(r, score, board))
        return self._reader(lambda r: r.rank_for_score(score, board))

    def score_trim(self, entries: Sequence[Entry]) -> list[Entry]:
        """The Record Layer's score trim: the entries the current windows would use, best first."""
        return self._reader(lambda r: compat.score_trim(r, entries))

    # -- reads of several records, pages, percentiles, movement --------------------------------

    def ranks(
        self,
        pks: Sequence[object],
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> list[RankedEntry | None]:
        """Each record's entry and rank (None if absent from the window), in the order given;
        at most ``social.MAX_RECORDS`` records."""
        mode, board = self._mode(mode), WindowRef(window_type, timestamp, group)

        def read(tr: Any) -> list[RankedEntry | None]:
            txn = IndexTransaction(self, tr)
            found = social.ranks_of(Reader(txn), pks, board, mode)
            present = iter(Metadata(txn).attach([entry for entry in found if entry is not None]))
            return [None if entry is None else next(present) for entry in found]

        return self.db.read(read)

    def board_of(
        self,
        pks: Sequence[object],
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> Listing:
        """A board of just these records (friends), ordered as the window orders them, with their
        ranks in the whole window; records absent from it are left out."""
        mode, board = self._mode(mode), WindowRef(window_type, timestamp, group)
        return self._listing(lambda r: social.board_of(r, pks, board, mode))

    def page(
        self,
        page: int,
        size: int,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> pages.Page:
        """Page ``page`` (1-based) of ``size`` records, with the window's total and page count."""
        mode, board = self._mode(mode), WindowRef(window_type, timestamp, group)

        def read(tr: Any) -> pages.Page:
            txn = IndexTransaction(self, tr)
            found = pages.page(Reader(txn), page, size, board, mode)
            return dataclasses.replace(found, entries=Metadata(txn).attach(found.entries))

        return self.db.read(read)

    def cohort(
        self,
        pk: object | None = None,
        tier: int | None = None,
        cohort: int | None = None,
        timestamp: int | None = None,
        mode: RankMode | None = None,
        page: int = 1,
        size: int = 0,
        around: tuple[int, int] | None = None,
    ) -> leagues.Cohort | None:
        """A cohort of the league window holding ``timestamp`` (None: now): the record ``pk``'s
        (None if it joined none there), or cohort ``cohort`` of tier ``tier``.  Its entries are
        page ``page`` (1-based) of ``size`` (0: all), or with ``around=(above, below)`` those
        around the record; ranks are within the cohort (see leagues.py), DENSE ones too (the
        cohort is read whole)."""
        mode = mode or RankMode.ORDINAL

        def read(tr: Any) -> leagues.Cohort | None:
            txn = IndexTransaction(self, tr)
            found = leagues.read_cohort(Reader(txn), pk, tier, cohort, timestamp, mode, page, size, around)
            if found is None:
                return None
            attached = Metadata(txn).attach([*found.entries, *([found.entry] if found.entry else [])])
            entry = attached.pop() if found.entry else None
            return dataclasses.replace(found, entries=attached, entry=entry)

        return self.db.read(read)

    def percentile(
        self, pk: object, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> float | None:
        """The share of the window's records behind this one, in percent (None if absent)."""
        board = WindowRef(window_type, timestamp, group)
        return self._reader(lambda r: pages.percentile(r, pk, board))

    def score_for_percentile(
        self, percentile: float, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> int | float | tuple | None:
        """The score at ``percentile`` (0: the worst, 100: the best), interpolated (see pages.py)."""
        board = WindowRef(window_type, timestamp, group)
        return self._reader(lambda r: pages.score_for_percentile(r, percentile, board))

    def movement(
        self,
        pk: object,
        window_type: int,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> moves.Movement:
        """The record's rank in the window of the type holding ``timestamp`` (None: now) and in the
        previous window of the type, and the change."""
        mode, board = self._mode(mode), WindowRef(window_type, timestamp, group)

        def read(tr: Any) -> moves.Movement:
            txn = IndexTransaction(self, tr)
            found = moves.movement(Reader(txn), pk, board, mode)
            meta = Metadata(txn)
            return dataclasses.replace(
                found, entry=meta.attach_one(found.entry), previous_entry=meta.attach_one(found.previous_entry)
            )

        return self.db.read(read)

    def rank_history(
        self,
        pk: object,
        window_type: int,
        timestamp: int | None = None,
        count: int = 10,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> moves.History:
        """The record's rank in each of the latest ``count`` windows of the type, and the best."""
        mode, board = self._mode(mode), WindowRef(window_type, timestamp, group)

        def read(tr: Any) -> moves.History:
            txn = IndexTransaction(self, tr)
            found = moves.history(Reader(txn), pk, board, count, mode)
            meta = Metadata(txn)
            best = None if found.best is None else (found.best[0], meta.attach_one(found.best[1]))
            return moves.History([(window, meta.attach_one(entry)) for window, entry in found.windows], best)  # type: ignore[arg-type]

        return self.db.read(read)

    def scan(self, scan_type: ScanType, **kwargs: Any) -> ScanPage:
        """One page of a BY_VALUE, BY_RANK or BY_TIME_WINDOW scan (see ``Reader.scan``).

        An argument the scan type does not use is refused unless it has its default: a BY_RANK
        scan ranks the all-time window, so ``window_type=1`` is an error, not ignored.
        """
        check_scan_arguments(scan_type, kwargs)
        if "mode" in kwargs:
            kwargs["mode"] = self._mode(kwargs["mode"])

        def read(tr: Any) -> ScanPage:
            txn = IndexTransaction(self, tr)
            page = Reader(txn).scan(scan_type, **kwargs)
            return dataclasses.replace(page, entries=Metadata(txn).attach(page.entries))

        return self.db.read(read)

    def groups(
        self, window_type: int = ALL_TIME, timestamp: int | None = None, limit: int = 100, continuation: bytes = b""
    ) -> GroupsPage:
        """The groups holding a value in the window, in key order: one page of at most ``limit``
        (1-1000) and the continuation of the next (None: done).  One read per group."""
        board = WindowRef(window_type, timestamp)  # every group of the window
        return self._reader(lambda r: r.groups(board, limit, continuation or None))
