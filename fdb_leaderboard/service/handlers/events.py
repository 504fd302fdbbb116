"""What happened to an index: its audit trail, window-end webhooks and events."""

from __future__ import annotations

from ... import wire
from ...errors import InvalidArgument
from ...index.audit import MAX_EVENTS as MAX_AUDIT_EVENTS
from ...proto import service_pb2 as pb
from ..window_events import DEFAULT_TOP, MAX_TOP
from .calling import CallContext, Handlers, actor_of, rpc_handler


class EventHandlers(Handlers):
    """The handlers of what happened to an index."""

    @rpc_handler
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

    @rpc_handler
    def SetAuditRetention(
        self, request: pb.SetAuditRetentionRequest, context: CallContext
    ) -> pb.SetAuditRetentionResponse:
        kept = self.catalog.set_audit_retention(request.retention, actor_of(context))
        return pb.SetAuditRetentionResponse(retention=kept)

    @rpc_handler
    def ExpireAuditEvents(
        self, request: pb.ExpireAuditEventsRequest, context: CallContext
    ) -> pb.ExpireAuditEventsResponse:
        if request.max_events > MAX_AUDIT_EVENTS:
            raise InvalidArgument(f"max_events is at most {MAX_AUDIT_EVENTS}, not {request.max_events}")
        expired, done = self.catalog.expire_audit_events(
            request.before_us if request.HasField("before_us") else None,
            request.max_events or MAX_AUDIT_EVENTS,
            context.is_active,
            actor_of(context),
        )
        return pb.ExpireAuditEventsResponse(expired=expired, done=done)

    @rpc_handler
    def AddWebhook(self, request: pb.AddWebhookRequest, context: CallContext) -> pb.AddWebhookResponse:
        top = request.top if request.HasField("top") else DEFAULT_TOP
        webhook = self.window_events.add_webhook(
            request.index, request.url, request.secret, request.window_types, top, actor_of(context)
        )
        return pb.AddWebhookResponse(webhook=webhook)

    @rpc_handler
    def ListWebhooks(self, request: pb.ListWebhooksRequest, context: CallContext) -> pb.ListWebhooksResponse:
        return pb.ListWebhooksResponse(webhooks=self.window_events.webhooks(request.index))

    @rpc_handler
    def DeleteWebhook(self, request: pb.DeleteWebhookRequest, context: CallContext) -> pb.DeleteWebhookResponse:
        deleted, dropped = self.window_events.delete_webhook(request.index, request.id, actor_of(context))
        return pb.DeleteWebhookResponse(deleted=deleted, events_dropped=dropped)

    @rpc_handler
    def NoticeWindowEnds(
        self, request: pb.NoticeWindowEndsRequest, context: CallContext
    ) -> pb.NoticeWindowEndsResponse:
        now = request.now if request.HasField("now") else None
        windows, events, _ = self.window_events.notice(request.index, now)
        if events and self.delivery is not None:
            self.delivery.wake()
        return pb.NoticeWindowEndsResponse(windows=[wire.window_to_proto(w) for w in windows], events=events)

    @rpc_handler
    def window_ends_after(self, request: pb.WatchWindowEndsRequest, context: CallContext) -> list[pb.WindowEndEvent]:
        """The events a WatchWindowEnds stream sends next (the next page after ``request.after``)."""
        return self.window_events.events_after(request.index, request.after, top=_stream_top(request))

    @rpc_handler
    def window_ends_start(self, request: pb.WatchWindowEndsRequest, context: CallContext) -> int:
        """Where a WatchWindowEnds stream starts: after its cursor, or after the latest event (its
        request checked first)."""
        _stream_top(request)
        self.window_events.check_streamable(request.index)
        return request.after if request.HasField("after") else self.window_events.log_end(request.index)


def _stream_top(request: pb.WatchWindowEndsRequest) -> int:
    top = request.top if request.HasField("top") else DEFAULT_TOP
    if top > MAX_TOP:
        raise InvalidArgument(f"top is at most {MAX_TOP}, not {top}")
    return top
