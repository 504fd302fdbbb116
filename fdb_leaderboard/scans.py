"""Reads of the index: ranks, top N, around me, counts and the three scans.

Ranks are 0-based (0 = best) and come from the window's ranked set, never from a cache:

- ``ORDINAL`` (the reference): the number of records whose full score key (stored score,
  timestamp, context) is better.  Records with identical full keys share a rank.  With
  ``count_duplicates`` off (the reference's layout) it counts distinct keys instead.
- ``COMPETITION``: the number of records with a strictly better score, so equal scores
  share a rank and the next rank skips (0, 0, 2).

A rank read resolves its window (all-time, or the oldest window of a type containing a
timestamp), refuses windows still being filled (:class:`WindowNotReady`), reads the record's
head for its value there, and walks the ranked set: O(log n) store reads.  Listings read the
ranked set once to find their first position and then scan the primary B-tree in order.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import fdb.tuple

from .directory import ALL_TIME, Window, check_window_type
from .errors import InvalidArgument, WindowNotFound, WindowNotReady
from .store.api import strinc
from .values import check_items, check_timestamp, negate, normalize_score

if TYPE_CHECKING:
    from .index import LeaderboardIndex, Operations


class RankMode(enum.Enum):
    ORDINAL = "ORDINAL"
    COMPETITION = "COMPETITION"


class ScanType(enum.Enum):
    BY_VALUE = "BY_VALUE"  # the all-time window by score range, in natural score order
    BY_RANK = "BY_RANK"  # the all-time window by rank range
    BY_TIME_WINDOW = "BY_TIME_WINDOW"  # a window of a type containing a timestamp, by rank range


class IfAbsent(enum.Enum):
    """What "around me" answers for a record with no value in the window."""

    EMPTY = "EMPTY"  # nothing
    TOP = "TOP"  # the top of the window
    BOTTOM = "BOTTOM"  # the bottom of the window


@dataclasses.dataclass(frozen=True)
class RankedEntry:
    """A record's value in a window, with its rank when the read computes one."""

    pk: tuple
    score: int | float
    timestamp: int
    context: tuple = ()
    group: tuple = ()
    rank: int | None = None


@dataclasses.dataclass(frozen=True)
class ScanPage:
    entries: list[RankedEntry]
    continuation: bytes | None  # pass back to get the next page; None when the scan is done


@dataclasses.dataclass(frozen=True)
class WindowRef:
    """Which window a read uses: type 0 is all-time; other types need a timestamp."""

    type: int = ALL_TIME
    timestamp: int | None = None


