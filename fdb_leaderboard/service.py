"""The gRPC service: every index operation, for several named indexes, over one store.

Errors map to status codes by type (see :data:`STATUS_BY_ERROR`); anything unexpected is
logged and answered INTERNAL.  Score writes from concurrent clients reach the store's
``run`` from many server threads at once, so the embedded store's group commit shares one
durable commit among them.
"""

from __future__ import annotations

import functools
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from . import convert
from .catalog import Catalog
from .checker import check_index
from .directory import Rebuild, WindowSpec, WindowUpdate
from .errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from .index import IndexSettings, LeaderboardIndex, check_plan_size
from .proto import index_pb2
from .proto import service_pb2 as pb
from .proto import service_pb2_grpc as pb_grpc
from .rankedset import CorruptRankedSet, HashFunction
from .scans import IfAbsent, RankMode, ScanType, WindowRef
from .store import (
    KeyTooLarge,
    StoreUnavailable,
    TransactionTimedOut,
    TransactionTooLarge,
    ValueTooLarge,
    open_database,
)

log = logging.getLogger("fdb_leaderboard.service")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Leaderboard"].full_name

STATUS_BY_ERROR: list[tuple[type[BaseException], grpc.StatusCode]] = [
    (InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (FailedPrecondition, grpc.StatusCode.FAILED_PRECONDITION),
    (AlreadyExists, grpc.StatusCode.ALREADY_EXISTS),
    (KeyTooLarge, grpc.StatusCode.INVALID_ARGUMENT),
    (ValueTooLarge, grpc.StatusCode.INVALID_ARGUMENT),
    (TransactionTooLarge, grpc.StatusCode.INVALID_ARGUMENT),
    (TransactionTimedOut, grpc.StatusCode.ABORTED),
    (StoreUnavailable, grpc.StatusCode.UNAVAILABLE),
    (CorruptRankedSet, grpc.StatusCode.DATA_LOSS),
]


class _Answer(Exception):
    """Raised by a handler to answer with ``code`` and this message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def status_of(exc: BaseException) -> grpc.StatusCode | None:
    """The status code answering ``exc``, or None for an unexpected error (INTERNAL)."""
    if isinstance(exc, _Answer):
        return exc.code
    for error_type, code in STATUS_BY_ERROR:
        if isinstance(exc, error_type):
            return code
    if isinstance(exc, (TypeError, ValueError, OverflowError)):  # malformed values caught by a library
        return grpc.StatusCode.INVALID_ARGUMENT
    return None


def _rpc(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def handle(self: LeaderboardService, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as exc:
            code, message = status_of(exc), str(exc)
            if code is None:
                log.exception("%s failed", method.__name__)
                code, message = grpc.StatusCode.INTERNAL, f"{method.__name__} failed unexpectedly; see the server log"
            context.abort(code, message)

    return handle


def _record(record: pb.RecordEntries) -> tuple[tuple, list]:
    """A record of a batch or load as the index's (pk, entries)."""
    return convert.items_to_tuple(record.pk), [convert.entry_to_python(e) for e in record.entries]


def _window_ref(selector: pb.WindowSelector) -> WindowRef:
    return WindowRef(selector.type, selector.timestamp if selector.HasField("timestamp") else None)


def _rank_mode(mode: int) -> RankMode:
    if mode == pb.ORDINAL:
        return RankMode.ORDINAL
    if mode == pb.COMPETITION:
        return RankMode.COMPETITION
    raise InvalidArgument(f"unknown rank mode {mode}: use ORDINAL (0) or COMPETITION (1)")


def settings_from_proto(options: pb.IndexOptions, reference_layout: bool) -> IndexSettings:
    try:
        hash_name = pb.RankHash.Name(options.hash_function)
        aggregation = pb.Aggregation.Name(options.aggregation)
        score_type = pb.ScoreType.Name(options.score_type)
    except ValueError as exc:
        raise InvalidArgument(f"unknown enum value: {exc}") from None
    if reference_layout and options.hash_function == pb.MURMUR3:
        hash_name = "JDK"  # the reference's default when none is given
    return IndexSettings(
        aggregation=aggregation,
        hash_function=HashFunction(hash_name),
        count_duplicates=options.count_duplicates if reference_layout else True,
        group_size=options.group_size,
        context_size=options.context_size,
        high_score_first=options.high_score_first,
        score_type=score_type,
    )


def settings_to_proto(settings: IndexSettings) -> pb.IndexOptions:
    return pb.IndexOptions(
        aggregation=pb.Aggregation.Value(settings.aggregation),
        hash_function=pb.RankHash.Value(settings.hash_function.value),
        count_duplicates=settings.count_duplicates,
        group_size=settings.group_size,
        context_size=settings.context_size,
        high_score_first=settings.high_score_first,
        score_type=pb.ScoreType.Value(settings.score_type),
    )


def maintenance_from_proto(policy: pb.MaintenancePolicy) -> index_pb2.MaintenancePolicy:
    out = index_pb2.MaintenancePolicy(
        horizon=policy.horizon, certain_within=policy.certain_within, retain=policy.retain
    )
    for regular in policy.windows:
        if regular.increment <= 0 or regular.duration <= 0 or regular.type == 0:
            raise InvalidArgument(
                f"maintained window type {regular.type} needs a type >= 1 and a positive increment and duration"
            )
        out.windows.add(type=regular.type, base=regular.base, increment=regular.increment, duration=regular.duration)
    if policy.horizon < 0 or policy.retain < 0 or policy.certain_within < 0:
        raise InvalidArgument("horizon, certain_within and retain must not be negative")
    check_plan_size(out.horizon, [(w.type, w.base, w.increment, w.duration) for w in out.windows])
    return out


def maintenance_to_proto(policy: index_pb2.MaintenancePolicy) -> pb.MaintenancePolicy:
    return pb.MaintenancePolicy(
        windows=[
            pb.RegularWindows(type=w.type, base=w.base, increment=w.increment, duration=w.duration)
            for w in policy.windows
        ],
        horizon=policy.horizon,
        certain_within=policy.certain_within,
        retain=policy.retain,
    )


class LeaderboardService(pb_grpc.LeaderboardServicer):
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def _index(self, name: str) -> LeaderboardIndex:
        return self.catalog.get(name)

    # -- admin ----------------------------------------------------------------------------

    @_rpc
    def CreateIndex(self, request: pb.CreateIndexRequest, context: grpc.ServicerContext) -> pb.CreateIndexResponse:
        settings = settings_from_proto(request.options, request.reference_layout)
        maintenance = maintenance_from_proto(request.maintenance)
        _, created = self.catalog.create(request.name, settings, maintenance)
        return pb.CreateIndexResponse(created=created)

    @_rpc
    def ListIndexes(self, request: pb.ListIndexesRequest, context: grpc.ServicerContext) -> pb.ListIndexesResponse:
        return pb.ListIndexesResponse(
            indexes=[
                pb.IndexInfo(
                    name=name,
                    options=settings_to_proto(IndexSettings.from_proto(entry.options)),
                    maintenance=maintenance_to_proto(entry.maintenance),
                )
                for name, entry in self.catalog.list()
            ]
        )

    @_rpc
    def SetMaintenancePolicy(
        self, request: pb.SetMaintenancePolicyRequest, context: grpc.ServicerContext
    ) -> pb.SetMaintenancePolicyResponse:
        self.catalog.set_maintenance(request.index, maintenance_from_proto(request.maintenance))
        return pb.SetMaintenancePolicyResponse()

    @_rpc
    def UpdateWindows(
        self, request: pb.UpdateWindowsRequest, context: grpc.ServicerContext
    ) -> pb.UpdateWindowsResponse:
        index = self._index(request.index)
        update = WindowUpdate(
            update_timestamp=request.update_timestamp,
            high_score_first=request.high_score_first,
            delete_before=request.delete_before if request.HasField("delete_before") else None,
            all_time=request.all_time,
            specs=[WindowSpec(s.type, s.base, s.increment, s.duration, s.count) for s in request.specs],
            windows=[(w.type, w.start, w.end) for w in request.windows],
            nlevels=request.nlevels or 6,
            rebuild=Rebuild[pb.Rebuild.Name(request.rebuild)],
        )
        result = index.update_windows(update)
        return pb.UpdateWindowsResponse(
            changed=result.changed,
            added=[convert.window_to_proto(w) for w in result.added],
            deleted=[convert.window_to_proto(w) for w in result.deleted],
            filling=[convert.window_to_proto(w) for w in result.filling],
        )

    @_rpc
    def ListWindows(self, request: pb.ListWindowsRequest, context: grpc.ServicerContext) -> pb.ListWindowsResponse:
        index = self._index(request.index)

        def describe(ops: Any) -> pb.ListWindowsResponse:
            directory = ops.directory()
            response = pb.ListWindowsResponse(exists=directory is not None)
            if directory is not None:
                response.update_timestamp = directory.update_timestamp
                response.high_score_first = directory.high_score_first
                response.windows.extend(convert.window_to_proto(w) for w in directory.windows)
            latest = ops.latest_timestamp()
            if latest is not None:
                response.latest_timestamp = latest
            trimmed = index.trimmed_before(ops.tr)
            if trimmed is not None:
                response.trimmed_before = trimmed
            return response

        return index.read(describe)

    @_rpc
    def SaveSubDirectory(
        self, request: pb.SaveSubDirectoryRequest, context: grpc.ServicerContext
    ) -> pb.SaveSubDirectoryResponse:
        self._index(request.index).save_sub_directory(convert.items_to_tuple(request.group), request.high_score_first)
        return pb.SaveSubDirectoryResponse()

    @_rpc
    def ListSubDirectories(
        self, request: pb.ListSubDirectoriesRequest, context: grpc.ServicerContext
    ) -> pb.ListSubDirectoriesResponse:
        found = self._index(request.index).sub_directories()
        return pb.ListSubDirectoriesResponse(
            sub_directories=[
                pb.SubDirectory(group=convert.tuple_to_items(group), high_score_first=hsf)
                for group, hsf in found.items()
            ]
        )

    @_rpc
    def Expire(self, request: pb.ExpireRequest, context: grpc.ServicerContext) -> pb.ExpireResponse:
        gone = self._index(request.index).expire(request.before)
        return pb.ExpireResponse(deleted=[convert.window_to_proto(w) for w in gone])

    @_rpc
    def Fill(self, request: pb.FillRequest, context: grpc.ServicerContext) -> pb.FillResponse:
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
            filling=[convert.window_to_proto(w) for w in filling],
        )

    @_rpc
    def Trim(self, request: pb.TrimRequest, context: grpc.ServicerContext) -> pb.TrimResponse:
        return pb.TrimResponse(entries_removed=self._index(request.index).trim(request.before))

    @_rpc
    def KeepAhead(self, request: pb.KeepAheadRequest, context: grpc.ServicerContext) -> pb.KeepAheadResponse:
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
        return pb.KeepAheadResponse(added=[convert.window_to_proto(w) for w in added])

    @_rpc
    def Verify(self, request: pb.VerifyRequest, context: grpc.ServicerContext) -> pb.VerifyResponse:
        problems = check_index(self._index(request.index), request.max_problems or 100)
        return pb.VerifyResponse(problems=problems)

    # -- writes ---------------------------------------------------------------------------

    @_rpc
    def AddScore(self, request: pb.AddScoreRequest, context: grpc.ServicerContext) -> pb.AddScoreResponse:
        if not request.HasField("entry"):
            raise InvalidArgument("AddScore needs an entry")
        changed = self._index(request.index).add_entries(
            convert.items_to_tuple(request.pk), [convert.entry_to_python(request.entry)]
        )
        return pb.AddScoreResponse(windows_changed=changed)

    @_rpc
    def AddEntries(self, request: pb.AddEntriesRequest, context: grpc.ServicerContext) -> pb.WriteResponse:
        entries = [convert.entry_to_python(entry) for entry in request.entries]
        changed = self._index(request.index).add_entries(convert.items_to_tuple(request.pk), entries)
        return pb.WriteResponse(windows_changed=changed)

    @_rpc
    def SaveRecord(self, request: pb.SaveRecordRequest, context: grpc.ServicerContext) -> pb.WriteResponse:
        entries = [convert.entry_to_python(entry) for entry in request.entries]
        changed = self._index(request.index).save_record(convert.items_to_tuple(request.pk), entries)
        return pb.WriteResponse(windows_changed=changed)

    @_rpc
    def DeleteRecord(self, request: pb.DeleteRecordRequest, context: grpc.ServicerContext) -> pb.DeleteRecordResponse:
        return pb.DeleteRecordResponse(
            existed=self._index(request.index).delete_record(convert.items_to_tuple(request.pk))
        )

    @_rpc
    def WriteBatch(self, request: pb.WriteBatchRequest, context: grpc.ServicerContext) -> pb.WriteBatchResponse:
        records = [_record(record) for record in request.records]
        self._index(request.index).write_batch(records, replace=request.replace)
        return pb.WriteBatchResponse()

    @_rpc
    def BulkLoad(self, requests: Iterator[pb.BulkLoadRequest], context: grpc.ServicerContext) -> pb.BulkLoadResponse:
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
                yield from map(_record, message.records)
                message = next(requests, None)

        written = 0

        def progress(done: int) -> None:
            nonlocal written
            written = done

        try:
            index.bulk_load(records(), first.batch_size or 500, progress, defer_ranks=not first.rank_as_loaded)
        except grpc.RpcError:  # the client went away mid-stream; what it sent before is saved
            log.info("BulkLoad of %r cancelled by the client after %d records", first.index, written)
            raise _Answer(grpc.StatusCode.CANCELLED, f"cancelled after {written} records") from None
        except Exception as exc:
            code = status_of(exc)
            if code is None or not written:
                raise
            raise _Answer(code, f"{exc}; the {written} records before it were saved") from exc
        # grpcio may report a cancel that comes while the handler waits for a message as the
        # stream's normal end (the cancel flag can follow the empty read): this line then stands
        # for both.
        log.info("BulkLoad of %r ended after %d records", first.index, written)
        return pb.BulkLoadResponse(records_written=written)

    # -- reads ----------------------------------------------------------------------------

    @staticmethod
    def _rank_arguments(request: pb.RankRequest) -> tuple[tuple, int, int | None, tuple, RankMode]:
        """A RankRequest as the index's (pk, window type, timestamp, group, mode)."""
        ref = _window_ref(request.window)
        group = convert.items_to_tuple(request.group)
        return convert.items_to_tuple(request.pk), ref.type, ref.timestamp, group, _rank_mode(request.mode)

    @_rpc
    def GetRank(self, request: pb.RankRequest, context: grpc.ServicerContext) -> pb.RankResponse:
        rank = self._index(request.index).rank(*self._rank_arguments(request))
        return pb.RankResponse(rank=rank) if rank is not None else pb.RankResponse()

    @_rpc
    def GetRankAndEntry(self, request: pb.RankRequest, context: grpc.ServicerContext) -> pb.RankAndEntryResponse:
        entry = self._index(request.index).rank_and_entry(*self._rank_arguments(request))
        if entry is None:
            return pb.RankAndEntryResponse()
        response = pb.RankAndEntryResponse()
        convert.fill_ranked_entry(response.entry, entry)
        return response

    @_rpc
    def AroundMe(self, request: pb.AroundMeRequest, context: grpc.ServicerContext) -> pb.EntriesResponse:
        ref = _window_ref(request.window)
        if_absent = IfAbsent[pb.IfAbsent.Name(request.if_absent)]
        entries = self._index(request.index).around(
            convert.items_to_tuple(request.pk),
            request.above,
            request.below,
            ref.type,
            ref.timestamp,
            convert.items_to_tuple(request.group),
            _rank_mode(request.mode),
            if_absent,
        )
        response = pb.EntriesResponse()
        convert.add_ranked_entries(response.entries, entries)
        return response

    @_rpc
    def Top(self, request: pb.TopRequest, context: grpc.ServicerContext) -> pb.EntriesResponse:
        ref = _window_ref(request.window)
        entries = self._index(request.index).top(
            request.n, ref.type, ref.timestamp, convert.items_to_tuple(request.group), _rank_mode(request.mode)
        )
        response = pb.EntriesResponse()
        convert.add_ranked_entries(response.entries, entries)
        return response

    @_rpc
    def Count(self, request: pb.CountRequest, context: grpc.ServicerContext) -> pb.CountResponse:
        ref = _window_ref(request.window)
        count = self._index(request.index).count(ref.type, ref.timestamp, convert.items_to_tuple(request.group))
        return pb.CountResponse(count=count)

    @_rpc
    def ScoreForRank(self, request: pb.ScoreForRankRequest, context: grpc.ServicerContext) -> pb.ScoreForRankResponse:
        ref = _window_ref(request.window)
        score = self._index(request.index).score_for_rank(
            request.rank, ref.type, ref.timestamp, convert.items_to_tuple(request.group)
        )
        if score is None:
            return pb.ScoreForRankResponse()
        return pb.ScoreForRankResponse(score=convert.python_to_score(score))

    @_rpc
    def RankForScore(self, request: pb.RankForScoreRequest, context: grpc.ServicerContext) -> pb.RankResponse:
        ref = _window_ref(request.window)
        rank = self._index(request.index).rank_for_score(
            convert.score_to_python(request.score), ref.type, ref.timestamp, convert.items_to_tuple(request.group)
        )
        return pb.RankResponse(rank=rank)

    @_rpc
    def Scan(self, request: pb.ScanRequest, context: grpc.ServicerContext) -> pb.ScanResponse:
        scan_type = ScanType[pb.ScanType.Name(request.type)]
        low = convert.score_to_python(request.low, "low bound") if request.HasField("low") else None
        high = convert.score_to_python(request.high, "high bound") if request.HasField("high") else None
        if scan_type is not ScanType.BY_VALUE and any(isinstance(b, float) for b in (low, high)):
            raise InvalidArgument("rank bounds must be integers")
        if scan_type is ScanType.BY_TIME_WINDOW and not request.window.HasField("timestamp"):
            raise InvalidArgument("a BY_TIME_WINDOW scan needs window.type and window.timestamp")
        page = self._index(request.index).scan(
            scan_type,
            low=low,
            high=high,
            low_inclusive=not request.low_exclusive,
            high_inclusive=not request.high_exclusive,
            window_type=request.window.type,
            timestamp=request.window.timestamp if request.window.HasField("timestamp") else None,
            group=convert.items_to_tuple(request.group),
            reverse=request.reverse,
            limit=request.limit,
            continuation=request.continuation or None,
            mode=_rank_mode(request.mode),
        )
        response = pb.ScanResponse(continuation=page.continuation or b"")
        convert.add_ranked_entries(response.entries, page.entries)
        return response


