"""Deleting many records: a group's data (a season's, a game's), or every record of an index.

The index and its windows stay; records go in bounded batches, one transaction each, a batch of
whole records at a time: a record leaves every window of the group at once, so reads see each
record entirely there or entirely gone, group by group.  Deleting a group removes the group's
entries from every record (with their values in every window, hidden or not, and a SUM index's
totals carried for the group); a record left with no data at all is deleted whole, with its
metadata.  Deleting every record removes each one whole.

Finding a group's records: when the index has a complete all-time window, every record with an
entry in the group has a value there, in the primary B-tree (or the hidden one) under the
group's prefix.  Each batch reads the first records it finds there and deletes their group data,
so the next batch finds the next ones: the deletion resumes by itself, from any process, and
also takes records written to the group meanwhile.  Without such a window, batches scan every
record in key order from a continuation.  Deleting every record takes the first heads each time.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..proto import index_pb2
from ..store.api import strinc
from . import tuplecodec as tuples
from .directory import ALL_TIME
from .latest import entry_timestamp
from .layout import extensions_end
from .records import RecordWriter, head_bytes
from .transaction import IndexTransaction
from .values import check_at_least


@dataclasses.dataclass(frozen=True)
class DeletionProgress:
    """What one batch (or, summed, a whole deletion) did."""

    done: bool
    records_changed: int = 0  # records whose group data went (or that went whole)
    records_deleted: int = 0  # of those, records deleted whole
    entries_deleted: int = 0
    continuation: bytes | None = None  # where a scan of every record resumes (None: from where it stands)

    def __add__(self, other: DeletionProgress) -> DeletionProgress:
        return DeletionProgress(
            other.done,
            self.records_changed + other.records_changed,
            self.records_deleted + other.records_deleted,
            self.entries_deleted + other.entries_deleted,
            other.continuation,
        )


class Deleter:
    """Deletion batches inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction, writer: RecordWriter) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout
        self.writer = writer

    def delete_all_step(self, max_records: int) -> DeletionProgress:
        """Delete the first ``max_records`` records whole."""
        check_at_least(max_records, 1, "max_records")
        records = self.layout.records
        self.txn.latest.prefetch()  # what the latest's check reads, with the records
        rows = self.tr.get_range(records, strinc(records), max_records)
        pks = [key[len(records) :] for key, _ in rows]
        ranges = [(*self.layout.entries_range(pk_nested), 0, False) for pk_nested in pks]
        entries = self.tr.get_ranges(ranges) if ranges else []  # read together, for the report
        latest = max(
            (
                entry_timestamp(found[-1][0], len(self.layout.entries) + len(pk))
                for pk, found in zip(pks, entries, strict=True)
                if found
            ),
            default=None,
        )
        self.txn.latest.removed(latest)
        for (_, raw), pk_nested in zip(rows, pks, strict=True):
            self.writer.remove_record(index_pb2.RecordHead.FromString(raw), pk_nested, _flat(pk_nested))
        deleted = sum(len(found) for found in entries)
        return DeletionProgress(len(rows) < max_records, len(rows), len(rows), deleted)

    def delete_group_step(self, group_bytes: bytes, max_records: int, after: bytes | None) -> DeletionProgress:
        """Delete the data of group ``group_bytes`` from up to ``max_records`` records.

        ``after`` is the continuation of a scan of every record (the index has no complete
        all-time window); it is ignored when the all-time window finds the group's records.
        """
        check_at_least(max_records, 1, "max_records")
        directory = self.txn.directory()
        every = [w for w in directory.of_type(ALL_TIME) if not w.filling] if directory is not None else []
        if every:
            pks, done = self._group_records(every[0].key_bytes, group_bytes, max_records)
            continuation = None
        else:
            pks, continuation = self._scanned_records(max_records, after)
            done = continuation is None
        self.txn.prefetch(heads=pks)
        reads = [self.txn.issue_entries(pk_nested) for pk_nested in pks]
        self.txn.latest.prefetch()  # what the latest's check reads, with the heads and entries
        progress = DeletionProgress(done)
        for pk_nested, entries in zip(pks, reads, strict=True):
            head = self.txn.read_head(pk_nested)
            if head is not None:
                progress = progress + self._delete_group_of(pk_nested, head, entries(), group_bytes)
        return dataclasses.replace(progress, done=done, continuation=continuation)

    def _group_records(self, all_time: bytes, group_bytes: bytes, limit: int) -> tuple[list[bytes], bool]:
        """The first records with a value of the group in the all-time window (primary and hidden
        B-trees), as nested pks; and whether that is all of them."""
        settings = self.txn.settings
        pk_at = settings.group_size + 2 + settings.context_size
        prefixes = [tree + all_time + group_bytes for tree in (self.layout.primary, self.layout.hidden_values)]
        found = self.tr.get_ranges([(prefix, extensions_end(prefix), limit, False) for prefix in prefixes])
        pks: dict[bytes, None] = {}
        for prefix, rows in zip(prefixes, found, strict=True):
            for key, _ in rows:
                pk = tuple(tuples.unpack(key[len(prefix) - len(group_bytes) :])[pk_at:])
                pks[tuples.pack((pk,))] = None
        return list(pks)[:limit], len(pks) <= limit and all(len(rows) < limit for rows in found)

    def _scanned_records(self, limit: int, after: bytes | None) -> tuple[list[bytes], bytes | None]:
        records = self.layout.records
        begin = records + after + b"\x00" if after else records
        if begin >= strinc(records):  # a continuation past every key (only a made-up one is)
            return [], None
        rows = self.tr.get_range(begin, strinc(records), limit)
        pks = [key[len(records) :] for key, _ in rows]
        return pks, (pks[-1] if len(rows) == limit else None)

    def _delete_group_of(
        self,
        pk_nested: bytes,
        head: index_pb2.RecordHead,
        entries: list[tuple[int, int, Any]],
        group_bytes: bytes,
    ) -> DeletionProgress:
        """Delete the group's data of one record (the record whole, if nothing else is left)."""
        group = tuples.unpack(group_bytes)
        doomed = [(ts, seq) for ts, seq, (entry_group, _, _) in entries if tuple(entry_group) == group]
        carried = [c for c in head.carried if c.group != group_bytes]
        had = doomed or len(carried) < len(head.carried) or any(s.group == group_bytes for s in head.windows)
        if not had:
            return DeletionProgress(False)
        self.txn.latest.removed(max((ts for ts, _ in doomed), default=None))
        pk_flat = _flat(pk_nested)
        if len(doomed) == len(entries) and not carried:  # nothing else left: the record goes whole
            self.writer.remove_record(head, pk_nested, pk_flat)
            return DeletionProgress(False, 1, 1, len(doomed))
        left = self.writer.remove_values(head, pk_nested, pk_flat, group_bytes)
        for ts, seq in doomed:
            self.tr.clear(self.layout.entry_key(pk_nested, ts, seq))
        del head.windows[:]
        head.windows.extend(left)
        del head.carried[:]
        head.carried.extend(carried)
        self.tr.set(self.layout.head_key(pk_nested), head_bytes(head))
        return DeletionProgress(False, 1, 0, len(doomed))


def _flat(pk_nested: bytes) -> bytes:
    return tuples.pack(tuples.unpack(pk_nested)[0])
