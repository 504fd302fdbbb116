"""The REST routes' path, query and header parameters: :class:`Param`, how each kind of value reads
(``parse_*``: integers, timestamps, scores, choices, base64, keys as items) and the parameters the routes take."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable
from typing import Any

from ... import wire
from ...errors import InvalidArgument
from ...proto import service_pb2 as pb
from ..plain import bad, python_item


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
