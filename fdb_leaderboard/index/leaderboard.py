"""The index's facade: :class:`LeaderboardIndex`, one method per operation, each one transaction.

This module holds its creation, writes, fair play, trims and checks; its reads are
``facade_reads.py``'s, its window upkeep and upgrades ``facade_upkeep.py``'s, and how it runs a
transaction ``operations.py``'s.  Every public method runs in one store transaction unless its
docstring says it works in bounded batches.  ``LeaderboardIndex.run(fn)`` composes several operations in one
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
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from .. import formats
from ..errors import AlreadyExists, InvalidArgument, LeaderboardError, NotFound, NoWindowsWarning
from ..proto import index_pb2
from ..store.api import Database, Transaction
from .audit import LOCAL_ACTOR, JobEvents, PendingEvent, expire_in_batches
from .build import WindowsBuild
from .calendar import timebase_scale
from .check_parts import MAX_CHECK_PARTS, plan_parts, run_parts
from .checker import CheckReport, check_index
from .deletion import DeletionProgress
from .directory import Directory, Window, WindowUpdate
from .facade_reads import ReadMethods
from .facade_upkeep import UpkeepMethods
from .hiding import HiddenRecord
from .idempotency import batch_key, check_key
from .latest import SCAN_ENTRIES as LATEST_SCAN
from .layout import IndexLayout
from .loading import BulkLoad
from .operations import Operations
from .reads import Reader
from .records import Entry
from .rules import ScoreRules
from .settings import IndexSettings
from .transaction import RecordKey
from .values import check_at_least, check_timestamp, normalize_score

__all__ = ["LOCAL_ACTOR", "LeaderboardIndex", "Operations"]

NO_WINDOWS = (
    "the index has no windows yet: the score is stored but ranked in no window until a window update "
    "adds some (`fdb-leaderboard windows apply`), which fills them from the stored scores"
)


@dataclasses.dataclass(frozen=True)
class WriteOutcome:
    """What a record write did: window values changed, and a warning when it is ranked nowhere."""

    windows_changed: int
    warning: str | None = None


class LeaderboardIndex(ReadMethods, UpkeepMethods):
    """A time-windowed leaderboard index under key prefix ``prefix`` of store ``db``."""

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


def _deletion_totals(progress: DeletionProgress) -> dict[str, object]:
    return {
        "records_changed": progress.records_changed,
        "records_deleted": progress.records_deleted,
        "entries_deleted": progress.entries_deleted,
    }
