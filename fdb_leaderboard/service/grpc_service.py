"""The gRPC service: every index operation, for several named indexes, over one store.

Each handler takes a parsed request and a :class:`CallContext` and runs on a worker thread
(``calls.py`` receives requests and sends answers).  Errors map to status codes by type (see
``status.py``) and leave as :class:`~.status.Answer`; anything unexpected is logged and answered
INTERNAL.  Score writes from concurrent clients reach the store's ``run`` from many server
threads at once, so the embedded store's group commit shares one durable commit among them.

Every call does bounded work: Top, AroundMe and Scan return at most ``max_page`` rows (more is
refused, naming the limit; a scan without a limit gets a page of ``max_page`` and a continuation).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import grpc

from .. import wire
from ..errors import FailedPrecondition, InvalidArgument
from ..index import CheckReport, IfAbsent, IndexSettings, LeaderboardIndex, Operations, RankMode, ScanType
from ..proto import service_pb2 as pb
from ..proto import service_pb2_grpc as pb_grpc
from . import convert
from .catalog import Catalog
from .settings import DEFAULT_MAX_PAGE
from .status import Answer, cap_message, status_of

log = logging.getLogger("fdb_leaderboard.service")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Leaderboard"].full_name


class CallContext(Protocol):
    """What a handler may ask about its call."""

    def is_active(self) -> bool:
        """False once the client went away or the call's deadline passed: long loops stop."""
        ...

    def time_remaining(self) -> float: ...


class ClientGone(Exception):
    """The client cancelled a stream, or it ended while the handler was reading it."""


