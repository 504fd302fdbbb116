"""A record's movement between windows of one type, and its rank history over them.

- :func:`movement`: the record's rank in the window a read resolves to (today, this week) and in
  the previous window of the same type (yesterday, last week), and the change.  The previous
  window is the one a read of the type at the current window's start minus one resolves to
  (the oldest window of the type containing that instant): for consecutive windows, the one
  just before.  ``change = previous rank - rank``: positive when the record moved up.
- :func:`history`: the record's entry and rank in each of the latest ``count`` windows of the
  type starting at or before a timestamp (at most :data:`MAX_HISTORY_WINDOWS`), and the best of
  those ranks.  A closed window's value is final, so this is the best rank the record finished
  a window with, among the windows still kept (expired windows are gone).

The best rank reached *during* a window is not kept: a record's rank moves with every other
record's writes, so keeping it exactly would cost a rank walk of every window on every write of
any record, and it would still not be exact where others can fall behind it (LATEST scores,
deletes).  Both reads are one transaction; each window costs O(log n) store reads.
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidArgument, WindowNotFound, WindowNotReady
from .directory import ALL_TIME, Window, check_window_type
from .reads import RankedEntry, RankMode, Reader, WindowRef
from .values import check_at_least, check_timestamp

MAX_HISTORY_WINDOWS = 100


@dataclasses.dataclass(frozen=True)
class Movement:
    window: Window
    entry: RankedEntry | None  # the record in ``window``, with its rank; None if absent there
    previous_window: Window | None  # None: no window of the type before it
    previous_entry: RankedEntry | None

    @property
    def rank(self) -> int | None:
        return None if self.entry is None else self.entry.rank

    @property
    def previous_rank(self) -> int | None:
        return None if self.previous_entry is None else self.previous_entry.rank

    @property
    def change(self) -> int | None:
        """Places gained since the previous window (negative: lost); None if absent from either."""
        if self.rank is None or self.previous_rank is None:
            return None
        return self.previous_rank - self.rank


@dataclasses.dataclass(frozen=True)
class History:
    windows: list[tuple[Window, RankedEntry | None]]  # latest first
    best: tuple[Window, RankedEntry] | None  # the best rank among them (the latest window on ties)


def _typed(window_type: object) -> int:
    window_type = check_window_type(window_type, allow_all_time=True)
    if window_type == ALL_TIME:
        raise InvalidArgument("the all-time window has no previous window: give a window type other than 0")
    return window_type


def movement(reader: Reader, pk: object, ref: WindowRef, mode: RankMode = RankMode.ORDINAL) -> Movement:
    ref = dataclasses.replace(ref, type=_typed(ref.type))
    window = reader.window(ref)
    entry = reader.rank_and_entry(pk, ref, mode)
    previous_window = previous_entry = None
    if window.start > -(1 << 63):
        before = dataclasses.replace(ref, timestamp=window.start - 1)
        try:
            previous_window = reader.window(before)
        except WindowNotFound:
            pass
        else:
            previous_entry = reader.rank_and_entry(pk, before, mode)
    return Movement(window, entry, previous_window, previous_entry)


def history(
    reader: Reader,
    pk: object,
    ref: WindowRef,
    count: int = 10,
    mode: RankMode = RankMode.ORDINAL,
) -> History:
    """Windows being filled are left out (they are not served); so are windows no read of the
    type resolves to (one nested in an older, wider window of the type)."""
    window_type = _typed(ref.type)
    check_at_least(count, 1, "count")
    if count > MAX_HISTORY_WINDOWS:
        raise InvalidArgument(f"at most {MAX_HISTORY_WINDOWS} windows per call; asked for {count}")
    until = None if ref.timestamp is None else check_timestamp(ref.timestamp, reader.space.checked_timebase)
    directory = reader.txn.directory()
    candidates = [
        window
        for window in (directory.of_type(window_type) if directory is not None else ())
        if not window.filling and (until is None or window.start <= until)
    ]
    candidates.sort(key=lambda window: (window.start, -window.end), reverse=True)
    seen: list[tuple[Window, RankedEntry | None]] = []
    for window in candidates:
        if len(seen) == count:
            break
        at_start = WindowRef(window_type, window.start, ref.group)
        try:
            if reader.window(at_start) != window:  # a read at its start resolves to an older window
                continue
        except WindowNotReady:  # ... one being filled
            continue
        seen.append((window, reader.rank_and_entry(pk, at_start, mode)))
    ranked = [(window, entry) for window, entry in seen if entry is not None]
    best = min(ranked, key=lambda found: found[1].rank, default=None)  # type: ignore[arg-type,return-value]
    return History(seen, best)  # type: ignore[arg-type]
