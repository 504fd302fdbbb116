"""How Python values travel in the gRPC messages: key items, scores, entries, ranked entries, windows,
hidden records, score rules and audit events; and the freshness of reads, in call metadata.

Shared by the service and the client; the client needs nothing else of the server.

Converters are named after the Python value they make or read: ``X_from_proto(message)`` makes the
Python value of a message (``items_from_proto``: a key's tuple from its Items), ``X_to_proto(value)``
the message of a value; ``add_*`` and ``fill_*`` write into a message given, and ``plain_*`` shape
values as JSON (the HTTP door's).
"""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from .errors import InvalidArgument
from .freshness import MAX_STALENESS_MS as MAX_STALENESS_MS  # the doors check freshness through wire
from .freshness import check_staleness as check_staleness
from .freshness import check_version as check_version
from .index import AuditEvent, Entry, HiddenRecord, RankedEntry, ScoreRules, Window
from .index.values import as_key, check_items, check_score, check_timestamp
from .proto import service_pb2 as pb

# A read's freshness travels in its call's metadata (gRPC) or headers (HTTP), the same for every read:
# how stale it may be, and a commit version it must see (a write's answer gives its commit version
# in its trailing metadata, or the HTTP header Commit-Version).
STALENESS_HEADER = "max-staleness-ms"
MIN_VERSION_HEADER = "min-version"
COMMIT_VERSION_HEADER = "commit-version"
# The writes whose answers carry their commit version.
SCORE_WRITES = frozenset({"AddScore", "AddEntries", "SaveRecord", "DeleteRecord"})


def item_from_proto(item: pb.Item) -> object:
    kind = item.WhichOneof("kind")
    if kind is None:
        raise InvalidArgument("an Item has no value set")
    if kind == "null":
        return None
    return getattr(item, kind)


def items_from_proto(items: Sequence[pb.Item]) -> tuple:
    return tuple([item_from_proto(item) for item in items]) if items else ()


# The Item field of each Python type; bool first, since a bool is also an int.
_ITEM_FIELDS = {bool: "bool", int: "int", float: "double", str: "string", bytes: "bytes"}


def _item_field(value: object) -> tuple[str, object]:
    """The Item field holding ``value``, and what to set it to."""
    field = _ITEM_FIELDS.get(type(value))  # exact types: one lookup for almost every value
    if field is not None:
        return field, value
    if value is None:
        return "null", True
    for kind, field in _ITEM_FIELDS.items():  # subclasses (an IntEnum, a str subclass...)
        if isinstance(value, kind):
            return field, value
    raise InvalidArgument(f"cannot send a {type(value).__name__} as a key item")


def item_to_proto(value: object) -> pb.Item:
    field, set_to = _item_field(value)
    return pb.Item(**{field: set_to})


def items_to_proto(values: Sequence[object], name: str = "key") -> list[pb.Item]:
    """Items of a key a caller gave: checked as the index checks them (int64 integers, finite
    floats, valid text), so a bad one is refused naming ``name`` before anything is sent."""
    return [item_to_proto(value) for value in check_items(values, name)]


def key_to_proto(value: object, name: str = "primary key") -> list[pb.Item]:
    """A key (primary key, group or context) as Items: a lone str, bytes or number is one element."""
    return items_to_proto(as_key(value, name), name)


def add_items(out: Any, values: Sequence[object]) -> None:
    """Append ``values`` to the repeated Item field ``out``.

    Filling messages the field adds costs about a third of building each Item and copying it in.
    """
    for value in values:
        field, set_to = _item_field(value)
        setattr(out.add(), field, set_to)


def score_from_proto(score: pb.Score, name: str = "score") -> int | float | tuple:
    """A Score as Python's: an int, a float, or a tuple of ints (a multi-column score)."""
    kind = score.WhichOneof("kind")
    if kind is None:
        raise InvalidArgument(f"{name} is not set: give an int, a double or columns")
    if kind == "columns":
        return tuple(score.columns.values)
    return getattr(score, kind)


def _score_field(value: int | float) -> str:
    return "int" if isinstance(value, int) else "double"


def score_to_proto(value: int | float | tuple | list) -> pb.Score:
    """A Python score as a Score (a tuple or list: a multi-column score)."""
    if isinstance(value, tuple | list):
        for column in value:
            if isinstance(column, bool) or not isinstance(column, int):
                raise InvalidArgument(f"a score's columns are integers, not {column!r}")
            check_score(column)  # in the int64 range
        return pb.Score(columns=pb.ScoreColumns(values=value))
    return pb.Score(**{_score_field(check_score(value)): value})


def entry_from_proto(entry: pb.Entry) -> Entry:
    """An entry as answered (its timestamp, 0 when absent, as proto3 reads it)."""
    if not entry.HasField("score"):
        raise InvalidArgument("entry has no score")
    return Entry(
        score_from_proto(entry.score),
        entry.timestamp,
        items_from_proto(entry.context),
        items_from_proto(entry.group),
    )


