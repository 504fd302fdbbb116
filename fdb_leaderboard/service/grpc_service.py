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

import contextlib
import functools
import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import grpc
from google.protobuf.message import Message

from .. import formats, wire
from ..access import ANONYMOUS
from ..errors import FailedPrecondition, InvalidArgument, LeaderboardError, RuleRefusal, SubmissionLimited
from ..index import CheckReport, IfAbsent, IndexSettings, LeaderboardIndex, Operations, RankMode, ScanType, plan_ahead
from ..index.audit import MAX_EVENTS as MAX_AUDIT_EVENTS
from ..index.idempotency import DEFAULT_EXPIRY_BATCH
from ..proto import index_pb2
from ..proto import service_pb2 as pb
from ..proto import service_pb2_grpc as pb_grpc
from ..store.api import call_deadline, read_bounds
from . import convert, recreate, served_dumps
from .catalog import Catalog, StaleIndex, writes_paused
from .settings import DEFAULT_MAX_PAGE
from .status import Answer, cap_message, status_of
from .upgrades import Upgrades
from .window_events import DEFAULT_TOP, MAX_TOP, WindowEvents

log = logging.getLogger("fdb_leaderboard.service")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["Leaderboard"].full_name


class CallContext(Protocol):
    """What a handler may ask about its call."""

    def is_active(self) -> bool:
        """False once the client went away or the call's deadline passed: long loops stop."""
        ...

    def time_remaining(self) -> float: ...


MAX_DELETE_BATCH = 1000  # records per DeleteRecords transaction
DEADLINE_MARGIN = 2.0  # seconds before its deadline a call of many batches answers with its progress


def _actor(context: CallContext) -> str:
    """Who makes the call: its token's name (``anonymous`` without tokens)."""
    return getattr(context, "actor", ANONYMOUS)


def rule_trailing(exc: RuleRefusal) -> tuple[tuple[str, str], ...]:
    """The trailing metadata of a score rule's refusal: the rule, and when to retry."""
    trailing = [("rule", exc.rule)]
    if isinstance(exc, SubmissionLimited) and exc.retry_after is not None:
        trailing.append(("retry-after", f"{exc.retry_after:g}"))
    return tuple(trailing)


class ClientGone(Exception):
    """The client cancelled a stream, or it ended while the handler was reading it."""