class Server:
    """A running server: the gRPC server, its health service and the store it owns."""

    def __init__(self, store_url: str, address: str = "127.0.0.1:50051", max_workers: int = 16) -> None:
        self.db = open_database(store_url)
        self.catalog = Catalog(self.db)
        self.grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="rpc"))
        pb_grpc.add_LeaderboardServicer_to_server(LeaderboardService(self.catalog), self.grpc)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.grpc)
        reflection.enable_server_reflection(
            (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
            self.grpc,
        )
        self.port = self.grpc.add_insecure_port(address)
        if self.port == 0:
            raise StoreUnavailable(f"cannot listen on {address}")
        self.address = f"{address.rsplit(':', 1)[0]}:{self.port}"
        self._stopped = threading.Event()

    def start(self) -> Server:
        self.grpc.start()
        for name in ("", SERVICE_NAME):
            self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        return self

    def stop(self, grace: float = 10.0) -> None:
        """Refuse new calls, let in-flight ones (writes included) finish, then close the store."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        self.health.enter_graceful_shutdown()
        self.grpc.stop(grace).wait()
        self.db.close()

    def wait(self) -> None:
        self.grpc.wait_for_termination()

    def stop_on_signals(self, grace: float = 10.0) -> None:
        def handler(signum: int, frame: object) -> None:
            log.info("signal %d: shutting down (up to %.0f s for in-flight calls)", signum, grace)
            threading.Thread(target=self.stop, args=(grace,), daemon=True).start()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
