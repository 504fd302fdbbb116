"""The REST routes' requests described, not written: :class:`Request` fills an RPC's request from a
route's values field by field (the window from ``type`` and ``at``, the group, the rank mode, keys as
items, the Idempotency-Key header), and is the builder of every route that maps straight onto one."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import grpc
from google.protobuf.message import Message

from ...proto import service_pb2 as pb
from ..plain import bad
from ..transcode import CallFailed, Transcoder
from .parameters import items_from_text
from .schemas import NO_BODY_SCHEMA

IDEMPOTENCY_HEADER = "idempotency-key"


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


def group_items(values: dict[str, Any]) -> list[pb.Item]:
    """The route's ``group`` as Items (none given: the ungrouped board)."""
    return items_from_text(values["group"], "group") if "group" in values else []


def rank_mode(values: dict[str, Any]) -> int:
    return pb.RankMode.Value(values.get("mode", "ORDINAL"))


def idempotency_key(body: dict[str, Any], headers: Mapping[str, str]) -> str:
    """The write's idempotency key: the ``Idempotency-Key`` header or the body's field ("": none)."""
    header, field = headers.get(IDEMPOTENCY_HEADER, ""), body.get("idempotency_key", "")
    if not isinstance(field, str):
        raise bad(f"idempotency_key must be a string, not {field!r}")
    if header and field and header != field:
        raise bad("the Idempotency-Key header and the idempotency_key field differ: send one")
    return header or field


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


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of a request, copied from the route's value of that name (or of ``value``): read by
    ``read`` if given; ``default`` where the route has no such value (None: the field stays unset).
    With ``fill``, made from all the route's values and its headers instead."""

    name: str
    value: str = ""
    default: Any = None
    read: Callable[[Any], Any] | None = None
    fill: Callable[[dict[str, Any], Transcoder, Mapping[str, str]], Any] | None = None

    def of(self, values: dict[str, Any], transcoder: Transcoder, headers: Mapping[str, str]) -> Any:
        if self.fill is not None:
            return self.fill(values, transcoder, headers)
        given = self.value or self.name
        if given not in values:
            return self.default
        return self.read(values[given]) if self.read is not None else values[given]


# The fields most routes share, named by a string in a Request.
SHARED_FIELDS: dict[str, Field] = {
    "pk": Field("pk", read=lambda text: items_from_text(text, "pk")),
    "window": Field("window", fill=selector),
    "group": Field("group", read=lambda text: items_from_text(text, "group")),
    "mode": Field("mode", read=pb.RankMode.Value),
    "if_absent": Field("if_absent", read=pb.IfAbsent.Value),
    "idempotency_key": Field("idempotency_key", fill=lambda values, transcoder, headers: idempotency_key({}, headers)),
}


class Request:
    """A route's request: the RPC's request message, its fields filled in the order given (a field
    named by a string: one of :data:`SHARED_FIELDS`, or the route value of that name copied), then
    ``defaults``: a field's value where the route has no value of its name (``n=10``), or always where
    the route takes no such parameter (``all_records=True``).  ``no_body``: a POST whose body, if
    any, is an empty object."""

    def __init__(self, message: type[Message], *fields: str | Field, no_body: bool = False, **defaults: Any) -> None:
        self.message = message
        self.fields = tuple(
            field if isinstance(field, Field) else SHARED_FIELDS.get(field, Field(field)) for field in fields
        ) + tuple(Field(name, default=value) for name, value in defaults.items())
        self.no_body = no_body
        unknown = [field.name for field in self.fields if field.name not in message.DESCRIPTOR.fields_by_name]
        if unknown:
            raise ValueError(f"{message.__name__} has no field {unknown[0]!r}")

    def check(self, params: Iterable[str]) -> None:
        """Refuse a description copying a value the route does not take (its field would never be set)."""
        taken = set(params)
        for field in self.fields:
            if field.fill is None and field.default is None and (field.value or field.name) not in taken:
                raise ValueError(
                    f"{self.message.__name__}.{field.name} copies {field.value or field.name!r}, "
                    f"which the route does not take (it takes {', '.join(sorted(taken)) or 'nothing'})"
                )

    def __call__(
        self, values: dict[str, Any], body: Any, transcoder: Transcoder, headers: Mapping[str, str]
    ) -> Message:
        if self.no_body:
            body_object(body, NO_BODY_SCHEMA, "{}")
        filled = {}
        for field in self.fields:  # in order: the first value refused is the one named
            value = field.of(values, transcoder, headers)
            if value is not None:
                filled[field.name] = value
        return self.message(**filled)

    def __repr__(self) -> str:
        return f"Request({self.message.__name__}, {', '.join(field.name for field in self.fields)})"
