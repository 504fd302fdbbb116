"""Reads of the index: ranks, top N, around me, counts and the three scans.

Ranks are 0-based (0 = best) and come from the window's ranked set, never from a cache:

- ``ORDINAL`` (the reference): the number of records whose full score key (stored score,
  timestamp, context) is better.  Records with identical full keys share a rank.  With
  ``count_duplicates`` off (the reference's layout) it counts distinct keys instead.
- ``COMPETITION``: the number of records with a strictly better score, so equal scores
  share a rank and the next rank skips (0, 0, 2).
- ``DENSE``: the number of distinct scores strictly better, so equal scores share a rank and
  the next does not skip (0, 0, 1).  Only for indexes created with ``dense_ranks``, which keep
  a second ranked set per window and group holding each distinct stored score once: a rank is
  one walk of that set, O(log d) reads for d distinct scores.

A rank read resolves its window (all-time, or the oldest window of a type containing a
timestamp), refuses windows still being filled (:class:`WindowNotReady`), reads the record's
head for its value there (none while it is hidden), and walks the ranked set: O(log n) store
reads.  Listings read the ranked set once to find their first position and then scan the
primary B-tree in order.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..errors import InvalidArgument, WindowNotFound, WindowNotReady
from ..rankedset import Steps, run_alone
from ..store.api import strinc
from . import tuplecodec as tuples
from .directory import ALL_TIME, Window, WindowRef, check_window_type
from .layout import extensions_end, score_prefix
from .transaction import IndexTransaction
from .values import check_at_least, check_items, check_timestamp, normalize_score

# continuations: (version, index tag, window key, scan tag, position) and a digest of it
_TOKEN_VERSION = b"FLB2"


class RankMode(enum.Enum):
    ORDINAL = "ORDINAL"
    COMPETITION = "COMPETITION"
    DENSE = "DENSE"


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
    """A record's value in a window, with its rank when the read computes one, and its display
    metadata when the read attaches it (every listing of ``LeaderboardIndex`` does: {} if none)."""

    pk: tuple
    score: int | float | tuple  # a tuple of ints in an index ranking by columns
    timestamp: int
    context: tuple = ()
    group: tuple = ()
    rank: int | None = None
    metadata: dict[str, str] | None = dataclasses.field(default=None, hash=False)

    def with_metadata(self, metadata: dict[str, str]) -> RankedEntry:
        """This entry with ``metadata``: ``dataclasses.replace``'s result, made without its per-field
        introspection (a listing makes one per row)."""
        fields = self.__dict__.copy()
        fields["metadata"] = metadata
        copied = _new_object(RankedEntry)
        _set_attribute(copied, "__dict__", fields)
        return copied


_new_object = object.__new__
_set_attribute = object.__setattr__


class _Row(NamedTuple):
    """A primary B-tree key, decoded."""

    key: bytes
    element: bytes  # the ranked-set element: (stored score, ts, context...) packed
    stored: object  # the stored score (negated when high scores come first)
    pk: tuple
    score: int | float | tuple  # a tuple of ints in an index ranking by columns
    timestamp: int
    context: tuple
    group: tuple

    def entry(self, rank: int | None = None) -> RankedEntry:
        """``RankedEntry(pk, score, timestamp, context, group, rank)``, made without the frozen
        dataclass's ``__init__``, which sets each field through ``object.__setattr__`` (a
        listing makes one per row: this takes a third of the time)."""
        entry = _new_object(RankedEntry)
        fields = entry.__dict__
        fields["pk"] = self.pk
        fields["score"] = self.score
        fields["timestamp"] = self.timestamp
        fields["context"] = self.context
        fields["group"] = self.group
        fields["rank"] = rank
        fields["metadata"] = None
        return entry


class Listing(list[RankedEntry]):
    """Entries read from one window, best first, with that ``window`` (None: several or none)."""

    def __init__(self, entries: Sequence[RankedEntry] = (), window: Window | None = None) -> None:
        super().__init__(entries)
        self.window = window


@dataclasses.dataclass(frozen=True)
class ScanPage:
    entries: list[RankedEntry]
    continuation: bytes | None  # pass back to get the next page; None when the scan is done


@dataclasses.dataclass(frozen=True)
class GroupsPage:
    groups: list[tuple]  # in key order (the tuple layer's)
    continuation: bytes | None  # pass back to get the next page; None when no group follows
    window: Window  # the window read


MAX_GROUPS = 1000  # groups per page: one read each, so a page stays well within a transaction


# What each scan type ignores, with the default it must keep, and the hint given when it does not.
_UNUSED_BY_SCAN: dict[ScanType, dict[str, tuple[object, str]]] = {
    ScanType.BY_VALUE: {
        "window_type": (ALL_TIME, "it scans the all-time window; use BY_TIME_WINDOW for another window"),
        "timestamp": (None, "it scans the all-time window; use BY_TIME_WINDOW for another window"),
        "mode": (RankMode.ORDINAL, "its entries carry no rank"),
    },
    ScanType.BY_RANK: {
        "window_type": (ALL_TIME, "it ranks the all-time window; use BY_TIME_WINDOW for another window"),
        "timestamp": (None, "it ranks the all-time window; use BY_TIME_WINDOW for another window"),
    },
}


def check_scan_arguments(scan_type: ScanType, arguments: dict[str, Any]) -> None:
    """Refuse an argument ``scan_type`` would ignore (InvalidArgument naming it)."""
    for name, (default, why) in _UNUSED_BY_SCAN.get(scan_type, {}).items():
        value = arguments.get(name, default)
        if value == default or (name == "mode" and value is None):  # mode None: the default
            continue
        shown = value.name if isinstance(value, RankMode) else repr(value)
        raise InvalidArgument(f"a {scan_type.name} scan does not use {name} (given {shown}): {why}")


class Reader:
    """The read operations of one index inside one transaction (``txn``)."""

    def __init__(self, txn: IndexTransaction) -> None:
        self.txn = txn
        self.space = txn.space
        self.tr = txn.tr
        self.layout = txn.layout

    # -- resolving ----------------------------------------------------------------------

    def window(self, ref: WindowRef) -> Window:
        window_type = check_window_type(ref.type, allow_all_time=True)
        if ref.timestamp is not None:
            ts = check_timestamp(ref.timestamp, self.space.checked_timebase)
        else:  # the window holding now: today's of a daily type, this week's of a weekly one
            ts = self.txn.now() if window_type != ALL_TIME else 0
        directory = self.txn.directory()
        window = directory.oldest(window_type, ts) if directory is not None else None
        if window is None:
            if window_type == ALL_TIME:
                raise WindowNotFound("the index has no all-time window: add one with a window update")
            when = f"timestamp {ts}" if ref.timestamp is not None else f"now ({ts})"
            raise WindowNotFound(f"no window of type {window_type} contains {when}")
        if window.filling:
            state = self.txn.fill_state(window)
            raise WindowNotReady(
                f"{window.describe()} is still being filled from stored records ({state.describe()}); "
                "it is served once complete"
            )
        self.txn.window_read = window
        return window

    def group_bytes(self, group: object) -> bytes:
        group = check_items(group, "group")
        size = self.space.settings.group_size
        if len(group) != size:
            raise InvalidArgument(f"this index groups by {size} element(s); got group {group!r}")
        return tuples.pack(group)

    def _row_decoder(self, window: Window, group_bytes: bytes) -> Callable[[bytes], _Row]:
        """The decoder of one group's primary B-tree keys in ``window``: everything a key's
        layout depends on is looked up once per listing, not once per row."""
        settings = self.space.settings
        base = len(self.layout.primary) + len(window.key_bytes)
        score_at = settings.group_size
        pk_at = score_at + 2 + settings.context_size
        high_first = self.txn.high_score_first(group_bytes)
        negate = self.space.negate
        unpack = tuples.unpack_with_offsets
        new_row = tuple.__new__  # _Row(...) without NamedTuple's __new__, a Python call of its own

        def decode(key: bytes) -> _Row:
            items, offsets = unpack(key[base:])
            stored = items[score_at]
            return new_row(
                _Row,
                (
                    key,
                    key[base + offsets[score_at] : base + offsets[pk_at]],
                    stored,
                    items[pk_at:],
                    negate(stored) if high_first else stored,
                    items[score_at + 1],
                    items[score_at + 2 : pk_at],
                    items[:score_at],
                ),
            )

        return decode

    row_decoder = _row_decoder  # for cohort rows (leagues.py), which continue as primary keys do

    def _locate(self, pk: object, ref: WindowRef) -> tuple[Window, bytes, tuple[bytes, bytes] | None]:
        """The window, the packed group, and the record's element there with its flat pk bytes
        (None if it has no value there).  The directory, the record's head and the group's
        sub-directory are read together: one round trip."""
        pk = self.txn.pk(pk)
        window, group_bytes = self._window_and_group(ref, heads=[pk[1]])
        head = self.txn.read_head(pk[1])
        if head is not None and not head.hidden:  # a hidden record has no value anyone sees
            for state in head.windows:
                if state.lb_key == window.lb_key and state.group == group_bytes:
                    return window, group_bytes, (state.element, pk[2])
        return window, group_bytes, None

    def _window_and_group(self, ref: WindowRef, heads: Sequence[bytes] = ()) -> tuple[Window, bytes]:
        """The window and the packed group, their directory and sub-directory (and the record
        ``heads``) read together.  A missing window is reported before a malformed group."""
        try:
            group_bytes, bad_group = self.group_bytes(ref.group), None
        except InvalidArgument as exc:
            group_bytes, bad_group = b"", exc
        self.txn.prefetch(heads=heads, groups=[group_bytes])
        window = self.window(ref)
        if bad_group is not None:
            raise bad_group
        return window, group_bytes

    # -- groups ---------------------------------------------------------------------------

    def groups(self, ref: WindowRef, limit: int, continuation: bytes | None = None) -> GroupsPage:
        """The groups holding a value in the window, in key order, at most ``limit`` (1 to
        MAX_GROUPS) after ``continuation``: a skip-scan of the window's primary B-tree, one
        single-key read per group (the first key past the previous group's keys)."""
        if not 1 <= limit <= MAX_GROUPS:
            raise InvalidArgument(f"limit must be between 1 and {MAX_GROUPS}, not {limit}")
        if continuation:  # a malformed request is refused whatever state the window is in
            try:
                after = tuples.unpack(continuation)
            except (ValueError, TypeError, IndexError, KeyError):
                raise InvalidArgument("continuation is not one this read gave") from None
            if len(after) != self.space.settings.group_size or tuples.pack(after) != continuation:
                raise InvalidArgument("continuation is not one this read gave")
        window = self.window(ref)
        base = self.layout.window_primary(window.key_bytes)
        end = strinc(base)
        begin = extensions_end(base + continuation) if continuation else base
        size = self.space.settings.group_size
        found: list[tuple] = []
        last = b""
        while True:
            rows = self.tr.get_range(begin, end, limit=1)
            if not rows:
                return GroupsPage(found, None, window)
            if len(found) == limit:  # one more exists: the page goes on after the last
                return GroupsPage(found, last, window)
            key = rows[0][0]
            items, offsets = tuples.unpack_with_offsets(key[len(base) :], size)
            last = key[len(base) : len(base) + offsets[size]]
            found.append(tuple(items))
            begin = extensions_end(base + last) if size else end

    # -- ranks --------------------------------------------------------------------------

    def _rank_of(self, window: Window, group_bytes: bytes, element: bytes, mode: RankMode) -> int:
        """The rank of ``element``, which a record head or a B-tree row of this transaction holds:
        its presence in the set is known, so the walk skips the level-0 membership read."""
        return run_alone(self._rank_steps(window, group_bytes, element, mode))

    def _rank_steps(self, window: Window, group_bytes: bytes, element: bytes, mode: RankMode) -> Steps[int]:
        if mode is RankMode.DENSE:
            dense = self.space.dense_set(window, group_bytes)
            return (yield from dense.rank_steps(self.tr, score_prefix(element), null_if_missing=False))  # type: ignore[return-value]
        ranked = self.space.ranked_set(window, group_bytes)
        if mode is RankMode.COMPETITION:
            element = tuples.pack((tuples.unpack(element)[0],))
        return (yield from ranked.rank_steps(self.tr, element, null_if_missing=False))  # type: ignore[return-value]

    def rank(self, pk: object, ref: WindowRef, mode: RankMode = RankMode.ORDINAL) -> int | None:
        window, group_bytes, found = self._locate(pk, ref)
        return None if found is None else self._rank_of(window, group_bytes, found[0], mode)

    def rank_and_entry(self, pk: object, ref: WindowRef, mode: RankMode = RankMode.ORDINAL) -> RankedEntry | None:
        return run_alone(self.rank_and_entry_steps(pk, ref, mode))

    def rank_and_entry_steps(
        self, pk: object, ref: WindowRef, mode: RankMode = RankMode.ORDINAL
    ) -> Steps[RankedEntry | None]:
        """:meth:`rank_and_entry` as steps: several records' ranks run together (``run_together``)
        cost the rounds of one, after their heads were prefetched together."""
        window, group_bytes, found = self._locate(pk, ref)
        if found is None:
            return None
        element, pk_flat = found
        key = self.layout.primary + window.key_bytes + group_bytes + element + pk_flat
        rank = yield from self._rank_steps(window, group_bytes, element, mode)
        return self._row_decoder(window, group_bytes)(key).entry(rank)

    def count(self, ref: WindowRef) -> int:
        window, group_bytes = self._window_and_group(ref)
        return self.space.ranked_set(window, group_bytes).size(self.tr)

    def _score(self, score: object) -> int | float:
        settings = self.space.settings
        return normalize_score(score, settings.score_type, settings.columns)

    def _stored_score(self, score: object, group_bytes: bytes) -> int | float:
        return self.txn.directed(self._score(score), group_bytes)

    def rank_for_score(self, score: object, ref: WindowRef) -> int:
        """The rank a new record with ``score`` would have: how many records score better."""
        window, group_bytes = self._window_and_group(ref)
        probe = tuples.pack((self._stored_score(score, group_bytes),))
        return self.space.ranked_set(window, group_bytes).rank(self.tr, probe, null_if_missing=False)  # type: ignore[return-value]

    def score_for_rank(self, rank: int, ref: WindowRef) -> int | float | tuple | None:
        """The score of the record at ``rank`` (ORDINAL position), or None past the end."""
        check_at_least(rank, 0, "rank")
        window, group_bytes = self._window_and_group(ref)
        element = self.space.ranked_set(window, group_bytes).get_nth(self.tr, rank)
        if element is None:
            return None
        return self.txn.directed(tuples.unpack(element)[0], group_bytes)

    # -- listings by position -------------------------------------------------------------

    def _with_ranks(
        self,
        window: Window,
        group_bytes: bytes,
        rows: Sequence[_Row],
        first_position: int,
        before: _Row | None,
        mode: RankMode,
    ) -> list[RankedEntry]:
        """Rank consecutive B-tree rows: the first at ``first_position`` (a record position when
        duplicates are counted, else a distinct-key rank), ``before`` the row just before it
        (None at the top).  Ranks follow from positions and ties with the previous row; the
        ranked set is asked only when the first row ties with ``before`` (and, without counted
        duplicates, for each new score of a COMPETITION listing).  Only ``mode``'s rank is
        computed: a tie in the other mode's sense costs nothing."""
        if mode is RankMode.DENSE:
            return self._with_dense_ranks(window, group_bytes, rows, before)
        by_record = self.space.ranked_set(window, group_bytes).count_duplicates
        ordinal = mode is RankMode.ORDINAL
        out: list[RankedEntry] = []
        rank = 0
        previous = before
        for i, row in enumerate(rows):
            position = first_position + i
            tied = previous is not None and (
                row.element == previous.element if ordinal else row.stored == previous.stored
            )
            if previous is None:
                rank = position
            elif i == 0 and by_record:  # positions tell, unless the row ties with the one before
                rank = self._rank_of(window, group_bytes, row.element, mode) if tied else position
            elif i == 0 and ordinal:
                rank = position  # a distinct-key rank
            elif i == 0 or not tied:
                if by_record:
                    rank = position
                elif ordinal:
                    rank += 1
                else:
                    rank = self._rank_of(window, group_bytes, row.element, mode)
            previous = row
            out.append(row.entry(rank))
        return out

    def _with_dense_ranks(
        self, window: Window, group_bytes: bytes, rows: Sequence[_Row], before: _Row | None
    ) -> list[RankedEntry]:
        """Dense ranks of consecutive rows: one walk of the distinct-score set for the first
        row, then one more for each new score (``before`` is unused: the walk needs no tie)."""
        out: list[RankedEntry] = []
        rank = 0
        previous: _Row | None = None
        for row in rows:
            if previous is None:
                rank = self._rank_of(window, group_bytes, row.element, RankMode.DENSE)
            elif row.stored != previous.stored:
                rank += 1
            previous = row
            out.append(row.entry(rank))
        return out

    def _before(self, group_prefix: bytes, key: bytes, decode: Callable[[bytes], _Row]) -> _Row | None:
        """The B-tree row just before ``key`` under ``group_prefix`` (one window and group)."""
        rows = self.tr.get_range(group_prefix, key, 1, True)
        return decode(rows[0][0]) if rows else None

    def _by_position(
        self, window: Window, group_bytes: bytes, start: int, count: int, mode: RankMode
    ) -> list[RankedEntry]:
        """The records at positions ``start .. start+count-1`` with their ranks."""
        ranked = self.space.ranked_set(window, group_bytes)
        group_prefix = self.layout.primary + window.key_bytes + group_bytes
        decode = self._row_decoder(window, group_bytes)
        if start == 0 and ranked.count_duplicates:  # the top: the B-tree's first rows
            keys = self.tr.get_range(group_prefix, extensions_end(group_prefix), count) if count > 0 else []
            return self._with_ranks(window, group_bytes, [decode(k) for k, _ in keys], 0, None, mode)
        element = ranked.get_nth(self.tr, start) if count > 0 else None
        if element is None:
            return []
        if ranked.count_duplicates:  # positions are records: skip those of the key before `start`
            skip = start - (ranked.rank(self.tr, element) or 0)
            keys = self.tr.get_range(group_prefix + element, extensions_end(group_prefix), skip + count)
            rows = [decode(k) for k, _ in keys]
            before = rows[skip - 1] if skip else self._before(group_prefix, keys[0][0], decode) if keys else None
            return self._with_ranks(window, group_bytes, rows[skip:], start, before, mode)
        # Positions are distinct keys, as in the reference: every record of `count` keys.
        last = ranked.get_nth(self.tr, start + count - 1)
        end = extensions_end(group_prefix + last if last is not None else group_prefix)
        rows = [decode(k) for k, _ in self.tr.get_range(group_prefix + element, end)]
        before = self._before(group_prefix, rows[0].key, decode) if rows and start else None
        return self._with_ranks(window, group_bytes, rows, start, before, mode)

    def top(self, n: int, ref: WindowRef, mode: RankMode = RankMode.ORDINAL) -> list[RankedEntry]:
        check_at_least(n, 0, "n")
        window, group_bytes = self._window_and_group(ref)
        return self._by_position(window, group_bytes, 0, n, mode)

    def standings(self, window: Window, n: int) -> tuple[int, list[RankedEntry]]:
        """A window's record count and its top ``n`` (ORDINAL ranks), the window given itself
        (not looked up by a time: an ended window, say)."""
        check_at_least(n, 0, "n")
        self.txn.window_read = window
        return self.space.ranked_set(window, b"").size(self.tr), self._by_position(window, b"", 0, n, RankMode.ORDINAL)

    def around(
        self,
        pk: object,
        above: int,
        below: int,
        ref: WindowRef,
        mode: RankMode = RankMode.ORDINAL,
        if_absent: IfAbsent = IfAbsent.EMPTY,
    ) -> list[RankedEntry]:
        """Up to ``above`` records before ``pk``, the record, and ``below`` after it.

        Near either end the window shifts so that it still holds ``above + below + 1``
        records when the leaderboard has that many.
        """
        check_at_least(above, 0, "above")
        check_at_least(below, 0, "below")
        window, group_bytes, found = self._locate(pk, ref)
        ranked = self.space.ranked_set(window, group_bytes)
        span = above + below + 1
        if found is None:
            if if_absent is IfAbsent.TOP:
                return self._by_position(window, group_bytes, 0, span, mode)
            if if_absent is IfAbsent.BOTTOM:
                return self._by_position(window, group_bytes, max(0, ranked.size(self.tr) - span), span, mode)
            return []
        element, pk_flat = found
        group_prefix = self.layout.primary + window.key_bytes + group_bytes
        key = group_prefix + element + pk_flat
        # One round for the size, the record's rank and the records sharing its key (they sort by pk).
        ties = self.tr.get_range_async(group_prefix + element, key) if ranked.count_duplicates else None
        position, size = run_alone(ranked.rank_and_size_steps(self.tr, element))
        if ties is None:
            start = max(0, min(position - above, size - span))
            return self._by_position(window, group_bytes, start, span, mode)
        # The B-tree is in rank order: read the neighbours on either side of the record's key.
        position += len(ties.value)
        start = max(0, min(position - above, size - span))
        wanted_before = position - start
        decode = self._row_decoder(window, group_bytes)
        before_rows, after_rows = self.tr.get_ranges(
            [
                (group_prefix, key, wanted_before + 1, True),
                (key, extensions_end(group_prefix), span - wanted_before, False),
            ]
        )
        before = [decode(k) for k, _ in before_rows]
        rows = before[:wanted_before][::-1] + [decode(k) for k, _ in after_rows]
        previous = before[wanted_before] if len(before) > wanted_before else None
        return self._with_ranks(window, group_bytes, rows, position - min(wanted_before, len(before)), previous, mode)

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
        come out latest timestamp first.  BY_RANK and BY_TIME_WINDOW bounds are positions
        (0 = best) and ``reverse`` lists them from the last (the bottom of the board) up.  A
        page never holds more than ``limit`` records, even where several records share one
        position (indexes with the reference layout): the continuation then resumes inside it.
        """
        check_at_least(limit, 0, "limit")
        if scan_type is ScanType.BY_VALUE:
            return self._scan_by_value(low, high, low_inclusive, high_inclusive, group, reverse, limit, continuation)
        if scan_type is ScanType.BY_RANK:
            ref = WindowRef(group=group)
        elif scan_type is ScanType.BY_TIME_WINDOW:
            ref = WindowRef(window_type, timestamp, group)  # no timestamp: the window holding now
        else:
            raise InvalidArgument(f"unknown scan type {scan_type!r}")
        return self._scan_by_rank(ref, low, high, low_inclusive, high_inclusive, limit, continuation, mode, reverse)

    def _continuation(self, window: Window, scan: bytes, payload: tuple) -> bytes:
        body = tuples.pack((_TOKEN_VERSION, self._index_tag(), window.lb_key, scan, *payload))
        return body + hashlib.blake2b(body, digest_size=8).digest()

    def _index_tag(self) -> bytes:
        return hashlib.blake2b(self.space.prefix, digest_size=8).digest()

    def _resume(self, token: bytes | None, window: Window, scan: bytes, positions: int = 0) -> tuple | None:
        """Where a continuation resumes (its payload), or None without one.  Any token this index did
        not hand out for this window and scan (kind, group, direction) is refused in plain words.
        ``positions``: the payload is 1 to that many ranks (0 <= rank < 2^63), else one key suffix."""
        if token is None:
            return None
        if not isinstance(token, bytes):
            raise InvalidArgument("continuation must be bytes")
        body, digest = token[:-8], token[-8:]
        try:  # the digest catches a cut or damaged token that would still parse
            items = tuples.unpack(body) if hashlib.blake2b(body, digest_size=8).digest() == digest else ()
        except Exception:
            items = ()
        if len(items) < 5 or items[0] != _TOKEN_VERSION or not isinstance(items[1], bytes):
            raise InvalidArgument("continuation is not one this server handed out (damaged or cut)")
        if items[1] != self._index_tag():
            raise InvalidArgument("continuation belongs to another index")
        if items[2] != window.lb_key or items[3] != scan:
            raise InvalidArgument("continuation belongs to another window, group or kind of scan")
        payload = tuple(items[4:])
        if positions:
            valid = len(payload) <= positions and all(type(p) is int and 0 <= p < 1 << 63 for p in payload)
        else:
            valid = len(payload) == 1 and isinstance(payload[0], bytes) and payload[0] != b""
        if not valid:
            raise InvalidArgument("continuation is not one this server handed out (damaged)")
        return payload

    @staticmethod
    def _scan_tag(kind: str, group_bytes: bytes, reverse: bool = False) -> bytes:
        return hashlib.blake2b(b"%s/%d/%s" % (kind.encode(), reverse, group_bytes), digest_size=8).digest()

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
        window, group_bytes = self._window_and_group(WindowRef(group=group))
        hsf = self.txn.high_score_first(group_bytes)
        prefix = self.layout.primary + window.key_bytes + group_bytes
        # Natural bounds become stored bounds; high_score_first negates, swapping the ends.
        if hsf:
            low, high, low_inclusive, high_inclusive = (
                None if high is None else self.space.negate(self._score(high)),
                None if low is None else self.space.negate(self._score(low)),
                high_inclusive,
                low_inclusive,
            )
            reverse = not reverse
        else:
            low = None if low is None else self._score(low)
            high = None if high is None else self._score(high)
        begin = prefix if low is None else prefix + tuples.pack((low,))
        if low is not None and not low_inclusive:
            begin = strinc(begin)
        end = extensions_end(prefix) if high is None else prefix + tuples.pack((high,))
        if high is not None and high_inclusive:
            end = strinc(end)
        scan = self._scan_tag("value", group_bytes, reverse)
        resumed = self._resume(continuation, window, scan)
        if resumed is not None:
            last = prefix + resumed[0]
            if reverse:
                end = min(end, last)
            else:
                begin = max(begin, last + b"\x00")
        rows = self.tr.get_range(begin, end, limit, reverse) if begin < end else []
        decode = self._row_decoder(window, group_bytes)
        entries = [decode(key).entry() for key, _ in rows]
        token = None
        if limit and len(rows) == limit:
            token = self._continuation(window, scan, (rows[-1][0][len(prefix) :],))
        return ScanPage(entries, token)

    def _scan_by_rank(
        self,
        ref: WindowRef,
        low: object,
        high: object,
        low_inclusive: bool,
        high_inclusive: bool,
        limit: int,
        continuation: bytes | None,
        mode: RankMode,
        reverse: bool = False,
    ) -> ScanPage:
        window, group_bytes = self._window_and_group(ref)
        first = 0 if low is None else check_at_least(low, 0, "low rank") + (0 if low_inclusive else 1)
        ranked = self.space.ranked_set(window, group_bytes)
        last = ranked.size(self.tr) - 1
        if high is not None:
            last = min(check_at_least(high, 0, "high rank") - (0 if high_inclusive else 1), last)
        if low is not None and high is not None and high < low:
            raise InvalidArgument(f"rank range is inverted: low {low} > high {high}")
        kind = "rank-reverse" if reverse else "rank"
        scan = self._scan_tag(kind, group_bytes)
        # A continuation holds the position to resume at and, where records share positions,
        # how many records of it earlier pages returned.
        resumed = self._resume(continuation, window, scan, positions=2)
        skip = 0
        if resumed is not None:
            at, skip = resumed[0], resumed[1] if len(resumed) > 1 else 0
            if reverse and at < last:
                last = at
            elif not reverse and at > first:
                first = at
            elif at != (last if reverse else first):
                skip = 0
        if first > last:
            return ScanPage([], None)
        if not ranked.count_duplicates:
            return self._rank_page_of_keys(window, group_bytes, first, last, skip, limit, mode, kind)
        # Positions are records: a page is a run of positions.
        count = last - first + 1
        if limit:
            count = min(count, limit)
        start = last - count + 1 if reverse else first
        entries = self._by_position(window, group_bytes, start, count, mode)
        token = None
        if limit and count == limit and (start > first if reverse else start + count <= last):
            token = self._continuation(window, scan, (start - 1 if reverse else start + count,))
        return ScanPage(entries[::-1] if reverse else entries, token)

    def _rank_page_of_keys(
        self,
        window: Window,
        group_bytes: bytes,
        first: int,
        last: int,
        skip: int,
        limit: int,
        mode: RankMode,
        kind: str,
    ) -> ScanPage:
        """A page of positions ``first .. last`` where a position is a distinct score key that
        several records may share (the reference layout).  Reads the B-tree from the key at the
        starting position (``last`` when reversed), leaving out the ``skip`` records of that
        position earlier pages returned, and cuts the page at ``limit`` records (reading one more
        to know whether the scan goes on)."""
        reverse = kind == "rank-reverse"
        scan = self._scan_tag(kind, group_bytes)
        ranked = self.space.ranked_set(window, group_bytes)
        prefix = self.layout.primary + window.key_bytes + group_bytes
        decode = self._row_decoder(window, group_bytes)
        near, far = (last, first) if reverse else (first, last)
        element = ranked.get_nth(self.tr, near)
        if element is None:
            return ScanPage([], None)
        if limit:
            bound = prefix if reverse else extensions_end(prefix)
        else:  # every record of the range: bounded by the far position's key
            far_element = ranked.get_nth(self.tr, far)
            bound = prefix + far_element if reverse else extensions_end(prefix + far_element)  # type: ignore[operator]
        begin, end = (bound, extensions_end(prefix + element)) if reverse else (prefix + element, bound)
        rows = self.tr.get_range(begin, end, skip + limit + 1 if limit else 0, reverse)
        step = -1 if reverse else 1
        placed: list[tuple[int, _Row]] = []
        position = near
        for key, _ in rows:
            row = decode(key)
            if placed and row.element != placed[-1][1].element:
                position += step
            if (position < far) if reverse else (position > far):
                break
            placed.append((position, row))
        skipped = 0
        while skipped < min(skip, len(placed)) and placed[skipped][0] == near:
            skipped += 1
        page = placed[skipped : skipped + limit] if limit else placed[skipped:]
        token = None
        if limit and len(placed) > skipped + limit:
            following = placed[skipped + limit][0]
            at = page[-1][0]
            taken = sum(1 for position, _ in placed[: skipped + limit] if position == at)
            token = self._continuation(window, scan, (at, taken) if following == at else (following, 0))
        if reverse:
            page = page[::-1]
        in_order = [row for _, row in page]
        if not in_order:
            return ScanPage([], token)
        before = self._before(prefix, in_order[0].key, decode)  # None only at the top of the board
        entries = self._with_ranks(window, group_bytes, in_order, page[0][0], before, mode)
        return ScanPage(entries[::-1] if reverse else entries, token)