def _rpc(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def handle(self: LeaderboardService, request: Any, context: CallContext) -> Any:
        try:
            # The store waits for its cluster no longer than the call's deadline: a call the
            # cluster cannot serve in time answers UNAVAILABLE (saying whether a write may have
            # committed) before the caller gives up on it.
            with call_deadline(context.time_remaining()), _read_bounds(context):
                try:
                    return method(self, request, context)
                except StaleIndex as stale:  # nothing was committed: open the name afresh and run again
                    self.catalog.forget(stale.name)
                    if not isinstance(request, Message):  # a stream's messages are consumed already
                        raise Answer(grpc.StatusCode.ABORTED, f"{stale}; retry") from None
                    return method(self, request, context)
        except Answer:
            raise
        except Exception as exc:
            raise answer_for(exc, method.__name__) from exc

    return handle


def _read_bounds(context: CallContext) -> contextlib.AbstractContextManager[None]:
    """The freshness the call's reads must have (``max_staleness_ms``, ``min_version`` of its
    context, where the dispatcher set them), for the store's read transactions."""
    staleness, version = getattr(context, "max_staleness_ms", 0), getattr(context, "min_version", 0)
    return read_bounds(staleness, version) if staleness or version else contextlib.nullcontext()


def answer_for(exc: Exception, method: str) -> Answer:
    """The status a call of ``method`` answers with when ``exc`` ended it (INTERNAL, logged, for
    an exception no status is known for)."""
    if isinstance(exc, Answer):
        return exc
    code = status_of(exc)
    if code is None:
        log.error("%s failed", method, exc_info=exc)
        return Answer(grpc.StatusCode.INTERNAL, f"{method} failed unexpectedly; see the server log")
    trailing = rule_trailing(exc) if isinstance(exc, RuleRefusal) else ()
    return Answer(code, cap_message(str(exc)), trailing)


def _streamed(method: str, replies: Callable[[], Iterator[Any]]) -> Iterator[Any]:
    """The messages of ``replies()``, with what ends them early (from their start on: the checks
    of the request too) answered as ``_rpc`` answers (a stream's status)."""
    try:
        yield from replies()
    except Answer:
        raise
    except (ClientGone, served_dumps.Stopped):
        raise Answer(grpc.StatusCode.CANCELLED, f"{method} cancelled by the client") from None
    except StaleIndex as stale:
        raise Answer(grpc.StatusCode.ABORTED, f"{stale} during the {method}") from None
    except Exception as exc:
        raise answer_for(exc, method) from exc


def saved_before(written: int) -> str:
    """What a load cut short kept: ``the record before it was saved``, ``the 3 records before it were saved``."""
    return "the record before it was saved" if written == 1 else f"the {written} records before it were saved"


def _key(request: Any) -> str | None:
    """A write request's idempotency key (None: the write is not keyed)."""
    return request.idempotency_key or None


def _window_read(window: Any) -> pb.Window | None:
    """The window a read resolved, for its answer (None: none, e.g. a friends board of no one)."""
    return wire.window_to_proto(window) if window is not None else None


def _score_answer(score: int | float | None) -> pb.ScoreForRankResponse:
    """A score found, or an empty answer when there is none (ScoreForRank, ScoreForPercentile)."""
    return pb.ScoreForRankResponse() if score is None else pb.ScoreForRankResponse(score=wire.score_to_proto(score))


class LeaderboardService(pb_grpc.LeaderboardServicer):
    def __init__(self, catalog: Catalog, max_page: int = DEFAULT_MAX_PAGE) -> None:
        self.catalog = catalog
        self.max_page = max_page
        self.housekeeping: Any = None  # woken when windows are left filling (the server's, if any)
        self.window_events = WindowEvents(catalog)
        self.delivery: Any = None  # woken when window-end events were written (the server's, if any)
        self.upgrades = Upgrades(catalog)

    def _fill_soon(self, filling: Any) -> None:
        """Have the server's background maintenance run now if windows were added: it fills those
        ``filling`` and sees when the new ones end (to notice their end on time)."""
        if filling and self.housekeeping is not None:
            self.housekeeping.wake()

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
        # The policy's current windows come with the index, so its first score is ranked in them.
        windows = plan_ahead(
            convert.policy_now(maintenance),
            convert.regular_windows(maintenance),
            maintenance.horizon,
            maintenance.certain_within,
            random.Random(),
            convert.calendar_periods(maintenance),
        )
        all_time = request.all_time if request.HasField("all_time") else True
        _, added = self.catalog.create(request.name, settings, maintenance, all_time, windows, _actor(context))
        if added is None:  # it exists, with these options: the boards asked for join its policy
            return pb.CreateIndexResponse(
                created=False,
                added=[wire.window_to_proto(w) for w in self._add_boards(request.name, request.maintenance, context)],
            )
        return pb.CreateIndexResponse(created=True, added=[wire.window_to_proto(w) for w in added])

    def _add_boards(self, name: str, asked: pb.MaintenancePolicy, context: CallContext) -> list[Any]:
        """Add the boards and regular windows of ``asked`` that index ``name`` lacks to its policy,
        with their current windows (filled from stored scores by the server's maintenance)."""

        def grown(stored: index_pb2.MaintenancePolicy) -> index_pb2.MaintenancePolicy:
            merged = recreate.policy_with_asked(name, stored, asked)
            return stored if merged == stored else convert.maintenance_from_proto(convert.maintenance_to_proto(merged))

        policy = self.catalog.grow_maintenance(name, grown, _actor(context))
        if policy is None:
            return []
        added = self._index(name).keep_ahead(
            convert.policy_now(policy),
            convert.regular_windows(policy),
            policy.horizon,
            policy.certain_within,
            calendar=convert.calendar_periods(policy),
            actor=_actor(context),
        )
        self._fill_soon(added)
        return list(added)

    @_rpc
    def ListIndexes(self, request: pb.ListIndexesRequest, context: CallContext) -> pb.ListIndexesResponse:
        now = time.time()
        listed = self.catalog.list()
        return pb.ListIndexesResponse(
            indexes=[
                pb.IndexInfo(
                    name=name,
                    options=convert.settings_to_proto(IndexSettings.from_proto(entry.options)),
                    maintenance=convert.maintenance_to_proto(entry.maintenance),
                    writes_paused=writes_paused(entry, now),
                    format=convert.index_format_to_proto(stored.version, stored.recorded, stored.upgrade),
                )
                for (name, entry), stored in zip(listed, self.upgrades.index_formats(listed), strict=True)
            ]
        )

    @_rpc
    def DropIndex(self, request: pb.DropIndexRequest, context: grpc.ServicerContext) -> pb.DropIndexResponse:
        self.catalog.drop(request.index, actor=_actor(context))
        self.window_events.forget_index(request.index)
        return pb.DropIndexResponse()

    @_rpc
    def SetMaintenancePolicy(
        self, request: pb.SetMaintenancePolicyRequest, context: CallContext
    ) -> pb.SetMaintenancePolicyResponse:
        self.catalog.set_maintenance(
            request.index, convert.maintenance_from_proto(request.maintenance), _actor(context)
        )
        return pb.SetMaintenancePolicyResponse()

    @_rpc
    def UpdateWindows(self, request: pb.UpdateWindowsRequest, context: CallContext) -> pb.UpdateWindowsResponse:
        index = self._index(request.index)
        update = convert.window_update_from_proto(request)
        result = index.update_windows(update, _actor(context))
        self._fill_soon(result.filling or result.added)
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
                only = request.window_type if request.HasField("window_type") else None
                for window in directory.windows:
                    if only is not None and window.type != only:
                        continue
                    message = response.windows.add()
                    message.CopyFrom(wire.window_to_proto(window))
                    if window.filling:  # how far the server's background fill got
                        state = ops.txn.fill_state(window)
                        message.records_processed = state.records_processed
                        message.entries_ranked = state.entries_ranked
                        if state.records_total is not None:
                            message.records_total = state.records_total
            latest = ops.txn.latest_timestamp()
            if latest is not None:
                response.latest_timestamp = latest
            trimmed = ops.txn.trimmed_before()
            if trimmed is not None:
                response.trimmed_before = trimmed
            stored = ops.txn.options().format
            version = stored or formats.UNRECORDED_INDEX
            response.format.CopyFrom(convert.index_format_to_proto(version, bool(stored), ops.upgrader.state()))
            return response

        return index.read(describe)

    @_rpc
    def SaveSubDirectory(
        self, request: pb.SaveSubDirectoryRequest, context: CallContext
    ) -> pb.SaveSubDirectoryResponse:
        self._index(request.index).save_sub_directory(
            wire.items_from_proto(request.group), request.high_score_first, _actor(context)
        )
        return pb.SaveSubDirectoryResponse()

    @_rpc
    def ListSubDirectories(
        self, request: pb.ListSubDirectoriesRequest, context: CallContext
    ) -> pb.ListSubDirectoriesResponse:
        found = self._index(request.index).sub_directories()
        return pb.ListSubDirectoriesResponse(
            sub_directories=[
                pb.SubDirectory(group=wire.items_to_proto(group), high_score_first=hsf) for group, hsf in found.items()
            ]
        )

    @_rpc
    def Expire(self, request: pb.ExpireRequest, context: CallContext) -> pb.ExpireResponse:
        # The deleted windows' data left when the deadline nears is cleared by the maintenance.
        gone = self._index(request.index).expire(request.before, _actor(context), _before_deadline(context))
        return pb.ExpireResponse(deleted=[wire.window_to_proto(w) for w in gone])

    @_rpc
    def Fill(self, request: pb.FillRequest, context: CallContext) -> pb.FillResponse:
        index = self._index(request.index)
        max_records = request.max_records or 200
        processed = ranked = 0
        batches = 0
        while True:
            step = index.fill_step(max_records, actor=_actor(context))
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
        removed = self._index(request.index).trim(request.before, actor=_actor(context))
        return pb.TrimResponse(entries_removed=removed)

    @_rpc
    def KeepAhead(self, request: pb.KeepAheadRequest, context: CallContext) -> pb.KeepAheadResponse:
        policy = self.catalog.entry(request.index).maintenance
        if not policy.windows and not policy.calendar:
            raise FailedPrecondition(f"index {request.index!r} has no maintenance policy with windows to keep ahead")
        now = request.now if request.HasField("now") else convert.policy_now(policy)
        added = self._index(request.index).keep_ahead(
            now,
            convert.regular_windows(policy),
            policy.horizon,
            policy.certain_within,
            calendar=convert.calendar_periods(policy),
            actor=_actor(context),
        )
        self._fill_soon(added)  # windows added over stored scores are left filling
        return pb.KeepAheadResponse(added=[wire.window_to_proto(w) for w in added])

    @_rpc
    def Verify(self, request: pb.VerifyRequest, context: CallContext) -> pb.VerifyResponse:
        """The consistency check, whole or in parts (``continuation``): a part checks what the
        call's deadline and ``max_batches`` allow, at least one batch, and says where the next
        goes on; a whole check that cannot finish in time is DEADLINE_EXCEEDED, so no answer
        ever passes an index it did not check through.  With ``split``, the continuations of
        pieces of one check to run at once (``index/check_parts.py``)."""
        in_parts = request.HasField("continuation")
        if request.max_batches and not in_parts:
            raise InvalidArgument('max_batches is for a check in parts: give a continuation ("" to start one)')
        index = self._index(request.index)
        if request.split:
            if request.split < 2 or request.continuation:
                raise InvalidArgument(
                    "split must be 2 or more: it asks for the pieces of a whole check (no continuation)"
                )
            return pb.VerifyResponse(parts=index.check_parts(request.split))
        started = last_log = time.monotonic()
        batches = 0

        def progress(report: CheckReport) -> None:
            nonlocal batches, last_log
            batches += 1
            if time.monotonic() - last_log > 10:
                last_log = time.monotonic()
                log.info("Verify %r: %s so far (%.0f s)", request.index, report.describe(), last_log - started)

        def keep_going() -> bool:
            if not batches:
                return True  # each call moves the check on
            return context.is_active() and not (request.max_batches and batches >= request.max_batches)

        report = index.check_report(
            request.max_problems or 100, progress, keep_going=keep_going, continuation=request.continuation or None
        )
        if not report.complete and not in_parts:
            found = len(report.problems)
            raise Answer(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"Verify of {request.index!r} stopped at the call's deadline after it {report.describe()}, "
                f'with {found} problem(s) found so far: check in parts (a continuation, "" to start; '
                "the client and the CLI do), or give it a longer deadline",
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
            continuation=report.continuation or b"",
        )

    @_rpc
    def ExpireIdempotencyKeys(
        self, request: pb.ExpireIdempotencyKeysRequest, context: CallContext
    ) -> pb.ExpireIdempotencyKeysResponse:
        index = self._index(request.index)
        if request.HasField("before"):
            before = request.before
        else:
            before = int(time.time()) - convert.idempotency_retention(self.catalog.entry(request.index).maintenance)
        expired, done = index.expire_idempotency_keys(
            before, request.max_keys or DEFAULT_EXPIRY_BATCH, context.is_active, _actor(context)
        )
        return pb.ExpireIdempotencyKeysResponse(expired=expired, done=done, kept=index.idempotency_keys())

    # -- dumps ------------------------------------------------------------------------------

    def Dump(self, requests: Iterator[pb.DumpRequest], context: CallContext) -> Iterator[pb.DumpPart]:
        """The index's dump as it takes writes (``served_dumps.py``): one request, a stream of parts."""
        request = next(requests, None)
        if request is None or not request.index:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, "Dump's request must name the index")
        if next(requests, None) is not None:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, "Dump takes exactly one request message")
        if request.catch_up_seconds < 0 or request.catch_up_seconds != request.catch_up_seconds:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, "catch_up_seconds must be a number of seconds, 0 or more")
        return _streamed(
            "Dump", lambda: served_dumps.ServedDump(self.catalog, request, context.is_active, _actor(context)).parts()
        )

    def Restore(self, requests: Iterator[pb.RestoreRequest], context: CallContext) -> Iterator[pb.RestoreProgress]:
        """A new index from a dump's parts (``served_dumps.py``), named once complete; yields progress."""
        first = next(requests, None)
        if first is None:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, "Restore needs the dump's parts, its header first")
        return _streamed(
            "Restore",
            lambda: served_dumps.restore_served(self.catalog, first, requests, context.is_active, _actor(context)),
        )

    @_rpc
    def SetWritesPaused(self, request: pb.SetWritesPausedRequest, context: CallContext) -> pb.SetWritesPausedResponse:
        if request.paused:
            reason = request.reason or "an operator paused them (fdb-leaderboard index pause)"
            self.catalog.set_writes_paused(request.index, -1, reason[:200], _actor(context))
        else:
            self.catalog.set_writes_paused(request.index, 0, actor=_actor(context))
        return pb.SetWritesPausedResponse()

    # -- writes ---------------------------------------------------------------------------

    @_rpc
    def AddScore(self, request: pb.AddScoreRequest, context: CallContext) -> pb.AddScoreResponse:
        if not request.HasField("entry"):
            raise InvalidArgument("AddScore needs an entry")
        outcome = self._index(request.index).write_record(
            wire.items_from_proto(request.pk),
            [wire.written_entry_from_proto(request.entry)],
            metadata=dict(request.metadata),
            idempotency_key=_key(request),
        )
        return pb.AddScoreResponse(windows_changed=outcome.windows_changed, warning=outcome.warning)

    @_rpc
    def AddEntries(self, request: pb.AddEntriesRequest, context: CallContext) -> pb.WriteResponse:
        entries = [wire.written_entry_from_proto(entry) for entry in request.entries]
        outcome = self._index(request.index).write_record(
            wire.items_from_proto(request.pk), entries, idempotency_key=_key(request)
        )
        return pb.WriteResponse(windows_changed=outcome.windows_changed, warning=outcome.warning)

    @_rpc
    def SaveRecord(self, request: pb.SaveRecordRequest, context: CallContext) -> pb.WriteResponse:
        entries = [wire.written_entry_from_proto(entry) for entry in request.entries]
        outcome = self._index(request.index).write_record(
            wire.items_from_proto(request.pk), entries, replace=True, idempotency_key=_key(request)
        )
        return pb.WriteResponse(windows_changed=outcome.windows_changed, warning=outcome.warning)

    @_rpc
    def DeleteRecord(self, request: pb.DeleteRecordRequest, context: CallContext) -> pb.DeleteRecordResponse:
        return pb.DeleteRecordResponse(
            existed=self._index(request.index).delete_record(
                wire.items_from_proto(request.pk), idempotency_key=_key(request)
            )
        )

    @_rpc
    def WriteBatch(self, request: pb.WriteBatchRequest, context: CallContext) -> pb.WriteBatchResponse:
        records = [convert.record_from_proto(record) for record in request.records]
        self._index(request.index).write_batch(records, replace=request.replace, idempotency_key=_key(request))
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
            index.bulk_load(
                records(),
                first.batch_size or 500,
                progress,
                defer_ranks=not first.rank_as_loaded,
                idempotency_key=_key(first),
                actor=_actor(context),
            )
        except ClientGone:  # the client went away mid-stream; what it sent before is saved
            log.info("BulkLoad of %r cancelled by the client after %d records", first.index, written)
            raise Answer(grpc.StatusCode.CANCELLED, f"cancelled after {written} records") from None
        except Exception as exc:
            code = status_of(exc)
            if code is None or not written:
                raise
            raise Answer(code, f"{exc}; {saved_before(written)}") from exc
        # grpcio may report a cancel that comes while the handler waits for a message as the
        # stream's normal end (the cancel flag can follow the empty read): this line then stands
        # for both.
        log.info("BulkLoad of %r ended after %d records", first.index, written)
        return pb.BulkLoadResponse(records_written=written)

    @_rpc
    def SetMetadata(self, request: pb.SetMetadataRequest, context: CallContext) -> pb.MetadataResponse:
        stored = self._index(request.index).set_metadata(
            wire.items_from_proto(request.pk),
            dict(request.metadata),
            request.merge,
            list(request.remove),
            idempotency_key=_key(request),
        )
        return pb.MetadataResponse(exists=True, metadata=stored)

    def Load(self, requests: Iterator[pb.BulkLoadRequest], context: CallContext) -> Iterator[pb.LoadProgress]:
        """BulkLoad reporting each saved transaction: yields a LoadProgress after each commit.

        A refused record ends the call with its status; trailing metadata "refused-record" then
        gives the record's 0-based position in the stream and "records-saved" how many records
        before it were saved.  The load runs in this generator's thread, beside the reads of the
        stream (the dispatcher's), so each progress message goes out as soon as it is committed.
        """
        written = 0
        consumed = 0  # records taken from the stream so far
        first = next(requests, None)
        if first is None or not first.index:
            raise Answer(grpc.StatusCode.INVALID_ARGUMENT, "Load's first message must name the index")
        try:
            index = self._index(first.index)

            def records() -> Iterator[tuple[tuple, list]]:
                nonlocal consumed
                message: pb.BulkLoadRequest | None = first
                while message is not None:
                    if message.index and message.index != first.index:
                        raise InvalidArgument(
                            f"Load loads index {first.index!r}; a later message names {message.index!r}"
                        )
                    for record in message.records:
                        try:
                            converted = convert.record_from_proto(record)
                        except LeaderboardError as exc:
                            exc.stream_position = consumed  # type: ignore[attr-defined]
                            raise
                        consumed += 1
                        yield converted
                    message = next(requests, None)

            progress: queue.Queue[object] = queue.Queue()

            def run() -> None:
                try:
                    index.bulk_load(
                        records(),
                        first.batch_size or 500,
                        progress.put,
                        defer_ranks=not first.rank_as_loaded,
                        idempotency_key=_key(first),
                        actor=_actor(context),
                    )
                    progress.put(None)
                except BaseException as exc:  # handed to the generator, which answers with it
                    progress.put(exc)

            threading.Thread(target=run, name=f"load-{first.index}", daemon=True).start()
            while (event := progress.get()) is not None:
                if isinstance(event, BaseException):
                    raise event
                written = event  # type: ignore[assignment]
                yield pb.LoadProgress(records_saved=written)
            log.info("Load of %r ended after %d records", first.index, written)
        except ClientGone:  # the client went away mid-stream; what it sent before is saved
            log.info("Load cancelled by the client after %d records", written)
            raise Answer(grpc.StatusCode.CANCELLED, f"cancelled after {written} records") from None
        except Answer:
            raise
        except Exception as exc:
            code = status_of(exc)
            if code is None:
                log.exception("Load failed")
                raise Answer(grpc.StatusCode.INTERNAL, "Load failed unexpectedly; see the server log") from exc
            position = getattr(exc, "stream_position", None)
            if position is None and getattr(exc, "record_position", None) is not None:
                position = written + exc.record_position  # type: ignore[attr-defined]
            trailing = [("records-saved", str(written))]
            message = cap_message(str(exc))
            if position is not None:
                trailing.append(("refused-record", str(position)))
                message = f"record {position + 1} of the load refused: {message}"
            if written:
                message = f"{message}; {saved_before(written)}"
            raise Answer(code, message, tuple(trailing)) from exc

    @_rpc
    def HideRecord(self, request: pb.HideRecordRequest, context: CallContext) -> pb.HiddenChangeResponse:
        changed = self._index(request.index).hide_record(
            wire.items_from_proto(request.pk), request.reason, _actor(context), _key(request)
        )
        return pb.HiddenChangeResponse(changed=changed)

    @_rpc
    def RestoreRecord(self, request: pb.RestoreRecordRequest, context: CallContext) -> pb.HiddenChangeResponse:
        changed = self._index(request.index).restore_record(
            wire.items_from_proto(request.pk), _key(request), _actor(context)
        )
        return pb.HiddenChangeResponse(changed=changed)

    @_rpc
    def ListHiddenRecords(
        self, request: pb.ListHiddenRecordsRequest, context: CallContext
    ) -> pb.ListHiddenRecordsResponse:
        found, following = self._index(request.index).hidden_records(request.limit or 100, request.continuation or None)
        return pb.ListHiddenRecordsResponse(
            records=[wire.hidden_to_proto(record) for record in found], continuation=following or b""
        )

    @_rpc
    def GetScoreRules(self, request: pb.GetScoreRulesRequest, context: CallContext) -> pb.ScoreRulesResponse:
        return pb.ScoreRulesResponse(rules=wire.rules_to_proto(self._index(request.index).score_rules()))

    @_rpc
    def SetScoreRules(self, request: pb.SetScoreRulesRequest, context: CallContext) -> pb.ScoreRulesResponse:
        rules = wire.rules_from_proto(request.rules)
        kept = self._index(request.index).set_score_rules(rules, _actor(context))
        return pb.ScoreRulesResponse(rules=wire.rules_to_proto(kept))

    @_rpc
    def DeleteRecords(self, request: pb.DeleteRecordsRequest, context: CallContext) -> pb.DeleteRecordsResponse:
        group = wire.items_from_proto(request.group)
        if request.all_records == bool(group):
            raise InvalidArgument("give either a group whose records to delete or all_records, not both nor neither")
        if request.max_records > MAX_DELETE_BATCH:  # a batch stays well within a transaction's limits
            raise InvalidArgument(f"max_records is at most {MAX_DELETE_BATCH}, not {request.max_records}")
        done = self._index(request.index).delete_records(
            None if request.all_records else group,
            request.max_records or 200,
            request.continuation or None,
            keep_going=context.is_active,
            idempotency_key=_key(request),
            actor=_actor(context),
        )
        return pb.DeleteRecordsResponse(
            done=done.done,
            records_changed=done.records_changed,
            records_deleted=done.records_deleted,
            entries_deleted=done.entries_deleted,
            continuation=done.continuation or b"",
        )

    @_rpc
    def GetMetadata(self, request: pb.MetadataRequest, context: CallContext) -> pb.MetadataResponse:
        stored = self._index(request.index).metadata(wire.items_from_proto(request.pk))
        return pb.MetadataResponse(exists=stored is not None, metadata=stored or {})

    @staticmethod
    def _rank_arguments(request: pb.RankRequest) -> tuple[tuple, int, int | None, tuple, RankMode]:
        """A RankRequest as the index's (pk, window type, timestamp, group, mode)."""
        ref = convert.window_ref(request.window)
        group = wire.items_from_proto(request.group)
        return wire.items_from_proto(request.pk), ref.type, ref.timestamp, group, convert.rank_mode(request.mode)

    @_rpc
    def GetRank(self, request: pb.RankRequest, context: CallContext) -> pb.RankResponse:
        rank = self._index(request.index).rank(*self._rank_arguments(request))
        return pb.RankResponse(rank=rank) if rank is not None else pb.RankResponse()

    @_rpc
    def GetRankAndEntry(self, request: pb.RankRequest, context: CallContext) -> pb.RankAndEntryResponse:
        found = self._index(request.index).rank_listing(*self._rank_arguments(request))
        response = pb.RankAndEntryResponse(window=_window_read(found.window))
        if found:
            wire.fill_ranked_entry(response.entry, found[0])
        return response

    @_rpc
    def AroundMe(self, request: pb.AroundMeRequest, context: CallContext) -> pb.EntriesResponse:
        ref = convert.window_ref(request.window)
        if_absent = IfAbsent[convert.enum_name(pb.IfAbsent, request.if_absent, "if_absent")]
        self._check_page(request.above + request.below + 1, "AroundMe (above + below + 1)", "")
        entries = self._index(request.index).around(
            wire.items_from_proto(request.pk),
            request.above,
            request.below,
            ref.type,
            ref.timestamp,
            wire.items_from_proto(request.group),
            convert.rank_mode(request.mode),
            if_absent,
        )
        response = pb.EntriesResponse(window=_window_read(entries.window))
        wire.add_ranked_entries(response.entries, entries)
        return response

    @_rpc
    def Top(self, request: pb.TopRequest, context: CallContext) -> pb.EntriesResponse:
        ref = convert.window_ref(request.window)
        self._check_page(request.n, "Top n", "; page further with Scan BY_RANK and its continuation")
        entries = self._index(request.index).top(
            request.n, ref.type, ref.timestamp, wire.items_from_proto(request.group), convert.rank_mode(request.mode)
        )
        response = pb.EntriesResponse(window=_window_read(entries.window))
        wire.add_ranked_entries(response.entries, entries)
        return response

    @_rpc
    def Count(self, request: pb.CountRequest, context: CallContext) -> pb.CountResponse:
        ref = convert.window_ref(request.window)
        count, window = self._index(request.index).count_in_window(
            ref.type, ref.timestamp, wire.items_from_proto(request.group)
        )
        return pb.CountResponse(count=count, window=_window_read(window))

    @_rpc
    def ScoreForRank(self, request: pb.ScoreForRankRequest, context: CallContext) -> pb.ScoreForRankResponse:
        ref = convert.window_ref(request.window)
        return _score_answer(
            self._index(request.index).score_for_rank(
                request.rank, ref.type, ref.timestamp, wire.items_from_proto(request.group)
            )
        )

    @_rpc
    def RankForScore(self, request: pb.RankForScoreRequest, context: CallContext) -> pb.RankResponse:
        ref = convert.window_ref(request.window)
        score: Any = wire.score_from_proto(request.score)
        if request.HasField("key_timestamp"):
            score = (score, request.key_timestamp, *wire.items_from_proto(request.key_context))
        elif request.key_context:
            raise InvalidArgument("key_context needs key_timestamp: a score key is (score, timestamp, context...)")
        rank = self._index(request.index).rank_for_score(
            score, ref.type, ref.timestamp, wire.items_from_proto(request.group)
        )
        return pb.RankResponse(rank=rank)

    @_rpc
    def Scan(self, request: pb.ScanRequest, context: CallContext) -> pb.ScanResponse:
        scan_type = ScanType[convert.enum_name(pb.ScanType, request.type, "scan type")]
        low = wire.score_from_proto(request.low, "low bound") if request.HasField("low") else None
        high = wire.score_from_proto(request.high, "high bound") if request.HasField("high") else None
        if scan_type is not ScanType.BY_VALUE and any(isinstance(b, float) for b in (low, high)):
            raise InvalidArgument("rank bounds must be integers")
        self._check_page(request.limit, "Scan limit", "; page with the continuation")
        page = self._index(request.index).scan(
            scan_type,
            low=low,
            high=high,
            low_inclusive=not request.low_exclusive,
            high_inclusive=not request.high_exclusive,
            window_type=request.window.type,
            timestamp=request.window.timestamp if request.window.HasField("timestamp") else None,
            group=wire.items_from_proto(request.group),
            reverse=request.reverse,
            limit=request.limit or self.max_page,
            continuation=request.continuation or None,
            mode=convert.rank_mode(request.mode),
        )
        response = pb.ScanResponse(continuation=page.continuation or b"")
        wire.add_ranked_entries(response.entries, page.entries)
        return response

    # -- reads of several records, pages, percentiles, movement, score trim -----------------

    def _ranks_arguments(self, request: pb.RanksRequest) -> tuple[list[tuple], int, int | None, tuple, RankMode]:
        ref = convert.window_ref(request.window)
        pks = [wire.items_from_proto(record.pk) for record in request.records]
        return pks, ref.type, ref.timestamp, wire.items_from_proto(request.group), convert.rank_mode(request.mode)

    @_rpc
    def GetRanks(self, request: pb.RanksRequest, context: CallContext) -> pb.RanksResponse:
        found = self._index(request.index).ranks(*self._ranks_arguments(request))
        response = pb.RanksResponse()
        for entry in found:
            slot = response.ranks.add()
            if entry is not None:
                wire.fill_ranked_entry(slot.entry, entry)
        return response

    @_rpc
    def FriendsBoard(self, request: pb.RanksRequest, context: CallContext) -> pb.EntriesResponse:
        entries = self._index(request.index).board_of(*self._ranks_arguments(request))
        response = pb.EntriesResponse(window=_window_read(entries.window))
        wire.add_ranked_entries(response.entries, entries)
        return response

    @_rpc
    def GetPage(self, request: pb.PageRequest, context: CallContext) -> pb.PageResponse:
        ref = convert.window_ref(request.window)
        page = self._index(request.index).page(
            request.page,
            request.size,
            ref.type,
            ref.timestamp,
            wire.items_from_proto(request.group),
            convert.rank_mode(request.mode),
        )
        response = pb.PageResponse(
            page=page.page, size=page.size, total=page.total, pages=page.pages, window=_window_read(page.window)
        )
        wire.add_ranked_entries(response.entries, page.entries)
        return response

    @_rpc
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
            convert.window_ref(request.window).timestamp,
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

    @_rpc
    def GetPercentile(self, request: pb.PercentileRequest, context: CallContext) -> pb.PercentileResponse:
        ref = convert.window_ref(request.window)
        found = self._index(request.index).percentile(
            wire.items_from_proto(request.pk), ref.type, ref.timestamp, wire.items_from_proto(request.group)
        )
        return pb.PercentileResponse() if found is None else pb.PercentileResponse(percentile=found)

    @_rpc
    def ScoreForPercentile(
        self, request: pb.ScoreForPercentileRequest, context: CallContext
    ) -> pb.ScoreForRankResponse:
        ref = convert.window_ref(request.window)
        return _score_answer(
            self._index(request.index).score_for_percentile(
                request.percentile, ref.type, ref.timestamp, wire.items_from_proto(request.group)
            )
        )

    @_rpc
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

    @_rpc
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

    @_rpc
    def ListGroups(self, request: pb.ListGroupsRequest, context: CallContext) -> pb.ListGroupsResponse:
        ref = convert.window_ref(request.window)
        index = self._index(request.index)
        page = index.groups(ref.type, ref.timestamp, request.limit or 100, request.continuation)
        return pb.ListGroupsResponse(
            groups=[pb.GroupKey(group=wire.items_to_proto(group, "group")) for group in page.groups],
            continuation=page.continuation or b"",
            window=_window_read(page.window),
        )

    @_rpc
    def ScoreTrim(self, request: pb.ScoreTrimRequest, context: CallContext) -> pb.ScoreTrimResponse:
        kept = self._index(request.index).score_trim(
            [wire.written_entry_from_proto(entry) for entry in request.entries]
        )
        return pb.ScoreTrimResponse(entries=[wire.entry_to_proto(entry) for entry in kept])

    # -- the audit trail ------------------------------------------------------------------

    @_rpc
    def ListAuditEvents(self, request: pb.ListAuditEventsRequest, context: CallContext) -> pb.ListAuditEventsResponse:
        if request.limit > MAX_AUDIT_EVENTS:
            raise InvalidArgument(f"limit is at most {MAX_AUDIT_EVENTS} events per page, not {request.limit}")
        found, following = self.catalog.audit_events(
            request.index or None,
            request.action or None,
            request.since_us if request.HasField("since_us") else None,
            request.until_us if request.HasField("until_us") else None,
            request.limit or 100,
            request.continuation or None,
            request.newest_first,
        )
        return pb.ListAuditEventsResponse(
            events=[wire.audit_event_to_proto(event) for event in found],
            continuation=following or b"",
            retention=self.catalog.audit_retention(),
        )

    @_rpc
    def SetAuditRetention(
        self, request: pb.SetAuditRetentionRequest, context: CallContext
    ) -> pb.SetAuditRetentionResponse:
        kept = self.catalog.set_audit_retention(request.retention, _actor(context))
        return pb.SetAuditRetentionResponse(retention=kept)

    @_rpc
    def ExpireAuditEvents(
        self, request: pb.ExpireAuditEventsRequest, context: CallContext
    ) -> pb.ExpireAuditEventsResponse:
        if request.max_events > MAX_AUDIT_EVENTS:
            raise InvalidArgument(f"max_events is at most {MAX_AUDIT_EVENTS}, not {request.max_events}")
        expired, done = self.catalog.expire_audit_events(
            request.before_us if request.HasField("before_us") else None,
            request.max_events or MAX_AUDIT_EVENTS,
            context.is_active,
            _actor(context),
        )
        return pb.ExpireAuditEventsResponse(expired=expired, done=done)

    # -- window-end events --------------------------------------------------------------------

    @_rpc
    def AddWebhook(self, request: pb.AddWebhookRequest, context: CallContext) -> pb.AddWebhookResponse:
        top = request.top if request.HasField("top") else DEFAULT_TOP
        webhook = self.window_events.add_webhook(
            request.index, request.url, request.secret, request.window_types, top, _actor(context)
        )
        return pb.AddWebhookResponse(webhook=webhook)

    @_rpc
    def ListWebhooks(self, request: pb.ListWebhooksRequest, context: CallContext) -> pb.ListWebhooksResponse:
        return pb.ListWebhooksResponse(webhooks=self.window_events.webhooks(request.index))

    @_rpc
    def DeleteWebhook(self, request: pb.DeleteWebhookRequest, context: CallContext) -> pb.DeleteWebhookResponse:
        deleted, dropped = self.window_events.delete_webhook(request.index, request.id, _actor(context))
        return pb.DeleteWebhookResponse(deleted=deleted, events_dropped=dropped)

    @_rpc
    def NoticeWindowEnds(
        self, request: pb.NoticeWindowEndsRequest, context: CallContext
    ) -> pb.NoticeWindowEndsResponse:
        now = request.now if request.HasField("now") else None
        windows, events, _ = self.window_events.notice(request.index, now)
        if events and self.delivery is not None:
            self.delivery.wake()
        return pb.NoticeWindowEndsResponse(windows=[wire.window_to_proto(w) for w in windows], events=events)

    @_rpc
    def window_ends_after(self, request: pb.WatchWindowEndsRequest, context: CallContext) -> list[pb.WindowEndEvent]:
        """The events a WatchWindowEnds stream sends next (the next page after ``request.after``)."""
        return self.window_events.events_after(request.index, request.after, top=_stream_top(request))

    @_rpc
    def window_ends_start(self, request: pb.WatchWindowEndsRequest, context: CallContext) -> int:
        """Where a WatchWindowEnds stream starts: after its cursor, or after the latest event (its
        request checked first)."""
        _stream_top(request)
        self.window_events.check_streamable(request.index)
        return request.after if request.HasField("after") else self.window_events.log_end(request.index)

    # -- stored formats and releases ------------------------------------------------------------

    @_rpc
    def GetStoreStatus(self, request: pb.GetStoreStatusRequest, context: CallContext) -> pb.StoreStatus:
        return convert.status_to_proto(self.upgrades.status())

    @_rpc
    def UpgradeStore(self, request: pb.UpgradeStoreRequest, context: CallContext) -> pb.UpgradeStoreResponse:
        status, done = self.upgrades.upgrade_store(_before_deadline(context), _actor(context))
        return pb.UpgradeStoreResponse(status=convert.status_to_proto(status), done=done)

    @_rpc
    def UpgradeIndex(self, request: pb.UpgradeIndexRequest, context: CallContext) -> pb.UpgradeIndexResponse:
        progress = self.upgrades.upgrade_index(
            request.index, _before_deadline(context), _actor(context), request.max_records or 200, request.max_batches
        )
        recorded, state = self._index(request.index).upgrade_state()
        return pb.UpgradeIndexResponse(
            format=convert.index_format_to_proto(progress.format, bool(recorded), state),
            records_processed=progress.records_processed,
            heads_changed=progress.heads_changed,
            done=progress.done,
        )


def _before_deadline(context: CallContext, margin: float = DEADLINE_MARGIN) -> Callable[[], bool]:
    """Whether a call of many batches goes on: the caller waits, and a batch still fits before its
    deadline (so the answer reaches it: the caller sends the call again to go on)."""
    return lambda: context.is_active() and context.time_remaining() > margin


def _stream_top(request: pb.WatchWindowEndsRequest) -> int:
    top = request.top if request.HasField("top") else DEFAULT_TOP
    if top > MAX_TOP:
        raise InvalidArgument(f"top is at most {MAX_TOP}, not {top}")
    return top
