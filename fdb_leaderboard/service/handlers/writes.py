"""Record writes: scores, entries, records, batches, metadata, loads."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator

import grpc

from ... import wire
from ...errors import InvalidArgument, LeaderboardError
from ...proto import service_pb2 as pb
from .. import convert
from ..status import Answer, cap_message, status_of
from .calling import CallContext, ClientGone, Handlers, actor_of, idempotency_key_of, rpc_handler

log = logging.getLogger("fdb_leaderboard.service")


class WriteHandlers(Handlers):
    """The handlers of record writes."""

    @rpc_handler
    def AddScore(self, request: pb.AddScoreRequest, context: CallContext) -> pb.AddScoreResponse:
        if not request.HasField("entry"):
            raise InvalidArgument("AddScore needs an entry")
        outcome = self._index(request.index).write_record(
            wire.items_from_proto(request.pk),
            [wire.written_entry_from_proto(request.entry)],
            metadata=dict(request.metadata),
            idempotency_key=idempotency_key_of(request),
        )
        return pb.AddScoreResponse(windows_changed=outcome.windows_changed, warning=outcome.warning)

    @rpc_handler
    def AddEntries(self, request: pb.AddEntriesRequest, context: CallContext) -> pb.WriteResponse:
        entries = [wire.written_entry_from_proto(entry) for entry in request.entries]
        outcome = self._index(request.index).write_record(
            wire.items_from_proto(request.pk), entries, idempotency_key=idempotency_key_of(request)
        )
        return pb.WriteResponse(windows_changed=outcome.windows_changed, warning=outcome.warning)

    @rpc_handler
    def SaveRecord(self, request: pb.SaveRecordRequest, context: CallContext) -> pb.WriteResponse:
        entries = [wire.written_entry_from_proto(entry) for entry in request.entries]
        outcome = self._index(request.index).write_record(
            wire.items_from_proto(request.pk), entries, replace=True, idempotency_key=idempotency_key_of(request)
        )
        return pb.WriteResponse(windows_changed=outcome.windows_changed, warning=outcome.warning)

    @rpc_handler
    def DeleteRecord(self, request: pb.DeleteRecordRequest, context: CallContext) -> pb.DeleteRecordResponse:
        return pb.DeleteRecordResponse(
            existed=self._index(request.index).delete_record(
                wire.items_from_proto(request.pk), idempotency_key=idempotency_key_of(request)
            )
        )

    @rpc_handler
    def WriteBatch(self, request: pb.WriteBatchRequest, context: CallContext) -> pb.WriteBatchResponse:
        records = [convert.record_from_proto(record) for record in request.records]
        self._index(request.index).write_batch(
            records, replace=request.replace, idempotency_key=idempotency_key_of(request)
        )
        return pb.WriteBatchResponse()

    @rpc_handler
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
                idempotency_key=idempotency_key_of(first),
                actor=actor_of(context),
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

    @rpc_handler
    def SetMetadata(self, request: pb.SetMetadataRequest, context: CallContext) -> pb.MetadataResponse:
        stored = self._index(request.index).set_metadata(
            wire.items_from_proto(request.pk),
            dict(request.metadata),
            request.merge,
            list(request.remove),
            idempotency_key=idempotency_key_of(request),
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
                        idempotency_key=idempotency_key_of(first),
                        actor=actor_of(context),
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


def saved_before(written: int) -> str:
    """What a load cut short kept: ``the record before it was saved``, ``the 3 records before it were saved``."""
    return "the record before it was saved" if written == 1 else f"the {written} records before it were saved"
