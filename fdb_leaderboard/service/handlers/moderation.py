"""Keeping a board fair: hidden records, score rules, a group's records deleted."""

from __future__ import annotations

from ... import wire
from ...errors import InvalidArgument
from ...proto import service_pb2 as pb
from .calling import CallContext, Handlers, actor_of, idempotency_key_of, rpc_handler

MAX_DELETE_BATCH = 1000  # records per DeleteRecords transaction


class ModerationHandlers(Handlers):
    """The handlers of keeping a board fair."""

    @rpc_handler
    def HideRecord(self, request: pb.HideRecordRequest, context: CallContext) -> pb.HiddenChangeResponse:
        changed = self._index(request.index).hide_record(
            wire.items_from_proto(request.pk), request.reason, actor_of(context), idempotency_key_of(request)
        )
        return pb.HiddenChangeResponse(changed=changed)

    @rpc_handler
    def RestoreRecord(self, request: pb.RestoreRecordRequest, context: CallContext) -> pb.HiddenChangeResponse:
        changed = self._index(request.index).restore_record(
            wire.items_from_proto(request.pk), idempotency_key_of(request), actor_of(context)
        )
        return pb.HiddenChangeResponse(changed=changed)

    @rpc_handler
    def ListHiddenRecords(
        self, request: pb.ListHiddenRecordsRequest, context: CallContext
    ) -> pb.ListHiddenRecordsResponse:
        found, following = self._index(request.index).hidden_records(request.limit or 100, request.continuation or None)
        return pb.ListHiddenRecordsResponse(
            records=[wire.hidden_to_proto(record) for record in found], continuation=following or b""
        )

    @rpc_handler
    def GetScoreRules(self, request: pb.GetScoreRulesRequest, context: CallContext) -> pb.ScoreRulesResponse:
        return pb.ScoreRulesResponse(rules=wire.rules_to_proto(self._index(request.index).score_rules()))

    @rpc_handler
    def SetScoreRules(self, request: pb.SetScoreRulesRequest, context: CallContext) -> pb.ScoreRulesResponse:
        rules = wire.rules_from_proto(request.rules)
        kept = self._index(request.index).set_score_rules(rules, actor_of(context))
        return pb.ScoreRulesResponse(rules=wire.rules_to_proto(kept))

    @rpc_handler
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
            idempotency_key=idempotency_key_of(request),
            actor=actor_of(context),
        )
        return pb.DeleteRecordsResponse(
            done=done.done,
            records_changed=done.records_changed,
            records_deleted=done.records_deleted,
            entries_deleted=done.entries_deleted,
            continuation=done.continuation or b"",
        )
