"""Score and record writes as operations: scores, entries, metadata, batches, hidden records,
score rules and bulk deletions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from .. import wire
from ..index import DeletionProgress, HiddenRecord, ScoreRules
from ..proto import service_pb2 as pb
from .errors import InvalidArgument
from .messages import (
    Key,
    Op,
    Score,
    UnaryCall,
    checked_count,
    entries_to_send,
    entry_to_send,
    keyed_write,
    record_to_send,
    windows_written,
)


class RecordOps:
    """Score and record writes: operations (see :mod:`.operations`)."""

    # -- writes -----------------------------------------------------------------------------

    @staticmethod
    def add_score(
        index: str,
        pk: Key,
        score: Score,
        timestamp: int | None = None,
        context: Key = (),
        group: Key = (),
        metadata: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Op[int]:
        """Add one entry, made at ``timestamp`` in the index's timebase (None: now, the server's
        clock when it applies the write, as the CLI and HTTP default to); ``metadata`` fields are
        merged into the record's in the same transaction.  Applied once, however often it is sent
        (see the module docstring): a write sent again keeps the time it was first applied at."""
        request = pb.AddScoreRequest(
            index=index,
            pk=wire.key_to_proto(pk),
            entry=entry_to_send(score, timestamp, context, group),
            metadata=metadata or {},
        )
        return windows_written((yield keyed_write("AddScore", request, idempotency_key)))

    @staticmethod
    def set_metadata(
        index: str,
        pk: Key,
        metadata: Mapping[str, str],
        merge: bool = False,
        remove: Sequence[str] = (),
        idempotency_key: str | None = None,
    ) -> Op[dict[str, str]]:
        """Replace (or merge into) a record's display metadata; returns what is stored now."""
        request = pb.SetMetadataRequest(
            index=index, pk=wire.key_to_proto(pk), metadata=metadata, merge=merge, remove=list(remove)
        )
        return dict(sorted((yield keyed_write("SetMetadata", request, idempotency_key)).metadata.items()))

    @staticmethod
    def metadata(index: str, pk: Key) -> Op[dict[str, str] | None]:
        """A record's display metadata ({} if none), or None if the record does not exist."""
        response = yield UnaryCall("GetMetadata", pb.MetadataRequest(index=index, pk=wire.key_to_proto(pk)))
        return dict(sorted(response.metadata.items())) if response.exists else None

    @staticmethod
    def add_entries(index: str, pk: Key, entries: Sequence[tuple], idempotency_key: str | None = None) -> Op[int]:
        """Add ``(score, timestamp[, context[, group]])`` entries to a record."""
        request = pb.AddEntriesRequest(index=index, pk=wire.key_to_proto(pk), entries=entries_to_send(entries))
        return windows_written((yield keyed_write("AddEntries", request, idempotency_key)))

    @staticmethod
    def save_record(index: str, pk: Key, entries: Sequence[tuple], idempotency_key: str | None = None) -> Op[int]:
        """Replace a record's entries with ``(score, timestamp[, context[, group]])`` entries."""
        request = pb.SaveRecordRequest(index=index, pk=wire.key_to_proto(pk), entries=entries_to_send(entries))
        return windows_written((yield keyed_write("SaveRecord", request, idempotency_key)))

    @staticmethod
    def delete_record(index: str, pk: Key, idempotency_key: str | None = None) -> Op[bool]:
        """Delete a record from every window (False: there was none)."""
        request = pb.DeleteRecordRequest(index=index, pk=wire.key_to_proto(pk))
        return (yield keyed_write("DeleteRecord", request, idempotency_key)).existed

    # -- fair play: hidden records, score rules ----------------------------------------------

    @staticmethod
    def hide_record(index: str, pk: Key, reason: str = "", idempotency_key: str | None = None) -> Op[bool]:
        """Hide a record from every window, keeping its entries (admin); False: it was hidden already."""
        request = pb.HideRecordRequest(index=index, pk=wire.key_to_proto(pk), reason=reason)
        return (yield keyed_write("HideRecord", request, idempotency_key)).changed

    @staticmethod
    def restore_record(index: str, pk: Key, idempotency_key: str | None = None) -> Op[bool]:
        """Put a hidden record back in every window (admin); False: it was not hidden."""
        request = pb.RestoreRecordRequest(index=index, pk=wire.key_to_proto(pk))
        return (yield keyed_write("RestoreRecord", request, idempotency_key)).changed

    @staticmethod
    def hidden_records(
        index: str, limit: int = 100, continuation: bytes | None = None
    ) -> Op[tuple[list[HiddenRecord], bytes | None]]:
        """A page of hidden records (who hid each, when, why) and the next page's continuation (admin)."""
        request = pb.ListHiddenRecordsRequest(
            index=index, limit=checked_count(limit, "limit"), continuation=continuation or b""
        )
        response = yield UnaryCall("ListHiddenRecords", request, changes_nothing=True)
        return [wire.hidden_from_proto(record) for record in response.records], response.continuation or None

    @staticmethod
    def score_rules(index: str) -> Op[ScoreRules]:
        """The index's score rules."""
        return wire.rules_from_proto((yield UnaryCall("GetScoreRules", pb.GetScoreRulesRequest(index=index))).rules)

    @staticmethod
    def set_score_rules(index: str, rules: ScoreRules) -> Op[ScoreRules]:
        """Replace the index's score rules (admin); returns them as kept."""
        if not isinstance(rules, ScoreRules):
            raise InvalidArgument(f"expected ScoreRules, not {type(rules).__name__}")
        request = pb.SetScoreRulesRequest(index=index, rules=wire.rules_to_proto(rules))
        # Setting the same rules again changes nothing: sent again as reads are.
        return wire.rules_from_proto((yield UnaryCall("SetScoreRules", request, changes_nothing=True)).rules)

    @staticmethod
    def delete_records(
        index: str,
        group: Key | None = None,
        all_records: bool = False,
        max_records: int = 200,
        progress: Callable[[DeletionProgress], None] | None = None,
    ) -> Op[DeletionProgress]:
        """Delete every record of ``group`` (its data in the group), or with ``all_records`` every record
        of the index, in bounded batches (admin); calls until done, ``progress`` getting the
        totals after each call.  The index and its windows stay."""
        total = DeletionProgress(False)
        while True:
            request = pb.DeleteRecordsRequest(
                index=index,
                group=wire.key_to_proto(group or (), "group"),
                all_records=all_records,
                max_records=checked_count(max_records, "max_records"),
                continuation=total.continuation or b"",
            )
            answer = yield keyed_write("DeleteRecords", request, None)
            total = total + DeletionProgress(
                answer.done,
                answer.records_changed,
                answer.records_deleted,
                answer.entries_deleted,
                answer.continuation or None,
            )
            if progress is not None:
                progress(total)
            if total.done:
                return total

    @staticmethod
    @staticmethod
    def write_batch(
        index: str,
        records: Sequence[tuple[Key, Sequence[tuple]]],
        replace: bool = True,
        idempotency_key: str | None = None,
    ) -> Op[None]:
        """Write ``(pk, entries)`` records in one transaction: replacing them, or adding to them."""
        request = pb.WriteBatchRequest(
            index=index, replace=replace, records=[record_to_send(pk, entries) for pk, entries in records]
        )
        yield keyed_write("WriteBatch", request, idempotency_key)
