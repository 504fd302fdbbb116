"""Reads as operations: ranks, tops, counts, pages, cohorts, percentiles, movement and scans."""

from __future__ import annotations

from collections.abc import Sequence

from .. import errors, wire
from ..index import Cohort, Entry, History, Movement, Page, RankedEntry
from ..proto import service_pb2 as pb
from .errors import InvalidArgument
from .messages import (
    Key,
    Op,
    Score,
    UnaryCall,
    board,
    checked_count,
    entries_to_send,
    enum_value,
    listing_of,
    rank_mode,
    rank_request,
    ranks_request,
    score_of,
    window_selector,
)


class ReadOps:
    """Reads: operations (see :mod:`.operations`)."""

    # -- reads ------------------------------------------------------------------------------

    @staticmethod
    def rank(
        index: str, pk: Key, window_type: int = 0, timestamp: int | None = None, group: Key = (), mode: str = "ORDINAL"
    ) -> Op[int | None]:
        """The record's 0-based rank in the window (None: no value there)."""
        response = yield UnaryCall("GetRank", rank_request(index, pk, window_type, timestamp, group, mode))
        return response.rank if response.HasField("rank") else None

    @staticmethod
    def rank_and_entry(
        index: str, pk: Key, window_type: int = 0, timestamp: int | None = None, group: Key = (), mode: str = "ORDINAL"
    ) -> Op[RankedEntry | None]:
        """The record's value in the window with its rank and metadata (None: no value there)."""
        request = rank_request(index, pk, window_type, timestamp, group, mode)
        return wire.optional_entry_from_proto((yield UnaryCall("GetRankAndEntry", request)), "entry")

    @staticmethod
    def around(
        index: str,
        pk: Key,
        above: int,
        below: int,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
        if_absent: str = "EMPTY",
    ) -> Op[list[RankedEntry]]:
        """The records ranked around ``pk``: ``above`` before it, ``below`` after it (shifted at the ends)."""
        request = pb.AroundMeRequest(
            index=index,
            pk=wire.key_to_proto(pk),
            **board(window_type, timestamp, group),
            mode=rank_mode(mode),
            above=checked_count(above, "above"),
            below=checked_count(below, "below"),
            if_absent=enum_value(pb.IfAbsent, if_absent, "if_absent"),
        )
        return listing_of((yield UnaryCall("AroundMe", request)))

    @staticmethod
    def top(
        index: str, n: int, window_type: int = 0, timestamp: int | None = None, group: Key = (), mode: str = "ORDINAL"
    ) -> Op[list[RankedEntry]]:
        """The best ``n`` records of the window, best first."""
        request = pb.TopRequest(
            index=index,
            **board(window_type, timestamp, group),
            mode=rank_mode(mode),
            n=checked_count(n, "n"),
        )
        return listing_of((yield UnaryCall("Top", request)))

    @staticmethod
    def count(index: str, window_type: int = 0, timestamp: int | None = None, group: Key = ()) -> Op[int]:
        """How many records have a value in the window."""
        request = pb.CountRequest(index=index, **board(window_type, timestamp, group))
        return (yield UnaryCall("Count", request)).count

    @staticmethod
    def score_for_rank(
        index: str, rank: int, window_type: int = 0, timestamp: int | None = None, group: Key = ()
    ) -> Op[Score | None]:
        """The score at 0-based ``rank`` (None: the window has fewer records)."""
        request = pb.ScoreForRankRequest(index=index, **board(window_type, timestamp, group), rank=rank)
        return score_of((yield UnaryCall("ScoreForRank", request)))

    @staticmethod
    def rank_for_score(
        index: str,
        score: int | float | list | tuple,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
    ) -> Op[int]:
        """The rank a record with ``score`` would have; ``score`` may be a score key
        ``(score, timestamp, context...)`` or a prefix of one, as the Record Layer takes it.  A
        tuple is a score key here, so a multi-column score is given as a list (``[10, 2]``), or
        as a key's first item (``((10, 2), timestamp)``)."""
        key = score if isinstance(score, tuple) else (score,)
        if not key:
            raise InvalidArgument("a score key needs at least the score")
        request = pb.RankForScoreRequest(
            index=index,
            **board(window_type, timestamp, group),
            score=wire.score_to_proto(key[0]),
            key_context=wire.items_to_proto(key[2:], "score key context"),
        )
        if len(key) > 1:
            request.key_timestamp = key[1]
        return (yield UnaryCall("RankForScore", request)).rank

    @staticmethod
    def score_trim(index: str, entries: Sequence[tuple]) -> Op[list[Entry]]:
        """Of ``(score, timestamp[, context[, group]])`` entries, those the index's current windows
        use, best first (the Record Layer's score trim)."""
        request = pb.ScoreTrimRequest(index=index, entries=entries_to_send(entries))
        return [wire.entry_from_proto(e) for e in (yield UnaryCall("ScoreTrim", request)).entries]

    # -- several records, pages, percentiles, movement --------------------------------------

    @staticmethod
    def ranks(
        index: str,
        pks: Sequence[Key],
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[list[RankedEntry | None]]:
        """Each record's entry and rank (None: no value in the window), in the order given (up to 200)."""
        response = yield UnaryCall("GetRanks", ranks_request(index, pks, window_type, timestamp, group, mode))
        return [wire.optional_entry_from_proto(slot, "entry") for slot in response.ranks]

    @staticmethod
    def friends_board(
        index: str,
        pks: Sequence[Key],
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[list[RankedEntry]]:
        """The board of just these records, in the window's order, with their global ranks."""
        request = ranks_request(index, pks, window_type, timestamp, group, mode)
        return listing_of((yield UnaryCall("FriendsBoard", request)))

    @staticmethod
    def page(
        index: str,
        page: int,
        size: int,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[Page]:
        """Page ``page`` (1-based) of ``size`` records, with the window's total and page count."""
        request = pb.PageRequest(
            index=index,
            **board(window_type, timestamp, group),
            mode=rank_mode(mode),
            page=checked_count(page, "page"),
            size=checked_count(size, "size"),
        )
        response = yield UnaryCall("GetPage", request)
        window = wire.window_from_proto(response.window) if response.HasField("window") else None
        return Page(listing_of(response), response.page, response.size, response.total, response.pages, window)

    @staticmethod
    def cohort(
        index: str,
        pk: Key | None = None,
        tier: int | None = None,
        cohort: int | None = None,
        timestamp: int | None = None,
        mode: str = "ORDINAL",
        page: int = 1,
        size: int = 0,
        around: tuple[int, int] | None = None,
    ) -> Op[Cohort | None]:
        """A cohort of the league window holding ``timestamp`` (None: now): record ``pk``'s (None if
        it joined none there) or cohort ``cohort`` of tier ``tier``; its entries are page ``page``
        of ``size`` (0: all), or with ``around=(above, below)`` those around the record.  Ranks are
        within the cohort."""
        if (pk is None) == (tier is None or cohort is None):
            raise errors.InvalidArgument("name a record (pk) or a cohort (tier and cohort), not both")
        above, below = around if around is not None else (0, 0)
        request = pb.CohortRequest(
            index=index,
            window=window_selector(0, timestamp),
            pk=wire.key_to_proto(pk) if pk is not None else [],
            tier=checked_count(tier or 0, "tier"),
            cohort=checked_count(cohort or 0, "cohort"),
            mode=rank_mode(mode),
            page=checked_count(page, "page"),
            size=checked_count(size, "size"),
            above=checked_count(above, "above"),
            below=checked_count(below, "below"),
        )
        response = yield UnaryCall("GetCohort", request)
        if not response.HasField("tier"):
            return None
        entry = wire.ranked_entry_from_proto(response.entry) if response.HasField("entry") else None
        window = wire.window_from_proto(response.window)
        return Cohort(window, response.tier, response.cohort, response.total, listing_of(response), entry)

    @staticmethod
    def percentile(
        index: str, pk: Key, window_type: int = 0, timestamp: int | None = None, group: Key = ()
    ) -> Op[float | None]:
        """The share of the window's records behind ``pk``, in percent (None: no value there)."""
        request = pb.PercentileRequest(
            index=index,
            pk=wire.key_to_proto(pk),
            **board(window_type, timestamp, group),
        )
        response = yield UnaryCall("GetPercentile", request)
        return response.percentile if response.HasField("percentile") else None

    @staticmethod
    def score_for_percentile(
        index: str, percentile: float, window_type: int = 0, timestamp: int | None = None, group: Key = ()
    ) -> Op[Score | None]:
        """The score at ``percentile`` (0: the worst, 100: the best), interpolated (None: empty window)."""
        request = pb.ScoreForPercentileRequest(
            index=index,
            **board(window_type, timestamp, group),
            percentile=percentile,
        )
        return score_of((yield UnaryCall("ScoreForPercentile", request)))

    @staticmethod
    def movement(
        index: str,
        pk: Key,
        window_type: int,
        timestamp: int | None = None,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[Movement]:
        """The record's rank now (or in the window holding ``timestamp``) and in the previous
        window of the type (``.change``: places gained)."""
        response = yield UnaryCall("GetMovement", rank_request(index, pk, window_type, timestamp, group, mode))
        previous = wire.window_from_proto(response.previous_window) if response.HasField("previous_window") else None
        return Movement(
            wire.window_from_proto(response.window),
            wire.optional_entry_from_proto(response, "entry"),
            previous,
            wire.optional_entry_from_proto(response, "previous_entry"),
        )

    @staticmethod
    def rank_history(
        index: str,
        pk: Key,
        window_type: int,
        until: int | None = None,
        count: int = 10,
        group: Key = (),
        mode: str = "ORDINAL",
    ) -> Op[History]:
        """The record's rank in each of the latest ``count`` windows of the type, and the best."""
        request = pb.RankHistoryRequest(
            index=index,
            pk=wire.key_to_proto(pk),
            window_type=checked_count(window_type, "window_type"),
            count=checked_count(count, "count"),
            group=wire.key_to_proto(group, "group"),
            mode=rank_mode(mode),
        )
        if until is not None:
            request.until = until
        response = yield UnaryCall("GetRankHistory", request)
        rows = [
            (wire.window_from_proto(row.window), wire.optional_entry_from_proto(row, "entry"))
            for row in response.windows
        ]
        best = None
        if response.HasField("best"):
            best = (wire.window_from_proto(response.best.window), wire.ranked_entry_from_proto(response.best.entry))
        return History(rows, best)

    @staticmethod
    def scan(
        index: str,
        scan_type: str = "BY_RANK",
        *,
        low: Score | None = None,
        high: Score | None = None,
        low_exclusive: bool = False,
        high_exclusive: bool = False,
        window_type: int = 0,
        timestamp: int | None = None,
        group: Key = (),
        reverse: bool = False,
        limit: int = 0,
        continuation: bytes = b"",
        mode: str = "ORDINAL",
    ) -> Op[tuple[list[RankedEntry], bytes]]:
        """One page of a BY_VALUE, BY_RANK or BY_TIME_WINDOW scan and the continuation of the
        next (empty: done)."""
        request = pb.ScanRequest(
            index=index,
            type=enum_value(pb.ScanType, scan_type, "scan_type"),
            **board(window_type, timestamp, group),
            low_exclusive=low_exclusive,
            high_exclusive=high_exclusive,
            reverse=reverse,
            limit=checked_count(limit, "limit"),
            continuation=continuation,
            mode=rank_mode(mode),
        )
        if low is not None:
            request.low.CopyFrom(wire.score_to_proto(low))
        if high is not None:
            request.high.CopyFrom(wire.score_to_proto(high))
        response = yield UnaryCall("Scan", request)
        return listing_of(response), response.continuation
