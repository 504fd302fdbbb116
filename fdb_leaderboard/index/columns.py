"""Multi-column scores: an index may rank by up to four integer columns, each with its direction.

A column score is a tuple of int64s, compared column by column: ``("HIGH", "LOW", "LOW")`` ranks
most kills first, then fewest deaths, then the earliest time.  Equal scores then rank by the
timestamp (who reached it first) and the context, as single scores do.

Stored form: the ranked-set element is ``pack((columns, ts, context...))`` where ``columns`` is
one nested tuple holding each column negated when higher ranks better, so the element still
has one leading score item and the tuple layer orders it column by column (fixed-length
tuples of integers compare as their items do).  Every read works on it unchanged: ranks in
each mode, listings, pages, scans, distinct scores (DENSE) and percentiles.

A column index is read as a high-score-first index whose "negation" flips each HIGH column:
its natural order (BY_VALUE scans, score bounds) runs from the worst score to the best.  Its
directions are fixed at creation, so the index-wide and per-group ``high_score_first`` do not
apply.  Aggregations: BEST (the best entry) and LATEST (the latest) take a whole entry, so they
keep its columns together; SUM is refused, since adding columns such as "earliest time"
across entries means nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import InvalidArgument
from .directory import INT64_MAX, INT64_MIN

HIGH = "HIGH"  # a higher value ranks better (most kills)
LOW = "LOW"  # a lower value ranks better (fewest deaths, earliest time)
DIRECTIONS = (HIGH, LOW)
MAX_COLUMNS = 4
AGGREGATIONS = ("BEST", "LATEST")


def check_directions(columns: object) -> tuple[str, ...]:
    """``columns`` as a tuple of directions (empty: single scores)."""
    if isinstance(columns, str) or not isinstance(columns, Sequence):
        raise InvalidArgument(f"columns must be a list of directions (HIGH or LOW), not {columns!r}")
    columns = tuple(columns)
    if columns and not 2 <= len(columns) <= MAX_COLUMNS:
        raise InvalidArgument(
            f"a multi-column score has 2 to {MAX_COLUMNS} columns, not {len(columns)} "
            "(a one-column score is a plain score: leave columns empty)"
        )
    for direction in columns:
        if direction not in DIRECTIONS:
            raise InvalidArgument(f"a column's direction is HIGH or LOW, not {direction!r}")
    return columns


def check_column_score(score: object, width: int) -> tuple[int, ...]:
    """``score`` as a column score of ``width`` int64s (a list is taken as a tuple)."""
    if not isinstance(score, tuple | list):
        raise InvalidArgument(
            f"this index ranks by {width} columns: a score is a list of {width} integers, not {score!r}"
        )
    if len(score) != width:
        raise InvalidArgument(f"this index ranks by {width} columns: a score has {width} integers, not {len(score)}")
    for value in score:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgument(f"a score's columns are integers, not {value!r}")
        if not INT64_MIN <= value <= INT64_MAX:
            raise InvalidArgument(f"score column {value} is outside the int64 range")
    return tuple(score)


def flipper(columns: Sequence[str]) -> Callable[[tuple], tuple]:
    """The function turning a column score into its stored form and back (it undoes itself):
    each HIGH column negated (-INT64_MIN is 2**63, which the tuple layer orders correctly)."""
    high = tuple(direction == HIGH for direction in columns)

    def flip(score: tuple) -> tuple:
        return tuple([-value if negated else value for value, negated in zip(score, high, strict=True)])

    return flip


def is_score_key(value: object, columns: Sequence[str]) -> bool:
    """Whether ``value`` (given where a score or a score key may come) is a score key
    ``(score, timestamp, context...)``: any tuple for single scores; for column scores a tuple
    whose first item is itself the columns."""
    if not isinstance(value, tuple):
        return False
    return not columns or (bool(value) and isinstance(value[0], tuple | list))
