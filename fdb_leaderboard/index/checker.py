"""The consistency checker: recompute every window from the records and compare.

This module runs the check batch by batch, resumable from a continuation; what each batch
checks is ``checks.py``'s.

:func:`check_index` (behind ``verify``) works on any size: it reads in bounded batches, each its own
read transaction (a few hundred keys: well within FoundationDB's 5 s and the embedded store's
limit), and each check compares only what one transaction wrote together, so writes running
meanwhile do not show as problems:

- the directory and sub-directories parse and are well formed;
- each record (a batch of records per transaction): its value in every complete window equals the
  aggregation of its entries, its head says so (and, from index format 3 on, counts at least as
  many submissions there as it holds entries), and the primary B-tree holds that entry, or the
  hidden B-tree if the record is hidden (and then its hidden-record note exists);
- each primary B-tree entry of a complete window (a batch per transaction): the record's head has
  that value there and is not hidden, and the ranked set counts the entry's element as often as
  the B-tree holds it; each hidden B-tree entry: the record is hidden and its head has that value;
- each hidden-record note: its record exists and is hidden;
- with leagues, each league window's members (a batch per transaction): the tier exists, the cohort
  is at most the tier's newest, whose count is within the cohort size, and a member with a visible
  value there has its cohort row; each cohort row: its record is a member of that cohort and has
  that value there, not hidden;
- each ranked-set element (a batch per transaction): some B-tree entry has it;
- each ranked set's structure (node counts match the level below, levels follow the hash): by ranges
  of nodes, a batch per transaction, each comparing every node it reads with the level below as one
  snapshot saw them (``RankedSet.check_structure``);
- with ``dense_ranks``, each distinct-score set holds exactly the B-tree's distinct scores (checked
  with each B-tree entry, and each of its elements in batches) and its structure is sound.

Memory is O(one batch) plus the list of groups of one window.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import TypeVar

from ..errors import InvalidArgument
from ..rankedset import StructureCursor
from ..store.api import strinc
from . import tuplecodec as tuples
from .checks import (
    CheckReport,
    Reader,
    _check_cohort_rows,
    _check_elements,
    _check_entries,
    _check_hidden_notes,
    _check_members,
    _check_records,
    _check_structure,
    _check_sub_directories,
    _EntryState,
    _layout_of,
    _next_group,
    _Problems,
    check_directory,
    layout_dense,
)
from .directory import Directory
from .records import RecordWriter
from .transaction import IndexTransaction

T = TypeVar("T")
BATCH_KEYS = 200  # records, B-tree entries or ranked-set elements per read transaction
# A structure batch reads node keys in ranges, cheaper per key than the point reads of the other
# batches: 16 per batch key (a span's mean length), so a batch covers about ``batch_keys`` spans.
STRUCTURE_KEYS_PER_BATCH_KEY = 16


# The steps of a check, in order; a window's steps run for each complete window (by key), and
# the elements and structure steps for each of its groups' ranked sets (and distinct-score sets).
SUB_DIRECTORIES, RECORDS, ENTRIES, GROUPS, ELEMENTS, STRUCTURE = range(6)
# Hidden records' notes follow RECORDS, a window's hidden B-tree follows its ENTRIES: numbered
# after the others so that the numbers of the steps above stay those of earlier continuations.
HIDDEN_NOTES, HIDDEN_ENTRIES = 6, 7
LEAGUE_MEMBERS, LEAGUE_ROWS = 8, 9  # a league window's members and cohort rows, after HIDDEN_ENTRIES


@dataclasses.dataclass
class CheckCursor:
    """Where a check goes on: its step and the step's position.

    ``key``: the next key of the sub-directories, the records, the hidden records' notes, or the
    window's B-tree or hidden B-tree (None: from the step's beginning), where GROUPS looks for the
    window's next group, or the last element ELEMENTS checked (``b""``: none yet).  ``window``: the
    window (its ``lb_key``) of the window steps.  ``group``, ``dense``: the set of ELEMENTS and
    STRUCTURE.  ``last``: the (group, element) whose ranked-set count ENTRIES checked last.
    ``structure``: where STRUCTURE goes on.  ``stop``: a part of a check run at once with others
    (``check_parts.py``) ends where the next one starts, this :func:`position` (None: at the end).
    """

    step: int = SUB_DIRECTORIES
    key: bytes | None = None
    window: int = -1
    group: bytes = b""
    dense: bool = False
    last: tuple[bytes, bytes] | None = None
    structure: StructureCursor = dataclasses.field(default_factory=StructureCursor)
    stop: tuple | None = None

    def as_tuple(self) -> tuple:
        s = self.structure
        structure = (s.level, s.start, s.span_node, s.span_count, s.span_sum)
        items = (self.step, self.key, self.window, self.group, self.dense, self.last or (), structure)
        return items if self.stop is None else (*items, self.stop)

    @classmethod
    def from_tuple(cls, items: tuple) -> CheckCursor:
        step, key, window, group, dense, last, structure, *stop = items
        cursor = cls(step, key, window, group, dense, tuple(last) or None, StructureCursor(*structure))  # type: ignore[arg-type]
        cursor.stop = tuple(stop[0]) if stop else None
        return cursor


# Where each step of a window comes in a check (GROUPS, ELEMENTS and STRUCTURE: group by group).
_WINDOW_STEP_ORDER = {ENTRIES: 0, HIDDEN_ENTRIES: 1, LEAGUE_MEMBERS: 2, LEAGUE_ROWS: 3}
PAST_EVERY_WINDOW = 1 << 62


def position(cursor: CheckCursor) -> tuple:
    """Where ``cursor`` is in the order a check goes through the index, as a comparable tuple."""
    step = cursor.step
    if step in (SUB_DIRECTORIES, RECORDS, HIDDEN_NOTES):
        return ((SUB_DIRECTORIES, RECORDS, HIDDEN_NOTES).index(step), cursor.key or b"")
    if cursor.window >= PAST_EVERY_WINDOW:
        return (4,)
    order = _WINDOW_STEP_ORDER.get(step)
    if order is not None:
        return (3, cursor.window, order, cursor.key or b"")
    if step == GROUPS:  # before the window's first group, or after cursor.group
        return (3, cursor.window, 4, cursor.group, 9) if cursor.key is not None else (3, cursor.window, 4, b"", 0)
    which = 1 + 2 * cursor.dense
    if step == ELEMENTS:
        return (3, cursor.window, 4, cursor.group, which, 0, cursor.key or b"")
    return (3, cursor.window, 4, cursor.group, which, 1, cursor.structure.level, cursor.structure.start)


# A continuation: (version, index tag, counts, problems found, cursor) and a digest of it.
_TOKEN_VERSION = b"FLC1"


def _index_tag(prefix: bytes) -> bytes:
    return hashlib.blake2b(prefix, digest_size=8).digest()


def _continuation(report: CheckReport, cursor: CheckCursor, index_prefix: bytes) -> bytes:
    found = report.earlier_problems + len(report.problems)
    body = tuples.pack((_TOKEN_VERSION, _index_tag(index_prefix), report._counts(), found, cursor.as_tuple()))
    return body + hashlib.blake2b(body, digest_size=8).digest()


def _resumed(token: bytes, index_prefix: bytes) -> tuple[CheckReport, CheckCursor]:
    """The report and cursor an earlier part left in ``token``; InvalidArgument for a token this
    index did not hand out (damaged, cut, of another index or of one dropped since)."""
    body, digest = token[:-8], token[-8:]
    try:  # the digest catches a cut or damaged token that would still parse
        items = tuples.unpack(body) if hashlib.blake2b(body, digest_size=8).digest() == digest else ()
        if len(items) != 5 or items[0] != _TOKEN_VERSION:
            raise ValueError(items)
        report = CheckReport([], *items[2], earlier_problems=items[3])
        cursor = CheckCursor.from_tuple(items[4])
    except Exception:
        raise InvalidArgument("the check's continuation is not one this server handed out (damaged or cut)") from None
    if items[1] != _index_tag(index_prefix):
        raise InvalidArgument("the check's continuation belongs to another index (or one dropped since)")
    return report, cursor


class _Stopped(Exception):
    pass


class _Reached(Exception):
    """A part of a check reached the next part's start."""


