"""The OpenAPI 3.1 document of the HTTP API, generated from the service's protobuf descriptors
(every RPC and message) and the REST routes' declarations, so it cannot drift from what is
served (``tests/http/test_json_api.py`` checks both ways, and runs the examples).  Operations, schemas
and fields are described with the proto's comments (``proto/comments.py``, which
tools/dev/gen_protos.py writes); a request or answer message without a comment of its own is
described by the RPCs that take or give it."""

from __future__ import annotations

import itertools
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from ..proto.comments import COMMENTS
from .rest import ENTRY_SCHEMA, RestRoute
from .transcode import HTTP_STATUS, SERVICE, Rpc

SERVICE_NAME = SERVICE.full_name

_SCHEMAS = "#/components/schemas/"

INT64 = {"oneOf": [{"type": "integer"}, {"type": "string", "pattern": "^-?[0-9]+$"}], "format": "int64"}
UINT64 = {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": "^[0-9]+$"}], "format": "uint64"}
_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_INT64: INT64,
    FieldDescriptor.TYPE_SINT64: INT64,
    FieldDescriptor.TYPE_SFIXED64: INT64,
    FieldDescriptor.TYPE_UINT64: UINT64,
    FieldDescriptor.TYPE_FIXED64: UINT64,
    FieldDescriptor.TYPE_INT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_SINT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_SFIXED32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_UINT32: {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
    FieldDescriptor.TYPE_FIXED32: {"type": "integer", "minimum": 0, "maximum": 2**32 - 1},
    FieldDescriptor.TYPE_DOUBLE: {"type": "number"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "contentEncoding": "base64"},
}

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every error's answer: the gRPC status code and a message (a score rule's refusal adds rule and "
    "retry_after).",
    "properties": {
        "code": {"type": "string", "enum": [code.name for code in HTTP_STATUS], "description": "the gRPC status code"},
        "message": {"type": "string"},
    },
    "required": ["code", "message"],
}

# Requests run in this order by the test against a fresh server: each must succeed.
EXAMPLES: dict[str, dict[str, Any]] = {
    "CreateIndex": {"name": "game", "options": {"high_score_first": True}},
    "UpdateWindows": {
        "index": "game",
        "update_timestamp": 1795420000,
        "high_score_first": True,
        "all_time": True,
        "specs": [{"type": 1, "base": 1795388400, "increment": 86400, "duration": 86400, "count": 7}],
    },
    "AddScore": {
        "index": "game",
        "pk": [{"string": "alice"}],
        "entry": {"score": {"int": 1200}, "timestamp": 1795420000},
    },
    "Top": {"index": "game", "window": {"type": 1, "timestamp": 1795420000}, "n": 10},
    "GetRank": {"index": "game", "pk": [{"string": "alice"}], "window": {"type": 0}},
    "AroundMe": {"index": "game", "pk": [{"string": "alice"}], "window": {"type": 0}, "above": 2, "below": 2},
    "Count": {"index": "game", "window": {"type": 1, "timestamp": 1795420000}},
    "Scan": {"index": "game", "type": "BY_RANK", "window": {"type": 0}, "low": {"int": 0}, "limit": 100},
}


# Key items and scores in the one JSON shape (plain.py): answers use it, requests may use it or
# protobuf's typed form (the message's own schema, added beside these).
PLAIN_SCHEMAS: dict[str, dict[str, Any]] = {
    "Item": {
        "description": "A key item as a plain JSON value: a string, a number (an integer beyond +-2^53 as a string "
        'of digits), true/false, null, or {"base64": ...} for bytes. Requests may also give protobuf\'s typed '
        'form ({"string": "alice"}, {"int": 42}).',
        "anyOf": [
            {"type": ["string", "number", "boolean", "null"]},
            {
                "type": "object",
                "properties": {"base64": {"type": "string", "contentEncoding": "base64"}},
                "required": ["base64"],
                "additionalProperties": False,
            },
        ],
    },
    "Score": {
        "description": "A score: a number (an int64 beyond +-2^53 as a string of digits; a double for a DOUBLE "
        "index), or an array of integers for an index ranking by columns. Requests may also give protobuf's "
        'typed form ({"int": 1700}, {"columns": {"values": [12, 3]}}).',
        "anyOf": [{"type": ["number", "string"]}, {"type": "array", "items": INT64}],
    },
}


