"""Pages by number, percentiles, and the score at a percentile (agoragames' ``leaders(page)``,
``percentile_for`` and ``score_for_percentile``).

Positions are the window's order (0 = best, ties by timestamp, context, primary key), so a
board of ``total`` records splits into ``ceil(total / size)`` pages; page 1 holds positions
``0 .. size-1``.  Every call is one transaction: a page is a count plus one bounded rank scan
(at most :data:`MAX_PAGE_SIZE` records), a percentile a count plus one rank, and the score at
a percentile a count plus at most two ``score_for_rank`` walks.

- ``percentile(pk)``: ``100 * (total - 1 - rank) / total`` with the record's ORDINAL rank: the
  share of the window's records behind it, in percent (the best of 4 records: 75.0; the last:
  0.0), as agoragames computes it before rounding; records tied on the whole score key share
  it.  None if the record has no value in the window.
- ``score_for_percentile(p)``: the score at percentile ``p`` of the scores from the worst
  (``p = 0``) to the best (``p = 100``), interpolated linearly between the two records around
  position ``(total - 1) * p / 100`` counted from the worst, as agoragames does; the exact stored
  score when that position is a whole number.  None for an empty window.  Column scores do not
  interpolate: the score at the whole position below (the worse of the two) is the answer.
"""

from __future__ import annotations

import dataclasses
import math

from ..errors import InvalidArgument
from .directory import Window
from .reads import RankedEntry, RankMode, Reader, ScanType, WindowRef
from .values import check_at_least

MAX_PAGE_SIZE = 1000


@dataclasses.dataclass(frozen=True)
class Page:
    entries: list[RankedEntry]
    page: int  # 1-based, as asked
    size: int
    total: int  # records in the window
    pages: int  # ceil(total / size): the last page's number (0 when the window is empty)
    window: Window | None = None  # the window read


def page(reader: Reader, number: int, size: int, ref: WindowRef, mode: RankMode = RankMode.ORDINAL) -> Page:
    """Page ``number`` (1-based) of ``size`` records; a page past the last one is empty."""
    check_at_least(number, 1, "page")
    check_at_least(size, 1, "page size")
    if size > MAX_PAGE_SIZE:
        raise InvalidArgument(f"a page holds at most {MAX_PAGE_SIZE} records; asked for {size}")
    total = reader.count(ref)
    first = (number - 1) * size
    entries: list[RankedEntry] = []
    if first < total:
        scan = reader.scan(
            ScanType.BY_RANK if ref.type == 0 else ScanType.BY_TIME_WINDOW,
            low=first,
            high=first + size - 1,
            window_type=ref.type,
            timestamp=ref.timestamp,
            group=ref.group,
            limit=size,
            mode=mode,
        )
        entries = scan.entries
    return Page(entries, number, size, total, math.ceil(total / size), reader.txn.window_read)


def percentile(reader: Reader, pk: object, ref: WindowRef) -> float | None:
    position = reader.rank(pk, ref, RankMode.ORDINAL)
    if position is None:
        return None
    total = reader.count(ref)
    return 100.0 * (total - 1 - position) / total


def score_for_percentile(reader: Reader, percent: object, ref: WindowRef) -> int | float | tuple | None:
    if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 <= percent <= 100:
        raise InvalidArgument(f"percentile must be a number from 0 to 100, not {percent!r}")
    total = reader.count(ref)
    if total == 0:
        return None
    from_worst = (total - 1) * percent / 100
    lower = math.floor(from_worst)
    # Position from the worst -> position from the best (what score_for_rank takes).
    low_score = reader.score_for_rank(total - 1 - lower, ref)
    if from_worst == lower or reader.space.settings.columns:  # column scores do not interpolate
        return low_score
    high_score = reader.score_for_rank(total - 2 - lower, ref)
    return low_score + (from_worst - lower) * (high_score - low_score)  # type: ignore[operator]
