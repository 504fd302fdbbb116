"""Windows built from sorted data: every B-tree entry and ranked-set node written once, in order.

A bulk load, a fill or a restore that puts many records into windows holding nothing yet hands
their values to a :class:`WindowsBuild` instead of writing each into the index.  The build sorts
them (``external_sort.py``: bounded memory, temporary files) and then writes, in key order, each
window's primary and hidden B-tree entries and each ranked-set node (and distinct-score node)
once, with its final count (``rankedset.RankedSetBuilder``): no read, no skip-list insert, no
page written twice.  Those writes read nothing, so they go in bounded transactions of their own
(``Database.blind_writes``: on FoundationDB about 10 kB each, 50 in flight).  A value is one
sorted item however many windows share it (a record's one score is the same element in its
all-time, daily, weekly and monthly windows).

The build owns its windows from :meth:`WindowsBuild.start` until they are complete:

- its windows are filling, their cursors say ``sorted_build`` and hold them; a thread renews
  the hold while the building process lives.  Each of the build's transactions checks its token
  (``B = S + (16, lb_key)``, a fence): if its process stopped renewing long enough for another to
  find the hold run out, that one clears the window and fills it again from its records
  (``Filler.fill_step``), and the late build's next write fails instead of mixing in;
- writes by anyone else leave the windows' values, and their heads' states there, as they are,
  and note each record they change once the build has taken it in (``B + (pk, 0)``; a deleted
  record's lost states too, ``B + (pk, 1, group, element)``);
- once every value is written, the build *settles*: each noted record's value is taken out and
  put in again from its entries (``Filler.redo``), and the transaction that finds no record
  left to redo marks the windows complete.  No write is lost, however many come meanwhile.

Memory stays bounded: the sort's buffer, one open node per level of the sets being written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import FailedPrecondition
from ..proto import index_pb2
from ..rankedset import RankedSetBuilder, element_suffix
from ..store.api import Database, FenceMoved, StoreFull, strinc
from . import tuplecodec as tuples
from .directory import Window
from .external_sort import MEMORY_ITEMS, ExternalSort
from .layout import score_prefix

# The index and its Operations, which import this module: typed loosely here.
LeaderboardIndex = Any
Operations = Any

# A build's windows are held this long at a time; the hold is renewed every RENEW_SECONDS while
# its process lives, so another process takes them over only from a build that died.
HOLD_SECONDS = 120
RENEW_SECONDS = 15
SCAN_RECORDS = 1000  # records a fill's build reads per transaction (about ENTRIES_PER_STEP entries)
SCAN_ENTRIES = 20_000
REDO_BATCH = 100  # records redone per transaction while the build settles
# What a B-tree entry written costs the embedded store beyond its key's bytes, with its ranked-set
# node and the pages' slack, as measured (bytes per entry = ENTRY_FACTOR * (key bytes + ENTRY_EXTRA)).
ENTRY_FACTOR, ENTRY_EXTRA = 3, 20

# A sorted item: (group + element + pk, len(group), len(element), hidden, window keys).
Item = tuple[bytes, int, int, bool, tuple[int, ...]]


class BuildLost(FailedPrecondition):
    """A build's windows were taken over by another process (the build stopped renewing its hold):
    they are filled again from the records there."""


@dataclasses.dataclass
class BuildCounts:
    """What a build did: values taken (sorted items), entries and keys written, sort runs."""

    records: int = 0  # records a fill's build read
    items: int = 0
    entries: int = 0  # B-tree entries written (an item in 4 windows is 4)
    keys: int = 0  # keys written by the sorted writes
    runs: int = 0
    spilled_bytes: int = 0
    redone: int = 0  # records redone while settling


class WindowsBuild:
    """The build of ``windows`` of ``index`` from sorted data (see the module docstring)."""

    def __init__(
        self, index: LeaderboardIndex, windows: Sequence[Window], token: bytes, memory_items: int = MEMORY_ITEMS
    ) -> None:
        self.index = index
        self.windows = {window.lb_key: window for window in windows}
        self.lb_keys = frozenset(self.windows)
        self.token = token
        self.counts = BuildCounts()
        self._sort = ExternalSort(memory_items)
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._keeper: threading.Thread | None = None
        self._needs = 0  # bytes of the store the values taken will take, about
        self.phase = "taking values"

    # -- starting ------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        index: LeaderboardIndex,
        choose: Callable[[Operations], Sequence[Window]],
        from_records: bool,
        memory_items: int = MEMORY_ITEMS,
    ) -> WindowsBuild | None:
        """Take the windows ``choose(ops)`` picks (None if it picks none), in one transaction:
        each is marked filling and held by the build.  ``from_records``: the build reads the
        stored records (a fill), so the windows are cleared first and writes note only the
        records it has read; otherwise (a load into windows holding no value, a restore's
        windows) every record written from now on is noted."""
        token = os.urandom(16)
        layout = index.layout

        def claim(ops: Operations) -> tuple[Window, ...]:
            directory = ops.txn.directory()
            chosen = list(choose(ops)) if directory is not None else []
            if not chosen:
                return ()
            until = int(index.clock()) + HOLD_SECONDS
            for window in chosen:
                if from_records:
                    ops.windows.clear_window(window)
                cursor = index_pb2.FillCursor(sorted_build=True, records_done=not from_records, held_until=until)
                ops.txn.save_cursor(window, cursor)
                ops.tr.set(layout.build_token_key(window.key_bytes), token)
            ops.windows.save_filling(directory, {window.lb_key for window in chosen}, True)  # type: ignore[arg-type]
            return tuple(dataclasses.replace(window, filling=True) for window in chosen)

        windows = index.run(claim)
        if not windows:
            return None
        build = cls(index, windows, token, memory_items)
        build._keeper = threading.Thread(target=build._keep, name="build-hold", daemon=True)
        build._keeper.start()
        return build

    # -- the hold ------------------------------------------------------------------------------

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def check(self, ops: Operations) -> None:
        """In one of the build's transactions: raise BuildLost unless the build still owns its windows."""
        layout = self.index.layout
        found = ops.tr.get_many([layout.build_token_key(window.key_bytes) for window in self.windows.values()])
        if any(value != self.token for value in found):
            self._lost.set()
            raise BuildLost(f"another process took over the build of {_describe(self.windows.values())}")

    def _keep(self) -> None:
        """Renew the hold (and the progress the cursors show) until the build ends."""
        while not self._stop.wait(RENEW_SECONDS):
            try:
                self.index.run(self._renew)
            except BuildLost:
                return
            except Exception:  # the store did not answer: the next round tries again
                continue

    def _renew(self, ops: Operations) -> None:
        self.check(ops)
        until = int(self.index.clock()) + HOLD_SECONDS
        for window in self.windows.values():
            cursor = ops.txn.cursor(window) or index_pb2.FillCursor(sorted_build=True)
            cursor.held_until = until
            if cursor.records_done:
                cursor.entries_ranked = self.counts.entries // max(1, len(self.windows))
            ops.txn.save_cursor(window, cursor)

    # -- taking values -------------------------------------------------------------------------

    def prepare(self, ops: Operations) -> None:
        """Make ``ops``'s transaction one of the build's: its writes hand the values of the build's
        windows to it (``IndexTransaction.emitted``), once its token is found."""
        self.check(ops)
        ops.txn.building = self.lb_keys

    def take(self, emitted: Iterable[tuple[int, bytes, bytes, bytes, bool]]) -> None:
        """Values a committed transaction of the build emitted: (window key, group, element, pk, hidden)."""
        add = self._sort.add
        last: tuple[bytes, bytes, bytes, bool] | None = None
        keys: list[int] = []
        for lb_key, group_bytes, element, pk_flat, hidden in emitted:
            value = (group_bytes, element, pk_flat, hidden)
            if value != last:  # one item per value, with every window that has it
                if last is not None:
                    self._add(add, last, keys)
                last, keys = value, []
            keys.append(lb_key)
        if last is not None:
            self._add(add, last, keys)

    def _add(self, add: Callable[[Item], None], value: tuple[bytes, bytes, bytes, bool], keys: list[int]) -> None:
        item = _item(*value, keys)
        self._needs += ENTRY_FACTOR * (len(item[0]) + ENTRY_EXTRA) * len(keys)
        add(item)

    def take_heads(self, heads: Iterable[tuple[bytes, index_pb2.RecordHead]]) -> None:
        """The values of records whose heads hold them already (a restore's; a load's batch sent
        again): each state of the build's windows, as (pk nested, head) give them."""
        emitted = []
        for pk_nested, head in heads:
            pk_flat = tuples.pack(tuples.unpack(pk_nested)[0])
            for state in head.windows:
                if state.lb_key in self.lb_keys:
                    emitted.append((state.lb_key, state.group, state.element, pk_flat, head.hidden))
        emitted.sort(key=lambda value: value[1:4])  # a value's windows next to each other
        self.take(emitted)

    def read_records(self, max_records: int = SCAN_RECORDS, max_entries: int = SCAN_ENTRIES) -> bool:
        """A fill's build: the next stored records' values in its windows, into their heads and
        the build (one transaction, of up to ``max_records`` records and about ``max_entries``
        entries); True once every record is read."""
        windows = list(self.windows.values())

        def step(ops: Operations) -> tuple[int, bool, list]:
            self.prepare(ops)
            return (*ops.filler.build_step(windows, max_records, max_entries), ops.txn.emitted)

        count, done, emitted = self.index.run(step)
        self.take(emitted)
        self.counts.records += count
        return done

    # -- writing -------------------------------------------------------------------------------

    def finish(self) -> BuildCounts:
        """Write every value taken, in order, then settle (see the module docstring); the windows
        are complete when it returns.  Raises BuildLost if another process took them over."""
        try:
            if self.lost:
                raise BuildLost(f"another process took over the build of {_describe(self.windows.values())}")
            self.phase = "writing"
            check_room(self.index.db, self._needs, f"building {_describe(self.windows.values())}")
            self._write()
            self.phase = "settling"
            self._settle()
            self.phase = "done"
            return self.counts
        except BaseException:  # lost, or stopped: what it still holds goes back to any fill
            with contextlib.suppress(Exception):
                self._release()
            raise
        finally:
            self.close()

    def abandon(self) -> None:
        """Stop, leaving the windows the build still owns to any fill (see :meth:`_release`)."""
        try:
            self._release()
        finally:
            self.close()

    def _release(self) -> None:
        """Give up the windows the build still owns (a window update rebuilt or deleted the others):
        each is cleared and left to any fill, from its first record."""

        def release(ops: Operations) -> None:
            layout = self.index.layout
            found = ops.tr.get_many([layout.build_token_key(w.key_bytes) for w in self.windows.values()])
            for window, token in zip(self.windows.values(), found, strict=True):
                if token == self.token:
                    ops.windows.clear_window(window)
                    ops.txn.save_cursor(window, index_pb2.FillCursor())

        self.index.run(release)

    def close(self) -> None:
        """Stop renewing the hold and drop the sort's files (the windows stay as they are)."""
        self._stop.set()
        if self._keeper is not None and self._keeper is not threading.current_thread():
            self._keeper.join()
        self._sort.close()

    def _write(self) -> None:
        index, layout, settings = self.index, self.index.layout, self.index.settings
        counts = self.counts
        counts.runs = self._sort.runs
        counts.spilled_bytes = self._sort.bytes_spilled
        # Every window's token: another process may take any one of them over (an expiry, a rebuild).
        writes = index.db.blind_writes(
            [(layout.build_token_key(w.key_bytes), self.token) for w in self.windows.values()]
        )
        write = writes.set
        primary = {lb: layout.window_primary(w.key_bytes) for lb, w in self.windows.items()}
        hidden_tree = {lb: layout.window_hidden(w.key_bytes) for lb, w in self.windows.items()}
        hash_of = index.ranked_set(next(iter(self.windows.values())), b"").element_hash  # one hash per index
        dense = settings.dense_ranks
        group: bytes | None = None
        sets: dict[int, RankedSetBuilder] = {}
        dense_sets: dict[int, RankedSetBuilder] = {}
        items = entries = 0
        try:
            for key, group_length, element_length, hidden, lb_keys in self._sort.sorted():
                items += 1
                if hidden:
                    for lb_key in lb_keys:
                        write(hidden_tree[lb_key] + key, b"")
                    entries += len(lb_keys)
                    continue
                if key[:group_length] != group:
                    _finish(sets, dense_sets)
                    group = key[:group_length]
                element = key[group_length : group_length + element_length]
                suffix, element_hash = element_suffix(element), hash_of(element)
                if dense:
                    score = score_prefix(element)
                    score_suffix, score_hash = element_suffix(score), hash_of(score)
                for lb_key in lb_keys:
                    write(primary[lb_key] + key, b"")
                    builder = sets.get(lb_key)
                    if builder is None:
                        window = self.windows[lb_key]
                        builder = sets[lb_key] = index.ranked_set(window, group).builder(write)
                        if dense:
                            dense_sets[lb_key] = index.dense_set(window, group).builder(write)
                    builder.add(suffix, element_hash)
                    if dense:
                        dense_sets[lb_key].add(score_suffix, score_hash)
                entries += len(lb_keys)
                if not items & 0xFFF:
                    counts.items, counts.entries = items, entries
                    if self.lost:
                        raise BuildLost(f"another process took over the build of {_describe(self.windows.values())}")
            _finish(sets, dense_sets)
            writes.flush()
        except FenceMoved:
            self._lost.set()
            raise BuildLost(f"another process took over the build of {_describe(self.windows.values())}") from None
        counts.items, counts.entries = items, entries
        counts.keys = writes.keys

    # -- settling ------------------------------------------------------------------------------

    def _settle(self) -> None:
        """Mark the ranked sets complete, redo the records written meanwhile, and complete the windows."""

        def ranked(ops: Operations) -> None:
            self.check(ops)
            for window in self.windows.values():
                cursor = ops.txn.cursor(window) or index_pb2.FillCursor(sorted_build=True)
                cursor.records_done = True
                cursor.ranked_through = b"\xff"  # past every key: redone values go in every set
                cursor.entries_ranked = self.counts.entries // max(1, len(self.windows))
                ops.txn.save_cursor(window, cursor)

        self.index.run(ranked)
        while not self.index.run(self._settle_step):
            pass

    def _settle_step(self, ops: Operations) -> bool:
        """Redo up to REDO_BATCH noted records per window; with none left, complete the windows."""
        self.check(ops)
        layout = self.index.layout
        limit = 2 * REDO_BATCH
        reads = []
        for window in self.windows.values():
            notes = layout.build_token_key(window.key_bytes)
            reads.append((window, notes, ops.tr.get_range_async(notes + b"\x00", strinc(notes), limit)))
        left = False
        for window, notes, read in reads:
            rows = read.value
            if not rows:
                continue
            left = True
            records, through = _noted(rows, notes, len(rows) == limit)
            for pk_nested, lost in records:
                ops.filler.redo(window, pk_nested, lost)
                self.counts.redone += 1
            ops.tr.clear_range(notes + b"\x00", through)
        if left:
            return False
        directory = ops.txn.directory()
        for window in self.windows.values():
            ops.txn.clear_cursor(window)
            token_key = layout.build_token_key(window.key_bytes)
            ops.tr.clear_range(token_key, strinc(token_key))
        ops.windows.save_filling(directory, set(self.windows), False)  # type: ignore[arg-type]
        return True