def written_entry_from_proto(entry: pb.Entry) -> Entry:
    """An entry of a write: without a timestamp, one made now (None: the index's clock when the
    write is applied, in its timebase)."""
    if not entry.HasField("score"):
        raise InvalidArgument("entry has no score")
    return Entry(
        score_from_proto(entry.score),
        entry.timestamp if entry.HasField("timestamp") else None,
        items_from_proto(entry.context),
        items_from_proto(entry.group),
    )


def entry_to_proto(entry: Entry) -> pb.Entry:
    return pb.Entry(
        score=score_to_proto(entry.score),
        timestamp=check_timestamp(entry.timestamp),
        context=items_to_proto(entry.context, "context"),
        group=items_to_proto(entry.group, "group"),
    )


def fill_ranked_entry(message: pb.RankedEntry, entry: RankedEntry) -> None:
    """Set the empty ``message`` (usually one a repeated field just added) to ``entry``."""
    add_items(message.pk, entry.pk)
    score = entry.score
    if type(score) is tuple:
        message.score.columns.values.extend(score)
    else:
        setattr(message.score, _score_field(score), score)
    message.timestamp = entry.timestamp
    # Most entries have neither: asking for an empty repeated field costs as much as filling one.
    if entry.context:
        add_items(message.context, entry.context)
    if entry.group:
        add_items(message.group, entry.group)
    if entry.rank is not None:
        message.rank = entry.rank
    if entry.metadata:
        message.metadata.update(entry.metadata)


def add_ranked_entries(out: Any, entries: Iterable[RankedEntry]) -> None:
    """Append ``entries`` to the repeated RankedEntry field ``out``."""
    add = out.add
    for entry in entries:
        fill_ranked_entry(add(), entry)


def ranked_entry_from_proto(message: pb.RankedEntry) -> RankedEntry:
    return RankedEntry(
        pk=items_from_proto(message.pk),
        score=score_from_proto(message.score),
        timestamp=message.timestamp,
        context=items_from_proto(message.context),
        group=items_from_proto(message.group),
        rank=message.rank if message.HasField("rank") else None,
        metadata=dict(sorted(message.metadata.items())) if message.metadata else {},  # one order, whatever the map's
    )


def window_to_proto(window: Window) -> pb.Window:
    return pb.Window(
        type=window.type,
        start=window.start,
        end=window.end,
        key=window.lb_key,
        nlevels=window.nlevels,
        filling=window.filling,
    )


def window_from_proto(message: pb.Window) -> Window:
    return Window(message.type, message.start, message.end, message.key, message.nlevels, message.filling)


def optional_entry_from_proto(message: Any, field: str) -> RankedEntry | None:
    """The RankedEntry in ``message.<field>`` (an optional field), or None when unset."""
    return ranked_entry_from_proto(getattr(message, field)) if message.HasField(field) else None


def hidden_to_proto(record: HiddenRecord) -> pb.HiddenRecord:
    message = pb.HiddenRecord(actor=record.actor, hidden_at=record.hidden_at, reason=record.reason)
    add_items(message.pk, record.pk)
    return message


def hidden_from_proto(message: pb.HiddenRecord) -> HiddenRecord:
    return HiddenRecord(items_from_proto(message.pk), message.actor, message.hidden_at, message.reason)


def audit_event_to_proto(event: AuditEvent) -> pb.AuditEvent:
    return pb.AuditEvent(
        at_us=event.at_us, actor=event.actor, action=event.action, index=event.index, details=event.details
    )


def audit_event_from_proto(message: pb.AuditEvent) -> AuditEvent:
    return AuditEvent(message.at_us, message.actor, message.action, message.index, dict(message.details))


def rules_to_proto(rules: ScoreRules) -> pb.ScoreRules:
    message = pb.ScoreRules(max_per_window=rules.max_per_window, max_per_minute=rules.max_per_minute)
    if rules.min_score is not None:
        message.min_score.CopyFrom(score_to_proto(rules.min_score))
    if rules.max_score is not None:
        message.max_score.CopyFrom(score_to_proto(rules.max_score))
    return message


def rules_from_proto(message: pb.ScoreRules) -> ScoreRules:
    return ScoreRules(
        score_from_proto(message.min_score, "min_score") if message.HasField("min_score") else None,
        score_from_proto(message.max_score, "max_score") if message.HasField("max_score") else None,
        message.max_per_window,
        message.max_per_minute,
    )


@dataclasses.dataclass(frozen=True)
class WindowEnd:
    """A window that ended, as a window-end event tells it: its record count and top when noticed."""

    id: str
    index: str
    window: Window
    count: int
    entries: list[RankedEntry]
    noticed_at: int  # Unix seconds
    cursor: int  # its place in the index's event log: a stream resumes after it