def check_index(
    read: Reader,
    max_problems: int = 100,
    progress: Callable[[CheckReport], None] | None = None,
    batch_keys: int = BATCH_KEYS,
    keep_going: Callable[[], bool] | None = None,
    continuation: bytes | None = None,
) -> CheckReport:
    """Check an index in bounded batches; ``read(fn)`` runs ``fn(txn, writer)`` in one read transaction.
    ``progress`` sees the report after each batch; ``keep_going`` returning False stops the check
    before its next batch, the report's ``continuation`` then saying where to go on: given as
    ``continuation``, the check goes on from there (``max_problems`` counting the earlier parts')."""
    prefix = read(lambda txn, _writer: txn.space.prefix)
    report, cursor = _resumed(continuation, prefix) if continuation else (CheckReport(), CheckCursor())
    problems = _Problems(max(1, max_problems - report.earlier_problems))
    report.problems = problems

    def batch(fn: Callable[[IndexTransaction, RecordWriter], T]) -> T:
        if cursor.stop is not None and position(cursor) >= cursor.stop:
            raise _Reached()  # where the next part of the check starts
        if keep_going is not None and not keep_going():
            raise _Stopped()
        result = read(fn)
        report.batches += 1
        if progress is not None:
            progress(report)
        return result

    try:
        _run_checks(read, batch, problems, report, cursor, batch_keys)
    except _Stopped:
        report.continuation = _continuation(report, cursor, prefix)
    except _Reached:
        pass
    return report


