"""Filling windows from stored records, in bounded, resumable steps.

A window added over scores already stored is marked filling and not served until complete.
Phase 1 puts each record's value into the window's primary B-tree, record by record in key
order; phase 2 builds the window's ranked sets from that B-tree in key order (appending, one
write per entry instead of a skip-list insert per entry).  Each step is one transaction
bounded in records and entries and saves its position in the window's fill cursor, so an
interrupted fill resumes from any process.  Over many records, a fill builds its windows from
sorted data instead (``build.py``, from index format 4); :meth:`Filler.build_step` and
:meth:`Filler.redo` are its steps.  Below format 4 a bulk load hands the ranked sets of windows
that were empty when it started to phase 2 (:meth:`Filler.defer_ranks_of_empty_windows`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from ..errors import FailedPrecondition, InvalidArgument
from ..proto import index_pb2
from ..store.api import strinc
from . import tuplecodec as tuples
from .aggregation import Value
from .directory import Directory, Window
from .layout import score_prefix
from .records import RecordWriter
from .transaction import IndexTransaction
from .values import check_at_least
from .windows import WindowEditor

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class FillProgress:
    """Where filling stands after one step.

    ``windows`` lists the windows being filled at the start of the step, each with the record
    key its first phase reached (None once every record is in its primary B-tree);
    ``entries_ranked`` counts the primary entries the second phase put into ranked sets.
    """

    done: bool
    records_processed: int
    windows: tuple[tuple[Window, bytes | None], ...]
    entries_ranked: int = 0


class Filler:
    """Fill steps inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction, writer: RecordWriter, editor: WindowEditor) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout
        self.space = txn.space
        self.settings = txn.settings
        self.writer = writer
        self.editor = editor

    def empty_windows(self) -> list[Window]:
        """The complete windows ranking no value, those of leagues aside: a bulk load builds them
        from sorted data (build.py); hidden records' values stay where they are."""
        directory = self.txn.directory()
        if directory is None:
            return []
        league = self.settings.leagues.window_type if self.settings.leagues is not None else None
        return self._holding_nothing([w for w in directory.windows if not w.filling and w.type != league])

    def _holding_nothing(self, windows: Sequence[Window]) -> list[Window]:
        """Those of ``windows`` whose primary B-tree holds no value (one read round)."""
        layout = self.layout
        found = self.tr.get_ranges(
            [(prefix, strinc(prefix), 1, False) for prefix in (layout.window_primary(w.key_bytes) for w in windows)]
        )
        return [window for window, rows in zip(windows, found, strict=True) if not rows]

    def defer_ranks_of_empty_windows(self, held_until: int = 0) -> tuple[Window, ...]:
        """A bulk load's windows below index format 4 (``formats.SORTED_BUILDS``), as release
        0.2.0 defers them: the complete windows holding no value become filling with every record
        done (phase 2), held until ``held_until`` (Unix seconds; a fill that respects holds leaves
        them to the load).  Writes then keep their primary B-trees for every record and leave
        their ranked sets to the fill's second phase, in key order.  Returns the windows marked."""
        directory = self.txn.directory()
        if directory is None:
            return ()
        empty = self._holding_nothing([w for w in directory.windows if not w.filling])
        for window in empty:
            self.txn.save_cursor(window, index_pb2.FillCursor(records_done=True, held_until=held_until))
        if empty:
            self.editor.save_filling(directory, {window.lb_key for window in empty}, True)
        return tuple(empty)

    def unheld_windows(self, now: int) -> list[Window]:
        """The windows being filled that no build or bulk load holds at ``now`` (Unix seconds),
        those of leagues aside (their cohorts are dealt in the records' order): a fill builds them
        from sorted data (build.py)."""
        directory = self.txn.directory()
        league = self.settings.leagues.window_type if self.settings.leagues is not None else None
        out = []
        for window in directory.filling() if directory is not None else ():
            cursor = self.txn.cursor(window)
            if window.type != league and (cursor is None or cursor.held_until <= now):
                out.append(window)
        return out

    def hold(self, windows: Iterable[Window], until: int) -> None:
        """Keep a fill that respects holds away from ``windows`` until ``until`` (Unix seconds)."""
        for window in windows:
            cursor = self.txn.cursor(window)
            if cursor is not None:
                cursor.held_until = until
                self.txn.save_cursor(window, cursor)

    def _start_over(self, filling: list[Window], cursors: dict[int, index_pb2.FillCursor], now: int) -> list[Window]:
        """``filling`` less the windows a build from sorted data holds; a build's window whose hold
        ran out (its process died) is cleared and filled again from its first record."""
        out = []
        for window in filling:
            cursor = cursors[window.lb_key]
            if not cursor.sorted_build:
                out.append(window)
            elif cursor.held_until <= now:
                self.editor.clear_window(window)
                cursors[window.lb_key] = fresh = index_pb2.FillCursor()
                self.txn.save_cursor(window, fresh)
                out.append(window)
        return out

    def fill_step(self, max_records: int, max_entries: int, unheld_at: int | None = None) -> FillProgress:
        """Fill the windows being filled a bounded amount; one transaction.

        Phase 1 puts the values of up to ``max_records`` records (at most about ``max_entries``
        entries read) into the primary B-tree of every window still in it.  Once every record
        is done, phase 2 builds each window's ranked sets from its primary B-tree in key order,
        up to the rest of ``max_entries`` primary entries per step; the window is then complete.
        With ``unheld_at`` (Unix seconds), windows a bulk load holds beyond it are left alone
        (the background fill; ``done`` then means nothing is left that it may do).
        """
        check_at_least(max_records, 1, "max_records")
        check_at_least(max_entries, 1, "max_entries")
        directory = self.txn.directory()
        filling = directory.filling() if directory is not None else []
        cursors = {window.lb_key: self.txn.cursor(window) or index_pb2.FillCursor() for window in filling}
        filling = self._start_over(filling, cursors, int(self.space.clock()))
        if unheld_at is not None:
            filling = [window for window in filling if cursors[window.lb_key].held_until <= unheld_at]
        if not filling:
            return FillProgress(True, 0, ())
        loading = [window for window in filling if not cursors[window.lb_key].records_done]
        processed = entries_read = 0
        reached: bytes | None = None
        if loading:
            put_in: dict[int, int] = {}
            processed, entries_read, reached = self._fill_records(loading, cursors, max_records, max_entries, put_in)
            self._records_read(loading, cursors, processed, put_in, reached)
        budget = max_entries - entries_read
        ranked = 0
        complete = set()
        if reached is None:
            for window in filling:
                if budget <= 0:
                    break
                count, finished = self._rank_from_primary(window, cursors[window.lb_key], budget)
                ranked += count
                budget -= count
                if finished:
                    complete.add(window.lb_key)
                    self.txn.clear_cursor(window)
        if complete:
            self.editor.save_filling(directory, complete, False)  # type: ignore[arg-type]
        windows = tuple((window, None if cursors[window.lb_key].records_done else reached) for window in filling)
        return FillProgress(len(complete) == len(filling), processed, windows, ranked)

    def build_step(self, windows: Sequence[Window], max_records: int, max_entries: int) -> tuple[int, bool]:
        """Phase 1 of a build from sorted data (build.py): the next records' values in ``windows``
        (which this transaction builds) into their heads and the build; returns the records read,
        and True once every record is."""
        cursors = {window.lb_key: self.txn.cursor(window) or index_pb2.FillCursor() for window in windows}
        put_in: dict[int, int] = {}
        processed, _, reached = self._fill_records(windows, cursors, max_records, max_entries, put_in)
        self._records_read(windows, cursors, processed, put_in, reached)
        return processed, reached is None

    def _records_read(
        self,
        windows: Sequence[Window],
        cursors: dict[int, index_pb2.FillCursor],
        processed: int,
        put_in: dict[int, int],
        reached: bytes | None,
    ) -> None:
        """Save in ``windows``' cursors how far phase 1 got: ``processed`` more records, through
        ``reached`` (None: every record)."""
        for window in windows:
            cursor = cursors[window.lb_key]
            cursor.records_processed += processed
            cursor.entries_put_in += put_in.get(window.lb_key, 0)
            if reached is None:
                cursor.records_done = True
            elif not cursor.records_through or reached > cursor.records_through:
                cursor.records_through = reached
            self.txn.save_cursor(window, cursor)

    def redo(self, window: Window, pk_nested: bytes, lost: Sequence[tuple[bytes, bytes]]) -> None:
        """A record written while ``window`` was built from sorted data (build.py): take out every
        value of it the build may hold there (its head's, and ``lost`` (group, element) pairs, a
        deleted head's), then put its value in again from its entries, as a fill does."""
        head = self.txn.read_head(pk_nested)
        pk_flat = tuples.pack(tuples.unpack(pk_nested)[0])
        held = set(lost)
        if head is not None:
            held.update((state.group, state.element) for state in head.windows if state.lb_key == window.lb_key)
        for group_bytes, element in sorted(held):
            if self.tr.get(self.writer.value_key(window, group_bytes, element, pk_flat)) is not None:
                self.writer.index_remove(window, group_bytes, element, pk_flat)
            else:
                self.tr.clear(self.writer.value_key(window, group_bytes, element, pk_flat, hidden=True))
        if head is not None:
            directory = self.txn.directory()
            entries = self.txn.read_entries(pk_nested, window.start, window.end)
            self._fill_record(pk_nested, head, [window], entries, directory, {})  # type: ignore[arg-type]

    def _fill_records(
        self,
        windows: Sequence[Window],
        cursors: dict[int, index_pb2.FillCursor],
        max_records: int,
        max_entries: int,
        put_in: dict[int, int],
    ) -> tuple[int, int, bytes | None]:
        """Phase 1 for ``windows``: (records processed, entries read, last record key or None if all
        done); ``put_in`` counts the values put in each window's primary B-tree, by window key."""
        directory = self.txn.directory()
        positions = [cursors[window.lb_key].records_through for window in windows]
        begin_cursor = min(positions) if all(positions) else None
        records = self.layout.records
        begin = records + begin_cursor + b"\x00" if begin_cursor is not None else records
        rows = self.tr.get_range(begin, strinc(records), max_records)
        # Every record's entries are read at once (one round trip), then filled in key order.
        work = []
        for key, raw in rows:
            pk_nested = key[len(records) :]
            pending = [w for w, at in zip(windows, positions, strict=True) if not at or pk_nested > at]
            entries = None
            if pending:
                start = min(window.start for window in pending)
                end = max(window.end for window in pending)
                entries = self.txn.issue_entries(pk_nested, start, end)
            work.append((pk_nested, raw, pending, entries))
        entries_read = processed = 0
        last: bytes | None = None
        for pk_nested, raw, pending, entries in work:
            if entries is not None:
                head = index_pb2.RecordHead.FromString(raw)
                entries_read += self._fill_record(pk_nested, head, pending, entries(), directory, put_in)  # type: ignore[arg-type]
            processed += 1
            last = pk_nested
            if entries_read >= max_entries:
                break
        if processed == len(rows) and len(rows) < max_records:
            return processed, entries_read, None
        return processed, entries_read, last

    def _rank_from_primary(self, window: Window, cursor: index_pb2.FillCursor, budget: int) -> tuple[int, bool]:
        """Phase 2: append up to ``budget`` primary entries to the ranked sets; (entries, finished)."""
        prefix = self.layout.window_primary(window.key_bytes)
        begin = prefix + cursor.ranked_through + b"\x00" if cursor.ranked_through else prefix
        rows = self.tr.get_range(begin, strinc(prefix), budget)
        group_size = self.settings.group_size
        element_end = group_size + 2 + self.settings.context_size  # items before the pk
        runs: dict[bytes, list[tuple[bytes, int]]] = {}
        for key, _ in rows:
            ends = tuples.item_ends(key[len(prefix) :], element_end)
            group_end, pk_start = ends[group_size - 1] if group_size else 0, ends[-1]
            group_bytes = key[len(prefix) : len(prefix) + group_end]
            element = key[len(prefix) + group_end : len(prefix) + pk_start]
            run = runs.setdefault(group_bytes, [])
            if run and run[-1][0] == element:
                run[-1] = (element, run[-1][1] + 1)
            else:
                run.append((element, 1))
        for group_bytes, run in runs.items():
            self.space.ranked_set(window, group_bytes).append(self.tr, run)
            if self.settings.dense_ranks:  # the distinct scores, ascending as the elements are
                scores = dict.fromkeys(score_prefix(element) for element, _ in run)
                self.space.dense_set(window, group_bytes).append(self.tr, [(score, 1) for score in scores])
        finished = len(rows) < budget
        if not finished:
            cursor.ranked_through = rows[-1][0][len(prefix) :]
            cursor.entries_ranked += len(rows)
            self.txn.save_cursor(window, cursor)
        return len(rows), finished

    def _fill_record(
        self,
        pk_nested: bytes,
        head: index_pb2.RecordHead,
        windows: Sequence[Window],
        rows: Sequence[tuple[int, int, Any]],
        directory: Directory,
        put_in: dict[int, int],
    ) -> int:
        """Put the record's value from ``rows`` (its entries in the windows' span) into ``windows``
        (counted in ``put_in`` by window key, but for a hidden record's, which no ranked set takes)."""
        pk_flat = tuples.pack(tuples.unpack(pk_nested)[0])
        values = []
        for ts, seq, (group, score, context) in rows:
            group_bytes = tuples.pack(group)
            values.append(
                (group_bytes, Value(score, ts, seq, tuple(context), self.txn.packer(group_bytes)(score, ts, context)))
            )
        carried = self.writer.carried_totals(head)
        counts: dict[tuple[int, bytes], int] = {}
        try:
            computed = self.writer.fold(values, directory, pk_nested, carried, only=windows, counts=counts)
        except InvalidArgument as exc:  # a SUM over entries whose totals in older windows fit
            raise FailedPrecondition(
                f"record {tuples.unpack(pk_nested)[0]!r} cannot be filled into "
                f"{', '.join(window.describe() for window in windows)}: {exc}; delete or rewrite the "
                "record, or remove the window"
            ) from exc
        filled = {window.lb_key for window in windows}
        building = self.txn.building
        for key, value in computed.items():
            window = directory.by_key(key[0])
            if key[0] in building:  # a build from sorted data writes it (build.py)
                self.txn.emit(window, key[1], value.element, pk_flat, head.hidden)  # type: ignore[arg-type]
            else:
                self.writer.index_add(window, key[1], value.element, pk_flat, head.hidden)  # type: ignore[arg-type]
            if not head.hidden:
                put_in[key[0]] = put_in.get(key[0], 0) + 1
        # A rebuilt window keeps its key: what its states counted stays (the entries found there
        # may be fewer, after a trim).
        for state in head.windows:
            key = (state.lb_key, state.group)
            if key in counts:
                counts[key] = max(counts[key], state.submissions)
        kept = [state for state in head.windows if state.lb_key not in filled]
        self.writer.write_head(head, kept, computed, pk_nested, counts)
        return len(rows)


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last may be shorter; none is empty)."""
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
