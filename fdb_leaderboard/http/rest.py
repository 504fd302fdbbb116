"""Resource-style routes for the players' reads and writes: top, count,
rank, around, pages, scans, ranks of many records, friends, percentiles, rank for a score and
score for a rank, score trims, movement, rank history, metadata, windows of a type, the groups
with scores, the score submission and a record's deletion; and for fair play and operations
(admin, but reading the score rules): hiding and restoring a record, the hidden records, score
rules, deleting a group's or every record, and the audit trail; the store's status (its format,
the server processes' releases, each index's format) and upgrading the store or an index.

Each route builds the request of one RPC from its path, query and body and answers with that
RPC's result in plain JSON, one shape wherever an entry, a window or a score appears
(:func:`plain_message`): key items as JSON values (bytes as ``{"base64": ...}``), scores
and timestamps as numbers (strings beyond 2^53, as every 64-bit integer of the API).  The RPC
runs through :class:`~.transcode.Transcoder`, so validation, errors and status codes are the RPC's.

A record in a path is its primary key: one string (``alice``), or a JSON array for any other
key (``[42]``, ``["eu","alice"]``, URL-encoded); ``group`` takes the same forms.  A window is
its type (0: all time) and ``at``: a timestamp, ``now`` (the default: the server's clock in the
index's timebase, so type 1 of a daily board is today's) or ``latest`` (the index's latest score
timestamp, so simulated or replayed time works too).  Listings name the window they read.

Every write (``POST .../scores``, ``POST .../metadata``, ``DELETE .../records/PK``) takes an
``Idempotency-Key`` header (the POSTs an ``idempotency_key`` field too): a write sent again with
the same key is applied once and answered as the first time.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

import grpc
from google.protobuf.message import Message

from .. import wire
from ..errors import InvalidArgument
from ..proto import service_pb2 as pb
from ..wire import plain_entry, plain_message, plain_window, rpc_json
from .plain import bad, python_item
from .transcode import CallFailed, Transcoder, message_from_dict

# -- key items from the path and query ---------------------------------------------------------------


def items_from_text(text: str, what: str) -> list[pb.Item]:
    """``alice`` or a JSON array of items, as Items."""
    if not text.startswith("["):
        return [pb.Item(string=text)]
    try:
        values = json.loads(text)
    except ValueError as exc:
        raise bad(f"{what} {text!r} is not a JSON array: {exc}") from None
    return items_from_json(values, what)


def items_from_json(values: Any, what: str) -> list[pb.Item]:
    if isinstance(values, str):
        return [pb.Item(string=values)]
    if not isinstance(values, list):
        raise bad(f"{what} must be a string or an array of items, not {values!r}")
    try:
        return wire.items_to_proto([python_item(v, what) for v in values], what)
    except InvalidArgument as exc:  # names ``what``
        raise bad(str(exc)) from None


def answer_plain(response: Message) -> tuple[int, Any]:
    return 200, plain_message(response)


# -- parameters ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Param:
    """A path or query parameter: how it reads and how the OpenAPI document describes it."""

    name: str
    where: str  # "path", "query" or "header" (read by the builder from the headers)
    description: str
    schema: dict[str, Any]
    parse: Callable[[str, str], Any]
    required: bool = False
    repeated: bool = False  # given once or more (``records=alice&records=bob``): a list of values


def parse_uint(text: str, name: str, maximum: int = 2**32 - 1) -> int:
    try:
        value = int(text)
    except ValueError:
        raise bad(f"{name} must be an integer, not {text!r}") from None
    if not 0 <= value <= maximum:
        raise bad(f"{name} must be between 0 and {maximum}, not {value}")
    return value


def parse_text(text: str, name: str) -> str:
    return text


def parse_at(text: str, name: str) -> int | str:
    if text in ("now", "latest"):
        return text
    return parse_timestamp(text, name, "a timestamp (an integer), 'now' or 'latest'")


def parse_timestamp(text: str, name: str, what: str = "a timestamp (an integer)") -> int:
    try:
        value = int(text)
    except ValueError:
        raise bad(f"{name} must be {what}, not {text!r}") from None
    if not -(2**63) <= value < 2**63:
        raise bad(f"{name} {value} is out of the int64 range")
    return value


def parse_uint_64(text: str, name: str) -> int:
    return parse_uint(text, name, 2**64 - 1)


def parse_bool(text: str, name: str) -> bool:
    if text not in ("true", "false"):
        raise bad(f"{name} must be true or false, not {text!r}")
    return text == "true"


def parse_score_text(text: str, name: str) -> pb.Score:
    """``1500``, ``1.5`` (a DOUBLE index's) or ``12,3,95`` (columns) as a Score."""
    try:
        if "," in text:
            return pb.Score(columns=pb.ScoreColumns(values=[int(part) for part in text.split(",")]))
        if any(c in text for c in ".eE") and not text.lstrip("-").isdigit():
            value = float(text)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError(text)
            return pb.Score(double=value)
        return pb.Score(int=int(text))
    except (ValueError, OverflowError):
        raise bad(f"{name} must be an integer, a number or integers separated by commas, not {text!r}") from None


def parse_choice(choices: tuple[str, ...]) -> Callable[[str, str], str]:
    def parse(text: str, name: str) -> str:
        if text not in choices:
            raise bad(f"{name} must be one of {', '.join(choices)}, not {text!r}")
        return text

    return parse


def parse_number(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise bad(f"{name} must be a number, not {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise bad(f"{name} must be a finite number, not {text}")
    return value


def parse_seconds(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise bad(f"{name} must be a number of seconds, not {text!r}") from None
    if not 0.2 <= value <= 60:
        raise bad(f"{name} must be between 0.2 and 60 seconds, not {text}")
    return value


INT32_SCHEMA = {"type": "integer", "minimum": 0, "maximum": 2**32 - 1}
ITEMS_TEXT = 'one string, or a JSON array of items (strings, numbers, booleans, null, {"base64": ...})'

INDEX = Param("index", "path", "The index's name.", {"type": "string"}, parse_text, True)
WINDOW_TYPE = Param("type", "path", "The window type (0: all time).", INT32_SCHEMA, parse_uint, True)
RECORD = Param("pk", "path", f"The record's primary key: {ITEMS_TEXT}.", {"type": "string"}, parse_text, True)
AT = Param(
    "at",
    "query",
    "Which window of the type: the oldest containing this timestamp, 'now' (the default: the server's clock in "
    "the index's timebase, so today's window of a daily type) or 'latest' (the index's latest score timestamp).",
    {"oneOf": [{"type": "integer"}, {"type": "string", "enum": ["now", "latest"]}]},
    parse_at,
)
GROUP = Param("group", "query", f"The group (leaderboard partition): {ITEMS_TEXT}.", {"type": "string"}, parse_text)
MODE = Param(
    "mode",
    "query",
    "ORDINAL (default), COMPETITION (equal scores share a rank, the next skips: 0, 0, 2) or DENSE (equal "
    "scores share a rank, the next follows: 0, 0, 1; for indexes created with dense_ranks).",
    {"type": "string", "enum": list(pb.RankMode.keys())},
    parse_choice(tuple(pb.RankMode.keys())),
)
TOP_N = Param("n", "query", "How many entries (default 10).", INT32_SCHEMA, parse_uint)
ABOVE = Param("above", "query", "Entries above the record (default 4).", INT32_SCHEMA, parse_uint)
BELOW = Param("below", "query", "Entries below the record (default 4).", INT32_SCHEMA, parse_uint)
IF_ABSENT = Param(
    "if_absent",
    "query",
    "Without a value for the record: EMPTY (default), TOP or BOTTOM of the board.",
    {"type": "string", "enum": ["EMPTY", "TOP", "BOTTOM"]},
    parse_choice(("EMPTY", "TOP", "BOTTOM")),
)
PAGE = Param("page", "query", "The page, from 1 (default 1).", INT32_SCHEMA, parse_uint)
PAGE_SIZE = Param("size", "query", "Rows per page, 1-1000 (default 10).", INT32_SCHEMA, parse_uint)
COHORT_SIZE = Param("size", "query", "Rows per page (default 0: the whole cohort).", INT32_SCHEMA, parse_uint)
COHORT_ABOVE = Param(
    "above", "query", "With below: the entries around the record, this many above.", INT32_SCHEMA, parse_uint
)
COHORT_BELOW = Param("below", "query", "With above: this many below the record.", INT32_SCHEMA, parse_uint)
TIER = Param("tier", "path", "The tier, from 0 (the lowest).", INT32_SCHEMA, parse_uint, True)
COHORT = Param("cohort", "path", "The cohort's number within its tier, from 0.", INT32_SCHEMA, parse_uint, True)
RECORDS = Param(
    "records",
    "query",
    "The records: one key each (a string, or a JSON array of items, as in a path): records=alice&records=bob; "
    'or, given once, a JSON array of keys (["alice", "bob"]).',
    {"type": "array", "items": {"type": "string"}},
    parse_text,
    True,
    repeated=True,
)
PERCENTILE = Param(
    "percentile",
    "query",
    "0 (the worst score) to 100 (the best).",
    {"type": "number"},
    lambda t, n: parse_number(t, n),
    True,
)
HISTORY_TYPE = Param(
    "type", "query", "The window type (not 0: all time has one window).", INT32_SCHEMA, parse_uint, True
)
UNTIL = Param(
    "until", "query", "Windows starting at or before this timestamp (default: all).", {"type": "integer"}, parse_at
)
HISTORY_COUNT = Param("count", "query", "The latest 1-100 windows (default 10).", INT32_SCHEMA, parse_uint)
SCORE = Param(
    "score",
    "query",
    "A score: an integer, a number for a DOUBLE index, or integers separated by commas for an index ranking "
    "by columns (12,3,95).",
    {"type": "string"},
    parse_score_text,
    True,
)
KEY_TIMESTAMP = Param(
    "timestamp",
    "query",
    "With score: rank the score key (score, timestamp), as the Record Layer does (records reaching the score "
    "earlier count).",
    {"type": "integer"},
    parse_timestamp,
)
RANK = Param("rank", "query", "The 0-based rank (0: the best).", {"type": "integer", "minimum": 0}, parse_uint_64, True)
SCAN_BY = Param(
    "by",
    "query",
    "rank (default: positions, from the best; any window) or value (score bounds; the all-time window only).",
    {"type": "string", "enum": ["rank", "value"]},
    parse_choice(("rank", "value")),
)
SCAN_FROM = Param(
    "from",
    "query",
    "The first rank (by=rank) or score (by=value) of the scan (default: the start).",
    {"type": "string"},
    parse_text,
)
SCAN_TO = Param(
    "to", "query", "The last rank or score of the scan, included (default: the end).", {"type": "string"}, parse_text
)
REVERSE = Param(
    "reverse",
    "query",
    "true: from the end (the worst rank, or the highest score by value).",
    {"type": "boolean"},
    parse_bool,
)
GROUPS_LIMIT = Param("limit", "query", "Groups per answer, 1-1000 (default 100).", INT32_SCHEMA, parse_uint)
IDEMPOTENCY_KEY = Param(
    "Idempotency-Key",
    "header",
    "A key of the caller's choosing: the write sent again with it (a retry) is applied once and answered as "
    "the first time.",
    {"type": "string"},
    parse_text,
)
WINDOWS_PAGE_SIZE = Param("size", "query", "Windows per page, 1-1000 (default 100).", INT32_SCHEMA, parse_uint)
INTERVAL = Param(
    "interval", "query", "Seconds between checks of the board (0.2-60, default 1).", {"type": "number"}, parse_seconds
)

LIMIT = Param("limit", "query", "Rows per page, 1-1000 (default 100).", INT32_SCHEMA, parse_uint)


def parse_base64(text: str, name: str) -> bytes:
    """Base64 as an answer's JSON gives it, or its URL-safe form (a ``+`` sent unencoded in a
    query arrives as a space)."""
    standard = text.replace(" ", "+").replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except ValueError:
        raise bad(f"{name} must be the base64 text a previous answer gave, not {text!r}") from None


CONTINUATION = Param(
    "continuation",
    "query",
    "Where the previous page stopped: its answer's continuation (base64).",
    {"type": "string"},
    parse_base64,
)
GROUP_PATH = Param("group", "path", f"The group: {ITEMS_TEXT}.", {"type": "string"}, parse_text, True)
MAX_RECORDS = Param("max_records", "query", "Records per transaction, 1-1000 (default 200).", INT32_SCHEMA, parse_uint)
MAX_BATCHES = Param(
    "max_batches",
    "query",
    "Transactions in this call (default 0: until done or its deadline).",
    INT32_SCHEMA,
    parse_uint,
)
TEXT_SCHEMA = {"type": "string"}
AUDIT_INDEX = Param("index", "query", "Only this index's events (a dropped index's too).", TEXT_SCHEMA, parse_text)
AUDIT_ACTION = Param("action", "query", "Only this action's events (e.g. HideRecord).", TEXT_SCHEMA, parse_text)
INTEGER_SCHEMA = {"type": "integer"}
SINCE_US = Param("since_us", "query", "At or after this time (Unix microseconds).", INTEGER_SCHEMA, parse_timestamp)
UNTIL_US = Param("until_us", "query", "Before this time (Unix microseconds).", INTEGER_SCHEMA, parse_timestamp)
NEWEST_FIRST = Param(
    "newest_first", "query", "true: the latest events first.", {"type": "boolean"}, parse_choice(("true", "false"))
)


WEBHOOK_ID = Param("id", "path", "The webhook's id (as AddWebhook answered it).", {"type": "string"}, parse_text, True)
AFTER = Param(
    "after",
    "query",
    "Send the events after this cursor first (an event's `id:`; the Last-Event-ID header says the same). "
    "Default: only events noticed from now on.",
    {"type": "integer", "minimum": 0},
    lambda text, name: parse_uint(text, name, 2**63 - 1),
)
EVENT_TOP = Param(
    "top", "query", "Entries of each window's top sent (default 10, at most 100).", INT32_SCHEMA, parse_uint
)

# -- routes ---------------------------------------------------------------------------------------------

SCORE_SCHEMA = {
    "oneOf": [
        {"type": ["number", "string"], "description": "int64 (or a double for a DOUBLE index)"},
        {
            "type": "array",
            "items": {"type": ["integer", "string"]},
            "description": "one int64 per column, for an index ranking by columns",
        },
    ]
}
ENTRY_SCHEMA = {
    "type": "object",
    "description": "A record's value in a window, as listings show it: key items and the score as plain JSON "
    "values, the 0-based rank, the record's metadata.",
    "properties": {
        "rank": {"type": "integer", "description": "0-based rank in the window (absent from a scan by value)"},
        "pk": {"type": "array", "items": {}},
        "score": SCORE_SCHEMA,
        "timestamp": {"type": ["integer", "string"]},
        "context": {"type": "array", "items": {}},
        "group": {"type": "array", "items": {}},
        "metadata": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "the record's display fields (e.g. name), {} without any",
        },
    },
    "required": ["pk", "score", "timestamp", "context", "group", "metadata"],
}
WINDOW_SCHEMA = {
    "type": "object",
    "description": "the window read: its type and [start, end) in the index's timebase; like every 64-bit "
    "integer of the API, a bound is a number within +-2^53 and a string of digits beyond (so the all-time "
    'window\'s end, 2^63 - 1, is "9223372036854775807")',
    "properties": {
        "type": {"type": "integer"},
        "start": {"type": ["integer", "string"]},
        "end": {"type": ["integer", "string"]},
    },
    "required": ["type", "start", "end"],
}
ENTRIES_SCHEMA = {
    "type": "object",
    "properties": {
        "entries": {"type": "array", "items": {"$ref": "#/components/schemas/PlainEntry"}},
        "window": WINDOW_SCHEMA,
    },
    "required": ["entries"],
}
WINDOW_END_SCHEMA = {
    "type": "object",
    "description": "a window that ended, as noticed: also the body of a webhook's POST",
    "properties": {
        "id": {"type": "string", "description": "stable: a delivery sent again carries the same id"},
        "index": {"type": "string"},
        "window": WINDOW_SCHEMA,
        "count": {"type": ["integer", "string"], "description": "records with a value in the window"},
        "entries": {"type": "array", "items": {"$ref": "#/components/schemas/PlainEntry"}},
        "noticed_at": {"type": ["integer", "string"], "description": "Unix seconds"},
        "cursor": {"type": ["integer", "string"], "description": "its place in the index's event log"},
    },
    "required": ["id", "index", "window", "count", "entries", "noticed_at", "cursor"],
}
METADATA_BODY_SCHEMA = {
    "type": "object",
    "properties": {
        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
        "merge": {"type": "boolean", "description": "update these fields only (default: replace all)"},
        "remove": {"type": "array", "items": {"type": "string"}, "description": "with merge: fields to drop"},
        "idempotency_key": {"type": "string"},
    },
    "additionalProperties": False,
}
OBJECT_SCHEMA = {"type": "object"}
_KEY_FIELD = {"type": "string", "description": "as the Idempotency-Key header: a request sent again is applied once"}
KEYED_BODY_SCHEMA = {"type": "object", "properties": {"idempotency_key": _KEY_FIELD}, "additionalProperties": False}
HIDE_BODY_SCHEMA = {
    "type": "object",
    "properties": {"reason": {"type": "string", "description": "why (listed with it)"}, "idempotency_key": _KEY_FIELD},
    "additionalProperties": False,
}
_RULE_SCORE = {"oneOf": [{"type": "number"}, {"type": "string"}, {"type": "array"}, {"type": "null"}]}
RULES_BODY_SCHEMA = {
    "type": "object",
    "properties": {
        "min_score": {**_RULE_SCORE, "description": "the lowest accepted score (absent or null: none)"},
        "max_score": {**_RULE_SCORE, "description": "the highest accepted score (absent or null: none)"},
        "max_per_window": {"type": "integer", "minimum": 0, "description": "per record and window (0: no limit)"},
        "max_per_minute": {"type": "integer", "minimum": 0, "description": "per record and minute (0: no limit)"},
    },
    "additionalProperties": False,
}
RETENTION_BODY_SCHEMA = {
    "type": "object",
    "properties": {"retention": {"type": "integer", "minimum": 0, "description": "seconds (0: the default, 90 days)"}},
    "required": ["retention"],
    "additionalProperties": False,
}
SCORE_BODY_SCHEMA = {
    "type": "object",
    "properties": {
        "pk": {"description": f"The record's primary key: {ITEMS_TEXT}.", "type": ["string", "array"]},
        "score": SCORE_SCHEMA,
        "timestamp": {
            "type": ["integer", "string"],
            "description": "when the score was made, in the index's timebase; default: now (the server's clock "
            "when the write is applied)",
        },
        "context": {"type": "array", "items": {}},
        "group": {"type": "array", "items": {}},
        "metadata": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "display fields merged into the record's metadata in the same transaction",
        },
        "idempotency_key": {
            "type": "string",
            "description": "as the Idempotency-Key header: a score sent again with it is applied once",
        },
    },
    "required": ["pk", "score"],
    "additionalProperties": False,
}


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


def answer_cohort(response: Message) -> tuple[int, Any]:
    if not response.HasField("tier"):
        return 404, {"code": "NOT_FOUND", "message": "the record has joined no cohort in this window"}
    return answer_plain(response)


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


def answer_windows_of_type(response: Message, values: dict[str, Any]) -> tuple[int, Any]:
    """The index's windows of one type, the latest first, a page of them."""
    page, size = values.get("page", 1), values.get("size", 100)
    # The request asked for this type only (ListWindowsRequest.window_type).
    found = sorted(response.windows, key=lambda w: w.start, reverse=True)  # type: ignore[attr-defined]
    rows = []
    for window in found[(page - 1) * size : page * size]:
        row: dict[str, Any] = {**plain_window(window), "filling": window.filling}
        if window.filling:
            row["records_processed"] = window.records_processed
            row["entries_ranked"] = window.entries_ranked
            if window.HasField("records_total"):
                row["records_total"] = window.records_total
        rows.append(row)
    pages = max(1, -(-len(found) // size))
    return 200, {"windows": rows, "page": page, "size": size, "total": len(found), "pages": pages}


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


NO_BODY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


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


def answer_entries(response: Message) -> tuple[int, Any]:
    answer: dict[str, Any] = {"entries": [plain_entry(e) for e in response.entries]}  # type: ignore[attr-defined]
    if response.HasField("window"):
        answer["window"] = plain_window(response.window)  # type: ignore[attr-defined]
    return 200, answer


def answer_rank_and_entry(response: Message) -> tuple[int, Any]:
    if not response.HasField("entry"):
        return 404, {"code": "NOT_FOUND", "message": "the record has no value in this window"}
    return 200, {**plain_entry(response.entry), "window": plain_window(response.window)}  # type: ignore[attr-defined]


def answer_watched_rank(response: Message) -> tuple[int, Any]:
    """A watched record's rank and entry: ``entry`` is null while it has no value in the window."""
    entry = plain_entry(response.entry) if response.HasField("entry") else None  # type: ignore[attr-defined]
    return 200, {"entry": entry, "window": plain_window(response.window)}  # type: ignore[attr-defined]


def answer_count(response: Message) -> tuple[int, Any]:
    answer: dict[str, Any] = {"count": response.count}  # type: ignore[attr-defined]
    if response.HasField("window"):
        answer["window"] = plain_window(response.window)  # type: ignore[attr-defined]
    return 200, answer


def answer_metadata(response: Message) -> tuple[int, Any]:
    if not response.exists:  # type: ignore[attr-defined]
        return 404, {"code": "NOT_FOUND", "message": "no such record"}
    return 200, {"metadata": dict(sorted(response.metadata.items()))}  # type: ignore[attr-defined]


def answer_ranks(response: Message) -> tuple[int, Any]:
    """Each record asked, in order: its entry, or null without a value in the window."""
    slots = response.ranks  # type: ignore[attr-defined]
    return 200, {"entries": [plain_entry(s.entry) if s.HasField("entry") else None for s in slots]}


def answer_as_json(response: Message) -> tuple[int, Any]:
    return 200, rpc_json(response)


WEBHOOK_BODY_SCHEMA = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "where each ended window is POSTed (http:// or https://)"},
        "secret": {
            "type": "string",
            "description": "the HMAC-SHA256 key of the signature header, 16-256 characters "
            "(absent: the server makes one up and answers it, this once)",
        },
        "window_types": {"type": "array", "items": {"type": "integer"}, "description": "absent: every type"},
        "top": {"type": "integer", "description": "entries of the window's top sent (default 10, at most 100)"},
    },
    "required": ["url"],
    "additionalProperties": False,
}


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


ROUTES: tuple[RestRoute, ...] = (
    RestRoute(
        "/v1/indexes",
        "GET",
        "ListIndexes",
        "The indexes, with their options and maintenance policies.",
        (),
        build_list_indexes,
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
        build_top,
        answer_entries,
        ENTRIES_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/top/events",
        "GET",
        "Top",
        "Server-Sent Events: the top n of a window, sent again whenever it changes.",
        (INDEX, WINDOW_TYPE, AT, GROUP, MODE, TOP_N, INTERVAL),
        build_top,
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
        build_count,
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
        build_rank,
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
        build_rank,
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
        build_around,
        answer_entries,
        ENTRIES_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/page",
        "GET",
        "GetPage",
        "One page of a window's standings, with the page count and the total.",
        (INDEX, WINDOW_TYPE, AT, GROUP, MODE, PAGE, PAGE_SIZE),
        build_page,
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
        build_cohort,
        answer_cohort,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/cohorts/{tier}/{cohort}",
        "GET",
        "GetCohort",
        "Leagues: one cohort of a tier in the league window (at), its entries ranked within the cohort.",
        (INDEX, TIER, COHORT, AT, MODE, PAGE, COHORT_SIZE),
        build_cohort,
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
        build_score_for_percentile,
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/records/{pk}/percentile",
        "GET",
        "GetPercentile",
        "The share of the window's records behind this one, in percent.",
        (INDEX, WINDOW_TYPE, RECORD, AT, GROUP),
        build_percentile,
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/records/{pk}/movement",
        "GET",
        "GetMovement",
        "A record's rank in a window and in the window of the type before it, and the places gained.",
        (INDEX, WINDOW_TYPE, RECORD, AT, GROUP, MODE),
        build_rank,
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/records/{pk}/history",
        "GET",
        "GetRankHistory",
        "A record's entry and rank in each of the latest windows of a type, and the best of them.",
        (INDEX, RECORD, HISTORY_TYPE, UNTIL, HISTORY_COUNT, GROUP, MODE),
        build_history,
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/records/{pk}/metadata",
        "GET",
        "GetMetadata",
        "A record's display metadata (404: no such record).",
        (INDEX, RECORD),
        build_metadata,
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
        build_delete_record,
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
        build_groups,
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
        build_rank_for_score,
        answer_plain,
        {"type": "object", "properties": {"rank": {"type": "integer"}}, "required": ["rank"]},
    ),
    RestRoute(
        "/v1/indexes/{index}/windows/{type}/score-for-rank",
        "GET",
        "ScoreForRank",
        "The score at a 0-based rank of the window (no score: the window has fewer records).",
        (INDEX, WINDOW_TYPE, RANK, AT, GROUP),
        build_score_for_rank,
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
        build_hidden_records,
        answer_plain,
        OBJECT_SCHEMA,
    ),
    RestRoute(
        "/v1/indexes/{index}/rules",
        "GET",
        "GetScoreRules",
        "The index's score rules: the accepted score range, submissions per record and window or minute.",
        (INDEX,),
        build_get_rules,
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
        build_delete_group,
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
        build_delete_all,
        answer_plain,
        {"$ref": "#/components/schemas/DeleteRecordsResponse"},
    ),
    RestRoute(
        "/v1/audit",
        "GET",
        "ListAuditEvents",
        "A page of the audit trail: who did which admin action, when, on which index, with what outcome (admin).",
        (AUDIT_INDEX, AUDIT_ACTION, SINCE_US, UNTIL_US, LIMIT, CONTINUATION, NEWEST_FIRST),
        build_audit,
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
        build_list_webhooks,
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
        build_delete_webhook,
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
        build_window_ends,
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
        build_store_status,
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
        build_upgrade_store,
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
        build_upgrade_index,
        answer_plain,
        {"$ref": "#/components/schemas/UpgradeIndexResponse"},
        body_schema=NO_BODY_SCHEMA,
        body_example={},
    ),
)
