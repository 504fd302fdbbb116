"""The ranked set: :class:`RankedSet`, one set's reads, writes and checks over its key layout."""

from __future__ import annotations

from .checker import RankedSetChecks
from .reads import RankedSetReads
from .writes import RankedSetWrites


class RankedSet(RankedSetWrites, RankedSetReads, RankedSetChecks):
    """One ranked set under raw key prefix ``prefix``; elements are non-empty byte strings.

    With ``count_duplicates`` (the reference's ``countDuplicates``) an element may be added
    several times: its level-0 value is its multiplicity and every count, rank and
    position counts each occurrence.  The object holds no data, only key prefixes.
    """

    __slots__ = ()