def _is_map(field: FieldDescriptor) -> bool:
    return field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry


def _field_schema(field: FieldDescriptor) -> dict[str, Any]:
    """A singular field's schema (a map's value, too)."""
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return {"$ref": _SCHEMAS + message_name(field.message_type)}
    if field.type == FieldDescriptor.TYPE_ENUM:
        return {"type": "string", "enum": [v.name for v in field.enum_type.values]}
    return dict(_SCALARS[field.type])


def message_schema(message: Descriptor, description: str = "") -> dict[str, Any]:
    """A message's schema, described by its comment (else ``description``), each field by its own."""
    properties = {}
    for field in message.fields:
        if _is_map(field):  # JSON maps are objects: keys are strings, values the value field's type
            value = field.message_type.fields_by_name["value"]
            properties[field.name] = {"type": "object", "additionalProperties": _field_schema(value)}
            continue
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            schema: dict[str, Any] = {"$ref": _SCHEMAS + message_name(field.message_type)}
        elif field.type == FieldDescriptor.TYPE_ENUM:
            schema = {"type": "string", "enum": [v.name for v in field.enum_type.values]}
        else:
            schema = dict(_SCALARS[field.type])
        is_repeated = getattr(field, "is_repeated", None)
        if is_repeated if is_repeated is not None else field.label == FieldDescriptor.LABEL_REPEATED:
            schema = {"type": "array", "items": schema}
        if field.full_name in COMMENTS:
            schema = {**schema, "description": COMMENTS[field.full_name]}
        properties[field.name] = schema
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if COMMENTS.get(message.full_name) or description:
        out["description"] = COMMENTS.get(message.full_name) or description
    # A oneof of several fields (not a proto3 `optional`) takes at most one of them.
    exclusive = [
        {"not": {"anyOf": [{"required": [a.name, b.name]} for a, b in itertools.combinations(oneof.fields, 2)]}}
        for oneof in message.oneofs
        if len(oneof.fields) > 1
    ]
    if exclusive:
        out["allOf"] = exclusive
    return out


def message_name(message: Descriptor) -> str:
    return message.name


def _messages(rpcs: list[Rpc]) -> dict[str, Descriptor]:
    """Every message the RPCs use, by name."""
    found: dict[str, Descriptor] = {}
    pending = [m for rpc in rpcs for m in (rpc.descriptor.input_type, rpc.descriptor.output_type)]
    while pending:
        message = pending.pop()
        name = message_name(message)
        if name in found:
            assert found[name].full_name == message.full_name, f"two messages named {name}"
            continue
        found[name] = message
        for field in message.fields:
            if _is_map(field):
                field = field.message_type.fields_by_name["value"]
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                pending.append(field.message_type)
    return dict(sorted(found.items()))


def rpc_comment(rpc: Rpc) -> str:
    return COMMENTS.get(rpc.descriptor.full_name, "")


def _usage(rpcs: list[Rpc]) -> dict[str, str]:
    """A description of each request and answer message by the RPCs that take or give it."""
    uses: dict[tuple[str, str], list[Rpc]] = {}
    for rpc in rpcs:
        uses.setdefault((rpc.descriptor.input_type.full_name, "request"), []).append(rpc)
        uses.setdefault((rpc.descriptor.output_type.full_name, "answer"), []).append(rpc)
    described: dict[str, list[str]] = {}
    for (name, role), users in uses.items():
        if len(users) == 1:
            text = f"The {role} of {users[0].name}: {rpc_comment(users[0])}"
        else:
            names = [rpc.name for rpc in users]
            text = f"The {role} of {', '.join(names[:-1])} and {names[-1]}."
        described.setdefault(name, []).append(text)
    return {name: " ".join(texts) for name, texts in described.items()}


