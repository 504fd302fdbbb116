"""An index's maintenance: expiring, filling, trimming, keeping ahead, verifying, forgetting keys."""

from __future__ import annotations

import logging
import time

import grpc

from ... import wire
from ...errors import FailedPrecondition, InvalidArgument
from ...index import CheckReport
from ...index.idempotency import DEFAULT_EXPIRY_BATCH
from ...proto import service_pb2 as pb
from .. import convert
from ..status import Answer
from .calling import CallContext, Handlers, actor_of, before_deadline, rpc_handler

log = logging.getLogger("fdb_leaderboard.service")


class MaintenanceHandlers(Handlers):
    """The handlers of an index's maintenance."""

    @rpc_handler
    def Expire(self, request: pb.ExpireRequest, context: CallContext) -> pb.ExpireResponse:
        # The deleted windows' data left when the deadline nears is cleared by the maintenance.
        gone = self._index(request.index).expire(request.before, actor_of(context), before_deadline(context))
        return pb.ExpireResponse(deleted=[wire.window_to_proto(w) for w in gone])

    @rpc_handler
    def Fill(self, request: pb.FillRequest, context: CallContext) -> pb.FillResponse:
        index = self._index(request.index)
        max_records = request.max_records or 200
        processed = ranked = 0
        batches = 0
        while True:
            step = index.fill_step(max_records, actor=actor_of(context))
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

    @rpc_handler
    def Trim(self, request: pb.TrimRequest, context: CallContext) -> pb.TrimResponse:
        removed = self._index(request.index).trim(request.before, actor=actor_of(context))
        return pb.TrimResponse(entries_removed=removed)

    @rpc_handler
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
            actor=actor_of(context),
        )
        self._fill_soon(added)  # windows added over stored scores are left filling
        return pb.KeepAheadResponse(added=[wire.window_to_proto(w) for w in added])

    @rpc_handler
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

    @rpc_handler
    def ExpireIdempotencyKeys(
        self, request: pb.ExpireIdempotencyKeysRequest, context: CallContext
    ) -> pb.ExpireIdempotencyKeysResponse:
        index = self._index(request.index)
        if request.HasField("before"):
            before = request.before
        else:
            before = int(time.time()) - convert.idempotency_retention(self.catalog.entry(request.index).maintenance)
        expired, done = index.expire_idempotency_keys(
            before, request.max_keys or DEFAULT_EXPIRY_BATCH, context.is_active, actor_of(context)
        )
        return pb.ExpireIdempotencyKeysResponse(expired=expired, done=done, kept=index.idempotency_keys())
