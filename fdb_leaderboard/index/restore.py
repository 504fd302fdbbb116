"""An index rebuilt from a dump (``snapshot.py``), under any prefix of either store.

:class:`Restorer` takes the dump's parts in order, each step bounded transactions:

1. the rows are written as they are (an idempotency key also gets its place in the keys' time
   order);
2. at the ``copied`` mark the windows are rebuilt: each complete window's primary B-tree and
   ranked sets from the values the records' heads hold, sorted and written once in key order
   (``build.py``; below index format 4, the primary B-tree from the heads and the ranked sets by
   a fill's second phase); a window the source was still filling is filled from the records'
   entries instead;
3. each changed unit then replaces what it had (a record's values move in every window, as a
   write would move them), so the index stays sound however many changes follow;
4. the state rows end it: the source's windows at the dump's moment (a window added there is
   added and filled, one deleted is deleted, one the source was filling is filled again), its
   options, sub-directories, latest timestamp and idempotency keys' count;
5. the end's SHA-256 must match the parts received, or the restore fails.

The caller publishes the index (a catalog entry) only once :meth:`Restorer.finish` returned.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence

from .. import formats
from ..errors import NotFound
from ..proto import index_pb2
from ..proto import service_pb2 as pb
from ..rankedset import Steps, run_together
from ..store.api import Database, KeyValue, Transaction, strinc
from . import tuplecodec as tuples
from .build import WindowsBuild
from .directory import Directory, Window
from .layout import IndexLayout
from .leaderboard import LeaderboardIndex, Operations
from .snapshot import (
    APPLIED,
    APPLIED_COUNT,
    CURSORS,
    DIRECTORY,
    FORMAT_VERSION,
    LATEST,
    OPTIONS,
    RECORDS,
    SUB_DIRECTORIES,
    Checksum,
    DumpError,
    rows_of,
)

WRITE_BYTES = 1 << 20  # about this many bytes of changed units per transaction
HEADS_PER_STEP = 2000  # heads read per transaction when the windows are rebuilt
UNITS_PER_STEP = 1000  # changed units applied per transaction
RECORDS_PER_STEP = 100  # ... of which records


@dataclasses.dataclass
class RestoreCounts:
    rows: int = 0
    changes: int = 0
    entries_ranked: int = 0
    phase: str = "copying"


class Restorer:
    """Builds the index of a dump under ``prefix`` of ``db`` (which must hold nothing there)."""

    def __init__(self, db: Database, prefix: bytes, header: pb.DumpHeader) -> None:
        if header.format_version != FORMAT_VERSION:
            raise DumpError(
                f"the dump is in format version {header.format_version}; this version of fdb-leaderboard "
                f"restores version {FORMAT_VERSION}"
            )
        # Its rows are in the index's format (a newer release's dump: refused before anything is written).
        formats.check_readable("index", header.index_format or formats.UNRECORDED_INDEX, "the dumped index")
        self.db = db
        self.prefix = prefix
        self.header = header
        self.layout = IndexLayout(prefix)
        self._index: LeaderboardIndex | None = None
        self.counts = RestoreCounts()
        self.built = False
        self._unfinished: tuple[bytes, list[KeyValue]] | None = None  # a unit spread over parts

    @property
    def index(self) -> LeaderboardIndex:
        """The index restored, with the settings its options row holds (the first row of a dump)."""
        if self._index is None:
            try:
                self._index = LeaderboardIndex.open(self.db, self.prefix)
            except NotFound:
                raise DumpError("the dump holds no index options: it is not a dump of an index") from None
        return self._index

    # -- rows ------------------------------------------------------------------------------

    def write_rows(self, rows: Sequence[KeyValue]) -> None:
        """Write dumped rows as they are, in bounded transactions (several in flight where the
        store takes them: the rows are only set, and nothing reads them before the build)."""
        writes = self.db.blind_writes()
        for key, value in self._stored(rows):
            writes.set(key, value)
        writes.flush()
        self.counts.rows += len(rows)

    def _stored(self, rows: Sequence[KeyValue]) -> Iterator[KeyValue]:
        """What dumped rows store: each under the prefix, an idempotency key also in the keys' time order."""
        prefix, layout = self.prefix, self.layout
        for key, value in rows:
            yield prefix + key, value
            if key.startswith(APPLIED):
                applied = index_pb2.AppliedRequest.FromString(value)
                yield layout.applied_at_key(applied.applied_at, tuples.unpack(key[len(APPLIED) :])[0]), b""

    def _write_batch(self, tr: Transaction, rows: Sequence[KeyValue]) -> None:
        tr.set_many(list(self._stored(rows)))

    # -- the windows rebuilt -------------------------------------------------------------------

    def build(self) -> Iterator[RestoreCounts]:
        """Rebuild the windows from the rows written (step 2 of the module docstring), saying
        how far it got after each transaction."""
        if not formats.allows(self.index.format, formats.SORTED_BUILDS):
            yield from self._build_in_steps()
            return
        self.index.run(self._mark_windows)
        built = WindowsBuild.start(self.index, _complete_windows, from_records=False)
        self.counts.phase = "ranking"
        if built is not None:
            try:
                position: bytes | None = b""
                while position is not None:
                    position = self.index.read(lambda ops, at=position: self._heads_step(ops, at, built))
                    yield self.counts
                built.finish()
            finally:
                built.close()
            self.counts.entries_ranked += built.counts.entries
        yield from self._fill()
        self.built = True
        self.counts.phase = "built"

    def _mark_windows(self, ops: Operations) -> None:
        """The source's fill positions go; the windows the source was filling fill from the start
        (the complete ones are built from the records' heads, see :meth:`build`)."""
        directory = ops.txn.directory()
        ops.tr.clear_range(self.prefix + CURSORS, self.prefix + strinc(CURSORS))
        if directory is not None:
            ops.windows.save_filling(directory, {window.lb_key for window in directory.filling()}, True)

    def _build_in_steps(self) -> Iterator[RestoreCounts]:
        """:meth:`build` below index format 4 (``formats.SORTED_BUILDS``), as release 0.2.0
        rebuilds: each complete window's primary B-tree from the heads, then its ranked sets by the
        fill's second phase, in key order."""
        ranked = self.index.run(self._mark_for_steps)
        self.counts.phase = "ranking"
        position: bytes | None = b""
        while position is not None:
            position = self.index.run(lambda ops, at=position: self._primary_step(ops, at, ranked))
            yield self.counts
        yield from self._fill()
        self.built = True
        self.counts.phase = "built"

    def _mark_for_steps(self, ops: Operations) -> set[int]:
        """Complete windows become phase-2 fills (their B-trees come from the heads), filling ones
        fill from the start; returns the former's keys."""
        directory = ops.txn.directory()
        ops.tr.clear_range(self.prefix + CURSORS, self.prefix + strinc(CURSORS))
        if directory is None:
            return set()
        ranked = {window.lb_key for window in directory.windows if not window.filling}
        for window in directory.windows:
            if not window.filling:
                ops.txn.save_cursor(window, index_pb2.FillCursor(records_done=True))
        ops.windows.save_filling(directory, {window.lb_key for window in directory.windows}, True)
        return ranked

    def _primary_step(self, ops: Operations, position: bytes, ranked: set[int]) -> bytes | None:
        """The primary B-tree entries of up to HEADS_PER_STEP records' heads, from ``position``."""
        records = self.layout.records
        begin = records + position if position else records
        rows = ops.tr.get_range(begin, strinc(records), HEADS_PER_STEP)
        directory = ops.txn.directory()
        windows = {lb_key: directory.by_key(lb_key) for lb_key in ranked} if directory is not None else {}
        for key, raw in rows:
            pk_nested = key[len(records) :]
            pk_flat = tuples.pack(tuples.unpack(pk_nested)[0])
            head = index_pb2.RecordHead.FromString(raw)
            tree = self.layout.values_tree(head.hidden)  # a hidden record's values: ranked nowhere
            for state in head.windows:
                window = windows.get(state.lb_key)
                if window is not None:
                    ops.tr.set(tree + window.key_bytes + state.group + state.element + pk_flat, b"")
        if len(rows) < HEADS_PER_STEP:
            return None
        return rows[-1][0][len(records) :] + b"\x00"

    def _heads_step(self, ops: Operations, position: bytes, built: WindowsBuild) -> bytes | None:
        """The values in the complete windows of up to HEADS_PER_STEP records' heads, from
        ``position``, handed to the build."""
        records = self.layout.records
        begin = records + position if position else records
        rows = ops.tr.get_range(begin, strinc(records), HEADS_PER_STEP)
        built.take_heads((key[len(records) :], index_pb2.RecordHead.FromString(raw)) for key, raw in rows)
        if len(rows) < HEADS_PER_STEP:
            return None
        return rows[-1][0][len(records) :] + b"\x00"

    def _fill(self) -> Iterator[RestoreCounts]:
        if self.index.read(lambda ops: ops.txn.directory() is not None and bool(ops.txn.directory().filling_windows)):
            self.index.fill(max_records=500)  # built from sorted data when there are many records
        while True:
            step = self.index.fill_step(max_records=500, max_entries=20_000)
            self.counts.entries_ranked += step.entries_ranked
            yield self.counts
            if step.done:
                return

    # -- changes -------------------------------------------------------------------------------

    def take_changes(self, message: pb.DumpChanges) -> None:
        """Apply a part's changed units; a unit spread over parts is applied once it is whole."""
        whole = []
        for unit in message.units:
            if self._unfinished is not None and self._unfinished[0] != unit.unit:
                raise DumpError("a changed unit spread over parts is cut short: the dump is damaged")
            rows = (self._unfinished[1] if self._unfinished else []) + rows_of(unit.rows)
            self._unfinished = (unit.unit, rows) if unit.more else None
            if not unit.more:
                whole.append((unit.unit, rows))
        self.apply_changes(whole)

    def apply_changes(self, units: Sequence[tuple[bytes, list[KeyValue]]]) -> None:
        """Replace each unit with its rows (step 3), in bounded transactions."""
        if not self.built:
            raise DumpError("the dump's changes come before its copied mark: the parts are out of order")
        self.counts.phase = "catching up"
        latest = list(dict(units).items())  # a unit sent twice: its last rows are what it is now
        for batch in _change_batches(latest):
            self.db.run(lambda tr, batch=batch: self._replace(Operations(self.index, tr), batch))
        self.counts.changes += len(units)
        self.counts.rows += sum(len(rows) for _, rows in units)

    def _replace(self, ops: Operations, units: Sequence[tuple[bytes, list[KeyValue]]]) -> None:
        records = [unit[len(RECORDS) :] for unit, _ in units if unit.startswith(RECORDS)]
        ops.txn.prefetch(heads=records)
        # The records' entries and the idempotency keys' old rows, read together (one round trip).
        entries = {pk: ops.tr.get_range_async(*self.layout.entries_range(pk)) for pk in records}
        applied = {unit: ops.tr.get_async(self.prefix + unit) for unit, _ in units if unit.startswith(APPLIED)}
        for unit, rows in units:
            if unit.startswith(RECORDS):
                pk_nested = unit[len(RECORDS) :]
                self._replace_record(ops, pk_nested, rows, entries[pk_nested].value)
            elif unit.startswith(APPLIED):
                self._replace_applied(ops.tr, unit, applied[unit].value, rows)
            else:
                raise DumpError(f"the dump names a changed unit {unit!r} of no known kind")

    def _replace_record(self, ops: Operations, pk_nested: bytes, rows: list[KeyValue], stored: list[KeyValue]) -> None:
        """The record as ``rows`` have it: its values move in every window it is maintained in.
        Of its entries (``stored``: those here), only the new, changed and gone are written: a
        record written often is sent whole each time, with few new entries."""
        txn, tr, layout = ops.txn, ops.tr, self.layout
        head_key = RECORDS + pk_nested
        old = txn.read_head(pk_nested)
        raw = next((value for key, value in rows if key == head_key), None)
        new = index_pb2.RecordHead.FromString(raw) if raw is not None else None
        before = {(s.lb_key, s.group): s.element for s in old.windows} if old is not None else {}
        after = {(s.lb_key, s.group): s.element for s in new.windows} if new is not None else {}
        directory = txn.directory()
        pk_flat = tuples.pack(tuples.unpack(pk_nested)[0])
        hid, hides = old is not None and old.hidden, new is not None and new.hidden
        updates: list[Steps[None]] = []
        for key in before.keys() | after.keys():
            window = directory.by_key(key[0]) if directory is not None else None
            was, now = before.get(key), after.get(key)
            if window is None or (was == now and hid == hides) or not txn.maintains(window, pk_nested):
                continue
            if hid != hides:  # hidden or restored meanwhile: out of one B-tree, into the other
                if was is not None:
                    updates.append(ops.writer.remove_steps(window, key[1], was, pk_flat, hid))
                if now is not None:
                    updates.append(ops.writer.add_steps(window, key[1], now, pk_flat, hides))
            elif was is None:
                updates.append(ops.writer.add_steps(window, key[1], now, pk_flat, hides))  # type: ignore[arg-type]
            elif now is None:
                updates.append(ops.writer.remove_steps(window, key[1], was, pk_flat, hid))
            else:
                updates.append(ops.writer.move_steps(window, key[1], was, now, pk_flat, hides))
        run_together(updates)
        tr.clear(layout.head_key(pk_nested))
        tr.clear(layout.metadata_key(pk_nested))
        tr.clear(layout.hidden_key(pk_nested))
        kept = dict(stored)
        for key, value in rows:
            key = self.prefix + key
            if kept.pop(key, None) != value:
                tr.set(key, value)
        for gone in kept:
            tr.clear(gone)

    def _replace_applied(self, tr: Transaction, unit: bytes, old: bytes | None, rows: list[KeyValue]) -> None:
        layout = self.layout
        key = tuples.unpack(unit[len(APPLIED) :])[0]
        if old is not None:
            tr.clear(layout.applied_at_key(index_pb2.AppliedRequest.FromString(old).applied_at, key))
            tr.clear(self.prefix + unit)
        self._write_batch(tr, rows)

    # -- the end -------------------------------------------------------------------------------

    def apply_state(self, rows: Sequence[KeyValue]) -> Iterator[RestoreCounts]:
        """The source's own rows at the dump's moment (step 4), then the fills they need."""
        if not self.built or self._unfinished is not None:
            raise DumpError("the dump's state comes before its copied mark or amid a change: it is out of order")
        self.db.run(lambda tr: self._reconcile(Operations(self.index, tr), dict(rows)))
        self.counts.rows += len(rows)
        yield from self._fill()
        self.counts.phase = "done"

    def _reconcile(self, ops: Operations, state: dict[bytes, bytes]) -> None:
        tr, prefix = ops.tr, self.prefix
        for key in (OPTIONS, APPLIED_COUNT):
            if key in state:
                tr.set(prefix + key, state[key])
            else:
                tr.clear(prefix + key)
        if LATEST in state:
            tr.max(prefix + LATEST, state[LATEST])
        tr.clear_range(prefix + SUB_DIRECTORIES[0], prefix + SUB_DIRECTORIES[1])
        ops.txn.changed_metadata()
        for key, value in state.items():
            if SUB_DIRECTORIES[0] <= key < SUB_DIRECTORIES[1]:
                tr.set(prefix + key, value)
        source = self.index.parse_directory(state.get(DIRECTORY))
        target = ops.txn.directory()
        if source is None:
            if target is not None:
                raise DumpError("the dump's windows were all removed from its directory: restore it again")
            return
        kept = {window.lb_key: window for window in target.windows} if target is not None else {}
        windows: list[Window] = []
        for window in source.windows:
            mine = kept.pop(window.lb_key, None)
            if mine is not None and (mine.type, mine.start, mine.end) != (window.type, window.start, window.end):
                raise DumpError(f"window key {window.lb_key} names two windows in the dump: restore it again")
            if window.filling or mine is None:  # the source is filling it, or added it since: fill it here
                if mine is not None:
                    ops.windows.clear_window(mine)
                windows.append(dataclasses.replace(window, filling=True))
            else:
                windows.append(mine)
        for gone in kept.values():  # deleted from the source since
            ops.windows.clear_window(gone)
        ops.txn.save_directory(Directory(source.update_timestamp, source.high_score_first, source.next_key, windows))


