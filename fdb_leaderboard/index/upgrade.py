"""Raising an index's stored format, its data rewritten first where the new format needs it.

An index's format (``IndexOptions.format``, see ``fdb_leaderboard/formats.py``) is raised one
version at a time.  A version whose table entry names an upgrade job rewrites the index's data
first, in bounded, resumable transactions like a fill's: each batch takes the records after the
``UpgradeCursor`` (``S + (15,)``), rewrites those that need it and moves the cursor; the batch
that finds no record left raises the format in its own transaction (and the catalog entry's
copy, through :attr:`~.space.IndexSpace.on_format_raised`), so every process sees the new format
with its next transaction.  The index serves throughout: a job changes no read's answer, and a
write meanwhile conflicts with the batch holding its record at most (one of them runs again).

The jobs:

- format 3, *recount submissions*: a record head's per-window submission counter
  (``WindowState.submissions``) becomes at least the entries the record holds in that window and
  group.  Heads written before the counters existed count nothing, and release 0.2.0 then added
  only the later submissions; a counter kept from the start counts at least its entries already
  (a trim only drops entries), so it stays.  Every write keeps a counter that counts at least its
  entries so (this release's and 0.2.0's alike), which is why the batches need no pause: once
  past a record, its counters stay exact.  Entries a trim dropped from a head counted short are
  gone: its counter is then the entries left, the most anyone can know.
"""

from __future__ import annotations

import dataclasses

from .. import formats
from ..errors import InvalidArgument
from ..proto import index_pb2
from ..store.api import strinc
from . import tuplecodec as tuples
from .directory import Directory
from .records import head_bytes
from .transaction import IndexTransaction


@dataclasses.dataclass(frozen=True)
class UpgradeProgress:
    """What one batch of an upgrade did, and where the index's format stands after it."""

    format: int  # the index's format now
    to_format: int  # the format the job works towards (== format: nothing left to do)
    records_processed: int = 0  # records this batch went over
    heads_changed: int = 0  # heads this batch rewrote
    records_done: int = 0  # records the job went over so far (the cursor's count)
    done: bool = True

    def describe(self) -> str:
        if self.done:
            return f"index format {self.format}"
        return f"upgrading to index format {self.to_format}: {self.records_done:,} records done"


@dataclasses.dataclass(frozen=True)
class UpgradeState:
    """An upgrade under way (its cursor): for listings and progress reports."""

    to_format: int
    records_done: int
    heads_changed: int
    started_at: int


class Upgrader:
    """The upgrade steps inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout
        self.space = txn.space

    def current(self) -> int:
        """The format stored in the index's options (0, not recorded, reads as format 2)."""
        return self.txn.options().format or formats.UNRECORDED_INDEX

    def state(self) -> UpgradeState | None:
        cursor = self._cursor()
        if cursor is None:
            return None
        return UpgradeState(cursor.to_format, cursor.records_done, cursor.heads_changed, cursor.started_at)

    def _cursor(self) -> index_pb2.UpgradeCursor | None:
        raw = self.tr.get(self.layout.upgrade_key)
        return index_pb2.UpgradeCursor.FromString(raw) if raw is not None else None

    def step(self, target: int, max_records: int) -> UpgradeProgress:
        """One batch towards format ``target`` (the index's newest it may reach: the caller says)."""
        if not 1 <= target <= formats.NEWEST_INDEX:
            raise InvalidArgument(f"index format {target} is not one this release writes (1 to {formats.NEWEST_INDEX})")
        self.txn.prefetch()
        options = self.txn.options()
        current = options.format or formats.UNRECORDED_INDEX
        formats.check_readable("index", current, "the index")
        if current >= target:
            self.space.format = max(self.space.format, current)
            return UpgradeProgress(current, current)
        version = current + 1
        job = formats.describe(formats.INDEX_FORMATS, version)
        assert job is not None
        cursor = self._cursor()
        if cursor is None or cursor.to_format != version:
            cursor = index_pb2.UpgradeCursor(to_format=version, started_at=int(self.space.clock()))
        processed = changed = 0
        finished = True
        if job.upgrade:
            processed, changed, finished = JOBS[job.upgrade](self, cursor, max_records)
        if not finished:
            cursor.records_done += processed
            cursor.heads_changed += changed
            self.tr.set(self.layout.upgrade_key, cursor.SerializeToString())
            return UpgradeProgress(current, target, processed, changed, cursor.records_done, False)
        self.tr.clear(self.layout.upgrade_key)
        options.format = version
        self.tr.set(self.layout.options_key, options.SerializeToString())
        if self.space.on_format_raised is not None:
            self.space.on_format_raised(self.tr, version)
        self.space.format = max(self.space.format, version)
        done = cursor.records_done + processed
        return UpgradeProgress(version, target, processed, changed, done, version >= target)

    # -- jobs --------------------------------------------------------------------------------

    def recount_submissions(self, cursor: index_pb2.UpgradeCursor, max_records: int) -> tuple[int, int, bool]:
        """Counters of a batch of records made at least their entries (see the module docstring)."""
        records = self.layout.records
        begin = records + cursor.records_through + b"\x00" if cursor.records_through else records
        rows = self.tr.get_range(begin, strinc(records), max_records)
        directory = self.txn.directory()
        work = [(key[len(records) :], raw) for key, raw in rows]
        reads = [self.txn.issue_entries(pk_nested) for pk_nested, _ in work]  # one round for the batch
        changed = 0
        for (pk_nested, raw), entries in zip(work, reads, strict=True):
            head = index_pb2.RecordHead.FromString(raw)
            if directory is not None and _recount(head, entries(), directory):
                self.tr.set(self.layout.head_key(pk_nested), head_bytes(head))
                changed += 1
        if len(rows) < max_records:
            return len(rows), changed, True
        cursor.records_through = work[-1][0]
        return len(rows), changed, False


def _recount(head: index_pb2.RecordHead, entries: list, directory: Directory) -> bool:
    """Raise each of ``head``'s counters to the entries held in its window and group; True if any rose."""
    held: dict[tuple[int, bytes], int] = {}
    packed: dict[tuple, bytes] = {}
    for ts, _, (group, _, _) in entries:
        group_bytes = packed.get(group)
        if group_bytes is None:
            group_bytes = packed[group] = tuples.pack(tuple(group))
        for window in directory.containing(ts):
            key = (window.lb_key, group_bytes)
            held[key] = held.get(key, 0) + 1
    rose = False
    for state in head.windows:
        count = held.get((state.lb_key, state.group), 0)
        if count > state.submissions:
            state.submissions = count
            rose = True
    return rose


JOBS = {"recount submissions": Upgrader.recount_submissions}