def _error_responses() -> dict[str, Any]:
    mapping = ", ".join(f"{code.name} {status}" for code, status in HTTP_STATUS.items() if status != 200)
    return {
        "default": {
            "description": f"An error: the gRPC status code and message, with the HTTP status {mapping}. "
            "A POST from another site (its Origin) is refused with 403, one whose body is not JSON (or NDJSON "
            "for a stream) by its Content-Type with 415. A path the server does not have is NOT_FOUND (404), "
            "a method its path does not take UNIMPLEMENTED (405, with Allow), in this same shape.",
            "content": {"application/json": {"schema": {"$ref": _SCHEMAS + "Error"}}},
        }
    }


def _rpc_operation(rpc: Rpc) -> dict[str, Any]:
    request_schema = {"$ref": _SCHEMAS + message_name(rpc.descriptor.input_type)}
    if rpc.client_streaming:
        body = {
            "description": f"NDJSON: one {rpc.descriptor.input_type.name} per line, read as the server goes.",
            "content": {"application/x-ndjson": {"schema": request_schema}},
            "required": True,
        }
    else:
        content: dict[str, Any] = {"schema": request_schema}
        if rpc.name in EXAMPLES:
            content["example"] = EXAMPLES[rpc.name]
        body = {"content": {"application/json": content}, "required": False}
    return {
        "operationId": rpc.name,
        "summary": rpc_comment(rpc) or f"The {rpc.name} RPC.",
        "description": f"The {rpc.name} RPC of {rpc.descriptor.containing_service.full_name} over HTTP: "
        f"{rpc_comment(rpc) or 'see the proto.'} The request message is the body as JSON; the answer is "
        "in the API's one JSON shape.",
        "tags": ["rpc"],
        "requestBody": body,
        "responses": {
            "200": {
                "description": "OK",
                "content": {
                    "application/json": {"schema": {"$ref": _SCHEMAS + message_name(rpc.descriptor.output_type)}}
                },
            },
            **_error_responses(),
        },
    }


def _rest_operation(route: RestRoute) -> dict[str, Any]:
    words = route.path.strip("/").replace("{", "").replace("}", "").split("/")
    operation: dict[str, Any] = {
        "operationId": "_".join([route.method.lower(), *words]),
        "summary": route.summary,
        "description": f"Answered by the {route.rpc} RPC: {COMMENTS.get(f'{SERVICE_NAME}.{route.rpc}', '')}".strip(),
        "tags": ["rest"],
        "parameters": [
            {
                "name": p.name,
                "in": p.where,
                "required": p.required or p.where == "path",
                "description": p.description,
                "schema": p.schema,
            }
            for p in route.params
        ],
    }
    if route.body_schema is not None:
        content: dict[str, Any] = {"schema": route.body_schema}
        if route.body_example is not None:
            content["example"] = route.body_example
        operation["requestBody"] = {"required": True, "content": {"application/json": content}}
    media = "text/event-stream" if route.events else "application/json"
    description = "OK" if not route.events else "A stream of events; each `data:` line is the answer as JSON."
    operation["responses"] = {
        "200": {"description": description, "content": {media: {"schema": route.response_schema}}},
        **_error_responses(),
    }
    return operation


