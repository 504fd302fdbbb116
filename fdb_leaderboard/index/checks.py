"""The checks of one batch of the consistency check, and the report they fill: each reads in the
transaction it is given and compares only what one transaction wrote together (``checker.py``
runs the whole check, batch by batch).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TypeVar

from .. import formats
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