def _item(group_bytes: bytes, element: bytes, pk_flat: bytes, hidden: bool, lb_keys: list[int]) -> Item:
    return (group_bytes + element + pk_flat, len(group_bytes), len(element), hidden, tuple(lb_keys))


def _finish(sets: dict[int, RankedSetBuilder], dense_sets: dict[int, RankedSetBuilder]) -> None:
    for builder in (*sets.values(), *dense_sets.values()):
        builder.finish()
    sets.clear()
    dense_sets.clear()


def _noted(rows: Sequence[Any], notes: bytes, cut: bool) -> tuple[list[tuple[bytes, list[tuple[bytes, bytes]]]], bytes]:
    """The records noted in ``rows`` (keys under ``notes``), each with its lost (group, element)
    values, and the end of the notes they cover.  ``cut``: the read stopped at its limit, so the
    last record's notes may go on; it is left for the next batch unless it is the only one."""
    records: list[tuple[bytes, list[tuple[bytes, bytes]]]] = []
    ends: list[bytes] = []
    for key, _ in rows:
        rest = key[len(notes) :]
        end = tuples.item_ends(rest, 1)[0]
        pk_nested, kind = rest[:end], tuples.unpack(rest[end:])
        if not records or records[-1][0] != pk_nested:
            records.append((pk_nested, []))
            ends.append(key)
        ends[-1] = key
        if kind[0] == 1:
            records[-1][1].append((kind[1], kind[2]))
    if cut and len(records) > 1:
        records.pop()
        ends.pop()
    return records, ends[-1] + b"\x00"


def _describe(windows: Iterable[Window]) -> str:
    return "; ".join(window.describe() for window in windows)


def check_room(db: Database, needed: int, doing: str) -> None:
    """Raise StoreFull, before writing, if the store cannot take about ``needed`` more bytes."""
    room = db.room()
    if room is not None and needed > room[0]:
        raise StoreFull(
            f"{doing} needs about {needed:,} bytes of the store, but {room[1]} leaves {room[0]:,}: "
            "make room (a larger map_size, a larger disk) and run it again"
        )
