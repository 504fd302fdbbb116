"""Trimming: dropping entries before a time that no window's value depends on, in batches.

BEST and LATEST keep every entry that is some window's value; SUM keeps entries in any window
but all-time and folds the rest into a carried total per group (in the record's head).  The
index remembers the trim time: windows starting before it cannot be added afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FailedPrecondition
from ..proto import index_pb2
from ..store.api import strinc
from . import tuplecodec as tuples
from .directory import ALL_TIME, INT64_MAX, INT64_MIN, Directory
from .records import element_timestamp, head_bytes
from .transaction import IndexTransaction
from .values import check_at_least


class Trimmer:
    """Trim steps inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction) -> None:
        self.txn = txn
        self.tr = txn.tr
        self.layout = txn.layout
        self.space = txn.space
        self.settings = txn.settings

    def trim_step(self, before: int, cursor: bytes | None, max_records: int) -> tuple[int, bytes | None]:
        """Trim the records after ``cursor``; returns (entries removed, next cursor or None)."""
        check_at_least(max_records, 1, "max_records")
        directory = self.txn.directory()
        if directory is not None and directory.filling():
            raise FailedPrecondition("windows are being filled from the records: finish the fill before trimming")
        if cursor is None:
            options = self.txn.options()
            if not options.HasField("trimmed_before") or options.trimmed_before < before:
                options.trimmed_before = before
                self.tr.set(self.layout.options_key, options.SerializeToString())
        records = self.layout.records
        begin = records + cursor + b"\x00" if cursor is not None else records
        rows = self.tr.get_range(begin, strinc(records), max_records)
        # Every record's old entries are read at once (one round trip), then trimmed one by one.
        work = [(key[len(records) :], raw) for key, raw in rows]
        reads = [self.txn.issue_entries(pk_nested, INT64_MIN, before) for pk_nested, _ in work]
        removed = 0
        for (pk_nested, raw), entries in zip(work, reads, strict=True):
            removed += self._trim_record(pk_nested, index_pb2.RecordHead.FromString(raw), entries(), before, directory)
        next_cursor = rows[-1][0][len(records) :] if len(rows) == max_records else None
        return removed, next_cursor

    def _trim_record(
        self,
        pk_nested: bytes,
        head: index_pb2.RecordHead,
        entries: Sequence[tuple[int, int, Any]],
        before: int,
        directory: Directory | None,
    ) -> int:
        """Clear the record's ``entries`` (those before ``before``) that no live window needs."""
        live = [s for s in head.windows if directory is not None and directory.by_key(s.lb_key) is not None]
        if self.space.aggregation.name == "SUM":
            needed: set[tuple[int, int]] = set()
        else:
            needed = {(element_timestamp(state.element), state.seq) for state in live}
        carried = {c.group: c for c in head.carried}
        totals: dict[bytes, int] = {}  # the carried totals as Python ints: partial sums may leave int64
        doomed = []
        for ts, seq, (group, score, context) in entries:
            if self.space.aggregation.name == "SUM":
                windows = directory.containing(ts) if directory is not None else []
                if any(window.type != ALL_TIME for window in windows):
                    continue
                if any(window.type == ALL_TIME for window in windows):
                    group_bytes = tuples.pack(group)
                    fold = carried.get(group_bytes)
                    if fold is None:
                        fold = carried[group_bytes] = index_pb2.CarriedTotal(group=group_bytes, ts=ts, seq=seq)
                    totals[group_bytes] = totals.get(group_bytes, fold.total) + score
                    if (ts, seq) >= (fold.ts, fold.seq):  # entries come in (ts, seq) order
                        fold.ts, fold.seq, fold.context = ts, seq, tuples.pack(tuple(context))
            elif (ts, seq) in needed:
                continue
            doomed.append(self.layout.entry_key(pk_nested, ts, seq))
        if not all(INT64_MIN <= total <= INT64_MAX for total in totals.values()):
            return 0  # a carried total must fit in int64: keep the entries it would replace
        for group_bytes, total in totals.items():
            carried[group_bytes].total = total
        for key in doomed:
            self.tr.clear(key)
        removed = len(doomed)
        if removed or len(live) != len(head.windows):
            del head.windows[:]
            head.windows.extend(live)
            del head.carried[:]
            head.carried.extend(carried.values())
            self.tr.set(self.layout.head_key(pk_nested), head_bytes(head))
        return removed
