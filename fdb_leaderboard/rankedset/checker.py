"""Ranked-set consistency checks: the whole set in one transaction, or in bounded batches
resumed from a :class:`StructureCursor`, both finding the same problems with the same messages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from ..store.api import ReadView
from .layout import (
    _LEVEL_MASKS,
    _SENTINEL,
    MAX_SPAN_KEYS,
    RankedSetKeys,
    _decode_count,
    _element,
)


class RankedSetChecks(RankedSetKeys):
    """The checks of one ranked set (see :class:`~.ranked_set.RankedSet`)."""

    __slots__ = ()

    #
    # Two checks find the same problems with the same messages: ``check_consistency`` reads the
    # whole set in one transaction; ``check_structure`` reads it in bounded batches, resumed from
    # a ``StructureCursor``, each batch a consistent check of the contiguous range it read.

    def _nodes(self, tr: ReadView, level: int) -> Iterator[tuple[bytes, int]]:
        """Every node of ``level`` as (suffix, count), read in pages."""
        prefix = self._levels[level]
        for key, value in tr.iter_range(self._level_sentinels[level], self._level_ends[level]):
            yield key[len(prefix) :], _decode_count(value)

    def _level_zero_problem(self, suffix: bytes, count: int) -> str | None:
        if suffix == _SENTINEL:
            bad, expected = count != 0, "0"
        elif self.count_duplicates:
            bad, expected = count < 1, "at least 1"
        else:
            bad, expected = count != 1, "1"
        return f"level 0: {_element(suffix)!r} has count {count}, expected {expected}" if bad else None

    def _hash_problem(self, level: int, suffix: bytes, is_node: bool) -> str | None:
        """Whether ``suffix`` (a node of level ``level - 1``) is a node of ``level`` as its hash says."""
        if suffix == _SENTINEL:
            return None
        promoted = self._hash(_element(suffix)) & _LEVEL_MASKS[level] == 0
        if promoted == is_node:
            return None
        return (
            f"level {level}: {_element(suffix)!r} is {'missing' if promoted else 'present'} "
            f"against the {self.hash_function.value} hash"
        )

    def check_consistency(self, tr: ReadView, max_problems: int = 100) -> list[str]:
        """Problems found in the stored structure; an empty list means it is consistent.

        Checks the sentinels, that level-0 counts are 1, that every node's count equals the
        sum of the level below over its span, and that levels follow the hash.  It reads the
        whole set in one transaction: :meth:`check_structure` checks a set of any size.
        """
        problems: list[str] = []

        def report(message: str | None) -> bool:
            if message is None:
                return False
            problems.append(message)
            return len(problems) >= max_problems

        for level in range(self.nlevels):
            if tr.get(self._level_sentinels[level]) is None and report(_missing_sentinel(level)):
                return problems
        if problems:
            return problems
        for suffix, count in self._nodes(tr, 0):
            if report(self._level_zero_problem(suffix, count)):
                return problems
        for level in range(1, self.nlevels):
            upper = self._nodes(tr, level)
            current, total = next(upper)  # the sentinel
            following = next(upper, None)
            span = 0
            for suffix, count in self._nodes(tr, level - 1):
                while following is not None and suffix >= following[0]:
                    if following[0] != suffix and report(_missing_below(level, following[0])):
                        return problems
                    if span != total and report(_span_problem(level, current, total, span)):
                        return problems
                    (current, total), span = following, 0
                    following = next(upper, None)
                span += count
                if report(self._hash_problem(level, suffix, suffix == current)):
                    return problems
            while following is not None:
                if report(_missing_below(level, following[0])):
                    return problems
                following = next(upper, None)
            if span != total and report(_span_problem(level, current, total, span)):
                return problems
        return problems

    def check_structure(
        self,
        tr: ReadView,
        cursor: StructureCursor,
        max_keys: int,
        report: Callable[[str], bool],
        max_span: int = MAX_SPAN_KEYS,
        stop: tuple[int, bytes] | None = None,
    ) -> tuple[StructureCursor | None, int]:
        """Check the stored structure from ``cursor`` on, reading about ``max_keys`` node keys.

        The checks and messages are :meth:`check_consistency`'s, in bounded steps: the sentinels;
        level 0 by key ranges; then each level ``L >= 1`` by ranges of the level below, each
        read with the level-``L`` nodes over it in one transaction, so each node's count is
        compared with its span as one snapshot saw them.  A range ends before the last
        level-``L`` node it reaches, so no span is cut: one longer than the range is read whole,
        up to ``max_span`` keys.  Only a longer span (none in a sound set: a span holds 16
        nodes on average, more than ``k`` with probability ``(15/16)**k``; a damaged level can
        have one) is summed over several calls, and compared only if its node's count is the
        same at both ends; a write inside it meanwhile that leaves that count alone (a move,
        an add and a remove) can then show as a wrong count.

        A call starts another step while half of ``max_keys`` is left (so a small set is checked
        in one call) and reads at most ``2 * max_keys + max_span + 2`` keys.  ``report(message)``
        gets each problem and returns True to stop.  Returns where to resume (None: checked to
        the end, or stopped) and the number of keys read.

        ``stop`` ``(level, suffix)``: a part of a check that others run at once, ending where the
        next starts, at a node of that level (any element on level 0): the call goes no further
        and returns ``StructureCursor(level, suffix)`` there.
        """
        if max_keys < 2 or max_span < 1:
            raise ValueError(f"max_keys must be at least 2 and max_span at least 1, not {max_keys} and {max_span}")
        keys_read = 0
        least = max(2, max_keys // 2)  # a step needs 2 keys to find where a span ends
        next_cursor: StructureCursor | None = cursor
        while next_cursor is not None and (not keys_read or max_keys - keys_read >= least):
            budget = max_keys - keys_read
            bound = None
            if stop is not None and next_cursor.level >= stop[0]:
                if next_cursor.level > stop[0] or next_cursor.start >= stop[1]:
                    return StructureCursor(*stop), keys_read
                bound = stop[1]
            if next_cursor.level < 0:
                next_cursor, read = self._check_sentinels(tr, report)
            elif next_cursor.level == 0:
                next_cursor, read = self._check_level_zero(tr, next_cursor.start, budget, report, bound)
            else:
                next_cursor, read = self._check_level(tr, next_cursor, budget, max_span, report, bound)
            keys_read += read
        return next_cursor, keys_read

    def _level_done(self, level: int) -> StructureCursor | None:
        return StructureCursor(level + 1) if level + 1 < self.nlevels else None

    def _check_sentinels(self, tr: ReadView, report: Callable[[str], bool]) -> tuple[StructureCursor | None, int]:
        found = tr.get_many(self._level_sentinels)
        missing = [level for level, value in enumerate(found) if value is None]
        for level in missing:
            if report(_missing_sentinel(level)):
                break
        # As in check_consistency: without every sentinel the levels cannot be walked.
        return (None if missing else StructureCursor(0)), len(found)

    def _check_level_zero(
        self, tr: ReadView, start: bytes, budget: int, report: Callable[[str], bool], bound: bytes | None = None
    ) -> tuple[StructureCursor | None, int]:
        prefix = self._levels[0]
        rows = tr.get_range(prefix + start, prefix + bound if bound is not None else self._level_ends[0], budget)
        for key, value in rows:
            message = self._level_zero_problem(key[len(prefix) :], _decode_count(value))
            if message is not None and report(message):
                return None, len(rows)
        if len(rows) < budget:
            return (StructureCursor(0, bound) if bound is not None else self._level_done(0)), len(rows)
        return StructureCursor(0, rows[-1][0][len(prefix) :] + b"\x00"), len(rows)

    def _check_level(
        self,
        tr: ReadView,
        cursor: StructureCursor,
        budget: int,
        max_span: int,
        report: Callable[[str], bool],
        bound: bytes | None = None,
    ) -> tuple[StructureCursor | None, int]:
        """One step of :meth:`check_structure` on level ``cursor.level`` against the level below,
        up to the level's end or the node ``bound``."""
        level, start = cursor.level, cursor.start
        upper_prefix, lower_prefix = self._levels[level], self._levels[level - 1]
        if bound is None:
            upper_end, lower_end = self._level_ends[level], self._level_ends[level - 1]
        else:
            upper_end, lower_end = upper_prefix + bound, lower_prefix + bound
        head = tr.get_async(upper_prefix + cursor.span_node) if cursor.span_node is not None else None
        lower_rows = tr.get_range(lower_prefix + start, lower_end, budget)
        reached = (
            upper_end if len(lower_rows) < budget else upper_prefix + lower_rows[-1][0][len(lower_prefix) :] + b"\x00"
        )
        upper_rows = tr.get_range(upper_prefix + start, reached, budget)
        keys_read = len(lower_rows) + len(upper_rows) + (head is not None)
        room = max_span - len(lower_rows)
        if reached != upper_end and room > 0 and not (upper_rows and upper_rows[-1][0] > upper_prefix + start):
            # One span goes on past the range: read the rest of it, up to its end or max_span keys.
            after = lower_rows[-1][0][len(lower_prefix) :] + b"\x00"
            next_node = tr.get_range(upper_prefix + after, upper_end, 1)
            end = lower_prefix + next_node[0][0][len(upper_prefix) :] if next_node else lower_end
            rest = tr.get_range(lower_prefix + after, end, room)
            keys_read += len(next_node) + len(rest)
            lower_rows += rest
            if len(rest) < room:  # the whole span: the step ends at the next node, or at the level's end
                upper_rows += next_node
                if not next_node:
                    reached = upper_end
        lower = [(key[len(lower_prefix) :], _decode_count(value)) for key, value in lower_rows]
        upper = [(key[len(upper_prefix) :], _decode_count(value)) for key, value in upper_rows]
        # A span continued from the last step: compared only if its node's count is unchanged.
        current, total, span = cursor.span_node, cursor.span_count, cursor.span_sum
        if head is not None and (head.value is None or _decode_count(head.value) != total):
            total = None
        complete = reached == upper_end and len(upper_rows) < budget
        resume: StructureCursor | None = None
        if complete:
            resume = self._level_done(level) if bound is None else StructureCursor(level, bound)
        if not complete and upper and upper[-1][0] > start:
            # End before the last node reached, whose span may go on: the next step starts there.
            boundary = upper.pop()[0]
            lower = [node for node in lower if node[0] < boundary]
            resume = StructureCursor(level, boundary)

        def span_ends() -> bool:
            """Compare the span ending with its node's count; True to stop."""
            if current is None or total is None or span == total:
                return False
            return report(_span_problem(level, current, total, span))

        nodes = iter(upper)
        following = next(nodes, None)
        for suffix, count in lower:
            while following is not None and suffix >= following[0]:
                if following[0] != suffix and report(_missing_below(level, following[0])):
                    return None, keys_read
                if span_ends():
                    return None, keys_read
                (current, total), span = following, 0
                following = next(nodes, None)
            span += count
            message = self._hash_problem(level, suffix, suffix == current)
            if message is not None and report(message):
                return None, keys_read
        if not complete and resume is None:  # one span longer than max_span: go on after it
            after = lower[-1][0] + b"\x00"
            if current is None:  # no node heads these: the rest of a span whose node is gone
                return StructureCursor(level, after), keys_read
            return StructureCursor(level, after, current, total, span), keys_read
        while following is not None:  # nodes after every node of the level below read
            if report(_missing_below(level, following[0])):
                return None, keys_read
            if not complete:  # the level below goes on after them: each heads an empty span
                if span_ends():
                    return None, keys_read
                (current, total), span = following, 0
            following = next(nodes, None)
        if span_ends():
            return None, keys_read
        return resume, keys_read


@dataclasses.dataclass(frozen=True)
class StructureCursor:
    """Where :meth:`RankedSet.check_structure` resumes; ``StructureCursor()`` is the beginning.

    ``level`` -1 is the sentinels, 0 the level-0 counts, ``L >= 1`` level L against the level
    below; ``start`` is the node key suffix the next read starts at.  A span longer than one
    step goes on in the next: ``span_node`` is its node on ``level``, ``span_count`` that node's
    count when the span started (None: it changed since, the sum is not compared) and
    ``span_sum`` the level below summed so far.
    """

    level: int = -1
    start: bytes = _SENTINEL
    span_node: bytes | None = None
    span_count: int | None = None
    span_sum: int = 0


def _missing_sentinel(level: int) -> str:
    return f"level {level}: sentinel missing"


def _missing_below(level: int, suffix: bytes) -> str:
    return f"level {level}: node {_element(suffix)!r} is missing from level {level - 1}"


def _span_problem(level: int, suffix: bytes, total: int, span: int) -> str:
    return f"level {level}: node {_element(suffix)!r} counts {total}, the level below sums to {span}"