class Reader:
    """The read operations in one transaction (``ops``), for one index."""

    def __init__(self, ops: Operations) -> None:
        self.ops = ops
        self.index: LeaderboardIndex = ops.index
        self.tr = ops.tr
        self.layout = ops.layout

    # -- resolving ----------------------------------------------------------------------

    def window(self, ref: WindowRef) -> Window:
        try:
            window_type = check_window_type(ref.type, allow_all_time=True)
        except (TypeError, ValueError) as exc:  # a bad type is the caller's error, like every other
            raise InvalidArgument(str(exc)) from None
        if window_type != ALL_TIME and ref.timestamp is None:
            raise InvalidArgument(f"window type {window_type} needs a timestamp to choose the window")
        ts = 0 if ref.timestamp is None else check_timestamp(ref.timestamp)
        directory = self.ops.directory()
        window = directory.oldest(window_type, ts) if directory is not None else None
        if window is None:
            if window_type == ALL_TIME:
                raise WindowNotFound("the index has no all-time window: add one with a window update")
            raise WindowNotFound(f"no window of type {window_type} contains timestamp {ts}")
        if window.filling:
            raise WindowNotReady(f"{window.describe()} is still being filled from stored records")
        return window

    def group_bytes(self, group: object) -> bytes:
        group = check_items(group, "group")
        size = self.index.settings.group_size
        if len(group) != size:
            raise InvalidArgument(f"this index groups by {size} element(s); got group {group!r}")
        return fdb.tuple.pack(group)

    def _decode(self, window: Window, key: bytes, group_bytes: bytes) -> RankedEntry:
        settings = self.index.settings
        items = fdb.tuple.unpack(key[len(self.layout.primary) + len(window.key_bytes) :])
        g, c = settings.group_size, settings.context_size
        stored = items[g]
        score = negate(stored) if self.ops.high_score_first(group_bytes) else stored
        return RankedEntry(
            pk=tuple(items[g + 2 + c :]),
            score=score,
            timestamp=items[g + 1],
            context=tuple(items[g + 2 : g + 2 + c]),
            group=tuple(items[:g]),
        )

    def _head_state(self, pk: object, window: Window, group_bytes: bytes) -> tuple[bytes, bytes] | None:
        """The record's element in the window, and its flat pk bytes; None if absent."""
        pk = self.ops._pk(pk)
        head = self.ops.read_head(pk[1])
        if head is None:
            return None
        for state in head.windows:
            if state.lb_key == window.lb_key and state.group == group_bytes:
                return state.element, pk[2]
        return None

    # -- ranks --------------------------------------------------------------------------

    def _rank_of(self, window: Window, group_bytes: bytes, element: bytes, mode: RankMode) -> int:
        ranked = self.index.ranked_set(window, group_bytes)
        if mode is RankMode.COMPETITION:
            return ranked.rank(self.tr, fdb.tuple.pack((fdb.tuple.unpack(element)[0],)), null_if_missing=False)
        return ranked.rank(self.tr, element)  # type: ignore[return-value]

    def rank(self, pk: object, ref: WindowRef, group: object = (), mode: RankMode = RankMode.ORDINAL) -> int | None:
        window = self.window(ref)
        group_bytes = self.group_bytes(group)
        found = self._head_state(pk, window, group_bytes)
        return None if found is None else self._rank_of(window, group_bytes, found[0], mode)

    def rank_and_entry(
        self, pk: object, ref: WindowRef, group: object = (), mode: RankMode = RankMode.ORDINAL
    ) -> RankedEntry | None:
        window = self.window(ref)
        group_bytes = self.group_bytes(group)
        found = self._head_state(pk, window, group_bytes)
        if found is None:
            return None
        element, pk_flat = found
        key = self.layout.primary + window.key_bytes + group_bytes + element + pk_flat
        entry = self._decode(window, key, group_bytes)
        return dataclasses.replace(entry, rank=self._rank_of(window, group_bytes, element, mode))

    def count(self, ref: WindowRef, group: object = ()) -> int:
        window = self.window(ref)
        return self.index.ranked_set(window, self.group_bytes(group)).size(self.tr)

    def _score(self, score: object) -> int | float:
        return normalize_score(score, self.index.settings.score_type)

    def _stored_score(self, score: object, group_bytes: bytes) -> int | float:
        score = self._score(score)
        return negate(score) if self.ops.high_score_first(group_bytes) else score

    def rank_for_score(self, score: object, ref: WindowRef, group: object = ()) -> int:
        """The rank a new record with ``score`` would have: how many records score better."""
        window = self.window(ref)
        group_bytes = self.group_bytes(group)
        probe = fdb.tuple.pack((self._stored_score(score, group_bytes),))
        return self.index.ranked_set(window, group_bytes).rank(self.tr, probe, null_if_missing=False)  # type: ignore[return-value]

    def score_for_rank(self, rank: int, ref: WindowRef, group: object = ()) -> int | float | None:
        """The score of the record at ``rank`` (ORDINAL position), or None past the end."""
        _check_rank(rank, "rank")
        window = self.window(ref)
        group_bytes = self.group_bytes(group)
        element = self.index.ranked_set(window, group_bytes).get_nth(self.tr, rank)
        if element is None:
            return None
        stored = fdb.tuple.unpack(element)[0]
        return negate(stored) if self.ops.high_score_first(group_bytes) else stored

    # -- listings by position -------------------------------------------------------------

    def _by_position(
        self, window: Window, group_bytes: bytes, start: int, count: int, mode: RankMode
    ) -> list[RankedEntry]:
        """The records at positions ``start .. start+count-1`` with their ranks."""
        ranked = self.index.ranked_set(window, group_bytes)
        element = ranked.get_nth(self.tr, start) if count > 0 else None
        if element is None:
            return []
        first = ranked.rank(self.tr, element) or 0
        group_prefix = self.layout.primary + window.key_bytes + group_bytes
        if ranked.count_duplicates:  # positions are records: skip those of the key before `start`
            skip = start - first
            rows = self.tr.get_range(group_prefix + element, strinc(group_prefix), skip + count)[skip:]
        else:  # positions are distinct keys, as in the reference: every record of `count` keys
            last = ranked.get_nth(self.tr, start + count - 1)
            end = strinc(group_prefix + last) if last is not None else strinc(group_prefix)
            rows = self.tr.get_range(group_prefix + element, end)
        out: list[RankedEntry] = []
        previous: tuple[bytes, Any, int, int] | None = None  # element, stored score, ordinal, competition
        for i, (key, _) in enumerate(rows):
            entry = self._decode(window, key, group_bytes)
            element_here = key[len(group_prefix) : len(key) - _pk_length(entry.pk)]
            stored = fdb.tuple.unpack(element_here)[0]
            if previous is None:
                ordinal = first
                competition = self._rank_of(window, group_bytes, element_here, RankMode.COMPETITION)
            else:
                same_key = element_here == previous[0]
                if same_key:
                    ordinal = previous[2]
                elif ranked.count_duplicates:
                    ordinal = start + i
                else:
                    ordinal = previous[2] + 1
                if stored == previous[1]:
                    competition = previous[3]
                elif ranked.count_duplicates:
                    competition = start + i
                else:
                    competition = self._rank_of(window, group_bytes, element_here, RankMode.COMPETITION)
            previous = (element_here, stored, ordinal, competition)
            out.append(dataclasses.replace(entry, rank=ordinal if mode is RankMode.ORDINAL else competition))
        return out

    def top(self, n: int, ref: WindowRef, group: object = (), mode: RankMode = RankMode.ORDINAL) -> list[RankedEntry]:
        _check_rank(n, "n")
        window = self.window(ref)
        return self._by_position(window, self.group_bytes(group), 0, n, mode)

    def around(
        self,
        pk: object,
        above: int,
        below: int,
        ref: WindowRef,
        group: object = (),
        mode: RankMode = RankMode.ORDINAL,
        if_absent: IfAbsent = IfAbsent.EMPTY,
    ) -> list[RankedEntry]:
        """Up to ``above`` records before ``pk``, the record, and ``below`` after it.

        Near either end the window shifts so that it still holds ``above + below + 1``
        records when the leaderboard has that many.
        """
        _check_rank(above, "above")
        _check_rank(below, "below")
        window = self.window(ref)
        group_bytes = self.group_bytes(group)
        ranked = self.index.ranked_set(window, group_bytes)
        size = ranked.size(self.tr)
        span = above + below + 1
        found = self._head_state(pk, window, group_bytes)
        if found is None:
            if if_absent is IfAbsent.TOP:
                return self._by_position(window, group_bytes, 0, span, mode)
            if if_absent is IfAbsent.BOTTOM:
                return self._by_position(window, group_bytes, max(0, size - span), span, mode)
            return []
        element, pk_flat = found
        position = ranked.rank(self.tr, element) or 0
        if ranked.count_duplicates:  # records sharing the key sort by pk: count those before this one
            group_prefix = self.layout.primary + window.key_bytes + group_bytes + element
            position += len(self.tr.get_range(group_prefix, group_prefix + pk_flat))
        start = max(0, min(position - above, size - span))
        return self._by_position(window, group_bytes, start, span, mode)

    # -- scans ----------------------------------------------------------------------------

    def scan(
        self,
        scan_type: ScanType,
        *,
        low: object = None,
        high: object = None,
        low_inclusive: bool = True,
        high_inclusive: bool = True,
        window_type: int = ALL_TIME,
        timestamp: int | None = None,
        group: object = (),
        reverse: bool = False,
        limit: int = 0,
        continuation: bytes | None = None,
        mode: RankMode = RankMode.ORDINAL,
    ) -> ScanPage:
        """One page of a scan.

        BY_VALUE bounds are scores (None: unbounded) and the scan runs in natural score order
        (ascending forward) whatever high_score_first says.  As in the reference, a
        high-score-first group is read backwards in stored order, so records tied on score
        come out latest timestamp first.  BY_RANK and BY_TIME_WINDOW bounds are ranks.
        """
        _check_rank(limit, "limit")
        if scan_type is ScanType.BY_VALUE:
            return self._scan_by_value(low, high, low_inclusive, high_inclusive, group, reverse, limit, continuation)
        if scan_type is ScanType.BY_RANK:
            ref = WindowRef()
        elif scan_type is ScanType.BY_TIME_WINDOW:
            if timestamp is None:
                raise InvalidArgument("a BY_TIME_WINDOW scan needs a window type and a timestamp")
            ref = WindowRef(window_type, timestamp)
        else:
            raise InvalidArgument(f"unknown scan type {scan_type!r}")
        return self._scan_by_rank(ref, low, high, low_inclusive, high_inclusive, group, limit, continuation, mode)

    def _continuation(self, window: Window, kind: str, payload: tuple) -> bytes:
        return fdb.tuple.pack((b"FLB1", self._index_tag(), window.lb_key, kind, *payload))

    def _index_tag(self) -> bytes:
        return hashlib.blake2b(self.index.prefix, digest_size=8).digest()

    def _resume(self, token: bytes | None, window: Window, kind: str) -> tuple | None:
        if token is None:
            return None
        if not isinstance(token, bytes):
            raise InvalidArgument("continuation must be bytes")
        try:
            items = fdb.tuple.unpack(token)
        except Exception:
            raise InvalidArgument("continuation is malformed") from None
        if len(items) < 4 or items[0] != b"FLB1" or items[1] != self._index_tag():
            raise InvalidArgument("continuation does not belong to this index")
        if items[2] != window.lb_key or items[3] != kind:
            raise InvalidArgument("continuation belongs to another window or kind of scan")
        return tuple(items[4:])

    def _scan_by_value(
        self,
        low: object,
        high: object,
        low_inclusive: bool,
        high_inclusive: bool,
        group: object,
        reverse: bool,
        limit: int,
        continuation: bytes | None,
    ) -> ScanPage:
        window = self.window(WindowRef())
        group_bytes = self.group_bytes(group)
        hsf = self.ops.high_score_first(group_bytes)
        prefix = self.layout.primary + window.key_bytes + group_bytes
        # Natural bounds become stored bounds; high_score_first negates, swapping the ends.
        if hsf:
            low, high, low_inclusive, high_inclusive = (
                None if high is None else negate(self._score(high)),
                None if low is None else negate(self._score(low)),
                high_inclusive,
                low_inclusive,
            )
            reverse = not reverse
        else:
            low = None if low is None else self._score(low)
            high = None if high is None else self._score(high)
        begin = prefix if low is None else prefix + fdb.tuple.pack((low,))
        if low is not None and not low_inclusive:
            begin = strinc(begin)
        end = strinc(prefix) if high is None else prefix + fdb.tuple.pack((high,))
        if high is not None and high_inclusive:
            end = strinc(end)
        resumed = self._resume(continuation, window, "value")
        if resumed is not None:
            last = prefix + resumed[0]
            if reverse:
                end = min(end, last)
            else:
                begin = max(begin, last + b"\x00")
        rows = self.tr.get_range(begin, end, limit, reverse) if begin < end else []
        entries = [self._decode(window, key, group_bytes) for key, _ in rows]
        token = None
        if limit and len(rows) == limit:
            token = self._continuation(window, "value", (rows[-1][0][len(prefix) :],))
        return ScanPage(entries, token)

    def _scan_by_rank(
        self,
        ref: WindowRef,
        low: object,
        high: object,
        low_inclusive: bool,
        high_inclusive: bool,
        group: object,
        limit: int,
        continuation: bytes | None,
        mode: RankMode,
    ) -> ScanPage:
        window = self.window(ref)
        group_bytes = self.group_bytes(group)
        first = 0 if low is None else _check_rank(low, "low rank") + (0 if low_inclusive else 1)
        size = self.index.ranked_set(window, group_bytes).size(self.tr)
        last = (
            size - 1 if high is None else min(_check_rank(high, "high rank") - (0 if high_inclusive else 1), size - 1)
        )
        if low is not None and high is not None and high < low:
            raise InvalidArgument(f"rank range is inverted: low {low} > high {high}")
        resumed = self._resume(continuation, window, "rank")
        if resumed is not None:
            first = max(first, resumed[0])
        count = last - first + 1
        if limit:
            count = min(count, limit)
        entries = self._by_position(window, group_bytes, first, count, mode) if count > 0 else []
        next_first = first + count
        token = None
        if limit and count == limit and next_first <= last:
            token = self._continuation(window, "rank", (next_first,))
        return ScanPage(entries, token)


def _check_rank(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer, not {type(value).__name__}")
    if value < 0:
        raise InvalidArgument(f"{name} must not be negative, not {value}")
    return value


def _pk_length(pk: Sequence[object]) -> int:
    return len(fdb.tuple.pack(tuple(pk)))
