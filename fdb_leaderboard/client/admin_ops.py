"""Index administration as operations: indexes, windows, maintenance, checks, stored formats,
the audit trail and webhooks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from .. import wire
from ..index import AuditEvent, Leagues
from ..index.values import check_timestamp
from ..proto import service_pb2 as pb
from .messages import Key, Op, UnaryCall, checked_count, enum_value, expired_until_done, window_selector, with_boards


class AdminOps:
    """Index administration: operations (see :mod:`.operations`)."""

    # -- admin ------------------------------------------------------------------------------

    @staticmethod
    def create_index(
        name: str,
        aggregation: str = "BEST",
        hash_function: str = "MURMUR3",
        group_size: int = 0,
        context_size: int = 0,
        high_score_first: bool = True,
        reference_layout: bool = False,
        count_duplicates: bool = False,
        maintenance: pb.MaintenancePolicy | None = None,
        score_type: str = "INT",
        dense_ranks: bool = False,
        *,
        boards: Sequence[str] = (),
        timezone: str = "UTC",
        all_time: bool = True,
        columns: Sequence[str] = (),
        leagues: Leagues | None = None,
        timebase: str | None = None,
    ) -> Op[bool]:
        """Create index ``name`` (False: it exists with these options; the ``boards`` it lacks are
        added to it).  It ranks all-time from its first score (unless ``all_time`` is False) and
        keeps the calendar ``boards`` named (daily, weekly, monthly: window types 1, 2, 3) in
        ``timezone``, today's ones from the start: they join ``maintenance`` (the server keeps them
        ahead and expires them per that policy).  ``timebase``: its times in ``"seconds"`` (the
        default) or ``"milliseconds"``; a timestamp that cannot be one (after the year 9999) is
        refused.
        ``columns``: rank by 2 to 4 integer columns, each ``"HIGH"`` or ``"LOW"`` (most kills, then
        fewest deaths: ``("HIGH", "LOW")``); its scores are then tuples of ints.  ``leagues``:
        cohorts and tiers on one window type's windows (read with :meth:`cohort`)."""
        options = pb.IndexOptions(
            aggregation=enum_value(pb.Aggregation, aggregation, "aggregation"),
            hash_function=enum_value(pb.RankHash, hash_function, "hash_function"),
            group_size=checked_count(group_size, "group_size"),
            context_size=checked_count(context_size, "context_size"),
            high_score_first=high_score_first,
            count_duplicates=count_duplicates,
            score_type=enum_value(pb.ScoreType, score_type, "score_type"),
            dense_ranks=dense_ranks,
            columns=[enum_value(pb.ColumnOrder, direction, "a column's direction") for direction in columns],
            leagues=pb.Leagues(**dataclasses.asdict(leagues)) if leagues is not None else None,
        )
        request = pb.CreateIndexRequest(
            name=name,
            options=options,
            reference_layout=reference_layout,
            maintenance=with_boards(maintenance, boards, timezone, timebase),
            all_time=all_time,
        )
        return (yield UnaryCall("CreateIndex", request)).created

    @staticmethod
    def list_indexes() -> Op[list[pb.IndexInfo]]:
        """Every index with its options and maintenance policy."""
        return list((yield UnaryCall("ListIndexes", pb.ListIndexesRequest())).indexes)

    @staticmethod
    def drop_index(name: str) -> Op[None]:
        """Delete the index and all its data (NotFound if there is none)."""
        yield UnaryCall("DropIndex", pb.DropIndexRequest(index=name))

    @staticmethod
    def set_maintenance(index: str, policy: pb.MaintenancePolicy) -> Op[None]:
        """Replace the index's maintenance policy (windows kept ahead, retention, timebase)."""
        yield UnaryCall("SetMaintenancePolicy", pb.SetMaintenancePolicyRequest(index=index, maintenance=policy))

    @staticmethod
    def set_writes_paused(index: str, paused: bool, reason: str = "") -> Op[None]:
        """Refuse the index's writes (UNAVAILABLE, saying ``reason``) until resumed, or resume them."""
        yield UnaryCall("SetWritesPaused", pb.SetWritesPausedRequest(index=index, paused=paused, reason=reason))

    @staticmethod
    def update_windows(
        index: str,
        specs: Sequence[tuple[int, int, int, int, int]] = (),
        windows: Sequence[tuple[int, int, int]] = (),
        high_score_first: bool | None = None,
        all_time: bool = True,
        delete_before: int | None = None,
        update_timestamp: int = 0,
        nlevels: int = 0,
        rebuild: str = "IF_OVERLAPPING_CHANGED",
    ) -> Op[pb.UpdateWindowsResponse]:
        """Add (and with ``delete_before``, delete) windows; see ``WindowUpdate``.

        ``high_score_first`` None keeps the index's direction; True or False changes it (every
        window is then rebuilt).
        """
        request = pb.UpdateWindowsRequest(
            index=index,
            update_timestamp=update_timestamp,
            high_score_first=high_score_first,
            all_time=all_time,
            specs=[pb.WindowSpec(type=t, base=b, increment=i, duration=d, count=c) for t, b, i, d, c in specs],
            windows=[pb.ExplicitWindow(type=t, start=s, end=e) for t, s, e in windows],
            nlevels=nlevels,
            rebuild=enum_value(pb.Rebuild, rebuild, "rebuild"),
        )
        if delete_before is not None:
            request.delete_before = delete_before
        return (yield UnaryCall("UpdateWindows", request))

    @staticmethod
    def list_windows(index: str, window_type: int | None = None) -> Op[pb.ListWindowsResponse]:
        """The index's windows (only those of ``window_type`` if given), direction, latest
        timestamp and fill progress."""
        request = pb.ListWindowsRequest(index=index)
        if window_type is not None:
            request.window_type = window_type
        return (yield UnaryCall("ListWindows", request))

    @staticmethod
    def save_sub_directory(index: str, group: Key, high_score_first: bool) -> Op[None]:
        """Set a group's score direction (before it has scores)."""
        request = pb.SaveSubDirectoryRequest(
            index=index, group=wire.key_to_proto(group, "group"), high_score_first=high_score_first
        )
        yield UnaryCall("SaveSubDirectory", request)

    @staticmethod
    def sub_directories(index: str) -> Op[dict[tuple, bool]]:
        """Each group with a direction of its own: whether it ranks high scores first."""
        response = yield UnaryCall("ListSubDirectories", pb.ListSubDirectoriesRequest(index=index))
        return {wire.items_from_proto(s.group): s.high_score_first for s in response.sub_directories}

    @staticmethod
    def groups(
        index: str, window_type: int = 0, timestamp: int | None = None, limit: int = 0, continuation: bytes = b""
    ) -> Op[tuple[list[tuple], bytes]]:
        """One page of the groups holding a value in the window (a grouped index's boards), in key
        order, at most ``limit`` (1-1000; 0: 100), and the continuation of the next (empty: done)."""
        window = window_selector(window_type, timestamp)
        limit = checked_count(limit, "limit")
        request = pb.ListGroupsRequest(index=index, window=window, limit=limit, continuation=continuation)
        response = yield UnaryCall("ListGroups", request)
        return [wire.items_from_proto(g.group) for g in response.groups], response.continuation

    @staticmethod
    def expire(index: str, before: int) -> Op[list[pb.Window]]:
        """Delete the windows ending at or before ``before``, with their data."""
        return list((yield UnaryCall("Expire", pb.ExpireRequest(index=index, before=before))).deleted)

    @staticmethod
    def fill(index: str, max_records: int = 0, max_batches: int = 0) -> Op[pb.FillResponse]:
        """Fill windows added over stored scores, for at most this many records and batches (0: all)."""
        request = pb.FillRequest(
            index=index,
            max_records=checked_count(max_records, "max_records"),
            max_batches=checked_count(max_batches, "max_batches"),
        )
        return (yield UnaryCall("Fill", request))

    @staticmethod
    def trim(index: str, before: int) -> Op[int]:
        """Drop entries before ``before`` no window depends on; returns how many."""
        return (yield UnaryCall("Trim", pb.TrimRequest(index=index, before=before))).entries_removed

    @staticmethod
    def keep_ahead(index: str, now: int | None = None) -> Op[list[pb.Window]]:
        """Add the windows the index's policy needs soon (``now`` default: the server's clock)."""
        request = pb.KeepAheadRequest(index=index)
        if now is not None:
            request.now = now
        return list((yield UnaryCall("KeepAhead", request)).added)

    @staticmethod
    def expire_idempotency_keys(index: str, before: int | None = None) -> Op[int]:
        """Forget the index's idempotency keys applied before ``before`` (Unix seconds; default: its
        policy's retention ago), in bounded batches; returns how many.  The server does it too."""
        request = pb.ExpireIdempotencyKeysRequest(index=index)
        if before is not None:
            request.before = before
        return (yield from expired_until_done("ExpireIdempotencyKeys", request))

    @staticmethod
    def verify(index: str, max_problems: int = 0) -> Op[list[str]]:
        """Problems the server's consistency check finds in the index (empty: sound)."""
        return list((yield from AdminOps.verify_report(index, max_problems)).problems)

    @staticmethod
    def verify_plan(index: str, parts: int, timeout: float | None = None) -> Op[list[bytes]]:
        """Where each of about ``parts`` pieces of one whole check starts (see ``verify_report``)."""
        request = pb.VerifyRequest(index=index, split=checked_count(parts, "parts"))
        return list((yield UnaryCall("Verify", request, timeout=timeout, changes_nothing=True)).parts)

    @staticmethod
    def verify_report(
        index: str,
        max_problems: int = 0,
        timeout: float | None = None,
        progress: Callable[[pb.VerifyResponse], None] | None = None,
        continuation: bytes = b"",
    ) -> Op[pb.VerifyResponse]:
        """The server's consistency check of the whole index (or of the piece starting at
        ``continuation``), in as many calls as it takes, each within the server's deadline and
        ``timeout``: every call's problems and what the check looked at.  ``progress`` sees each
        call's answer.  The clients' ``verify_report`` methods take ``parts``: the check in about
        that many pieces over key ranges, run at once (their answers summed)."""
        request = pb.VerifyRequest(
            index=index, max_problems=checked_count(max_problems, "max_problems"), continuation=continuation
        )
        problems: list[str] = []
        while True:
            answer = yield UnaryCall("Verify", request, timeout=timeout, changes_nothing=True)
            problems.extend(answer.problems)
            if progress is not None:
                progress(answer)
            if answer.complete:
                del answer.problems[:]
                answer.problems.extend(problems)
                return answer
            request.continuation = answer.continuation

    # -- stored formats and releases ---------------------------------------------------------

    @staticmethod
    def store_status() -> Op[pb.StoreStatus]:
        """The store's format, the server processes on it with their releases (live or seen within
        a day), each index's format and upgrade under way, and the formats the server knows."""
        return (yield UnaryCall("GetStoreStatus", pb.GetStoreStatusRequest()))

    @staticmethod
    def upgrade_index(
        index: str,
        max_records: int = 0,
        max_batches: int = 0,
        progress: Callable[[pb.UpgradeIndexResponse], None] | None = None,
    ) -> Op[pb.UpgradeIndexResponse]:
        """Raise ``index`` to the newest format the server writes (admin; refused while a live
        process runs a release that does not read it), its data rewritten first where that format
        needs it: calls until done, each ``max_batches`` batches of ``max_records`` records (0:
        the server's defaults, until its deadline), ``progress`` seeing each answer.  Returns the
        last answer, with the records and heads of every call."""
        request = pb.UpgradeIndexRequest(
            index=index,
            max_records=checked_count(max_records, "max_records"),
            max_batches=checked_count(max_batches, "max_batches"),
        )
        records = changed = 0
        while True:
            answer = yield UnaryCall("UpgradeIndex", request, changes_nothing=True)  # resumable: sent again safely
            records += answer.records_processed
            changed += answer.heads_changed
            if progress is not None:
                progress(answer)
            if answer.done:
                answer.records_processed, answer.heads_changed = records, changed
                return answer

    @staticmethod
    def upgrade_store(progress: Callable[[pb.StoreStatus], None] | None = None) -> Op[pb.StoreStatus]:
        """Raise the store, then every index, to the newest formats the server writes (admin;
        refused while a live process runs a release that does not read them; stop processes of
        releases that do not report theirs, 0.2.0 and earlier, first): calls until done,
        ``progress`` seeing the status after each.  Returns the status at the end."""
        while True:
            answer = yield UnaryCall("UpgradeStore", pb.UpgradeStoreRequest(), changes_nothing=True)
            if progress is not None:
                progress(answer.status)
            if answer.done:
                return answer.status

    def audit_events(
        index: str | None = None,
        action: str | None = None,
        since_us: int | None = None,
        until_us: int | None = None,
        limit: int = 100,
        continuation: bytes | None = None,
        newest_first: bool = False,
    ) -> Op[tuple[list[AuditEvent], bytes | None]]:
        """A page of the audit trail (admin): who did what and when, oldest first (or newest), of
        ``index`` and ``action`` only if given, between ``since_us`` and ``until_us`` (Unix
        microseconds); and the next page's continuation (None: the last page)."""
        request = pb.ListAuditEventsRequest(
            index=index or "",
            action=action or "",
            limit=checked_count(limit, "limit"),
            continuation=continuation or b"",
            newest_first=newest_first,
        )
        if since_us is not None:
            request.since_us = since_us
        if until_us is not None:
            request.until_us = until_us
        response = yield UnaryCall("ListAuditEvents", request, changes_nothing=True)
        return [wire.audit_event_from_proto(event) for event in response.events], response.continuation or None

    @staticmethod
    def audit_retention() -> Op[int]:
        """Seconds the audit trail keeps events (admin)."""
        request = pb.ListAuditEventsRequest(limit=1, until_us=0)  # no event is that old: the retention only
        return (yield UnaryCall("ListAuditEvents", request, changes_nothing=True)).retention

    @staticmethod
    def set_audit_retention(seconds: int) -> Op[int]:
        """Keep audit events ``seconds`` (0: the default, 90 days) (admin); returns the retention now."""
        request = pb.SetAuditRetentionRequest(retention=checked_count(seconds, "seconds"))
        return (yield UnaryCall("SetAuditRetention", request)).retention

    @staticmethod
    def expire_audit_events(before_us: int | None = None) -> Op[int]:
        """Clear audit events older than ``before_us`` (default: the retention ago), in bounded
        batches (admin); returns how many.  The server does it too."""
        request = pb.ExpireAuditEventsRequest()
        if before_us is not None:
            request.before_us = before_us
        return (yield from expired_until_done("ExpireAuditEvents", request))

    # -- window-end events ---------------------------------------------------------------------

    @staticmethod
    def add_webhook(
        index: str, url: str, secret: str = "", window_types: Sequence[int] = (), top: int | None = None
    ) -> Op[pb.Webhook]:
        """Subscribe ``url`` to the index's window ends (admin): each ended window of
        ``window_types`` (all without any) is POSTed to it with its top ``top`` (default 10),
        signed with ``secret`` (empty: the server makes one up and answers it, this once)."""
        request = pb.AddWebhookRequest(index=index, url=url, secret=secret, window_types=list(window_types))
        if top is not None:
            request.top = checked_count(top, "top")
        return (yield UnaryCall("AddWebhook", request)).webhook

    @staticmethod
    def webhooks(index: str) -> Op[list[pb.Webhook]]:
        """The index's webhooks (admin), without their secrets, with their events pending."""
        response = yield UnaryCall("ListWebhooks", pb.ListWebhooksRequest(index=index), changes_nothing=True)
        return list(response.webhooks)

    @staticmethod
    def delete_webhook(index: str, webhook_id: str) -> Op[bool]:
        """Unsubscribe a webhook (admin), dropping its undelivered events; False: no such webhook."""
        request = pb.DeleteWebhookRequest(index=index, id=webhook_id)
        # Deleting again deletes nothing: sent again as reads are.
        return (yield UnaryCall("DeleteWebhook", request, changes_nothing=True)).deleted

    @staticmethod
    def notice_window_ends(index: str, now: int | None = None) -> Op[pb.NoticeWindowEndsResponse]:
        """Notice the index's ended windows now (admin; the server's maintenance does it by
        itself): ``now`` in the index's timebase, default the server's clock.  Each window is
        noticed once, whoever asks; the answer names those this call noticed."""
        request = pb.NoticeWindowEndsRequest(index=index)
        if now is not None:
            request.now = check_timestamp(now)
        return (yield UnaryCall("NoticeWindowEnds", request, changes_nothing=True))