def _run_checks(
    read: Reader,
    batch: Callable[[Callable[[IndexTransaction, RecordWriter], T]], T],
    problems: _Problems,
    report: CheckReport,
    cursor: CheckCursor,
    batch_keys: int,
) -> None:
    """Check from ``cursor`` on, moving it after each batch (so it says where to go on)."""
    starting = cursor.step == SUB_DIRECTORIES and cursor.key is None

    def head(txn: IndexTransaction, writer: RecordWriter) -> Directory | None:
        try:
            directory = txn.directory()
        except Exception as exc:
            problems.add(f"the directory does not parse: {exc}")
            return None
        if directory is not None and starting:  # (a later part found these already)
            for message in check_directory(directory):
                if problems.add(message):
                    break
        return directory

    # A later part reads the directory as it is now in a transaction of its own, not a batch of
    # the check: so each part's first batch moves the check on, however soon it stops.
    layout = _layout_of(read)  # no store read: the index's key layout
    begin, end = layout.sub_directories_range()
    directory = batch(head) if starting else read(head)
    if starting:
        cursor.key = begin  # (no longer the start)

    def full() -> bool:
        return len(problems) >= problems.limit

    def bound(*where: object) -> bytes | None:
        """Where this part stops in the step at ``where`` (a position's start), if it stops there."""
        stop = cursor.stop
        if stop is not None and len(stop) == len(where) + 1 and stop[: len(where)] == where:
            return stop[-1]
        return None

    if cursor.step == SUB_DIRECTORIES:
        begin = cursor.key
        while begin is not None and not full():
            begin = batch(lambda txn, _w, b=begin: _check_sub_directories(txn, b, end, batch_keys, problems))
            cursor.key = begin
        cursor.step, cursor.key = RECORDS, None
    if directory is None or full():
        return

    if cursor.step == RECORDS:
        key: bytes | None = cursor.key or layout.records
        records_end = bound(1)
        while key is not None and not full():
            key = batch(
                lambda txn, writer, c=key, e=records_end: _check_records(
                    txn, writer, c, batch_keys, problems, report, e
                )
            )
            cursor.key = key
        cursor.step, cursor.key = HIDDEN_NOTES, None
    if cursor.step == HIDDEN_NOTES:
        hidden: bytes | None = cursor.key or layout.hidden_records
        while hidden is not None and not full():
            hidden = batch(lambda txn, _w, c=hidden: _check_hidden_notes(txn, c, batch_keys, problems))
            cursor.key = hidden
        cursor.step, cursor.key = ENTRIES, None
    dense_sets = (False, True) if layout_dense(read) else (False,)
    leagues = read(lambda txn, _writer: txn.space.settings.leagues)  # no store read
    league_type = leagues.window_type if leagues is not None else None
    windows = sorted((w for w in directory.windows if not w.filling), key=lambda w: w.lb_key)
    for window in (w for w in windows if w.lb_key >= cursor.window):
        if full():
            return
        if window.lb_key != cursor.window:  # a window begins (or the one resumed is gone: the next)
            cursor.step, cursor.key, cursor.window, cursor.last = ENTRIES, None, window.lb_key, None
            report.windows += 1
        if cursor.step == ENTRIES:
            state = _EntryState(
                layout.primary + window.key_bytes, cursor.key, cursor.last, end=bound(3, window.lb_key, 0)
            )
            while state.cursor is not None and not full():
                batch(lambda txn, _w, w=window, s=state: _check_entries(txn, w, s, batch_keys, problems, report))
                cursor.key, cursor.last = state.cursor, state.last_element
            cursor.step, cursor.key = HIDDEN_ENTRIES, None
        if cursor.step == HIDDEN_ENTRIES:
            hidden_state = _EntryState(layout.hidden_values + window.key_bytes, cursor.key, hidden=True)
            while hidden_state.cursor is not None and not full():
                batch(lambda txn, _w, w=window, s=hidden_state: _check_entries(txn, w, s, batch_keys, problems, report))
                cursor.key = hidden_state.cursor
            cursor.step, cursor.key = LEAGUE_MEMBERS, None
        if cursor.step in (LEAGUE_MEMBERS, LEAGUE_ROWS) and window.type == league_type:
            for step, check in ((LEAGUE_MEMBERS, _check_members), (LEAGUE_ROWS, _check_cohort_rows)):
                if cursor.step != step:
                    continue
                position: bytes | None = cursor.key or b""
                while position is not None and not full():
                    position = batch(
                        lambda txn, _w, w=window, c=check, at=position: c(txn, w, at, batch_keys, problems)
                    )
                    cursor.key = position
                cursor.step, cursor.key = step + 1, None
        if cursor.step in (LEAGUE_MEMBERS, LEAGUE_ROWS, LEAGUE_ROWS + 1):
            cursor.step, cursor.key = GROUPS, None
        secondary = layout.window_secondary(window.key_bytes)
        while not full():
            if cursor.step == GROUPS:
                found = batch(lambda txn, _w, b=cursor.key or secondary, s=secondary: _next_group(txn, b, s))
                if found is None:
                    break
                cursor.step, cursor.key, cursor.group, cursor.dense = ELEMENTS, b"", found, False
            for dense in dense_sets[dense_sets.index(cursor.dense) :]:
                if cursor.dense != dense:
                    cursor.step, cursor.key, cursor.dense = ELEMENTS, b"", dense
                if cursor.step == ELEMENTS:
                    element: bytes | None = cursor.key
                    while element is not None and not full():
                        stop = bound(3, window.lb_key, 4, cursor.group, 1 + 2 * dense, 0)
                        element = batch(
                            lambda txn, _w, e=element, w=window, d=dense, s=stop: _check_elements(
                                txn, w, cursor.group, e, batch_keys, problems, report, d, s
                            )
                        )
                        cursor.key = element
                    cursor.step, cursor.structure = STRUCTURE, StructureCursor()
                structure: StructureCursor | None = cursor.structure
                stop = cursor.stop
                where = (3, window.lb_key, 4, cursor.group, 1 + 2 * dense, 1)
                level_stop = stop[6:] if stop is not None and len(stop) == 8 and stop[:6] == where else None
                while structure is not None and not full():
                    structure = batch(
                        lambda txn, _w, c=structure, w=window, d=dense, s=level_stop: _check_structure(
                            txn, w, cursor.group, c, batch_keys * STRUCTURE_KEYS_PER_BATCH_KEY, problems, report, d, s
                        )
                    )
                    if structure is not None:
                        cursor.structure = structure
            cursor.step, cursor.key = GROUPS, strinc(secondary + cursor.group)
    cursor.window = PAST_EVERY_WINDOW