def window_end_from_proto(message: pb.WindowEndEvent) -> WindowEnd:
    return WindowEnd(
        message.id,
        message.index,
        window_from_proto(message.window),
        message.count,
        [ranked_entry_from_proto(entry) for entry in message.entries],
        message.noticed_at,
        message.cursor,
    )


# -- plain JSON: the API's one shape (see http/plain.py), also the body of a window-end event's
# webhook POST (built by the service) -------------------------------------------------------------

# Integers beyond this are sent as strings of digits: JavaScript's numbers hold no more exactly.
JSON_SAFE_INTEGER = 2**53 - 1


def plain_item(value: object) -> Any:
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > JSON_SAFE_INTEGER:
        return str(value)
    return value


def plain_score(score: int | float | tuple) -> Any:
    """A score as JSON: a number, or an array of numbers for a multi-column score."""
    return [plain_item(value) for value in score] if isinstance(score, tuple) else plain_item(score)


def plain_window(message: pb.Window) -> dict[str, Any]:
    """A window as listings name it: its type, start and end (in the index's timebase)."""
    return {"type": message.type, "start": plain_item(message.start), "end": plain_item(message.end)}


def plain_entry(message: pb.RankedEntry) -> dict[str, Any]:
    entry: RankedEntry = ranked_entry_from_proto(message)
    answer = {
        "rank": entry.rank,
        "pk": [plain_item(v) for v in entry.pk],
        "score": plain_score(entry.score),
        "timestamp": plain_item(entry.timestamp),
        "context": [plain_item(v) for v in entry.context],
        "group": [plain_item(v) for v in entry.group],
        "metadata": dict(entry.metadata or {}),
    }
    if entry.rank is None:  # not computed (a scan by value), as the RPC leaves it out
        del answer["rank"]
    return answer


def plain_score_message(message: pb.Score) -> Any:
    kind = message.WhichOneof("kind")
    if kind == "columns":
        return [plain_item(value) for value in message.columns.values]
    return plain_item(message.double if kind == "double" else message.int)


def plain_item_message(message: pb.Item) -> Any:
    return plain_item(items_from_proto([message])[0])


# The messages with a shape of their own; a window is {type, start, end} where a listing names
# the window it read, and every field (its key, fill progress...) in the RPCs' answers.
PLAIN_SHAPES: dict[str, Callable[[Any], Any]] = {
    pb.RankedEntry.DESCRIPTOR.full_name: plain_entry,
    pb.Window.DESCRIPTOR.full_name: plain_window,
    pb.Score.DESCRIPTOR.full_name: plain_score_message,
    pb.Item.DESCRIPTOR.full_name: plain_item_message,
}
RPC_SHAPES = {name: shape for name, shape in PLAIN_SHAPES.items() if name != pb.Window.DESCRIPTOR.full_name}


def plain_message(message: Message, shapes: Mapping[str, Callable[[Any], Any]] = PLAIN_SHAPES) -> dict[str, Any]:
    """A message in the one JSON shape: its fields as protobuf's JSON mapping prints them (every
    field without presence, so zeros show; enums by name; bytes in base64), but the messages
    ``shapes`` names (entries, windows, scores, key items) as listings show them."""
    answer: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        name = field.name
        value = getattr(message, name)
        kind = field.message_type
        if kind is not None:
            if kind.GetOptions().map_entry:
                value_field = kind.fields_by_name["value"]
                answer[name] = {str(k): _plain_value(value_field, v, shapes) for k, v in value.items()}
            elif field.is_repeated:
                answer[name] = [_plain_value(field, v, shapes) for v in value]
            elif message.HasField(name):
                answer[name] = _plain_value(field, value, shapes)
        elif field.is_repeated:
            answer[name] = [_plain_scalar(field, v) for v in value]
        elif not field.has_presence or message.HasField(name):
            answer[name] = _plain_scalar(field, value)
    return answer


def rpc_json(message: Message) -> dict[str, Any]:
    """An RPC's answer in the one shape, its windows with every field (fill progress, key)."""
    return plain_message(message, RPC_SHAPES)


def _plain_value(field: FieldDescriptor, value: Any, shapes: Mapping[str, Callable[[Any], Any]]) -> Any:
    kind = field.message_type
    if kind is None:
        return _plain_scalar(field, value)
    shape = shapes.get(kind.full_name)
    return shape(value) if shape is not None else plain_message(value, shapes)


def _plain_scalar(field: FieldDescriptor, value: Any) -> Any:
    """A scalar field's value as protobuf's JSON mapping prints it."""
    kind = field.type
    if kind == FieldDescriptor.TYPE_ENUM:
        known = field.enum_type.values_by_number.get(value)
        return known.name if known is not None else value
    if kind == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > JSON_SAFE_INTEGER:
        return str(value)
    return value
