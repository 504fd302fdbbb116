"""The consistency checker: recompute every window from the records and compare.

It checks, in one read transaction:

- the directory parses and is well formed (unique keys below ``next_key``, ``start < end``,
  valid levels, no duplicate window) and so do the sub-directories;
- every record's value in every complete window equals the aggregation of its entries;
- the primary B-tree holds exactly one entry per record value, and nothing else;
- each ranked set holds exactly the primary entries' elements, with their multiplicities,
  and its node counts match the level below (``RankedSet.check_consistency``);
- with ``dense_ranks``, each distinct-score set holds exactly the B-tree's distinct scores.

Memory is O(windows x groups) plus one record at a time; the primary B-tree and ranked sets
are read in key order, in pages.
"""

from __future__ import annotations

import collections

from ..proto import index_pb2
from ..store.api import strinc
from . import tuplecodec as tuples
from .aggregation import Value
from .directory import MAX_LEVELS, MIN_LEVELS, Directory, sub_directory_from_bytes
from .layout import score_prefix
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


def check_transaction(txn: IndexTransaction, writer: RecordWriter, max_problems: int = 100) -> list[str]:
    """Every inconsistency found (at most ``max_problems``); empty when the index is sound."""
    problems = _Problems(max_problems)
    tr, layout = txn.tr, txn.layout
    try:
        directory = txn.directory()
    except Exception as exc:  # a directory that does not parse is itself the finding
        return [f"the directory does not parse: {exc}"]
    begin, end = layout.sub_directories_range()
    for key, value in tr.get_range(begin, end):
        try:
            sub_directory_from_bytes(value)
        except Exception:
            if problems.add(f"sub-directory {key!r} does not parse"):
                return problems
    if directory is None:
        return problems
    for message in check_directory(directory):
        if problems.add(message):
            return problems
    complete = [window for window in directory.windows if not window.filling]
    expected_counts: collections.Counter[tuple[int, bytes]] = collections.Counter()

    # Records: recompute each value from the entries and compare with the head and the B-tree.
    for key, raw in tr.iter_range(layout.records, strinc(layout.records)):
        pk_nested = key[len(layout.records) :]
        pk_flat = tuples.pack(tuples.unpack(pk_nested)[0])
        head = index_pb2.RecordHead.FromString(raw)
        values = []
        for ts, seq, (group, score, context) in txn.read_entries(pk_nested):
            group_bytes = tuples.pack(group)
            element = txn.packer(group_bytes)(score, ts, tuple(context))
            values.append((group_bytes, Value(score, ts, seq, tuple(context), element)))
        expected = writer.fold(values, directory, pk_nested, writer.carried_totals(head), only=complete)
        stored = {(s.lb_key, s.group): s.element for s in head.windows if directory.by_key(s.lb_key) in complete}
        for state_key in expected.keys() | stored.keys():
            want = expected.get(state_key)
            have = stored.get(state_key)
            where = f"record {tuples.unpack(pk_nested)[0]!r} in window key {state_key[0]}"
            if want is None or have is None or want.element != have:
                shown = None if want is None else tuples.unpack(want.element)
                found = None if have is None else tuples.unpack(have)
                if problems.add(f"{where}: value should be {shown}, the record's head says {found}"):
                    return problems
            if want is not None:
                window = directory.by_key(state_key[0])
                primary = layout.primary + window.key_bytes + state_key[1] + want.element + pk_flat  # type: ignore[union-attr]
                if tr.get(primary) is None and problems.add(f"{where}: primary entry missing"):
                    return problems
                expected_counts[state_key] += 1

    # Each complete window: the B-tree has no extra entries and the ranked sets match it.
    space = txn.space
    settings = space.settings
    g, c = settings.group_size, settings.context_size
    for window in complete:
        prefix = layout.primary + window.key_bytes
        found: collections.Counter[tuple[int, bytes]] = collections.Counter()
        elements: dict[bytes, collections.Counter[bytes]] = collections.defaultdict(collections.Counter)
        for key, _ in tr.iter_range(prefix, strinc(prefix)):
            items = tuples.unpack(key[len(prefix) :])
            group_bytes = tuples.pack(tuple(items[:g]))
            element = tuples.pack(tuple(items[g : g + 2 + c]))
            found[(window.lb_key, group_bytes)] += 1
            elements[group_bytes][element] += 1
        for state_key in found.keys() | {k for k in expected_counts if k[0] == window.lb_key}:
            if found[state_key] != expected_counts[state_key] and problems.add(
                f"{window.describe()}, group {tuples.unpack(state_key[1])}: the primary B-tree holds "
                f"{found[state_key]} entries, the records give {expected_counts[state_key]}"
            ):
                return problems
        secondary = layout.window_secondary(window.key_bytes)
        for key, _ in tr.iter_range(secondary, strinc(secondary)):
            items = tuples.unpack(key[len(secondary) :])
            group_bytes = tuples.pack(tuple(items[:g]))
            if (
                items[g] == 0
                and items[g + 1]
                and group_bytes not in elements
                and problems.add(
                    f"{window.describe()}: the ranked set of group {tuple(items[:g])} holds "
                    f"{tuples.unpack(items[g + 1])} but the B-tree has no entry in that group"
                )
            ):
                return problems
        for group_bytes in elements:
            ranked = space.ranked_set(window, group_bytes)
            in_set = collections.Counter({element: ranked.count(tr, element) for element in elements[group_bytes]})
            stored_elements = ranked.range(tr)
            for element in stored_elements:
                if element not in elements[group_bytes] and problems.add(
                    f"{window.describe()}: ranked set holds {tuples.unpack(element)} that no record has"
                ):
                    return problems
            for element, count in elements[group_bytes].items():
                want = count if settings.count_duplicates else 1
                if in_set[element] != want and problems.add(
                    f"{window.describe()}: ranked set counts {tuples.unpack(element)} {in_set[element]} "
                    f"time(s), the B-tree {count}"
                ):
                    return problems
            for message in ranked.check_consistency(tr, max_problems):
                if problems.add(f"{window.describe()}, group {tuples.unpack(group_bytes)}: {message}"):
                    return problems
            if settings.dense_ranks:
                dense = space.dense_set(window, group_bytes)
                want_scores = sorted({score_prefix(element) for element in elements[group_bytes]})
                have_scores = dense.range(tr)
                if have_scores != want_scores and problems.add(
                    f"{window.describe()}, group {tuples.unpack(group_bytes)}: the distinct-score set holds "
                    f"{[tuples.unpack(s)[0] for s in have_scores]}, the B-tree has "
                    f"{[tuples.unpack(s)[0] for s in want_scores]}"
                ):
                    return problems
                for message in dense.check_consistency(tr, max_problems):
                    where = f"{window.describe()}, group {tuples.unpack(group_bytes)}"
                    if problems.add(f"{where}, distinct scores: {message}"):
                        return problems
    return problems