def document(rpcs: list[Rpc], routes: tuple[RestRoute, ...], with_metrics: bool) -> dict[str, Any]:
    """The OpenAPI document of everything the application serves."""
    paths: dict[str, dict[str, Any]] = {
        "/": {
            "get": {
                "operationId": "page",
                "description": "The page: pick an index, a board, a period and a group; the top updates live.",
                "summary": "The live leaderboard page.",
                "tags": ["page"],
                "responses": {"200": {"description": "HTML", "content": {"text/html": {}}}},
            }
        },
        "/static/{path}": {
            "get": {
                "operationId": "static",
                "description": "The files the page loads (HTML, JavaScript, CSS, the icon).",
                "summary": "The page's scripts and style sheet.",
                "tags": ["page"],
                "parameters": [{"name": "path", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "a file"}, "404": {"description": "no such file"}},
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "description": "This OpenAPI 3.1 document, generated from the service's descriptors and the routes.",
                "summary": "This document.",
                "tags": ["meta"],
                "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {}}}},
            }
        },
        "/docs": {
            "get": {
                "operationId": "docs",
                "description": "The API's documentation as a page, rendered from /openapi.json by the server.",
                "summary": "This document as a page, rendered in the browser (works offline).",
                "tags": ["meta"],
                "responses": {"200": {"description": "HTML", "content": {"text/html": {}}}},
            }
        },
        "/healthz": {
            "get": {
                "operationId": "healthz",
                "description": "Answers while the process runs, whatever the store does: for a liveness check.",
                "summary": "Liveness: the process answers (whatever the store does).",
                "tags": ["meta"],
                "responses": {"200": {"description": '{"status": "SERVING"}', "content": {"application/json": {}}}},
            }
        },
        "/readyz": {
            "get": {
                "operationId": "readyz",
                "description": "200 once a read of the store returns within 2 s, else 503: for a readiness check.",
                "summary": "Readiness: the store answered a read within 2 s.",
                "tags": ["meta"],
                "responses": {
                    "200": {"description": '{"status": "SERVING"}', "content": {"application/json": {}}},
                    "503": {
                        "description": "the store did not answer in time or failed, or the server is stopping",
                        "content": {"application/json": {"schema": {"$ref": _SCHEMAS + "Error"}}},
                    },
                },
            }
        },
    }
    if with_metrics:
        paths["/metrics"] = {
            "get": {
                "operationId": "metrics",
                "description": "Calls, latencies, store transactions, windows, fills, the process (Prometheus text).",
                "summary": "Prometheus metrics of the server and its process.",
                "tags": ["meta"],
                "responses": {"200": {"description": "Prometheus text format", "content": {"text/plain": {}}}},
            }
        }
    for rpc in rpcs:
        paths[rpc.path] = {"post": _rpc_operation(rpc)}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _rest_operation(route)
    usage = _usage(rpcs)
    schemas = {
        name: message_schema(message, usage.get(message.full_name, "")) for name, message in _messages(rpcs).items()
    }
    for name, plain in PLAIN_SCHEMAS.items():  # the one shape (answers), typed also read (requests)
        if name in schemas:
            schemas[name] = {"description": plain["description"], "anyOf": [*plain["anyOf"], schemas[name]]}
    schemas["Error"] = ERROR_SCHEMA
    schemas["PlainEntry"] = ENTRY_SCHEMA
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "fdb-leaderboard",
            "version": "v1",
            "description": "Time-windowed leaderboards with exact ranks. "
            "Every RPC of the gRPC service is `POST /v1/<Method>` with its request message as JSON "
            "(field names as in the proto); the REST routes answer everyday reads and writes. Every answer uses "
            'one JSON shape: a key item is a plain JSON value ("alice", 42; bytes as {"base64": ...}), '
            "a score a number (an array for columns), 64-bit integers numbers within +-2^53 and strings of "
            'digits beyond; requests may use it or protobuf\'s typed form ({"string": "alice"}, '
            '{"int": 1700}).',
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A token of the server's --tokens file; its role (read, write, admin) must "
                    "cover the call. Without tokens configured, no token is needed.",
                }
            },
        },
        # A token where the server has tokens, none otherwise.
        "security": [{"bearer": []}, {}],
    }
