"""The index's facade: :class:`LeaderboardIndex`, one method per operation, each one transaction.

Every public method runs in one store transaction unless its docstring says it works in
bounded batches.  ``LeaderboardIndex.run(fn)`` composes several operations in one
transaction: ``fn(ops)`` receives the :class:`Operations` of that transaction, whose parts
are the concerns of this package (``ops.writer``, ``ops.windows``, ``ops.filler``,
``ops.trimmer``, and ``ops.txn``, the state they share).

Admin methods take ``actor`` (who acts: a token's name) and, when the index has an audit trail
(``audit``: the catalog gives one to every index it opens), record what they changed in it in
the transaction that changes it (see ``audit.py``); score writes never touch it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import random
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from .. import formats
from ..errors import AlreadyExists, FailedPrecondition, InvalidArgument, LeaderboardError, NotFound, NoWindowsWarning
from ..proto import index_pb2
from ..store.api import Database, Transaction, strinc
from . import compat, leagues, pages, social
from . import movement as moves
from . import tuplecodec as tuples
from .audit import AuditTrail, JobEvents, PendingEvent, expire_in_batches
from .build import BuildLost, WindowsBuild
from .calendar import CalendarPeriods, timebase_scale
from .check_parts import MAX_CHECK_PARTS, plan_parts, run_parts
from .checker import CheckReport, check_index
from .columns import is_score_key
from .deletion import Deleter, DeletionProgress
from .directory import ALL_TIME, Directory, Window, WindowUpdate
from .fill import Filler, FillProgress
from .hiding import HiddenRecord, Hider
from .idempotency import DEFAULT_MAX_KEYS, AppliedRequests, Replayed, batch_key, check_key, digest
from .latest import SCAN_ENTRIES as LATEST_SCAN
from .layout import IndexLayout
from .loading import BulkLoad
from .metadata import Metadata
from .reads import GroupsPage, IfAbsent, Listing, RankedEntry, RankMode, Reader, ScanPage, ScanType, WindowRef
from .records import Entry, RecordWriter
from .rules import ScoreRules
from .settings import IndexSettings
from .space import IndexSpace
from .transaction import FillState, IndexTransaction, RecordKey
from .trim import Trimmer
from .upgrade import UpgradeProgress, Upgrader, UpgradeState
from .values import check_at_least, check_timestamp, normalize_score
from .windows import WindowEditor, WindowUpdateResult, plan_ahead

T = TypeVar("T")
LOCAL_ACTOR = "local"  # who acts through this Python API when the caller names nobody


# What each scan type ignores, with the default it must keep, and the hint given when it does not.
_UNUSED_BY_SCAN: dict[ScanType, dict[str, tuple[object, str]]] = {
    ScanType.BY_VALUE: {
        "window_type": (ALL_TIME, "it scans the all-time window; use BY_TIME_WINDOW for another window"),
        "timestamp": (None, "it scans the all-time window; use BY_TIME_WINDOW for another window"),
        "mode": (RankMode.ORDINAL, "its entries carry no rank"),
    },
    ScanType.BY_RANK: {
        "window_type": (ALL_TIME, "it ranks the all-time window; use BY_TIME_WINDOW for another window"),
        "timestamp": (None, "it ranks the all-time window; use BY_TIME_WINDOW for another window"),
    },
}


def check_scan_arguments(scan_type: ScanType, arguments: dict[str, Any]) -> None:
    """Refuse an argument ``scan_type`` would ignore (InvalidArgument naming it)."""
    for name, (default, why) in _UNUSED_BY_SCAN.get(scan_type, {}).items():
        value = arguments.get(name, default)
        if value == default or (name == "mode" and value is None):  # mode None: the default
            continue
        shown = value.name if isinstance(value, RankMode) else repr(value)
        raise InvalidArgument(f"a {scan_type.name} scan does not use {name} (given {shown}): {why}")


# A fill builds its windows from sorted data (build.py) when the index holds at least this many
# records: below, its bounded steps cost less than a build's start and its sort.
BUILD_RECORDS = 2000

NO_WINDOWS = (
    "the index has no windows yet: the score is stored but ranked in no window until a window update "
    "adds some (`fdb-leaderboard windows apply`), which fills them from the stored scores"
)


@dataclasses.dataclass(frozen=True)
class WriteOutcome:
    """What a record write did: window values changed, and a warning when it is ranked nowhere."""

    windows_changed: int
    warning: str | None = None


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

    @functools.cached_property
    def metadata(self) -> Metadata:
        return Metadata(self.txn)

    @functools.cached_property
    def applied(self) -> AppliedRequests:
        return AppliedRequests(self.txn)

    @functools.cached_property
    def hider(self) -> Hider:
        return Hider(self.txn, self.writer)

    @functools.cached_property
    def deleter(self) -> Deleter:
        return Deleter(self.txn, self.writer)

    @functools.cached_property
    def upgrader(self) -> Upgrader:
        return Upgrader(self.txn)


class LeaderboardIndex(IndexSpace):
    """A time-windowed leaderboard index under key prefix ``prefix`` of store ``db``."""

    def __init__(
        self, db: Database, prefix: bytes, settings: IndexSettings, format: int = formats.NEWEST_INDEX
    ) -> None:
        super().__init__(prefix, settings, format)
        self.db = db
        self.max_idempotency_keys = DEFAULT_MAX_KEYS
        self.audit: AuditTrail | None = None  # where admin actions are recorded (None: nowhere)
        self.name = ""  # the index's name in its events
        # Told when a deletion leaves the latest timestamp's recompute unfinished (the server wakes
        # its maintenance, which finishes it).
        self.on_latest_left: Callable[[], None] | None = None

    def _event(self, actor: str | None, action: str) -> PendingEvent | None:
        """The event of one admin call (None without an audit trail): taken before its transaction."""
        return None if self.audit is None else self.audit.event(actor or LOCAL_ACTOR, action, self.name)

    def _job(self, actor: str | None, action: str, **arguments: object) -> JobEvents:
        return JobEvents(self.audit, actor or LOCAL_ACTOR, action, self.name, **arguments)

    # -- creation ----------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        db: Database,
        prefix: bytes,
        settings: IndexSettings | None = None,
        all_time: bool = True,
        windows: Sequence[tuple[int, int, int]] = (),
        timebase: str | None = None,
        format: int = formats.NEWEST_INDEX,
    ) -> LeaderboardIndex:
        """Create the index (or open it if it exists with the same settings).

        A new index has its all-time window from the start (unless ``all_time`` is False) and the
        ``(type, start, end)`` ``windows`` given, so it ranks its first score; see :meth:`initialize`.
        ``timebase`` (seconds or milliseconds) is what now is for it, and bounds its timestamps to
        years 1 to 9999 in it (a server's indexes take their policy's); without one, any int64.
        It is stored in index ``format`` (the newest by default: pass an older one while processes of
        an older release write to it too; see ``fdb_leaderboard/formats.py``).
        """
        index = cls(db, prefix, settings or IndexSettings(), format)
        if timebase is not None:
            index.timebase = timebase_scale(timebase)
        db.run(lambda tr: index.initialize(tr, all_time, windows))
        return index

    def initialize(
        self, tr: Transaction, all_time: bool = True, windows: Sequence[tuple[int, int, int]] = ()
    ) -> tuple[Window, ...] | None:
        """In transaction ``tr``: store the index's settings and first windows, unless it exists.

        Returns the windows added, or None when the index existed already with the same settings
        (AlreadyExists when with other settings).
        """
        stored = tr.get(self.layout.options_key)
        if stored is not None:
            options = index_pb2.IndexOptions.FromString(stored)
            existing = IndexSettings.from_proto(options)
            if existing != self.settings:
                raise AlreadyExists(f"an index exists at {self.prefix!r} with other settings: {existing}")
            self.format = options.format or formats.UNRECORDED_INDEX
            return None
        options = self.settings.to_proto()
        options.format = self.format
        tr.set(self.layout.options_key, options.SerializeToString())
        if not all_time and not windows:
            return ()
        update = WindowUpdate(all_time=all_time, windows=windows)
        return Operations(self, tr).windows.update_windows(update).added

    @classmethod
    def open(cls, db: Database, prefix: bytes, timebase: str | None = None) -> LeaderboardIndex:
        """The index at ``prefix`` (NotFound if none; FormatTooNew if a newer release wrote it);
        ``timebase`` as :meth:`create` takes it."""
        stored = db.read(lambda tr: tr.get(IndexLayout(prefix).options_key))
        if stored is None:
            raise NotFound(f"no index at {prefix!r}")
        options = index_pb2.IndexOptions.FromString(stored)
        version = options.format or formats.UNRECORDED_INDEX
        formats.check_readable("index", version, f"the index at {prefix!r}")
        index = cls(db, prefix, IndexSettings.from_proto(options), version)
        if timebase is not None:
            index.timebase = timebase_scale(timebase)
        return index

    # -- plumbing ------------------------------------------------------------------------------

    def run(self, fn: Callable[[Operations], T]) -> T:
        """Run ``fn(ops)`` in one read-write transaction."""
        return self.db.run(lambda tr: fn(Operations(self, tr)))

    def read(self, fn: Callable[[Operations], T]) -> T:
        return self.db.read(lambda tr: fn(Operations(self, tr)))

    def run_once(
        self,
        idempotency_key: str | None,
        operation: str,
        arguments: Callable[[Operations], tuple],
        write: Callable[[Operations], T],
        encode: Callable[[T], tuple],
        decode: Callable[[tuple], T],
    ) -> T:
        """``write(ops)`` in one transaction, applied once per ``idempotency_key`` (see
        ``idempotency.py``): a repeat of the same ``operation`` with the same ``arguments(ops)``
        (checked values, as a tuple) answers the first answer, ``encode``-d and ``decode``-d as
        tuples; None runs it plainly."""
        if idempotency_key is None:
            return self.run(write)
        key = check_key(idempotency_key)

        def once(ops: Operations) -> T:
            return ops.applied.once(
                key,
                lambda: digest(operation, arguments(ops)),
                lambda: write(ops),
                lambda answer: tuples.pack(encode(answer)),
                int(self.clock()),
                self.max_idempotency_keys,
            )

        try:
            return self.run(once)
        except Replayed as replay:
            return decode(tuples.unpack(replay.answer))

    def expire_idempotency_keys(
        self,
        before: int,
        max_keys: int = 1000,
        keep_going: Callable[[], bool] | None = None,
        actor: str | None = None,
    ) -> tuple[int, bool]:
        """Forget the idempotency keys applied before ``before`` (Unix seconds), ``max_keys`` per
        transaction, until done or ``keep_going()`` says stop after a batch; returns (forgotten, done)."""
        check_at_least(max_keys, 1, "max_keys")
        job = self._job(actor, "ExpireIdempotencyKeys", before=before)

        def step(tr: Any) -> tuple[int, bool]:
            return Operations(self, tr).applied.expire_step(before, max_keys)

        return expire_in_batches(job, self.db.run, step, keep_going, "keys_forgotten")

    def idempotency_keys(self) -> int:
        """How many idempotency keys the index holds."""
        return self.read(lambda ops: ops.applied.count())

    # -- writes -------------------------------------------------------------------------------

    def add_score(
        self,
        pk: object,
        score: int | float,
        timestamp: int | None = None,
        context: tuple = (),
        group: tuple = (),
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> int:
        """Add one entry to a record, made at ``timestamp`` (None: now, the index's clock in its
        timebase when the write is applied); returns the number of window values that changed.

        ``metadata`` fields, if given, are merged into the record's metadata in the same
        transaction.  In an index with no windows the score is stored, 0 is returned and a
        :class:`NoWindowsWarning` is issued (the first window update fills from stored scores).
        With ``idempotency_key``, a repeat of this very call changes nothing and answers the same.
        """
        entries = [Entry(score, timestamp, context, group)]
        return _warn(self.write_record(pk, entries, metadata=metadata, idempotency_key=idempotency_key))

    def add_entries(self, pk: object, entries: Sequence[Entry], idempotency_key: str | None = None) -> int:
        return _warn(self.write_record(pk, entries, idempotency_key=idempotency_key))

    def save_record(self, pk: object, entries: Sequence[Entry], idempotency_key: str | None = None) -> int:
        return _warn(self.write_record(pk, entries, replace=True, idempotency_key=idempotency_key))

    def write_record(
        self,
        pk: object,
        entries: Sequence[Entry],
        replace: bool = False,
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> WriteOutcome:
        """Add entries to a record (or replace them), saying so when the index has no window to
        rank them; ``metadata`` fields are merged into the record's in the same transaction."""

        def arguments(ops: Operations) -> tuple:
            fields = tuple(sorted((metadata or {}).items()))
            return ops.txn.pk(pk).pk, self._entry_arguments(entries), fields, replace

        def write(ops: Operations) -> WriteOutcome:
            changed = ops.writer.save_record(pk, entries) if replace else ops.writer.add_entries(pk, entries)
            if metadata:
                ops.metadata.merge_on_write(pk, metadata)
            directory = ops.txn.directory()  # read by the write already: no extra read
            if changed or not entries or (directory is not None and directory.windows):
                return WriteOutcome(changed)
            return WriteOutcome(changed, NO_WINDOWS)

        return self.run_once(
            idempotency_key,
            "SaveRecord" if replace else "AddEntries",
            arguments,
            write,
            lambda outcome: (outcome.windows_changed, outcome.warning),
            lambda answer: WriteOutcome(*answer),
        )

    def _entry_arguments(self, entries: Sequence[Entry]) -> tuple:
        """Entries as checked values, for a request's digest (an int score of a DOUBLE index is
        its float, so every door's form of one request has one digest)."""
        out = []
        for entry in entries:
            if not isinstance(entry, Entry):
                raise InvalidArgument(f"expected an Entry, not {type(entry).__name__}")
            score = normalize_score(entry.score, self.settings.score_type, self.settings.columns)
            out.append((score, entry.timestamp, tuple(entry.context), tuple(entry.group)))
        return tuple(out)

    def delete_record(self, pk: object, idempotency_key: str | None = None) -> bool:
        """Delete a record (False: there was none).  If it held the latest timestamp, that is
        found again (``latest.py``): here at once on an index of a few thousand entries."""
        started = [False]

        def write(ops: Operations) -> bool:
            existed = ops.writer.delete_record(pk)
            started[0] = ops.txn.latest.started
            return existed

        existed = self.run_once(
            idempotency_key,
            "DeleteRecord",
            lambda ops: (ops.txn.pk(pk).pk,),
            write,
            lambda existed: (existed,),
            lambda answer: answer[0],
        )
        if started[0]:
            self._latest_after_deletion()
        return existed

    def _latest_after_deletion(self) -> None:
        if not self.latest_step() and self.on_latest_left is not None:
            self.on_latest_left()

    def latest_step(self, max_entries: int = LATEST_SCAN) -> bool:
        """One batch of the latest timestamp's recompute, if one runs; True when none does any more
        (fills take such a step once their windows are complete: the server's maintenance
        finishes a recompute too long for the deleting call)."""
        return self.run(lambda ops: ops.txn.latest.step(max_entries))

    def write_batch(
        self,
        records: Sequence[tuple[object, Sequence[Entry]]],
        replace: bool = True,
        idempotency_key: str | None = None,
        limited: bool = True,
    ) -> None:
        """Save (or add to, with ``replace=False``) many records in one transaction.

        A record the index refuses raises with ``record_position``: its position in ``records``.
        ``limited``: the writes count against the index's submission limits (see rules.py).
        """

        def arguments(ops: Operations) -> tuple:
            return replace, tuple((ops.txn.pk(pk).pk, self._entry_arguments(entries)) for pk, entries in records)

        self._write_batch(records, replace, idempotency_key, limited)

    def _write_batch(
        self,
        records: Sequence[tuple[object, Sequence[Entry]]],
        replace: bool,
        idempotency_key: str | None,
        limited: bool,
        build: WindowsBuild | None = None,
    ) -> list[tuple[int, bytes, bytes, bytes, bool]] | None:
        """:meth:`write_batch`, within ``build`` if given: returns the values its windows were
        handed, or None when the batch was applied before (``idempotency_key``)."""

        def arguments(ops: Operations) -> tuple:
            return replace, tuple((ops.txn.pk(pk).pk, self._entry_arguments(entries)) for pk, entries in records)

        def write(ops: Operations) -> list[tuple[int, bytes, bytes, bytes, bool]]:
            if build is not None:
                build.prepare(ops)
            # The keys are checked first so the records' heads are read together (one round trip).
            txn, writer = ops.txn, ops.writer
            keys: list[RecordKey] = []
            with _refused_at(lambda: len(keys)):
                for pk, _ in records:
                    keys.append(txn.pk(pk))
            txn.prefetch(heads=[key.nested for key in keys])
            writer.limited = limited
            save = writer.save_record if replace else writer.add_entries
            # A new record with one entry, written beyond the limits (a load's), takes the short way.
            short = replace and not limited and self.settings.leagues is None
            position = 0
            with _refused_at(lambda: position):
                for position, (key, (_, entries)) in enumerate(zip(keys, records, strict=True)):  # noqa: B007
                    if short and type(entries) in (list, tuple) and len(entries) == 1 and txn.head_absent(key.nested):
                        writer.save_new(key, entries[0])
                    else:
                        save(key, entries)
            return txn.emitted

        return self.run_once(idempotency_key, "WriteBatch", arguments, write, lambda _: (), lambda _: None)

    def bulk_load(
        self,
        records: Iterable[tuple[object, Sequence[Entry]]],
        batch_size: int = 500,
        progress: Callable[[int], None] | None = None,
        defer_ranks: bool = True,
        max_entries: int = 20_000,
        idempotency_key: str | None = None,
        actor: str | None = None,
    ) -> int:
        """Save records in transactions of ``batch_size``; returns how many were written.

        An admin's load (``actor``) is recorded in the audit trail, started and finished (or
        stopped: a refused record, the caller gone) in transactions of their own: the load's
        transactions are the write path's, which records nothing.

        With ``idempotency_key``, transaction ``n`` of the load is applied once under
        ``key#n``: a load sent again with the same key, records and ``batch_size`` saves only
        the batches not saved before (and refuses, ALREADY_EXISTS, a batch that differs).

        With ``defer_ranks``, the windows that hold no value when the first transaction starts
        (but a league's) are built from sorted data (``build.py``): the load hands their values
        to a build, which writes each window's B-tree entries and ranked sets once, in key
        order, after the last record.  Until then those windows raise WindowNotReady on reads,
        as filling windows do, and writes made meanwhile are redone at the end.  If a record is
        refused (or the store fails), the transactions before it stay saved and those windows
        are still built before the error is raised; if the process dies midway, a fill starts
        them over once the build's hold runs out.  Windows holding values are kept up to date
        entry by entry, as by any write.  Below index format 4 (``formats.SORTED_BUILDS``) the
        load writes those windows' primary B-trees and a fill then ranks them in key order, in
        steps of ``batch_size`` records and ``max_entries`` entries (release 0.2.0's way, which
        its processes writing meanwhile keep right).

        On a store whose reads cost round trips (FoundationDB) several transactions are in
        flight at once (``loading.py``), each record's batch after any batch in flight holding
        the same record; a refused record's error then comes once the batches before it are
        saved, and batches after it may be saved too.
        """
        return BulkLoad(self, batch_size, progress, defer_ranks, idempotency_key, actor, max_entries).run(records)

    def set_metadata(
        self,
        pk: object,
        metadata: Mapping[str, str],
        merge: bool = False,
        remove: Sequence[str] = (),
        idempotency_key: str | None = None,
    ) -> dict[str, str]:
        """Replace a record's display metadata (or merge fields into it, dropping ``remove``);
        returns what is stored now.  Scores and windows are not touched.  See ``metadata.py``."""
        return self.run_once(
            idempotency_key,
            "SetMetadata",
            lambda ops: (ops.txn.pk(pk).pk, tuple(sorted(metadata.items())), merge, tuple(sorted(remove))),
            lambda ops: ops.metadata.set(pk, metadata, merge, remove),
            lambda stored: tuple(item for pair in sorted(stored.items()) for item in pair),
            lambda answer: dict(zip(answer[::2], answer[1::2], strict=True)),
        )

    def metadata(self, pk: object) -> dict[str, str] | None:
        """A record's display metadata ({} if none), or None if the record does not exist."""
        return self.read(lambda ops: ops.metadata.get(pk))

    # -- windows -------------------------------------------------------------------------------

    def update_windows(self, update: WindowUpdate, actor: str | None = None) -> WindowUpdateResult:
        event = self._event(actor, "UpdateWindows")

        def write(ops: Operations) -> WindowUpdateResult:
            result = ops.windows.update_windows(update)
            if event is not None and result.changed:
                event.write(
                    ops.tr,
                    added=_windows(result.added),
                    deleted=_windows(result.deleted),
                    filling=_windows(result.filling),
                )
            return result

        result = self.run(write)
        self.clear_retired()
        return result

    def directory(self) -> Directory | None:
        return self.read(lambda ops: ops.txn.directory())

    def save_sub_directory(self, group: tuple, high_score_first: bool, actor: str | None = None) -> None:
        event = self._event(actor, "SaveSubDirectory")

        def write(ops: Operations) -> None:
            ops.windows.save_sub_directory(group, high_score_first)
            if event is not None:
                event.write(ops.tr, group=group, high_score_first=high_score_first)

        self.run(write)

    def sub_directories(self) -> dict[tuple, bool]:
        return self.read(lambda ops: ops.windows.sub_directories())

    def fill_states(self) -> list[tuple[Window, FillState]]:
        """Each window being filled and how far its fill got, in one read."""

        def read(ops: Operations) -> list[tuple[Window, FillState]]:
            directory = ops.txn.directory()
            return [(window, ops.txn.fill_state(window)) for window in (directory.filling() if directory else [])]

        return self.read(read)

    def expire(
        self, before: int, actor: str | None = None, keep_going: Callable[[], bool] | None = None
    ) -> tuple[Window, ...]:
        """Delete windows ending at or before ``before``; repeated calls are harmless.  The windows
        leave the directory in one transaction; where their data is then cleared in steps
        (:meth:`clear_retired`), it stops once ``keep_going()`` says so, leaving the rest to the
        next expiry or the server's maintenance."""
        event = self._event(actor, "Expire")

        def write(ops: Operations) -> tuple[Window, ...]:
            gone = ops.windows.expire(before)
            if event is not None and gone:
                event.write(ops.tr, before=before, deleted=_windows(gone))
            return gone

        gone = self.run(write)
        self.clear_retired(keep_going=keep_going)
        return gone

    def clear_retired(self, max_keys: int = 20_000, keep_going: Callable[[], bool] | None = None) -> bool:
        """Clear, in transactions of about ``max_keys`` keys, the data of windows deleted from the
        directory that a store which clears key by key left to clear (see ``WindowEditor.retire``):
        an expiry or window update does so itself, the server's maintenance and any later one go
        on with what one left.  Stops after a transaction once ``keep_going()`` is False; returns
        True once nothing is left.  Below index format 4 (``formats.RETIRED_WINDOWS``) windows
        are cleared as they are deleted."""
        if not formats.allows(self.format, formats.RETIRED_WINDOWS) or self.db.clears_ranges_at_once:
            return True  # nothing is ever left to clear
        layout = self.layout
        if not self.read(lambda ops: ops.tr.get_range(layout.retired, strinc(layout.retired), 1)):
            return True  # (a read: no commit where nothing was left)
        while not self.run(lambda ops: ops.windows.clear_retired(max_keys)):
            if keep_going is not None and not keep_going():
                return False
        return True

    def fill_step(
        self, max_records: int = 200, max_entries: int = 20_000, respect_holds: bool = False, actor: str | None = None
    ) -> FillProgress:
        """One bounded fill transaction; ``respect_holds`` leaves alone the windows a running bulk
        load will build (what the server's background fill does).  The step that completes the
        windows being filled records that (their start is their window update's event)."""
        unheld_at = int(self.clock()) if respect_holds else None
        event = self._event(actor, "FillWindows")

        def step(ops: Operations) -> FillProgress:
            progress = ops.filler.fill_step(max_records, max_entries, unheld_at)
            if event is not None and progress.done and progress.windows:
                event.write(ops.tr, phase="finished", completed=_windows(w for w, _ in progress.windows))
            if progress.done and not ops.txn.latest.step():  # then the latest timestamp's recompute
                return dataclasses.replace(progress, done=False)
            return progress

        return self.run(step)

    def fill(
        self,
        max_records: int = 200,
        max_entries: int = 20_000,
        progress: Callable[[FillProgress], None] | None = None,
        actor: str | None = None,
        respect_holds: bool = False,
        build: bool | None = None,
    ) -> int:
        """Fill every window being filled until done; returns records processed.

        When the index holds many records (or with ``build``), the windows are built from
        sorted data (``build.py``: their entries and ranked sets written once, in key order),
        from index format 4 on (``formats.SORTED_BUILDS``); otherwise (or without ``build``),
        and for what a build leaves (a league's windows), in bounded steps of ``max_records``
        records and ``max_entries`` entries.  Either way each
        transaction is bounded, and the work survives the process: a step's position is stored,
        and a build's windows are started over by a later fill if its process dies.  The
        windows another process builds are left to it, and so, with ``respect_holds``, are those
        a running bulk load holds (``done`` then means nothing is left it may do).
        """
        if not formats.allows(self.format, formats.SORTED_BUILDS):
            build = False  # a release 0.2.0 process may write meanwhile: it notes nothing for a build
        elif build is None:
            build = self._many_records()
        total = self._build_fill(progress, actor) if build else 0
        while True:
            step = self.fill_step(max_records, max_entries, respect_holds, actor=actor)
            total += step.records_processed
            if progress:
                progress(step)
            if step.done:
                return total

    def _many_records(self) -> bool:
        """Whether the index holds at least BUILD_RECORDS records (one bounded read)."""
        records = self.layout.records
        return len(self.read(lambda ops: ops.tr.get_range(records, strinc(records), BUILD_RECORDS))) >= BUILD_RECORDS

    def _build_fill(self, progress: Callable[[FillProgress], None] | None, actor: str | None) -> int:
        """Build the filling windows no one holds from sorted data; returns the records read."""
        now = int(self.clock())
        build = WindowsBuild.start(self, lambda ops: ops.filler.unheld_windows(now), from_records=True)
        if build is None:
            return 0
        windows = tuple((window, None) for window in build.windows.values())
        event = self._event(actor, "FillWindows")
        try:
            done = False
            while not done:
                before = build.counts.records
                done = build.read_records()
                if progress:
                    progress(FillProgress(False, build.counts.records - before, windows))
            build.finish()
        except BuildLost:  # a window update or another process took windows over: fills take the rest
            build.abandon()
            return build.counts.records
        except BaseException:  # stopped (or failed): the windows go back to any fill at once
            with contextlib.suppress(Exception):
                build.abandon()
            raise
        finally:
            build.close()
        if event is not None:
            self.db.run(lambda tr: event.write(tr, phase="finished", completed=_windows(w for w, _ in windows)))
        if progress:
            progress(FillProgress(True, 0, windows, build.counts.entries))
        return build.counts.records

    # -- the stored format (upgrade.py) ------------------------------------------------------

    def upgrade_step(
        self,
        to_format: int | None = None,
        max_records: int = 200,
        actor: str | None = None,
        job: JobEvents | None = None,
    ) -> UpgradeProgress:
        """One bounded transaction of the upgrade of the index's data towards ``to_format``
        (the newest by default): a batch of records rewritten, or the format raised.  Raise only
        an index that every process writing to it reads at ``to_format`` (the server checks that:
        ``fdb_leaderboard/formats.py``).  Recorded as a job (``UpgradeIndex``: its start, progress
        and the batch that raises a format) when ``job`` is given, else the raise alone."""
        check_at_least(max_records, 1, "max_records")
        target = formats.NEWEST_INDEX if to_format is None else to_format
        job = job or self._job(actor, "UpgradeIndex", to_format=target)
        event = job.next_event()

        def step(ops: Operations) -> UpgradeProgress:
            before = ops.upgrader.current()
            progress = ops.upgrader.step(target, max_records)
            if progress.format > before or progress.records_processed:
                job.in_batch(ops.tr, event, progress.done, format=progress.format, records=progress.records_done)
            return progress

        progress = self.run(step)
        job.committed(event)
        return progress

    def upgrade(
        self,
        to_format: int | None = None,
        max_records: int = 200,
        keep_going: Callable[[], bool] | None = None,
        progress: Callable[[UpgradeProgress], None] | None = None,
        actor: str | None = None,
    ) -> UpgradeProgress:
        """Upgrade the index to ``to_format`` batch by batch, until done or ``keep_going()`` says
        stop (an interrupted upgrade resumes where it stopped, from any process); returns where it
        stands, with this call's records and heads changed."""
        to_format = formats.NEWEST_INDEX if to_format is None else to_format
        job = self._job(actor, "UpgradeIndex", to_format=to_format)
        records = changed = 0
        while True:
            step = self.upgrade_step(to_format, max_records, job=job)
            records += step.records_processed
            changed += step.heads_changed
            if progress is not None:
                progress(step)
            if step.done or (keep_going is not None and not keep_going()):
                if not step.done:
                    job.stopped(self.db.run, format=step.format, records=step.records_done)
                return dataclasses.replace(step, records_processed=records, heads_changed=changed)

    def upgrade_state(self) -> tuple[int, UpgradeState | None]:
        """The format the index's options record (0: none recorded, read as format 2) and the
        upgrade under way (None: none), in one read."""
        return self.read(lambda ops: (ops.txn.options().format, ops.upgrader.state()))

    def keep_ahead(
        self,
        now: int,
        types: Sequence[tuple[int, int, int, int]],
        horizon: int,
        certain_within: int = 0,
        rng: random.Random | None = None,
        nlevels: int | None = None,
        calendar: Sequence[CalendarPeriods] = (),
        actor: str | None = None,
    ) -> tuple[Window, ...]:
        """Add the regular and calendar windows needed from ``now`` until ``now + horizon``.

        ``types`` lists ``(type, base, increment, duration)``; ``calendar`` lists calendar
        periods (local days, ISO weeks, months in a time zone).  A window that has started (or
        starts within ``certain_within``) is always added; a later one with a probability
        falling linearly to 0 at the horizon, so many servers calling this at once rarely
        all write the directory.  Returns the windows added.
        """
        rng = rng or random.Random()
        wanted = plan_ahead(now, types, horizon, certain_within, rng, calendar)
        if not wanted:
            return ()

        event = self._event(actor, "KeepAhead")

        def write(ops: Operations) -> tuple[Window, ...]:
            added = ops.windows.add_missing(wanted, now, nlevels or 6)
            if event is not None and added:
                event.write(ops.tr, now=now, added=_windows(added))
            return added

        return self.run(write)

    # -- fair play: hidden records, score rules, deleting many records --------------------

    def hide_record(
        self, pk: object, reason: str = "", actor: str | None = None, idempotency_key: str | None = None
    ) -> bool:
        """Hide a record from every window at once, keeping its entries and metadata (see
        hiding.py); True if it was hidden now, False if it was hidden already.  NotFound if it
        does not exist."""
        now = int(self.clock())
        event = self._event(actor, "HideRecord")

        def write(ops: Operations) -> bool:
            hidden = ops.hider.hide(pk, actor, reason, now)
            if event is not None and hidden:
                event.write(ops.tr, pk=ops.txn.pk(pk).pk, reason=reason)
            return hidden

        return self.run_once(
            idempotency_key,
            "HideRecord",
            lambda ops: (ops.txn.pk(pk).pk, reason),
            write,
            lambda hidden: (hidden,),
            lambda answer: answer[0],
        )

    def restore_record(self, pk: object, idempotency_key: str | None = None, actor: str | None = None) -> bool:
        """Put a hidden record back in every window, exactly as if it had never been hidden; True
        if it was restored now, False if it was not hidden.  NotFound if it does not exist."""
        event = self._event(actor, "RestoreRecord")

        def write(ops: Operations) -> bool:
            restored = ops.hider.restore(pk)
            if event is not None and restored:
                event.write(ops.tr, pk=ops.txn.pk(pk).pk)
            return restored

        return self.run_once(
            idempotency_key,
            "RestoreRecord",
            lambda ops: (ops.txn.pk(pk).pk,),
            write,
            lambda restored: (restored,),
            lambda answer: answer[0],
        )

    def hidden_record(self, pk: object) -> HiddenRecord | None:
        """Who hid the record, when and why; None if it is not hidden."""
        return self.read(lambda ops: ops.hider.get(pk))

    def hidden_records(
        self, limit: int = 100, continuation: bytes | None = None
    ) -> tuple[list[HiddenRecord], bytes | None]:
        """A page of hidden records in primary-key order, and the continuation of the next (None: last)."""
        return self.read(lambda ops: ops.hider.list(limit, continuation))

    def score_rules(self) -> ScoreRules:
        """The index's score rules (see rules.py)."""
        return self.read(lambda ops: ops.txn.rules())

    def set_score_rules(self, rules: ScoreRules, actor: str | None = None) -> ScoreRules:
        """Replace the index's score rules (``ScoreRules()``: none); returns them as kept (bounds in
        the index's score type).  Writes from then on follow them."""
        if not isinstance(rules, ScoreRules):
            raise InvalidArgument(f"expected ScoreRules, not {type(rules).__name__}")
        checked = rules.checked(self.settings.score_type, self.settings.columns)
        event = self._event(actor, "SetScoreRules")

        def write(ops: Operations) -> ScoreRules:
            directory = ops.txn.directory() or Directory(0, ops.txn.default_high_score_first())
            ops.txn.save_directory(directory.replace(rules=checked.to_proto() if checked else None))
            if event is not None:
                event.write(ops.tr, rules=checked.describe())
            return checked

        return self.run(write)

    def delete_records(
        self,
        group: tuple | None,
        max_records: int = 200,
        continuation: bytes | None = None,
        progress: Callable[[DeletionProgress], None] | None = None,
        keep_going: Callable[[], bool] | None = None,
        idempotency_key: str | None = None,
        actor: str | None = None,
    ) -> DeletionProgress:
        """Delete every record of ``group`` (its entries, and the records left with nothing), or
        every record of the index (``group`` None), in transactions of ``max_records`` records,
        until done or ``keep_going()`` says stop; returns the totals, ``done`` and, for a group
        of an index without a complete all-time window, the ``continuation`` to resume from.
        The index, its windows and settings stay.  See deletion.py.

        With ``idempotency_key``, batch ``n`` is applied once under ``key#n``: the same call sent
        again answers the batches it applied from their keys and goes on from there.
        """
        check_at_least(max_records, 1, "max_records")
        if idempotency_key is not None:
            check_key(idempotency_key)
        action = "DeleteRecords" if group is None else "DeleteGroup"
        job = self._job(actor, "DeleteRecords", **({"all_records": True} if group is None else {"group": group}))
        total = DeletionProgress(False, continuation=continuation)
        number = 0
        while True:
            step = self._delete_step(group, max_records, total, action, idempotency_key, number, job)
            total = total + step
            number += 1
            if progress is not None:
                progress(total)
            if total.done:
                self._latest_after_deletion()  # the latest timestamp, if a deleted record held it
                return total
            if keep_going is not None and not keep_going():
                job.stopped(self.db.run, **_deletion_totals(total))
                return total

    def _delete_step(
        self,
        group: tuple | None,
        max_records: int,
        total: DeletionProgress,
        action: str,
        idempotency_key: str | None,
        number: int,
        job: JobEvents,
    ) -> DeletionProgress:
        """One batch of :meth:`delete_records` (``total``: what the batches before it did)."""
        event = job.next_event()

        def write(ops: Operations) -> DeletionProgress:
            if group is None:
                step = ops.deleter.delete_all_step(max_records)
            else:
                group_bytes = Reader(ops.txn).group_bytes(group)
                step = ops.deleter.delete_group_step(group_bytes, max_records, total.continuation)
            job.in_batch(ops.tr, event, step.done, **_deletion_totals(total + step))
            return step

        key = None if idempotency_key is None else batch_key(idempotency_key, number)
        done = self.run_once(
            key,
            action,
            lambda ops: (group, max_records, total.continuation or b""),
            write,
            lambda p: (p.done, p.records_changed, p.records_deleted, p.entries_deleted, p.continuation or b""),
            lambda a: DeletionProgress(a[0], a[1], a[2], a[3], a[4] or None),
        )
        job.committed(event)
        return done

    # -- reads (see reads.py for the semantics) -------------------------------------------

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
        return self._reader(lambda r: r.rank(pk, WindowRef(window_type, timestamp), group, self._mode(mode)))

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
        mode = self._mode(mode)
        return self._listing(
            lambda r: [e] if (e := r.rank_and_entry(pk, WindowRef(window_type, timestamp), group, mode)) else []
        )

    def top(
        self,
        n: int,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: tuple = (),
        mode: RankMode | None = None,
    ) -> Listing:
        mode = self._mode(mode)
        return self._listing(lambda r: r.top(n, WindowRef(window_type, timestamp), group, mode))

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
        mode = self._mode(mode)
        return self._listing(
            lambda r: r.around(
                pk,
                above,
                below,
                WindowRef(window_type, timestamp),
                group,
                mode,
                if_absent or IfAbsent.EMPTY,
            )
        )

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
        return self._reader(lambda r: r.count(WindowRef(window_type, timestamp), group))

    def count_in_window(
        self, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> tuple[int, Window]:
        """:meth:`count` and the window counted."""
        return self._reader(lambda r: (r.count(WindowRef(window_type, timestamp), group), r.txn.window_read))

    def score_for_rank(
        self, rank: int, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> int | float | tuple | None:
        return self._reader(lambda r: r.score_for_rank(rank, WindowRef(window_type, timestamp), group))

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
        ref = WindowRef(window_type, timestamp)
        if is_score_key(score, self.settings.columns):
            return self._reader(lambda r: compat.rank_for_score_key(r, score, ref, group))
        return self._reader(lambda r: r.rank_for_score(score, ref, group))

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
        mode = self._mode(mode)

        def read(tr: Any) -> list[RankedEntry | None]:
            txn = IndexTransaction(self, tr)
            found = social.ranks_of(Reader(txn), pks, WindowRef(window_type, timestamp), group, mode)
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
        mode = self._mode(mode)
        return self._listing(lambda r: social.board_of(r, pks, WindowRef(window_type, timestamp), group, mode))

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
        mode = self._mode(mode)

        def read(tr: Any) -> pages.Page:
            txn = IndexTransaction(self, tr)
            found = pages.page(Reader(txn), page, size, WindowRef(window_type, timestamp), group, mode)
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
        return self._reader(lambda r: pages.percentile(r, pk, WindowRef(window_type, timestamp), group))

    def score_for_percentile(
        self, percentile: float, window_type: int = ALL_TIME, timestamp: int | None = None, group: tuple = ()
    ) -> int | float | tuple | None:
        """The score at ``percentile`` (0: the worst, 100: the best), interpolated (see pages.py)."""
        return self._reader(
            lambda r: pages.score_for_percentile(r, percentile, WindowRef(window_type, timestamp), group)
        )

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
        mode = self._mode(mode)

        def read(tr: Any) -> moves.Movement:
            txn = IndexTransaction(self, tr)
            found = moves.movement(Reader(txn), pk, window_type, timestamp, group, mode)
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
        mode = self._mode(mode)

        def read(tr: Any) -> moves.History:
            txn = IndexTransaction(self, tr)
            found = moves.history(Reader(txn), pk, window_type, timestamp, count, group, mode)
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
        return self._reader(lambda r: r.groups(WindowRef(window_type, timestamp), limit, continuation or None))

    def trim(self, before: int, max_records: int = 200, actor: str | None = None) -> int:
        """Drop entries before ``before`` that no window's value depends on, in batches.

        BEST and LATEST keep every entry that is some window's value; SUM keeps entries in
        any window but all-time and folds the rest into a carried total per group.  Windows
        starting before ``before`` cannot be added afterwards.  Returns entries removed.
        """
        before = check_timestamp(before, self.checked_timebase)
        job = self._job(actor, "Trim", before=before)
        removed = 0
        cursor: bytes | None = None
        while True:
            event = job.next_event()

            def step(
                ops: Operations,
                cursor: bytes | None = cursor,
                event: PendingEvent | None = event,
                removed: int = removed,
            ) -> tuple:
                count, following = ops.trimmer.trim_step(before, cursor, max_records)
                job.in_batch(ops.tr, event, following is None, entries_removed=removed + count)
                return count, following

            count, cursor = self.run(step)
            removed += count
            job.committed(event)
            if cursor is None:
                return removed

    def check(self, max_problems: int = 100) -> list[str]:
        """Every inconsistency found (at most ``max_problems``); empty when the index is sound."""
        return self.check_report(max_problems).problems

    def check_parts(self, parts: int) -> list[bytes]:
        """Continuations of about ``parts`` pieces of one whole check, about as long, to run at once
        (each through :meth:`check_report`, a Verify call, a process...; see ``check_parts.py``)."""
        check_at_least(parts, 1, "parts")
        return plan_parts(lambda fn: self.read(lambda ops: fn(ops.txn, ops.writer)), min(parts, MAX_CHECK_PARTS))

    def check_in_parts(self, parts: int, threads: int | None = None, max_problems: int = 100) -> CheckReport:
        """The whole check in ``parts`` pieces run on ``threads`` threads (default: one each), one
        report: on FoundationDB the pieces' reads are in flight together."""
        tokens = self.check_parts(parts)
        return run_parts(
            lambda token: self.check_report(max_problems, continuation=token),
            tokens,
            max_problems,
            threads or len(tokens),
        )

    def check_report(
        self,
        max_problems: int = 100,
        progress: Callable[[CheckReport], None] | None = None,
        batch_keys: int = 200,
        keep_going: Callable[[], bool] | None = None,
        continuation: bytes | None = None,
    ) -> CheckReport:
        """Check the index in bounded read transactions (any size); ``progress`` sees the report grow,
        ``keep_going`` returning False stops it (the report says how far it got, and its
        ``continuation`` where a later call, given it, goes on)."""
        return check_index(
            lambda fn: self.read(lambda ops: fn(ops.txn, ops.writer)),
            max_problems,
            progress,
            batch_keys,
            keep_going,
            continuation,
        )


@contextlib.contextmanager
def _refused_at(position: Callable[[], int]) -> Iterator[None]:
    """Note on a refusal which record of a batch it was (``record_position``: ``position()``)."""
    try:
        yield
    except LeaderboardError as exc:
        exc.record_position = position()  # type: ignore[attr-defined]
        raise


def _warn(outcome: WriteOutcome) -> int:
    if outcome.warning:
        warnings.warn(outcome.warning, NoWindowsWarning, stacklevel=3)
    return outcome.windows_changed


def _windows(windows: Iterable[Window]) -> str:
    """Windows as an event's detail."""
    return "; ".join(window.describe() for window in windows)


def _deletion_totals(progress: DeletionProgress) -> dict[str, object]:
    return {
        "records_changed": progress.records_changed,
        "records_deleted": progress.records_deleted,
        "entries_deleted": progress.entries_deleted,
    }