def _complete_windows(ops: Operations) -> list[Window]:
    directory = ops.txn.directory()
    return [window for window in directory.windows if not window.filling] if directory is not None else []


def _change_batches(units: Sequence[tuple[bytes, list[KeyValue]]]) -> Iterator[Sequence[tuple[bytes, list[KeyValue]]]]:
    """Changed units in transactions of at most UNITS_PER_STEP units, RECORDS_PER_STEP records
    (each moves its values in every window: read rounds and ranked-set updates) and about
    WRITE_BYTES of rows: an idempotency key is one small row, so a transaction takes many."""
    start = records = size = 0
    for i, (unit, rows) in enumerate(units):
        records += unit.startswith(RECORDS)
        size += sum(len(key) + len(value) for key, value in rows)
        if i + 1 - start >= UNITS_PER_STEP or records >= RECORDS_PER_STEP or size >= WRITE_BYTES:
            yield units[start : i + 1]
            start, records, size = i + 1, 0, 0
    if start < len(units):
        yield units[start:]


Restored = tuple[pb.DumpHeader, pb.DumpEnd, RestoreCounts]


def restoring(db: Database, prefix: bytes, parts: Iterable[pb.DumpPart]) -> Generator[RestoreCounts, None, Restored]:
    """Restore a whole dump under ``prefix`` of ``db``, yielding the counts after each step;
    returns the dump's header, its end and the counts.  Raises DumpError when the parts are
    damaged or out of order (what was written stays: the caller clears ``prefix``)."""
    restorer: Restorer | None = None
    checksum = Checksum()
    for part in parts:
        kind = part.WhichOneof("part")
        if kind == "end":
            if restorer is None or restorer.counts.phase != "done":
                raise DumpError("the dump ends before its state: it is incomplete")
            if part.end.sha256 != checksum.digest() or part.end.parts != checksum.parts:
                raise DumpError("the dump's checksum does not match its parts: it is damaged")
            return restorer.header, part.end, restorer.counts
        checksum.add(part)
        if kind == "header":
            if restorer is not None:
                raise DumpError("the dump has two headers")
            restorer = Restorer(db, prefix, part.header)
            continue
        if restorer is None:
            raise DumpError("the dump does not start with its header")
        if restorer.counts.phase == "done":
            raise DumpError(f"the dump has a {kind} part after its state")
        if kind == "rows":
            if restorer.built:
                raise DumpError("the dump has rows after its copied mark: the parts are out of order")
            restorer.write_rows(rows_of(part.rows))
        elif kind == "copied":
            yield from restorer.build()
        elif kind == "changes":
            restorer.take_changes(part.changes)
        elif kind == "state":
            yield from restorer.apply_state(rows_of(part.state))
        elif kind != "progress":
            raise DumpError(f"the dump has a part of unknown kind {kind!r}")
        yield restorer.counts
    raise DumpError("the dump stops before its end: it is incomplete")


def restore_parts(
    db: Database, prefix: bytes, parts: Iterable[pb.DumpPart], progress: Callable[[RestoreCounts], None] | None = None
) -> Restored:
    """:func:`restoring` to its end, telling ``progress`` the counts after each step."""
    steps = restoring(db, prefix, parts)
    while True:
        try:
            counts = next(steps)
        except StopIteration as done:
            return done.value
        if progress is not None:
            progress(counts)
