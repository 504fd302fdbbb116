"""The REST routes: :class:`RestRoute` (a path and method over one RPC: its parameters, how its request is
built and its answer made, its OpenAPI schemas) and ``ROUTES``, every route the HTTP door serves."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from google.protobuf.message import Message

from ...proto import service_pb2 as pb
from ..plain import bad
from ..transcode import Transcoder
from .answers import (
    answer_as_json,
    answer_cohort,
    answer_count,
    answer_entries,
    answer_metadata,
    answer_plain,
    answer_rank_and_entry,
    answer_ranks,
    answer_watched_rank,
    answer_windows_of_type,
)
from .builders import (
    build_add_score,
    build_add_webhook,
    build_audit_retention,
    build_hide,
    build_list_windows,
    build_ranks,
    build_restore,
    build_scan,
    build_score_trim,
    build_set_metadata,
    build_set_rules,
)
from .parameters import (
    ABOVE,
    AFTER,
    AT,
    AUDIT_ACTION,
    AUDIT_INDEX,
    BELOW,
    COHORT,
    COHORT_ABOVE,
    COHORT_BELOW,
    COHORT_SIZE,
    CONTINUATION,
    EVENT_TOP,
    GROUP,
    GROUP_PATH,
    GROUPS_LIMIT,
    HISTORY_COUNT,
    HISTORY_TYPE,
    IDEMPOTENCY_KEY,
    IF_ABSENT,
    INDEX,
    INTERVAL,
    KEY_TIMESTAMP,
    LIMIT,
    MAX_BATCHES,
    MAX_RECORDS,
    MODE,
    NEWEST_FIRST,
    PAGE,
    PAGE_SIZE,
    PERCENTILE,
    RANK,
    RECORD,
    RECORDS,
    REVERSE,
    SCAN_BY,
    SCAN_FROM,
    SCAN_TO,
    SCORE,
    SINCE_US,
    TIER,
    TOP_N,
    UNTIL,
    UNTIL_US,
    WEBHOOK_ID,
    WINDOW_TYPE,
    WINDOWS_PAGE_SIZE,
    Param,
)
from .requests import Field, Request
from .schemas import (
    ENTRIES_SCHEMA,
    HIDE_BODY_SCHEMA,
    KEYED_BODY_SCHEMA,
    METADATA_BODY_SCHEMA,
    NO_BODY_SCHEMA,
    OBJECT_SCHEMA,
    RETENTION_BODY_SCHEMA,
    RULES_BODY_SCHEMA,
    SCORE_BODY_SCHEMA,
    SCORE_SCHEMA,
    WEBHOOK_BODY_SCHEMA,
    WINDOW_END_SCHEMA,
    WINDOW_SCHEMA,
)


@dataclasses.dataclass(frozen=True)
class RestRoute:
    """A resource-style route over one RPC."""

    path: str
    method: str  # GET, POST or DELETE
    rpc: str
    summary: str
    params: tuple[Param, ...]
    build: Callable[[dict[str, Any], Any, Transcoder, Mapping[str, str]], Message]
    answer: Callable[[Message], tuple[int, Any]]
    response_schema: dict[str, Any]
    body_schema: dict[str, Any] | None = None
    body_example: dict[str, Any] | None = None
    events: bool = False  # a Server-Sent Events stream of the answer, sent when it changes
    window_ends: bool = False  # Server-Sent Events of an index's window ends, from the store's log
    watches_rank: bool = False  # events of one record's rank: they take a rank watcher's slot
    # The answer from the response and the route's parameters (a filter or a page of the response).
    answer_values: Callable[[Message, dict[str, Any]], tuple[int, Any]] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.build, Request):
            self.build.check(param.name for param in self.params)

    def respond(self, response: Message, values: dict[str, Any]) -> tuple[int, Any]:
        if self.answer_values is not None:
            return self.answer_values(response, values)
        return self.answer(response)

    def parse(self, path: Mapping[str, str], query: Mapping[str, str]) -> dict[str, Any]:
        known = {p.name for p in self.params if p.where == "query"}
        unknown = sorted(set(query) - known)
        if unknown:
            raise bad(f"unknown query parameter {unknown[0]!r}: {self.path} takes {', '.join(sorted(known)) or 'none'}")
        values: dict[str, Any] = {}
        for param in self.params:
            if param.where == "header":
                continue
            source = path if param.where == "path" else query
            if param.name in source and param.repeated:
                given = query.getlist(param.name) if hasattr(query, "getlist") else [source[param.name]]
                values[param.name] = [param.parse(text, param.name) for text in given]
            elif param.name in source:
                values[param.name] = param.parse(source[param.name], param.name)
            elif param.required:
                raise bad(f"{param.name} is required")
        return values


ROUTES: tuple[RestRoute, ...] = (
    RestRoute(
        "/v1/indexes",
        "GET",
        "ListIndexes",
        "The indexes, with their options and maintenance policies.",
        (),
        Request(pb.ListIndexesRequest),
        answer_as_json,
        {"$ref": "#/components/schemas/ListIndexesResponse"},
    ),
    RestRoute(
        "/v1/indexes/{index}/windows",
        "GET",
        "ListWindows",
        "An index's windows, its latest score timestamp and where it was trimmed.",
        (INDEX,),
        build_list_windows,
        answer_as_json,
        {"$ref": "#/components/schemas/ListWindowsResponse"},
    ),
    RestRoute(
        "/v1/indexes/{index}/scores",
        "POST",
        "AddScore",
        "Submit a score for a record: every window it falls in changes in one transaction.",
        (INDEX, IDEMPOTENCY_KEY),
        build_add_score,
        answer_as_json,
        {"$ref": "#/components/schemas/AddScoreResponse"},
        body_schema=SCORE_BODY_SCHEMA,
        body_example={"pk": "alice", "score": 1200, "timestamp": 1795420000},
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/top",
        "GET",
        "Top",
        "The top n of a window (the best first).",
        (INDEX, WINDOW_TYPE, AT, GROUP, MODE, TOP_N),
        Request(pb.TopRequest, "index", "window", "group", "mode", n=10),
        answer_entries,
        ENTRIES_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/top/events",
        "GET",
        "Top",
        "Server-Sent Events: the top n of a window, sent again whenever it changes.",
        (INDEX, WINDOW_TYPE, AT, GROUP, MODE, TOP_N, INTERVAL),
        Request(pb.TopRequest, "index", "window", "group", "mode", n=10),
        answer_entries,
        ENTRIES_SCHEMA,
        events=True,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/count",
        "GET",
        "Count",
        "How many records have a value in a window.",
        (INDEX, WINDOW_TYPE, AT, GROUP),
        Request(pb.CountRequest, "index", "window", "group"),
        answer_count,
        {
            "type": "object",
            "properties": {"count": {"type": "integer"}, "window": WINDOW_SCHEMA},
            "required": ["count"],
        },
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/records/{pk}/rank",
        "GET",
        "GetRankAndEntry",
        "A record's rank and entry in a window (404 if it has no value there).",
        (INDEX, WINDOW_TYPE, RECORD, AT, GROUP, MODE),
        Request(pb.RankRequest, "index", "pk", "window", "group", "mode"),
        answer_rank_and_entry,
        {"$ref": "#/components/schemas/PlainEntry"},
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/records/{pk}/rank/events",
        "GET",
        "GetRankAndEntry",
        "Server-Sent Events: a record's rank and entry now, then again whenever they change (checked once a "
        "second); entry is null while the record has no value in the window.  As gRPC's WatchRank.",
        (INDEX, WINDOW_TYPE, RECORD, AT, GROUP, MODE),
        Request(pb.RankRequest, "index", "pk", "window", "group", "mode"),
        answer_watched_rank,
        {
            "type": "object",
            "properties": {
                "entry": {"oneOf": [{"$ref": "#/components/schemas/PlainEntry"}, {"type": "null"}]},
                "window": WINDOW_SCHEMA,
            },
            "required": ["entry", "window"],
        },
        events=True,
        watches_rank=True,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/records/{pk}/around",
        "GET",
        "AroundMe",
        "The entries around a record: above it, itself, below it.",
        (INDEX, WINDOW_TYPE, RECORD, AT, GROUP, MODE, ABOVE, BELOW, IF_ABSENT),
        Request(pb.AroundMeRequest, "index", "pk", "window", "group", "mode", "if_absent", above=4, below=4),
        answer_entries,
        ENTRIES_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/page",
        "GET",
        "GetPage",
        "One page of a window's standings, with the page count and the total.",
        (INDEX, WINDOW_TYPE, AT, GROUP, MODE, PAGE, PAGE_SIZE),
        Request(pb.PageRequest, "index", "window", "group", "mode", page=1, size=10),
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/records/{pk}/cohort",
        "GET",
        "GetCohort",
        "Leagues: the record's tier and cohort in the league window (at), its entry and the cohort's entries "
        "ranked within the cohort (a page, or those around the record).",
        (INDEX, RECORD, AT, MODE, PAGE, COHORT_SIZE, COHORT_ABOVE, COHORT_BELOW),
        Request(pb.CohortRequest, "index", "window", "pk", "mode", "size", "above", "below", page=1),
        answer_cohort,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/cohorts/{tier}/{cohort}",
        "GET",
        "GetCohort",
        "Leagues: one cohort of a tier in the league window (at), its entries ranked within the cohort.",
        (INDEX, TIER, COHORT, AT, MODE, PAGE, COHORT_SIZE),
        Request(pb.CohortRequest, "index", "window", "tier", "cohort", "mode", "size", page=1),
        answer_cohort,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/ranks",
        "GET",
        "GetRanks",
        "Several records' entries in a window, in the order asked (null: no value there).",
        (INDEX, WINDOW_TYPE, RECORDS, AT, GROUP, MODE),
        build_ranks,
        answer_ranks,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/friends",
        "GET",
        "FriendsBoard",
        "A board of these records only (friends), best first, with their ranks in the whole window.",
        (INDEX, WINDOW_TYPE, RECORDS, AT, GROUP, MODE),
        build_ranks,
        answer_entries,
        ENTRIES_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/score-for-percentile",
        "GET",
        "ScoreForPercentile",
        "The score at a percentile of a window (100: the best).",
        (INDEX, WINDOW_TYPE, PERCENTILE, AT, GROUP),
        Request(pb.ScoreForPercentileRequest, "index", "window", "group", "percentile"),
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/records/{pk}/percentile",
        "GET",
        "GetPercentile",
        "The share of the window's records behind this one, in percent.",
        (INDEX, WINDOW_TYPE, RECORD, AT, GROUP),
        Request(pb.PercentileRequest, "index", "pk", "window", "group"),
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/records/{pk}/movement",
        "GET",
        "GetMovement",
        "A record's rank in a window and in the window of the type before it, and the places gained.",
        (INDEX, WINDOW_TYPE, RECORD, AT, GROUP, MODE),
        Request(pb.RankRequest, "index", "pk", "window", "group", "mode"),
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/records/{pk}/history",
        "GET",
        "GetRankHistory",
        "A record's entry and rank in each of the latest windows of a type, and the best of them.",
        (INDEX, RECORD, HISTORY_TYPE, UNTIL, HISTORY_COUNT, GROUP, MODE),
        Request(pb.RankHistoryRequest, "index", "pk", Field("window_type", "type"), "count", "group", "mode", "until"),
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/records/{pk}/metadata",
        "GET",
        "GetMetadata",
        "A record's display metadata (404: no such record).",
        (INDEX, RECORD),
        Request(pb.MetadataRequest, "index", "pk"),
        answer_metadata,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/records/{pk}/metadata",
        "POST",
        "SetMetadata",
        "Replace (or with merge, update) a record's display metadata; answers what is stored now.",
        (INDEX, RECORD, IDEMPOTENCY_KEY),
        build_set_metadata,
        answer_metadata,
        OBJECT_SCHEMA,
        body_schema=METADATA_BODY_SCHEMA,
        body_example={"metadata": {"name": "Alice"}, "merge": True},
    ),
    RestRoute(
        "/v1/indexes/{index}/records/{pk}",
        "DELETE",
        "DeleteRecord",
        "Delete a record: its entries leave every window, its metadata goes, in one transaction. Takes an "
        "Idempotency-Key header; existed says whether there was such a record.",
        (INDEX, RECORD, IDEMPOTENCY_KEY),
        Request(pb.DeleteRecordRequest, "index", "pk", "idempotency_key"),
        answer_as_json,
        {"type": "object", "properties": {"existed": {"type": "boolean"}}, "required": ["existed"]},
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}",
        "GET",
        "ListWindows",
        "The index's windows of one type, the latest first, a page at a time (with the page count and total); "
        "a filling window says how far its fill got.",
        (INDEX, WINDOW_TYPE, PAGE, WINDOWS_PAGE_SIZE),
        build_list_windows,
        answer_as_json,
        {
            "type": "object",
            "properties": {
                "windows": {"type": "array", "items": WINDOW_SCHEMA},
                "page": {"type": "integer"},
                "size": {"type": "integer"},
                "total": {"type": "integer"},
                "pages": {"type": "integer"},
            },
            "required": ["windows", "page", "size", "total", "pages"],
        },
        answer_values=answer_windows_of_type,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/scan",
        "GET",
        "Scan",
        "A window's entries in rank order (or, by=value, the all-time window's by score), a bounded page at a "
        "time: follow continuation until it is empty.",
        (INDEX, WINDOW_TYPE, AT, GROUP, MODE, SCAN_BY, SCAN_FROM, SCAN_TO, REVERSE, LIMIT, CONTINUATION),
        build_scan,
        answer_plain,
        {
            "type": "object",
            "properties": {
                "entries": {"type": "array", "items": {"$ref": "#/components/schemas/PlainEntry"}},
                "continuation": {"type": "string", "description": "base64; empty: done"},
            },
            "required": ["entries", "continuation"],
        },
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/groups",
        "GET",
        "ListGroups",
        "The groups holding a value in the window (a grouped index's boards), in key order, a bounded page at "
        "a time: follow continuation until it is empty.",
        (INDEX, WINDOW_TYPE, AT, GROUPS_LIMIT, CONTINUATION),
        Request(pb.ListGroupsRequest, "index", "window", "continuation", limit=100),
        answer_plain,
        {
            "type": "object",
            "properties": {
                "groups": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"group": {"type": "array", "items": {}}}},
                },
                "continuation": {"type": "string", "description": "base64; empty: done"},
                "window": WINDOW_SCHEMA,
            },
            "required": ["groups", "continuation"],
        },
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/rank-for-score",
        "GET",
        "RankForScore",
        "The 0-based rank a record with this score (or score key, with timestamp) would have in the window.",
        (INDEX, WINDOW_TYPE, SCORE, KEY_TIMESTAMP, AT, GROUP),
        Request(pb.RankForScoreRequest, "index", "window", "group", "score", Field("key_timestamp", "timestamp")),
        answer_plain,
        {"type": "object", "properties": {"rank": {"type": "integer"}}, "required": ["rank"]},
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/score-for-rank",
        "GET",
        "ScoreForRank",
        "The score at a 0-based rank of the window (no score: the window has fewer records).",
        (INDEX, WINDOW_TYPE, RANK, AT, GROUP),
        Request(pb.ScoreForRankRequest, "index", "window", "group", "rank"),
        answer_plain,
        {"type": "object", "properties": {"score": SCORE_SCHEMA}},
    ),
    RestRoute(
        "/v1/indexes/{index}/score-trim",
        "POST",
        "ScoreTrim",
        "Of the entries sent, those the index's current windows would use, best first (the Record Layer's "
        "score trim; a read, nothing is written).",
        (INDEX,),
        build_score_trim,
        answer_plain,
        {"type": "object", "properties": {"entries": {"type": "array", "items": OBJECT_SCHEMA}}},
        body_schema={
            "type": "object",
            "properties": {
                "entries": {
                    "type": "array",
                    "maxItems": 1000,
                    "items": {
                        "type": "object",
                        "properties": {
                            "score": SCORE_SCHEMA,
                            "timestamp": {"type": ["integer", "string"]},
                            "context": {"type": "array", "items": {}},
                            "group": {"type": "array", "items": {}},
                        },
                        "required": ["score"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["entries"],
            "additionalProperties": False,
        },
        body_example={"entries": [{"score": 1000, "timestamp": 1795420000}, {"score": 1100, "timestamp": 1795420005}]},
    ),
    RestRoute(
        "/v1/indexes/{index}/records/{pk}/hide",
        "POST",
        "HideRecord",
        "Hide a record from every window at once, keeping its entries (admin); changed: false if it was hidden.",
        (INDEX, RECORD),
        build_hide,
        answer_plain,
        {"$ref": "#/components/schemas/HiddenChangeResponse"},
        body_schema=HIDE_BODY_SCHEMA,
        body_example={"reason": "aimbot"},
    ),
    RestRoute(
        "/v1/indexes/{index}/records/{pk}/restore",
        "POST",
        "RestoreRecord",
        "Put a hidden record back in every window, as if never hidden (admin); changed: false if it was not hidden.",
        (INDEX, RECORD),
        build_restore,
        answer_plain,
        {"$ref": "#/components/schemas/HiddenChangeResponse"},
        body_schema=KEYED_BODY_SCHEMA,
        body_example={},
    ),
    RestRoute(
        "/v1/indexes/{index}/hidden-records",
        "GET",
        "ListHiddenRecords",
        "A page of the hidden records in key order, with who hid each, when and why (admin).",
        (INDEX, LIMIT, CONTINUATION),
        Request(pb.ListHiddenRecordsRequest, "index", "limit", "continuation"),
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/rules",
        "GET",
        "GetScoreRules",
        "The index's score rules: the accepted score range, submissions per record and window or minute.",
        (INDEX,),
        Request(pb.GetScoreRulesRequest, "index"),
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/rules",
        "POST",
        "SetScoreRules",
        "Replace the index's score rules (admin; a rule left out: none); answers them as kept.",
        (INDEX,),
        build_set_rules,
        answer_plain,
        OBJECT_SCHEMA,
        body_schema=RULES_BODY_SCHEMA,
        body_example={"min_score": 0, "max_score": 100000, "max_per_minute": 10},
    ),
    RestRoute(
        "/v1/indexes/{index}/groups/{group}/records",
        "DELETE",
        "DeleteRecords",
        "Delete a group's data from every record (records left with nothing go whole) in bounded batches "
        "(admin): works until done or its deadline; call again while done is false.",
        (INDEX, GROUP_PATH, MAX_RECORDS, CONTINUATION),
        Request(pb.DeleteRecordsRequest, "index", "group", "max_records", "continuation", "idempotency_key"),
        answer_plain,
        {"$ref": "#/components/schemas/DeleteRecordsResponse"},
    ),
    RestRoute(
        "/v1/indexes/{index}/records",
        "DELETE",
        "DeleteRecords",
        "Delete every record of the index (it and its windows stay) in bounded batches (admin): works until "
        "done or its deadline; call again while done is false.",
        (INDEX, MAX_RECORDS, CONTINUATION),
        Request(pb.DeleteRecordsRequest, "index", "max_records", "continuation", "idempotency_key", all_records=True),
        answer_plain,
        {"$ref": "#/components/schemas/DeleteRecordsResponse"},
    ),
    RestRoute(
        "/v1/audit",
        "GET",
        "ListAuditEvents",
        "A page of the audit trail: who did which admin action, when, on which index, with what outcome (admin).",
        (AUDIT_INDEX, AUDIT_ACTION, SINCE_US, UNTIL_US, LIMIT, CONTINUATION, NEWEST_FIRST),
        Request(
            pb.ListAuditEventsRequest,
            "index",
            "action",
            "limit",
            "continuation",
            Field("newest_first", read=lambda text: text == "true"),
            "since_us",
            "until_us",
        ),
        answer_plain,
        {"$ref": "#/components/schemas/ListAuditEventsResponse"},
    ),
    RestRoute(
        "/v1/audit/retention",
        "POST",
        "SetAuditRetention",
        "Keep audit events this many seconds (admin; 0: the default, 90 days); older ones are cleared by maintenance.",
        (),
        build_audit_retention,
        answer_plain,
        {"$ref": "#/components/schemas/SetAuditRetentionResponse"},
        body_schema=RETENTION_BODY_SCHEMA,
        body_example={"retention": 7776000},
    ),
    RestRoute(
        "/v1/indexes/{index}/webhooks",
        "GET",
        "ListWebhooks",
        "The index's webhooks (never their secrets), with their events waiting and the latest failure.",
        (INDEX,),
        Request(pb.ListWebhooksRequest, "index"),
        answer_plain,
        {"$ref": "#/components/schemas/ListWebhooksResponse"},
    ),
    RestRoute(
        "/v1/indexes/{index}/webhooks",
        "POST",
        "AddWebhook",
        "Subscribe a URL to the index's window ends: each ended window is POSTed to it once acknowledged, signed.",
        (INDEX,),
        build_add_webhook,
        answer_plain,
        {"$ref": "#/components/schemas/AddWebhookResponse"},
        body_schema=WEBHOOK_BODY_SCHEMA,
        body_example={"url": "https://example.com/hooks/leaderboard", "window_types": [1], "top": 10},
    ),
    RestRoute(
        "/v1/indexes/{index}/webhooks/{id}",
        "DELETE",
        "DeleteWebhook",
        "Unsubscribe a webhook, dropping its undelivered events.",
        (INDEX, WEBHOOK_ID),
        Request(pb.DeleteWebhookRequest, "index", "id"),
        answer_plain,
        {"$ref": "#/components/schemas/DeleteWebhookResponse"},
    ),
    RestRoute(
        "/v1/indexes/{index}/window-ends/events",
        "GET",
        "WatchWindowEnds",
        "Server-Sent Events: the index's windows as they end (record count and top), each with its cursor as "
        "its `id:`; a client reconnecting with Last-Event-ID (or after=) resumes after it.  As gRPC's "
        "WatchWindowEnds.",
        (INDEX, AFTER, EVENT_TOP),
        Request(pb.WatchWindowEndsRequest, "index", "after", "top"),
        answer_plain,
        WINDOW_END_SCHEMA,
        window_ends=True,
    ),
    RestRoute(
        "/v1/store",
        "GET",
        "GetStoreStatus",
        "The store's format, the server processes on it with their releases, each index's format and the "
        "upgrade of its data under way.",
        (),
        Request(pb.GetStoreStatusRequest),
        answer_plain,
        {"$ref": "#/components/schemas/StoreStatus"},
    ),
    RestRoute(
        "/v1/store/upgrade",
        "POST",
        "UpgradeStore",
        "Raise the store, then every index, to the newest formats the server writes (admin; refused while a live "
        "process runs an older release): works until done or its deadline; call again while done is false.",
        (),
        Request(pb.UpgradeStoreRequest, no_body=True),
        answer_plain,
        {"$ref": "#/components/schemas/UpgradeStoreResponse"},
        body_schema=NO_BODY_SCHEMA,
        body_example={},
    ),
    RestRoute(
        "/v1/indexes/{index}/upgrade",
        "POST",
        "UpgradeIndex",
        "Raise the index to the newest format the server writes, its data rewritten in bounded batches where that "
        "format needs it (admin): works until done or its deadline; call again while done is false.",
        (INDEX, MAX_RECORDS, MAX_BATCHES),
        Request(pb.UpgradeIndexRequest, "index", "max_records", "max_batches", no_body=True),
        answer_plain,
        {"$ref": "#/components/schemas/UpgradeIndexResponse"},
        body_schema=NO_BODY_SCHEMA,
        body_example={},
    ),
)
