"""The REST routes' request builders: each RPC's request from a route's path and query values, its body
and headers (the window selector, the group, the rank mode, idempotency keys, JSON entries and scores)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import grpc
from google.protobuf.message import Message

from ...proto import service_pb2 as pb
from ..plain import bad
from ..transcode import CallFailed, Transcoder, message_from_dict
from .parameters import items_from_json, items_from_text, parse_score_text, parse_uint_64
from .schemas import (
    HIDE_BODY_SCHEMA,
    KEYED_BODY_SCHEMA,
    METADATA_BODY_SCHEMA,
    NO_BODY_SCHEMA,
    RETENTION_BODY_SCHEMA,
    RULES_BODY_SCHEMA,
    SCORE_BODY_SCHEMA,
    WEBHOOK_BODY_SCHEMA,
)


def selector(values: dict[str, Any], transcoder: Transcoder, headers: Mapping[str, str]) -> pb.WindowSelector:
    window = pb.WindowSelector(type=values.get("type", 0))
    at = values.get("at", "now")
    if at == "now":
        pass  # no timestamp: the server reads the window holding now, in the index's timebase
    elif at == "latest":
        request = pb.ListWindowsRequest(index=values["index"])
        listing = transcoder.call("ListWindows", request, headers, counted=False)  # the route's own lookup
        if not listing.HasField("latest_timestamp"):
            raise CallFailed(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"index {values['index']!r} has no score yet: 'at=latest' names no time",
            )
        window.timestamp = listing.latest_timestamp
    elif at is not None:
        window.timestamp = at
    return window


def _group(values: dict[str, Any]) -> list[pb.Item]:
    return items_from_text(values["group"], "group") if "group" in values else []


def _mode(values: dict[str, Any]) -> int:
    return pb.RankMode.Value(values.get("mode", "ORDINAL"))


def build_top(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.TopRequest(
        index=values["index"],
        window=selector(values, transcoder, headers),
        group=_group(values),
        mode=_mode(values),
        n=values.get("n", 10),
    )


def build_count(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.CountRequest(index=values["index"], window=selector(values, transcoder, headers), group=_group(values))


def build_rank(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.RankRequest(
        index=values["index"],
        pk=items_from_text(values["pk"], "pk"),
        window=selector(values, transcoder, headers),
        group=_group(values),
        mode=_mode(values),
    )


def build_around(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.AroundMeRequest(
        index=values["index"],
        pk=items_from_text(values["pk"], "pk"),
        window=selector(values, transcoder, headers),
        group=_group(values),
        mode=_mode(values),
        above=values.get("above", 4),
        below=values.get("below", 4),
        if_absent=pb.IfAbsent.Value(values.get("if_absent", "EMPTY")),
    )


def build_page(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.PageRequest(
        index=values["index"],
        window=selector(values, transcoder, headers),
        group=_group(values),
        mode=_mode(values),
        page=values.get("page", 1),
        size=values.get("size", 10),
    )


def build_cohort(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    """A record's cohort (``pk``) or one named by ``tier`` and ``cohort``, in the league's window type."""
    return pb.CohortRequest(
        index=values["index"],
        window=selector(values, transcoder, headers),
        pk=items_from_text(values["pk"], "pk") if "pk" in values else [],
        tier=values.get("tier", 0),
        cohort=values.get("cohort", 0),
        mode=_mode(values),
        page=values.get("page", 1),
        size=values.get("size", 0),
        above=values.get("above", 0),
        below=values.get("below", 0),
    )


def build_ranks(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    given = values["records"]
    if len(given) == 1 and given[0].startswith("["):  # one JSON array of keys
        try:
            keys = json.loads(given[0])
        except ValueError:
            raise bad(f"records must be a JSON array of keys, not {given[0]!r}") from None
        if not isinstance(keys, list):
            raise bad(f"records must be a JSON array of keys, not {given[0]!r}")
        pks = [items_from_json(key, "records") for key in keys]
    else:  # records=alice&records=bob: each a key, as a path takes one
        pks = [items_from_text(text, "records") for text in given]
    return pb.RanksRequest(
        index=values["index"],
        records=[pb.RecordKey(pk=pk) for pk in pks],
        window=selector(values, transcoder, headers),
        group=_group(values),
        mode=_mode(values),
    )


def build_percentile(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.PercentileRequest(
        index=values["index"],
        pk=items_from_text(values["pk"], "pk"),
        window=selector(values, transcoder, headers),
        group=_group(values),
    )


def build_score_for_percentile(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    return pb.ScoreForPercentileRequest(
        index=values["index"],
        window=selector(values, transcoder, headers),
        group=_group(values),
        percentile=values["percentile"],
    )


def build_history(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    request = pb.RankHistoryRequest(
        index=values["index"],
        pk=items_from_text(values["pk"], "pk"),
        window_type=values["type"],
        count=values.get("count", 0),
        group=_group(values),
        mode=_mode(values),
    )
    if "until" in values:
        request.until = values["until"]
    return request


def build_metadata(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.MetadataRequest(index=values["index"], pk=items_from_text(values["pk"], "pk"))


def build_set_metadata(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    if not isinstance(body, dict) or set(body) - set(METADATA_BODY_SCHEMA["properties"]):
        raise bad('the body must be a JSON object like {"metadata": {"name": "Alice"}, "merge": true}')
    metadata, merge, remove = body.get("metadata", {}), body.get("merge", False), body.get("remove", [])
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise bad(f"metadata must be an object of strings, not {metadata!r}")
    if not isinstance(merge, bool):
        raise bad(f"merge must be true or false, not {merge!r}")
    if not isinstance(remove, list) or not all(isinstance(v, str) for v in remove):
        raise bad(f"remove must be an array of field names, not {remove!r}")
    return pb.SetMetadataRequest(
        index=values["index"],
        pk=items_from_text(values["pk"], "pk"),
        metadata=metadata,
        merge=merge,
        remove=remove,
        idempotency_key=idempotency_key(body, headers),
    )


def build_list_indexes(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    return pb.ListIndexesRequest()


def build_list_windows(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    if not 1 <= values.get("size", 100) <= 1000:
        raise bad(f"size must be between 1 and 1000, not {values['size']}")
    if values.get("page", 1) < 1:
        raise bad(f"page must be 1 or more, not {values['page']}")
    request = pb.ListWindowsRequest(index=values["index"])
    if "type" in values:  # the windows of one type
        request.window_type = values["type"]
    return request


def build_add_score(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    if not isinstance(body, dict):
        raise bad('the body must be a JSON object like {"pk": "alice", "score": 1200}')
    unknown = sorted(set(body) - set(SCORE_BODY_SCHEMA["properties"]))
    if unknown:
        known = ", ".join(SCORE_BODY_SCHEMA["properties"])
        raise bad(f"unknown field {unknown[0]!r}: a score has {known}")
    if "pk" not in body or "score" not in body:
        raise bad("a score needs pk and score")
    entry = entry_from_json(body, "the score")
    metadata = body.get("metadata", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise bad(f"metadata must be an object of strings, not {metadata!r}")
    key = idempotency_key(body, headers)
    return pb.AddScoreRequest(
        index=values["index"], pk=items_from_json(body["pk"], "pk"), entry=entry, metadata=metadata, idempotency_key=key
    )


def entry_from_json(value: dict[str, Any], what: str) -> pb.Entry:
    """An entry from its plain JSON (score, timestamp: default now, which the server stamps when it
    applies the write, in the index's timebase; context, group)."""
    fields = {"score": score_from_json(value["score"])}
    if "timestamp" in value:
        fields["timestamp"] = value["timestamp"]
    entry = message_from_dict(fields, pb.Entry, what)
    entry.context.extend(items_from_json(value.get("context", []), "context"))
    entry.group.extend(items_from_json(value.get("group", []), "group"))
    return entry


def build_delete_record(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    return pb.DeleteRecordRequest(
        index=values["index"], pk=items_from_text(values["pk"], "pk"), idempotency_key=idempotency_key({}, headers)
    )


def build_scan(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    by_value = values.get("by", "rank") == "value"
    if by_value and values.get("type", 0) != 0:
        raise bad("by=value scans the all-time window's scores: use type 0, or by=rank for a window of a type")
    scan_type = "BY_VALUE" if by_value else "BY_RANK" if values.get("type", 0) == 0 else "BY_TIME_WINDOW"
    request = pb.ScanRequest(
        index=values["index"],
        type=pb.ScanType.Value(scan_type),
        window=selector(values, transcoder, headers),
        group=_group(values),
        reverse=values.get("reverse", False),
        limit=values.get("limit", 100),
        continuation=values.get("continuation", b""),
        mode=_mode(values),
    )
    for name, field in (("from", "low"), ("to", "high")):
        if name in values:
            bound = (
                parse_score_text(values[name], name) if by_value else pb.Score(int=parse_uint_64(values[name], name))
            )
            getattr(request, field).CopyFrom(bound)
    return request


def build_rank_for_score(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    request = pb.RankForScoreRequest(
        index=values["index"], window=selector(values, transcoder, headers), group=_group(values), score=values["score"]
    )
    if "timestamp" in values:
        request.key_timestamp = values["timestamp"]
    return request


def build_score_for_rank(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    return pb.ScoreForRankRequest(
        index=values["index"], window=selector(values, transcoder, headers), group=_group(values), rank=values["rank"]
    )


def build_score_trim(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    entries = body.get("entries") if isinstance(body, dict) and set(body) == {"entries"} else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "score" in e for e in entries):
        raise bad('the body must be a JSON object like {"entries": [{"score": 1200, "timestamp": 1795420000}]}')
    for entry in entries:
        unknown = sorted(set(entry) - {"score", "timestamp", "context", "group"})
        if unknown:
            raise bad(f"unknown field {unknown[0]!r}: an entry has score, timestamp, context, group")
    return pb.ScoreTrimRequest(index=values["index"], entries=[entry_from_json(e, "an entry") for e in entries])


def build_groups(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.ListGroupsRequest(
        index=values["index"],
        window=selector(values, transcoder, headers),
        limit=values.get("limit", 100),
        continuation=values.get("continuation", b""),
    )


def body_object(body: Any, schema: dict[str, Any], example: str) -> dict[str, Any]:
    """A JSON object body (none: ``{}``) with only ``schema``'s fields."""
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise bad(f"the body must be a JSON object like {example}")
    unknown = sorted(set(body) - set(schema["properties"]))
    if unknown:
        raise bad(f"unknown field {unknown[0]!r}: the body has {', '.join(schema['properties'])}")
    return body


def build_hide(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    fields = body_object(body, HIDE_BODY_SCHEMA, '{"reason": "aimbot"}')
    reason = fields.get("reason", "")
    if not isinstance(reason, str):
        raise bad(f"reason must be a string, not {reason!r}")
    return pb.HideRecordRequest(
        index=values["index"],
        pk=items_from_text(values["pk"], "pk"),
        reason=reason,
        idempotency_key=idempotency_key(fields, headers),
    )


def build_restore(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    fields = body_object(body, KEYED_BODY_SCHEMA, "{}")
    return pb.RestoreRecordRequest(
        index=values["index"], pk=items_from_text(values["pk"], "pk"), idempotency_key=idempotency_key(fields, headers)
    )


def build_hidden_records(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    return pb.ListHiddenRecordsRequest(
        index=values["index"], limit=values.get("limit", 0), continuation=values.get("continuation", b"")
    )


def build_get_rules(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.GetScoreRulesRequest(index=values["index"])


def build_set_rules(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    fields = body_object(body, RULES_BODY_SCHEMA, '{"min_score": 0, "max_score": 100000, "max_per_minute": 10}')
    rules = pb.ScoreRules()
    for name in ("min_score", "max_score"):
        if fields.get(name) is not None:
            getattr(rules, name).CopyFrom(message_from_dict(score_from_json(fields[name]), pb.Score, name))
    for name in ("max_per_window", "max_per_minute"):
        count = fields.get(name, 0)
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < 2**32:
            raise bad(f"{name} must be a count from 0 (no limit), not {count!r}")
        setattr(rules, name, count)
    return pb.SetScoreRulesRequest(index=values["index"], rules=rules)


def build_delete_group(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    return pb.DeleteRecordsRequest(
        index=values["index"],
        group=items_from_text(values["group"], "group"),
        max_records=values.get("max_records", 0),
        continuation=values.get("continuation", b""),
        idempotency_key=idempotency_key({}, headers),
    )


def build_delete_all(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    return pb.DeleteRecordsRequest(
        index=values["index"],
        all_records=True,
        max_records=values.get("max_records", 0),
        continuation=values.get("continuation", b""),
        idempotency_key=idempotency_key({}, headers),
    )


def build_audit(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    request = pb.ListAuditEventsRequest(
        index=values.get("index", ""),
        action=values.get("action", ""),
        limit=values.get("limit", 0),
        continuation=values.get("continuation", b""),
        newest_first=values.get("newest_first") == "true",
    )
    for name in ("since_us", "until_us"):
        if name in values:
            setattr(request, name, values[name])
    return request


def build_audit_retention(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    fields = body_object(body, RETENTION_BODY_SCHEMA, '{"retention": 7776000}')
    retention = fields.get("retention")
    if isinstance(retention, bool) or not isinstance(retention, int):
        raise bad(f"retention must be a number of seconds (0: the default, 90 days), not {retention!r}")
    return pb.SetAuditRetentionRequest(retention=retention)


def build_store_status(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    return pb.GetStoreStatusRequest()


def build_upgrade_store(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    body_object(body, NO_BODY_SCHEMA, "{}")
    return pb.UpgradeStoreRequest()


def build_upgrade_index(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    body_object(body, NO_BODY_SCHEMA, "{}")
    return pb.UpgradeIndexRequest(
        index=values["index"], max_records=values.get("max_records", 0), max_batches=values.get("max_batches", 0)
    )


def score_from_json(score: Any) -> dict[str, Any]:
    """A plain JSON score (a number, a string of digits, or an array of them for a multi-column
    score) as the Score message's JSON."""
    if isinstance(score, list):
        for value in score:
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise bad(f"a score's columns are integers, not {value!r}")
        return {"columns": {"values": score}}
    if isinstance(score, bool) or not isinstance(score, (int, float, str)):
        raise bad(f"score must be a number or an array of integers (columns), not {score!r}")
    if isinstance(score, float):
        return {"double": score}
    return {"int": score} if not isinstance(score, str) or "." not in score else {"double": score}


IDEMPOTENCY_HEADER = "idempotency-key"


def idempotency_key(body: dict[str, Any], headers: Mapping[str, str]) -> str:
    """The write's idempotency key: the ``Idempotency-Key`` header or the body's field ("": none)."""
    header, field = headers.get(IDEMPOTENCY_HEADER, ""), body.get("idempotency_key", "")
    if not isinstance(field, str):
        raise bad(f"idempotency_key must be a string, not {field!r}")
    if header and field and header != field:
        raise bad("the Idempotency-Key header and the idempotency_key field differ: send one")
    return header or field


def build_add_webhook(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    if not isinstance(body, dict):
        raise bad('the body must be a JSON object like {"url": "https://example.com/hook"}')
    unknown = sorted(set(body) - set(WEBHOOK_BODY_SCHEMA["properties"]))
    if unknown:
        raise bad(f"unknown field {unknown[0]!r}: a webhook has {', '.join(WEBHOOK_BODY_SCHEMA['properties'])}")
    request = message_from_dict(body, pb.AddWebhookRequest, "the webhook")
    request.index = values["index"]
    return request


def build_list_webhooks(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    return pb.ListWebhooksRequest(index=values["index"])


def build_delete_webhook(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    return pb.DeleteWebhookRequest(index=values["index"], id=values["id"])


def build_window_ends(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    request = pb.WatchWindowEndsRequest(index=values["index"])
    if "after" in values:
        request.after = values["after"]
    if "top" in values:
        request.top = values["top"]
    return request
