"""The consistency checker: recompute every window from the records and compare.

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

from .. import formats
from ..errors import InvalidArgument
from ..proto import index_pb2
from ..rankedset import StructureCursor
from ..store.api import Future, ReadView, strinc
from . import tuplecodec as tuples
from .aggregation import Value
from .directory import MAX_LEVELS, MIN_LEVELS, Directory, Window, sub_directory_from_bytes
from .layout import IndexLayout, score_prefix
from .records import RecordWriter
from .transaction import IndexTransaction


class _Problems(list):
    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def add(self, message: str) -> bool:
        """Record a problem; True when the limit is reached and checking should stop."""
        self.append(message)
        return len(self) >= self.limit


def check_directory(directory: Directory) -> list[str]:
    problems = []
    seen_keys: set[int] = set()
    seen_windows: set[tuple[int, int, int]] = set()
    for window in directory.windows:
        if window.lb_key in seen_keys:
            problems.append(f"window key {window.lb_key} is used twice")
        seen_keys.add(window.lb_key)
        if window.lb_key >= directory.next_key:
            problems.append(f"window key {window.lb_key} is not below next_key {directory.next_key}")
        if (window.type, window.start, window.end) in seen_windows:
            problems.append(f"{window.describe()} appears twice")
        seen_windows.add((window.type, window.start, window.end))
        if window.start >= window.end:
            problems.append(f"{window.describe()} does not end after it starts")
        if not MIN_LEVELS <= window.nlevels <= MAX_LEVELS:
            problems.append(f"{window.describe()} has {window.nlevels} levels")
    return problems


T = TypeVar("T")
Reader = Callable[[Callable[[IndexTransaction, RecordWriter], T]], T]
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


@dataclasses.dataclass
class CheckReport:
    """What a check looked at, and what it found.

    A check may run in parts (``check_index``'s ``continuation``): the counts are of the whole
    check so far, ``problems`` those this part found (``earlier_problems``: how many the parts
    before it found), and ``continuation`` what the next part resumes from (None: the check is
    over)."""

    problems: list[str] = dataclasses.field(default_factory=list)
    records: int = 0  # records recomputed from their entries
    entries: int = 0  # primary B-tree entries matched with their record and ranked set
    elements: int = 0  # ranked-set elements matched with the B-tree
    ranked_sets: int = 0  # ranked sets whose structure was checked
    nodes: int = 0  # ranked-set node keys read by the structure checks
    windows: int = 0  # complete windows checked
    batches: int = 0  # read transactions
    earlier_problems: int = 0
    continuation: bytes | None = None

    @property
    def complete(self) -> bool:
        """False: stopped early (``keep_going`` said so); the counts say how far it got and
        ``continuation`` where it goes on."""
        return self.continuation is None

    def describe(self) -> str:
        return (
            f"checked {self.records} records, {self.entries} B-tree entries, {self.elements} ranked-set elements "
            f"and {self.ranked_sets} ranked sets ({self.nodes} nodes) in {self.windows} windows "
            f"({self.batches} read transactions)"
        )

    def _counts(self) -> tuple[int, ...]:
        return (self.records, self.entries, self.elements, self.ranked_sets, self.nodes, self.windows, self.batches)


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


def layout_dense(read: Reader) -> bool:
    """Whether the index keeps distinct-score sets (``dense_ranks``); no store read."""
    return read(lambda txn, _writer: txn.space.settings.dense_ranks)


def _layout_of(read: Reader) -> IndexLayout:
    return read(lambda txn, _writer: txn.layout)


def _still_complete(txn: IndexTransaction, window: Window) -> bool:
    """Whether ``window`` is still a complete window in this transaction's directory (it may have
    been expired or rebuilt since the check started)."""
    directory = txn.directory()
    current = directory.by_key(window.lb_key) if directory is not None else None
    return current is not None and not current.filling and current.key_bytes == window.key_bytes


def _check_sub_directories(
    txn: IndexTransaction, begin: bytes, end: bytes, limit: int, problems: _Problems
) -> bytes | None:
    rows = txn.tr.get_range(begin, end, limit)
    for key, value in rows:
        try:
            sub_directory_from_bytes(value)
        except Exception:
            if problems.add(f"sub-directory {key!r} does not parse"):
                return None
    return rows[-1][0] + b"\x00" if len(rows) == limit else None


def _check_records(
    txn: IndexTransaction,
    writer: RecordWriter,
    begin: bytes,
    limit: int,
    problems: _Problems,
    report: CheckReport,
    end: bytes | None = None,
) -> bytes | None:
    """A batch of records, in three read rounds (the directory with the records' heads, their
    entries and hidden-record notes, the B-tree entries their values should have) however many
    records it holds: on FoundationDB each round is a network round trip."""
    tr, layout = txn.tr, txn.layout
    txn.prefetch()
    rows_read = tr.get_range_async(begin, end or strinc(layout.records), limit)
    directory = txn.directory()
    if directory is None:
        return None
    complete = [window for window in directory.windows if not window.filling]
    rows = rows_read.value
    heads = [index_pb2.RecordHead.FromString(raw) for _, raw in rows]
    pks = [key[len(layout.records) :] for key, _ in rows]
    entries = [txn.issue_entries(pk_nested) for pk_nested in pks]
    notes = [tr.get_async(layout.hidden_key(pk)) if head.hidden else None for pk, head in zip(pks, heads, strict=True)]
    findings = [
        _record_findings(txn, writer, directory, complete, pk, head, read(), note)
        for pk, head, read, note in zip(pks, heads, entries, notes, strict=True)
    ]
    present = iter(tr.get_many([item[0] for found in findings for item in found if isinstance(item, tuple)]))
    for found in findings:
        report.records += 1
        for item in found:
            if isinstance(item, str):
                if problems.add(item):
                    return None
            elif next(present) is None and problems.add(item[1]):
                return None
    return rows[-1][0] + b"\x00" if len(rows) == limit else None


def _record_findings(
    txn: IndexTransaction,
    writer: RecordWriter,
    directory: Directory,
    complete: list[Window],
    pk_nested: bytes,
    head: index_pb2.RecordHead,
    entries: list[tuple[int, int, tuple]],
    note: Future[bytes | None] | None,
) -> list[str | tuple[bytes, str]]:
    """Recompute one record's values from its entries: in order, the problems found (messages)
    and the B-tree entries its values need, as (key, the problem if it is missing)."""
    layout = txn.layout
    pk_flat = tuples.pack(tuples.unpack(pk_nested)[0])
    values = []
    for ts, seq, (group, score, context) in entries:
        group_bytes = tuples.pack(group)
        element = txn.packer(group_bytes)(score, ts, tuple(context))
        values.append((group_bytes, Value(score, ts, seq, tuple(context), element)))
    counts: dict[tuple[int, bytes], int] = {}
    expected = writer.fold(values, directory, pk_nested, writer.carried_totals(head), only=complete, counts=counts)
    complete_keys = {window.lb_key for window in complete}
    stored = {(s.lb_key, s.group): s for s in head.windows if s.lb_key in complete_keys}
    shown_pk = tuples.unpack(pk_nested)[0]
    exact = formats.allows(txn.space.format, formats.EXACT_SUBMISSIONS)
    found: list[str | tuple[bytes, str]] = []
    if note is not None and note.value is None:
        found.append(f"record {shown_pk!r} is hidden, but no note says who hid it")
    tree, which = (layout.hidden_values, "hidden") if head.hidden else (layout.primary, "primary")
    for state_key in expected.keys() | stored.keys():
        want, state = expected.get(state_key), stored.get(state_key)
        have = None if state is None else state.element
        where = f"record {shown_pk!r} in window key {state_key[0]}"
        if want is None or have is None or want.element != have:
            shown = None if want is None else tuples.unpack(want.element)
            in_head = None if have is None else tuples.unpack(have)
            found.append(f"{where}: value should be {shown}, the record's head says {in_head}")
        held = counts.get(state_key, 0)
        # Below index format 3 a counter may count short (see rules.py): only an exact one can be wrong.
        if state is not None and state.submissions < held and exact:
            found.append(f"{where}: the head counts {state.submissions} submissions, but {held} entries are there")
        if want is not None:
            window = directory.by_key(state_key[0])
            entry_key = tree + window.key_bytes + state_key[1] + want.element + pk_flat  # type: ignore[union-attr]
            found.append((entry_key, f"{where}: {which} entry missing"))
    return found


def _check_hidden_notes(txn: IndexTransaction, begin: bytes, limit: int, problems: _Problems) -> bytes | None:
    """A batch of hidden-record notes: each record exists and is hidden."""
    layout = txn.layout
    rows = txn.tr.get_range(begin, strinc(layout.hidden_records), limit)
    heads = txn.tr.get_many([layout.head_key(key[len(layout.hidden_records) :]) for key, _ in rows])
    for (key, _), raw in zip(rows, heads, strict=True):
        if raw is None or not index_pb2.RecordHead.FromString(raw).hidden:
            pk = tuples.unpack(key[len(layout.hidden_records) :])[0]
            state = "does not exist" if raw is None else "is not hidden"
            if problems.add(f"a note says record {pk!r} is hidden, but it {state}"):
                return None
    return rows[-1][0] + b"\x00" if len(rows) == limit else None


def _check_members(
    txn: IndexTransaction, window: Window, position: bytes, limit: int, problems: _Problems
) -> bytes | None:
    """A batch of a league window's members (from ``position``, relative to the members' prefix)."""
    tr, layout, leagues = txn.tr, txn.layout, txn.settings.leagues
    prefix = layout.member_key(window.key_bytes, b"")
    rows = tr.get_range(prefix + position, strinc(prefix), limit)
    pk_nested = [tuples.pack((tuples.unpack(key[len(prefix) :]),)) for key, _ in rows]
    heads = tr.get_many([layout.head_key(nested) for nested in pk_nested])
    tiers = sorted({tuples.unpack(value)[0] for _, value in rows})
    newest = dict(
        zip(tiers, tr.get_many([layout.open_cohort_key(window.key_bytes, tier) for tier in tiers]), strict=True)
    )
    for (key, value), raw in zip(rows, heads, strict=True):
        pk_flat = key[len(prefix) :]
        tier, cohort = tuples.unpack(value)
        where = f"record {tuples.unpack(pk_flat)!r} in league window key {window.lb_key}"
        opened = tuples.unpack(newest[tier]) if newest[tier] is not None else None
        if tier >= leagues.tiers and problems.add(f"{where}: tier {tier} is past the last ({leagues.tiers - 1})"):  # type: ignore[union-attr]
            return None
        if (opened is None or cohort > opened[0]) and problems.add(
            f"{where}: cohort {cohort} of tier {tier} was never opened"
        ):
            return None
        if (
            opened is not None
            and not 0 < opened[1] <= leagues.cohort_size
            and problems.add(  # type: ignore[union-attr]
                f"league window key {window.lb_key}: tier {tier}'s newest cohort counts {opened[1]} members"
            )
        ):
            return None
        head = index_pb2.RecordHead.FromString(raw) if raw is not None else None
        if head is None or head.hidden:
            continue
        element = next((s.element for s in head.windows if s.lb_key == window.lb_key), None)
        row = layout.cohort_prefix(window.key_bytes, tier, cohort) + (element or b"") + pk_flat
        if element is not None and tr.get(row) is None and problems.add(f"{where}: its cohort row is missing"):
            return None
    return rows[-1][0][len(prefix) :] + b"\x00" if len(rows) == limit else None


def _check_cohort_rows(
    txn: IndexTransaction, window: Window, position: bytes, limit: int, problems: _Problems
) -> bytes | None:
    """A batch of a league window's cohort rows: each row's record is a member of its cohort
    with that value in the window, and not hidden."""
    tr, layout = txn.tr, txn.layout
    prefix = layout.window_leagues(window.key_bytes) + tuples.pack((1,))
    rows = tr.get_range(prefix + position, strinc(prefix), limit)
    pk_at = 4 + txn.settings.context_size  # tier, cohort, stored score, ts, context..., pk...
    decoded = []
    for key, _ in rows:
        items, offsets = tuples.unpack_with_offsets(key[len(prefix) :])
        at = len(prefix)
        decoded.append((items[0], items[1], key[at + offsets[2] : at + offsets[pk_at]], key[at + offsets[pk_at] :]))
    members = tr.get_many([layout.member_key(window.key_bytes, pk_flat) for *_, pk_flat in decoded])
    heads = tr.get_many([layout.head_key(tuples.pack((tuples.unpack(pk_flat),))) for *_, pk_flat in decoded])
    for (tier, cohort, element, pk_flat), member, raw in zip(decoded, members, heads, strict=True):
        where = (
            f"record {tuples.unpack(pk_flat)!r} in cohort {cohort} of tier {tier}, league window key {window.lb_key}"
        )
        if (member is None or tuples.unpack(member) != (tier, cohort)) and problems.add(
            f"{where}: ranked there, but its membership says {None if member is None else tuples.unpack(member)}"
        ):
            return None
        head = index_pb2.RecordHead.FromString(raw) if raw is not None else None
        state = next((s.element for s in head.windows if s.lb_key == window.lb_key), None) if head else None
        if (state != element or head.hidden) and problems.add(  # type: ignore[union-attr]
            f"{where}: the cohort ranks a value the record does not have there"
        ):
            return None
    return rows[-1][0][len(prefix) :] + b"\x00" if len(rows) == limit else None


class _EntryState:
    def __init__(
        self,
        prefix: bytes,
        cursor: bytes | None = None,
        last: tuple[bytes, bytes] | None = None,
        hidden: bool = False,
        end: bytes | None = None,
    ) -> None:
        self.prefix = prefix
        self.end = end or strinc(prefix)  # a part of a check stops there
        self.hidden = hidden  # the hidden B-tree's entries: of hidden records, ranked nowhere
        self.cursor: bytes | None = cursor or prefix
        self.last_element = last  # (group, element) whose count was checked


def _check_entries(
    txn: IndexTransaction, window: Window, state: _EntryState, limit: int, problems: _Problems, report: CheckReport
) -> None:
    """A batch of a window's primary (or hidden) B-tree: each entry is its record's value there,
    and the ranked set counts each primary element as often as the B-tree holds it.  Three read
    rounds however many entries: the directory with the entries, their records' heads, then for
    each element the B-tree's entries of it and the sets' counts."""
    tr, layout, space = txn.tr, txn.layout, txn.space
    prefix = state.prefix
    txn.prefetch()
    rows_read = tr.get_range_async(state.cursor, state.end, limit)  # type: ignore[arg-type]
    if not _still_complete(txn, window):
        state.cursor = None
        return
    settings = space.settings
    g, c = settings.group_size, settings.context_size
    rows = rows_read.value
    state.cursor = rows[-1][0] + b"\x00" if len(rows) == limit else None
    parsed = []
    for key, _ in rows:
        items = tuples.unpack(key[len(prefix) :])
        parsed.append(
            (tuples.pack(tuple(items[:g])), tuples.pack(tuple(items[g : g + 2 + c])), tuple(items[g + 2 + c :]))
        )
    heads = tr.get_many([layout.records + tuples.pack((pk,)) for _, _, pk in parsed])
    # Per (group, element) to check: how many entries of it the B-tree holds (the batch's rows
    # hold them all but for the last element, which may go on past the batch: read), and per
    # group the counts of its elements in the ranked set (and distinct-score set), read together.
    in_tree: dict[tuple[bytes, bytes], int] = {}
    if not state.hidden:
        for group_bytes, element, _ in parsed:
            if state.last_element != (group_bytes, element):
                in_tree[group_bytes, element] = in_tree.get((group_bytes, element), 0) + 1
    tail = None
    if state.cursor is not None and (parsed[-1][0], parsed[-1][1]) in in_tree:
        tail_prefix = prefix + parsed[-1][0] + parsed[-1][1]
        tail = tr.get_range_async(tail_prefix, strinc(tail_prefix))
    by_group: dict[bytes, list[bytes]] = {}
    for group_bytes, element in in_tree:
        by_group.setdefault(group_bytes, []).append(element)
    set_counts = {
        group: space.ranked_set(window, group).issue_counts(tr, elements) for group, elements in by_group.items()
    }
    dense_counts = {}
    if settings.dense_ranks:
        for group, elements in by_group.items():
            scores = sorted({score_prefix(element) for element in elements})
            dense_counts[group] = (scores, space.dense_set(window, group).issue_counts(tr, scores))
    if tail is not None:
        in_tree[parsed[-1][0], parsed[-1][1]] = len(tail.value)
    ranked_counts = {
        (group, element): count
        for group, elements in by_group.items()
        for element, count in zip(elements, set_counts[group](), strict=True)
    }
    in_dense = {
        (group, score): count is not None
        for group, (scores, read) in dense_counts.items()
        for score, count in zip(scores, read(), strict=True)
    }
    which = "hidden" if state.hidden else "primary"
    for (group_bytes, element, pk), raw in zip(parsed, heads, strict=True):
        report.entries += 1
        head = index_pb2.RecordHead.FromString(raw) if raw is not None else None
        has = head is not None and any(
            s.lb_key == window.lb_key and s.group == group_bytes and s.element == element for s in head.windows
        )
        if not has and problems.add(
            f"{window.describe()}: the {which} B-tree holds {tuples.unpack(element)} for record {pk!r}, "
            "which the record's head does not have"
        ):
            return
        if (
            has
            and head.hidden != state.hidden
            and problems.add(  # type: ignore[union-attr]
                f"{window.describe()}: the {which} B-tree holds record {pk!r}, which is "
                f"{'not ' if state.hidden else ''}hidden"
            )
        ):
            return
        if state.hidden or state.last_element == (group_bytes, element):
            continue
        state.last_element = (group_bytes, element)
        held = in_tree[group_bytes, element]
        want = held if settings.count_duplicates else 1
        times = ranked_counts[group_bytes, element] or 0
        if times != want and problems.add(
            f"{window.describe()}: ranked set counts {tuples.unpack(element)} {times} time(s), the B-tree {held}"
        ):
            return
        if settings.dense_ranks and not in_dense[group_bytes, score_prefix(element)]:
            score = tuples.unpack(score_prefix(element))[0]
            if problems.add(f"{window.describe()}: the distinct-score set lacks score {score} that the B-tree has"):
                return


def _next_group(txn: IndexTransaction, begin: bytes, secondary: bytes) -> bytes | None:
    """The first group at or after ``begin`` that has a ranked set in a window (one key read)."""
    rows = txn.tr.get_range(begin, strinc(secondary), 1)
    if not rows:
        return None
    g = txn.space.settings.group_size
    return tuples.pack(tuple(tuples.unpack(rows[0][0][len(secondary) :])[:g]))


def _check_elements(
    txn: IndexTransaction,
    window: Window,
    group_bytes: bytes,
    after: bytes,
    limit: int,
    problems: _Problems,
    report: CheckReport,
    dense: bool = False,
    through: bytes | None = None,
) -> bytes | None:
    """A batch of a ranked set's elements (or, ``dense``, of a distinct-score set's scores): each
    has an entry in the B-tree.  Two read rounds: the directory with the elements, then an
    entry of each."""
    tr = txn.tr
    txn.prefetch()
    ranked = (txn.space.dense_set if dense else txn.space.ranked_set)(window, group_bytes)
    elements = ranked.range(tr, after + b"\x00" if after else None, through + b"\x00" if through else None, limit)
    if not _still_complete(txn, window):
        return None
    prefix = txn.layout.primary + window.key_bytes + group_bytes
    what = "distinct-score set" if dense else "ranked set"
    for element, held in zip(elements, _held(tr, prefix, elements), strict=True):
        report.elements += 1
        if not held and problems.add(
            f"{window.describe()}: {what} of group {tuples.unpack(group_bytes)} holds "
            f"{tuples.unpack(element)} that no record has"
        ):
            return None
    return elements[-1] if len(elements) == limit else None


def _held(tr: ReadView, prefix: bytes, elements: list[bytes]) -> list[bool]:
    """Whether the B-tree at ``prefix`` has an entry of each of ``elements`` (ascending): one
    range read over them, of at most twice their number of entries; if ties fill it, the
    elements past it are read one by one in one more round."""
    if not elements:
        return []
    limit = 2 * len(elements)
    rows = tr.get_range(prefix + elements[0], strinc(prefix + elements[-1]), limit)
    held, position = [], 0
    for element in elements:  # entries are an element's packed tuple then the record's
        start = prefix + element
        while position < len(rows) and rows[position][0] < start:
            position += 1
        held.append(position < len(rows) and rows[position][0].startswith(start))
    if len(rows) == limit:
        past = [i for i, element in enumerate(elements) if not held[i] and prefix + element > rows[-1][0]]
        found = tr.get_ranges([(prefix + elements[i], strinc(prefix + elements[i]), 1, False) for i in past])
        for i, entries in zip(past, found, strict=True):
            held[i] = bool(entries)
    return held


def _check_structure(
    txn: IndexTransaction,
    window: Window,
    group_bytes: bytes,
    cursor: StructureCursor,
    max_keys: int,
    problems: _Problems,
    report: CheckReport,
    dense: bool = False,
    stop: tuple | None = None,
) -> StructureCursor | None:
    """A batch of a ranked set's (or, ``dense``, a distinct-score set's) structure check, from
    ``cursor``; where the next batch resumes, None when the set is checked (or checking stops)."""
    if not _still_complete(txn, window):
        return None
    ranked = (txn.space.dense_set if dense else txn.space.ranked_set)(window, group_bytes)
    where = f"{window.describe()}, group {tuples.unpack(group_bytes)}{', distinct scores' if dense else ''}"
    stopped = False

    def found(message: str) -> bool:
        nonlocal stopped
        stopped = problems.add(f"{where}: {message}")
        return stopped

    resume, keys_read = ranked.check_structure(txn.tr, cursor, max_keys, found, stop=stop)
    report.nodes += keys_read
    if resume is None and not stopped:
        report.ranked_sets += 1
    return resume
