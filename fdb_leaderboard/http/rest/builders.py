"""The REST requests that take code (the others are described in ``ROUTES``, see ``requests.py``): JSON
bodies read and checked, lists of keys, a scan's kind and bounds, a page of windows' limits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from google.protobuf.message import Message

from ...proto import service_pb2 as pb
from ..plain import bad
from ..transcode import Transcoder, message_from_dict
from .parameters import items_from_json, items_from_text, parse_score_text, parse_uint_64
from .requests import body_object, group_items, idempotency_key, rank_mode, selector
from .schemas import (
    HIDE_BODY_SCHEMA,
    KEYED_BODY_SCHEMA,
    METADATA_BODY_SCHEMA,
    RETENTION_BODY_SCHEMA,
    RULES_BODY_SCHEMA,
    SCORE_BODY_SCHEMA,
    WEBHOOK_BODY_SCHEMA,
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
        group=group_items(values),
        mode=rank_mode(values),
    )


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


def build_scan(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    by_value = values.get("by", "rank") == "value"
    if by_value and values.get("type", 0) != 0:
        raise bad("by=value scans the all-time window's scores: use type 0, or by=rank for a window of a type")
    scan_type = "BY_VALUE" if by_value else "BY_RANK" if values.get("type", 0) == 0 else "BY_TIME_WINDOW"
    request = pb.ScanRequest(
        index=values["index"],
        type=pb.ScanType.Value(scan_type),
        window=selector(values, transcoder, headers),
        group=group_items(values),
        reverse=values.get("reverse", False),
        limit=values.get("limit", 100),
        continuation=values.get("continuation", b""),
        mode=rank_mode(values),
    )
    for name, field in (("from", "low"), ("to", "high")):
        if name in values:
            bound = (
                parse_score_text(values[name], name) if by_value else pb.Score(int=parse_uint_64(values[name], name))
            )
            getattr(request, field).CopyFrom(bound)
    return request


def build_score_trim(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    entries = body.get("entries") if isinstance(body, dict) and set(body) == {"entries"} else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "score" in e for e in entries):
        raise bad('the body must be a JSON object like {"entries": [{"score": 1200, "timestamp": 1795420000}]}')
    for entry in entries:
        unknown = sorted(set(entry) - {"score", "timestamp", "context", "group"})
        if unknown:
            raise bad(f"unknown field {unknown[0]!r}: an entry has score, timestamp, context, group")
    return pb.ScoreTrimRequest(index=values["index"], entries=[entry_from_json(e, "an entry") for e in entries])


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


def build_audit_retention(
    values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
) -> Message:
    fields = body_object(body, RETENTION_BODY_SCHEMA, '{"retention": 7776000}')
    retention = fields.get("retention")
    if isinstance(retention, bool) or not isinstance(retention, int):
        raise bad(f"retention must be a number of seconds (0: the default, 90 days), not {retention!r}")
    return pb.SetAuditRetentionRequest(retention=retention)


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


def build_add_webhook(values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]) -> Message:
    if not isinstance(body, dict):
        raise bad('the body must be a JSON object like {"url": "https://example.com/hook"}')
    unknown = sorted(set(body) - set(WEBHOOK_BODY_SCHEMA["properties"]))
    if unknown:
        raise bad(f"unknown field {unknown[0]!r}: a webhook has {', '.join(WEBHOOK_BODY_SCHEMA['properties'])}")
    request = message_from_dict(body, pb.AddWebhookRequest, "the webhook")
    request.index = values["index"]
    return request
