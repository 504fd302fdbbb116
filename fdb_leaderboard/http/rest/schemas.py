"""The JSON schemas of the REST routes' answers and bodies, as the OpenAPI document gives them."""

from __future__ import annotations

from typing import Any

from .parameters import ITEMS_TEXT

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

NO_BODY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

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
