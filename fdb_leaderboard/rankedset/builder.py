"""A ranked set written whole from its elements in ascending order: each node once, reading nothing."""

from __future__ import annotations

from collections.abc import Callable

from .layout import (
    _LEVEL_MASKS,
    RankedSetKeys,
    _encode_count,
)


class RankedSetBuilder:
    """A ranked set written whole from its elements in ascending order, each node once.

    For a set that does not exist yet (a window built from sorted data): every node, sentinels
    included, is handed to ``write(key, value)`` exactly once, with its final count, as soon as
    the next node of its level (or :meth:`finish`) closes its span.  The keys and values are
    those ``add`` of the same elements in any order writes, so the two are interchangeable; it
    reads nothing, and holds one open node per level.  Pass each element's ``suffix`` and
    ``element_hash`` (:func:`element_suffix`, :meth:`RankedSet.element_hash`), computed once for the
    several sets (windows) an element goes to; the hash must be ``RankedSet.element_hash``.
    """

    __slots__ = ("_levels", "_top", "_count_duplicates", "_write", "_open", "_opened_at", "_total", "_previous")

    def __init__(self, ranked: RankedSetKeys, write: Callable[[bytes, bytes], None]) -> None:
        self._levels = ranked._levels
        self._top = ranked.nlevels
        self._count_duplicates = ranked.count_duplicates
        self._write = write
        self._open = list(ranked._level_sentinels)  # each level's node whose span is still open
        self._opened_at = [0] * ranked.nlevels  # occurrences added before it opened
        self._total = 0
        self._previous = b""  # the last suffix added (none is empty)

    def add(self, suffix: bytes, element_hash: int, occurrences: int = 1) -> int:
        """Add an element above every one added so far (an equal one adds occurrences with
        ``count_duplicates``, and nothing without); returns the occurrences added."""
        if suffix == self._previous:
            if not self._count_duplicates:
                return 0
        elif suffix < self._previous:
            raise ValueError("a ranked set is built from ascending elements")
        else:
            self._previous = suffix
            total, opened, levels, write = self._total, self._opened_at, self._levels, self._write
            for level in range(self._top):
                if level and element_hash & _LEVEL_MASKS[level]:
                    break
                write(self._open[level], _encode_count(total - opened[level]))
                self._open[level] = levels[level] + suffix
                opened[level] = total
        count = occurrences if self._count_duplicates else 1
        self._total += count
        return count

    def finish(self) -> int:
        """Write every open node (the set then holds what was added); returns the set's size."""
        total = self._total
        for level in range(self._top):
            self._write(self._open[level], _encode_count(total - self._opened_at[level]))
        return total
