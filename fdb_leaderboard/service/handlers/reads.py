"""Reads: ranks, tops, around a record, counts, scans, pages, cohorts, percentiles, movement, history."""

from __future__ import annotations

from typing import Any

from ... import wire
from ...errors import InvalidArgument
from ...index import IfAbsent, RankMode, ScanType
from ...proto import service_pb2 as pb
from .. import convert
from .calling import CallContext, Handlers, rpc_handler


class ReadHandlers(Handlers):
    """The handlers of reads."""

    @rpc_handler
    def GetMetadata(self, request: pb.MetadataRequest, context: CallContext) -> pb.MetadataResponse:
        stored = self._index(request.index).metadata(wire.items_from_proto(request.pk))
        return pb.MetadataResponse(exists=stored is not None, metadata=stored or {})

    @staticmethod
    def _rank_arguments(request: pb.RankRequest) -> tuple[tuple, int, int | None, tuple, RankMode]:
        """A RankRequest as the index's (pk, window type, timestamp, group, mode)."""
        board = convert.board(request.window, request.group)
        return (
            wire.items_from_proto(request.pk),
            board.type,
            board.timestamp,
            board.group,
            convert.rank_mode(request.mode),
        )

    @rpc_handler
    def GetRank(self, request: pb.RankRequest, context: CallContext) -> pb.RankResponse:
        rank = self._index(request.index).rank(*self._rank_arguments(request))
        return pb.RankResponse(rank=rank) if rank is not None else pb.RankResponse()

    @rpc_handler
    def GetRankAndEntry(self, request: pb.RankRequest, context: CallContext) -> pb.RankAndEntryResponse:
        found = self._index(request.index).rank_listing(*self._rank_arguments(request))
        response = pb.RankAndEntryResponse(window=_window_read(found.window))
        if found:
            wire.fill_ranked_entry(response.entry, found[0])
        return response

    @rpc_handler
    def AroundMe(self, request: pb.AroundMeRequest, context: CallContext) -> pb.EntriesResponse:
        if_absent = IfAbsent[convert.enum_name(pb.IfAbsent, request.if_absent, "if_absent")]
        self._check_page(request.above + request.below + 1, "AroundMe (above + below + 1)", "")
        board = convert.board(request.window, request.group)
        entries = self._index(request.index).around(
            wire.items_from_proto(request.pk),
            request.above,
            request.below,
            board.type,
            board.timestamp,
            board.group,
            convert.rank_mode(request.mode),
            if_absent,
        )
        return _entries_answer(entries)

    @rpc_handler
    def Top(self, request: pb.TopRequest, context: CallContext) -> pb.EntriesResponse:
        self._check_page(request.n, "Top n", "; page further with Scan BY_RANK and its continuation")
        board = convert.board(request.window, request.group)
        entries = self._index(request.index).top(
            request.n, board.type, board.timestamp, board.group, convert.rank_mode(request.mode)
        )
        return _entries_answer(entries)

    @rpc_handler
    def Count(self, request: pb.CountRequest, context: CallContext) -> pb.CountResponse:
        board = convert.board(request.window, request.group)
        count, window = self._index(request.index).count_in_window(board.type, board.timestamp, board.group)
        return pb.CountResponse(count=count, window=_window_read(window))

    @rpc_handler
    def ScoreForRank(self, request: pb.ScoreForRankRequest, context: CallContext) -> pb.ScoreForRankResponse:
        board = convert.board(request.window, request.group)
        return _score_answer(
            self._index(request.index).score_for_rank(request.rank, board.type, board.timestamp, board.group)
        )

    @rpc_handler
    def RankForScore(self, request: pb.RankForScoreRequest, context: CallContext) -> pb.RankResponse:
        score: Any = wire.score_from_proto(request.score)
        if request.HasField("key_timestamp"):
            score = (score, request.key_timestamp, *wire.items_from_proto(request.key_context))
        elif request.key_context:
            raise InvalidArgument("key_context needs key_timestamp: a score key is (score, timestamp, context...)")
        board = convert.board(request.window, request.group)
        rank = self._index(request.index).rank_for_score(score, board.type, board.timestamp, board.group)
        return pb.RankResponse(rank=rank)

    @rpc_handler
    def Scan(self, request: pb.ScanRequest, context: CallContext) -> pb.ScanResponse:
        scan_type = ScanType[convert.enum_name(pb.ScanType, request.type, "scan type")]
        low = wire.score_from_proto(request.low, "low bound") if request.HasField("low") else None
        high = wire.score_from_proto(request.high, "high bound") if request.HasField("high") else None
        if scan_type is not ScanType.BY_VALUE and any(isinstance(b, float) for b in (low, high)):
            raise InvalidArgument("rank bounds must be integers")
        self._check_page(request.limit, "Scan limit", "; page with the continuation")
        board = convert.board(request.window, request.group)
        page = self._index(request.index).scan(
            scan_type,
            low=low,
            high=high,
            low_inclusive=not request.low_exclusive,
            high_inclusive=not request.high_exclusive,
            window_type=board.type,
            timestamp=board.timestamp,
            group=board.group,
            reverse=request.reverse,
            limit=request.limit or self.max_page,
            continuation=request.continuation or None,
            mode=convert.rank_mode(request.mode),
        )
        response = pb.ScanResponse(continuation=page.continuation or b"")
        wire.add_ranked_entries(response.entries, page.entries)
        return response

    def _ranks_arguments(self, request: pb.RanksRequest) -> tuple[list[tuple], int, int | None, tuple, RankMode]:
        pks = [wire.items_from_proto(record.pk) for record in request.records]
        board = convert.board(request.window, request.group)
        return pks, board.type, board.timestamp, board.group, convert.rank_mode(request.mode)

    @rpc_handler
    def GetRanks(self, request: pb.RanksRequest, context: CallContext) -> pb.RanksResponse:
        found = self._index(request.index).ranks(*self._ranks_arguments(request))
        response = pb.RanksResponse()
        for entry in found:
            slot = response.ranks.add()
            if entry is not None:
                wire.fill_ranked_entry(slot.entry, entry)
        return response

    @rpc_handler
    def FriendsBoard(self, request: pb.RanksRequest, context: CallContext) -> pb.EntriesResponse:
        entries = self._index(request.index).board_of(*self._ranks_arguments(request))
        return _entries_answer(entries)

    @rpc_handler
    def GetPage(self, request: pb.PageRequest, context: CallContext) -> pb.PageResponse:
        board = convert.board(request.window, request.group)
        page = self._index(request.index).page(
            request.page,
            request.size,
            board.type,
            board.timestamp,
            board.group,
            convert.rank_mode(request.mode),
        )
        response = pb.PageResponse(
            page=page.page, size=page.size, total=page.total, pages=page.pages, window=_window_read(page.window)
        )
        wire.add_ranked_entries(response.entries, page.entries)
        return response

    @rpc_handler
    def GetCohort(self, request: pb.CohortRequest, context: CallContext) -> pb.CohortResponse:
        index = self._index(request.index)
        leagues = index.settings.leagues
        if leagues is not None and request.window.type not in (0, leagues.window_type):
            raise InvalidArgument(
                f"the index's leagues are on window type {leagues.window_type}, not {request.window.type}"
            )
        pk = wire.items_from_proto(request.pk) if request.pk else None
        found = index.cohort(
            pk,
            None if pk is not None else request.tier,
            None if pk is not None else request.cohort,
            convert.board(request.window).timestamp,
            convert.rank_mode(request.mode),
            request.page,
            request.size,
            (request.above, request.below) if request.above or request.below else None,
        )
        if found is None:
            return pb.CohortResponse()
        response = pb.CohortResponse(
            tier=found.tier, cohort=found.cohort, total=found.total, window=_window_read(found.window)
        )
        wire.add_ranked_entries(response.entries, found.entries)
        if found.entry is not None:
            wire.fill_ranked_entry(response.entry, found.entry)
        return response

    @rpc_handler
    def GetPercentile(self, request: pb.PercentileRequest, context: CallContext) -> pb.PercentileResponse:
        board = convert.board(request.window, request.group)
        found = self._index(request.index).percentile(
            wire.items_from_proto(request.pk), board.type, board.timestamp, board.group
        )
        return pb.PercentileResponse() if found is None else pb.PercentileResponse(percentile=found)

    @rpc_handler
    def ScoreForPercentile(
        self, request: pb.ScoreForPercentileRequest, context: CallContext
    ) -> pb.ScoreForRankResponse:
        board = convert.board(request.window, request.group)
        return _score_answer(
            self._index(request.index).score_for_percentile(
                request.percentile, board.type, board.timestamp, board.group
            )
        )

    @rpc_handler
    def GetMovement(self, request: pb.RankRequest, context: CallContext) -> pb.MovementResponse:
        pk, window_type, timestamp, group, mode = self._rank_arguments(request)
        moved = self._index(request.index).movement(pk, window_type, timestamp, group, mode)
        response = pb.MovementResponse(window=wire.window_to_proto(moved.window))
        if moved.entry is not None:
            wire.fill_ranked_entry(response.entry, moved.entry)
        if moved.previous_window is not None:
            response.previous_window.CopyFrom(wire.window_to_proto(moved.previous_window))
        if moved.previous_entry is not None:
            wire.fill_ranked_entry(response.previous_entry, moved.previous_entry)
        if moved.change is not None:
            response.change = moved.change
        return response

    @rpc_handler
    def GetRankHistory(self, request: pb.RankHistoryRequest, context: CallContext) -> pb.RankHistoryResponse:
        found = self._index(request.index).rank_history(
            wire.items_from_proto(request.pk),
            request.window_type,
            request.until if request.HasField("until") else None,
            request.count or 10,
            wire.items_from_proto(request.group),
            convert.rank_mode(request.mode),
        )
        response = pb.RankHistoryResponse()

        def fill(row: pb.HistoryRow, window: Any, entry: Any) -> None:
            row.window.CopyFrom(wire.window_to_proto(window))
            if entry is not None:
                wire.fill_ranked_entry(row.entry, entry)

        for window, entry in found.windows:
            fill(response.windows.add(), window, entry)
        if found.best is not None:
            fill(response.best, *found.best)
        return response

    @rpc_handler
    def ListGroups(self, request: pb.ListGroupsRequest, context: CallContext) -> pb.ListGroupsResponse:
        board = convert.board(request.window)
        index = self._index(request.index)
        page = index.groups(board.type, board.timestamp, request.limit or 100, request.continuation)
        return pb.ListGroupsResponse(
            groups=[pb.GroupKey(group=wire.items_to_proto(group, "group")) for group in page.groups],
            continuation=page.continuation or b"",
            window=_window_read(page.window),
        )

    @rpc_handler
    def ScoreTrim(self, request: pb.ScoreTrimRequest, context: CallContext) -> pb.ScoreTrimResponse:
        kept = self._index(request.index).score_trim(
            [wire.written_entry_from_proto(entry) for entry in request.entries]
        )
        return pb.ScoreTrimResponse(entries=[wire.entry_to_proto(entry) for entry in kept])


def _window_read(window: Any) -> pb.Window | None:
    """The window a read resolved, for its answer (None: none, e.g. a friends board of no one)."""
    return wire.window_to_proto(window) if window is not None else None


def _entries_answer(entries: Any) -> pb.EntriesResponse:
    """A listing's ranked entries and the window it read (AroundMe, Top, FriendsBoard)."""
    response = pb.EntriesResponse(window=_window_read(entries.window))
    wire.add_ranked_entries(response.entries, entries)
    return response


def _score_answer(score: int | float | None) -> pb.ScoreForRankResponse:
    """A score found, or an empty answer when there is none (ScoreForRank, ScoreForPercentile)."""
    return pb.ScoreForRankResponse() if score is None else pb.ScoreForRankResponse(score=wire.score_to_proto(score))
