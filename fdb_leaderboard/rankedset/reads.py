"""Ranked-set reads: membership and counts, rank (alone, or batched where reads cost round
trips), select (``get_nth``), size and scans of elements in order.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence

from ..store.api import KeyValue, ReadView
from .layout import (
    _NTH_PAGE,
    _NTH_PAGE_BATCHED,
    _SENTINEL,
    _TAIL_NODES,
    _UPPER_LIMIT,
    CorruptRankedSet,
    RankedSetKeys,
    _decode_count,
    _element,
    _suffix,
    _sum_counts,
)
from .steps import Steps, run_alone


class RankedSetReads(RankedSetKeys):
    """The reads of one ranked set (see :class:`~.ranked_set.RankedSet`)."""

    __slots__ = ()

    def contains(self, tr: ReadView, element: bytes) -> bool:
        return tr.get(self._levels[0] + self._check_element(element)) is not None

    def count(self, tr: ReadView, element: bytes) -> int:
        """How many times ``element`` is present (0 or 1 unless duplicates are counted)."""
        stored = tr.get(self._levels[0] + self._check_element(element))
        return 0 if stored is None else _decode_count(stored)

    def issue_counts(self, tr: ReadView, elements: Sequence[bytes]) -> Callable[[], list[int | None]]:
        """For each of ``elements`` (ascending, not empty), its count (None: absent), issued now:
        one range read over them, of at most twice their number of nodes; if others between
        them fill it, those past it are read one by one in one more round."""
        level = self._levels[0]
        suffixes = [self._check_element(element) for element in elements]
        limit = 2 * len(suffixes)
        read = tr.get_range_async(level + suffixes[0], level + suffixes[-1] + b"\x00", limit)

        def counts() -> list[int | None]:
            rows = read.value
            found = {key[len(level) :]: value for key, value in rows}
            if len(rows) == limit:
                past = [suffix for suffix in suffixes if level + suffix > rows[-1][0]]
                found.update((s, v) for s, v in zip(past, tr.get_many([level + s for s in past]), strict=True) if v)
            return [None if (value := found.get(suffix)) is None else _decode_count(value) for suffix in suffixes]

        return counts

    def rank(self, tr: ReadView, element: bytes, null_if_missing: bool = True) -> int | None:
        """The number of elements before ``element``.

        If ``element`` is absent: None when ``null_if_missing``, else the rank it would have.
        """
        return run_alone(self.rank_steps(tr, element, null_if_missing))

    def rank_steps(self, tr: ReadView, element: bytes, null_if_missing: bool = True) -> Steps[int | None]:
        """:meth:`rank` as steps (see ``run_together``).

        Where reads are free (``tr.batched_reads`` false) it walks down from the top level,
        each level's read starting at the node the level above ended on: ``nlevels`` reads of
        about 16 nodes.  Where each round costs a network trip it reads every level at once:
        the upper levels whole in one read (see :meth:`_upper_level`; the top level up to the
        element when none is small enough), and on each lower level the last ``_TAIL_NODES``
        nodes before the element, which reach back to the level above's predecessor unless more
        than that many nodes separate them (probability (15/16)**64, about 1.6% per level); the
        gaps are then read in one more round, as are the upper levels one by one when their
        read was cut.
        """
        suffix = self._check_element(element)
        if tr.batched_reads:
            return (yield from self._rank_batched(tr, suffix, null_if_missing))
        levels = self._levels
        if null_if_missing and tr.get(levels[0] + suffix) is None:
            return None
        rank = 0
        start = _SENTINEL
        from_bytes = int.from_bytes
        for level in range(self.nlevels - 1, 0, -1):
            prefix = levels[level]
            nodes = tr.get_range(prefix + start, prefix + suffix)
            if not nodes:
                if start == _SENTINEL:
                    return 0  # the set was never initialized: it is empty
                raise CorruptRankedSet(f"level {level} of the ranked set at {self.prefix!r} lacks node {start!r}")
            for _, value in nodes[:-1]:
                rank += from_bytes(value, "little", signed=True)
            start = nodes[-1][0][len(prefix) :]  # descend from the last node before the element
        for _, value in tr.get_range(levels[0] + start, levels[0] + suffix):
            rank += from_bytes(value, "little", signed=True)
        return rank

    def rank_and_size_steps(self, tr: ReadView, element: bytes) -> Steps[tuple[int, int]]:
        """The rank ``element`` has or would have, and :meth:`size`, as steps: where reads cost
        round trips, the size comes from the rank's read of the upper levels when it has the top
        level whole (else the top level is read with the rank's first reads)."""
        if tr.batched_reads:
            return (yield from self._rank_batched(tr, self._check_element(element), False, with_size=True))  # type: ignore[misc]
        rank = yield from self.rank_steps(tr, element, null_if_missing=False)  # reads cost nothing here
        return rank, (yield from self.size_steps(tr))  # type: ignore[return-value]

    def _rank_batched(
        self, tr: ReadView, suffix: bytes, null_if_missing: bool, with_size: bool = False
    ) -> Steps[int | tuple[int, int] | None]:
        """The batched rank walk (see :meth:`rank_steps`); ``with_size``: (rank, size)."""
        levels = self._levels
        top = self.nlevels - 1
        low = self._upper_level(tr)
        whole_levels = low < self.nlevels
        present = tr.get_async(levels[0] + suffix) if null_if_missing else None
        top_whole = None  # a read of the whole top level, for the size, where the others lack it
        if with_size and not whole_levels:
            top_whole = tr.get_range_async(self._level_sentinels[top], self._level_ends[top])
        if whole_levels:  # levels low .. top, all their nodes, in one read
            upper = tr.get_range_async(self._level_sentinels[low], self._level_ends[top], _UPPER_LIMIT)
        else:  # the top level up to the element
            low = top
            upper = tr.get_range_async(self._level_sentinels[top], levels[top] + suffix)
        tails = [
            tr.get_range_async(self._level_sentinels[level], levels[level] + suffix, _TAIL_NODES, True)
            for level in range(low)
        ]
        yield
        if present is not None and present.value is None:
            return None
        # Per level: the nodes before the element, last first, and whether they are all of them.
        before: dict[int, tuple[list[KeyValue], bool]] = {}
        size = 0  # with_size: from the whole top level, read below
        rows = upper.value
        if not whole_levels:
            before[top] = (rows[::-1], True)
        elif len(rows) < _UPPER_LIMIT:
            keys = [key for key, _ in rows]
            for level in range(low, top + 1):
                first = bisect.bisect_left(keys, self._level_sentinels[level])
                before[level] = (rows[first : bisect.bisect_left(keys, levels[level] + suffix, first)][::-1], True)
            size = self._note_size(rows[first:])  # the top level's
        else:  # more nodes than expected: those levels by tails, in one more round
            self._size_hint = None
            more = {
                level: tr.get_range_async(self._level_sentinels[level], levels[level] + suffix, _TAIL_NODES, True)
                for level in range(low, top)
            }
            top_nodes = tr.get_range_async(self._level_sentinels[top], levels[top] + suffix)
            if with_size:
                top_whole = tr.get_range_async(self._level_sentinels[top], self._level_ends[top])
            yield
            before = {level: (read.value, False) for level, read in more.items()}
            before[top] = (top_nodes.value[::-1], True)
        if top_whole is not None:
            size = self._note_size(top_whole.value)
        if not before[top][0]:
            return (0, 0) if with_size else 0  # the set was never initialized: it is empty
        for level in range(low):
            before[level] = (tails[level].value, False)
        nodes = before[top][0]  # last first
        rank = _sum_counts(nodes[1:])
        start = nodes[0][0][len(levels[top]) :]
        gaps = []
        for level in range(top - 1, -1, -1):
            prefix = levels[level]
            rows, whole = before[level]  # the nodes before the element, last first
            keys = [key for key, _ in rows]
            try:
                at = keys.index(prefix + start)  # where the walk came down to this level
            except ValueError:  # more nodes lie between the level above's predecessor and those read
                if whole or len(rows) < _TAIL_NODES:
                    raise CorruptRankedSet(
                        f"level {level} of the ranked set at {self.prefix!r} lacks node {start!r}"
                    ) from None
                gaps.append(tr.get_range_async(prefix + start, rows[-1][0]))
                at = len(rows) - 1
            # A level's last node before the element is where the walk descends (counted below it).
            rank += _sum_counts(rows[0 if level == 0 else 1 : at + 1])
            start = rows[0][0][len(prefix) :]
        if gaps:
            yield
            for gap in gaps:
                rank += _sum_counts(gap.value)
        return (rank, size) if with_size else rank

    def get_nth(self, tr: ReadView, n: int) -> bytes | None:
        """The element of rank ``n`` (0-based), or None when ``n`` is out of range."""
        if n < 0:
            return None
        levels = self._levels
        start = _SENTINEL
        stop: bytes | None = None  # the next node on the level above bounds the scan below
        from_bytes = int.from_bytes
        # A span holds about 16 nodes and the walk stops halfway on average: read in pages, wider
        # where each read is a round trip.
        page = _NTH_PAGE_BATCHED if tr.batched_reads else _NTH_PAGE
        for level in range(self.nlevels - 1, -1, -1):
            prefix = levels[level]
            begin = prefix + start
            end = prefix + stop if stop is not None else self._level_ends[level]
            found = False
            while not found:
                nodes = tr.get_range(begin, end, page)
                for i, (key, value) in enumerate(nodes):
                    count = from_bytes(value, "little", signed=True)
                    if n < count:
                        start = key[len(prefix) :]
                        if i + 1 < len(nodes):
                            stop = nodes[i + 1][0][len(prefix) :]
                        found = True
                        break
                    n -= count
                else:
                    if len(nodes) < page:
                        return None  # past the last element
                    begin = nodes[-1][0] + b"\x00"
        return _element(start)

    def size(self, tr: ReadView) -> int:
        return run_alone(self.size_steps(tr))

    def size_steps(self, tr: ReadView) -> Steps[int]:
        """:meth:`size` as steps (see ``run_together``): one read of the top level."""
        top = self.nlevels - 1
        nodes = tr.get_range_async(self._level_sentinels[top], self._level_ends[top])
        yield
        return self._note_size(nodes.value)

    def node_at_or_before(self, tr: ReadView, level: int, element: bytes) -> bytes:
        """The key suffix (after the level) of the last node of ``level`` at or before ``element``:
        where a structure check of that level may start (see :class:`StructureCursor`)."""
        rows = tr.get_range(
            self._level_sentinels[level], self._levels[level] + self._check_element(element) + b"\x00", 1, True
        )
        return rows[0][0][len(self._levels[level]) :] if rows else _SENTINEL

    def range(
        self,
        tr: ReadView,
        begin: bytes | None = None,
        end: bytes | None = None,
        limit: int = 0,
        reverse: bool = False,
    ) -> list[bytes]:
        """Elements ``begin <= e < end`` in order (None: unbounded)."""
        level = self._levels[0]
        low = level + _suffix(begin) if begin else self._level_sentinels[0] + b"\x00"
        high = level + _suffix(end) if end is not None else self._level_ends[0]
        return [_element(key[len(level) :]) for key, _ in tr.get_range(low, high, limit, reverse)]
