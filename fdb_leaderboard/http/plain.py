"""The API's one JSON shape: a key item as a plain JSON value (``"alice"``, ``42``,
``true``, ``null``, ``{"base64": ...}``), a score as a number (an array of numbers for a score of
columns), a window as ``{type, start, end}``, an entry as the listings show it; every 64-bit
integer a number within +-2^53 and a string of digits beyond.  The REST routes and the RPC
mapping (``POST /v1/<Method>``) answer in it; the RPC mapping also reads it (and protobuf's
typed form, ``{"string": "alice"}``, ``{"int": 1700}``) in requests, :func:`typed_json`.

The shape's writers (``plain_message``, ``rpc_json``, ``plain_entry``, ...) live in
:mod:`fdb_leaderboard.wire`: the service writes a window-end webhook's body with them too, and it
may not import this door.  This module reads the shape back.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from typing import Any

import grpc
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from ..proto import service_pb2 as pb
from ..service.status import cap_message
from .transcode import CallFailed, message_from_dict


def bad(message: str) -> CallFailed:
    return CallFailed(grpc.StatusCode.INVALID_ARGUMENT, message)


def python_item(value: Any, what: str) -> object:
    """A plain JSON value as a key item (a 64-bit integer may come as a string of digits in
    ``{"int": "..."}``)."""
    if isinstance(value, dict):
        if set(value) == {"base64"} and isinstance(value["base64"], str):
            try:
                return base64.b64decode(value["base64"], validate=True)
            except ValueError:
                raise bad(f"{what}: {value['base64']!r} is not base64") from None
        if set(value) == {"int"}:
            try:
                return int(value["int"])
            except (TypeError, ValueError):
                raise bad(f"{what}: {value['int']!r} is not an integer") from None
        raise bad(f'{what}: an object item must be {{"base64": ...}} or {{"int": ...}}, not {value!r}')
    if isinstance(value, (list,)):
        raise bad(f"{what}: a key item cannot be a list")
    return value


# -- the one shape read back (requests of the RPC mapping) ------------------------------------------

_ITEM, _SCORE = pb.Item.DESCRIPTOR.full_name, pb.Score.DESCRIPTOR.full_name


def typed_json(value: Any, message: Descriptor) -> Any:
    """A request's JSON with its key items and scores in protobuf's typed form, for its parser:
    plain values (``"alice"``, ``1700``, ``[12, 3]``) become ``{"string": "alice"}``,
    ``{"int": 1700}``, ``{"columns": {"values": [12, 3]}}``; typed ones are kept.  Anything
    else is left for the parser to judge."""
    if not isinstance(value, dict) or not _holds_plain(message):
        return value
    fields = _fields_by_json_name(message)
    out = {}
    for key, item in value.items():
        field = fields.get(key)
        if field is None or field.message_type is None or item is None:
            out[key] = item
            continue
        kind = field.message_type
        if kind.GetOptions().map_entry:
            value_type = kind.fields_by_name["value"].message_type
            if value_type is not None and isinstance(item, dict):
                item = {k: _typed_value(v, value_type) for k, v in item.items()}
            out[key] = item
        elif field.is_repeated and isinstance(item, list):
            out[key] = [_typed_value(v, kind) for v in item]
        else:
            out[key] = _typed_value(item, kind)
    return out


def _typed_value(value: Any, message: Descriptor) -> Any:
    name = message.full_name
    if name == _ITEM:
        return typed_item(value)
    if name == _SCORE:
        return typed_score(value)
    return typed_json(value, message)


def typed_item(value: Any) -> Any:
    """A plain key item in Item's typed form (a typed one as it is)."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, str):
        return {"string": value}
    if value is None:
        return {"null": True}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"double": value}
    if isinstance(value, dict) and set(value) == {"base64"}:
        return {"bytes": value["base64"]}
    return value


def typed_score(value: Any) -> Any:
    """A plain score (a number, a string of digits, an array of columns) in Score's typed form."""
    if isinstance(value, list):
        return {"columns": {"values": value}}
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return value
    if isinstance(value, float) or (isinstance(value, str) and any(c in value for c in ".eEnN")):
        return {"double": value}
    return {"int": value}


@functools.cache
def _fields_by_json_name(message: Descriptor) -> dict[str, FieldDescriptor]:
    """A message's fields by the names its JSON may give them: the proto's and lowerCamelCase."""
    return {**{f.json_name: f for f in message.fields}, **{f.name: f for f in message.fields}}


@functools.cache
def _holds_plain(message: Descriptor, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a message holds (at any depth) a key item or a score, which JSON may give plain."""
    for field in message.fields:
        kind = field.message_type
        if kind is None:
            continue
        if kind.GetOptions().map_entry:
            kind = kind.fields_by_name["value"].message_type
            if kind is None:
                continue
        if kind.full_name in (_ITEM, _SCORE):
            return True
        if kind.full_name not in seen and _holds_plain(kind, seen | {message.full_name}):
            return True
    return False


def json_value(data: bytes, refused: str) -> Any:
    """The JSON value of a body (or an NDJSON line) in UTF-8, as JSON between systems is (RFC
    8259): another encoding, which Python's parser would take (UTF-16, UTF-32), is refused naming
    it.  ``refused`` begins the message of a refusal (``request body is not a valid TopRequest``)."""
    encoding = json.detect_encoding(data)
    if encoding != "utf-8":
        raise bad(f"{refused}: it is {encoding.upper()}, not UTF-8 (JSON between systems is UTF-8, RFC 8259)")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise bad(
            f"{refused}: it is not UTF-8 (byte {exc.start} is 0x{data[exc.start]:02x}; JSON between systems is "
            "UTF-8, RFC 8259)"
        ) from None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise bad(cap_message(f"{refused}: not JSON ({exc})")) from None
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):  # a pair is a character; a lone half is none
        try:
            json.dumps(value, ensure_ascii=False).encode()
        except UnicodeEncodeError as exc:
            raise bad(
                f"{refused}: a string holds a lone UTF-16 surrogate ({exc.object[exc.start]!a}), no character"
            ) from None
    return value


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words (``an array``, ``null``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def parse_request(data: bytes, message_type: type[Message], what: str = "request body") -> Message:
    """A request message from a JSON object in the one shape or protobuf's typed form; malformed
    JSON, a value other than an object or a field the message lacks is INVALID_ARGUMENT."""
    name = message_type.DESCRIPTOR.name
    value = json_value(data, f"{what} is not a valid {name}") if data else {}
    if not isinstance(value, dict):
        raise bad(f"{what} is not a valid {name}: it must be a JSON object of its fields, not {json_kind(value)}")
    return message_from_dict(typed_json(value, message_type.DESCRIPTOR), message_type, what)