def _rpc(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def handle(self: LeaderboardService, request: Any, context: CallContext) -> Any:
        try:
            return method(self, request, context)
        except Answer:
            raise
        except Exception as exc:
            code = status_of(exc)
            if code is None:
                log.exception("%s failed", method.__name__)
                raise Answer(
                    grpc.StatusCode.INTERNAL, f"{method.__name__} failed unexpectedly; see the server log"
                ) from exc
            raise Answer(code, cap_message(str(exc))) from exc

    return handle


class LeaderboardService(pb_grpc.LeaderboardServicer):
    def __init__(self, catalog: Catalog, max_page: int = DEFAULT_MAX_PAGE) -> None:
        self.catalog = catalog
        self.max_page = max_page

    def _check_page(self, rows: int, what: str, hint: str) -> None:
        if rows > self.max_page:
            raise InvalidArgument(
                f"{what} asks for {rows} rows; this server returns at most {self.max_page} per call{hint}"
            )

    def _index(self, name: str) -> LeaderboardIndex:
        return self.catalog.get(name)

    # -- admin ----------------------------------------------------------------------------

    @_rpc
    def CreateIndex(self, request: pb.CreateIndexRequest, context: CallContext) -> pb.CreateIndexResponse:
        settings = convert.settings_from_proto(request.options, request.reference_layout)
        maintenance = convert.maintenance_from_proto(request.maintenance)
        _, created = self.catalog.create(request.name, settings, maintenance)
        return pb.CreateIndexResponse(created=created)

    @_rpc
    def ListIndexes(self, request: pb.ListIndexesRequest, context: CallContext) -> pb.ListIndexesResponse:
        return pb.ListIndexesResponse(
            indexes=[
                pb.IndexInfo(
                    name=name,
                    options=convert.settings_to_proto(IndexSettings.from_proto(entry.options)),
                    maintenance=convert.maintenance_to_proto(entry.maintenance),
                )
                for name, entry in self.catalog.list()
            ]
        )

    @_rpc
    def SetMaintenancePolicy(
        self, request: pb.SetMaintenancePolicyRequest, context: CallContext
    ) -> pb.SetMaintenancePolicyResponse:
        self.catalog.set_maintenance(request.index, convert.maintenance_from_proto(request.maintenance))
        return pb.SetMaintenancePolicyResponse()

    @_rpc
    def UpdateWindows(self, request: pb.UpdateWindowsRequest, context: CallContext) -> pb.UpdateWindowsResponse:
        index = self._index(request.index)
        update = convert.window_update_from_proto(request)
        result = index.update_windows(update)
        return pb.UpdateWindowsResponse(
            changed=result.changed,
            added=[wire.window_to_proto(w) for w in result.added],
            deleted=[wire.window_to_proto(w) for w in result.deleted],
            filling=[wire.window_to_proto(w) for w in result.filling],
        )

    @_rpc
    def ListWindows(self, request: pb.ListWindowsRequest, context: CallContext) -> pb.ListWindowsResponse:
        index = self._index(request.index)

        def describe(ops: Operations) -> pb.ListWindowsResponse:
            directory = ops.txn.directory()
            response = pb.ListWindowsResponse(exists=directory is not None)
            if directory is not None:
                response.update_timestamp = directory.update_timestamp
                response.high_score_first = directory.high_score_first
                response.windows.extend(wire.window_to_proto(w) for w in directory.windows)
            latest = ops.txn.latest_timestamp()
            if latest is not None:
                response.latest_timestamp = latest
            trimmed = ops.txn.trimmed_before()
            if trimmed is not None:
                response.trimmed_before = trimmed
            return response

        return index.read(describe)

    @_rpc
    def SaveSubDirectory(
        self, request: pb.SaveSubDirectoryRequest, context: CallContext
    ) -> pb.SaveSubDirectoryResponse:
        self._index(request.index).save_sub_directory(wire.items_to_tuple(request.group), request.high_score_first)
        return pb.SaveSubDirectoryResponse()

    @_rpc
    def ListSubDirectories(
        self, request: pb.ListSubDirectoriesRequest, context: CallContext
    ) -> pb.ListSubDirectoriesResponse:
        found = self._index(request.index).sub_directories()
        return pb.ListSubDirectoriesResponse(
            sub_directories=[
                pb.SubDirectory(group=wire.tuple_to_items(group), high_score_first=hsf) for group, hsf in found.items()
            ]
        )

    @_rpc
    def Expire(self, request: pb.ExpireRequest, context: CallContext) -> pb.ExpireResponse:
        gone = self._index(request.index).expire(request.before)
        return pb.ExpireResponse(deleted=[wire.window_to_proto(w) for w in gone])

    @_rpc
    def Fill(self, request: pb.FillRequest, context: CallContext) -> pb.FillResponse:
        index = self._index(request.index)
        max_records = request.max_records or 200
        processed = ranked = 0
        batches = 0
        while True:
            step = index.fill_step(max_records)
            processed += step.records_processed
            ranked += step.entries_ranked
            batches += 1
            if step.done or (request.max_batches and batches >= request.max_batches) or not context.is_active():
                break
        directory = index.directory()
        filling = directory.filling() if directory is not None else []
        return pb.FillResponse(
            done=step.done,
            records_processed=processed,
            entries_ranked=ranked,
            filling=[wire.window_to_proto(w) for w in filling],
        )

    @_rpc
    def Trim(self, request: pb.TrimRequest, context: CallContext) -> pb.TrimResponse:
        return pb.TrimResponse(entries_removed=self._index(request.index).trim(request.before))

    @_rpc
    def KeepAhead(self, request: pb.KeepAheadRequest, context: CallContext) -> pb.KeepAheadResponse:
        policy = self.catalog.entry(request.index).maintenance
        if not policy.windows:
            raise FailedPrecondition(f"index {request.index!r} has no maintenance policy with regular windows")
        now = request.now if request.HasField("now") else int(time.time())
        added = self._index(request.index).keep_ahead(
            now,
            [(w.type, w.base, w.increment, w.duration) for w in policy.windows],
            policy.horizon,
            policy.certain_within,
        )
        return pb.KeepAheadResponse(added=[wire.window_to_proto(w) for w in added])

    @_rpc
    def Verify(self, request: pb.VerifyRequest, context: CallContext) -> pb.VerifyResponse:
        started = last_log = time.monotonic()

        def progress(report: CheckReport) -> None:
            nonlocal last_log
            if time.monotonic() - last_log > 10:
                last_log = time.monotonic()
                log.info("Verify %r: %s so far (%.0f s)", request.index, report.describe(), last_log - started)

        report = self._index(request.index).check_report(
            request.max_problems or 100, progress, keep_going=context.is_active
        )
        return pb.VerifyResponse(
            problems=report.problems,
            records=report.records,
            entries=report.entries,
            elements=report.elements,
            ranked_sets=report.ranked_sets,
            windows=report.windows,
            batches=report.batches,
            complete=report.complete,
        )

    # -- writes ---------------------------------------------------------------------------

    @_rpc
    def AddScore(self, request: pb.AddScoreRequest, context: CallContext) -> pb.AddScoreResponse:
        if not request.HasField("entry"):
            raise InvalidArgument("AddScore needs an entry")
        changed = self._index(request.index).add_entries(
            wire.items_to_tuple(request.pk), [wire.entry_to_python(request.entry)]
        )
        return pb.AddScoreResponse(windows_changed=changed)

    @_rpc
    def AddEntries(self, request: pb.AddEntriesRequest, context: CallContext) -> pb.WriteResponse:
        entries = [wire.entry_to_python(entry) for entry in request.entries]
        changed = self._index(request.index).add_entries(wire.items_to_tuple(request.pk), entries)
        return pb.WriteResponse(windows_changed=changed)

    @_rpc
    def SaveRecord(self, request: pb.SaveRecordRequest, context: CallContext) -> pb.WriteResponse:
        entries = [wire.entry_to_python(entry) for entry in request.entries]
        changed = self._index(request.index).save_record(wire.items_to_tuple(request.pk), entries)
        return pb.WriteResponse(windows_changed=changed)

    @_rpc
    def DeleteRecord(self, request: pb.DeleteRecordRequest, context: CallContext) -> pb.DeleteRecordResponse:
        return pb.DeleteRecordResponse(
            existed=self._index(request.index).delete_record(wire.items_to_tuple(request.pk))
        )

    @_rpc
    def WriteBatch(self, request: pb.WriteBatchRequest, context: CallContext) -> pb.WriteBatchResponse:
        records = [convert.record_from_proto(record) for record in request.records]
        self._index(request.index).write_batch(records, replace=request.replace)
        return pb.WriteBatchResponse()

    @_rpc
    def BulkLoad(self, requests: Iterator[pb.BulkLoadRequest], context: CallContext) -> pb.BulkLoadResponse:
        first = next(requests, None)
        if first is None or not first.index:
            raise InvalidArgument("BulkLoad's first message must name the index")
        index = self._index(first.index)

        def records() -> Iterator[tuple[tuple, list]]:
            message: pb.BulkLoadRequest | None = first
            while message is not None:
                if message.index and message.index != first.index:
                    raise InvalidArgument(
                        f"BulkLoad loads index {first.index!r}; a later message names {message.index!r}"
                    )
                yield from map(convert.record_from_proto, message.records)
                message = next(requests, None)

        written = 0

        def progress(done: int) -> None:
            nonlocal written
            written = done

        try:
            index.bulk_load(records(), first.batch_size or 500, progress, defer_ranks=not first.rank_as_loaded)
        except ClientGone:  # the client went away mid-stream; what it sent before is saved
            log.info("BulkLoad of %r cancelled by the client after %d records", first.index, written)
            raise Answer(grpc.StatusCode.CANCELLED, f"cancelled after {written} records") from None
        except Exception as exc:
            code = status_of(exc)
            if code is None or not written:
                raise
            raise Answer(code, f"{exc}; the {written} records before it were saved") from exc
        # grpcio may report a cancel that comes while the handler waits for a message as the
        # stream's normal end (the cancel flag can follow the empty read): this line then stands
        # for both.
        log.info("BulkLoad of %r ended after %d records", first.index, written)
        return pb.BulkLoadResponse(records_written=written)

    # -- reads ----------------------------------------------------------------------------

    @staticmethod
    def _rank_arguments(request: pb.RankRequest) -> tuple[tuple, int, int | None, tuple, RankMode]:
        """A RankRequest as the index's (pk, window type, timestamp, group, mode)."""
        ref = convert.window_ref(request.window)
        group = wire.items_to_tuple(request.group)
        return wire.items_to_tuple(request.pk), ref.type, ref.timestamp, group, convert.rank_mode(request.mode)

    @_rpc
    def GetRank(self, request: pb.RankRequest, context: CallContext) -> pb.RankResponse:
        rank = self._index(request.index).rank(*self._rank_arguments(request))
        return pb.RankResponse(rank=rank) if rank is not None else pb.RankResponse()

    @_rpc
    def GetRankAndEntry(self, request: pb.RankRequest, context: CallContext) -> pb.RankAndEntryResponse:
        entry = self._index(request.index).rank_and_entry(*self._rank_arguments(request))
        if entry is None:
            return pb.RankAndEntryResponse()
        response = pb.RankAndEntryResponse()
        wire.fill_ranked_entry(response.entry, entry)
        return response

    @_rpc
    def AroundMe(self, request: pb.AroundMeRequest, context: CallContext) -> pb.EntriesResponse:
        ref = convert.window_ref(request.window)
        if_absent = IfAbsent[pb.IfAbsent.Name(request.if_absent)]
        self._check_page(request.above + request.below + 1, "AroundMe (above + below + 1)", "")
        entries = self._index(request.index).around(
            wire.items_to_tuple(request.pk),
            request.above,
            request.below,
            ref.type,
            ref.timestamp,
            wire.items_to_tuple(request.group),
            convert.rank_mode(request.mode),
            if_absent,
        )
        response = pb.EntriesResponse()
        wire.add_ranked_entries(response.entries, entries)
        return response

    @_rpc
    def Top(self, request: pb.TopRequest, context: CallContext) -> pb.EntriesResponse:
        ref = convert.window_ref(request.window)
        self._check_page(request.n, "Top n", "; page further with Scan BY_RANK and its continuation")
        entries = self._index(request.index).top(
            request.n, ref.type, ref.timestamp, wire.items_to_tuple(request.group), convert.rank_mode(request.mode)
        )
        response = pb.EntriesResponse()
        wire.add_ranked_entries(response.entries, entries)
        return response

    @_rpc
    def Count(self, request: pb.CountRequest, context: CallContext) -> pb.CountResponse:
        ref = convert.window_ref(request.window)
        count = self._index(request.index).count(ref.type, ref.timestamp, wire.items_to_tuple(request.group))
        return pb.CountResponse(count=count)

    @_rpc
    def ScoreForRank(self, request: pb.ScoreForRankRequest, context: CallContext) -> pb.ScoreForRankResponse:
        ref = convert.window_ref(request.window)
        score = self._index(request.index).score_for_rank(
            request.rank, ref.type, ref.timestamp, wire.items_to_tuple(request.group)
        )
        if score is None:
            return pb.ScoreForRankResponse()
        return pb.ScoreForRankResponse(score=wire.python_to_score(score))

    @_rpc
    def RankForScore(self, request: pb.RankForScoreRequest, context: CallContext) -> pb.RankResponse:
        ref = convert.window_ref(request.window)
        rank = self._index(request.index).rank_for_score(
            wire.score_to_python(request.score), ref.type, ref.timestamp, wire.items_to_tuple(request.group)
        )
        return pb.RankResponse(rank=rank)

    @_rpc
    def Scan(self, request: pb.ScanRequest, context: CallContext) -> pb.ScanResponse:
        scan_type = ScanType[pb.ScanType.Name(request.type)]
        low = wire.score_to_python(request.low, "low bound") if request.HasField("low") else None
        high = wire.score_to_python(request.high, "high bound") if request.HasField("high") else None
        if scan_type is not ScanType.BY_VALUE and any(isinstance(b, float) for b in (low, high)):
            raise InvalidArgument("rank bounds must be integers")
        if scan_type is ScanType.BY_TIME_WINDOW and not request.window.HasField("timestamp"):
            raise InvalidArgument("a BY_TIME_WINDOW scan needs window.type and window.timestamp")
        self._check_page(request.limit, "Scan limit", "; page with the continuation")
        page = self._index(request.index).scan(
            scan_type,
            low=low,
            high=high,
            low_inclusive=not request.low_exclusive,
            high_inclusive=not request.high_exclusive,
            window_type=request.window.type,
            timestamp=request.window.timestamp if request.window.HasField("timestamp") else None,
            group=wire.items_to_tuple(request.group),
            reverse=request.reverse,
            limit=request.limit or self.max_page,
            continuation=request.continuation or None,
            mode=convert.rank_mode(request.mode),
        )
        response = pb.ScanResponse(continuation=page.continuation or b"")
        wire.add_ranked_entries(response.entries, page.entries)
        return response
