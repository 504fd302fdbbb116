"""Ranked-set writes: insertions, removals and moves, their predecessors on every level read
in one round (two for 1 element in 16), counters changed by atomic ADD.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from ..store.api import Future, KeyValue, Transaction
from .builder import RankedSetBuilder
from .layout import (
    _LEVEL_MASKS,
    _MINUS_ONE,
    _ONE,
    _UPPER_LIMIT,
    _ZERO,
    CorruptRankedSet,
    RankedSetKeys,
    _decode_count,
    _encode_count,
    _merged,
)
from .steps import Steps, run_alone


class _UpperReads(NamedTuple):
    """Reads issued by :meth:`RankedSet._issue_upper`: per probe, one per level below ``low``;
    ``whole``, levels ``low`` and up (None when ``low`` is ``nlevels``)."""

    low: int
    probes: Sequence[tuple[bytes, bool]]
    per_level: list[list[Future[list[KeyValue]]]]
    whole: Future[list[KeyValue]] | None


class RankedSetWrites(RankedSetKeys):
    """The updates of one ranked set (see :class:`~.ranked_set.RankedSet`)."""

    __slots__ = ()

    # Each update is a generator of steps (``*_steps``): it issues every read it can before
    # waiting on any, yields, and continues once resumed.  ``run_together`` drives several (of
    # different sets: one per window and group of a score write) in lockstep, so they cost as
    # many read rounds as the longest one.  ``add``, ``remove`` and ``move`` drive one alone.
    # Round one reads everything but the counts a promoted element splits, which need the
    # predecessor found in round one: a second round for 1 element in 16.

    def _issue_upper(self, tr: Transaction, probes: Sequence[tuple[bytes, bool]]) -> _UpperReads:
        """Snapshot reads, issued now, of what updates need on levels >= 1 for each probe
        ``(suffix, own_node)``: the last node at or before the element on each level and, with
        ``own_node``, the one before it (then the first may be the element's own node).  Levels
        below :meth:`_upper_level` are read one range each; that level and those above in one."""
        low = self._upper_level(tr)
        snapshot = tr.snapshot
        per_level = [
            [
                snapshot.get_range_async(
                    self._level_sentinels[level], self._levels[level] + suffix + b"\x00", 2 if own_node else 1, True
                )
                for level in range(1, low)
            ]
            for suffix, own_node in probes
        ]
        whole = None
        if low < self.nlevels:
            whole = snapshot.get_range_async(self._level_sentinels[low], self._level_ends[-1], _UPPER_LIMIT)
        return _UpperReads(low, probes, per_level, whole)

    def _upper(self, tr: Transaction, reads: _UpperReads) -> Steps[list[tuple[list[bytes], list[bytes | None]]] | None]:
        """For each probe of :meth:`_issue_upper`: its predecessor keys on levels 1 .. nlevels-1
        (the last node before the element, or at it without ``own_node``) and, with ``own_node``,
        the element's node values there (None where it is no node).  None if the set has no
        sentinels.  One more round only when the whole-levels read was cut at its limit.

        As in the reference, each lookup declares conflicts only on the keys between the
        predecessor and the element (the element's own node included, with ``own_node``) and on
        the predecessor's level-0 key: a node inserted in between, or removal of the
        predecessor, conflicts, while concurrent atomic ADDs to the predecessor's count do not.
        """
        found = [[read.value for read in level_reads] for level_reads in reads.per_level]
        low = reads.low
        if reads.whole is not None:
            rows = reads.whole.value
            if len(rows) < _UPPER_LIMIT:
                self._note_size(rows[bisect.bisect_left(rows, (self._level_sentinels[-1],)) :])
                keys = [key for key, _ in rows]
                for (suffix, _), levels_found in zip(reads.probes, found, strict=True):
                    for level in range(low, self.nlevels):
                        first = bisect.bisect_left(keys, self._level_sentinels[level])
                        at = bisect.bisect_right(keys, self._levels[level] + suffix)
                        levels_found.append(rows[max(first, at - 2) : at][::-1])
            else:  # more nodes than expected: those levels one by one
                self._size_hint = None
                snapshot = tr.snapshot
                more = [
                    [
                        snapshot.get_range_async(
                            self._level_sentinels[level], self._levels[level] + suffix + b"\x00", 2, True
                        )
                        for level in range(low, self.nlevels)
                    ]
                    for suffix, _ in reads.probes
                ]
                yield
                for levels_found, level_reads in zip(found, more, strict=True):
                    levels_found.extend(read.value for read in level_reads)
        if not any(found[0]):
            return None
        levels = self._levels
        ranges: list[tuple[bytes, bytes]] = []  # read conflicts
        out = []
        for (suffix, own_node), levels_found in zip(reads.probes, found, strict=True):
            keys: list[bytes] = []
            nodes: list[bytes | None] = []
            for level, rows in enumerate(levels_found, start=1):
                node = levels[level] + suffix
                value = None
                if own_node and rows and rows[0][0] == node:
                    value = rows[0][1]
                    rows = rows[1:]
                if not rows:
                    raise CorruptRankedSet(f"level {level} of the ranked set at {self.prefix!r} has no sentinel")
                key = rows[0][0]
                if own_node:
                    ranges.append((key + b"\x00", node + b"\x00"))
                elif key != node:
                    ranges.append((key + b"\x00", node))
                below = levels[0] + key[len(levels[level]) :]
                ranges.append((below, below + b"\x00"))
                keys.append(key)
                nodes.append(value)
            out.append((keys, nodes))
        if tr.declares_conflicts:
            tr.add_read_conflict_ranges(_merged(ranges))
        return out

    def _create(self, tr: Transaction) -> list[bytes]:
        """Write the sentinels of a set found to have none; returns the upper levels' sentinels.

        The reads that found none were snapshot reads: a conflict on the level-0 sentinel makes
        two transactions creating the set at once conflict (else one's counts overwrite the other's).
        """
        if tr.declares_conflicts:
            tr.add_read_conflict_key(self._level_sentinels[0])
        for sentinel in self._level_sentinels:
            tr.set(sentinel, _ZERO)
        return self._level_sentinels[1:]

    def _insert(
        self, tr: Transaction, element: bytes, suffix: bytes, present: bool, predecessors: list[bytes] | None
    ) -> Steps[bool]:
        """Add ``element`` given what round one found: whether it is present, and its predecessors
        at or before it on each upper level (None: the set has no sentinels yet)."""
        levels = self._levels
        if present:
            if not self.count_duplicates:
                return False
            tr.add(levels[0] + suffix, _ONE)
            for predecessor in predecessors or ():
                tr.add(predecessor, _ONE)
            return True
        if predecessors is None:
            predecessors = self._create(tr)
        tr.set(levels[0] + suffix, _ONE)
        element_hash = self._hash(element)
        for level in range(1, self.nlevels):
            predecessor = predecessors[level - 1]
            if element_hash & _LEVEL_MASKS[level]:
                tr.add(predecessor, _ONE)
                continue
            # Promoted: the predecessor's span splits at the element.  Lower levels were
            # already updated (this loop goes up), so counting the level below between the
            # predecessor and the element gives the predecessor's new count exactly.
            below = levels[level - 1]
            old_count = tr.get_async(predecessor)
            kept_nodes = tr.get_range_async(below + predecessor[len(levels[level]) :], below + suffix)
            yield
            old = _decode_count(old_count.value)  # type: ignore[arg-type]
            kept = sum(_decode_count(value) for _, value in kept_nodes.value)
            tr.set(predecessor, _encode_count(kept))
            tr.set(levels[level] + suffix, _encode_count(old - kept + 1))
        return True

    def _unlink(
        self, tr: Transaction, suffix: bytes, stored: int, node_counts: list[bytes | None], predecessors: list[bytes]
    ) -> dict[bytes, bytes]:
        """Remove one occurrence of an element present ``stored`` times, given its node counts and
        strict predecessors on the upper levels.  Returns each upper node removed, mapped to the
        predecessor that took over its span."""
        levels = self._levels
        if self.count_duplicates and stored > 1:
            tr.add(levels[0] + suffix, _MINUS_ONE)
            for level in range(1, self.nlevels):
                own = node_counts[level - 1] is not None
                tr.add(levels[level] + suffix if own else predecessors[level - 1], _MINUS_ONE)
            return {}
        tr.clear(levels[0] + suffix)
        removed = {}
        for level in range(1, self.nlevels):
            predecessor = predecessors[level - 1]
            count = node_counts[level - 1]
            if count is None:
                tr.add(predecessor, _MINUS_ONE)
            else:  # the element's span merges into its predecessor's, less the element
                node = levels[level] + suffix
                tr.add(predecessor, _encode_count(_decode_count(count) - 1))
                tr.clear(node)
                removed[node] = predecessor
        return removed

    def add_steps(self, tr: Transaction, element: bytes) -> Steps[bool]:
        """:meth:`add` as steps (see ``run_together``)."""
        suffix = self._check_element(element)
        present = tr.get_async(self._levels[0] + suffix)
        before = self._issue_upper(tr, [(suffix, False)])  # at or before: a new element has no node, so before
        yield
        exists = present.value is not None
        upper = yield from self._upper(tr, before)
        return (yield from self._insert(tr, element, suffix, exists, upper[0][0] if upper is not None else None))

    def add(self, tr: Transaction, element: bytes) -> bool:
        """Insert ``element``; False if it was already present (and duplicates are not counted).

        Creates the set if needed.
        """
        return run_alone(self.add_steps(tr, element))

    def append(self, tr: Transaction, elements: Iterable[tuple[bytes, int]]) -> int:
        """Add ``(element, occurrences)`` pairs in ascending order, none below the set's last element.

        This builds a set in key order (a rebuild from a sorted source, in bounded batches):
        nothing before the last element can change, so each level only grows at its end.  It
        reads the last node of each level once, writes each new level-0 node once and each
        level's last node's count once per call: O(k + L) writes for k elements, where ``add``
        needs O(k L) reads and writes.  An element equal to the last one only adds occurrences
        (with ``count_duplicates``; else it is skipped).  Returns the occurrences added.
        Raises ValueError, before writing anything, if the elements are not ascending.
        """
        levels = self._levels
        # Per level: the last node's key, whether this call created it, and occurrences added to it.
        last = tr.last_keys([(self._level_sentinels[level], self._level_ends[level]) for level in range(self.nlevels)])
        new_set = last[0] is None
        if new_set:
            last = list(self._level_sentinels)
        elif None in last:
            raise CorruptRankedSet(f"the ranked set at {self.prefix!r} lacks a sentinel above level 0")
        created = [False] * self.nlevels
        pending = [0] * self.nlevels
        writes: list[tuple[bytes, int, bool]] = []  # (node key, count, created)
        previous = last[0][len(levels[0]) :]
        added = 0
        for element, occurrences in elements:
            suffix = self._check_element(element)
            if suffix < previous:
                raise ValueError(f"append needs ascending elements at or after the last one: {element!r} is not")
            if suffix == previous:
                if not self.count_duplicates:
                    continue
            else:
                element_hash = self._hash(element)
                previous = suffix
                for level in range(self.nlevels):
                    if level and element_hash & _LEVEL_MASKS[level]:
                        break
                    writes.append((last[level], pending[level], created[level]))  # type: ignore[arg-type]
                    last[level], created[level], pending[level] = levels[level] + suffix, True, 0
            count = occurrences if self.count_duplicates else 1
            if count < 1:
                raise ValueError(f"occurrences must be at least 1, not {occurrences!r}")
            for level in range(self.nlevels):
                pending[level] += count
            added += count
        writes.extend(zip(last, pending, created, strict=True))  # type: ignore[arg-type]
        if new_set:
            self.init(tr)
        for key, count, new in writes:
            if new:
                tr.set(key, _encode_count(count))
            elif count:
                tr.add(key, _encode_count(count))
        return added

    def element_hash(self, element: bytes) -> int:
        """The hash that places ``element`` on its levels (see :class:`HashFunction`)."""
        return self._hash(element)

    def builder(self, write: Callable[[bytes, bytes], None]) -> RankedSetBuilder:
        """A :class:`RankedSetBuilder` of this set, which must not exist yet, writing through ``write``."""
        return RankedSetBuilder(self, write)

    def remove_steps(self, tr: Transaction, element: bytes) -> Steps[bool]:
        """:meth:`remove` as steps (see ``run_together``)."""
        suffix = self._check_element(element)
        stored = tr.get_async(self._levels[0] + suffix)
        before = self._issue_upper(tr, [(suffix, True)])
        yield
        count = stored.value
        if count is None or _decode_count(count) <= 0:
            return False
        upper = yield from self._upper(tr, before)
        if upper is None:
            raise CorruptRankedSet(f"the ranked set at {self.prefix!r} holds {element!r} but has no sentinels")
        predecessors, nodes = upper[0]
        self._unlink(tr, suffix, _decode_count(count), nodes, predecessors)
        return True

    def remove(self, tr: Transaction, element: bytes) -> bool:
        """Delete one occurrence of ``element``; False if it was absent.  Ignores the hash."""
        return run_alone(self.remove_steps(tr, element))

    def move_steps(self, tr: Transaction, old: bytes, new: bytes) -> Steps[None]:
        """:meth:`move` as steps (see ``run_together``): one round of reads, two when ``new`` is
        promoted (as for :meth:`add`)."""
        old_suffix, new_suffix = self._check_element(old), self._check_element(new)
        levels = self._levels
        old_stored = tr.get_async(levels[0] + old_suffix)
        new_present = tr.get_async(levels[0] + new_suffix)
        before = self._issue_upper(tr, [(old_suffix, True), (new_suffix, False)])
        yield
        count = old_stored.value
        stored = _decode_count(count) if count is not None else 0
        exists = new_present.value is not None
        upper = yield from self._upper(tr, before)
        if stored <= 0 or upper is None:
            raise CorruptRankedSet(f"cannot move {old!r}: the ranked set at {self.prefix!r} lacks it")
        (predecessors_old, old_nodes), (predecessors_new, _) = upper
        if stored == 1 and not exists and old_nodes[0] is None and self._hash(new) & _LEVEL_MASKS[1] != 0:
            # The common case: neither is a node above level 0, so each upper level only moves
            # one count between predecessors (nothing at all where they share one).
            tr.clear(levels[0] + old_suffix)
            tr.set(levels[0] + new_suffix, _ONE)
            for losing, gaining in zip(predecessors_old, predecessors_new, strict=True):
                if losing != gaining:
                    tr.add(losing, _MINUS_ONE)
                    tr.add(gaining, _ONE)
            return
        # Otherwise a removal then an insertion, from the same round of reads: where a node of
        # ``old`` preceded ``new``, the predecessor that took over its span precedes ``new`` now.
        removed = self._unlink(tr, old_suffix, stored, old_nodes, predecessors_old)
        predecessors_new = [removed.get(key, key) for key in predecessors_new]
        yield from self._insert(tr, new, new_suffix, exists, predecessors_new)

    def move(self, tr: Transaction, old: bytes, new: bytes) -> None:
        """Replace one occurrence of ``old`` (which must be present) by ``new``.

        Equivalent to ``remove(old)`` then ``add(new)``.  In the common case, where neither is
        a node above level 0 (``old`` found so by reading, not by hash), no node changes above
        level 0 and each upper level only moves one count between predecessors: when both have
        the same predecessor (most upper levels), nothing is written there at all.
        """
        run_alone(self.move_steps(tr, old, new))
